"""Everything the report shows, gathered from a run directory into one ``RunData``.

Exact counts come from ``stats.json``, the tokenizer's ``report.json`` and the trainer's ``metrics.jsonl``.
Distributions that need the records themselves (quality scores, duplicate cluster sizes, sample documents)
come from streaming the shards, reading at most ``sample_rows`` rows per shard directory (every k-th row, so
the sample spreads over all shards and ids), so the report stays fast on a large run. Each part is optional:
a run without training simply has no ``training``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import posixpath
from collections import Counter
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from corpusforge.core.errors import UserError
from corpusforge.core.faults import STAGE_ERROR
from corpusforge.core.shard_files import open_shard
from corpusforge.pipeline.report.overlap import MAX_CHARS, Overlap, shared_text
from corpusforge.pipeline.report.sources import SourceCounts, source_funnel
from corpusforge.pipeline.report.values import as_dict, flat_items, numeric_values
from corpusforge.pipeline.shards import shard_paths
from corpusforge.pipeline.stage import registered_stages

# Keys under which a dedup removal may name the document that was kept in its place.
SURVIVOR_KEYS = ("survivor_id", "survivor", "duplicate_of", "kept_id")


@dataclasses.dataclass
class Sample:
    """A stored record shown to a person: text truncated to ``text`` (``chars`` is the full length)."""

    id: str
    source: str
    text: str
    chars: int
    details: dict[str, Any]


@dataclasses.dataclass
class ReasonSamples:
    stage: str
    reason: str
    count: int
    samples: list[Sample]


@dataclasses.dataclass
class NearDuplicate:
    """A removed duplicate beside its survivor (``None`` when the survivor is in neither clean/ nor removed/),
    with the shared text marked on both."""

    reason: str
    removed: Sample
    survivor: Sample | None
    similarity: float | None
    overlap: Overlap | None


@dataclasses.dataclass
class Coverage:
    """How much of a shard directory the sampled distributions saw."""

    rows_total: int = 0
    rows_read: int = 0

    @property
    def complete(self) -> bool:
        return self.rows_read >= self.rows_total


@dataclasses.dataclass
class RunData:
    run_dir: str
    stats: dict[str, Any] | None = None
    manifest: dict[str, Any] | None = None
    # value key -> {"kept": [...], "removed": [...], "other": [...]} from the sampled annotations and details:
    # removed = by the stage that decides on the value, other = removed by another stage
    values: dict[str, dict[str, list[float]]] = dataclasses.field(default_factory=dict)
    sources: dict[str, SourceCounts] = dataclasses.field(default_factory=dict)
    sources_exact: bool = True  # removed and rejected per source counted from the shards (not differences)
    kept_samples: list[Sample] = dataclasses.field(default_factory=list)
    near_duplicates: list[NearDuplicate] = dataclasses.field(default_factory=list)
    removed_languages: Counter = dataclasses.field(default_factory=Counter)
    cluster_sizes: Counter = dataclasses.field(default_factory=Counter)  # documents per cluster -> clusters
    dedup_rows_read: int = 0
    dedup_rows_total: int = 0
    removed_samples: list[ReasonSamples] = dataclasses.field(default_factory=list)
    rejected_samples: list[ReasonSamples] = dataclasses.field(default_factory=list)
    clean_coverage: Coverage = dataclasses.field(default_factory=Coverage)
    removed_coverage: Coverage = dataclasses.field(default_factory=Coverage)
    tokenizer: dict[str, Any] | None = None
    tokens: dict[str, Any] | None = None
    training: "Training | None" = None

    @property
    def empty(self) -> bool:
        return self.stats is None and self.tokenizer is None and self.tokens is None and self.training is None


@dataclasses.dataclass
class Training:
    train: list[dict[str, Any]]
    val: list[dict[str, Any]]
    config: dict[str, Any] | None  # model/config.json, written when training finished


# ------------------------------------------------------------------------------------------------ files
def _join(*parts: str) -> str:
    return posixpath.join(*parts)


def _exists(path: str) -> bool:
    return FileSystems.exists(path)


def _read_text(path: str) -> str:
    try:
        with FileSystems.open(path) as f:
            return f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path}: {exc}") from None


def read_json_file(path: str) -> Any | None:
    """The JSON at ``path``, or None when absent; a broken file is an error the user can act on."""
    if not _exists(path):
        return None
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON ({exc}); rerun the step that writes it") from None


def read_metrics(path: str) -> list[dict[str, Any]] | None:
    """``metrics.jsonl`` records; a cut last line (training still writing) is skipped, any other bad line is an error."""
    if not _exists(path):
        return None
    lines = [line for line in _read_text(path).splitlines() if line.strip()]
    records = []
    for number, line in enumerate(lines, 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if number == len(lines):
                break
            raise UserError(f"{path} line {number} is not valid JSON ({exc}); rerun training or fix the file") from None
    return records


# ----------------------------------------------------------------------------------------------- shards
def _batches(directory: str) -> Iterator[pa.RecordBatch]:
    for path in shard_paths(directory):
        yield from open_shard(path).batches()  # any output format; a foreign or cut file is a UserError


def _count_rows(directory: str) -> int:
    return sum(open_shard(path).num_rows for path in shard_paths(directory))  # Parquet: its footer only


def _has_shards(directory: str) -> bool:
    return _exists(directory) and bool(shard_paths(directory))


def _strided(offset: int, rows: int, stride: int) -> np.ndarray:
    """Positions ``i`` in ``[offset, offset + rows)`` with ``i % stride == 0``, relative to ``offset``."""
    first = (-offset) % stride
    return np.arange(first, rows, stride, dtype=np.int64)


def value_stage(key: str) -> str:
    """The stage that decides on a stored value (``Stage.decides_value``; the histograms split removals by it):
    the first that claims it, else the one that decides on values no stage claims."""
    stages = registered_stages()
    owner = next((s for s in stages if s.decides_value(key)), None) or next(s for s in stages
                                                                           if s.decides_other_values)
    return owner.section


def _add_values(data: "RunData", values: Iterator[tuple[str, float, str]]) -> None:
    for key, value, side in values:
        data.values.setdefault(key, {"kept": [], "removed": [], "other": []})[side].append(value)


def _kept_values(annotations: dict[str, Any]) -> Iterator[tuple[str, float, str]]:
    return ((key, value, "kept") for key, value in numeric_values(annotations))


def _removal_values(annotations: dict[str, Any], details: dict[str, Any], stage: str) -> Iterator[tuple[str, float, str]]:
    """A removed record's values: its details' are what the removing stage measured (removed); an annotation
    counts as removed when ``stage`` is the one that decides on it, else as other (a document that passed that
    rule and went later). A removal's details are not values where its stage says so (``Stage.details_are_values``:
    a dedup removal's describe its cluster), and a ``score`` detail repeats the ``<name>_score`` annotation."""
    owner = {s.section: s for s in registered_stages()}.get(stage)
    measured = {} if owner is not None and not owner.details_are_values else dict(numeric_values({k: v for k, v in details.items() if k != "score"}))
    for key, value in numeric_values(annotations):
        if key not in measured:
            yield key, value, "removed" if value_stage(key) == stage else "other"
    for key, value in measured.items():
        yield key, value, "removed"


