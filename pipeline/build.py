"""The build: read -> normalize -> quality -> dedup -> pii -> clean shards, with full accounting.

``run_build`` is what ``corpusforge build`` calls. Everything is written under a temporary directory inside
the run directory and moved into place only when the run succeeded and every record is accounted for.
"""
from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
import os
import posixpath
import secrets
import sys
import time
import zlib
from typing import Any

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import CompressionTypes, FileSystems

from corpusforge.pipeline import __version__
from corpusforge.core.beam_options import REMOTE_RUNNERS, pipeline_options, runs_on_direct_runner
from corpusforge.core.direct_runner import beam_pipeline, run_pipeline
from corpusforge.core.disk_grouping import Flatten, Reshuffle, partitions_for, spilling_to
from corpusforge.core.dofn_specs import memoized_dofn_specs
from corpusforge.core.fault_config import FaultConfig
from corpusforge.pipeline.config import BuildConfig
from corpusforge.core.config_loader import output_dict, public_dict, to_dict
from corpusforge.pipeline.annotation_rows import Rows
from corpusforge.pipeline.document_coder import document_coders
from corpusforge.pipeline.document import (DOCUMENT_SCHEMA, RAW_PREVIEW, REJECTED_SCHEMA, document_from_row,
                                           document_row, document_schema, rejected_row, removed_row, removed_schema,
                                           struct_type)
from corpusforge.core.errors import ScratchError, UserError, resource_error
from corpusforge.pipeline.build_progress import build_progress
from corpusforge.pipeline.disk_need import disk_need, disk_warning
from corpusforge.pipeline.readers import (ReadDocuments, check_inputs, input_bytes, input_files, input_text_bytes,
                                          one_listing)
from corpusforge.core.input_files import display_path, file_problem
from corpusforge.pipeline.spill import LoadText, SpillText, TextSpiller, close_readers, load_text
from corpusforge.pipeline.stage import Stage, StageContext, names_as_written, registered_stages
from corpusforge.core import files, rundir
from corpusforge.core.dataset_card import CARD, write_card
from corpusforge.core.shard_files import ShardFormat
from corpusforge.core.run_lock import run_lock
from corpusforge.core.files import make_private_dir, read_bytes, read_json, write_bytes_atomic, write_json
from corpusforge.pipeline.shards import WriteShards, WriteShardSets, finalize_shards, iter_rows_of, shard_name, shard_paths
from corpusforge.pipeline.stats import (CountFacts, DocumentsAndFacts, FactsOf, annotation_facts, assemble_stats, document_facts, edit_facts, format_summary, loss_warning, rejection_advice, WHOLE_INPUT_REASONS,
                            length_facts, merge_metrics, rejected_facts, removed_facts, runner_metrics)

# manifest.json sits beside clean/ rather than in it, so `pyarrow.dataset.dataset("RUN/clean")` sees only shards.
# README.md: the dataset card (``corpusforge.core.dataset_card``), so `datasets.load_dataset(RUN)` is clean/.
OUTPUTS = ("clean", "removed", "rejected", "manifest.json", "stats.json", CARD)


def _sections(config: BuildConfig) -> list[tuple[type[Stage], Any]]:
    """Every registered stage, in build order, with its config section."""
    return [(stage, getattr(config, stage.section)) for stage in registered_stages()]


def stage_names(config: BuildConfig) -> list[str]:
    """The config sections of the enabled stages, in build order."""
    return [stage.section for stage in registered_stages() if getattr(config, stage.section).enabled]


def enabled_stages(config: BuildConfig, spill_dir: str | None = None, run_secret: str | None = None,
                   direct_runner: bool = False) -> list[tuple[str, Stage]]:
    """Every enabled stage, constructed from its config section (constructing checks the section).
    ``direct_runner``: the pipeline runs on Beam's DirectRunner (``StageContext.direct_runner``)."""
    context = StageContext(run_dir=config.output.run_dir, spill_dir=spill_dir, fail_fast=config.build.fail_fast,
                           run_secret=run_secret, direct_runner=direct_runner, unique_ids=True)
    return [(stage.section, stage(getattr(config, stage.section), context)) for stage in registered_stages()
            if getattr(config, stage.section).enabled]


def shard_schemas(config: BuildConfig) -> dict[str, pa.Schema]:
    """The Arrow schema of docs/clean, removed and rejected shards under ``config``: ``annotations`` and ``details``
    are structs of the fields the enabled stages declare (``Stage.annotation_fields`` / ``detail_fields``), in
    build order, so every shard of a config has the same schema."""
    declared: dict[str, dict[str, pa.Field]] = {"annotations": {}, "details": {}}
    for stage in registered_stages():
        section = getattr(config, stage.section)
        if not section.enabled:
            continue
        for kind, fields in (("annotations", stage.annotation_fields(section)), ("details", stage.detail_fields(section))):
            for f in fields:
                seen = declared[kind].setdefault(f.name, f)
                if seen.type != f.type:
                    raise TypeError(f"stages declare {kind}.{f.name} as both {seen.type} and {f.type}")
    annotations = struct_type(list(declared["annotations"].values()))
    details = struct_type(list(declared["details"].values()))
    return {"docs": document_schema(annotations), "removed": removed_schema(annotations, details),
            "rejected": REJECTED_SCHEMA}


class _TextTieBreak:
    """Orders records by their document's text, reading it only when everything before it in the sort key
    ties (a spilled text stays on disk while its shard is sorted)."""

    __slots__ = ("doc",)

    def __init__(self, doc):
        self.doc = doc

    def __eq__(self, other):
        return self.doc.text == other.doc.text

    def __lt__(self, other):
        return self.doc.text < other.doc.text


def _doc_sort_key(doc):
    return (doc.id, doc.source, _TextTieBreak(doc))


def _removed_sort_key(r):
    return (r.stage, r.doc.id, r.doc.source, r.reason, _TextTieBreak(r.doc))


def _doc_size(doc):
    text_bytes = doc.text_ref[2] if doc.text_ref is not None else len(doc.text.encode("utf-8"))
    return text_bytes + len(doc.id) + 64


