"""Parquet and Arrow IPC inputs as record batches of bounded size, and the size of each row in them.

A JSONL line is bounded by ``output.max_record_bytes`` before it is decoded (``bounded_lines``). A columnar
file's unit of reading is a batch of rows that pyarrow decodes whole, so the readers (``pipeline/readers.py``,
and ``read_rows`` for the commands outside the build: ``evaluate``, ``embed``, fine-tuning data) bound the batch
instead, and measure every row before turning it into Python objects:

- **Parquet**: each row group is read on its own (``iter_batches(row_groups=[i])``) in batches of at most
  ``BATCH_ROWS`` rows, and fewer where the row group's uncompressed bytes per row (footer metadata:
  ``total_uncompressed_size`` of its column chunks over ``num_rows``) say a batch would decode to more than
  ``BATCH_BYTES``. Column chunks are read through a 1 MiB buffer (``buffer_size``, no ``pre_buffer``), so a
  chunk is held one page at a time, not whole; columns are decoded on this thread (``use_threads=False``: a
  thread pool's allocator caches kept tens of MB more). A row group of one row whose encoded size alone is past
  4 x the limit (+1 MiB, room for page headers that repeat the value as statistics) is rejected from the
  footer without being decoded (``Oversized``).
- **Arrow IPC** (file or stream format): one record batch at a time (``open_ipc``). A file of up to
  ``MAP_ABOVE`` (64 MiB) is read through ordinary reads of the opened file, each batch validated in full
  (offsets, UTF-8) before a row is measured or converted: another process that cuts a mapped file short while
  it is read kills the reader (SIGBUS), where a short read is an exception the reader rejects
  (``file_changed``), and a batch rewritten under the reader fails its validation instead of pointing outside
  its buffers. A larger file is memory-mapped, zero-copy: pyarrow reads a batch whole otherwise, and one
  batch may be the whole file.
- In every batch, ``row_sizes`` gives each row's decoded size (string and binary bytes, fixed widths, a
  dictionary value's bytes per row that uses it) from the offsets alone; ``runs`` splits the batch into
  single rows over ``max_record_bytes`` (rejected ``oversize_record``, never converted) and runs of the other
  rows of at most ``BATCH_BYTES`` together, converted to Python one run at a time.

What pyarrow cannot avoid (docs/inputs.md has the figures): a Parquet page is decompressed and decoded whole,
so a huge cell costs about 3 x its page before its row can be rejected, and pyarrow's writer puts up to 1,024
values in a page whatever their size; a dictionary page's large value that many rows repeat decodes to a copy
per row; an Arrow IPC record batch is read whole (its body, once; compressed bodies decompressed), so a huge
cell costs its batch's bytes before its row is rejected.
"""
from __future__ import annotations

import dataclasses
from typing import Any, BinaryIO, Iterator

import numpy as np

from corpusforge.core.input_files import RecordError

BATCH_ROWS = 1024  # the most rows of one batch (the reader's batch size before sizes were bounded)
BATCH_BYTES = 4 << 20  # what a batch aims to decode to, and the most bytes one run of rows converted to Python
_BUFFER = 1 << 20  # Parquet column chunks are read through a buffer of this size, a page at a time
_HEADER_ROOM = 1 << 20  # page headers, statistics and levels in a one-row row group's encoded size


@dataclasses.dataclass
class Oversized:
    """``rows`` rows known from the file's metadata alone to be over the limit: ``size`` encoded bytes."""

    rows: int
    size: int


