"""Shuffles on local disk (corpusforge.core.disk_grouping) group exactly as Beam's, and Beam never holds the records."""
from __future__ import annotations

import os
import pickle
import random

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.core import disk_grouping
from corpusforge.core.disk_grouping import CoGroupByKey, Distinct, GroupByKey, Reshuffle, spill_directory, spilling_to


def _records(seed: int, n: int = 3000) -> list:
    rng = random.Random(seed)
    keys = [rng.randrange(50), f"k{rng.randrange(40)}", (rng.randrange(5), "t"), b"\x00\xff", -7, None]
    return [(rng.choice(keys), (i, "é" * rng.randrange(4), [i] * rng.randrange(3))) for i in range(n)]


def _save(items, path):
    with open(path, "wb") as f:
        pickle.dump(items, f)


def _load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def _grouped(records, directory, out_path):
    """What GroupByKey gives for ``records``, with values sorted (no order is promised), on disk in
    ``directory`` (None: Beam's)."""
    with spilling_to(directory):
        with beam.Pipeline() as p:
            _ = (p | beam.Create(records) | GroupByKey()
                 | beam.MapTuple(lambda k, vs: (k, sorted(vs))) | beam.combiners.ToList()
                 | beam.Map(_save, str(out_path)))
    return sorted(_load(out_path), key=repr)


@pytest.mark.parametrize("seed", [0, 1])
def test_groups_exactly_as_beams_group_by_key(tmp_path, seed, monkeypatch):
    monkeypatch.setattr(disk_grouping, "RUN_BYTES", 4096)  # many runs per bundle
    records = _records(seed)
    expected = _grouped(records, None, tmp_path / "beam.pkl")
    assert len(expected) == 6 and sum(len(values) for _, values in expected) == len(records)
    assert _grouped(records, str(tmp_path / "runs"), tmp_path / "disk.pkl") == expected
    runs = os.listdir(tmp_path / "runs")
    assert len(runs) > 10  # the records went to disk, in runs of RUN_BYTES
    assert all(os.stat(tmp_path / "runs" / run).st_mode & 0o077 == 0 for run in runs)  # owner-only


def test_beam_shuffles_references_not_records(tmp_path):
    """What Beam's own GroupByKey receives is one reference per partition and run, whatever the records."""
    log = tmp_path / "references.log"

    class _Spy(disk_grouping._GroupRuns):  # noqa: SLF001 - counts what crossed Beam's shuffle
        def process(self, element):
            with open(log, "a") as f:
                f.write(f"{len(element[1])}\n")
            yield from super().process(element)

    records = [(i, "x" * 100) for i in range(20000)]
    original = disk_grouping._GroupRuns
    disk_grouping._GroupRuns = _Spy
    try:
        got = _grouped(records, str(tmp_path / "runs"), tmp_path / "out.pkl")
    finally:
        disk_grouping._GroupRuns = original
    assert got == [(i, ["x" * 100]) for i in sorted(range(20000), key=repr)]
    seen = [int(line) for line in log.read_text().split()]
    assert 100 < len(seen) <= disk_grouping.PARTITIONS and sum(seen) == len(seen)  # one run: one reference each


def test_cogroup_and_reshuffle_match_beams(tmp_path):
    def run(directory):
        out_co, out_re = tmp_path / f"co{directory is None}.pkl", tmp_path / f"re{directory is None}.pkl"
        with spilling_to(directory):
            with beam.Pipeline() as p:
                a = p | "A" >> beam.Create([(i % 5, i) for i in range(100)])
                b = p | "B" >> beam.Create([(i % 3, str(i)) for i in range(10)])
                empty = p | "E" >> beam.Create([]).with_output_types(tuple)
                _ = ({"a": a, "b": b, "e": empty} | CoGroupByKey()
                     | beam.MapTuple(lambda k, d: (k, {t: sorted(v) for t, v in d.items()}))
                     | "L1" >> beam.combiners.ToList() | "S1" >> beam.Map(_save, str(out_co)))
                _ = (p | "R" >> beam.Create(list(range(500))) | Reshuffle() | "L2" >> beam.combiners.ToList()
                     | "S2" >> beam.Map(_save, str(out_re)))
                _ = (p | "D" >> beam.Create([(i % 7, "x") for i in range(300)]) | Distinct()
                     | "L3" >> beam.combiners.ToList() | "S3" >> beam.Map(_save, str(out_re) + ".distinct"))
        return sorted(_load(out_co)), sorted(_load(out_re)), sorted(_load(str(out_re) + ".distinct"))

    beams = run(None)
    assert run(str(tmp_path / "runs")) == beams
    assert beams[2] == [(i, "x") for i in range(7)]
    assert beams[1] == list(range(500)) and len(beams[0]) == 5 and beams[0][0] == (0, {
        "a": [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95], "b": ["0", "3", "6", "9"],
        "e": []})