class ReadDocumentShards(beam.PTransform):
    """Read ``Document`` shards written by ``WriteShards`` (a stage checkpoint, or a clean build) back."""

    def __init__(self, directory: str, spill_dir: str | None = None, schema: pa.Schema = DOCUMENT_SCHEMA):
        super().__init__()
        self.directory, self.spill_dir, self.schema = directory, spill_dir, schema

    def expand(self, pbegin):
        docs = (
            pbegin
            | "ListShards" >> beam.Create(shard_paths(self.directory))
            | "ReshuffleShards" >> Reshuffle()
            | "ReadShard" >> beam.FlatMap(_read_documents, schema=self.schema)
        )
        if self.spill_dir:
            docs = docs | "SpillRead" >> SpillText(self.spill_dir)
        return docs | "SpreadDocuments" >> Reshuffle()


def _read_documents(path: str, schema: pa.Schema = DOCUMENT_SCHEMA):
    # ``schema`` types a JSON Lines shard's columns: the annotations struct of the build that wrote it.
    for row in iter_rows_of(path, schema=schema):
        yield document_from_row(row)


@dataclasses.dataclass
class Segment:
    """Stages that run together in one Beam pipeline; with stage checkpoints, each stage is its own segment."""

    index: int
    stages: list[str]
    directory: str
    fingerprint: str
    files: dict[str, str] = dataclasses.field(default_factory=dict)  # "<config key> <path>" -> content digest
    fmt: ShardFormat = ShardFormat()  # the format of its shards: the run's output.format
    schemas: dict[str, pa.Schema] = dataclasses.field(default_factory=dict, repr=False)  # docs, removed, rejected

    @property
    def marker(self) -> str:
        return posixpath.join(self.directory, rundir.SEGMENT_DONE)

    @property
    def spill_dir(self) -> str:
        return posixpath.join(self.directory, "spill")


def shuffle_dir(config: BuildConfig, segment: Segment) -> str | None:
    """Where the segment's shuffles wait (``corpusforge.core.disk_grouping``): on local disk beside its spilled
    text when the build spills and its inputs exceed ``output.disk_shuffle_mb`` as text (``input_text_bytes``:
    compressed files count 5x; counted as stored, 61 MB of .jsonl.zst held 2.7 GB on 2 workers in memory), so
    memory stays flat as the corpus grows; None: the runner's own shuffle (remote runners, ``output.spill_text: false``, a
    small corpus: Beam's in-memory shuffle sets up faster and holds little)."""
    if not spills_text(config):
        return None
    if config.output.disk_shuffle_mb > 0 and input_text_bytes(config.inputs) <= config.output.disk_shuffle_mb * 1e6:
        return None
    return posixpath.join(segment.spill_dir, "shuffle")


def spills_text(config: BuildConfig) -> bool:
    """Spill text only where every worker can read the spill files: a local run directory."""
    return config.output.spill_text and "://" not in config.output.run_dir


def source_digest(roots: list[str]) -> str:
    """SHA-256 of every ``.py`` file under ``roots`` (their paths relative to their root and their bytes, in a
    fixed order; ``__pycache__`` left out)."""
    digest = hashlib.sha256()
    for root in roots:
        for folder, dirs, names in sorted(os.walk(root)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(n for n in names if n.endswith(".py")):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).encode() + b"\0" + read_bytes(path) + b"\0")
    return digest.hexdigest()


@functools.cache
def code_revision() -> str:
    """``__version__`` and a digest of the source of every module a build's outputs come from (corpusforge's
    ``pipeline`` and ``core`` packages: readers, stages, shard writing), so that a checkpoint made by other code
    is rebuilt, not reused: the version string alone stayed ``0.1.0`` while the readers' rules changed (line ends,
    encodings, merged metadata), and a ``--resume`` or an ablation's shared segment would have mixed the two.
    ~100 files, read once per process (~5 ms)."""
    import corpusforge.core
    import corpusforge.pipeline

    roots = sorted(path for package in (corpusforge.pipeline, corpusforge.core) for path in package.__path__)
    return f"{__version__}+{source_digest(roots)[:16]}"


def _fingerprint(config: BuildConfig, stages: list[str], files: dict[str, str] | None = None) -> str:
    """What a segment's output depends on: the code (``code_revision``), the inputs, the reader's limits, the
    configs of its stages and of every stage before it, and ``files``: the content digest of every input file and
    of every file those stages read (models, word lists, eval sets; ``file_digests``), so that a file changed
    under the same path is rebuilt. A checkpoint is reused only if this is unchanged."""
    relevant = {
        "version": code_revision(),
        "inputs": to_dict(config.inputs),
        "max_doc_chars": config.output.max_doc_chars,
        "record_limits": [config.output.max_record_bytes, config.output.max_metadata_depth],
        "shard_target_mb": config.output.shard_target_mb,
        "format": [config.output.format, config.output.shard_format.codec],
        "stages": {name: output_dict(getattr(config, name)) for name in stages},
        "files": files or {},
        # every segment's removed and rejected records go through these stages' configurations
        **{stage.section: output_dict(section) if section.enabled else None for stage, section in _sections(config)
           if stage.before_writing.__func__ is not Stage.before_writing.__func__},
    }
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


def file_digests(config: BuildConfig) -> dict[str, dict[str, str]]:
    """``{stage or "read": {"<config key> <path>": digest}}``: every input file and every file an enabled
    stage reads, by content (``corpusforge.core.files.content_digest``: sha256 for local files)."""
    from corpusforge.core.files import content_digest

    hash_remote = config.output.hash_remote_files
    listed = {"read": [(f"inputs[{i}]", path) for i, (_, paths) in enumerate(check_inputs(config.inputs))
                       for path in paths]}
    for stage in registered_stages():
        section = getattr(config, stage.section)
        if section.enabled:
            listed[stage.section] = stage.files(section)
    # an entry that is not a regular file (a FIFO, /dev/zero behind a link) is never read, not even to hash it
    return {name: {f"{key} {display_path(path)}": content_digest(path, hash_remote) if file_problem(path) is None
                   else f"not_read:{file_problem(path)}" for key, path in files}
            for name, files in listed.items()}


def plan_segments(config: BuildConfig, work_dir: str, checkpoint: bool) -> list[Segment]:
    names = stage_names(config)
    groups = [[name] for name in names] if checkpoint and names else [names]
    digests = file_digests(config) if checkpoint else {}  # only a resumed build compares fingerprints
    schemas = shard_schemas(config)
    segments, done = [], []
    for index, group in enumerate(groups):
        done = done + group
        files = {key: digest for name in ["read", *done] for key, digest in digests.get(name, {}).items()}
        segments.append(Segment(index, group, rundir.segment_dir(work_dir, index, group),
                                _fingerprint(config, done, files), files, config.output.shard_format, schemas))
    return segments


