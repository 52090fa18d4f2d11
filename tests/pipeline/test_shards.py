import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline

from corpusforge.core import rundir
from corpusforge.core.files import read_json, write_json
from corpusforge.core.shard_files import ShardFormat, open_shard
from corpusforge.pipeline.document import DOCUMENT_SCHEMA, Document, document_row
from corpusforge.pipeline.shards import WriteShards, finalize_shards, stable_hash

FORMATS = [ShardFormat("arrow"), ShardFormat("parquet"), ShardFormat("jsonl"), ShardFormat("jsonl", "gzip"),
           ShardFormat("jsonl", "none")]


def _write(tmp_path, name, docs, target, fmt):
    for scratch in (f"tmp-{name}", name):  # the build's working directories are recorded as its own
        rundir.make_scratch(str(tmp_path), scratch)
    with TestPipeline() as p:
        out = p | beam.Create(docs) | WriteShards(str(tmp_path / f"tmp-{name}"), DOCUMENT_SCHEMA, document_row,
                                                  lambda d: d.id, lambda d: d.id, lambda d: len(d.text), target, fmt=fmt)
        out | beam.combiners.ToList() | beam.Map(lambda xs: write_json(str(tmp_path / f"{name}.json"), xs))
    shards = read_json(str(tmp_path / f"{name}.json"))
    return finalize_shards(shards, str(tmp_path / name), DOCUMENT_SCHEMA, fmt)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.suffix)
def test_shards_are_sorted_sized_and_byte_identical_whatever_the_input_order(tmp_path, fmt):
    docs = [Document(f"d{i:03d}", "word " * (i % 7 + 1), "s", {"url": f"u{i}"}) for i in range(300)]
    first = _write(tmp_path, "one", docs, 2000, fmt)
    second = _write(tmp_path, "two", list(reversed(docs)), 2000, fmt)
    assert len(first) > 1 and [e["file"] for e in first] == [e["file"] for e in second]
    assert first[0]["file"] == f"part-00000-of-{len(first):05d}{fmt.suffix}"
    rows = []
    for entry in first:
        path = tmp_path / "one" / entry["file"]
        assert path.read_bytes() == (tmp_path / "two" / entry["file"]).read_bytes()
        assert entry["bytes"] == path.stat().st_size
        table = open_shard(str(path), DOCUMENT_SCHEMA).read_all()
        assert table.num_rows == entry["rows"]
        shard_ids = table.column("id").to_pylist()
        assert shard_ids == sorted(shard_ids)
        rows += table.to_pylist()
    assert sorted(rows, key=lambda r: r["id"]) == [document_row(d) for d in docs]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.suffix)
def test_empty_input_still_gives_one_readable_shard(tmp_path, fmt):
    entries = finalize_shards([], str(tmp_path / "empty"), DOCUMENT_SCHEMA, fmt)
    assert entries[0]["file"] == f"part-00000-of-00001{fmt.suffix}" and entries[0]["rows"] == 0
    reader = open_shard(str(tmp_path / "empty" / entries[0]["file"]), DOCUMENT_SCHEMA)
    assert reader.read_all().num_rows == 0 and reader.num_rows == 0


def test_stable_hash_is_pinned():
    # Shard assignment depends on this value: a change would move documents between shards across versions.
    assert stable_hash("abc") == 0xd8bb14d833d59559
    assert stable_hash("abc") != stable_hash("abd")


SMALL = ("rejected",)


def _row_with_pid(record: str) -> dict:
    import os

    return {"id": record, "pid": os.getpid()}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("on_disk", [True, False])
def test_sets_of_shards_are_written_side_by_side_on_two_worker_processes(tmp_path, on_disk):
    """WriteShardSets groups every set's shards in one step, with shuffles on local disk and with Beam's own,
    which Beam's multi-process runner splits between its workers by key: the clean and the removed shard of a
    small build (one each) are written at the same time, one on each worker, where each set's own step wrote its
    one shard on one worker while the other waited (with Beam's shuffle until the Flatten of the sets no longer
    cost a crossing: ``corpusforge.core.flattens.into_groupings``). A small set (a build's rejected records) has
    its own step with Beam's shuffle: its shard, dealt between the other two, put them on one worker."""
    import pyarrow as pa
    from apache_beam.options.pipeline_options import PipelineOptions

    from corpusforge.core.direct_runner import DirectRunner, run_pipeline
    from corpusforge.core.disk_grouping import spilling_to
    from corpusforge.pipeline.shards import WriteShardSets

    schema = pa.schema([("id", pa.string()), ("pid", pa.int64())])
    writers = {name: WriteShards(str(tmp_path / name), schema, _row_with_pid, lambda r: r, lambda r: r, len, 10_000)
               for name in ("rejected", "docs", "removed")}  # the build's order
    for name in writers:
        rundir.make_scratch(str(tmp_path), name)
    options = PipelineOptions(["--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    pipeline = beam.Pipeline(runner=DirectRunner(), options=options)
    sizes = {"rejected": 3, "docs": 50, "removed": 50}
    sets = {name: pipeline | f"Create{name}" >> beam.Create([f"{name}-{i:03d}" for i in range(sizes[name])])
            for name in writers}
    # on_disk: shuffles on local disk, as a build's past output.disk_shuffle_mb; or Beam's in-memory shuffle
    with spilling_to(str(tmp_path / "spill") if on_disk else None):
        written = sets | WriteShardSets(writers, small=SMALL)
    for name, infos in written.items():
        _ = (infos | f"List{name}" >> beam.combiners.ToList()
             | f"Save{name}" >> beam.Map(lambda xs, path: write_json(path, xs), str(tmp_path / f"{name}.json")))
    run_pipeline(pipeline).wait_until_finish()
    pids = {}
    for name in writers:
        (shard,) = read_json(str(tmp_path / f"{name}.json"))
        table = open_shard(shard["path"], schema).read_all()
        assert table.column("id").to_pylist() == [f"{name}-{i:03d}" for i in range(sizes[name])]
        pids[name] = set(table.column("pid").to_pylist())
    assert len(pids["docs"]) == len(pids["removed"]) == 1 and pids["docs"] != pids["removed"]