def test_listed_inputs_group_as_their_records_one_by_one(tmp_path):
    """``listed``: a producer's records as lists, one element each, group exactly as the records one by one, on
    disk (written without a Beam step per record) and off it (unlisted first); a list may be empty."""
    records = _records(2, 600)
    lists = [records[i:i + 37] for i in range(0, len(records), 37)] + [[]]
    b = [(i % 3, str(i)) for i in range(10)]

    def run(directory, listed):
        out = tmp_path / f"{directory is None}{listed}.pkl"
        with spilling_to(directory):
            with beam.Pipeline() as p:
                a = p | "A" >> beam.Create(lists if listed else records)
                bb = p | "B" >> beam.Create([b] if listed else b)
                grouped = (a | "G" >> GroupByKey(listed=listed)
                           | "SG" >> beam.MapTuple(lambda k, vs: ("g", k, sorted(vs, key=repr))))
                co = ({"a": a, "b": bb} | "C" >> CoGroupByKey(listed=("a", "b") if listed else ())
                      | "SC" >> beam.MapTuple(lambda k, d: ("c", k, {t: sorted(v, key=repr) for t, v in d.items()})))
                keys = p | "K" >> beam.Create([[k for k, _ in records]] if listed else [k for k, _ in records])
                distinct = keys | "D" >> Distinct(listed=listed) | "SD" >> beam.Map(lambda k: ("d", k))
                _ = ((grouped, co, distinct) | beam.Flatten() | beam.combiners.ToList() | beam.Map(_save, str(out)))
        return sorted(_load(out), key=repr)

    expected = run(None, False)
    assert len([row for row in expected if row[0] == "d"]) == 6
    for directory in (None, str(tmp_path / "runs")):
        assert run(directory, True) == expected
    assert run(str(tmp_path / "runs2"), False) == expected


def _labels(directory) -> list[str]:
    with spilling_to(directory):
        p = beam.Pipeline()
        _ = p | beam.Create([(1, 2)]) | GroupByKey()
    return [t.unique_name for t in p.to_runner_api().components.transforms.values()]


def test_outside_spilling_to_it_is_beams_own_transform(tmp_path):
    assert spill_directory() is None
    assert not any("WriteRuns" in label for label in _labels(None))
    assert any("WriteRuns" in label for label in _labels(str(tmp_path)))



def test_a_retried_bundle_reads_no_run_of_its_failed_attempt(tmp_path, monkeypatch):
    """The BundleBasedDirectRunner retries a failed bundle: the failed attempt of the step that writes runs had
    already written some (and emitted their references), but only the references of the attempt that succeeded
    are shuffled, so no value comes back twice."""
    monkeypatch.setattr(disk_grouping, "RUN_BYTES", 4096)
    flag = tmp_path / "failed-once"
    write = disk_grouping._WriteRuns.process

    def fails_once(self, record):
        if record[1][0] == 2500 and not flag.exists():
            assert os.listdir(self.directory)  # runs of this attempt are on disk
            flag.touch()
            raise RuntimeError("the first attempt of the bundle fails after some runs were written")
        yield from write(self, record)

    records = _records(3)
    expected = _grouped(records, None, tmp_path / "beam.pkl")
    monkeypatch.setattr(disk_grouping._WriteRuns, "process", fails_once)
    out = tmp_path / "disk.pkl"
    with spilling_to(str(tmp_path / "runs")):
        with beam.Pipeline(runner="BundleBasedDirectRunner") as p:
            _ = (p | beam.Create(records, reshuffle=False) | GroupByKey()
                 | beam.MapTuple(lambda k, vs: (k, sorted(vs))) | beam.combiners.ToList()
                 | beam.Map(_save, str(out)))
    assert flag.exists()  # the first attempt did fail
    assert sorted(_load(out), key=repr) == expected