def changed_files(segment: Segment) -> list[str]:
    """The files whose content differs from when ``segment`` was checkpointed (by its marker)."""
    marker = _read_marker(segment)
    before = marker.get("files") if isinstance(marker, dict) else None
    if not isinstance(before, dict):
        return []  # no marker, or one damaged: the stage is rebuilt for that (checkpoint_problem)
    return sorted(key.split(" ", 1)[1] for key in before.keys() | segment.files.keys()
                  if before.get(key) != segment.files.get(key))


def segment_pipeline(pipeline: beam.Pipeline, config: BuildConfig, segment: Segment, previous: Segment | None,
                     is_last: bool, progress: str | None = None, run_secret: str | None = None) -> None:
    """Wire one segment: its input (the raw inputs, or the previous segment's documents), its stages, and
    durable outputs in ``segment.directory``: docs/, removed/, rejected/ (the reader's rejections and every
    stage's ``stage_error`` records), facts.json.

    Removed and rejected records, whichever stage made them, go through each enabled stage's
    ``Stage.before_writing`` (the PII stage scrubs them with its configuration and salt) before they are written."""
    target = int(config.output.shard_target_mb * 1e6)
    fmt = config.output.shard_format
    out = segment.directory
    spill_dir = segment.spill_dir if spills_text(config) else None
    facts, removed, rejected = [], [], []
    run_secret = run_secret or secrets.token_hex(16)
    # The runner the pipeline's options name (CLI flags included), not only the config's.
    direct = runs_on_direct_runner(pipeline.options.get_all_options(), config.beam.runner)
    stages = dict(enabled_stages(config, spill_dir, run_secret, direct))
    before_writing = {kind: [t for stage, section in _sections(config) if section.enabled
                             and (t := stage.before_writing(section, kind, run_secret)) is not None]
                      for kind in ("removed", "rejected")}
    if previous is None:
        names = names_as_written(config, run_secret)
        read = ReadDocuments(config.inputs, config.output.max_doc_chars, spill_dir=spill_dir, progress=progress,
                             fail_fast=config.build.fail_fast, max_record_bytes=config.output.max_record_bytes,
                             max_metadata_depth=config.output.max_metadata_depth, names=names)
        docs, read_rejected = pipeline | "Read" >> read
        rejected.append(read_rejected)
        # the first stage reads each text: from disk once (spill.load_text), in the facts' step (which reads none)
        docs, read_facts = docs | "FactsRead" >> DocumentsAndFacts(
            document_facts("read"), length_facts("length_in"),
            before=load_text if spill_dir and segment.stages else None)
        facts += [read_facts, read.edits | "FactsEditsRead" >> FactsOf(edit_facts)]
    else:
        docs = pipeline | "ReadCheckpoint" >> ReadDocumentShards(posixpath.join(previous.directory, "docs"), spill_dir,
                                                                previous.schemas["docs"])
        if spill_dir:
            docs = docs | "LoadTextCheckpoint" >> LoadText()
    for index, name in enumerate(segment.stages):
        outputs = docs | name.capitalize() >> stages[name]
        removed.append(outputs.removed)
        if outputs.errors is not None:
            rejected.append(outputs.errors)
        # One step per document after each stage: a stage that changed a text made a document without a
        # reference, spilled again here; the next stage reads each text: from disk once (load), not after the
        # segment's last stage, whose documents go to the shard writer's shuffle. The facts read no text: a
        # spilled document carries its length (Document.text_sizes). The last stage's documents are the
        # segment's: the output's facts too.
        final = index == len(segment.stages) - 1
        last = [length_facts("length_out"), annotation_facts] if is_last and final else []
        docs, stage_facts = outputs.kept | f"Facts{name.capitalize()}" >> DocumentsAndFacts(
            document_facts(name), *last, before=TextSpiller(spill_dir, load=not final) if spill_dir else None)
        facts.append(stage_facts)
        if outputs.edits is not None:
            facts.append(outputs.edits | f"FactsEdits{name.capitalize()}" >> FactsOf(edit_facts))
    if is_last and not segment.stages:
        facts.append(docs | "FactsOut" >> FactsOf(length_facts("length_out"), annotation_facts))
    removed_all = (removed or [pipeline | "NoRemovals" >> beam.Create([])]) | "FlattenRemoved" >> Flatten()
    facts.append(removed_all | "FactsRemoved" >> FactsOf(removed_facts))  # what the stages removed, as removed
    for transform in before_writing["removed"] if config.output.write_removed else []:
        removed_all = removed_all | type(transform).__name__ >> transform
    if spill_dir:
        removed_all = removed_all | "SpillRemoved" >> SpillText(spill_dir)
    rejected_all = (rejected or [pipeline | "NoRejections" >> beam.Create([])]) | "FlattenRejected" >> Flatten()
    facts.append(rejected_all | "FactsRejected" >> FactsOf(rejected_facts))
    for transform in before_writing["rejected"] if config.output.write_rejected else []:
        rejected_all = rejected_all | type(transform).__name__ >> transform
    writers = {"rejected": WriteShards(
        posixpath.join(out, "rejected"), REJECTED_SCHEMA, rejected_row, lambda r: f"{r.path}:{r.position}",
        lambda r: (r.source, r.path, r.position, r.reason), lambda r: min(len(r.raw), RAW_PREVIEW) + 64, target,
        fmt=fmt)}  # the preview is carried longer than it is written (RAW_CARRIED): sized as written
    records = {"rejected": rejected_all, "docs": docs}
    schemas = segment.schemas
    annotations, details = schemas["removed"].field("annotations").type, schemas["removed"].field("details").type
    writers["docs"] = WriteShards(
        posixpath.join(out, "docs"), schemas["docs"], functools.partial(document_row, annotations=annotations),
        lambda d: d.id, _doc_sort_key, _doc_size, target, progress, fmt)
    if config.output.write_removed:
        records["removed"] = removed_all
        writers["removed"] = WriteShards(
            posixpath.join(out, "removed"), schemas["removed"],
            functools.partial(removed_row, annotations=annotations, details=details), lambda r: r.doc.id,
            _removed_sort_key, lambda r: _doc_size(r.doc), target, fmt=fmt)
    # the clean and removed shards in one step: on worker processes they are written side by side (rejected
    # records, usually few, keep their own step with Beam's shuffle: WriteShardSets.small)
    written = records | "WriteShards" >> WriteShardSets(writers, small=("rejected",))
    lists = {f"{name}-shards.json": infos for name, infos in written.items()}
    # in memory: facts are summed per bundle before they meet (a few per stage and bundle)
    lists["facts.json"] = facts | "FlattenFacts" >> beam.Flatten() | "CountFacts" >> CountFacts()
    _save_lists(lists, out)


