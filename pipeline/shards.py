"""Arrow IPC shards: deterministic, size-targeted, atomically placed.

``WriteShards`` assigns each record to a shard by a stable hash of its key (the number of shards comes
from the total size and the target size), sorts each shard by key and writes it as an Arrow IPC file into
a temporary directory. ``finalize_shards`` then names them ``part-00000-of-0000N.arrow`` in order and moves
them into place. The bytes depend only on the records and the configuration, never on the runner, the
number of workers or the order records arrived in.

Memory: one worker holds one shard's records while sorting and writing it (about ``target_bytes``).
"""
from __future__ import annotations

import hashlib
import json
import math
import posixpath
from typing import Any, Callable, Iterable, Iterator

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from corpusforge.pipeline.core.progress import Reporter

ROWS_PER_BATCH = 1024


def stable_hash(key: str) -> int:
    """A hash that is the same in every process and on every machine (unlike ``hash()``)."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big")


def write_arrow_file(path: str, schema: pa.Schema, rows: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """Write ``rows`` to an Arrow IPC file at ``path`` (any Beam filesystem). Returns (rows, bytes)."""
    count = 0
    with FileSystems.create(path) as raw:
        sink = pa.PythonFile(raw, mode="w")
        with pa.ipc.new_file(sink, schema) as writer:
            batch: list[dict[str, Any]] = []
            for row in rows:
                batch.append(row)
                if len(batch) == ROWS_PER_BATCH:
                    writer.write_batch(pa.RecordBatch.from_pylist(batch, schema=schema))
                    count += len(batch)
                    batch = []
            if batch or count == 0:
                writer.write_batch(pa.RecordBatch.from_pylist(batch, schema=schema))
                count += len(batch)
    size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    return count, size


class _WriteShard(beam.DoFn):
    def __init__(self, tmp_dir, schema, to_row, sort_key, progress=None):
        self.tmp_dir, self.schema, self.to_row, self.sort_key = tmp_dir, schema, to_row, sort_key
        self.progress = progress

    def setup(self):
        self.reporter = Reporter(self.progress)

    def finish_bundle(self):
        self.reporter.flush()

    def _rows(self, records):
        for record in records:
            self.reporter.add(rows_written=1)
            yield self.to_row(record)

    def process(self, element):
        index, records = element
        records = sorted(records, key=self.sort_key)
        path = posixpath.join(self.tmp_dir, f"shard-{index:06d}.arrow")
        rows, size = write_arrow_file(path, self.schema, self._rows(records))
        yield {"index": index, "path": path, "rows": rows, "bytes": size}


class WriteShards(beam.PTransform):
    """Write records as sorted Arrow IPC shards of about ``target_bytes`` each into ``tmp_dir``.

    Output: one small dict per shard written (``index, path, rows, bytes``) for ``finalize_shards``.
    ``sort_key`` must give a total order (ties make the bytes depend on arrival order). ``progress``: a local
    directory where the rows written are counted for ``corpusforge.pipeline.core.progress``, or None.
    """

    def __init__(self, tmp_dir: str, schema: pa.Schema, to_row: Callable[[Any], dict], shard_key: Callable[[Any], str],
                 sort_key: Callable[[Any], Any], size_of: Callable[[Any], int], target_bytes: int,
                 progress: str | None = None):
        super().__init__()
        self.progress = progress
        self.tmp_dir, self.schema, self.to_row = tmp_dir, schema, to_row
        self.shard_key, self.sort_key, self.size_of, self.target_bytes = shard_key, sort_key, size_of, target_bytes

    def expand(self, records):
        target = self.target_bytes
        num_shards = (
            records
            | "Sizes" >> beam.Map(self.size_of)
            | "TotalSize" >> beam.CombineGlobally(sum)
            | "NumShards" >> beam.Map(lambda total: max(1, math.ceil(total / target)))
        )
        shard_key = self.shard_key
        return (
            records
            | "AssignShard" >> beam.Map(lambda r, n: (stable_hash(shard_key(r)) % n, r), n=beam.pvalue.AsSingleton(num_shards))
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShard" >> beam.ParDo(_WriteShard(self.tmp_dir, self.schema, self.to_row, self.sort_key, self.progress))
        )


def finalize_shards(shards: list[dict[str, Any]], dest_dir: str, schema: pa.Schema) -> list[dict[str, Any]]:
    """Rename written shards to ``part-XXXXX-of-YYYYY.arrow`` in ``dest_dir`` in shard order.

    Writes an empty shard when nothing was written, so readers always find at least one file with the
    schema. Returns the manifest entries.
    """
    FileSystems.mkdirs(dest_dir) if not FileSystems.exists(dest_dir) else None
    shards = sorted(shards, key=lambda s: s["index"])
    if not shards:
        empty = posixpath.join(dest_dir, "part-00000-of-00001.arrow")
        rows, size = write_arrow_file(empty, schema, [])
        return [{"file": posixpath.basename(empty), "rows": rows, "bytes": size}]
    entries = []
    for number, shard in enumerate(shards):
        name = f"part-{number:05d}-of-{len(shards):05d}.arrow"
        FileSystems.rename([shard["path"]], [posixpath.join(dest_dir, name)])
        entries.append({"file": name, "rows": shard["rows"], "bytes": shard["bytes"]})
    return entries


def shard_paths(directory: str) -> list[str]:
    """The ``part-*.arrow`` files of a shard directory, in order."""
    result = FileSystems.match([posixpath.join(directory, "part-*.arrow")])[0]
    return sorted(m.path for m in result.metadata_list)


def iter_rows_of(path: str, columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Stream the rows of one shard, batch by batch (memory-mapped when local)."""
    source = pa.memory_map(path) if "://" not in path else pa.BufferReader(FileSystems.open(path).read())
    reader = pa.ipc.open_file(source)
    for i in range(reader.num_record_batches):
        batch = reader.get_batch(i)
        if columns:
            batch = batch.select(columns)
        yield from batch.to_pylist()
