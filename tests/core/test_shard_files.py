"""Shard files in each output format, read back by corpusforge and opened natively by the ecosystem."""
import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusforge.core.errors import UserError
from corpusforge.core.shard_files import ShardFormat, open_shard, shard_files, write_shard

SCHEMA = pa.schema([pa.field("id", pa.string()), pa.field("text", pa.large_string()), pa.field("n", pa.int64())])
ROWS = [{"id": f"2024-01-{i % 28 + 1:02d}/{i:04d}", "text": f"text {i} " * 20, "n": i} for i in range(3000)]
ROWS[7]["text"] = "line\u2028separator\u2029paragraph\x85next line\r\nand \"quotes\" \\ 🙂"


def test_arrow_shards_are_ipc_streams_that_datasets_memory_maps(tmp_path):
    path = str(tmp_path / "part-00000-of-00001.arrow")
    assert write_shard(path, SCHEMA, ROWS) == (3000, (tmp_path / "part-00000-of-00001.arrow").stat().st_size)
    assert pa.ipc.open_stream(path).read_all().to_pylist() == ROWS
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_file(path)
    assert dataset.num_rows == 3000 and dataset[1234] == ROWS[1234]
    polars = pytest.importorskip("polars")
    assert polars.read_ipc_stream(path)["n"].sum() == sum(range(3000))


def test_an_arrow_ipc_file_is_read_too(tmp_path):
    """Token shards and builds before the stream format are IPC files; one reader takes both."""
    path = tmp_path / "old.arrow"
    with pa.ipc.new_file(str(path), SCHEMA) as writer:
        writer.write_table(pa.Table.from_pylist(ROWS, SCHEMA), max_chunksize=1000)
    reader = open_shard(str(path))
    assert reader.num_record_batches == 3 and reader.read_all().to_pylist() == ROWS


def test_parquet_has_row_groups_and_statistics_but_none_of_the_text(tmp_path):
    path = str(tmp_path / "part-00000-of-00001.parquet")
    write_shard(path, SCHEMA, ROWS, ShardFormat("parquet"), row_group_bytes=100_000)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups > 2 and meta.row_group(0).column(0).compression == "ZSTD"
    first = meta.row_group(0)
    assert first.column(0).statistics.has_min_max and first.column(0).statistics.min == ROWS[0]["id"]
    assert first.column(1).statistics is None or not first.column(1).statistics.has_min_max
    reader = open_shard(path)
    assert reader.num_record_batches == meta.num_row_groups and reader.read_all().to_pylist() == ROWS
    assert reader.schema.field("text").type == pa.large_string()


def test_parquet_statistics_reach_nested_columns(tmp_path):
    schema = pa.schema([("id", pa.string()), ("annotations", pa.struct([("lang", pa.string()), ("score", pa.float64())])),
                        ("tags", pa.list_(pa.string()))])
    rows = [{"id": f"{i:03d}", "annotations": {"lang": "en" if i % 2 else "de", "score": i / 10}, "tags": ["a"]}
            for i in range(10)]
    path = str(tmp_path / "part-00000-of-00001.parquet")
    write_shard(path, schema, rows, ShardFormat("parquet"))
    group = pq.ParquetFile(path).metadata.row_group(0)
    stats = {group.column(i).path_in_schema: group.column(i).statistics for i in range(group.num_columns)}
    assert (stats["annotations.score"].min, stats["annotations.score"].max) == (0.0, 0.9)
    assert stats["annotations.lang"].has_min_max and stats["tags.list.element"].has_min_max
    assert open_shard(path).read_all().to_pylist() == rows


def test_parquet_shards_open_natively_in_duckdb_and_polars(tmp_path):
    for shard, part in enumerate((ROWS[:1000], ROWS[1000:])):
        write_shard(str(tmp_path / f"part-0000{shard}-of-00002.parquet"), SCHEMA, part, ShardFormat("parquet"))
    duckdb = pytest.importorskip("duckdb")
    glob = str(tmp_path / "*.parquet")
    assert duckdb.connect().execute(f"SELECT count(*), sum(n) FROM '{glob}' WHERE n >= 10").fetchone() == (2990, sum(range(10, 3000)))
    polars = pytest.importorskip("polars")
    assert polars.scan_parquet(glob).filter(polars.col("n") < 5).collect()["id"].to_list() == [r["id"] for r in ROWS[:5]]


@pytest.mark.parametrize("codec,decompress", [("zstd", lambda b: __import__("zstandard").ZstdDecompressor()
                                                .decompressobj().decompress(b)),
                                               ("gzip", gzip.decompress), ("none", lambda b: b)])