def _save_lists(lists: dict[str, Any], out: str) -> None:
    """``out/<file>``: a JSON list of each small PCollection in ``lists`` (``[]`` for an empty one): the shards
    each ``WriteShards`` wrote and the summed facts. One global gather for all of them: each gather is ~7 Beam
    steps that every build sets up and runs once."""
    tagged = [items | f"Tag{file.split('.')[0].title().replace('-', '')}" >> beam.Map(lambda item, file: (file, item),
                                                                                       file=file)
              for file, items in lists.items()]
    # in memory: one small entry per shard written and the summed facts
    _ = (tagged | "FlattenLists" >> beam.Flatten() | "GatherLists" >> beam.combiners.ToList()
         | "SaveLists" >> beam.Map(write_json_lists, out, sorted(lists)))


LISTS_CHECK = "lists-check.json"  # [size, CRC-32] of each list SaveLists wrote, written after them


def write_json_lists(tagged: list[tuple[str, Any]], out: str, files: list[str]) -> None:
    """Write each list, then ``LISTS_CHECK``: the size and CRC-32 of each as written (``_shard_check``, the
    checkpoints' check), which ``read_list`` compares before the build reads one."""
    by_file: dict[str, list[Any]] = {file: [] for file in files}
    for file, item in tagged:
        by_file[file].append(item)
    for file, items in by_file.items():
        write_json(posixpath.join(out, file), items)
    write_json(posixpath.join(out, LISTS_CHECK), {file: _shard_check(posixpath.join(out, file)) for file in files})


def read_list(directory: str, name: str, optional: bool = False) -> list[Any] | None:
    """The list ``name`` (``docs-shards.json``: the shards a stage wrote; ``facts.json``: its counts) that SaveLists
    wrote in ``directory``, read only as it was written: compared with the size and CRC-32 ``LISTS_CHECK``
    records. A list cut, edited or gone between its writing and this read (another process, a full disk) is one
    line naming it, not a traceback nor shards named wrong, moved from elsewhere or counted wrong. ``optional``:
    None when the build wrote no such list (``removed-shards.json`` without ``output.write_removed``)."""
    path, record_path = posixpath.join(directory, name), posixpath.join(directory, LISTS_CHECK)
    try:
        record = read_json(record_path) if FileSystems.exists(record_path) else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        record = None
    check = record.get(name) if isinstance(record, dict) else None
    if optional and isinstance(record, dict) and name not in record and not FileSystems.exists(path):
        return None
    if not FileSystems.exists(path):
        problem = "is gone"
    elif not (isinstance(check, list) and len(check) == 2 and all(type(n) is int for n in check)):
        problem = f"cannot be checked ({record_path} is gone or damaged)"
    elif _shard_check(path) != check:
        problem = "was changed since the build wrote it (its size or CRC-32 differs)"
    else:
        try:
            items = read_json(path)
        except (UnicodeDecodeError, json.JSONDecodeError):  # the same bytes as written: not expected
            items = None
        if isinstance(items, list):
            return items
        problem = "is not the JSON list the build wrote"
    raise UserError(f"{path} {problem}: something else writes to the build's work directory; run the build again "
                    "once nothing does")


def _finish_segment(segment: Segment, seconds: float, checked: bool = False) -> None:
    """Name the segment's shards in order and mark it complete (a resumed build starts after it). ``checked``
    (stage checkpoints): the marker records each shard's size and CRC-32 (``_shard_check``), which
    ``damaged_shard`` compares before the shards are used."""
    for name, schema in segment.schemas.items():
        shards = read_list(segment.directory, f"{name}-shards.json", optional=True)
        if shards is not None:
            entries = finalize_shards(shards, posixpath.join(segment.directory, name), schema, segment.fmt)
            write_json(posixpath.join(segment.directory, f"{name}.json"), entries)
    close_readers()  # the in-process runner read spilled texts in this process
    rundir.delete(segment.spill_dir)
    marker = {"stages": segment.stages, "fingerprint": segment.fingerprint, "seconds": seconds, "files": segment.files}
    if checked:
        marker["shards"] = {kind: {posixpath.basename(path): _shard_check(path)
                                   for path in shard_paths(posixpath.join(segment.directory, kind))}
                            for kind in segment.schemas if FileSystems.exists(posixpath.join(segment.directory, kind))}
        # the lists read after the stage: facts.json (the stats) and each kind's listing (what is gathered)
        marker["lists"] = {name: _shard_check(posixpath.join(segment.directory, name))
                           for name in ("facts.json", *(f"{kind}.json" for kind in segment.schemas))
                           if FileSystems.exists(posixpath.join(segment.directory, name))}
    write_json(segment.marker, marker)


_CHECK_CHUNK = 4 * 1024 * 1024
ANOTHER_CONFIGURATION = "made with another configuration"


def _shard_check(path: str) -> list[int]:
    """``[size, CRC-32]`` of a checkpoint shard's bytes on disk, read in a stream. A stage checkpoint is read back
    by the next stage, by ``--resume`` and by ablation builds: a byte changed in an (uncompressed) Arrow IPC shard
    would read back as other text. ``zlib.crc32`` (the standard library, as in ``corpusforge.core.scratch_frames``)
    reads ~1.6 GB per CPU-second here, faster than sha256 (~0.95) or blake2b (~0.77), and catches every change of
    up to 32 bits in a row and any other but once in 2^32; the size catches a truncated shard at once."""
    size, crc = 0, 0
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        while chunk := f.read(_CHECK_CHUNK):
            size += len(chunk)
            crc = zlib.crc32(chunk, crc)
    return [size, crc]


