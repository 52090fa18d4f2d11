"""Shards: deterministic, size-targeted, atomically placed, in the run's output format.

``WriteShards`` assigns each record to a shard by a stable hash of its key (the number of shards comes
from the total size and the target size), sorts each shard by key and writes it (Arrow IPC stream, Parquet or
JSON Lines: ``corpusforge.core.shard_files``) into a temporary directory. ``WriteShardSets`` writes several sets
of records (a build's clean, removed and rejected ones) so, their shards grouped and written in one step. ``finalize_shards`` then
names them ``part-00000-of-0000N.<suffix>`` in order and moves them into place. The bytes depend only on the
records and the configuration, never on the runner, the number of workers or the order records arrived in.

Memory: one worker holds one shard's records while sorting and writing it (about ``target_bytes``).
"""
from __future__ import annotations

import hashlib
import math
import posixpath
from typing import Any, Callable, Iterable, Iterator

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows

from corpusforge.core.disk_grouping import CoGroupByKey, GroupByKey, Reshuffle, spill_directory
from corpusforge.core import rundir
from corpusforge.core.progress import Reporter
from corpusforge.core.shard_files import ShardFormat, open_shard, shard_files, write_shard
from corpusforge.pipeline.document import Document
from corpusforge.pipeline.document_coder import Documents


