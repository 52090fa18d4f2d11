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
reads its shard into memory (one shard); ``TokenShards``, the trainer's, holds each shard's document offsets and
reads a document's tokens when asked (``document``), so the trainer's memory does not grow with the split.
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


def _batches(path: str) -> Iterator[tuple[pa.RecordBatch, int, pa.Buffer]]:
    """Each record batch of the token shard ``path`` (an Arrow IPC file), with where its message body starts in
    the file and the body it was read from, through ordinary reads (one batch in memory at a time). The file
    format is the stream format between an 8-byte magic and a footer, so its messages are read in order."""
    with pa.OSFile(path, "r") as source:
        if source.read(8) != b"ARROW1\0\0":
            raise UserError(f"{path} is not an Arrow IPC file; is it a token shard (tokens/train/part-*.arrow)?")
        messages = ipc.MessageReader.open_stream(source)
        schema = ipc.read_schema(messages.read_next_message())
        if "tokens" not in schema.names:
            raise UserError(f"{path} has no 'tokens' column; is it a token shard (tokens/train/part-*.arrow)?")
        for message in messages:
            if message.type != "record batch":
                raise UserError(f"{path}: a {message.type} message; not a token shard")
            batch = ipc.read_record_batch(message, schema)
            batch.validate(full=True)  # offsets within their buffers: document(i) reads where they point
            yield batch, source.tell() - message.body.size, message.body


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
        batches = [batch for batch, _, _ in _reading(path)]
        if len(batches) != 1:  # not written by TokenizeShards; one (copied) chunk
            table = pa.Table.from_batches(batches) if batches else None
            column = table.column("tokens").combine_chunks() if table else pa.array([], pa.large_list(pa.uint16()))
            self.ids = table.column("id").combine_chunks() if table else pa.array([], pa.string())
        else:
            column = batches[0].column("tokens")
            self.ids = batches[0].column("id")
        if column.null_count:
            raise ValueError(f"{path}: the tokens column has nulls; not a token shard")
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


class TokenCorpus:
    """A ``tokens/`` directory: its manifest, and the splits' shards."""

    def __init__(self, root: str) -> None:
        path = os.path.join(root, "manifest.json")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} is missing: the token shards are incomplete or were never written "
                                    "(run `corpusforge tokenize`)")
        with open(path, encoding="utf-8") as f:
            self.manifest: dict[str, Any] = json.load(f)
        self.root = root
        self.vocab_size: int = self.manifest["vocab_size"]
        self.dtype = np.dtype(self.manifest["dtype"])
        self.special_tokens: dict[str, int] = self.manifest["special_tokens"]
        self.family: str | None = self.manifest.get("family")

    @property
    def tokenizer_path(self) -> str:
        return os.path.normpath(os.path.join(self.root, self.manifest["tokenizer"]))

    def split(self, name: str) -> TokenSplit:
        if name not in self.manifest["splits"]:
            raise KeyError(f"no split {name!r}; the manifest has {sorted(self.manifest['splits'])}")
        return TokenSplit(self.root, self.manifest["splits"][name])


class TokenShards:
    """The documents of one split. ``shards.document(i)`` reads document ``i``'s tokens (``os.pread``: one system
    call, no memory map); only the documents' offsets are held in memory (8 bytes a document)."""

    _READ_TOKENS = 1 << 23  # max_token_id reads this many tokens at a time

    def __init__(self, paths: Sequence[str | pathlib.Path]):
        self.paths = [str(p) for p in paths]
        self._open()

    def _open(self) -> None:
        self._fds: list[int] = []
        self._offsets: list[np.ndarray] = []  # per chunk (a record batch): token offsets of its documents
        self._where: list[tuple[int, int, np.dtype]] = []  # per chunk: (file index, first token's byte, dtype)
        lengths, chunk_of, local = [], [], []
        for f, path in enumerate(self.paths):
            try:  # opened first: the offsets found below must be of the file read later
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                raise UserError(f"{path} is missing: the token shards are incomplete (run `corpusforge tokenize`)") from None
            self._fds.append(fd)  # closed by close() (and __del__) whatever happens below
            before = os.fstat(fd)
            for batch, body_at, body in _reading(path):
                column = batch.column("tokens")
                if column.null_count:
                    raise UserError(f"{path}: {column.null_count} documents have null tokens")
                values = column.values
                dtype = np.dtype(values.type.to_pandas_dtype())
                data = values.buffers()[1]
                end = (values.offset + len(values)) * dtype.itemsize
                if data is None or not (body.address <= data.address and data.address + end <= body.address + body.size):
                    # compressed, or a buffer pyarrow copied: its bytes are not where the file has them
                    raise UserError(f"{path}: its tokens are not stored as corpusforge writes them (uncompressed, in "
                                    "place); run `corpusforge tokenize` again")
                # the child array's first token in the file: its buffer's place in the body, then its own offset
                first = body_at + (data.address - body.address) + values.offset * dtype.itemsize
                offsets = column.offsets.to_numpy(zero_copy_only=False).astype(np.int64)  # a copy: the batch goes
                chunk = len(self._offsets)
                self._offsets.append(offsets)
                self._where.append((f, first, dtype))
                lengths.append(np.diff(offsets))
                chunk_of.append(np.full(len(column), chunk, dtype=np.int32))
                local.append(np.arange(len(column), dtype=np.int64))
            try:
                now = os.stat(path)
            except OSError:
                now = None
            if now is None or (now.st_ino, now.st_dev, now.st_size, now.st_mtime_ns) != \
                    (before.st_ino, before.st_dev, before.st_size, before.st_mtime_ns):
                raise _cut(path, "was replaced or changed")
        cat = lambda parts, dtype: np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)  # noqa: E731
        self.lengths = cat(lengths, np.int64).astype(np.int64)
        self._chunk = cat(chunk_of, np.int32)
        self._local = cat(local, np.int64)
        pa.default_memory_pool().release_unused()  # the batches read to find the offsets

    def _read(self, chunk: int, lo: int, hi: int) -> np.ndarray:
        """Tokens ``lo:hi`` of ``chunk``'s values, read from its file; a file cut short is one line."""
        f, first, dtype = self._where[chunk]
        want = (hi - lo) * dtype.itemsize
        try:
            data = os.pread(self._fds[f], want, first + lo * dtype.itemsize) if want else b""
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

    def __getstate__(self):  # data loader workers reopen the files instead of pickling them
        return {"paths": self.paths}

    def __setstate__(self, state):
        self.paths = state["paths"]
        self._open()

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def num_tokens(self) -> int:
        return int(self.lengths.sum())

    def max_token_id(self) -> int:
        """The largest token id of the split (-1 when it is empty): one pass over the files, a few MB at a time."""
        found = -1
        for chunk, offsets in enumerate(self._offsets):
            for lo in range(int(offsets[0]), int(offsets[-1]), self._READ_TOKENS):
                found = max(found, int(self._read(chunk, lo, min(lo + self._READ_TOKENS, int(offsets[-1]))).max()))
        return found

    def document(self, i: int) -> np.ndarray:
        """Document ``i``'s tokens (a read-only array of the shard's dtype)."""
        c, j = self._chunk[i], self._local[i]
        offsets = self._offsets[c]
        return self._read(c, int(offsets[j]), int(offsets[j + 1]))


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