def damaged_shard(segment: Segment, kinds: tuple[str, ...] | None = None) -> str | None:
    """Why the checkpointed shards of ``segment`` (of ``kinds``: docs, removed, rejected; all by default) or the
    lists read after it (facts.json: the stats; docs.json ...: what is gathered) are not as its marker recorded
    them, naming the file: one gone, added, shorter or longer, or with other bytes; None when they all are. A
    marker without sizes and checksums (an older build's) is never whole."""
    marker = _read_marker(segment)
    if isinstance(marker, str):
        return marker
    recorded = marker.get("shards")
    if not isinstance(recorded, dict):
        return f"{segment.marker} records no checksums of its shards"
    lists = marker.get("lists")
    if not isinstance(lists, dict) or "facts.json" not in lists:
        return f"{segment.marker} records no checksums of its lists"
    for name, check in sorted(lists.items()):
        path = posixpath.join(segment.directory, name)
        if not FileSystems.exists(path):
            return f"{path} is gone"
        if _shard_check(path) != check:
            return f"{path} was changed since it was written"
    for kind in kinds or tuple(recorded):
        directory = posixpath.join(segment.directory, kind)
        expected = recorded.get(kind)
        if expected is None and kind != "docs" and not FileSystems.exists(directory):
            continue  # removed/ or rejected/ not written (output.write_removed: false)
        if not isinstance(expected, dict) or not all(
                isinstance(check, list) and len(check) == 2 and all(type(n) is int for n in check)
                for check in expected.values()):
            return f"{segment.marker} records no checksums of its {kind} shards"
        found = {posixpath.basename(path) for path in shard_paths(directory)} if FileSystems.exists(directory) else set()
        for name in sorted(expected.keys() | found):
            path = posixpath.join(directory, name)
            if name not in found:
                return f"{path} is gone"
            if name not in expected:
                return f"{path} was not written by the build"
            size, crc = _shard_check(path)
            if size != expected[name][0]:
                return f"{path} has {size:,} bytes, not the {expected[name][0]:,} written"
            if crc != expected[name][1]:
                return f"{path} was changed since it was written (its CRC-32 differs)"
    return None


def _read_marker(segment: Segment) -> dict[str, Any] | str:
    """The segment's marker (``_SUCCESS.json``) as its stage wrote it, or why not: gone, or changed so that it is
    no JSON object (a damaged marker makes the checkpoint not whole; it never stops the build with a traceback)."""
    if not FileSystems.exists(segment.marker):
        return f"{segment.marker} is gone"
    try:
        marker = read_json(segment.marker)
    except (UnicodeDecodeError, json.JSONDecodeError):
        marker = None
    return marker if isinstance(marker, dict) else f"{segment.marker} is not the JSON its stage wrote"


def check_checkpoint(segment: Segment, kinds: tuple[str, ...] | None = None) -> None:
    """Raise a one-line ``ScratchError`` if the checkpointed shards of ``segment`` (``damaged_shard``) are not
    whole: this build wrote them and cannot go on from them."""
    problem = damaged_shard(segment, kinds)
    if problem is not None:
        raise ScratchError(f"stage checkpoint {problem}: run the build again (with --resume it rebuilds stage "
                           f"{'+'.join(segment.stages) or 'read'} and every stage after it)")


def checkpoint_problem(segment: Segment, shards: bool = True) -> str | None:
    """Why a resumed build cannot skip ``segment``: no marker, another fingerprint, or (``shards``) a damaged
    shard (``damaged_shard``); None when its checkpoint is whole and was made with its fingerprint."""
    if not FileSystems.exists(segment.marker):
        return "not checkpointed"
    marker = _read_marker(segment)
    if isinstance(marker, str):
        return marker
    if marker.get("fingerprint") != segment.fingerprint:
        return ANOTHER_CONFIGURATION
    return damaged_shard(segment) if shards else None


def is_complete(segment: Segment, shards: bool = True) -> bool:
    """The segment's checkpoint is whole and was made with its fingerprint (a resumed build skips it).
    ``shards=False``: without reading its shards to compare their checksums."""
    return checkpoint_problem(segment, shards) is None


def _gather(segments: list[Segment], name: str, dest: str, schema, fmt, keep: bool = False) -> list[dict[str, Any]]:
    """Move the ``name`` shards of every segment into ``dest`` as one numbered set (``keep``: hard-link them,
    local files only, so the segments stay complete)."""
    sources = []
    for segment in segments:
        listing = posixpath.join(segment.directory, f"{name}.json")
        if FileSystems.exists(listing):
            sources += [(posixpath.join(segment.directory, name, e["file"]), e) for e in read_json(listing)
                        if e["rows"] > 0]
    FileSystems.mkdirs(dest)
    if not sources:
        return finalize_shards([], dest, schema, fmt)
    entries = []
    for number, (path, entry) in enumerate(sources):
        file = shard_name(number, len(sources), fmt)
        if keep:
            os.link(path, posixpath.join(dest, file))
        else:
            rundir.move(path, posixpath.join(dest, file))
        entries.append({"file": file, "rows": entry["rows"], "bytes": entry["bytes"]})
    return entries


def check_error_fraction(facts: dict[tuple[str, str], int], faults: FaultConfig, kept_in: str | None = None) -> None:
    """Refuse to publish a build in which more records than ``faults`` tolerates (``build.error_allowance``, or
    ``build.max_error_fraction`` of the input records) were rejected because a stage raised on them: that is a
    systematic bug, not one odd record."""
    errors = {key: n for (category, key), n in facts.items() if category == "stage_errors"}
    failed = sum(errors.values())
    after_read = sum(n for key, n in errors.items() if not key.startswith("read\t"))  # read and rejected both
    records = facts.get(("funnel_docs", "read"), 0) + sum(n for (c, _), n in facts.items() if c == "rejected") - after_read
    if faults.tolerates(failed, records):
        return
    limit = faults.max_error_fraction
    by = ", ".join(f"{key.replace(chr(9), ' ')} {n:,}" for key, n in sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])))
    where = f"; the completed stages are kept in {kept_in} for --resume" if kept_in else ""
    raise UserError(f"{failed:,} of {records:,} records ({failed / max(records, 1):.2%}) were rejected because a stage "
                    f"raised on them ({by}), more than build.max_error_fraction={limit:g} (and build.error_allowance="
                    f"{faults.error_allowance}); nothing was published"
                    f"{where}. Rerun with --fail-fast to see the first traceback, or raise build.max_error_fraction")


class NothingKept(UserError):
    """A build that read no usable record (every input record rejected, or none there): it publishes nothing and
    the command exits 2 with this one line. ``stats`` is what stats.json would have said (the counts balance)."""

    def __init__(self, message: str, stats: dict[str, Any]) -> None:
        super().__init__(message)
        self.stats = stats


