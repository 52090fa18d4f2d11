"""Token shards: their one schema, a writer for tests and imports, and the readers (ordinary reads, no memory map).

The tokenize stage writes ``tokens/{train,val}/part-*.arrow`` (Arrow IPC files, ``id: string,
tokens: large_list<uint16|uint32>, source: string``; a document a source mixture repeats appears once per
repeat) and ``tokens/manifest.json``; the trainer reads them with ``TokenShards``.

    corpus = TokenCorpus("runs/latest/tokens")
    corpus.special_tokens["eos"]           # ids come from the manifest (read from the tokenizer), never constants
    for shard in corpus.split("train"):
        shard.tokens                       # np.uint16 (or uint32): every token of the shard, back to back
        shard.offsets                      # np.int64, len(shard) + 1: document i is tokens[offsets[i]:offsets[i+1]]
        shard.document(0)                  # a view of shard.tokens, no copy

Local files only; copy remote shards to local disk first. Nothing is memory-mapped: a mapped shard that another
process (a re-run of tokenize, a full disk, ``truncate``) cuts short while it is read kills the reader with SIGBUS,
which Python cannot catch; read through ``os.pread``, it is one ``UserError`` naming the shard. ``TokenShard``
reads its shard into memory (one shard); ``TokenShards``, the trainer's, finds where each document lies from the
shards' metadata (batch headers and token offsets, no token read) and reads a document's tokens when asked
(``document``), so neither opening nor the trainer's memory grows with the tokens.
"""
from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from corpusforge.core.errors import UserError
from corpusforge.core.shard_files import column_layout, message_headers, read_schema_message


SPLITS = ("train", "val")
UINT16_MAX_VOCAB = 65_535  # contract: uint16 up to this vocabulary size, uint32 above


def token_schema(dtype: str) -> pa.Schema:
    return pa.schema([
        pa.field("id", pa.string(), nullable=False),
        pa.field("tokens", pa.large_list(pa.uint16() if dtype == "uint16" else pa.uint32()), nullable=False),
        pa.field("source", pa.string(), nullable=False),  # the input source the document came from
    ])


def token_dtype(vocab_size: int) -> str:
    return "uint16" if vocab_size <= UINT16_MAX_VOCAB else "uint32"


def _cut(path: str, why: str) -> UserError:
    return UserError(f"{path} {why} while it was read: something else writes to the token shards; run "
                     "`corpusforge tokenize` again once nothing does")


def check_layout(path: str, schema: pa.Schema, ids: bool = False) -> None:
    """Refuse, in one line naming ``path``, a shard whose columns are not what the readers rely on: one ``tokens``
    column of ``large_list`` (or ``list``) of ``uint16`` or ``uint32`` (what tokenize writes: any other type, signed,
    64-bit, float, strings, fixed-size or nested lists, dictionary-encoded ids, is another program's layout, whose
    numbers are not this tokenizer's ids), and with ``ids``, one string ``id`` column. Every reader of token shards
    (``TokenShard``, ``TokenShards``) checks this one thing."""
    if len(set(schema.names)) != len(schema.names):
        raise UserError(f"{path} has two columns of one name; is it a token shard (tokens/train/part-*.arrow)?")
    if "tokens" not in schema.names:
        raise UserError(f"{path} has no 'tokens' column; is it a token shard (tokens/train/part-*.arrow)?")
    kind = schema.field("tokens").type
    if not ((pa.types.is_large_list(kind) or pa.types.is_list(kind)) and kind.value_type in (pa.uint16(), pa.uint32())):
        raise UserError(f"{path}: its tokens are {kind}, not large_list<uint16 or uint32> (what tokenize "
                        "writes); run `corpusforge tokenize` again")
    if ids and ("id" not in schema.names or schema.field("id").type not in (pa.string(), pa.large_string())):
        found = schema.field("id").type if "id" in schema.names else "missing"
        raise UserError(f"{path}: its 'id' column is {found}, not string (what tokenize writes); run "
                        "`corpusforge tokenize` again")


def _batches(path: str) -> Iterator[pa.RecordBatch]:
    """Each record batch of the token shard ``path`` (an Arrow IPC file), as its footer lists them, through
    ordinary reads (one batch in memory at a time), each validated in full."""
    with pa.OSFile(path, "r") as source:
        if source.read(8) != b"ARROW1\0\0":
            raise UserError(f"{path} is not an Arrow IPC file; is it a token shard (tokens/train/part-*.arrow)?")
        source.seek(0)
        reader = ipc.open_file(source)
        check_layout(path, reader.schema, ids=True)
        for index in range(reader.num_record_batches):
            batch = reader.get_batch(index)
            batch.validate(full=True)
            yield batch