def test_what_a_bundle_buffers_before_writing_a_run_is_bounded_by_run_bytes(tmp_path, monkeypatch):
    """RUN_BYTES bounds the memory of a run-writing step's buffers, not only the bytes of its records: small
    records (a key and nothing else: Distinct, exact keys) cost a bytes object and a list slot each, several
    times their encoding."""
    import sys

    from apache_beam import coders

    monkeypatch.setattr(disk_grouping, "RUN_BYTES", 64 * 1024)
    write = disk_grouping._WriteRuns(str(tmp_path / "runs"), coders.VarIntCoder(), coders.FastPrimitivesCoder(),
                                     disk_grouping.PARTITIONS)
    write.setup()
    write.start_bundle()
    most, runs = 0, 0
    for i in range(50_000):
        runs += len(list(write.process((i, None))))
        if i % 100 == 0:
            most = max(most, sum(sys.getsizeof(data) + 8 for buffer in write.buffers.values() for data in buffer))
    assert runs and most <= disk_grouping.RUN_BYTES, (most, disk_grouping.RUN_BYTES)


def test_a_listed_elements_records_are_flushed_by_run_bytes_as_they_are_buffered(tmp_path, monkeypatch):
    """A listed input's element may hold many records (a band shard's candidate pairs): RUN_BYTES bounds the
    buffers within the element too, not only between elements."""
    from apache_beam import coders

    monkeypatch.setattr(disk_grouping, "RUN_BYTES", 64 * 1024)
    write = disk_grouping._WriteRuns(str(tmp_path / "runs"), coders.VarIntCoder(), coders.FastPrimitivesCoder(),
                                     disk_grouping.PARTITIONS, listed=True)
    write.setup()
    write.start_bundle()
    most = [0]
    write_run = write._write_run

    def watched():
        most[0] = max(most[0], write.buffered)
        return write_run()

    monkeypatch.setattr(write, "_write_run", watched)
    runs = list(write.process([(i, "x" * 20) for i in range(50_000)]))
    assert len({reference[1][0] for reference in runs}) > 10  # many run files from one element
    assert most[0] <= disk_grouping.RUN_BYTES + 1024, most


def test_the_partition_hash_spreads_a_shuffles_keys_over_the_partitions():
    """Keys as shuffles code them (counters, digests, pairs of digests, ids): as many partitions reached and as
    few records in the fullest as a random assignment gives (a cheaper hash must pass it: docs/scale.md, "A
    record's cost on disk")."""
    from apache_beam import coders

    keys = coders.FastPrimitivesCoder().as_deterministic_coder("test").get_impl()
    rng = random.Random(5)
    for drawn in ([i for i in range(256 * 40)], [rng.getrandbits(64) for _ in range(256 * 40)],
                  [(rng.getrandbits(63), rng.getrandbits(63)) for _ in range(256 * 40)],
                  [f"part-{i % 8}/d{i:08d}" for i in range(256 * 40)]):
        for partitions in (disk_grouping.PARTITIONS, 2000):
            counts = [0] * partitions
            for key in drawn:
                counts[disk_grouping._partition_of(keys.encode(key), partitions)] += 1
            expected = len(drawn) / partitions
            assert sum(1 for count in counts if count) >= min(partitions, len(drawn)) * 0.99
            assert max(counts) <= expected + 6 * expected ** 0.5 + 3, (max(counts), expected)


def test_partitions_grow_with_the_input_so_one_partition_does_not():
    assert disk_grouping.partitions_for(0) == disk_grouping.PARTITIONS
    assert disk_grouping.partitions_for(800_000_000) == disk_grouping.PARTITIONS  # ~1M web-like documents
    assert disk_grouping.partitions_for(8_000_000_000) == 2000  # ~10M: a partition holds as much as at 1M
    assert disk_grouping.partitions_for(10**15) == disk_grouping.MAX_PARTITIONS


def test_more_partitions_group_the_same(tmp_path):
    records = _records(7)
    expected = _grouped(records, None, tmp_path / "beam.pkl")
    with spilling_to(str(tmp_path / "runs"), partitions=4096):
        with beam.Pipeline() as p:
            _ = (p | beam.Create(records) | GroupByKey()
                 | beam.MapTuple(lambda k, vs: (k, sorted(vs))) | beam.combiners.ToList()
                 | beam.Map(_save, str(tmp_path / "many.pkl")))
    assert sorted(_load(tmp_path / "many.pkl"), key=repr) == expected


def test_a_reshuffle_on_disk_gives_every_partition_its_share(tmp_path):
    """Round-robin keys are the partitions themselves: hashed again, 0..255 reached ~2/3 of 256 partitions and
    sent up to 5 keys' records to one (found by review)."""
    shares = tmp_path / "shares.log"

    class _Count(disk_grouping._GroupRuns):  # noqa: SLF001
        def process(self, element):
            groups = list(super().process(element))
            with open(shares, "a") as f:
                f.write(f"{element[0]} {sum(len(values) for _, values in groups)}\n")
            yield from groups

    original = disk_grouping._GroupRuns
    disk_grouping._GroupRuns = _Count
    try:
        with spilling_to(str(tmp_path / "runs")):
            with beam.Pipeline() as p:
                _ = p | beam.Create(list(range(256 * 20))) | Reshuffle() | beam.combiners.Count.Globally()
    finally:
        disk_grouping._GroupRuns = original
    counts = dict(map(int, line.split()) for line in shares.read_text().split("\n") if line)
    assert len(counts) == disk_grouping.PARTITIONS and set(counts.values()) == {20}