def check_something_kept(stats: dict[str, Any], segments: list[Segment], kept_in: str | None = None) -> None:
    """Refuse to publish a build in which no input record became a document that a stage could keep or remove:
    inputs that hold no record, or whose every record was rejected (a wrong ``--text-field``, a file that is not
    JSON Lines). That is a mistake in naming the input, not a corpus: nothing is published (a previous build in
    the run directory stays whole) and the one line names the main reasons, one rejected record's detail and what
    to do. A build whose documents were all *removed* by stages is published: what removed them is the config's
    decision, in removed/ with the reasons (``format_summary`` warns)."""
    a = stats["accounting"]
    if a["kept"] or a["removed"]:
        return
    where = f"; the completed stages are kept in {kept_in}" if kept_in else ""
    if not a["input"]:
        skipped = {key.removeprefix("warc_skipped_"): n for key, n in stats.get("edits", {}).get("read", {}).items()
                   if key.startswith("warc_skipped_") and n}
        if skipped:  # a WET or WAT file: every record skipped, none an HTTP response (pipeline/web.py)
            kinds = ", ".join(f"{kind} {n:,}" for kind, n in sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0])))
            raise NothingKept(f"the WARC inputs hold {sum(skipped.values()):,} records and none is an HTTP response "
                              f"({kinds}); nothing was published{where}. corpusforge reads WARC response records: "
                              "give the crawl's .warc.gz files, not its WET or WAT extracts", stats)
        raise NothingKept(f"the inputs hold no records (every file is empty or blank); nothing was published{where}. "
                          "Check that --input / inputs[].path name the files you meant", stats)
    reasons = sorted(stats["rejected"]["reasons"].items(), key=lambda kv: (-kv[1], kv[0]))
    top = reasons[0][0]
    by = ", ".join(f"{reason} {n:,}" for reason, n in reasons[:4]) + (", ..." if len(reasons) > 4 else "")
    example = _rejected_example(segments, top)
    advice = rejection_advice(top)
    raise NothingKept(f"every one of the {a['input']:,} input records was rejected ({by}{example}); nothing was "
                      f"published{where}. {advice[:1].upper()}{advice[1:]}", stats)


def nothing_read(facts: dict[tuple[str, str], int]) -> bool:
    """Whether every input record was rejected (or there was none): nothing removed, and the rejections are all
    the input records (those a stage raised on after reading were counted as read too)."""
    if any(category == "removed" and n for (category, _), n in facts.items()):
        return False
    after_read = sum(n for (category, key), n in facts.items() if category == "stage_errors" and not key.startswith("read\t"))
    return facts.get(("funnel_docs", "read"), 0) == after_read


def _rejected_example(segments: list[Segment], reason: str) -> str:
    """``"; e.g. <path> record <position>: <detail>"`` of the first rejected record with ``reason``, or ""."""
    for segment in segments:
        listing = posixpath.join(segment.directory, "rejected.json")
        if not FileSystems.exists(listing):
            continue
        for entry in read_json(listing):
            if not entry["rows"]:
                continue
            path = posixpath.join(segment.directory, "rejected", entry["file"])
            for row in iter_rows_of(path, ["path", "position", "reason", "detail"], REJECTED_SCHEMA):
                if row["reason"] == reason:
                    detail = f": {_printable(row['detail'])}" if row["detail"] else ""
                    # a stage_error after reading names the document's id, position -1 (README, rejected/)
                    where = f" record {row['position']}" if row["position"] >= 0 else ""
                    return f"; e.g. {_printable(row['path'])}{where}{detail}"
    return ""


def _printable(text: str) -> str:
    """``text`` with what would break the one line (a newline in a file name or an id, U+2028) escaped."""
    return text if text.isprintable() else repr(text)[1:-1]


def _run_secret(work_dir: str, checkpoint: bool) -> str:
    """One random secret per build (the PII salt when ``pii.hash_salt`` is empty), so every segment hashes
    alike. With stage checkpoints it is kept beside them, owner-only, and goes with them: a resumed build
    hashes like the stages it skips. It is never written anywhere else."""
    path = posixpath.join(work_dir, rundir.RUN_SECRET)
    if checkpoint and FileSystems.exists(path):
        return read_bytes(path).decode("ascii")
    secret = secrets.token_hex(16)
    if checkpoint:
        make_private_dir(work_dir)
        write_bytes_atomic(path, secret.encode("ascii"), private=True)
    return secret


def check_remote_paths(config: BuildConfig, options) -> None:
    """Workers of a remote runner cannot see this machine's disk: refuse local paths up front."""
    all_options = options.get_all_options()
    runner = str(all_options.get("runner") or config.beam.runner)
    loopback = all_options.get("environment_type") == "LOOPBACK"
    if not any(r in runner for r in REMOTE_RUNNERS) or loopback or all_options.get("dry_run"):
        return
    local = [p for p in [config.output.run_dir, *(i.path for i in config.inputs)] if "://" not in p]
    if local:
        raise UserError(f"{runner} workers cannot read or write local paths ({', '.join(local)}); use a shared "
                        "filesystem such as gs://bucket/... for inputs and output.run_dir")


@dataclasses.dataclass
class BuildResult:
    run_dir: str
    stats: dict[str, Any]
    manifest: dict[str, Any]
    warnings: list[str] = dataclasses.field(default_factory=list)  # printed as warning: lines on stderr


def run_build(config: BuildConfig, beam_args: list[str] | None = None, out=None, resume: bool = False,
              progress: bool = True, keep_checkpoints: bool = False, metrics_table: bool = True) -> BuildResult:
    """Run the build described by ``config``; returns its stats and manifest, or raises.

    With ``output.stage_checkpoints`` each stage runs as its own Beam pipeline and leaves its output in
    ``RUN/.checkpoints``; ``resume=True`` then skips every stage whose checkpoint is complete and was made
    with the same configuration. ``progress`` shows live progress on stderr (``corpusforge.core.progress``); the
    runner's Beam metrics are summed over the pipelines run into ``stats["metrics"]``. ``keep_checkpoints``
    (with stage checkpoints, local run directory) leaves ``RUN/.checkpoints`` whole after a successful build, its
    shards linked into the outputs rather than moved, so another build can start from its stages
    (``corpusforge.ablate`` does); the caller deletes it. ``metrics_table=False`` leaves the Beam metrics out of
    the printed summary (they are in ``stats.json`` either way; the demo keeps its output short).
    """
    out = out or sys.stdout
    run_dir = config.output.run_dir = rundir.check_run_dir(config.output.run_dir)  # never /, ~, cwd or above
    # The inputs are listed once (readers.one_listing): an input file deleted, or turned into a folder, while the
    # build runs changes nothing of what it reads and reports (a later listing found "no files" and failed it).
    with one_listing():
        # Everything that can be checked is checked before any output is touched.
        # an input folder that holds the run directory: said before listing it (whose own refusals, a file of
        # unknown format among the run's, would hide the reason); a glob that reaches into it: from its matches
        rundir.check_outside_inputs(run_dir, [(spec.path, []) for spec in config.inputs])
        rundir.check_outside_inputs(run_dir, [(spec.path, listed) for spec, listed in check_inputs(config.inputs)])
        enabled_stages(config)
        options = pipeline_options(config.beam, beam_args)  # before any output exists: a mistyped flag stops here
        with run_lock(run_dir, "build"):  # one writer per run directory
            try:
                return _build(config, run_dir, options, out, resume, progress, keep_checkpoints, metrics_table)
            except Exception as exc:  # a full disk inside a Beam worker: one line naming the run directory
                resource = resource_error(exc, run_dir)
                if resource is None:
                    raise
                raise resource from exc


