"""Reading token shards without copying: memory-mapped Arrow files as flat numpy token arrays with offsets.

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
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc


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