def open_parquet(source: BinaryIO) -> Any:
    """A ``pyarrow.parquet.ParquetFile`` that reads column chunks a page at a time (see the module's docstring)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(source, buffer_size=_BUFFER, pre_buffer=False)


def parquet_batches(reader: Any, max_bytes: int, budget: int = BATCH_BYTES,
                    columns: list[str] | None = None) -> Iterator[Any]:
    """The record batches of every row group of ``reader`` (``open_parquet``), each of at most ``BATCH_ROWS``
    rows and about ``budget`` decoded bytes; a one-row row group over the limit as ``Oversized``. ``columns``:
    read and count only these top-level columns (None: all)."""
    meta = reader.metadata
    for group in range(meta.num_row_groups):
        row_group = meta.row_group(group)
        rows = row_group.num_rows
        if rows <= 0:
            continue
        size = sum(row_group.column(j).total_uncompressed_size for j in range(row_group.num_columns)
                   if columns is None or row_group.column(j).path_in_schema.split(".")[0] in columns)
        if rows == 1 and size > 4 * max_bytes + _HEADER_ROOM:
            yield Oversized(1, size)
            continue
        batch_rows = max(1, min(BATCH_ROWS, budget * rows // max(size, 1)))
        for batch in reader.iter_batches(batch_size=batch_rows, row_groups=[group], columns=columns,
                                         use_threads=False):
            large = batch.nbytes > budget
            yield batch
            if large:  # rows larger than the row group's average: hand what their decoding took back to the system
                del batch
                _release_unused()


@dataclasses.dataclass
class OverLimit:
    """A row of ``read_rows`` over its limit, never converted: its position in the file (from 0) and its size
    in bytes, decoded, or encoded where the footer alone showed it (``encoded``: a one-row row group)."""

    position: int
    size: int
    encoded: bool = False


def repeated_names(batch: Any) -> str:
    """What a ``duplicate_key`` rejection says of ``batch`` when its schema names a column twice (``""`` when no
    name repeats): the same reason as a JSON object that gives a key twice."""
    names = batch.schema.names
    if len(set(names)) == len(names):
        return ""
    twice = sorted({name for name in names if names.count(name) > 1})
    return "columns named twice: " + ", ".join(repr(name[:60]) for name in twice[:5])


def read_rows(source: BinaryIO, fmt: str, max_bytes: int, columns: list[str] | None = None,
              names: list[str] | None = None) -> Iterator[dict[str, Any] | OverLimit]:
    """Every row of the Parquet (``fmt`` ``"parquet"``) or Arrow IPC (``"arrow"``, file or stream format) file
    ``source`` (seekable), in order, read as the build's readers read it: batches of bounded size, each row
    measured from its offsets (``row_sizes``); a row over ``max_bytes`` as ``OverLimit``, never converted, the
    others as dicts, converted a run of at most ``BATCH_BYTES`` at a time. ``columns``: only those of them the
    file has (None: all). ``names``, a list, is given the file's column names (a caller that asked for a column the
    file lacks tells the user which it has). For commands that read user files outside the build; pyarrow's
    errors propagate."""
    if fmt == "parquet":
        reader = open_parquet(source)
        schema_names = reader.schema_arrow.names
        if names is not None:
            names[:] = schema_names
        batches: Iterator[Any] = parquet_batches(
            reader, max_bytes, columns=None if columns is None else [c for c in columns if c in schema_names])
    else:
        batches = open_ipc(source)
    position = 0
    for batch in batches:
        if isinstance(batch, Oversized):
            for _ in range(batch.rows):
                yield OverLimit(position, batch.size, encoded=True)
                position += 1
            continue
        if names is not None and fmt != "parquet":
            names[:] = batch.schema.names
        if columns is not None and fmt != "parquet":
            batch = batch.select([c for c in columns if c in batch.schema.names])
        repeated = repeated_names(batch)
        if repeated:  # as the build rejects these rows: raised, the caller's own way with a bad record
            raise RecordError("duplicate_key", repeated)
        sizes = row_sizes(batch)
        for start, stop, oversize in runs(sizes, max_bytes):
            if oversize:
                yield OverLimit(position, int(sizes[start]))
                position += 1
                continue
            rows = batch.slice(start, stop - start).to_pylist()
            for row in rows:
                yield row
                position += 1
            del rows
        del batch


def _release_unused() -> None:
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


MAP_ABOVE = 64 << 20  # an Arrow IPC file larger than this is memory-mapped, not read (open_ipc)


def open_ipc(source: BinaryIO) -> Iterator[Any]:
    """The record batches of the Arrow IPC file or stream ``source`` (seekable), opened now (a file that is
    neither raises here), read later one batch at a time.

    A file of up to ``MAP_ABOVE`` bytes (or one without a descriptor) is read through ``source``'s own reads, each
    batch validated in full (``RecordBatch.validate(full=True)``: offsets within their buffers, valid UTF-8) so
    that no row of a damaged or rewritten batch is measured or converted, and a file another process cuts short
    is a short read, an exception the reader rejects (``file_changed``). A larger file is memory-mapped and its
    batches read zero-copy, the pages of each dropped (``MADV_DONTNEED``) before the next: pyarrow reads a batch
    whole through ordinary reads (no partial read of an IPC body), so one 300 MiB cell in a one-batch file cost
    +306 MB read, +7 MB mapped (``python bench/columnar_memory.py``), and a 5 GB one-batch file (polars writes
    one batch per frame) would cost 5 GB. The price, for those files only: another process that cuts such a file
    short while it is read kills the reader with SIGBUS, which Python cannot catch (docs/inputs.md)."""
    import pyarrow as pa

    view = _mapped(source)
    stream = pa.BufferReader(pa.py_buffer(view)) if view is not None else source
    try:
        reader = pa.ipc.open_file(stream)
        batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
    except pa.ArrowInvalid:  # the stream format
        stream.seek(0)
        batches = iter(pa.ipc.open_stream(stream))
    return _validated(batches) if view is None else _released(batches, view)


def _mapped(source: BinaryIO) -> Any:
    """A read-only memory map of ``source``'s file when it is larger than ``MAP_ABOVE``, else None."""
    import mmap
    import os

    try:
        if os.fstat(source.fileno()).st_size <= MAP_ABOVE:
            return None
        return mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ)
    except (AttributeError, OSError, ValueError):  # no descriptor (io.UnsupportedOperation is an OSError)
        return None