def _reading(path: str):
    """Open ``path``'s batches, turning a failed read into one line naming the shard."""
    try:
        yield from _batches(path)
    except FileNotFoundError:
        raise UserError(f"{path} is missing: the token shards are incomplete (run `corpusforge tokenize`)") from None
    except (ValueError, OSError, EOFError, pa.ArrowException) as exc:  # pa.ArrowInvalid: a cut or foreign file
        raise UserError(f"{path} is not a readable token shard ({' '.join(str(exc).split())[:160]}); run "
                        "`corpusforge tokenize` again") from None


class TokenShard:
    """One token shard, read into memory. ``tokens`` and ``offsets`` are numpy views of its batch."""

    def __init__(self, path: str) -> None:
        self.path = path
        batches = list(_reading(path))
        if len(batches) != 1:  # not written by TokenizeShards; one (copied) chunk
            table = pa.Table.from_batches(batches) if batches else None
            column = table.column("tokens").combine_chunks() if table else pa.array([], pa.large_list(pa.uint16()))
            self.ids = table.column("id").combine_chunks() if table else pa.array([], pa.string())
        else:
            column = batches[0].column("tokens")
            self.ids = batches[0].column("id")
        if column.null_count or column.flatten().null_count or self.ids.null_count:
            what = ("null documents" if column.null_count else "null token ids" if column.flatten().null_count
                    else "null ids")
            raise UserError(f"{path}: {what}; not a token shard (run `corpusforge tokenize` again)")
        self.offsets: np.ndarray = column.offsets.to_numpy(zero_copy_only=True)
        self.tokens: np.ndarray = column.values.to_numpy(zero_copy_only=True)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def num_tokens(self) -> int:
        return int(self.offsets[-1] - self.offsets[0])

    def document(self, i: int) -> np.ndarray:
        return self.tokens[self.offsets[i]:self.offsets[i + 1]]

    def documents(self) -> Iterator[tuple[str, np.ndarray]]:
        for i, doc_id in enumerate(self.ids.to_pylist()):
            yield doc_id, self.document(i)


class TokenSplit:
    """The shards of one split (``train`` or ``val``), opened lazily in manifest order."""

    def __init__(self, root: str, entry: dict[str, Any]) -> None:
        self.paths = [os.path.join(root, p) for p in entry["shards"]]
        self.documents: int = entry["documents"]
        self.tokens: int = entry["tokens"]
        self.shard_tokens: list[int] = entry.get("shard_tokens", [])
        self._open: dict[int, TokenShard] = {}

    def __len__(self) -> int:
        return len(self.paths)

    def shard(self, i: int) -> TokenShard:
        if i not in self._open:
            self._open[i] = TokenShard(self.paths[i])
        return self._open[i]

    def __iter__(self) -> Iterator[TokenShard]:
        return (self.shard(i) for i in range(len(self.paths)))

    def documents_iter(self) -> Iterator[tuple[str, np.ndarray]]:
        for shard in self:
            yield from shard.documents()


def _not_a_manifest(path: str, what: str) -> UserError:
    return UserError(f"{path} is not a token shards manifest corpusforge wrote ({what}); run `corpusforge tokenize` "
                     "again")


def read_manifest(path: str) -> dict[str, Any]:
    """``tokens/manifest.json``, checked as far as every reader relies on it: a JSON object whose ``splits`` maps
    names to objects, each ``shards`` a list of relative file names; a damaged or foreign one is one line."""
    if not os.path.exists(path):
        raise UserError(f"{path} is missing: the token shards are incomplete or were never written "
                        "(run `corpusforge tokenize`)")
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise _not_a_manifest(path, " ".join(str(exc).split())[:120]) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("splits"), dict):
        raise _not_a_manifest(path, "no splits")
    if not isinstance(manifest.get("vocab_size", 0), int) or isinstance(manifest.get("vocab_size"), bool):
        raise _not_a_manifest(path, "its vocab_size is not a number")
    for name, split in manifest["splits"].items():
        shards = split.get("shards", []) if isinstance(split, dict) else None
        if not isinstance(shards, list) or not all(isinstance(n, str) and n and "\0" not in n for n in shards):
            raise _not_a_manifest(path, f"its split {name!r} does not list shard files")
    return manifest


