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

import contextlib
import dataclasses
import functools
import json
import os
import posixpath
import struct
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
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
    # the file's own size, not a match: ``match`` reads ``[``, ``*`` and ``?`` in a folder's name as a glob
    size = FileSystems.get_filesystem(path).size(path)
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
    """One shard's schema and record batches, by number, whatever its format, through ordinary reads (none is
    memory-mapped: a mapped shard that another process, a full disk or ``truncate`` cuts short while it is read
    kills the reader with SIGBUS, which Python cannot catch). An Arrow IPC file reads one batch at a time; an Arrow
    stream too, its batches' places noted as it is read (``_StreamBatches``); Parquet reads one row group per
    batch; a JSON Lines shard is read whole when opened (one shard's rows in memory). A shard cut or rewritten
    while it is read is one ``UserError`` naming it. ``schema``: the types of JSON Lines columns (without it, they
    are inferred from the values; other formats carry their schema). ``mapped``: a local Arrow stream is
    memory-mapped and its batches handed out zero-copy, for ``Run.dataset`` alone (a dataset of a whole run that
    the caller keeps: read, it would hold every shard in memory)."""

    def __init__(self, path: str, schema: pa.Schema | None = None, mapped: bool = False) -> None:
        self.path = path
        self._batches: list[pa.RecordBatch] | None = None
        self._file = self._parquet = self._stream = None
        self._suffix = suffix = shard_suffix(path) or os.path.splitext(path)[1]
        self._watch = None
        with self._reading():
            if suffix in (".arrow", ".feather", ".ipc"):
                source = self._open(path)
                if source.read(6) == b"ARROW1":  # the IPC file format's magic; a stream starts with a message
                    source.seek(0)
                    self._file = ipc.open_file(source)
                    self._file_source = source
                    self.schema = self._file.schema
                elif files.is_local(path) and not mapped:
                    source.seek(0)
                    self._stream = _StreamBatches(source)
                    self.schema = self._stream.schema
                else:  # remote: Beam's stream reads forward only, the whole shard is read (``reads_whole``)
                    if mapped and files.is_local(path):  # a remote file has no map: it is read (above)
                        source.close()
                        source = _mapped(path)
                    source.seek(0)
                    stream = ipc.open_stream(source)
                    self.schema, self._batches = stream.schema, list(stream)  # mapped: no copy
            elif suffix == ".parquet":
                import pyarrow.parquet as pq

                self._parquet = pq.ParquetFile(self._open(path))
                self.schema = self._parquet.schema_arrow
            elif suffix.startswith(".jsonl"):
                self._batches = _read_jsonl(self._open(path), path, schema)
                self.schema = self._batches[0].schema if self._batches else (schema or pa.schema([]))
            else:
                raise UserError(f"{path}: not a shard (expected {', '.join(SHARD_SUFFIXES)})")

    def _open(self, path: str):
        source = _source(path)
        if files.is_local(path):
            from corpusforge.core.input_files import FileWatch

            self._watch = FileWatch(source)
        return source

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """A read that fails (a cut or foreign file: ``pa.ArrowInvalid`` and ``json.JSONDecodeError`` are
        ValueErrors; a short read an OSError or EOFError; any other pyarrow error) is one line naming the shard: changed since it was
        opened (``FileWatch``), or not readable."""
        try:
            yield
        except (ValueError, OSError, EOFError, pa.ArrowException) as exc:
            change = self._watch.change() if self._watch is not None else None
            if change:
                raise UserError(f"{self.path} {change} while it was read ({_short(exc)}); something else writes to "
                                "the run: rebuild it once nothing does") from None
            raise UserError(f"{self.path} is not a readable {self._suffix} shard ({_short(exc)}); rebuild the run"
                            ) from None

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
        (a local one is read a batch at a time, ``_StreamBatches``)."""
        if shard_suffix(self.path) in (".jsonl", ".jsonl.gz", ".jsonl.zst"):
            return True
        return self._batches is not None

    @property
    def num_record_batches(self) -> int:
        """(An Arrow stream reads to its end for it, the batches it has not read yet once: iterate ``batches()``
        to read each once.)"""
        with self._reading():
            if self._file is not None:
                return self._file.num_record_batches
            if self._parquet is not None:
                return self._parquet.num_row_groups
            if self._stream is not None:
                return self._stream.count()
            return len(self._batches)

    def get_batch(self, index: int) -> pa.RecordBatch:
        with self._reading():
            if self._file is not None:
                return self._file.get_batch(index)
            if self._parquet is not None:
                table = self._parquet.read_row_group(index).combine_chunks()
                return table.to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([], schema=table.schema)
            if self._stream is not None:
                batch = self._stream.get(index if index >= 0 else index + self._stream.count())
                if batch is None:
                    raise IndexError(f"{self.path} has no record batch {index}")
                return batch
            return self._batches[index]

    def batches(self, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Every batch once, in order (an Arrow stream in one pass)."""
        index = 0
        while True:
            with self._reading():
                if self._stream is not None:
                    batch = self._stream.get(index)
                else:
                    batch = self.get_batch(index) if index < self.num_record_batches else None
            if batch is None:
                return
            yield batch.select(columns) if columns else batch
            index += 1

    @property
    def num_rows(self) -> int:
        """Rows of the shard, from metadata alone where the format has it (``batch_rows``)."""
        if self._parquet is not None:
            return self._parquet.metadata.num_rows
        return sum(self.batch_rows())

    def batch_rows(self) -> list[int]:
        """Each record batch's rows, from metadata alone where the format has it: a local Arrow shard's message
        headers (bodies skipped: ``read_message_header``), a Parquet shard's footer; a JSON Lines shard, or an Arrow
        stream on a remote filesystem, is read whole (``reads_whole``)."""
        with self._reading():
            if self._stream is not None:
                return [header.rows for header in self._stream.headers()]
            if self._file is not None:
                return [header.rows for header in self._file_headers()]
            if self._parquet is not None:
                meta = self._parquet.metadata
                return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
            return [batch.num_rows for batch in self._batches]

    def string_bytes(self, name: str) -> int:
        """The bytes of the string (or binary) column ``name`` over every row, nulls none: what
        ``pyarrow.compute.binary_length`` sums. A local Arrow shard's batch gives it from two of its column's
        offsets (the first and the last, read alone: neither the text nor the other offsets are read); a batch
        with nulls there (a null's slot may span bytes) is read. A Parquet shard reads the column, one row group
        at a time: its footer's sizes are of the encoded pages (length prefixes, page headers), not of the text,
        and pyarrow does not expose the size statistics (``unencoded_byte_array_data_bytes``) that would say; a
        JSON Lines shard is read whole."""
        with self._reading():
            if self._stream is None and self._file is None:
                if self._parquet is not None:
                    groups = (self._parquet.read_row_group(i, columns=[name]).column(name)
                              for i in range(self._parquet.num_row_groups))
                else:
                    groups = (batch.column(name) for batch in self._batches)
                return sum(int(pc.sum(pc.binary_length(column)).as_py() or 0) for column in groups)
            headers = self._stream.headers() if self._stream is not None else self._file_headers()
            kind = self.schema.field(name).type
            width = 8 if pa.types.is_large_string(kind) or pa.types.is_large_binary(kind) else 4
            plain = width == 8 or pa.types.is_string(kind) or pa.types.is_binary(kind)
            node, buffer, nodes, buffers = column_layout(self.schema, name)
            read, total = self._stream._read if self._stream is not None else self._read_file, 0
            for index, header in enumerate(headers):
                if len(header.nodes) != nodes or len(header.buffers) != buffers:
                    raise pa.ArrowInvalid(f"the record batch at byte {header.start:,} has {len(header.nodes)} "
                                          f"arrays and {len(header.buffers)} buffers, not the schema's")
                rows, nulls = header.nodes[node]
                if not rows:
                    continue
                if nulls or not plain or header.compressed:  # read, as pyarrow reads it
                    column = self.get_batch(index).column(name)
                    total += int(pc.sum(pc.binary_length(column)).as_py() or 0)
                    continue
                (at, length), (_, data) = header.buffers[buffer + 1], header.buffers[buffer + 2]
                if at < 0 or length < (rows + 1) * width or at + length > header.body_length:
                    raise pa.ArrowInvalid(f"the record batch at byte {header.start:,}: {name}'s offsets lie "
                                          "outside its body")
                first = int.from_bytes(read(header.body + at, width), "little", signed=True)
                last = int.from_bytes(read(header.body + at + rows * width, width), "little", signed=True)
                if not 0 <= first <= last <= data:
                    raise pa.ArrowInvalid(f"the record batch at byte {header.start:,}: {name}'s offsets lie "
                                          "outside its data")
                total += last - first
            return total

    def _read_file(self, at: int, length: int) -> bytes:
        self._file_source.seek(at)
        return self._file_source.read(length)

    def _file_headers(self) -> list[MessageHeader]:
        """The record batch headers of an Arrow IPC file: the stream between its magic and its footer, read as a
        stream's (``message_headers``), as many as its footer lists."""
        found = [header for header in message_headers(self._read_file, self._file_source.size(), 8) if header.kind == 3]
        if len(found) != self._file.num_record_batches:
            raise pa.ArrowInvalid(f"its footer lists {self._file.num_record_batches} record batches, its messages "
                                  f"{len(found)}")
        return found

    def read_all(self) -> pa.Table:
        return pa.Table.from_batches(list(self.batches()), schema=self.schema)


