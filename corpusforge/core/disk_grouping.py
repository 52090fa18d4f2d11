"""Shuffles that wait on local disk, not in memory, on runners that shuffle in the driver's memory.

Beam's local runners (the in-process and multi-process DirectRunner, Dask on a LocalCluster) hold every
PCollection that crosses a ``GroupByKey`` in the driver's memory until the grouping step runs, so a build's peak
memory grew with the number of records it shuffled: ~2.5 KB per document for normalize + dedup (line,
sentence and band keys, verdicts, the documents' references), 2.95 GB at 1M documents, 7.97 GB at 3M.

``GroupByKey``, ``CoGroupByKey``, ``Reshuffle``, ``Flatten`` and ``Distinct`` here stand in for Beam's: while a
build constructs its pipeline inside ``spilling_to(directory, partitions)``, they keep the grouped records on
local disk instead:

    records -> (bundle) encoded, partitioned by a stable hash of the key (256 partitions, more for a larger
               input: ``partitions_for``), written as runs of up to ``RUN_BYTES`` to files in ``directory``
                                                                       -> (partition, (file, offset, ...))
            -> Beam's GroupByKey of those run references (a few per partition and bundle: tiny)
            -> per partition: its runs read back and grouped by key   -> (key, [values]) in key-byte order

So what Beam holds in memory is a few references per partition and run, and one worker holds one partition's
records at a time: with one partition per 4 MB of input, about as much whatever the corpus size. Outside
``spilling_to`` (remote runners, whose shuffle is their own disk-backed service, or a build that does not spill)
they are Beam's own transforms, unchanged.

Keys are grouped by their bytes under Beam's deterministic coder for the key type (the key coder a
``GroupByKey`` asks for), so the grouping is Beam's; values are coded with the pipeline's element coder
(``pipeline/document_coder.py`` for documents). Values come out of a group in no promised order, as from
Beam's ``GroupByKey``. Run files are owner-only (they may hold text from before the PII stage) and live in
the build's temporary work directory, which goes when the segment is done.

Each partition's block of a run is one zstd frame (level 1, with its checksum; ``zstandard``, a core dependency),
so a reference still reads one block and nothing else. The records are hashes, ids and references repeated
across records, which compress ~4x (8 KB blocks, the smallest a 10M-document build writes) at ~2 ms a MB
written and ~1 ms a MB read; pyarrow's zstd is the same format at twice the CPU through its Python API, and
lz4 saves less (3.2x) for little less CPU (``python bench/scratch_codecs.py``). A block is written and read
back by ``corpusforge.core.scratch_frames``: one that does not come back as it was written (its file gone,
truncated or changed) stops the build with one line that says to run it again (``ScratchError``).
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import sys
import uuid

import apache_beam as beam
from apache_beam import coders
from apache_beam.coders.coder_impl import create_InputStream, create_OutputStream
from apache_beam.transforms.window import GlobalWindows

from corpusforge.core import scratch_frames
from corpusforge.core.files import make_private_dir

# At least 256 partitions (``partitions_for``: more for a larger input, so a partition's size, what one grouping
# step holds, does not grow with the corpus); more would raise the number of references Beam shuffles for a
# small build (only partitions that received records send one).
PARTITIONS = 256
MAX_PARTITIONS = 65536
INPUT_BYTES_PER_PARTITION = 4_000_000  # of input as stored: ~5k web-like documents, ~1-3 MB of keys each shuffle
# What one bundle buffers before it writes a run: its memory, and the size of the writes.
RUN_BYTES = 32 * 1024 * 1024
# What a buffered record costs besides its encoding: its bytes object's header and its slot in a list (small
# records, a key and nothing else, cost several times their encoding).
_HELD_BYTES = sys.getsizeof(b"") + 8
# zstd's fastest positive level: levels 3-9 save 1-3 % more of these blocks at 1.2-2x the CPU
RUN_ZSTD_LEVEL = 1
_WHAT = "shuffle file"  # what its errors call a run file

_SPILL_DIR: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar("corpusforge_disk_grouping",
                                                                                     default=None)


def partitions_for(input_bytes: int) -> int:
    """How many partitions a build's shuffles use for ``input_bytes`` of input files: one per
    ``INPUT_BYTES_PER_PARTITION``, between ``PARTITIONS`` and ``MAX_PARTITIONS``."""
    return max(PARTITIONS, min(MAX_PARTITIONS, -(-input_bytes // INPUT_BYTES_PER_PARTITION)))


@contextlib.contextmanager
def spilling_to(directory: str | None, partitions: int = PARTITIONS):
    """While a pipeline is constructed inside it, this module's transforms group on local disk in
    ``directory`` (None: Beam's in-memory shuffle) into ``partitions`` partitions. One setting per build, not per
    transform: where a runner keeps its shuffles is the runner's business, not the stage's that groups."""
    token = _SPILL_DIR.set(None if directory is None else (directory, partitions))
    try:
        yield
    finally:
        _SPILL_DIR.reset(token)


def spill_directory() -> str | None:
    """Where the transforms constructed now group (``spilling_to``), or None for Beam's shuffle."""
    setting = _SPILL_DIR.get()
    return None if setting is None else setting[0]


def _partitions() -> int:
    setting = _SPILL_DIR.get()
    return PARTITIONS if setting is None else setting[1]


def _partition_of(key_bytes: bytes, partitions: int) -> int:
    # blake2b, not hash(): every worker process must send a key to the same partition
    return int.from_bytes(hashlib.blake2b(key_bytes, digest_size=4).digest(), "little") % partitions


class _WriteRuns(beam.DoFn):
    """``(key, value)`` records -> run files in ``directory``; at each run, ``(partition, reference)`` for every
    partition it holds (``scratch_frames``: ``(path, offset, length, stored length)``, its block's). Within a run,
    records are in partition order."""

    def __init__(self, directory: str, key_coder: coders.Coder, value_coder: coders.Coder, partitions: int,
                 spread: bool = False, tag: int | None = None, listed: bool = False, bare: bool = False):
        self.directory, self.key_coder, self.value_coder = directory, key_coder, value_coder
        # spread: the keys are the partitions themselves (a Reshuffle's or Flatten's round-robin counter), not
        # hashed again: a hash of 0..255 hits only ~2/3 of 256 partitions, some several times
        self.partitions, self.spread = partitions, spread
        # What this step does to each record, instead of a Beam step of its own before it (a Map's per-element
        # dispatch cost more than writing the record): ``listed``, an element is a list of records; ``bare``, a
        # record is a key alone, its value None (Distinct); ``tag``, a record's value goes as ``(tag, value)``
        # (CoGroupByKey's input ``tag``).
        self.tag, self.listed, self.bare = tag, listed, bare

    def setup(self):
        make_private_dir(self.directory)
        self.keys, self.values = self.key_coder.get_impl(), self.value_coder.get_impl()
        self.compress = scratch_frames.compressor(RUN_ZSTD_LEVEL)

    def start_bundle(self):
        self.buffers: dict[int, list[bytes]] = {}
        self.buffered = 0

    def process(self, element):
        encode_key, encode_value, buffers = self.keys.encode, self.values.encode_to_stream, self.buffers
        tag, bare, spread, partitions = self.tag, self.bare, self.spread, self.partitions
        for record in element if self.listed else (element,):
            if bare:
                key, value = record, None
            else:
                key, value = record
            if tag is not None:
                value = (tag, value)
            key_bytes = encode_key(key)
            stream = create_OutputStream()
            stream.write_var_int64(len(key_bytes))
            stream.write(key_bytes)
            encode_value(value, stream, True)
            data = stream.get()
            partition = key % partitions if spread else _partition_of(key_bytes, partitions)
            held = buffers.get(partition)
            if held is None:
                buffers[partition] = [data]
            else:
                held.append(data)
            self.buffered += len(data) + _HELD_BYTES
            if self.buffered >= RUN_BYTES:  # per record: a long list's records do not all wait in the buffers
                yield from self._write_run()
                buffers = self.buffers

    def finish_bundle(self):
        for reference in self._write_run():
            yield GlobalWindows.windowed_value(reference)

    def _write_run(self):
        if not self.buffers:
            return []
        path = os.path.join(self.directory, f"{uuid.uuid4().hex}.run")
        partitions = sorted(self.buffers)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:  # one partition's block: one record (a zstd frame, or stored where that is not shorter)
            blocks, _ = scratch_frames.write_records(fd, path, 0, (b"".join(self.buffers[p]) for p in partitions),
                                                     self.compress)
        finally:
            os.close(fd)
        self.buffers, self.buffered = {}, 0
        return list(zip(partitions, blocks))


class _GroupRuns(beam.DoFn):
    """``(partition, [run references])`` -> ``(key, [values])`` for every key of the partition, in key-byte
    order (the order of the run references never shows)."""

    def __init__(self, key_coder: coders.Coder, value_coder: coders.Coder, tags: tuple | None = None):
        self.key_coder, self.value_coder = key_coder, value_coder
        # a CoGroupByKey's: each value is (input index, value), and a group goes as (key, {tag: [values]}) (in
        # this step: a Map after it cost a Beam step per key)
        self.tags = tags

    def setup(self):
        self.keys, self.values = self.key_coder.get_impl(), self.value_coder.get_impl()

    def process(self, element):
        _, references = element
        groups: dict[bytes, list] = {}
        decode_value = self.values.decode_from_stream
        for reference in sorted(references):
            stream = create_InputStream(scratch_frames.read(reference, _WHAT))
            while stream.size() > 0:
                key_bytes = stream.read(stream.read_var_int64())
                value = decode_value(stream, True)
                group = groups.get(key_bytes)
                if group is None:
                    groups[key_bytes] = [value]
                else:
                    group.append(value)
        decode_key, tags = self.keys.decode, self.tags
        for key_bytes in sorted(groups):
            values = groups.pop(key_bytes)
            yield decode_key(key_bytes), (values if tags is None else _untagged(values, tags))


def _coders(pcoll) -> tuple[coders.Coder, coders.Coder]:
    """The deterministic coder of the records' keys and the coder of their values, as Beam's GroupByKey
    chooses them (an untyped PCollection's: the registry's fallback, the build's document coder)."""
    coder = coders.registry.get_coder(pcoll.element_type)
    if coder.is_kv_coder():
        key_coder, value_coder = coder.key_coder(), coder.value_coder()
    else:
        key_coder = coders.FastPrimitivesCoder()
        value_coder = coders.registry.get_coder(object)
    return key_coder.as_deterministic_coder("disk_grouping.GroupByKey"), value_coder


class _DiskGroupByKey(beam.PTransform):
    """Beam's ``GroupByKey`` on local disk (see the module)."""

    def __init__(self, label: str | None = None, listed: bool = False, bare: bool = False):
        super().__init__(label)
        self.directory, self.partitions = spill_directory(), _partitions()
        self.listed, self.bare = listed, bare  # see _WriteRuns

    def expand(self, records):
        if self.listed or self.bare:  # untyped records: the keys' coder is the deterministic fallback's
            key_coder = coders.FastPrimitivesCoder().as_deterministic_coder("disk_grouping.GroupByKey")
            value_coder = coders.registry.get_coder(object)
        else:
            key_coder, value_coder = _coders(records)
        runs = records | "WriteRuns" >> beam.ParDo(_WriteRuns(self.directory, key_coder, value_coder, self.partitions,
                                                              listed=self.listed, bare=self.bare))
        return _group_runs([runs], key_coder, value_coder)


def _group_runs(runs: list, key_coder: coders.Coder, value_coder: coders.Coder, tags: tuple | None = None):
    """Run references (``_WriteRuns``' output, from one or several PCollections) -> ``(key, [values])``
    (``tags``: a CoGroupByKey's ``(key, {tag: [values]})``)."""
    references = runs[0] if len(runs) == 1 else runs | "FlattenRuns" >> beam.Flatten()
    return (references
            | "GroupRunsByPartition" >> beam.GroupByKey()
            | "ReadGroups" >> beam.ParDo(_GroupRuns(key_coder, value_coder, tags)))


def _untagged(values: list, tags: tuple) -> dict:
    """A CoGroupByKey's values, ``(input index, value)`` each -> ``{tag: [values]}``, every tag present."""
    by_tag: dict = {tag: [] for tag in tags}
    for index, value in values:
        by_tag[tags[index]].append(value)
    return by_tag


class _DiskCoGroupByKey(beam.PTransform):
    """Beam's ``CoGroupByKey`` of a dict of keyed PCollections: ``(key, {tag: [values]})``, every tag present,
    on local disk inside ``spilling_to``. Each input writes its runs in the step that made it, so no input waits
    in memory for the others (a Flatten of the inputs themselves would hold them all until the last is made)."""

    def __init__(self, label: str | None = None, listed: tuple = ()):
        super().__init__(label)
        self.directory, self.partitions = spill_directory(), _partitions()
        self.listed = frozenset(listed)  # the inputs whose elements are lists of records

    def expand(self, inputs):
        tags = tuple(inputs)
        key_coder = coders.FastPrimitivesCoder().as_deterministic_coder("disk_grouping.CoGroupByKey")
        value_coder = coders.registry.get_coder(object)
        runs = [inputs[tag]
                | f"WriteRuns{index}" >> beam.ParDo(_WriteRuns(self.directory, key_coder, value_coder,
                                                               self.partitions, tag=index, listed=tag in self.listed))
                for index, tag in enumerate(tags)]
        return _group_runs(runs, key_coder, value_coder, tags)


def _spread_key(record, partitions: int, counter=[0]):  # noqa: B006 - a per-process counter spreads records evenly
    counter[0] += 1
    return counter[0] % partitions, record


def _ungroup(group):
    return group[1]


class _DiskReshuffle(beam.PTransform):
    """Beam's ``Reshuffle`` (records spread over workers, fusion broken), on local disk inside
    ``spilling_to``."""

    def __init__(self, label: str | None = None):
        super().__init__(label)
        self.directory, self.partitions = spill_directory(), _partitions()

    def expand(self, records):
        return _spread_over_disk((records,), self.directory, self.partitions)


_SPREAD_KEY_CODER = coders.VarIntCoder()


def _spread_over_disk(inputs: tuple, directory: str, partitions: int):
    """Every record of ``inputs`` dealt round-robin over the partitions, written to runs in the step that made
    it, read back one partition at a time: one PCollection (a Reshuffle of one input, a Flatten of several)."""
    value_coder = coders.registry.get_coder(object)
    runs = [pcoll | f"Spread{index}" >> beam.Map(_spread_key, partitions)
            | f"WriteRuns{index}" >> beam.ParDo(_WriteRuns(directory, _SPREAD_KEY_CODER, value_coder, partitions,
                                                           spread=True))
            for index, pcoll in enumerate(inputs)]
    return _group_runs(runs, _SPREAD_KEY_CODER, value_coder) | "Ungroup" >> beam.FlatMap(_ungroup)


class _DiskFlatten(beam.PTransform):
    """Beam's ``Flatten`` of several PCollections, which inside ``spilling_to`` waits on local disk: Beam's
    in-memory runners hold every input of a Flatten made in an earlier fused stage until its consumer runs (the
    removed records of every stage of a build, until the last stage is done). Here each input writes its records
    to runs in the step that made it and one step reads them back (a Reshuffle of all of them together)."""

    def __init__(self, label: str | None = None):
        super().__init__(label)
        self.directory, self.partitions = spill_directory(), _partitions()

    def _extract_input_pvalues(self, pvalueish):
        # as beam.Flatten: a list of PCollections is the inputs (a composite's default takes tuples only)
        pvalueish = (pvalueish,) if isinstance(pvalueish, beam.PCollection) else tuple(pvalueish)
        return pvalueish, pvalueish

    def expand(self, inputs):
        inputs = tuple(inputs)  # _extract_input_pvalues made it a tuple
        if len(inputs) < 2:
            return inputs | "Flatten" >> beam.Flatten()
        return _spread_over_disk(inputs, self.directory, self.partitions)


# The transforms the pipeline's code applies: inside ``spilling_to``, the disk versions above; outside, Beam's
# own, unchanged (the same graph and labels as before, which Dataflow's update compatibility checks).
def GroupByKey(listed: bool = False) -> beam.PTransform:  # noqa: N802 - used as Beam's class is
    """Beam's ``GroupByKey``; on local disk inside ``spilling_to``. ``listed``: the input's elements are lists of
    ``(key, value)`` records (a producer of many records emits one element per list: on disk they are written
    without a Beam step per record; elsewhere they are unlisted first)."""
    if spill_directory() is None:
        return _Unlisted(beam.GroupByKey()) if listed else beam.GroupByKey()
    return _DiskGroupByKey(listed=listed)


def CoGroupByKey(listed: tuple = ()) -> beam.PTransform:  # noqa: N802
    """Beam's ``CoGroupByKey`` of a dict of keyed PCollections; on local disk inside ``spilling_to``.
    ``listed``: the tags of the inputs whose elements are lists of records (as ``GroupByKey``'s)."""
    if spill_directory() is None:
        return _UnlistedCoGroup(listed) if listed else beam.CoGroupByKey()
    return _DiskCoGroupByKey(listed=listed)


def _each(records):
    return records


class _Unlisted(beam.PTransform):
    """``transform`` of the records of an input whose elements are lists of them (outside ``spilling_to``)."""

    def __init__(self, transform: beam.PTransform):
        super().__init__()
        self.transform = transform

    def expand(self, lists):
        return lists | "Unlist" >> beam.FlatMap(_each) | self.transform


class _UnlistedCoGroup(beam.PTransform):
    """Beam's ``CoGroupByKey`` of inputs some of whose elements are lists of records (``listed``: their tags)."""

    def __init__(self, listed: tuple):
        super().__init__()
        self.listed = frozenset(listed)

    def expand(self, inputs):
        inputs = {tag: (pcoll | f"Unlist{tag.title()}" >> beam.FlatMap(_each) if tag in self.listed else pcoll)
                  for tag, pcoll in inputs.items()}
        return inputs | "CoGroup" >> beam.CoGroupByKey()


def Reshuffle() -> beam.PTransform:  # noqa: N802
    """Beam's ``Reshuffle``; on local disk inside ``spilling_to``."""
    return beam.Reshuffle() if spill_directory() is None else _DiskReshuffle()


def Flatten() -> beam.PTransform:  # noqa: N802
    """Beam's ``Flatten``; inside ``spilling_to`` each input waits on local disk, not in memory."""
    return beam.Flatten() if spill_directory() is None else _DiskFlatten()


def _key(group):
    return group[0]


class _DiskDistinct(beam.PTransform):
    """Beam's ``Distinct`` on local disk: every element a key, grouped (Beam's is a combiner, whose partial step
    holds a bundle's distinct elements in memory and whose shuffle holds them all)."""

    def __init__(self, label: str | None = None, listed: bool = False):
        super().__init__(label)
        self.listed = listed

    def expand(self, elements):
        return (elements | "Group" >> _DiskGroupByKey(listed=self.listed, bare=True)
                | "Keys" >> beam.Map(_key))


def Distinct(listed: bool = False) -> beam.PTransform:  # noqa: N802
    """Beam's ``Distinct``; on local disk inside ``spilling_to``. ``listed``: the input's elements are lists of
    the elements to make distinct (as ``GroupByKey``'s)."""
    if spill_directory() is None:
        return _Unlisted(beam.Distinct()) if listed else beam.Distinct()
    return _DiskDistinct(listed=listed)