def stable_hash(key: str) -> int:
    """A hash that is the same in every process and on every machine (unlike ``hash()``)."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big")


def write_arrow_file(path: str, schema: pa.Schema, rows: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """Write ``rows`` as an Arrow shard (IPC stream) at ``path`` (any Beam filesystem). Returns (rows, bytes)."""
    return write_shard(path, schema, rows, ShardFormat("arrow"))


# Records cross the steps between their producer and the shard they go to in lists of up to this many: one
# Beam element (coding, framing, dispatch) per list, not per record. Lists of documents are ``Documents``,
# coded as columns (``corpusforge.pipeline.document_coder``).
RECORD_BATCH = 256
SIZES = "sizes"


class _HoldRecords(beam.DoFn):
    """Records -> lists of them (``RECORD_BATCH`` at most, the rest when the bundle ends), and, tagged
    ``SIZES``, the sum of ``size_of`` over the bundle's records: what ``CombineGlobally(sum)`` of a size per
    record totalled, with one element per bundle."""

    def __init__(self, size_of: Callable[[Any], int]):
        self.size_of = size_of

    def start_bundle(self):
        self.records: list = []
        self.size, self.seen = 0, False

    def process(self, record):
        self.size += self.size_of(record)
        self.seen = True
        self.records.append(record)
        if len(self.records) >= RECORD_BATCH:
            batch, self.records = self.records, []
            yield _batch(batch)

    def finish_bundle(self):
        if self.records:
            yield GlobalWindows.windowed_value(_batch(self.records))
        if self.seen:
            yield beam.pvalue.TaggedOutput(SIZES, GlobalWindows.windowed_value(self.size))
        self.records, self.size, self.seen = [], 0, False


def _batch(records: list) -> list:
    """A list of documents as ``Documents`` (coded as columns); any other list as it is."""
    return Documents(records) if type(records[0]) is Document else records


def _by_shard(records: list, n: int, shard_key: Callable[[Any], str], name: str):
    """A list of records -> ``((name, shard), [its records])`` for each of the ``n`` shards they go to
    (``stable_hash`` of the key); the lists are of the type of ``records`` (``Documents`` stay ``Documents``)."""
    shards: dict[int, list] = {}
    kind = type(records)
    for record in records:
        part = shards.get(index := stable_hash(shard_key(record)) % n)
        if part is None:
            part = shards[index] = kind()
        part.append(record)
    return [((name, index), part) for index, part in shards.items()]


class _WriteShard(beam.DoFn):
    """``(shard, [lists of its records])`` -> the shard written, its records sorted by ``sort_key``."""

    def __init__(self, tmp_dir, schema, to_row, sort_key, progress=None, fmt=ShardFormat()):
        self.tmp_dir, self.schema, self.to_row, self.sort_key = tmp_dir, schema, to_row, sort_key
        self.progress, self.fmt = progress, fmt

    def setup(self):
        self.reporter = Reporter(self.progress)

    def finish_bundle(self):
        self.reporter.flush()

    def _rows(self, records):
        for record in records:
            self.reporter.add(rows_written=1)
            yield self.to_row(record)

    def process(self, element):
        index, parts = element
        records = sorted((record for part in parts for record in part), key=self.sort_key)
        path = posixpath.join(self.tmp_dir, f"shard-{index:06d}{self.fmt.suffix}")
        rows, size = write_shard(path, self.schema, self._rows(records), self.fmt)
        yield {"index": index, "path": path, "rows": rows, "bytes": size}


class _WriteShardSets(beam.DoFn):
    """``((name, shard), {name: [lists of its records], other names: []})`` (or ``((name, shard), [lists])``) -> the
    shard written by ``writers[name]``, tagged ``name``."""

    def __init__(self, writers: dict[str, _WriteShard]):
        self.writers = writers

    def setup(self):
        for writer in self.writers.values():
            writer.setup()

    def finish_bundle(self):
        for writer in self.writers.values():
            writer.finish_bundle()

    def process(self, element):
        (name, index), grouped = element
        parts = grouped[name] if isinstance(grouped, dict) else grouped  # a CoGroupByKey's, or one set's GroupByKey's
        for written in self.writers[name].process((index, parts)):
            yield beam.pvalue.TaggedOutput(name, written)


class WriteShards(beam.PTransform):
    """Write records as sorted shards of about ``target_bytes`` each into ``tmp_dir``, in ``fmt``.

    Output: one small dict per shard written (``index, path, rows, bytes``) for ``finalize_shards``.
    ``sort_key`` must give a total order (ties make the bytes depend on arrival order). ``progress``: a local
    directory where the rows written are counted for ``corpusforge.core.progress``, or None.
    Records travel in lists (``RECORD_BATCH``) to the shard they go to: the order they arrive in never
    shows, since each shard is sorted.
    """

    def __init__(self, tmp_dir: str, schema: pa.Schema, to_row: Callable[[Any], dict], shard_key: Callable[[Any], str],
                 sort_key: Callable[[Any], Any], size_of: Callable[[Any], int], target_bytes: int,
                 progress: str | None = None, fmt: ShardFormat = ShardFormat()):
        super().__init__()
        self.progress, self.fmt = progress, fmt
        self.tmp_dir, self.schema, self.to_row = tmp_dir, schema, to_row
        self.shard_key, self.sort_key, self.size_of, self.target_bytes = shard_key, sort_key, size_of, target_bytes

    def expand(self, records):
        return ({"shards": records} | WriteShardSets({"shards": self}))["shards"]

    def writer(self) -> _WriteShard:
        return _WriteShard(self.tmp_dir, self.schema, self.to_row, self.sort_key, self.progress, self.fmt)

    def by_shard(self, records, name: str):
        """``records`` -> ``((name, shard), [its records])`` lists, ready to group by shard."""
        target = self.target_bytes
        held = records | "Sizes" >> beam.ParDo(_HoldRecords(self.size_of)).with_outputs(SIZES, main="lists")
        # Without Beam's default for an empty input (~4 more steps set up and run by every build): with no
        # records there is nothing to assign a shard to, so the side input's default is never read.
        num_shards = (
            held[SIZES]
            | "TotalSize" >> beam.CombineGlobally(sum).without_defaults()
            | "NumShards" >> beam.Map(lambda total: max(1, math.ceil(total / target)))
        )
        lists = held.lists
        if spill_directory() is not None:
            # AssignShard waits for the total size (a side input): on a runner that shuffles in memory, the lists
            # wait on disk meanwhile (Reshuffle in disk_grouping), or every record would be held until then
            lists = lists | "WaitOnDisk" >> Reshuffle()
        return lists | "AssignShard" >> beam.FlatMap(_by_shard, n=beam.pvalue.AsSingleton(num_shards, default_value=1),
                                                     shard_key=self.shard_key, name=name)


class WriteShardSets(beam.PTransform):
    """Several ``WriteShards`` at once: ``{name: records}`` -> ``{name: one dict per shard written}``, each set of
    records written by ``writers[name]`` as if on its own (the same files), their shards grouped and written in one
    step. A runner that splits a step's groups between its workers (Beam's multi-process DirectRunner) then
    writes the clean and the removed shard at the same time, one on each worker, where two steps each wrote
    theirs on one worker while the other waited (at 60k documents ~1 s of each set's, on one worker alone). Sets
    named ``small`` get a step each (see ``__init__``).

    With Beam's shuffle the sets' keyed lists are flattened into one GroupByKey: on our DirectRunner each set's
    step writes its lists straight into the grouping (``corpusforge.core.flattens.into_groupings``), so no record
    crosses one more buffer; on local disk (``corpusforge.core.disk_grouping``) a CoGroupByKey on (name, shard):
    each set writes its runs in the step that made it and only their references meet."""

    def __init__(self, writers: dict[str, WriteShards], small: tuple[str, ...] = ()):
        """``small``: sets expected to be small (a build's rejected records), each written in a step of its own:
        Beam's multi-process runner deals a step's groups (with shuffles on disk: its partitions) to its workers
        in the order they arrive, so a small set's shard arriving between the clean and the removed one would
        put those two on the same worker."""
        super().__init__()
        self.writers, self.small = writers, small

    def expand(self, sets):
        names = list(self.writers)
        keyed = {name: sets[name] | f"Assign{name.title()}" >> _Assigned(self.writers[name], name) for name in names}
        written = {}
        steps = [[name for name in names if name not in self.small]] + [[name] for name in names if name in self.small]
        for step in (step for step in steps if step):
            label = "" if step == steps[0] else step[0].title()
            if spill_directory() is None:
                if len(step) == 1:
                    lists = keyed[step[0]]
                else:
                    # in memory: this build keeps Beam's shuffles (no spill directory); into_groupings feeds the grouping directly
                    lists = [keyed[name] for name in step] | f"FlattenShardSets{label}" >> beam.Flatten()
                grouped = lists | f"GroupByShard{label}" >> GroupByKey()
            else:
                grouped = {name: keyed[name] for name in step} | f"GroupByShard{label}" >> CoGroupByKey()
            written.update(self._write(grouped, step, label))
        return {name: written[name] for name in names}

    def _write(self, grouped, names: list[str], label: str) -> dict:
        written = grouped | f"WriteShard{label}" >> beam.ParDo(
            _WriteShardSets({name: self.writers[name].writer() for name in names})).with_outputs(*names)
        return {name: written[name] for name in names}


class _Assigned(beam.PTransform):
    def __init__(self, writer: WriteShards, name: str):
        super().__init__()
        self.writer, self.name = writer, name

    def expand(self, records):
        return self.writer.by_shard(records, self.name)


def shard_name(number: int, count: int, fmt: ShardFormat) -> str:
    return f"part-{number:05d}-of-{count:05d}{fmt.suffix}"


def finalize_shards(shards: list[dict[str, Any]], dest_dir: str, schema: pa.Schema,
                    fmt: ShardFormat = ShardFormat()) -> list[dict[str, Any]]:
    """Rename written shards to ``part-XXXXX-of-YYYYY.<suffix>`` in ``dest_dir`` in shard order.

    Writes an empty shard when nothing was written, so readers always find at least one file with the
    schema. Returns the manifest entries.
    """
    FileSystems.mkdirs(dest_dir) if not FileSystems.exists(dest_dir) else None
    shards = sorted(shards, key=lambda s: s["index"])
    if not shards:
        empty = posixpath.join(dest_dir, shard_name(0, 1, fmt))
        rows, size = write_shard(empty, schema, [], fmt)
        return [{"file": posixpath.basename(empty), "rows": rows, "bytes": size}]
    entries = []
    for number, shard in enumerate(shards):
        name = shard_name(number, len(shards), fmt)
        rundir.move(shard["path"], posixpath.join(dest_dir, name))
        entries.append({"file": name, "rows": shard["rows"], "bytes": shard["bytes"]})
    return entries


def shard_paths(directory: str) -> list[str]:
    """The shard files of a shard directory (any format), in order."""
    return [path for path, _ in shard_files(directory)]


def iter_rows_of(path: str, columns: list[str] | None = None, schema: pa.Schema | None = None
                 ) -> Iterator[dict[str, Any]]:
    """Stream the rows of one shard, batch by batch (ordinary reads, one batch in memory). ``schema``: the column types
    of a JSON Lines shard."""
    for batch in open_shard(path, schema).batches(columns):
        yield from batch.to_pylist()
