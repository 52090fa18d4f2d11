"""Token shards: their one schema, a writer for tests and imports, and the readers (memory-mapped, no copies).

The tokenize stage writes ``tokens/{train,val}/part-*.arrow`` (Arrow IPC files, ``id: string,
tokens: large_list<uint16|uint32>, source: string``; a document a source mixture repeats appears once per
repeat) and ``tokens/manifest.json``; the trainer reads them with ``TokenShards``.

    corpus = TokenCorpus("runs/latest/tokens")
    corpus.special_tokens["eos"]           # ids come from the manifest (read from the tokenizer), never constants
    for shard in corpus.split("train"):
        shard.tokens                       # np.uint16 (or uint32) view of every token of the shard, back to back
        shard.offsets                      # np.int64, len(shard) + 1: document i is tokens[offsets[i]:offsets[i+1]]
        shard.document(0)                  # a view, no copy

Local files only (memory maps); copy remote shards to local disk first.
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


class TokenShard:
    """One token shard, memory-mapped. ``tokens`` and ``offsets`` are numpy views of the file's pages."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._source = pa.memory_map(path, "r")
        reader = ipc.open_file(self._source)
        if reader.num_record_batches != 1:
            table = reader.read_all()  # not written by TokenizeShards; fall back to one (copied) chunk
            column = table.column("tokens").combine_chunks()
            self.ids = table.column("id").combine_chunks()
        else:
            batch = reader.get_batch(0)
            column = batch.column("tokens")
            self.ids = batch.column("id")
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
    """The documents of one split, memory-mapped. ``shards.document(i)`` is a zero-copy numpy view."""

    def __init__(self, paths: Sequence[str | pathlib.Path]):
        self.paths = [str(p) for p in paths]
        self._open()

    def _open(self) -> None:
        self._values: list[np.ndarray] = []
        self._offsets: list[np.ndarray] = []
        lengths, chunk_of, local = [], [], []
        for path in self.paths:
            reader = ipc.open_file(pa.memory_map(path, "r"))
            if "tokens" not in reader.schema.names:
                raise UserError(f"{path} has no 'tokens' column; is it a token shard (tokens/train/part-*.arrow)?")
            for b in range(reader.num_record_batches):
                column = reader.get_batch(b).column("tokens")
                if column.null_count:
                    raise UserError(f"{path}: {column.null_count} documents have null tokens")
                values = column.values.to_numpy(zero_copy_only=True)
                offsets = column.offsets.to_numpy(zero_copy_only=True)
                chunk = len(self._values)
                self._values.append(values)
                self._offsets.append(offsets)
                lengths.append(np.diff(offsets))
                chunk_of.append(np.full(len(column), chunk, dtype=np.int32))
                local.append(np.arange(len(column), dtype=np.int64))
        cat = lambda parts, dtype: np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)  # noqa: E731
        self.lengths = cat(lengths, np.int64).astype(np.int64)
        self._chunk = cat(chunk_of, np.int32)
        self._local = cat(local, np.int64)

    def __getstate__(self):  # data loader workers reopen the memory maps instead of pickling them
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
        """The largest token id of the split (-1 when it is empty): one pass over the memory maps."""
        found = [int(v[o[0]: o[-1]].max()) for v, o in zip(self._values, self._offsets) if o[-1] > o[0]]
        return max(found, default=-1)

    def document(self, i: int) -> np.ndarray:
        c, j = self._chunk[i], self._local[i]
        offsets = self._offsets[c]
        return self._values[c][offsets[j]: offsets[j + 1]]


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