def _truncate(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars]


class _Picker:
    """Picks ``k`` records per wanted key, spread evenly over that key's ``count`` occurrences in shard order."""

    def __init__(self, wanted: dict[tuple[str, ...], int], k: int):
        self.targets = {key: set(np.linspace(0, max(count, 1) - 1, num=min(k, max(count, 1))).round().astype(int).tolist())
                        for key, count in wanted.items()}
        self.seen = dict.fromkeys(wanted, 0)
        self.k = k

    def done(self) -> bool:
        return all(not t for t in self.targets.values())

    def positions(self, key_columns: list[pa.Array]) -> dict[tuple[str, ...], np.ndarray]:
        """Row positions of this batch to take, per key."""
        out = {}
        for key, target in self.targets.items():
            mask = None
            for column, value in zip(key_columns, key):
                m = pc.equal(column, value)
                mask = m if mask is None else pc.and_(mask, m)
            rows = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
            seen = self.seen[key]
            self.seen[key] = seen + len(rows)
            if not target or not len(rows):
                continue
            ordinals = seen + np.arange(len(rows))
            chosen = [i for i, o in enumerate(ordinals.tolist()) if o in target]
            # Counts from stats.json may be off if the shards were edited; never ask for more than k.
            for i in chosen:
                target.discard(int(ordinals[i]))
            if chosen:
                out[key] = rows[chosen]
        return out