class TokenCorpus:
    """A ``tokens/`` directory: its manifest, and the splits' shards."""

    def __init__(self, root: str) -> None:
        path = os.path.join(root, "manifest.json")
        self.manifest: dict[str, Any] = read_manifest(path)
        manifest, refuse = self.manifest, lambda what: _not_a_manifest(path, what)
        if not isinstance(manifest.get("vocab_size"), int) or manifest.get("dtype") not in ("uint16", "uint32"):
            raise refuse("no vocab_size, or a dtype that is not uint16 or uint32")
        if not isinstance(manifest.get("special_tokens"), dict) or not all(
                isinstance(k, str) and isinstance(v, int) for k, v in manifest["special_tokens"].items()):
            raise refuse("its special_tokens are not names and ids")
        if not isinstance(manifest.get("tokenizer", ""), str) or not isinstance(manifest.get("family", ""), (str, type(None))):
            raise refuse("its tokenizer or family is not a string")
        for name, split in manifest["splits"].items():
            if not isinstance(split.get("shards"), list) or not all(isinstance(n, int) and not isinstance(n, bool)
                                                                    for n in (split.get("documents"), split.get("tokens"))):
                raise refuse(f"its split {name!r} has no shards, documents or tokens")
        self.root = root
        self.vocab_size: int = manifest["vocab_size"]
        self.dtype = np.dtype(manifest["dtype"])
        self.special_tokens: dict[str, int] = manifest["special_tokens"]
        self.family: str | None = manifest.get("family")

    @property
    def tokenizer_path(self) -> str:
        return os.path.normpath(os.path.join(self.root, self.manifest["tokenizer"]))

    def split(self, name: str) -> TokenSplit:
        if name not in self.manifest["splits"]:
            raise KeyError(f"no split {name!r}; the manifest has {sorted(self.manifest['splits'])}")
        return TokenSplit(self.root, self.manifest["splits"][name])