def open_shard(path: str, schema: pa.Schema | None = None, mapped: bool = False) -> ShardReader:
    """A ``ShardReader`` of ``path``: Arrow (stream or file), Parquet or JSON Lines (.jsonl, .jsonl.gz, .jsonl.zst)."""
    return ShardReader(path, schema, mapped)


# ---------------------------------------------------------------------------------------------- IPC headers

@dataclasses.dataclass(frozen=True)
class MessageHeader:
    """One Arrow IPC message's header, read without its body (``read_message_header``). ``kind``: the
    ``MessageHeader`` union's type (1 a schema, 2 a dictionary batch, 3 a record batch); a record batch's ``rows``,
    ``nodes`` ((length, null count) of each array, depth first, as the columns nest) and ``buffers`` ((offset,
    length) of each buffer, from the body's start), and whether its body is compressed or has variadic buffers."""

    kind: int
    start: int
    body: int
    body_length: int
    rows: int = 0
    nodes: tuple[tuple[int, int], ...] = ()
    buffers: tuple[tuple[int, int], ...] = ()
    compressed: bool = False
    variadic: bool = False

    @property
    def end(self) -> int:
        return self.body + self.body_length


class _Flat:
    """A flatbuffer table in ``data`` at ``at``, every read bounds-checked (a damaged header is ArrowInvalid)."""

    def __init__(self, data: bytes, at: int) -> None:
        self.data = data
        self.at = at
        self.vtable = at - self._unpack("<i", at)
        self.vtable_size = self._unpack("<H", self.vtable)

    def _unpack(self, fmt: str, at: int):
        if not 0 <= at <= len(self.data) - struct.calcsize(fmt):
            raise pa.ArrowInvalid("a damaged message header")
        return struct.unpack_from(fmt, self.data, at)[0]

    def _field(self, number: int) -> int | None:
        slot = 4 + 2 * number
        offset = self._unpack("<H", self.vtable + slot) if slot + 2 <= self.vtable_size else 0
        return self.at + offset if offset else None

    def scalar(self, number: int, fmt: str, default: int = 0) -> int:
        at = self._field(number)
        return default if at is None else self._unpack(fmt, at)

    def table(self, number: int) -> "_Flat | None":
        at = self._field(number)
        return None if at is None else _Flat(self.data, at + self._unpack("<I", at))

    def structs(self, number: int, fmt: str) -> list[tuple]:
        """A vector of structs of ``fmt`` (empty when absent)."""
        at = self._field(number)
        if at is None:
            return []
        vector = at + self._unpack("<I", at)
        count, size = self._unpack("<I", vector), struct.calcsize(fmt)
        if vector + 4 + count * size > len(self.data):
            raise pa.ArrowInvalid("a damaged message header")
        return list(struct.iter_unpack(fmt, self.data[vector + 4:vector + 4 + count * size]))


