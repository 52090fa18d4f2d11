"""Shard files in the three output formats: Arrow IPC stream, Parquet, JSON Lines; one writer, one reader.

``write_shard`` writes rows in the format a build's ``output.format`` names; ``open_shard`` reads any of them
(and Arrow IPC *files*, as token shards and older builds are) as numbered record batches, so every reader of
clean/, removed/ and rejected/ (tokenize, tokenizer training, the report, inspect, a resumed build) reads every
format through one function. The format follows from the file name (``shard_suffix``).

- ``arrow``: the IPC *stream* format, uncompressed, what ``datasets`` keeps in its cache: ``Dataset.from_file``
  memory-maps it, as do ``pyarrow.ipc.open_stream`` and ``polars.read_ipc_stream``. Record batches of
  ``ROWS_PER_BATCH`` rows.
- ``parquet``: zstd by default, row groups of about ``ROW_GROUP_BYTES``, min/max statistics on every column but
  ``text`` (a text's statistics would copy it into the footer), so DuckDB, polars and Spark skip row groups.
- ``jsonl``: one JSON object per line, compressed with zstd or gzip, or not.
"""
from __future__ import annotations

import dataclasses
import json
import os
import posixpath
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

from corpusforge.core import files
from corpusforge.core.errors import UserError

FORMATS = ("arrow", "parquet", "jsonl")
COMPRESSIONS = ("auto", "zstd", "gzip", "none")
ROWS_PER_BATCH = 1024
ROW_GROUP_BYTES = 64 * 2**20
# Columns whose min/max statistics are not written: a document's whole text in the footer helps no query.
NO_STATISTICS = ("text", "raw")
SUFFIXES = {("arrow", "none"): ".arrow", ("parquet", "zstd"): ".parquet", ("parquet", "gzip"): ".parquet",
            ("parquet", "none"): ".parquet", ("jsonl", "zstd"): ".jsonl.zst", ("jsonl", "gzip"): ".jsonl.gz",
            ("jsonl", "none"): ".jsonl"}
SHARD_SUFFIXES = tuple(sorted(set(SUFFIXES.values()), key=len, reverse=True))


@dataclasses.dataclass(frozen=True)
class ShardFormat:
    """A file format of shards and its compression (``auto``: zstd for parquet and jsonl, none for arrow)."""

    name: str = "arrow"
    compression: str = "auto"

    def __post_init__(self) -> None:
        if self.name not in FORMATS:
            raise UserError(f"output.format must be one of {', '.join(FORMATS)}, got {self.name!r}")
        if self.compression not in COMPRESSIONS:
            raise UserError(f"output.compression must be one of {', '.join(COMPRESSIONS)}, got {self.compression!r}")
        if self.name == "arrow" and self.compression not in ("auto", "none"):
            raise UserError(f"output.compression={self.compression} does not apply to Arrow shards, which stay "
                            "uncompressed so readers memory-map them; use output.format=parquet or jsonl to compress")

    @property
    def codec(self) -> str:
        if self.compression != "auto":
            return self.compression
        return "none" if self.name == "arrow" else "zstd"

    @property
    def suffix(self) -> str:
        return SUFFIXES[(self.name, self.codec)]


def shard_suffix(path: str) -> str | None:
    """The shard suffix ``path`` ends with (``.parquet``, ``.jsonl.zst`` ...), or None."""
    return next((s for s in SHARD_SUFFIXES if path.endswith(s)), None)


def is_shard(name: str) -> bool:
    """A shard a build or tokenize wrote: ``part-*`` in one of the formats."""
    base = name.rsplit("/", 1)[-1]
    return base.startswith("part-") and shard_suffix(base) is not None


# ---------------------------------------------------------------------------------------------- writing

def write_shard(path: str, schema: pa.Schema, rows: Iterable[dict[str, Any]], fmt: ShardFormat = ShardFormat(),
                row_group_bytes: int = ROW_GROUP_BYTES) -> tuple[int, int]:
    """Write ``rows`` (dicts of ``schema``) to ``path`` (local or any Beam filesystem) in ``fmt``.
    Returns (rows, bytes). The bytes depend only on the rows, the schema and the format."""
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
        sink = pa.PythonFile(raw, mode="w")
        batches = _batches(schema, rows)
        if fmt.name == "arrow":
            count = _write_arrow(sink, schema, batches)
        elif fmt.name == "parquet":
            count = _write_parquet(sink, schema, batches, fmt.codec, row_group_bytes)
        else:
            count = _write_jsonl(sink, batches, fmt.codec)
    size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    return count, size