def _scrubbed_prefix(text: str, chars: int, shown: "Shown") -> str:
    """The first ``chars`` characters of ``text`` scrubbed, scrubbing only a prefix twice that long (a long
    document stays cheap). An entity cut at the prefix's end lies in the part thrown away, unless masking
    shrank the prefix below ``chars`` plus a margin: then the whole text is scrubbed."""
    if len(text) > 2 * chars + 200:
        scrubbed = shown.text(text[:2 * chars + 200])
        if len(scrubbed) >= chars + 200:
            return _truncate(scrubbed, chars)
    return _truncate(shown.text(text), chars)


def _sample(row: dict[str, Any], text_chars: int, shown: "Shown", details_field: str = "details") -> Sample:
    details = as_dict(row.get(details_field))
    text = row.get("text") or ""
    # Scrubbed before it is cut: an address cut in half would no longer be recognised.
    return Sample(id=shown.text(str(row.get("id", ""))), source=str(row.get("source", "")),
                  text=_scrubbed_prefix(text, text_chars, shown), chars=len(text),
                  details=shown.details(dict(flat_items(details))))


class Shown:
    """Passes every record text the page shows (sample texts, ids, details, rejected previews, tokens) through
    each stage's ``Stage.display_filter``, with the stage's config section from the manifest.

    report.html is the file people pass around, so it never shows PII in clear, even when removed/ holds raw
    text (``pii.scrub_removed: false``) or the build ran without the PII stage."""

    def __init__(self, manifest: dict[str, Any] | None):
        self.manifest = manifest
        sections = (manifest or {}).get("config") or {}
        self._filters = [f for stage in registered_stages()
                         if (f := stage.display_filter(sections.get(stage.section))) is not None]

    def text(self, value: str) -> str:
        for shown in self._filters if value else ():
            value = shown(value)
        return value

    def details(self, details: dict[str, Any]) -> dict[str, Any]:
        return {k: self._value(v) for k, v in details.items()}

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._value(v) for v in value]
        if isinstance(value, dict):
            return self.details(value)
        return value


def _top_reasons(by_stage: dict[str, dict[str, Any]], top: int) -> list[tuple[str, str, int]]:
    pairs = [(stage, reason, count) for stage, entry in by_stage.items() for reason, count in entry["reasons"].items()]
    pairs.sort(key=lambda p: (-p[2], p[0], p[1]))
    return pairs[:top]