def read_message_header(read, position: int, size: int) -> MessageHeader | None:
    """The header of the Arrow IPC message at ``position`` of a file of ``size`` bytes, read through ``read(offset,
    length) -> bytes`` (its metadata only, the body skipped), or None at the end-of-stream marker or the file's end.
    pyarrow reads a message's body with its metadata and has no call that skips it, so the framing is read here
    (Arrow's IPC format: 0xFFFFFFFF, the metadata's length, the ``Message`` flatbuffer, the body of its
    ``bodyLength``), and of the flatbuffers only the fields that place a record batch's arrays: ``Message``
    (``header_type``, ``header``, ``bodyLength``) and ``RecordBatch`` (``length``, ``nodes``, ``buffers``,
    ``compression``, ``variadicBufferCounts``). Every length is checked against the file: a damaged or cut header
    is ArrowInvalid or EOFError, never a read past the file."""
    if position >= size:
        if position > size:
            raise EOFError(f"the stream's last message runs past its end ({size:,} bytes)")
        return None  # the file's end (a stream without its end-of-stream marker)
    prefix = read(position, 8)
    if prefix in (b"\xff\xff\xff\xff\0\0\0\0", b"\0\0\0\0"):
        return None  # the end-of-stream marker (of the format before 0.15: 4 zero bytes)
    if len(prefix) < 8 or prefix[:4] != b"\xff\xff\xff\xff":
        raise pa.ArrowInvalid(f"no message at byte {position:,}")
    length = int.from_bytes(prefix[4:8], "little", signed=True)
    meta = read(position + 8, length) if 0 < length <= size - position - 8 else b""
    if len(meta) < 8:
        raise EOFError(f"the stream ends inside a message's metadata at byte {position:,}")
    try:
        message = _Flat(meta, int.from_bytes(meta[0:4], "little"))
        kind, body_length = message.scalar(1, "<B"), message.scalar(3, "<q")
        if body_length < 0:
            raise pa.ArrowInvalid("a negative body length")
        header = MessageHeader(kind, position, position + 8 + length, body_length)
        if kind != 3:
            return header
        batch = message.table(2)
        if batch is None:
            raise pa.ArrowInvalid("a record batch message without its header")
        if batch.scalar(0, "<q") < 0:
            raise pa.ArrowInvalid("a negative row count")
        return dataclasses.replace(
            header, rows=batch.scalar(0, "<q"), nodes=tuple(batch.structs(1, "<qq")),
            buffers=tuple(batch.structs(2, "<qq")), compressed=batch.table(3) is not None,
            variadic=bool(batch.structs(4, "<q")))
    except pa.ArrowInvalid as exc:
        raise pa.ArrowInvalid(f"the message at byte {position:,} is damaged ({exc})") from None