class TokenShards:
    """The documents of one split. ``shards.document(i)`` reads document ``i``'s tokens (``os.pread``: one system
    call, no memory map); only where each document's tokens lie is held in memory (16 bytes a document).

    Opening reads metadata only: each record batch's header (``shard_files.read_message_header``, the one parser of
    IPC headers) and its ``tokens`` offsets, never a token, and checks what a read will rely on: the ``tokens``
    column is ``large_list`` (or ``list``) of ``uint16`` or ``uint32``, its tokens stored uncompressed in place,
    no document or token null, offsets that rise within the tokens buffer, every buffer within its batch's body and
    every body within the file, and the footer (read by pyarrow) listing the batches read. A DataLoader worker
    started by spawn or forkserver gets these places with the dataset (pickled) and only reopens the files, which
    must be the very files opened (inode, size, mtime), or it stops with one line; a fork shares them."""

    _READ_TOKENS = 1 << 23  # max_token_id reads this many tokens at a time

    def __init__(self, paths: Sequence[str | pathlib.Path]):
        self.paths = [str(p) for p in paths]
        self._fds: list[int] = []
        self._identity: list[tuple[int, int, int, int]] = []  # per file: inode, device, size, mtime (ns)
        self._dtypes: list[np.dtype] = []  # per file
        self._runs: list[tuple[int, int, int]] = []  # per record batch: (file, first token's byte, end byte)
        starts, lengths, counts = [], [], [0]
        for f, path in enumerate(self.paths):
            fd = self._reopen(f)
            before = os.fstat(fd)
            try:
                dtype, batch_starts, batch_lengths = self._place(path, fd, before.st_size, f)
            except (ValueError, OSError, EOFError, pa.ArrowException, KeyError) as exc:
                raise UserError(f"{path} is not a readable token shard ({' '.join(str(exc).split())[:160]}); run "
                                "`corpusforge tokenize` again") from None
            try:
                now = os.stat(path)
            except OSError:
                now = None
            identity = (before.st_ino, before.st_dev, before.st_size, before.st_mtime_ns)
            if now is None or (now.st_ino, now.st_dev, now.st_size, now.st_mtime_ns) != identity:
                raise _cut(path, "was replaced or changed")
            self._identity.append(identity)
            self._dtypes.append(dtype)
            starts += batch_starts
            lengths += batch_lengths
            counts.append(counts[-1] + sum(len(part) for part in batch_lengths))
        cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)  # noqa: E731
        self.lengths: np.ndarray = cat(lengths)  # tokens of each document
        self._starts: np.ndarray = cat(starts)  # each document's first token's byte in its file
        self._first = np.asarray(counts, dtype=np.int64)  # file f holds documents _first[f]:_first[f + 1]

    def _reopen(self, f: int) -> int:
        path = self.paths[f]
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise UserError(f"{path} is missing: the token shards are incomplete (run `corpusforge tokenize`)") from None
        except OSError as exc:
            raise UserError(f"{path} cannot be opened ({exc.strerror or exc}); run `corpusforge tokenize` again") from None
        self._fds.append(fd)  # closed by close() (and __del__) whatever happens next
        return fd

    def _place(self, path: str, fd: int, size: int, f: int) -> tuple[np.dtype, list[np.ndarray], list[np.ndarray]]:
        """The dtype of ``path``'s tokens and, per record batch, its documents' first bytes and lengths, from the
        batches' headers and token offsets alone. Raises ValueError (ArrowInvalid) and the like on a shard that is
        damaged or not a token shard; UserError where it says more."""
        read = lambda at, n: os.pread(fd, n, at)  # noqa: E731
        if read(0, 8) != b"ARROW1\0\0":
            raise UserError(f"{path} is not an Arrow IPC file; is it a token shard (tokens/train/part-*.arrow)?")
        with os.fdopen(os.dup(fd), "rb", buffering=0) as copy:  # pyarrow reads the footer (and its schema)
            footer = ipc.open_file(pa.PythonFile(copy, mode="r"))
            listed, schema = footer.num_record_batches, footer.schema
        headers = message_headers(read, size, 8)
        first = next(headers, None)
        if first is None or not read_schema_message(read, first).equals(schema):
            raise pa.ArrowInvalid("its schema message is not its footer's schema")
        check_layout(path, schema)
        kind = schema.field("tokens").type
        dtype = np.dtype(kind.value_type.to_pandas_dtype()).newbyteorder("<")
        width = 8 if pa.types.is_large_list(kind) else 4
        node, buffer, nodes, buffers = column_layout(schema, "tokens")
        tops = [column_layout(schema, name)[0] for name in schema.names]  # each column's own array
        starts, lengths, seen = [], [], 0
        for header in headers:
            if header.kind != 3:
                raise UserError(f"{path}: a {'dictionary batch' if header.kind == 2 else 'schema'} message at byte "
                                f"{header.start:,}; not a token shard (run `corpusforge tokenize` again)")
            if header.compressed or header.variadic:
                raise UserError(f"{path}: its tokens are not stored as corpusforge writes them (uncompressed, in "
                                "place); run `corpusforge tokenize` again")
            where = f"the record batch at byte {header.start:,}"
            if len(header.nodes) != nodes or len(header.buffers) != buffers:
                raise pa.ArrowInvalid(f"{where} has {len(header.nodes)} arrays and {len(header.buffers)} buffers, "
                                      "not its schema's")
            if any(length != header.rows for length, _ in (header.nodes[t] for t in tops)) or header.rows < 0:
                raise pa.ArrowInvalid(f"{where}: its columns' lengths are not its {header.rows} rows")
            if any(at < 0 or length < 0 or at + length > header.body_length for at, length in header.buffers):
                raise pa.ArrowInvalid(f"{where}: a buffer lies outside its body")
            (documents, null_documents), (values, null_values) = header.nodes[node], header.nodes[node + 1]
            if null_documents or null_values:
                what = f"{null_documents} null documents" if null_documents else f"{null_values} null token ids"
                raise UserError(f"{path}: {what} in {where}; not a token shard (run `corpusforge tokenize` again)")
            if not documents:
                seen += 1
                continue
            (at, length), (data, data_length) = header.buffers[buffer + 1], header.buffers[buffer + 3]
            if length < (documents + 1) * width:
                raise pa.ArrowInvalid(f"{where}: its tokens' offsets buffer is shorter than its documents")
            raw = read(header.body + at, (documents + 1) * width)
            if len(raw) != (documents + 1) * width:
                raise EOFError(f"the file ends inside {where}")
            offsets = np.frombuffer(raw, dtype="<i8" if width == 8 else "<i4").astype(np.int64)
            if offsets[0] < 0 or (np.diff(offsets) < 0).any() or int(offsets[-1]) > values \
                    or int(offsets[-1]) * dtype.itemsize > data_length:  # Python ints: no overflow
                raise pa.ArrowInvalid(f"{where}: its tokens' offsets do not rise within its tokens")
            base = header.body + data
            starts.append(base + offsets[:-1] * dtype.itemsize)
            lengths.append(np.diff(offsets))
            self._runs.append((f, base + int(offsets[0]) * dtype.itemsize, base + int(offsets[-1]) * dtype.itemsize))
            seen += 1
        if seen != listed:  # a file cut at a batch's end, or a footer of other batches
            raise pa.ArrowInvalid(f"its footer lists {listed} record batches, its messages {seen}")
        return dtype, starts, lengths

    def _read(self, f: int, at: int, want: int, dtype: np.dtype) -> np.ndarray:
        """``want`` bytes at byte ``at`` of file ``f``, as tokens; a file cut short is one line."""
        try:
            data = os.pread(self._fds[f], want, at) if want else b""
        except OSError as exc:
            raise _cut(self.paths[f], f"could not be read ({exc.strerror or exc})") from None
        if len(data) != want:
            raise _cut(self.paths[f], f"was cut to {os.fstat(self._fds[f]).st_size:,} bytes")
        return np.frombuffer(data, dtype=dtype)

    def close(self) -> None:
        for fd in getattr(self, "_fds", []):
            os.close(fd)
        self._fds = []

    def __del__(self):
        self.close()

    def __getstate__(self):  # a worker started by spawn or forkserver: the places, not the file descriptors
        return {name: getattr(self, name) for name in
                ("paths", "_identity", "_dtypes", "_runs", "lengths", "_starts", "_first")}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._fds = []
        for f, path in enumerate(self.paths):  # the files the places were read from, or one line
            now = os.fstat(self._reopen(f))
            inode, device, size, mtime = self._identity[f]
            if now.st_size < size and (now.st_ino, now.st_dev) == (inode, device):
                raise _cut(path, f"was cut to {now.st_size:,} bytes")
            if (now.st_ino, now.st_dev, now.st_size, now.st_mtime_ns) != self._identity[f]:
                raise _cut(path, "was replaced or changed")

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def num_tokens(self) -> int:
        return int(self.lengths.sum())

    def max_token_id(self) -> int:
        """The largest token id of the split (-1 when it is empty): one pass over the files, a few MB at a time."""
        found = -1
        for f, lo, hi in self._runs:
            dtype = self._dtypes[f]
            step = self._READ_TOKENS * dtype.itemsize
            for at in range(lo, hi, step):
                found = max(found, int(self._read(f, at, min(step, hi - at), dtype).max()))
        return found

    def document(self, i: int) -> np.ndarray:
        """Document ``i``'s tokens (a read-only array of the shard's dtype)."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"document {i} of {len(self)}")
        i = int(i) % len(self)
        f = int(np.searchsorted(self._first, i, side="right")) - 1
        dtype = self._dtypes[f]
        return self._read(f, int(self._starts[i]), int(self.lengths[i]) * dtype.itemsize, dtype)


def write_token_shards(directory: str | pathlib.Path, documents: Sequence[Sequence[int]], *,
                       docs_per_shard: int = 1000, dtype: str = "uint16", source: str = "") -> list[pathlib.Path]:
    """Write ``documents`` (lists of token ids) as token shards in the tokenize stage's format.

    For tests, benchmarks, and bringing tokens from elsewhere; a build's shards come from the tokenize stage.
    """
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    schema = token_schema(dtype)
    value_type = schema.field("tokens").type
    count = max(1, -(-len(documents) // docs_per_shard))
    paths = []
    for s in range(count):
        part = documents[s * docs_per_shard: (s + 1) * docs_per_shard]
        path = directory / f"part-{s:05d}-of-{count:05d}.arrow"
        table = pa.table({"id": [f"doc-{s * docs_per_shard + i:08d}" for i in range(len(part))],
                          "tokens": pa.array([list(map(int, d)) for d in part], type=value_type),
                          "source": [source] * len(part)},
                         schema=schema)
        with ipc.new_file(str(path), schema) as writer:
            writer.write_table(table, max_chunksize=256)
        paths.append(path)
    return paths
