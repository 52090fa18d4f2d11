"""Streaming the ``text`` of a build's clean shards, batch by batch, and stable per-document hashing.

Clean shards hold ``corpusforge.pipeline.document.DOCUMENT_SCHEMA`` rows in any output format (Arrow, Parquet, JSON
Lines: ``corpusforge.core.shard_files``). Arrow shards are read a record batch at a time (ordinary reads: never a
memory map, which a shard cut short while it is read turns into SIGBUS); Parquet a row group at a time, a JSON
Lines shard whole.
"""
from __future__ import annotations

import hashlib
from typing import Iterator

import pyarrow as pa

from corpusforge.core.errors import UserError
from corpusforge.core.shard_files import open_shard, shard_files

_TWO_64 = float(2**64)


def stable_unit(doc_id: str, seed: int, purpose: bytes) -> float:
    """A number in [0, 1) fixed by ``(doc_id, seed, purpose)``: the same on every run, machine and runner."""
    digest = hashlib.blake2b(
        doc_id.encode("utf-8"), digest_size=8, key=seed.to_bytes(8, "little", signed=True), person=purpose
    ).digest()
    return int.from_bytes(digest, "little") / _TWO_64


def clean_shards(location: str) -> list[tuple[str, int]]:
    """``(path, size)`` of the clean shards at ``location`` (a directory, glob or file); fails if none."""
    try:
        shards = shard_files(location)
    except Exception as exc:  # Beam raises BeamIOError for a path that does not exist
        raise UserError(f"cannot list clean shards at {location}: {exc}") from None
    if not shards:
        raise UserError(
            f"no clean shards (*.arrow, *.parquet, *.jsonl[.zst|.gz]) at {location}; run `corpusforge build` first or point the input at them"
        )
    return shards


def _check_columns(path: str, schema: pa.Schema, columns: tuple[str, ...]) -> None:
    if not schema.names:  # an empty JSON Lines shard: no columns to check, no rows to read
        return
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise UserError(f"{path} has no column {missing[0]!r}; clean shards need the columns {', '.join(columns)}")


def iter_batches(paths: list[str], batch_size: int, columns: tuple[str, ...] = ("id", "text")
                 ) -> Iterator[tuple[list[str], ...]]:
    """Lists of ``columns`` values, at most ``batch_size`` documents at a time, shard by shard in order."""
    for path in paths:
        reader = open_shard(path)
        _check_columns(path, reader.schema, columns)
        for batch in reader.batches():
            for start in range(0, batch.num_rows, batch_size):
                chunk = batch.slice(start, batch_size)
                yield tuple(chunk.column(c).to_pylist() for c in columns)


def text_bytes(paths: list[str]) -> tuple[int, int]:
    """``(documents, UTF-8 bytes of text)`` of the shards, from their metadata where the format has it: an Arrow
    shard's batch headers and two offsets of each batch's text, no text read; Parquet's footer for the rows, its
    text column read for the bytes (``ShardReader.string_bytes`` says why); JSON Lines read whole."""
    docs = size = 0
    for path in paths:
        reader = open_shard(path)
        _check_columns(path, reader.schema, ("text",))
        docs += reader.num_rows
        if "text" in reader.schema.names:
            size += reader.string_bytes("text")
    return docs, size