def read_schema_message(read, header: MessageHeader) -> pa.Schema:
    """The schema of the schema message ``header`` (pyarrow parses it: a schema is no flatbuffer to read by hand)."""
    if header.kind != 1 or header.body_length:
        raise pa.ArrowInvalid(f"the message at byte {header.start:,} is not a schema")
    return ipc.read_schema(pa.py_buffer(read(header.start, header.body - header.start)))


def message_headers(read, size: int, position: int) -> Iterator[MessageHeader]:
    """Every message header from ``position`` to the end-of-stream marker (or the file's end), bodies skipped;
    each body must end within the file."""
    while (header := read_message_header(read, position, size)) is not None:
        if header.end > size:
            raise EOFError(f"the file ends ({size:,} bytes) inside the message at byte {header.start:,}")
        yield header
        position = header.end


@functools.lru_cache(maxsize=64)
def column_layout(schema: pa.Schema, name: str) -> tuple[int, int, int, int]:
    """Where column ``name``'s arrays and buffers are among a record batch's of ``schema``: ``(its first node,
    its first buffer, nodes in all, buffers in all)``. Counted by pyarrow itself (the header of an empty batch of
    the columns before it, then of all), so every type's buffers count as its IPC writer lays them out."""
    def counts(fields: list[pa.Field]) -> tuple[int, int]:
        if not fields:
            return 0, 0
        part = pa.schema(fields)
        empty = pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in fields], schema=part).serialize()
        header = read_message_header(lambda at, n: empty[at:at + n].to_pybytes(), 0, empty.size)
        return len(header.nodes), len(header.buffers)

    index = schema.get_field_index(name)
    if index < 0:
        raise KeyError(f"no single column {name!r} in the schema")
    return (*counts(list(schema)[:index]), *counts(list(schema)))