def _validated(batches: Iterator[Any]) -> Iterator[Any]:
    for batch in batches:
        batch.validate(full=True)
        yield batch


def _released(batches: Iterator[Any], view: Any) -> Iterator[Any]:
    """The mapped batches, structure checked (``validate()``: buffer sizes, no value read, so that a cell that is
    rejected is never touched), the pages read dropped after each (a read-only file mapping: a page touched again
    reads the file)."""
    import mmap

    for batch in batches:
        batch.validate()
        yield batch
        if hasattr(view, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
            view.madvise(mmap.MADV_DONTNEED)


def row_sizes(batch: Any) -> np.ndarray:
    """Each row's decoded size in bytes: the sum over its columns of string and binary bytes, fixed widths and,
    for a dictionary column, the bytes of the value the row uses; read from offsets, no value is touched. A
    nested column (list, struct, map) counts its bytes in the batch evenly over its rows when they are at
    most ``BATCH_BYTES``, else each row's own (``Array.nbytes`` of a one-row slice)."""
    sizes = np.zeros(batch.num_rows, dtype=np.int64)
    for column in batch.columns:
        sizes += _column_sizes(column)
    return sizes


def _column_sizes(column: Any) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(column)
    kind = column.type
    if pa.types.is_dictionary(kind):
        values = pa.array(_column_sizes(column.dictionary), pa.int64())
        return pc.fill_null(pc.take(values, column.indices), 0).to_numpy()
    if (pa.types.is_string(kind) or pa.types.is_binary(kind) or pa.types.is_large_string(kind)
            or pa.types.is_large_binary(kind)):
        return pc.fill_null(pc.binary_length(column), 0).to_numpy().astype(np.int64)
    try:
        return np.full(n, max(1, kind.bit_width // 8), dtype=np.int64)  # fixed width (bool, numbers, dates)
    except ValueError:  # not fixed width
        pass
    total = column.nbytes
    if total <= BATCH_BYTES:
        return np.full(n, -(-total // max(n, 1)), dtype=np.int64)
    return np.array([column.slice(i, 1).nbytes for i in range(n)], dtype=np.int64)


def runs(sizes: np.ndarray, max_bytes: int, budget: int = BATCH_BYTES) -> Iterator[tuple[int, int, bool]]:
    """``(start, stop, oversize)`` over the rows of ``sizes``, in order: a row over ``max_bytes`` alone with
    ``oversize`` true; the others in runs of at most ``budget`` bytes together (at least one row each), cut
    where the running total passes the budget (one ``searchsorted`` a run, not a Python step a row)."""
    n = len(sizes)
    ends = np.cumsum(sizes)  # ends[i]: the bytes of rows 0..i
    start = 0
    for over in [*np.flatnonzero(sizes > max_bytes).tolist(), n]:
        while start < over:
            before = int(ends[start - 1]) if start else 0
            stop = min(max(int(np.searchsorted(ends, before + budget, side="right")), start + 1), over)
            yield start, stop, False
            start = stop
        if over < n:
            yield over, over + 1, True
            start = over + 1


def head(batch: Any, index: int, chars: int) -> dict[str, Any]:
    """Row ``index`` of ``batch`` as a preview: string and binary values cut to ``chars``, other values whose
    size is at most ``chars`` bytes as they are, the rest as ``"(N bytes)"``; no large value is converted."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def cut(values: Any) -> Any:
        if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
            return pc.utf8_slice_codeunits(values, 0, chars)
        if pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type):
            return pc.binary_slice(values, 0, chars)
        return None

    row: dict[str, Any] = {}
    for name, column in zip(batch.schema.names, batch.columns):
        cell = column.slice(index, 1)
        if pa.types.is_dictionary(cell.type):  # cut the values before taking this row's: no copy of a large one
            values = cut(cell.dictionary)
            cell = values.take(cell.indices) if values is not None else cell
        short = cut(cell)
        if short is not None:
            row[name] = short.to_pylist()[0]
        elif cell.nbytes <= chars:
            row[name] = cell.to_pylist()[0]
        else:
            row[name] = f"({cell.nbytes} bytes)"
    return row