def _group_counts(columns: dict[str, pa.Array], keys: list[str], sums: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Rows per distinct ``keys`` (``count``) and the sums of ``sums`` columns (``<name>_sum``), in Arrow."""
    table = pa.table(columns)
    return table.group_by(keys).aggregate([(keys[0], "count"), *((name, "sum") for name in sums)]).to_pylist()


def collect_clean(data: RunData, directory: str, sample_rows: int, kept_samples: int = 0, text_chars: int = 600,
                  shown: Shown | None = None) -> dict[str, tuple[int, int]]:
    """Values of kept documents (every k-th row of the clean shards), ``kept_samples`` documents spread evenly
    over them; returns documents and characters per source (every row)."""
    if not _has_shards(directory):
        return {}
    total = _count_rows(directory)
    stride = max(1, math.ceil(total / max(sample_rows, 1)))
    wanted = set(np.linspace(0, total - 1, num=min(kept_samples, total)).round().astype(int).tolist()) if total else set()
    by_source: dict[str, tuple[int, int]] = {}
    offset = read = 0
    for batch in _batches(directory):
        positions = _strided(offset, batch.num_rows, stride)
        if len(positions):
            for annotations in batch.column("annotations").take(pa.array(positions)).to_pylist():
                read += 1
                _add_values(data, _kept_values(as_dict(annotations)))
        picked = sorted(p - offset for p in wanted if offset <= p < offset + batch.num_rows)
        if picked:
            shown = shown or Shown(data.manifest)
            for row in batch.take(pa.array(picked)).to_pylist():
                data.kept_samples.append(_sample(row, text_chars, shown, "annotations"))
        offset += batch.num_rows
        for row in _group_counts({"source": batch.column("source"), "chars": pc.utf8_length(batch.column("text"))},
                                 ["source"], ("chars",)):
            docs, chars = by_source.get(row["source"], (0, 0))
            by_source[row["source"]] = (docs + row["source_count"], chars + (row["chars_sum"] or 0))
    data.clean_coverage = Coverage(total, read)
    return by_source


def collect_removed(data: RunData, directory: str, sample_rows: int, top_reasons: int, per_reason: int,
                    text_chars: int, shown: Shown | None = None) -> tuple[dict[tuple[str, str], int] | None, list[dict]]:
    """Values and languages of removed documents (sampled), dedup cluster sizes, sample documents per top
    reason; returns removed documents per (source, stage) (every row) and up to ``per_reason`` dedup removals
    that name their survivor (near duplicates first), as raw rows. None and [] when removed/ was not written."""
    if not _has_shards(directory):
        return None, []
    shown = shown or Shown(data.manifest)
    total = _count_rows(directory)
    stride = max(1, math.ceil(total / max(sample_rows, 1)))
    by_stage = (data.stats or {}).get("removed", {}).get("by_stage", {})
    top = _top_reasons(by_stage, top_reasons)
    picker = _Picker({(stage, reason): count for stage, reason, count in top}, per_reason)
    picked: dict[tuple[str, ...], list[Sample]] = {(stage, reason): [] for stage, reason, _ in top}
    dedup_cap = sample_rows * 10
    survivors: dict[str, tuple[int, int]] = {}  # survivor id -> (members removed, largest cluster_size reported)
    sized: Counter = Counter()  # cluster size -> removed documents that reported it, when no survivor id
    by_source: Counter = Counter()
    pairs: dict[bool, list[dict]] = {True: [], False: []}  # near duplicate? -> removals naming a survivor
    offset = read = dedup_read = dedup_total = 0
    for batch in _batches(directory):
        stage, reason = batch.column("stage"), batch.column("reason")
        for row in _group_counts({"source": batch.column("source"), "stage": stage}, ["source", "stage"]):
            by_source[(row["source"], row["stage"])] += row["source_count"]
        positions = _strided(offset, batch.num_rows, stride)
        offset += batch.num_rows
        if len(positions):
            rows = batch.select(["stage", "annotations", "details"]).take(pa.array(positions)).to_pylist()
            for row in rows:
                read += 1
                annotations = as_dict(row["annotations"])
                _add_values(data, _removal_values(annotations, as_dict(row["details"]), row["stage"]))
                if isinstance(annotations.get("lang"), str):
                    data.removed_languages[annotations["lang"]] += 1
        dedup_rows = np.flatnonzero(pc.equal(stage, "dedup").to_numpy(zero_copy_only=False))
        dedup_total += len(dedup_rows)
        room = dedup_cap - dedup_read
        if len(dedup_rows) and room > 0:
            dedup_rows = dedup_rows[:room]
            dedup_read += len(dedup_rows)
            details_column = batch.column("details").take(pa.array(dedup_rows)).to_pylist()
            for position, details in zip(dedup_rows.tolist(), details_column):
                details = as_dict(details)
                named = _count_cluster(details, survivors, sized)
                near = "near" in reason[position].as_py()
                if named is not None and len(pairs[near]) < per_reason:
                    pairs[near].append(batch.slice(position, 1).to_pylist()[0] | {"details": details,
                                                                                  "survivor_id": named})
        if not picker.done():
            for key, rows in picker.positions([stage, reason]).items():
                for row in batch.take(pa.array(rows)).to_pylist():
                    picked[key].append(_sample(row, text_chars, shown))
    data.removed_coverage = Coverage(total, read)
    data.dedup_rows_read, data.dedup_rows_total = dedup_read, dedup_total
    for removed, reported in survivors.values():
        # The survivor plus its removed members; a reported size wins when larger (members outside the sample).
        data.cluster_sizes[max(removed + 1, reported)] += 1
    for size, removed in sized.items():
        data.cluster_sizes[size] += max(1, round(removed / max(size - 1, 1)))
    data.removed_samples = [ReasonSamples(stage, reason, count, picked[(stage, reason)]) for stage, reason, count in top]
    return dict(by_source), (pairs[True] + pairs[False])[:per_reason]


def _without_secrets(manifest: dict[str, Any] | None) -> dict[str, Any] | None:
    """A manifest written before secrets were redacted may hold pii.hash_salt in clear: never show it."""
    from corpusforge.core.config_loader import REDACTED_PREFIX, redacted

    pii = ((manifest or {}).get("config") or {}).get("pii")
    if isinstance(pii, dict) and isinstance(pii.get("hash_salt"), str) and not pii["hash_salt"].startswith(REDACTED_PREFIX):
        pii["hash_salt"] = redacted(pii["hash_salt"])
    return manifest


def _count_cluster(details: dict[str, Any], survivors: dict[str, tuple[int, int]], sized: Counter) -> str | None:
    """Count one dedup removal into its cluster; returns the survivor id it names, if any."""
    size = details.get("cluster_size")
    size = int(size) if isinstance(size, (int, float)) and not isinstance(size, bool) and size >= 2 else None
    survivor = next((str(details[k]) for k in SURVIVOR_KEYS if details.get(k) is not None), None)
    if survivor is not None:
        removed, reported = survivors.get(survivor, (0, 0))
        survivors[survivor] = (removed + 1, max(reported, size or 0))
    elif size is not None:
        sized[size] += 1
    return survivor


def collect_rejected(data: RunData, directory: str, per_reason: int, top_reasons: int, text_chars: int,
                     shown: Shown | None = None) -> dict[tuple[str, bool], int] | None:
    """Sample records per top reason; returns rejected records per (source, rejected at read?) (every row),
    None when rejected/ was not written."""
    if not _has_shards(directory):
        return None
    shown = shown or Shown(data.manifest)
    reasons = (data.stats or {}).get("rejected", {}).get("reasons", {})
    top = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:top_reasons]
    picker = _Picker({(reason,): count for reason, count in top}, per_reason)
    picked: dict[tuple[str, ...], list[Sample]] = {(reason,): [] for reason, _ in top}
    by_source: Counter = Counter()
    for batch in _batches(directory):
        at_read = pc.not_equal(batch.column("reason"), STAGE_ERROR)
        for row in _group_counts({"source": batch.column("source"), "at_read": at_read}, ["source", "at_read"]):
            by_source[(row["source"], row["at_read"])] += row["source_count"]
        if picker.done():
            continue
        for key, rows in picker.positions([batch.column("reason")]).items():
            for row in batch.take(pa.array(rows)).to_pylist():
                details = {"detail": shown.text(row["detail"])} if row.get("detail") else {}
                # a stage_error record's path is the document's id (it was read already), its raw a document's
                # text, which the report does not show
                error = row["reason"] == STAGE_ERROR
                raw = "" if error else row.get("raw") or ""
                picked[key].append(Sample(id=shown.text(row["path"]) if error else f"{row['path']}:{row['position']}",
                                          source=row["source"], text=_truncate(shown.text(raw), text_chars),
                                          chars=len(raw), details=details))
    data.rejected_samples = [ReasonSamples("read", reason, count, picked[(reason,)]) for reason, count in top]
    return dict(by_source)


def collect_near_duplicates(data: RunData, run_dir: str, removals: list[dict], text_chars: int,
                            shown: Shown | None = None) -> None:
    """Each removal beside its survivor, looked up by id in clean/ (then removed/: a later stage may have
    removed it), with the shared text of the first ``MAX_CHARS`` characters of each marked."""
    if not removals:
        return
    shown = shown or Shown(data.manifest)
    found: dict[str, dict[str, Any]] = {}
    wanted = pa.array(sorted({r["survivor_id"] for r in removals}), pa.string())
    for sub in ("clean", "removed"):
        directory = _join(run_dir, sub)
        if len(found) == len(wanted) or not _has_shards(directory):
            continue
        for batch in _batches(directory):
            rows = np.flatnonzero(pc.is_in(batch.column("id"), value_set=wanted).to_numpy(zero_copy_only=False))
            for row in batch.select(["id", "source", "text"]).take(pa.array(rows, pa.int64())).to_pylist():
                found.setdefault(row["id"], row)
    for removal in removals:
        survivor = found.get(removal["survivor_id"])
        removed_text = _scrubbed_prefix(removal.get("text") or "", MAX_CHARS, shown)
        survivor_text = _scrubbed_prefix(survivor["text"] or "", MAX_CHARS, shown) if survivor else ""
        similarity = removal["details"].get("similarity")
        data.near_duplicates.append(NearDuplicate(
            reason=removal["reason"], removed=_sample(removal, text_chars, shown),
            survivor=_sample(survivor, text_chars, shown, "annotations") if survivor else None,
            similarity=float(similarity) if isinstance(similarity, (int, float)) else None,
            overlap=shared_text(removed_text, survivor_text) if survivor else None))


def tokens_by_source(tokens_dir: str, manifest: dict[str, Any] | None) -> dict[tuple[str, str], int]:
    """Tokens written per (source, split), from the token shards' ``source`` column (list lengths only)."""
    out: Counter = Counter()
    for split, entry in ((manifest or {}).get("splits") or {}).items():
        for shard in entry.get("shards") or []:
            path = _join(tokens_dir, shard)
            if not _exists(path):
                continue
            table = open_shard(path).read_all()
            if "source" not in table.column_names:
                return {}  # token shards of an earlier version: tokens per source are not known
            lengths = pc.list_value_length(table.column("tokens"))
            for row in _group_counts({"source": table.column("source"), "tokens": lengths}, ["source"], ("tokens",)):
                out[(row["source"], split)] += row["tokens_sum"] or 0
    return dict(out)


def collect(run_dir: str, *, sample_rows: int = 20_000, top_reasons: int = 8, per_reason: int = 3,
            text_chars: int = 600, tokenizer_dir: str | None = None, model_dir: str | None = None) -> RunData:
    """Gather what exists under ``run_dir``; raises ``UserError`` when nothing does."""
    run_dir = run_dir.rstrip("/") or "/"
    if not _exists(run_dir):
        raise UserError(f"{run_dir} does not exist; pass the run directory of a build (output.run_dir)")
    data = RunData(run_dir=run_dir)
    data.stats = read_json_file(_join(run_dir, "stats.json"))
    data.manifest = _without_secrets(read_json_file(_join(run_dir, "manifest.json")))
    shown = Shown(data.manifest)
    clean = collect_clean(data, _join(run_dir, "clean"), sample_rows, 2 * per_reason, text_chars, shown)
    removed, pairs = collect_removed(data, _join(run_dir, "removed"), sample_rows, top_reasons, per_reason,
                                     text_chars, shown)
    rejected = collect_rejected(data, _join(run_dir, "rejected"), per_reason, top_reasons, text_chars, shown)
    collect_near_duplicates(data, run_dir, pairs, text_chars, shown)
    tokenizer_dir = tokenizer_dir or _join(run_dir, "tokenizer")
    data.tokenizer = read_json_file(_join(tokenizer_dir, "report.json"))
    for token in (data.tokenizer or {}).get("longest_tokens") or []:
        for key in ("text", "token"):
            if isinstance(token.get(key), str):
                token[key] = shown.text(token[key])
    data.tokens = read_json_file(_join(run_dir, "tokens", "manifest.json"))
    tokens = tokens_by_source(_join(run_dir, "tokens"), data.tokens)
    data.sources, data.sources_exact = source_funnel(data.stats, clean, removed, rejected, tokens)
    model_dir = model_dir or _join(run_dir, "model")
    records = read_metrics(_join(model_dir, "metrics.jsonl"))
    if records is not None:
        data.training = Training(
            train=[r for r in records if r.get("split", "train") == "train"],
            val=[r for r in records if r.get("split") == "val"],
            config=read_json_file(_join(model_dir, "config.json")))
    if data.empty:
        raise UserError(f"{run_dir} holds no build (stats.json), tokenizer (tokenizer/report.json), token shards "
                        "or training log (model/metrics.jsonl); run `corpusforge build` first")
    return data