class _StreamBatches:
    """The record batches of a local Arrow IPC stream, read by number through ordinary reads, one batch in
    memory at a time. A stream has no footer listing its batches: where each batch's message starts is found by
    reading the messages' metadata only, their bodies skipped (``_next_message``), so batch ``i`` costs reading
    ``i`` small headers and one batch, in whatever order the batches are asked for (tokenize's units come
    shuffled). Each batch is validated in full (``RecordBatch.validate(full=True)``: offsets within their buffers,
    valid UTF-8) before it is handed out, so a batch rewritten in place is an exception, not a read outside its
    buffers."""

    def __init__(self, source) -> None:
        self._source = source
        try:
            schema = ipc.MessageReader.open_stream(source).read_next_message()
        except StopIteration:
            raise pa.ArrowInvalid("an empty stream: no schema") from None
        if schema.type != "schema":
            raise pa.ArrowInvalid("the stream does not start with a schema")
        self.schema = ipc.read_schema(schema)
        self._starts = [source.tell()]  # where batch i's message starts; the last: one not known to be a batch
        self._headers: list[MessageHeader] = []  # batch i's header
        self._ended = False

    def _read(self, at: int, length: int) -> bytes:
        self._source.seek(at)
        return self._source.read(length)

    def _next_message(self, position: int) -> MessageHeader | None:
        """The header of the record batch message at ``position`` (``read_message_header``), or None at the
        stream's end."""
        header = read_message_header(self._read, position, self._source.size())
        if header is not None and header.kind != 3:
            raise pa.ArrowInvalid(f"the message at byte {position:,} is not a record batch (corpusforge writes "
                                  "no dictionaries)")
        return header

    def _locate(self, index: int) -> int | None:
        """Where batch ``index``'s message starts, or None past the last batch."""
        while len(self._starts) <= index + 1 and not self._ended:
            header = self._next_message(self._starts[-1])
            if header is None:
                self._ended = True
            else:
                self._starts.append(header.end)
                self._headers.append(header)
        return self._starts[index] if 0 <= index < len(self._starts) - 1 else None

    def get(self, index: int) -> pa.RecordBatch | None:
        """Batch ``index``, or None past the last one."""
        start = self._locate(index)
        if start is None:
            return None
        self._source.seek(start)
        try:
            message = ipc.MessageReader.open_stream(self._source).read_next_message()
        except StopIteration:
            raise EOFError(f"the stream ends before its record batch {index}") from None
        batch = ipc.read_record_batch(message, self.schema)
        batch.validate(full=True)
        return batch

    def count(self) -> int:
        self._locate(1 << 62)
        return len(self._starts) - 1

    def headers(self) -> list[MessageHeader]:
        """Each batch's header, read alone (to the stream's end: each body must end within the file)."""
        self._locate(1 << 62)
        if self._starts[-1] > self._source.size():
            raise EOFError(f"the stream's last message runs past its end ({self._source.size():,} bytes)")
        return list(self._headers)


def _mapped(path: str):
    return pa.memory_map(path[len("file://"):] if path.startswith("file://") else path, "r")


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:160] + "…"


def _source(path: str):
    """Local: the file, read through ordinary reads (``pa.OSFile``; a memory map cut short raises SIGBUS).
    Remote: Beam's seekable stream, so a Parquet row group or an IPC file's batch reads only its own bytes."""
    if files.is_local(path):
        return pa.OSFile(path[len("file://"):] if path.startswith("file://") else path, "r")
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    return pa.PythonFile(FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED), mode="r")


def _read_jsonl(raw, path: str, schema: pa.Schema | None) -> list[pa.RecordBatch]:
    codec = {".jsonl.zst": "zstd", ".jsonl.gz": "gzip"}.get(shard_suffix(path) or "")
    stream = pa.CompressedInputStream(raw, codec) if codec else raw
    # split on "\n" only: json.dumps leaves U+2028, U+2029 and U+0085 in strings, which splitlines() breaks at
    rows = [json.loads(line) for line in stream.read().decode("utf-8").split("\n") if line]
    if not all(isinstance(row, dict) for row in rows):
        raise ValueError("a line that is not a JSON object")
    # Python values to Arrow: strings stay strings (pyarrow.json would make an ISO date in an id a timestamp);
    # one table, so every batch has the types inferred from all rows.
    return pa.Table.from_pylist(rows, schema=schema).to_batches(ROWS_PER_BATCH) if rows else []


def shard_files(location: str) -> list[tuple[str, int]]:
    """``(path, size)`` of the shard files of a directory (any name with a shard suffix: ``part-*.parquet``,
    ``*.arrow`` ...), or of the files a glob or a single path names, sorted by path."""
    # a path that exists is the path named, whatever its name holds (``run[1]/clean`` is no glob)
    if files.is_local(location):
        local = files.local_path(location)
        if os.path.isfile(local):
            return [(location, os.path.getsize(local))]
        if not os.path.isdir(local):
            return files.match(location)
    elif files.exists(location) and shard_suffix(location):
        return files.match(files.escape(location))
    elif any(ch in location for ch in "*?["):
        return files.match(location)
    found = files.match(files.join(files.escape(location), "*")) if files.is_local(location) else \
        files.match(files.escape(location.rstrip("/")) + "/*")
    return [(path, size) for path, size in found
            if shard_suffix(path) and not posixpath.basename(path).startswith(".")]
