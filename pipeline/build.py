"""The build: read -> normalize -> quality -> dedup -> pii -> clean Arrow shards, with full accounting.

``run_build`` is what ``corpusforge build`` calls. Everything is written under a temporary directory inside
the run directory and moved into place only when the run succeeded and every record is accounted for.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import posixpath
import sys
import time
import uuid
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipeline import __version__
from pipeline.beam_options import pipeline_options
from pipeline.config import Config, to_dict
from pipeline.document import (DOCUMENT_SCHEMA, REJECTED_SCHEMA, REMOVED_SCHEMA, document_row, rejected_row,
                               removed_row)
from pipeline.errors import UserError
from pipeline.readers import ReadDocuments, check_inputs
from pipeline.shards import WriteShards, finalize_shards, read_json, write_json
from pipeline.stats import (CountFacts, annotation_facts, assemble_stats, document_facts, edit_facts, format_summary,
                            length_facts, rejected_facts, removed_facts)

# (config section, "module:Transform"), in the order they run. Each transform takes its config section.
STAGES = [
    ("normalize", "pipeline.normalize:Normalize"),
    ("quality", "pipeline.quality:Quality"),
    ("dedup", "pipeline.dedup:Dedup"),
    ("pii", "pipeline.pii:ScrubPII"),
]

# manifest.json sits beside clean/ rather than in it, so `pyarrow.dataset.dataset("RUN/clean")` sees only shards.
OUTPUTS = ("clean", "removed", "rejected", "manifest.json", "stats.json")


def enabled_stages(config: Config) -> list[tuple[str, beam.PTransform]]:
    stages = []
    for section, target in STAGES:
        stage_config = getattr(config, section)
        if not stage_config.enabled:
            continue
        module_name, _, class_name = target.partition(":")
        transform = getattr(importlib.import_module(module_name), class_name)
        stages.append((section, transform(stage_config)))
    return stages


def prepare_output(run_dir: str, names: tuple[str, ...], overwrite: bool) -> None:
    """Refuse to replace existing outputs unless asked to; with ``overwrite``, delete them."""
    existing = [posixpath.join(run_dir, n) for n in names if FileSystems.exists(posixpath.join(run_dir, n))]
    if existing and not overwrite:
        raise UserError(f"{run_dir} already holds a build ({', '.join(posixpath.basename(e) for e in existing)}); "
                        "choose another output.run_dir or pass --overwrite")
    if existing:
        FileSystems.delete(existing)
    if not FileSystems.exists(run_dir):
        FileSystems.mkdirs(run_dir)


def _doc_sort_key(doc):
    return (doc.id, doc.source, doc.text)


def _doc_size(doc):
    return len(doc.text.encode("utf-8")) + len(doc.id) + 64


def build_pipeline(pipeline: beam.Pipeline, config: Config, tmp_dir: str) -> list[str]:
    """Wire the build into ``pipeline``; returns the names of the stages that run (for the funnel)."""
    target = int(config.output.shard_target_mb * 1e6)
    docs, rejected = pipeline | "Read" >> ReadDocuments(config.inputs, config.output.max_doc_chars)
    facts = [
        docs | "FactsRead" >> beam.FlatMap(document_facts("read")),
        docs | "FactsLengthIn" >> beam.FlatMap(length_facts("length_in")),
        rejected | "FactsRejected" >> beam.FlatMap(rejected_facts),
    ]
    removed, stage_names = [], []
    for name, transform in enabled_stages(config):
        outputs = docs | name.capitalize() >> transform
        docs = outputs.kept
        stage_names.append(name)
        removed.append(outputs.removed)
        facts.append(docs | f"Facts{name.capitalize()}" >> beam.FlatMap(document_facts(name)))
        if outputs.edits is not None:
            facts.append(outputs.edits | f"FactsEdits{name.capitalize()}" >> beam.FlatMap(edit_facts))
    facts.append(docs | "FactsLengthOut" >> beam.FlatMap(length_facts("length_out")))
    facts.append(docs | "FactsAnnotations" >> beam.FlatMap(annotation_facts))
    removed_all = (removed or [pipeline | "NoRemovals" >> beam.Create([])]) | "FlattenRemoved" >> beam.Flatten()
    facts.append(removed_all | "FactsRemoved" >> beam.FlatMap(removed_facts))

    shard_lists = {
        "clean": docs | "WriteClean" >> WriteShards(
            posixpath.join(tmp_dir, "clean"), DOCUMENT_SCHEMA, document_row, lambda d: d.id, _doc_sort_key,
            _doc_size, target),
    }
    if config.output.write_removed:
        shard_lists["removed"] = removed_all | "WriteRemoved" >> WriteShards(
            posixpath.join(tmp_dir, "removed"), REMOVED_SCHEMA, removed_row, lambda r: r.doc.id,
            lambda r: (r.stage, r.doc.id, r.doc.source, r.reason, r.doc.text), lambda r: _doc_size(r.doc), target)
    if config.output.write_rejected:
        shard_lists["rejected"] = rejected | "WriteRejected" >> WriteShards(
            posixpath.join(tmp_dir, "rejected"), REJECTED_SCHEMA, rejected_row, lambda r: f"{r.path}:{r.position}",
            lambda r: (r.source, r.path, r.position, r.reason), lambda r: len(r.raw) + 64, target)
    for name, shards in shard_lists.items():
        _ = (shards | f"Gather{name.capitalize()}" >> beam.combiners.ToList()
             | f"Save{name.capitalize()}List" >> beam.Map(write_json_list, posixpath.join(tmp_dir, f"{name}-shards.json")))
    _ = (facts | "FlattenFacts" >> beam.Flatten() | "CountFacts" >> CountFacts()
         | "SaveFacts" >> beam.Map(write_json_list, posixpath.join(tmp_dir, "facts.json")))
    return stage_names


def write_json_list(items: list[Any], path: str) -> None:
    write_json(path, items)


@dataclasses.dataclass
class BuildResult:
    run_dir: str
    stats: dict[str, Any]
    manifest: dict[str, Any]


def run_build(config: Config, beam_args: list[str] | None = None, out=sys.stdout) -> BuildResult:
    """Run the build described by ``config``; returns its stats and manifest, or raises."""
    run_dir = config.output.run_dir.rstrip("/")
    # Everything that can be checked is checked before any output is touched.
    check_inputs(config.inputs)
    enabled_stages(config)
    prepare_output(run_dir, OUTPUTS, config.output.overwrite)
    tmp_dir = posixpath.join(run_dir, f".tmp-build-{uuid.uuid4().hex[:12]}")
    FileSystems.mkdirs(tmp_dir)
    options = pipeline_options(config.beam, beam_args)
    started = time.time()
    print(f"building {run_dir} with {config.beam.runner} ...", file=out, flush=True)
    try:
        pipeline = beam.Pipeline(options=options)
        stage_names = build_pipeline(pipeline, config, tmp_dir)
        pipeline.run().wait_until_finish()
    except BaseException:
        FileSystems.delete([tmp_dir])
        raise
    wall = time.time() - started

    facts = [((c, k), v) for (c, k), v in read_json(posixpath.join(tmp_dir, "facts.json"))]
    manifest_shards = {}
    for name, schema in (("clean", DOCUMENT_SCHEMA), ("removed", REMOVED_SCHEMA), ("rejected", REJECTED_SCHEMA)):
        list_path = posixpath.join(tmp_dir, f"{name}-shards.json")
        if FileSystems.exists(list_path):
            manifest_shards[name] = finalize_shards(read_json(list_path), posixpath.join(tmp_dir, name), schema)
    kept_rows = sum(s["rows"] for s in manifest_shards["clean"])
    stats = assemble_stats(facts, stage_names, kept_rows, wall)
    manifest = {
        "corpusforge_version": __version__,
        "created_unix": int(started),
        "shards": manifest_shards["clean"],
        "rows": kept_rows,
        "bytes": sum(s["bytes"] for s in manifest_shards["clean"]),
        "schema": {f.name: str(f.type) for f in DOCUMENT_SCHEMA},
        "stages": stage_names,
        "config": to_dict(config),
        "versions": _versions(),
    }
    write_json(posixpath.join(tmp_dir, "manifest.json"), manifest)
    write_json(posixpath.join(tmp_dir, "stats.json"), stats)
    for name in OUTPUTS:
        source = posixpath.join(tmp_dir, name)
        if FileSystems.exists(source):
            FileSystems.rename([source], [posixpath.join(run_dir, name)])
    FileSystems.delete([tmp_dir])
    print(format_summary(stats), file=out, flush=True)
    return BuildResult(run_dir, stats, manifest)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for package in ("apache-beam", "pyarrow", "datasketch", "presidio-analyzer", "tokenizers", "fasttext-wheel", "torch"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            pass
    return out


def load_manifest(run_dir: str) -> dict[str, Any]:
    path = posixpath.join(run_dir, "manifest.json")
    if not FileSystems.exists(path):
        raise UserError(f"{run_dir} has no build (no manifest.json); run `corpusforge build` first")
    return json.loads(FileSystems.open(path).read().decode("utf-8"))