def test_jsonl_is_one_object_per_line_compressed_as_asked(tmp_path, codec, decompress):
    path = tmp_path / f"part-00000-of-00001{ShardFormat('jsonl', codec).suffix}"
    write_shard(str(path), SCHEMA, ROWS, ShardFormat("jsonl", codec))
    *lines, last = decompress(path.read_bytes()).decode("utf-8").split("\n")  # JSON Lines end lines with \n only
    assert last == "" and [json.loads(line) for line in lines] == ROWS
    # an id that looks like a date stays a string (inferred without the schema, too)
    assert open_shard(str(path)).read_all().to_pylist() == ROWS
    assert open_shard(str(path), SCHEMA).read_all().schema == SCHEMA


def test_a_cut_or_foreign_shard_is_one_line_naming_it(tmp_path):
    path = tmp_path / "part-00000-of-00001.parquet"
    write_shard(str(path), SCHEMA, ROWS, ShardFormat("parquet"))
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(UserError, match="part-00000-of-00001.parquet is not a readable .parquet shard"):
        open_shard(str(path))
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(UserError, match="not a shard"):
        open_shard(str(tmp_path / "notes.txt"))


def test_shard_files_lists_shards_of_every_format_and_nothing_else(tmp_path):
    for name in ("part-00000-of-00002.jsonl.zst", "part-00001-of-00002.jsonl.zst", "README.md",
                 ".part-00000-of-00002.jsonl.zst.tmp-0123", "notes.json"):
        (tmp_path / name).write_bytes(b"")
    assert [p.rsplit("/", 1)[-1] for p, _ in shard_files(str(tmp_path))] == [
        "part-00000-of-00002.jsonl.zst", "part-00001-of-00002.jsonl.zst"]


def test_arrow_cannot_be_compressed():
    with pytest.raises(UserError, match="uncompressed"):
        ShardFormat("arrow", "zstd")


@pytest.mark.parametrize("fmt", [ShardFormat("arrow"), ShardFormat("parquet"), ShardFormat("jsonl")],
                         ids=lambda f: f.suffix)
def test_shards_on_a_remote_filesystem(tmp_path, fmt):
    """cftest:// stands in for gs:// (tests/beamfs.py): written and read through Beam's FileSystems only."""
    from tests.beamfs import use_cftest

    root = use_cftest(tmp_path)
    path = f"cftest://run/clean/part-00000-of-00001{fmt.suffix}"
    assert write_shard(path, SCHEMA, ROWS, fmt)[0] == 3000
    assert (root / "run" / "clean" / f"part-00000-of-00001{fmt.suffix}").exists()
    assert [p for p, _ in shard_files("cftest://run/clean")] == [path]
    reader = open_shard(path, SCHEMA)
    assert reader.read_all().to_pylist() == ROWS
    # tokenize plans its units by this: a remote stream or JSON Lines is read once, whole; Parquet by row group
    assert reader.reads_whole == (fmt.name != "parquet")
    # Run.dataset asks for a map (a local stream's is zero-copy): a remote file has none, and is read
    assert open_shard(path, SCHEMA, mapped=True).read_all().to_pylist() == ROWS


def test_an_arrow_stream_shard_reads_any_batch_in_any_order_without_a_memory_map(tmp_path, monkeypatch):
    """Tokenize's units arrive shuffled: batch i of a stream is found from the messages' headers (bodies
    skipped), read through ordinary reads (a memory map cut short raises SIGBUS: test_own_files_cut.py)."""
    import random

    from corpusforge.core import shard_files

    path = str(tmp_path / "part-00000-of-00001.arrow")
    write_shard(path, SCHEMA, ROWS)
    monkeypatch.setattr(pa, "memory_map", None)  # any map fails
    reader = open_shard(path)
    order = list(range(3))
    random.Random(0).shuffle(order)
    assert [reader.get_batch(b).to_pylist() for b in order] == [ROWS[b * 1024:(b + 1) * 1024] for b in order]
    assert reader.num_record_batches == 3 and reader.read_all().to_pylist() == ROWS
    with pytest.raises(IndexError):
        reader.get_batch(3)
    reads = []
    real = shard_files._StreamBatches._next_message
    monkeypatch.setattr(shard_files._StreamBatches, "_next_message",
                        lambda self, at: reads.append(at) or real(self, at))
    assert open_shard(path).get_batch(2).to_pylist() == ROWS[2048:]  # three headers read, two bodies skipped
    assert len(reads) == 3