def _build(config: BuildConfig, run_dir: str, options, out, resume: bool, progress: bool,
           keep_checkpoints: bool = False, metrics_table: bool = True) -> BuildResult:
    rundir.prepare_outputs(run_dir, OUTPUTS, config.output.overwrite)
    for note in rundir.clean_leftovers(run_dir):  # we hold the lock: no live build owns them
        print(note, file=out, flush=True)
    checkpoint = config.output.stage_checkpoints
    keep = keep_checkpoints and checkpoint and "://" not in run_dir
    # The working directory is recorded in the marker before it is made: only a recorded one is ever deleted (a
    # folder of the user's that is merely named .checkpoints is refused, not reused or deleted).
    work_dir = rundir.make_scratch(run_dir, rundir.CHECKPOINTS if checkpoint else None, prefix=".tmp-build-", private=True)
    if not resume and checkpoint:
        rundir.delete(work_dir)
        work_dir = rundir.make_scratch(run_dir, rundir.CHECKPOINTS, private=True)
    segments = plan_segments(config, work_dir, checkpoint)
    run_secret = _run_secret(work_dir, checkpoint)
    dry_run = bool(options.get_all_options().get("dry_run"))
    runner = str(options.get_all_options().get("runner") or config.beam.runner).rsplit(".", 1)[-1]
    check_remote_paths(config, options)
    # The model files as they are when the build starts (what the workers load), for the manifest; a dry run
    # reads no data, so it does not read them either.
    models = [] if dry_run else [m for stage, section in _sections(config) for m in stage.model_files(section)]
    started = time.time()
    metrics = None
    first = 0
    while resume and first < len(segments):
        problem = checkpoint_problem(segments[first])
        if problem is not None:
            if FileSystems.exists(segments[first].marker) and problem != ANOTHER_CONFIGURATION:
                print(f"resuming {run_dir}: the checkpoint of stage {'+'.join(segments[first].stages) or 'read'} is "
                      f"not whole ({problem}); rebuilding from there", file=out, flush=True)
            break
        first += 1
    if resume and first:
        print(f"resuming {run_dir}: {', '.join('+'.join(s.stages) or 'read' for s in segments[:first])} "
              f"already complete", file=out, flush=True)
    changed = changed_files(segments[first]) if resume and first < len(segments) else []
    if changed:
        print(f"resuming {run_dir}: {', '.join(changed)} changed since stage {'+'.join(segments[first].stages) or 'read'} "
              "was checkpointed; rebuilding from there", file=out, flush=True)
    if not dry_run:  # a build that would fill its disk hours in says so before it starts (pipeline/disk_need.py)
        text_bytes = input_text_bytes(config.inputs)
        need = disk_need(config, text_bytes, spills_text(config), shuffle_dir(config, segments[0]) is not None,
                         len(segments))
        warning = disk_warning(run_dir, need, text_bytes)
        if warning:
            print(warning, file=out, flush=True)
    print(f"building {run_dir} with {runner} ...", file=out, flush=True)
    for segment in segments[first:]:
        if checkpoint and segment.index:  # the shards it reads are as the stage before wrote them
            check_checkpoint(segments[segment.index - 1], ("docs",))
        rundir.delete(segment.directory)
        make_private_dir(work_dir)  # owner-only: it holds text from before the PII stage (spill, checkpoints)
        make_private_dir(segment.directory)
        seg_started = time.time()
        shown = build_progress(config, segment.index, segment.stages, len(segments), work_dir, options,
                               enabled=progress and not dry_run)
        try:
            previous = segments[segment.index - 1] if segment.index else None
            # beam_pipeline: Beam's temporary directory goes even when building the graph raises;
            # memoized_dofn_specs: Beam inspects each DoFn ~9 times, once is enough (~1 s of start-up);
            # document_coders: documents cross stage boundaries as their fields, not pickled, annotations as
            # rows of the fields the stages declare (document_coder, annotation_rows);
            # spilling_to: the shuffles of a build that spills wait on local disk, not in memory (disk_grouping)
            with beam_pipeline(options) as pipeline, memoized_dofn_specs(), \
                    document_coders(Rows.of_schemas(segment.schemas)), \
                    spilling_to(shuffle_dir(config, segment), partitions_for(input_bytes(config.inputs))):
                segment_pipeline(pipeline, config, segment, previous, segment is segments[-1], progress=shown.directory,
                                 run_secret=run_secret)
                with shown:
                    result = run_pipeline(pipeline)
                    if dry_run:  # Dataflow's --dry_run builds and validates the job graph without running it
                        print(f"dry run: the job graph of {'+'.join(segment.stages) or 'read'} was built and "
                              f"validated by {runner}; nothing was run", file=out, flush=True)
                        rundir.delete(work_dir)
                        return BuildResult(run_dir, {}, {})
                    result.wait_until_finish()
            metrics = merge_metrics(metrics, runner_metrics(result))
            # its lists read (read_list: a damaged one stops the build here, its work and spilled text cleaned up)
            _finish_segment(segment, time.time() - seg_started, checked=checkpoint)
        except BaseException:
            close_readers()
            if not checkpoint:
                rundir.delete(work_dir)
            else:
                rundir.delete(segment.spill_dir)  # spilled text is never kept after a build ends
                print(f"stage {'+'.join(segment.stages)} failed; completed stages are kept in {work_dir}: "
                      "rerun with --resume to continue from there", file=out, flush=True)
            raise
        if checkpoint:
            print(f"  stage {'+'.join(segment.stages) or 'read'} done in {time.time() - seg_started:.1f} s "
                  "(checkpointed)", file=out, flush=True)
    wall = time.time() - started

    if checkpoint:  # the shards published and the lists read are as their stages wrote them
        for segment in segments:
            published = ("docs", "removed", "rejected") if segment is segments[-1] else ("removed", "rejected")
            check_checkpoint(segment, published)
    facts: dict[tuple[str, str], int] = {}
    try:  # a build that stops here (a damaged facts.json, too many errors) leaves no work directory, as above
        for segment in segments:
            # checkpointed: check_checkpoint compared it with the marker above (older checkpoints have no LISTS_CHECK)
            counts = read_json(posixpath.join(segment.directory, "facts.json")) if checkpoint else \
                read_list(segment.directory, "facts.json")
            for (category, key), value in counts:
                facts[(category, key)] = facts.get((category, key), 0) + value
        check_error_fraction(facts, config.build, work_dir if checkpoint else None)
        if nothing_read(facts):  # before any shard is gathered: then no document reached clean/
            stage_names = [name for segment in segments for name in segment.stages]
            check_something_kept(assemble_stats(list(facts.items()), stage_names, 0, time.time() - started,
                                                metrics=metrics), segments, work_dir if checkpoint else None)
    except UserError:
        if not checkpoint:
            rundir.delete(work_dir)
        raise
    # one rejected record's detail for the summary (missing_text: the fields the records have), read before
    # _gather moves the segments' rejected shards
    examples = {reason: _rejected_example(segments, reason) for reason in WHOLE_INPUT_REASONS
                if facts.get(("rejected", reason))}
    rejections = {key: n for (category, key), n in facts.items() if category == "rejected" and n}
    top = min(rejections, key=lambda reason: (-rejections[reason], reason)) if rejections else None
    top_example = examples.get(top) or (_rejected_example(segments, top) if top else "")  # for loss_warning
    final = rundir.make_scratch(run_dir, prefix=".tmp-final-", private=True)
    fmt = config.output.shard_format
    schemas = shard_schemas(config)
    manifest_shards = {"clean": _gather(segments[-1:], "docs", posixpath.join(final, "clean"), schemas["docs"], fmt, keep)}
    if config.output.write_removed:
        manifest_shards["removed"] = _gather(segments, "removed", posixpath.join(final, "removed"), schemas["removed"], fmt, keep)
    if config.output.write_rejected:
        manifest_shards["rejected"] = _gather(segments, "rejected", posixpath.join(final, "rejected"), REJECTED_SCHEMA, fmt, keep)
    kept_rows = sum(s["rows"] for s in manifest_shards["clean"])
    stage_names = [name for segment in segments for name in segment.stages]
    stats = assemble_stats(list(facts.items()), stage_names, kept_rows, wall, metrics=metrics)
    if checkpoint:
        stats["timing"]["stage_seconds"] = {"+".join(s.stages): read_json(s.marker)["seconds"] for s in segments}
    names = names_as_written(config, run_secret) or (lambda name: name)  # file names holding PII are never written in clear
    manifest = {
        "corpusforge_version": __version__,
        "created_unix": int(started),
        "shards": manifest_shards["clean"],
        "rows": kept_rows,
        "bytes": sum(s["bytes"] for s in manifest_shards["clean"]),
        "format": {"name": fmt.name, "compression": fmt.codec},
        "schema": {f.name: str(f.type) for f in schemas["docs"]},
        # The exact Arrow schema of each output (base64 IPC): JSON Lines shards carry none of their own.
        "arrow_schemas": {name: base64.b64encode(schemas[key].serialize().to_pybytes()).decode("ascii")
                          for name, key in (("clean", "docs"), ("removed", "removed"), ("rejected", "rejected"))},
        "stages": stage_names,
        "config": _public_config(config, names),  # secrets (pii.hash_salt) as "set" and a fingerprint, never in clear
        "models": models,
        "versions": _versions(),
        "input_files": input_files(config.inputs, names),  # every file the inputs named, as read (or why not)
    }
    manifest["corpus_fingerprint"] = rundir.corpus_fingerprint(posixpath.join(final, "clean"))
    write_json(posixpath.join(final, "manifest.json"), manifest)
    write_json(posixpath.join(final, "stats.json"), stats)
    write_card(final, run_dir if _tokens_fresh(run_dir, manifest["corpus_fingerprint"]) else None)
    marker, retire = rundir.corpus_marker(run_dir, final, OUTPUTS, manifest["corpus_fingerprint"])
    rundir.swap_in(run_dir, final, OUTPUTS, marker, retire)  # the old build stays whole until this succeeds
    if not keep:
        rundir.delete(work_dir)
    notes = ["  " + note for stage, section in _sections(config)
             if section.enabled and (note := stage.summary_note(section)) is not None]
    print(format_summary(stats, notes, metrics=metrics_table, rejected_examples=examples), file=out, flush=True)
    # the summary above shows the counts; a build that lost most of its input also says so on one plain line, on
    # stderr with the other warnings, so that a script or a reader who skims it does not take the build for a corpus
    warning = loss_warning(stats, top_example)
    warnings = [warning] if warning else []
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr, flush=True)
    return BuildResult(run_dir, stats, manifest, warnings)


def _public_config(config: BuildConfig, names: "Callable[[str], str]") -> dict[str, Any]:
    """``public_dict(config)`` with input paths as ``display_path`` renders them (a file name need not be UTF-8)
    and as ``names`` writes them (a name holding PII hashed)."""
    public = public_dict(config)
    for item in public.get("inputs", []):
        item["path"] = names(display_path(item["path"]))
        if item.get("name"):  # the source name every document carries, filtered the same way
            item["name"] = names(item["name"])
    return public


def _tokens_fresh(run_dir: str, fingerprint: str) -> bool:
    """RUN/tokens was made from a clean/ equal to the new one (an identical rebuild): the card keeps it."""
    marker = rundir.read_marker(run_dir) or {}
    return marker.get("derived", {}).get("tokens") == fingerprint and "tokens" in marker.get("outputs", {})


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for package in ("apache-beam", "pyarrow", "datasketch", "presidio-analyzer", "tokenizers", "fasttext-wheel", "torch"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            pass
    return out