def _batches(schema: pa.Schema, rows: Iterable[dict[str, Any]]) -> Iterator[pa.RecordBatch]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == ROWS_PER_BATCH:
            yield pa.RecordBatch.from_pylist(batch, schema=schema)
            batch = []
    if batch:
        yield pa.RecordBatch.from_pylist(batch, schema=schema)


def _write_arrow(sink, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> int:
    count = 0
    with ipc.new_stream(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
            count += batch.num_rows
    return count


def _write_parquet(sink, schema: pa.Schema, batches: Iterator[pa.RecordBatch], codec: str, group_bytes: int) -> int:
    import pyarrow.parquet as pq

    indexed = [path for f in schema if f.name not in NO_STATISTICS for path in _leaf_paths(f)]
    count, pending, pending_bytes = 0, [], 0
    with pq.ParquetWriter(sink, schema, compression=codec, write_statistics=indexed, use_dictionary=indexed) as writer:
        for batch in batches:
            pending.append(batch)
            pending_bytes += batch.nbytes
            if pending_bytes >= group_bytes:  # one row group per ~group_bytes of data
                writer.write_table(pa.Table.from_batches(pending, schema), row_group_size=sum(len(b) for b in pending))
                count += sum(len(b) for b in pending)
                pending, pending_bytes = [], 0
        if pending:
            writer.write_table(pa.Table.from_batches(pending, schema), row_group_size=sum(len(b) for b in pending))
            count += sum(len(b) for b in pending)
    return count


def _leaf_paths(field: pa.Field, prefix: str = "") -> Iterator[str]:
    """Parquet's column paths under ``field`` (``annotations.lang``, ``tags.list.element``): statistics and
    dictionaries are set per leaf column; a struct's own name matches none."""
    path = prefix + field.name
    if pa.types.is_struct(field.type):
        for child in field.type:
            yield from _leaf_paths(child, path + ".")
    elif pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
        yield from _leaf_paths(field.type.value_field.with_name("element"), path + ".list.")
    else:
        yield path


def _write_jsonl(sink, batches: Iterator[pa.RecordBatch], codec: str) -> int:
    out = sink if codec == "none" else pa.CompressedOutputStream(sink, codec)
    count = 0
    for batch in batches:
        lines = [json.dumps(row, ensure_ascii=False, separators=(",", ":")) for row in batch.to_pylist()]
        out.write(("\n".join(lines) + "\n").encode("utf-8"))
        count += batch.num_rows
    if out is not sink:
        out.close()  # flushes the compressor's last frame into ``sink``, which the caller closes
    return count


# ---------------------------------------------------------------------------------------------- reading

class ShardReader:
    """One shard's schema and record batches, by number, whatever its format. Arrow IPC files are read in
    place and Arrow streams memory-mapped when local; Parquet reads one row group per batch; a JSON Lines shard is
    read whole when opened (one shard's rows in memory). ``schema``: the types of JSON Lines columns (without
    it, they are inferred from the values; other formats carry their schema)."""

    def __init__(self, path: str, schema: pa.Schema | None = None) -> None:
        self.path = path
        self._batches: list[pa.RecordBatch] | None = None
        self._file = self._parquet = None
        suffix = shard_suffix(path) or os.path.splitext(path)[1]
        try:
            if suffix in (".arrow", ".feather", ".ipc"):
                source = _source(path)
                if source.read(6) == b"ARROW1":  # the IPC file format's magic; a stream starts with a message
                    source.seek(0)
                    self._file = ipc.open_file(source)
                    self.schema = self._file.schema
                else:
                    source.seek(0)
                    stream = ipc.open_stream(source)
                    self.schema, self._batches = stream.schema, list(stream)  # memory-mapped: no copy
            elif suffix == ".parquet":
                import pyarrow.parquet as pq

                self._parquet = pq.ParquetFile(_source(path))
                self.schema = self._parquet.schema_arrow
            elif suffix.startswith(".jsonl"):
                self._batches = _read_jsonl(path, schema)
                self.schema = self._batches[0].schema if self._batches else (schema or pa.schema([]))
            else:
                raise UserError(f"{path}: not a shard (expected {', '.join(SHARD_SUFFIXES)})")
        except ValueError as exc:  # a cut or foreign file: pa.ArrowInvalid and json.JSONDecodeError are ValueErrors
            raise UserError(f"{path} is not a readable {suffix} shard ({exc}); rebuild the run") from None

    @property
    def kind(self) -> str:
        """``ipc-file``, ``ipc-stream``, ``parquet`` or ``jsonl``."""
        if self._file is not None:
            return "ipc-file"
        if self._parquet is not None:
            return "parquet"
        return "jsonl" if shard_suffix(self.path) in (".jsonl", ".jsonl.gz", ".jsonl.zst") else "ipc-stream"

    @property
    def slices_cheaply(self) -> bool:
        """Reading part of a batch costs only that part (Arrow); else a batch is decoded whole (Parquet)."""
        return self._parquet is None and not self.reads_whole

    @property
    def reads_whole(self) -> bool:
        """The whole file is read to reach any batch: JSON Lines, and an Arrow stream on a remote filesystem
        (a local one is memory-mapped)."""
        if shard_suffix(self.path) in (".jsonl", ".jsonl.gz", ".jsonl.zst"):
            return True
        return self._file is None and self._parquet is None and not files.is_local(self.path)

    @property
    def num_record_batches(self) -> int:
        if self._file is not None:
            return self._file.num_record_batches
        if self._parquet is not None:
            return self._parquet.num_row_groups
        return len(self._batches)

    def get_batch(self, index: int) -> pa.RecordBatch:
        if self._file is not None:
            return self._file.get_batch(index)
        if self._parquet is not None:
            table = self._parquet.read_row_group(index).combine_chunks()
            return table.to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([], schema=table.schema)
        return self._batches[index]

    def batches(self, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        for index in range(self.num_record_batches):
            batch = self.get_batch(index)
            yield batch.select(columns) if columns else batch

    @property
    def num_rows(self) -> int:
        if self._parquet is not None:
            return self._parquet.metadata.num_rows
        return sum(self.get_batch(i).num_rows for i in range(self.num_record_batches))

    def read_all(self) -> pa.Table:
        return pa.Table.from_batches(list(self.batches()), schema=self.schema)


def open_shard(path: str, schema: pa.Schema | None = None) -> ShardReader:
    """A ``ShardReader`` of ``path``: Arrow (stream or file), Parquet or JSON Lines (.jsonl, .jsonl.gz, .jsonl.zst)."""
    return ShardReader(path, schema)


def _source(path: str):
    """Local: a memory map. Remote: Beam's seekable stream, so a Parquet row group or an IPC file's batch reads
    only its own bytes."""
    if files.is_local(path):
        return pa.memory_map(path[len("file://"):] if path.startswith("file://") else path, "r")
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    return pa.PythonFile(FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED), mode="r")


def _read_jsonl(path: str, schema: pa.Schema | None) -> list[pa.RecordBatch]:
    codec = {".jsonl.zst": "zstd", ".jsonl.gz": "gzip"}.get(shard_suffix(path) or "")
    raw = _source(path)
    stream = pa.CompressedInputStream(raw, codec) if codec else raw
    # split on "\n" only: json.dumps leaves U+2028, U+2029 and U+0085 in strings, which splitlines() breaks at
    rows = [json.loads(line) for line in stream.read().decode("utf-8").split("\n") if line]
    # Python values to Arrow: strings stay strings (pyarrow.json would make an ISO date in an id a timestamp);
    # one table, so every batch has the types inferred from all rows.
    return pa.Table.from_pylist(rows, schema=schema).to_batches(ROWS_PER_BATCH) if rows else []


def shard_files(location: str) -> list[tuple[str, int]]:
    """``(path, size)`` of the shard files of a directory (any name with a shard suffix: ``part-*.parquet``,
    ``*.arrow`` ...), or of the files a glob or a single path names, sorted by path."""
    if any(ch in location for ch in "*?["):
        return files.match(location)
    if files.is_local(location) and not os.path.isdir(location[len("file://"):] if location.startswith("file://")
                                                       else location):
        return files.match(location)
    if not files.is_local(location) and files.exists(location) and shard_suffix(location):
        return files.match(location)
    found = files.match(files.join(location, "*")) if files.is_local(location) else \
        files.match(location.rstrip("/") + "/*")
    return [(path, size) for path, size in found
            if shard_suffix(path) and not posixpath.basename(path).startswith(".")]
