"""Re-decide a built run's quality filtering under new thresholds, from the values its build stored.

    corpusforge rethreshold RUN --set quality.gopher.min_words=80 --out RUN2

The heuristic rules' measured values (``annotations.quality`` of clean documents and of documents a later quality
step removed, ``details.quality`` of documents the rules removed) are decided again with ``decide.py``; no model
runs and no input is read. A new run directory is written (clean/, removed/, rejected/, manifest.json,
stats.json) and swapped in whole, as ``build`` publishes.

What it cannot redo, and says so: the stages after quality (dedup, PII) decided on the old quality set. A clean
document the new thresholds remove leaves its duplicates removed (they keep their dedup reason); a document the
new thresholds let through again (a *revived* one) returns with its removed text (C4's line edits applied again,
scrubbed by the PII stage's ``scrub_removed``), but no dedup or PII decision was made on it. Revival is refused
when a later quality step (toxicity, a classifier) would have scored it, or when its removed text is raw PII.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import posixpath
import time
from collections import Counter
from typing import Any, Iterable

import pyarrow as pa

from corpusforge.core import files, rundir
from corpusforge.core.config_loader import ConfigError, apply_overrides, from_dict, parse_override, public_dict
from corpusforge.core.errors import UserError
from corpusforge.core.run_lock import run_lock
from corpusforge.pipeline.document import annotations_of, struct_value
from corpusforge.pipeline.quality.config import QualityConfig
from corpusforge.pipeline.quality.decide import NotMeasured, decide_heuristics, threshold_keys
from corpusforge.core.dataset_card import CARD, write_card
from corpusforge.core.shard_files import ShardFormat, write_shard
from corpusforge.pipeline.run import output_schema
from corpusforge.pipeline.shards import iter_rows_of, shard_name, shard_paths, stable_hash
from corpusforge.pipeline.stats import length_bucket

OUTPUTS = ("clean", "removed", "rejected", "manifest.json", "stats.json", CARD)
STAGE = "quality"
NOTE = ("dedup and PII decided on the source run's quality set and were not redone: survivors of dedup that quality "
        "now removes leave their duplicates removed; revived documents got no dedup or PII decision")


@dataclasses.dataclass
class RethresholdResult:
    run_dir: str
    kept: int
    newly_removed: int
    revived: int
    reason_changed: int
    stats: dict[str, Any]
    fingerprint: str  # of the new clean/


def new_quality_config(old: dict[str, Any], overrides: list[str]) -> QualityConfig:
    """The run's quality section with ``overrides`` (``quality.gopher.min_words=80``) applied; only thresholds of
    the heuristic rules may change."""
    allowed = threshold_keys(from_dict(QualityConfig, old, "quality"))
    for item in overrides:
        keys, _ = parse_override(item)
        key = ".".join(keys if keys[0] == "quality" else ["quality", *keys])
        if key not in allowed:
            # a misspelt threshold gets its nearest, as every --set does (config_loader), not the ~50 allowed keys
            close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.8)
            choice = f"did you mean {close[0]}?" if close else f"allowed: {', '.join(sorted(allowed))}"
            raise UserError(f"--set {item}: {key} is not a threshold of the heuristic rules that rethreshold can "
                            f"re-decide; {choice}")
    normalized = [item if item.startswith("quality.") else f"quality.{item}" for item in overrides]
    try:
        return from_dict(QualityConfig, apply_overrides({"quality": old}, normalized)["quality"], "quality")
    except ConfigError as exc:
        raise UserError(str(exc)) from None


def rethreshold(run_dir: str, overrides: list[str], out_dir: str, overwrite: bool = False, out=None) -> RethresholdResult:
    run_dir, out_dir = rundir.check_run_dir(run_dir), rundir.check_run_dir(out_dir)
    if posixpath.abspath(run_dir) == posixpath.abspath(out_dir):
        raise UserError("--out must be another run directory: rethreshold never rewrites the run it reads")
    manifest_path = files.join(run_dir, "manifest.json")
    if not files.exists(manifest_path):
        raise UserError(f"{run_dir} has no manifest.json; build it first (corpusforge build)")
    manifest = files.read_json(manifest_path)
    old = manifest["config"]["quality"]
    old_cfg = from_dict(QualityConfig, old, "quality")
    if not (old_cfg.enabled and old_cfg.store_values):
        raise UserError(f"{run_dir} was built without stored quality values (quality.enabled and quality.store_values "
                        "must be true); rebuild it to change thresholds")
    if not overrides:
        raise UserError("nothing to change: give at least one --set quality.<rule>.<threshold>=VALUE")
    if not shard_paths(files.join(run_dir, "removed")):
        raise UserError(f"{run_dir} has no removed/ shards (output.write_removed was false): the documents the rules "
                        "removed cannot be re-decided; rebuild it instead")
    cfg = new_quality_config(old, overrides)
    with run_lock(out_dir, "rethreshold"):
        rundir.prepare_outputs(out_dir, OUTPUTS, overwrite)
        final = rundir.make_scratch(out_dir, prefix=".tmp-final-", private=True)
        try:
            result = _write(run_dir, manifest, old_cfg, cfg, overrides, final, out_dir)
        except BaseException:
            rundir.delete(final)
            raise
        marker, retire = rundir.corpus_marker(out_dir, final, OUTPUTS, result.fingerprint)
        rundir.swap_in(out_dir, final, OUTPUTS, marker, retire)
    if out is not None:
        print(f"{out_dir}: kept {result.kept:,}; quality now removes {result.newly_removed:,} more clean documents, "
              f"revives {result.revived:,}, gives {result.reason_changed:,} removed documents another reason\n"
              f"note: {NOTE}", file=out, flush=True)
    return result


def _write(run_dir: str, manifest: dict, old_cfg: QualityConfig, cfg: QualityConfig, overrides: list[str],
           final: str, out_dir: str) -> RethresholdResult:
    started = time.time()
    clean_dir, removed_dir = files.join(run_dir, "clean"), files.join(run_dir, "removed")
    clean_schema, removed_schema = _schema_of(run_dir, "clean"), _schema_of(run_dir, "removed")
    recorded = manifest.get("format") or {}
    fmt = ShardFormat(recorded.get("name", "arrow"), recorded.get("compression", "auto"))  # the source run's
    kept: list[dict] = []
    removed: list[dict] = []
    counts = Counter()
    edits: Counter = Counter()
    for row in _rows(clean_dir, clean_schema):
        annotations = annotations_of(row["annotations"])
        reason = _decide(annotations.get("quality"), cfg, row["id"])
        if reason is None:
            kept.append(row)
            continue
        counts["newly_removed"] += 1
        removed.append({"id": row["id"], "source": row["source"], "stage": STAGE, "reason": reason,
                        "details": struct_value({"quality": annotations["quality"]}, removed_schema.field("details").type),
                        "text": row["text"], "metadata": row["metadata"], "annotations": row["annotations"]})
    for row in _rows(removed_dir, removed_schema):
        if row["stage"] != STAGE:
            removed.append(row)
            continue
        details, annotations = annotations_of(row["details"]), annotations_of(row["annotations"])
        by_rules = details.get("quality") is not None  # the heuristic rules removed it (else a model step did)
        values = details.get("quality") if by_rules else annotations.get("quality")
        if values is None:  # language ID removed it before the rules measured anything
            removed.append(row)
            continue
        reason = _decide(values, cfg, row["id"])
        if reason is None and by_rules:
            counts["revived"] += 1
            kept.append(_revive(row, annotations, values, cfg, clean_schema, edits))
        elif reason is not None and reason != row["reason"]:
            counts["reason_changed"] += 1
            removed.append({**row, "reason": reason,
                            "details": struct_value({"quality": values}, removed_schema.field("details").type)})
        else:
            removed.append(row)
    if counts["revived"]:
        _check_revival(old_cfg, manifest, counts["revived"])
    target = int(manifest["config"]["output"]["shard_target_mb"] * 1e6)
    shards = {"clean": _write_shards(files.join(final, "clean"), clean_schema, kept, _kept_key, target, fmt),
              "removed": _write_shards(files.join(final, "removed"), removed_schema, removed, _removed_key, target, fmt)}
    rejected = files.join(run_dir, "rejected")
    if files.exists(rejected):  # unchanged: the same files
        files.mkdirs(files.join(final, "rejected"))
        for path in shard_paths(rejected):
            files.write_bytes_atomic(files.join(final, "rejected", posixpath.basename(path)), files.read_bytes(path))
    fingerprint = rundir.corpus_fingerprint(files.join(final, "clean"))
    stats = _stats(files.read_json(files.join(run_dir, "stats.json")), kept, removed, edits, counts, overrides,
                   run_dir, time.time() - started)
    new_manifest = {**manifest, "created_unix": int(started), "shards": shards["clean"],
                    "rows": sum(s["rows"] for s in shards["clean"]), "bytes": sum(s["bytes"] for s in shards["clean"]),
                    "corpus_fingerprint": fingerprint,
                    "config": {**manifest["config"], "quality": public_dict(cfg)},
                    "rethreshold": {"from": run_dir, "from_fingerprint": manifest.get("corpus_fingerprint"),
                                    "set": list(overrides), "note": NOTE}}
    files.write_json(files.join(final, "manifest.json"), new_manifest)
    files.write_json(files.join(final, "stats.json"), stats)
    write_card(final)  # load_dataset(RUN2) is the re-decided corpus
    return RethresholdResult(out_dir, len(kept), counts["newly_removed"], counts["revived"], counts["reason_changed"],
                             stats, fingerprint)


def _decide(values: dict | None, cfg: QualityConfig, doc_id: str) -> str | None:
    if values is None:
        raise UserError(f"document {doc_id} has no stored quality values; rebuild the run to change thresholds")
    try:
        return decide_heuristics(values, cfg)
    except NotMeasured as exc:
        raise UserError(f"the source run did not measure quality.{exc} (its build did not need it), so this threshold "
                        "cannot be decided from the stored values; rebuild with the threshold set instead") from None


def _revive(row: dict, annotations: dict, values: dict, cfg: QualityConfig, schema: pa.Schema, edits: Counter) -> dict:
    """A removed row as the clean row the build would have written: C4's line edits applied to its text (the
    removed text is the one before them), the measured values in its annotations."""
    text = row["text"]
    if cfg.c4.enabled:
        from corpusforge.pipeline.quality.rules import c4_edit

        text, counts = c4_edit(text, cfg.c4)
        edits.update(counts)
    return {"id": row["id"], "text": text, "source": row["source"],
            "metadata": row.get("metadata") or "{}",  # a run from before removed/ kept metadata: none
            "annotations": struct_value({**annotations, "quality": values}, schema.field("annotations").type)}


def _check_revival(old_cfg: QualityConfig, manifest: dict, revived: int) -> None:
    later = []
    if old_cfg.toxicity.enabled and old_cfg.toxicity.mode == "filter":
        later.append("quality.toxicity")
    later += [f"quality.classifiers[{c.name}]" for c in old_cfg.classifiers if c.mode != "annotate"]
    if later:
        raise UserError(f"{revived:,} documents the rules removed pass the new thresholds, but {', '.join(later)} never "
                        "scored them (those steps run after the rules); rebuild with the new thresholds instead")
    pii = manifest["config"].get("pii", {})
    if pii.get("enabled") and not pii.get("scrub_removed", True):
        raise UserError(f"{revived:,} documents the rules removed pass the new thresholds, but their removed text was "
                        "not scrubbed of PII (pii.scrub_removed: false); rebuild with the new thresholds instead")


def _schema_of(run_dir: str, name: str) -> pa.Schema:
    schema = output_schema(run_dir, name)
    if schema is None or not pa.types.is_struct(schema.field("annotations").type):
        raise UserError(f"{run_dir}/{name} holds annotations as JSON strings (a run built before typed annotations); "
                        "rebuild it to change thresholds")
    return schema


def _rows(directory: str, schema: pa.Schema) -> Iterable[dict]:
    for path in shard_paths(directory):
        yield from iter_rows_of(path, schema=schema)


def _kept_key(row: dict) -> tuple:
    return row["id"], row["source"], row["text"]


def _removed_key(row: dict) -> tuple:
    return row["stage"], row["id"], row["source"], row["reason"], row["text"]


def _write_shards(directory: str, schema: pa.Schema, rows: list[dict], sort_key, target: int,
                  fmt: ShardFormat) -> list[dict]:
    """Shards as the build lays them out: ``ceil(size / target)`` shards, a row in shard ``hash(id) % n``, each
    shard sorted by the build's key."""
    files.mkdirs(directory)
    size = sum(len(r["text"].encode("utf-8", "surrogatepass")) + len(r["id"]) + 64 for r in rows)
    n = max(1, math.ceil(size / target)) if rows else 1
    parts: list[list[dict]] = [[] for _ in range(n)]
    for row in rows:
        parts[stable_hash(row["id"]) % n].append(row)
    parts = [p for p in parts if p] or [[]]
    entries = []
    for number, part in enumerate(parts):
        name = shard_name(number, len(parts), fmt)
        count, nbytes = write_shard(posixpath.join(directory, name), schema, sorted(part, key=sort_key), fmt)
        entries.append({"file": name, "rows": count, "bytes": nbytes})
    return entries