def _one_run(directory, records) -> tuple[list, int]:
    """``records`` written by one bundle of the run-writing step: its references, and the bytes of the records as
    coded (what a run held before it was compressed)."""
    from apache_beam import coders

    write = disk_grouping._WriteRuns(str(directory), coders.FastPrimitivesCoder(), coders.FastPrimitivesCoder(),
                                     disk_grouping.PARTITIONS)
    write.setup()
    write.start_bundle()
    for record in records:
        assert not list(write.process(record))
    coded = sum(len(data) for buffer in write.buffers.values() for data in buffer)
    return [reference.value for reference in write.finish_bundle()], coded


def _read(references) -> list:
    from apache_beam import coders

    read = disk_grouping._GroupRuns(coders.FastPrimitivesCoder(), coders.FastPrimitivesCoder())
    read.setup()
    by_partition: dict = {}
    for partition, reference in references:
        by_partition.setdefault(partition, []).append(reference)
    return [group for element in sorted(by_partition.items()) for group in read.process(element)]


def test_run_files_are_compressed(tmp_path):
    """What a shuffle leaves on disk: its records are ids, hashes and references that repeat themselves, so a
    run file holds far fewer bytes than the records as coded, and they read back the same."""
    records = [(f"part-{i % 7}/d{i:08d}", ("/tmp/run/spill/0123456789abcdef.txt", i * 2200, 2200, i % 3))
               for i in range(5000)]
    references, coded = _one_run(tmp_path / "runs", records)
    written = sum(os.path.getsize(tmp_path / "runs" / name) for name in os.listdir(tmp_path / "runs"))
    assert written < coded / 3, (written, coded)
    assert sorted(_read(references)) == sorted((key, [value]) for key, value in records)


@pytest.mark.parametrize("damage", ["truncated", "damaged"])
def test_a_truncated_or_damaged_run_file_is_one_line_saying_what_to_do(tmp_path, damage):
    """Not a traceback from a decoder, nor records decoded from garbage: the build stops with one line."""
    from corpusforge.core.errors import UserError

    references, _ = _one_run(tmp_path / "runs", [(i, "some text " * 20) for i in range(2000)])
    (path,) = {reference[1][0] for reference in references}
    data = bytearray(open(path, "rb").read())
    if damage == "truncated":
        data = data[:len(data) // 2]
    else:
        for partition, (_, offset, _, stored) in references:  # one byte in the middle of every block (a frame)
            data[offset + stored // 2] ^= 0x5A
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(UserError, match=f"shuffle file .* is {damage}.*: run the build again") as raised:
        _read(references)
    assert "\n" not in str(raised.value)


def test_a_reference_that_spans_more_than_its_block_is_refused(tmp_path):
    """A block is one zstd frame: a reference whose bytes hold a second frame (or any bytes after its frame) is
    refused, not read as its first frame's records alone (zstandard's decompress ignores what follows a frame)."""
    from corpusforge.core.errors import ScratchError

    references, _ = _one_run(tmp_path / "runs", [(i, "some text " * 20) for i in range(2000)])
    (_, (path, offset, length, stored)), (_, (_, next_offset, _, next_stored)) = sorted(references,
                                                                                         key=lambda r: r[1][1])[:2]
    assert next_offset == offset + stored
    with pytest.raises(ScratchError, match="is damaged at offset .*: run the build again"):
        _read([(0, (path, offset, length, stored + next_stored))])


def test_a_flipped_length_in_a_blocks_header_is_one_line_not_a_memory_error(tmp_path):
    """A block's zstd frame whose header asks for ~2 EB (one flipped bit): zstandard raised MemoryError before."""
    from corpusforge.core.errors import ScratchError

    references, _ = _one_run(tmp_path / "runs", [(i, "some text " * 20) for i in range(2000)])
    (path,) = {reference[1][0] for reference in references}
    data = bytearray(open(path, "rb").read())
    for _, (_, offset, *_) in references:
        data[offset + 4] ^= 0x80
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(ScratchError, match="^shuffle file .* is damaged at offset .*: run the build again"):
        _read(references)
