"""Parquet and Arrow IPC rows larger than ``output.max_record_bytes`` (corpusforge/core/columnar.py,
docs/inputs.md "Bounded memory"): rejected as ``oversize_record`` with their position, never converted to
Python, and read in batches whose decoded size is bounded; peak memory measured in a fresh process
(``tests/fuzz/columnar_cells``)."""
import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusforge.core import columnar
from corpusforge.pipeline.config import InputConfig
from corpusforge.pipeline.document import RAW_CARRIED, Document, Rejected
from corpusforge.pipeline.readers import read_file
from tests.fuzz.columnar_cells import peak_read

MB = 1 << 20


def _huge(size: int) -> str:
    unit = "A sentence that a huge cell repeats. "
    return (unit * (size // len(unit) + 1))[:size]


def _ends(items):
    return [(i.origin[2], "kept") if isinstance(i, Document) else (i.position, i.reason) for i in items]


def test_runs_put_each_row_over_the_limit_alone_and_the_others_in_runs_of_at_most_the_budget():
    sizes = np.array([1, 6, 1, 1, 2, 9, 1])
    assert list(columnar.runs(sizes, max_bytes=5, budget=3)) == [
        (0, 1, False), (1, 2, True), (2, 4, False), (4, 5, False), (5, 6, True), (6, 7, False)]
    assert list(columnar.runs(np.array([1, 1, 1]), max_bytes=5, budget=3)) == [(0, 3, False)]  # the fast path
    assert list(columnar.runs(np.array([4, 4]), max_bytes=5, budget=3)) == [(0, 1, False), (1, 2, False)]
    assert list(columnar.runs(np.array([], dtype=np.int64), max_bytes=5)) == []


def test_row_sizes_read_from_offsets_count_each_rows_own_bytes():
    batch = pa.record_batch({
        "text": pa.array(["abc", None, "x" * 100]),
        "blob": pa.array([b"", b"12345", None]),
        "n": pa.array([1, 2, 3], pa.int64()),
        "lang": pa.array(["en", "fr", "en"]).dictionary_encode(),
        "tags": pa.array([["a"], [], None], pa.list_(pa.string())),
    })
    tags = -(-batch.column("tags").nbytes // 3)  # a small nested column: its bytes shared evenly
    assert columnar.row_sizes(batch).tolist() == [3 + 0 + 8 + 2 + tags, 0 + 5 + 8 + 2 + tags, 100 + 0 + 8 + 2 + tags]
    sliced = batch.slice(1, 2)
    assert columnar.row_sizes(sliced).tolist()[1] >= 100  # a slice's rows, not the batch's first ones


def _table(texts, meta=None):
    columns = {"text": texts, "id": list(range(len(texts)))}
    if meta is not None:
        columns["meta"] = meta
    return pa.table(columns)


def _write(table, path, fmt):
    if fmt == "parquet":
        pq.write_table(table, path)
    else:
        with pa.ipc.new_file(path, table.schema) as writer:
            writer.write_table(table)


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_a_row_over_max_record_bytes_is_rejected_with_its_position_and_a_short_preview(tmp_path, fmt):
    path = tmp_path / f"rows.{fmt}"
    table = _table(["short one", "y" * 5_000, "short two", "short three"],
                   meta=[b"", b"", b"", b"\x00" * 3_000])  # a row over the limit by a metadata cell
    _write(table, path, fmt)
    items = list(read_file(str(path), InputConfig(path=str(path)), max_chars=10_000, max_bytes=1_000))
    assert _ends(items) == [(0, "kept"), (1, "oversize_record"), (2, "kept"), (3, "oversize_record")]
    big = items[1]
    assert big.detail == "row of 5008 bytes > 1000 (output.max_record_bytes)"
    assert big.raw.startswith('{"text": "yyy') and len(big.raw) <= RAW_CARRIED
    assert items[3].detail.startswith("row of 3") and "output.max_record_bytes" in items[3].detail


def test_parquet_batches_are_sized_from_the_row_groups_bytes_per_row(tmp_path, monkeypatch):
    path = tmp_path / "wide.parquet"
    with pq.ParquetWriter(path, _table(["a"]).schema) as writer:
        writer.write_table(_table([_huge(200_000 + i) for i in range(60)]))  # ~200 KB a row
        writer.write_table(_table(["short text"] * 3_000))
    sizes = []
    iter_batches = pq.ParquetFile.iter_batches

    def spy(self, batch_size=65536, **options):
        sizes.append(batch_size)
        return iter_batches(self, batch_size=batch_size, **options)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    items = list(read_file(str(path), InputConfig(path=str(path)), max_chars=1_000_000))
    assert len(items) == 3_060 and all(isinstance(i, Document) for i in items)
    assert sizes[0] * 200_000 <= columnar.BATCH_BYTES, sizes  # was 1,024 rows: 200 MB decoded at once
    assert sizes[-1] == columnar.BATCH_ROWS  # small rows: batches as large as before


# --- peak memory, in a fresh process ---------------------------------------------------------------------------------
HUGE = 96 * MB


@pytest.mark.parametrize("kind", ["file", "stream"])
def test_a_huge_arrow_cell_is_rejected_without_being_converted(tmp_path, kind):
    texts = ["fine text number %d" % i for i in range(40)]
    texts[20] = _huge(HUGE)
    table = _table(texts)
    path = tmp_path / f"huge.arrow"
    with (pa.ipc.new_file if kind == "file" else pa.ipc.new_stream)(path, table.schema) as writer:
        writer.write_table(table)  # one record batch of ~96 MB, uncompressed
    del table, texts
    items, grown = peak_read(path, max_chars=100_000)  # limit 6 x 100,000 + 1 MiB
    assert [(p, r) for p, r, *_ in items] == [(i, "oversize_record" if i == 20 else "kept") for i in range(40)]
    # the record batch is read whole, once (never memory-mapped: a mapped file cut short kills the reader, see
    # tests/pipeline/test_changing_inputs.py), and the huge row never converted: was +199 MB, converted
    assert grown < HUGE // MB + 32, f"reading a {HUGE // MB} MB Arrow cell grew peak memory {grown} MB"


def test_a_huge_parquet_cell_alone_in_its_row_group_is_rejected_from_the_footer(tmp_path):
    texts = ["fine text number %d" % i for i in range(40)]
    texts[20] = _huge(HUGE)
    table = _table(texts)
    path = tmp_path / "huge.parquet"
    with pq.ParquetWriter(path, table.schema) as writer:
        for start, stop in ((0, 20), (20, 21), (21, 40)):
            writer.write_table(table.slice(start, stop - start))
    del table, texts
    items, grown = peak_read(path, max_chars=100_000)
    assert [(p, r) for p, r, *_ in items] == [(i, "oversize_record" if i == 20 else "kept") for i in range(40)]
    assert "not read" in items[20][2]
    assert grown < 32, f"reading a {HUGE // MB} MB Parquet cell grew peak memory {grown} MB"  # was +~300 MB


def test_parquet_rows_near_the_limit_are_decoded_a_few_at_a_time(tmp_path):
    path = tmp_path / "near.parquet"
    table = _table([_huge(MB - i) for i in range(96)])
    pq.write_table(table, path, write_batch_size=4)  # pages of 4 values (pyarrow's default: 1,024)
    del table
    items, grown = peak_read(path, max_chars=2 * MB, max_bytes=MB + MB // 4)
    assert [(p, r) for p, r, *_ in items] == [(i, "kept") for i in range(96)]
    assert grown < 64, f"96 rows of 1 MB grew peak memory {grown} MB"  # was: all 96 decoded and converted at once