def _stats(old: dict, kept: list[dict], removed: list[dict], edits: Counter, counts: Counter, overrides: list[str],
           run_dir: str, seconds: float) -> dict:
    """The source run's stats with what rethreshold changed recounted: accounting, removals by stage and reason,
    the funnel from quality on, kept languages and lengths, quality's edits."""
    stats = dict(old)
    by_stage: dict[str, dict] = {}
    for row in removed:
        entry = by_stage.setdefault(row["stage"], {"total": 0, "chars": 0, "reasons": {}})
        entry["total"] += 1
        entry["chars"] += len(row["text"])
        entry["reasons"][row["reason"]] = entry["reasons"].get(row["reason"], 0) + 1
    for entry in by_stage.values():
        entry["reasons"] = dict(sorted(entry["reasons"].items()))
    a = dict(old["accounting"])
    a.update(kept=len(kept), removed=len(removed))
    a["balanced"] = a["input"] == a["kept"] + a["removed"] + a["rejected"]
    if not a["balanced"]:
        raise RuntimeError(f"rethreshold lost count: {a}")
    delta = len(kept) - old["accounting"]["kept"]
    kept_chars = sum(len(r["text"]) for r in kept)
    funnel, after = [], False
    for step in old["funnel"]:
        after = after or step["stage"] == STAGE
        funnel.append({**step, "documents": step["documents"] + delta} if after else step)
    if funnel and after:
        funnel[-1] = {**funnel[-1], "chars": kept_chars}
    languages = Counter(annotations_of(r["annotations"]).get("lang") for r in kept)
    languages.pop(None, None)
    lengths = Counter(str(length_bucket(len(r["text"]))) for r in kept)
    quality_edits = dict(old.get("edits", {}).get(STAGE, {}))
    for key, amount in edits.items():
        quality_edits[key] = quality_edits.get(key, 0) + amount
    stats.update(
        accounting=a, funnel=funnel,
        removed={"total": len(removed), "by_stage": dict(sorted(by_stage.items()))},
        edits={**old.get("edits", {}), **({STAGE: dict(sorted(quality_edits.items()))} if quality_edits else {})},
        languages=dict(sorted(languages.items(), key=lambda kv: (-kv[1], kv[0]))),
        histograms={**old.get("histograms", {}), "length_out": {k: lengths[k] for k in sorted(lengths, key=int)}},
        timing={"wall_seconds": round(seconds, 3), "records_per_second": None, "chars_in": old["timing"].get("chars_in")},
        rethreshold={"from": run_dir, "set": list(overrides), "newly_removed": counts["newly_removed"],
                     "revived": counts["revived"], "reason_changed": counts["reason_changed"], "note": NOTE,
                     "unchanged_from_source": ["sources", "languages_by_stage", "histograms.length_in"]},
    )
    return stats


__all__ = ["RethresholdResult", "new_quality_config", "rethreshold"]
