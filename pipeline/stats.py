"""Counting what happened to every record, and the accounting identity.

Stages emit small *facts* ``((category, key), amount)``; ``CountFacts`` sums them inside the pipeline, so
the counts come from the data itself (not from runner metrics, which not every runner reports).
``assemble_stats`` turns the summed facts into ``stats.json`` and checks
``input = kept + removed + rejected``. The runner's Beam metrics (``runner_metrics``) are kept beside them
under ``metrics``, as what the runner observed (a retried bundle may count twice on some runners).
"""
from __future__ import annotations

import functools
from typing import Any, Iterable

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from corpusforge.core.faults import STAGE_ERROR, error_parts

# Histogram buckets of document length in characters: powers of two (a log scale people can read).
def length_bucket(chars: int) -> int:
    # the smallest power of two >= chars, exactly (no float log2): 2 ** ceil(log2(chars))
    return 0 if chars <= 0 else 1 << (chars - 1).bit_length()


class AccountingError(RuntimeError):
    """``input != kept + removed + rejected``: a record was lost or counted twice."""


class DocumentFacts:
    """Facts for the documents leaving ``stage``: count, characters (the funnel), and documents and UTF-8
    bytes per source and per language (the mixture; a language once the quality stage has annotated it).

    ``add_to`` adds one document's facts to a running total directly: it runs for every document after every
    stage, where building and yielding six tuples per document cost twice as much."""

    def __init__(self, stage: str):
        self.stage = stage
        self._funnel = ("funnel_docs", stage), ("funnel_chars", stage)
        self._keys: dict[tuple[str, object], tuple] = {}  # (category prefix, source or language) -> its two keys

    def _pair(self, docs: str, size: str, name) -> tuple:
        keys = self._keys.get((docs, name))
        if keys is None:
            label = f"{self.stage}\t{name}"
            keys = self._keys[(docs, name)] = (docs, label), (size, label)
        return keys

    def add_to(self, totals: dict, doc) -> None:
        chars, size = doc.text_sizes()  # a spilled text's without reading it back
        get = totals.get
        # Each key's total updated in place (no list of pairs built per document: ~0.4 us of ~1.1).
        docs_key, chars_key = self._funnel
        totals[docs_key] = get(docs_key, 0) + 1
        totals[chars_key] = get(chars_key, 0) + chars
        docs_key, bytes_key = self._keys.get(("source_docs", doc.source)) or self._pair(
            "source_docs", "source_bytes", doc.source)
        totals[docs_key] = get(docs_key, 0) + 1
        totals[bytes_key] = get(bytes_key, 0) + size
        lang = doc.annotations.get("lang")
        if lang is not None:
            docs_key, bytes_key = self._keys.get(("lang_docs", lang)) or self._pair("lang_docs", "lang_bytes", lang)
            totals[docs_key] = get(docs_key, 0) + 1
            totals[bytes_key] = get(bytes_key, 0) + size

    def __call__(self, doc):
        totals: dict = {}
        self.add_to(totals, doc)
        yield from totals.items()

    def counter(self) -> "_DocumentCounts":
        """A running count of documents for a bundle: ``add(doc)`` each, ``fold(totals)`` once at the end adds
        what ``add_to`` would have added for each."""
        return _DocumentCounts(self)


class _DocumentCounts:
    """``DocumentFacts``' counts of a bundle's documents: per (source, language) a document count, characters
    and bytes, one dict look-up a document (``add_to`` does six, then six stores), turned into the facts'
    keys once per bundle (``fold``)."""

    def __init__(self, facts: DocumentFacts):
        self.facts, self.by_kind = facts, {}

    def add(self, doc) -> None:
        chars, size = doc.text_sizes()
        kind = (doc.source, doc.annotations.get("lang"))
        counts = self.by_kind.get(kind)
        if counts is None:
            self.by_kind[kind] = [1, chars, size]
        else:
            counts[0] += 1
            counts[1] += chars
            counts[2] += size

    def fold(self, totals: dict) -> None:
        facts, get = self.facts, totals.get
        by_kind, self.by_kind = self.by_kind, {}
        for (source, lang), (docs, chars, size) in by_kind.items():
            added = [(facts._funnel[0], docs), (facts._funnel[1], chars)]
            docs_key, bytes_key = facts._pair("source_docs", "source_bytes", source)
            added += [(docs_key, docs), (bytes_key, size)]
            if lang is not None:
                docs_key, bytes_key = facts._pair("lang_docs", "lang_bytes", lang)
                added += [(docs_key, docs), (bytes_key, size)]
            for key, amount in added:
                totals[key] = get(key, 0) + amount


def document_facts(stage: str) -> DocumentFacts:
    return DocumentFacts(stage)


def _per_stage(cat: dict[str, dict[str, int]], docs: str, size: str, stages: list[str]) -> list[dict[str, Any]]:
    """``[{"stage", "<key>": {"documents", "bytes"}}]`` from facts keyed ``stage\tkey``, in stage order."""
    table: dict[str, dict[str, dict[str, int]]] = {}
    for category, field in ((docs, "documents"), (size, "bytes")):
        for key, amount in cat.get(category, {}).items():
            stage, name = key.split("\t", 1)
            table.setdefault(stage, {}).setdefault(name, {"documents": 0, "bytes": 0})[field] = amount
    return [{"stage": stage, "by": dict(sorted(table.get(stage, {}).items()))} for stage in stages]


class LengthFacts:
    """The histogram of document lengths (``length_bucket``) under ``name``; ``add_to`` as ``DocumentFacts``'."""

    def __init__(self, name: str):
        self.name = name
        self._keys: dict[int, tuple[str, str]] = {}  # bucket -> its key

    def add_to(self, totals: dict, doc) -> None:
        bucket = length_bucket(doc.text_length())
        key = self._keys.get(bucket)
        if key is None:
            key = self._keys[bucket] = (self.name, str(bucket))
        totals[key] = totals.get(key, 0) + 1

    def __call__(self, doc):
        yield (self.name, str(length_bucket(doc.text_length()))), 1


def length_facts(name: str) -> LengthFacts:
    return LengthFacts(name)


def removed_facts(item):
    yield ("removed", f"{item.stage}\t{item.reason}"), 1
    yield ("removed_chars", item.stage), item.doc.text_length()


def rejected_facts(item):
    yield ("rejected", item.reason), 1
    if item.reason == STAGE_ERROR:
        stage, error = error_parts(item.detail)
        yield ("stage_errors", f"{stage}\t{error}"), 1


def edit_facts(item):
    stage, counter, amount = item
    yield ("edits", f"{stage}\t{counter}"), amount


def annotation_facts(doc):
    """Distributions a person wants to see: languages of kept documents."""
    lang = doc.annotations.get("lang")
    if lang is not None:
        yield ("lang", str(lang)), 1


def _adder(fn):
    """``fn``'s ``add_to(totals, record)``, or one made from the facts it yields."""
    add_to = getattr(fn, "add_to", None)
    if add_to is not None:
        return add_to

    def add(totals, record):
        for key, amount in fn(record):
            totals[key] = totals.get(key, 0) + amount
    return add


class _BundleFacts(beam.DoFn):
    """The facts of each record by every one of ``fns``, summed over the bundle and emitted when it ends. A fn
    with ``counter()`` (``DocumentFacts``) counts a bundle in its own running count, folded into the totals when
    the bundle ends."""

    def __init__(self, fns):
        self.fns = fns

    def setup(self):
        self.adders = [_adder(fn) for fn in self.fns]

    def start_bundle(self):
        self.totals: dict = {}
        self.counters = [fn.counter() for fn in self.fns if hasattr(fn, "counter")]
        counted = iter(self.counters)
        # one call per record and fn, each with the record alone
        self.adds = [next(counted).add if hasattr(fn, "counter") else functools.partial(add, self.totals)
                     for fn, add in zip(self.fns, self.adders)]

    def process(self, record):
        for add in self.adds:
            add(record)

    def finish_bundle(self):
        totals, self.totals = self.totals, {}
        for counter in self.counters:
            counter.fold(totals)
        for key in sorted(totals):
            yield GlobalWindows.windowed_value((key, totals[key]))


FACTS = "facts"


class _PassingFacts(_BundleFacts):
    """Records -> the same records, after ``before`` (a callable; with ``setup``/``close`` when it holds a
    resource), and, tagged ``FACTS``, what ``_BundleFacts`` emits."""

    def __init__(self, fns, before=None):
        super().__init__(fns)
        self.before = before

    def setup(self):
        super().setup()
        if hasattr(self.before, "setup"):
            self.before.setup()

    def process(self, record):
        if self.before is not None:
            record = self.before(record)
        for add in self.adds:
            add(record)
        return (record,)

    def finish_bundle(self):
        if hasattr(self.before, "close"):
            self.before.close()
        for fact in super().finish_bundle():
            yield beam.pvalue.TaggedOutput(FACTS, fact)

    def teardown(self):
        if hasattr(self.before, "close"):
            self.before.close()


class DocumentsAndFacts(beam.PTransform):
    """``records -> (records, facts)``: ``FactsOf(*fns)`` in the records' own step, which also applies
    ``before`` to each record first (the build's spill or load of each text: ``spill.TextSpiller``,
    ``spill.load_text``). One Beam invocation per record for what were two steps (or three)."""

    def __init__(self, *fns, before=None):
        super().__init__()
        self.fns, self.before = fns, before

    def expand(self, records):
        out = records | "PassFacts" >> beam.ParDo(_PassingFacts(self.fns, self.before)).with_outputs(FACTS, main="records")
        return out.records, out[FACTS]


class FactsOf(beam.PTransform):
    """``records -> facts`` by each of ``fns`` (``document_facts(stage)``, ``edit_facts``...), summed per bundle
    first: a few elements per bundle instead of ~4 per record and stage, each of which Beam moved and
    combined on its own (``CountFacts`` sums them the same either way); several ``fns`` of the same records
    run in one step, one Beam invocation per record instead of one per ``fn``."""

    def __init__(self, *fns):
        super().__init__()
        self.fns = fns

    def expand(self, records):
        return records | "SumInBundle" >> beam.ParDo(_BundleFacts(self.fns))


class CountFacts(beam.PTransform):
    """Sum a stream of facts: one ``((category, key), total)`` per key (a few hundred elements)."""

    def expand(self, facts):
        return facts | "SumFacts" >> beam.CombinePerKey(sum)


def _by_category(facts: Iterable[tuple[tuple[str, str], int]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (category, key), amount in facts:
        out.setdefault(category, {})[key] = int(amount)
    return out


def assemble_stats(facts: Iterable[tuple[tuple[str, str], int]], stage_order: list[str], kept_rows: int,
                   wall_seconds: float, metrics: dict[str, Any] | None = None) -> dict[str, Any]:
    """``stats.json`` from the summed facts; raises ``AccountingError`` if the identity does not hold."""
    cat = _by_category(facts)
    read = cat.get("funnel_docs", {}).get("read", 0)
    rejected = cat.get("rejected", {})
    rejected_total = sum(rejected.values())
    removed_by_stage: dict[str, dict[str, Any]] = {}
    for key, count in sorted(cat.get("removed", {}).items()):
        stage, reason = key.split("\t", 1)
        entry = removed_by_stage.setdefault(stage, {"total": 0, "chars": cat.get("removed_chars", {}).get(stage, 0), "reasons": {}})
        entry["total"] += count
        entry["reasons"][reason] = count
    removed_total = sum(e["total"] for e in removed_by_stage.values())
    stage_errors: dict[str, dict[str, int]] = {}
    for key, count in sorted(cat.get("stage_errors", {}).items()):
        stage, error = key.split("\t", 1)
        stage_errors.setdefault(stage, {})[error] = count
    edits: dict[str, dict[str, int]] = {}
    for key, amount in sorted(cat.get("edits", {}).items()):
        stage, counter = key.split("\t", 1)
        edits.setdefault(stage, {})[counter] = amount
    funnel = [
        {"stage": stage, "documents": cat.get("funnel_docs", {}).get(stage, 0),
         "chars": cat.get("funnel_chars", {}).get(stage, 0)}
        for stage in ["read", *stage_order]
    ]
    # A document a stage raised on after reading was counted as read and again as rejected (stage_error):
    # only the reader's rejections are input records that never became documents.
    rejected_after_read = sum(n for stage, errors in stage_errors.items() if stage != "read" for n in errors.values())
    input_records = read + rejected_total - rejected_after_read
    stats = {
        "accounting": {
            "input": input_records,
            "kept": kept_rows,
            "removed": removed_total,
            "rejected": rejected_total,
            "balanced": input_records == kept_rows + removed_total + rejected_total,
        },
        "funnel": funnel,
        "removed": {"total": removed_total, "by_stage": removed_by_stage},
        # stage_errors: records rejected because a stage raised on them, by stage and exception type
        "rejected": {"total": rejected_total, "reasons": dict(sorted(rejected.items())), "stage_errors": stage_errors},
        "edits": edits,
        "histograms": {
            "length_in": _sorted_hist(cat.get("length_in", {})),
            "length_out": _sorted_hist(cat.get("length_out", {})),
        },
        "languages": dict(sorted(cat.get("lang", {}).items(), key=lambda kv: (-kv[1], kv[0]))),
        # the mixture after every stage: documents and UTF-8 bytes per source and per language
        "sources": _per_stage(cat, "source_docs", "source_bytes", ["read", *stage_order]),
        "languages_by_stage": _per_stage(cat, "lang_docs", "lang_bytes", ["read", *stage_order]),
        "timing": {
            "wall_seconds": round(wall_seconds, 3),
            "records_per_second": round(input_records / wall_seconds, 1) if wall_seconds > 0 else None,
            "chars_in": cat.get("funnel_chars", {}).get("read", 0),
        },
    }
    if metrics is not None:
        stats["metrics"] = metrics
    if not stats["accounting"]["balanced"]:
        a = stats["accounting"]
        raise AccountingError(
            f"records do not add up: input {a['input']} != kept {a['kept']} + removed {a['removed']} + "
            f"rejected {a['rejected']}; this is a bug in a stage, please report it"
        )
    return stats


def runner_metrics(result) -> dict[str, Any]:
    """The Beam metrics of a finished pipeline: ``{"counters": {namespace: {name: total}}, "distributions":
    {namespace: {name: {count, sum, min, max, mean}}}}`` summed over steps, or ``{"unavailable": why}``."""
    try:
        query = result.metrics().query()
    except Exception as exc:  # noqa: BLE001 - runners without metrics support raise various errors
        # Metrics are diagnostics: the build's counts come from its facts, so a runner that cannot report
        # metrics must not fail a build that succeeded. The reason is kept in stats.json and printed.
        return {"unavailable": f"{type(exc).__name__}: {exc}".strip()[:200]}
    counters: dict[str, dict[str, int]] = {}
    for item in query.get("counters", []):
        value = item.committed if item.committed is not None else item.attempted
        names = counters.setdefault(item.key.metric.namespace, {})
        names[item.key.metric.name] = names.get(item.key.metric.name, 0) + int(value or 0)
    distributions: dict[str, dict[str, dict[str, float]]] = {}
    for item in query.get("distributions", []):
        value = item.committed if item.committed is not None else item.attempted
        if value is None or not value.count:
            continue
        names = distributions.setdefault(item.key.metric.namespace, {})
        names[item.key.metric.name] = _merge_distribution(names.get(item.key.metric.name), {
            "count": value.count, "sum": value.sum, "min": value.min, "max": value.max})
    return {"counters": _sorted_nested(counters), "distributions": _sorted_nested(distributions)}


def _merge_distribution(a: dict[str, float] | None, b: dict[str, float]) -> dict[str, float]:
    if a is not None:
        b = {"count": a["count"] + b["count"], "sum": a["sum"] + b["sum"], "min": min(a["min"], b["min"]),
             "max": max(a["max"], b["max"])}
    return {**b, "mean": round(b["sum"] / b["count"], 4) if b["count"] else None}


def merge_metrics(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """The metrics of two pipelines of one build (stage checkpoints run one pipeline per stage)."""
    if a is None:
        return b
    if "unavailable" in a or "unavailable" in b:
        return a if "unavailable" in a else b
    counters = {ns: dict(names) for ns, names in a["counters"].items()}
    for ns, names in b["counters"].items():
        for name, value in names.items():
            counters.setdefault(ns, {})[name] = counters.get(ns, {}).get(name, 0) + value
    distributions = {ns: dict(names) for ns, names in a["distributions"].items()}
    for ns, names in b["distributions"].items():
        for name, value in names.items():
            distributions.setdefault(ns, {})[name] = _merge_distribution(distributions.get(ns, {}).get(name), value)
    return {"counters": _sorted_nested(counters), "distributions": _sorted_nested(distributions)}


def _sorted_nested(data: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {ns: dict(sorted(names.items())) for ns, names in sorted(data.items())}


def format_metrics(metrics: dict[str, Any]) -> str:
    """The Beam metrics as a compact table grouped by namespace ("" when there are none)."""
    if "unavailable" in metrics:
        return f"beam metrics: not reported by this runner ({metrics['unavailable']})"
    rows = [(ns, name, f"{value:,}") for ns, names in metrics.get("counters", {}).items()
            for name, value in names.items()]
    rows += [(ns, name, f"n={d['count']:,} mean={d['mean']:,.4g} min={d['min']:,} max={d['max']:,}")
             for ns, names in metrics.get("distributions", {}).items() for name, d in names.items()]
    if not rows:
        return ""
    width = max(len(name) for _, name, _ in rows) + 2
    lines = ["beam metrics:"]
    for ns in dict.fromkeys(ns for ns, _, _ in rows):
        lines.append(f"  {ns}")
        lines += [f"    {name:<{width}}{value:>14}" for n, name, value in rows if n == ns]
    return "\n".join(lines)


def _sorted_hist(hist: dict[str, int]) -> dict[str, int]:
    return {k: hist[k] for k in sorted(hist, key=int)}


def rate_text(per_second: float) -> str:
    """A rate as a person reads it: whole numbers from 10 up, two significant digits below (a build of a few
    records in seconds ran at 0.4 records/s, not 0)."""
    return f"{per_second:,.0f}" if per_second >= 10 else f"{per_second:.2g}"


# What to do about a rejection reason that takes a whole input (the build's summary, and the one line of a build
# whose every record was rejected, pipeline.build.check_something_kept).
REJECTION_ADVICE = {
    "missing_text": "the records have no field named as inputs[].text_field says, 'text' unless set; name yours "
                    "there, or with build --text-field for --input files",
    # a .json file of one array of records (json.dump of a list, pandas' orient="records") reads as one record
    # that is not an object: the whole file rejected, with nothing to say why
    "not_an_object": "JSON Lines holds one object per line; a file holding one array of records is not JSON "
                     "Lines: write it one object per line, e.g. jq -c '.[]' data.json > data.jsonl",
    "non_string_text": "the field inputs[].text_field names (build --text-field) holds no string; name the field "
                       "that holds the text",
    "malformed_json": "a file read as JSON Lines (.jsonl, .json) must hold one JSON object per line; plain text "
                      "belongs in a .txt file (one document a line)",
    "empty_text": "the text field of every record is empty or blank; name the field that holds the text with "
                  "build --text-field (inputs[].text_field)",
    "stage_error": "a stage raised on every record: rerun with --fail-fast to see the first traceback",
    # a large .json array file reads as one record past the record limit, before it could be seen as an array
    "oversize_record": "one line is past output.max_record_bytes: a .json file of one array of records is one line "
                       "(write it one object per line, e.g. jq -c '.[]' data.json > data.jsonl), else raise "
                       "output.max_record_bytes",
    "rejected_record": "the inputs are corpusforge rejected/ records (input a build could not read: a reason and a "
                       "preview each), not documents: fix the files their path column names and build from those; a "
                       "run's documents are in its clean/ and removed/",
    "invalid_utf8": "the files are not UTF-8 (Latin-1 or Windows-1252?): convert them, e.g. iconv -f cp1252 -t "
                    "utf-8 data.jsonl > data.utf8.jsonl",
}
WEB_REASONS = ("warc_", "html_", "no_main_text")  # reasons of web inputs, told in docs/web.md


def rejection_advice(reason: str) -> str:
    """What to do about a build whose records were all rejected for ``reason``."""
    if reason in REJECTION_ADVICE:
        return REJECTION_ADVICE[reason]
    if reason.startswith(WEB_REASONS):
        return "see what each reason of a web input means in docs/web.md"
    return "see what each reason means in docs/inputs.md"


WHOLE_INPUT_REASONS = ("missing_text", "not_an_object")  # reasons that take a whole file's records, not one odd record


REJECTED_WARN_SHARE = 0.5  # rejection is a failure to read the input, never a config decision: a majority is a mistake
KEPT_WARN_SHARE = 0.01  # removal is the config's decision, and a web build may remove most of a crawl: below 1 % kept


# Rejections that are a web input's filtering, not a failure to read: a response that is no HTML page, or not a 200
ROUTINE_REJECTIONS = frozenset({"warc_not_html", "warc_http_status"})


def loss_warning(stats: dict[str, Any], example: str = "") -> str | None:
    """One line (without ``warning:``) when a published build lost an extreme share of its input records: at
    least ``REJECTED_WARN_SHARE`` of them rejected (a wrong text field, a file that is not JSON Lines: the build
    still publishes the few it could read), or fewer than ``KEPT_WARN_SHARE`` kept after the stages removed the
    rest; None otherwise. ``example``: one rejected record's place and detail for the main rejection reason
    (``build._rejected_example``). The build exits 0 either way: what it kept is a corpus."""
    a = stats["accounting"]
    # a crawl's images, scripts and redirects are rejected by design (a WARC of a site holds more of them than
    # pages): neither a loss nor part of the input the shares are of
    routine = sum(n for reason, n in stats["rejected"]["reasons"].items() if reason in ROUTINE_REJECTIONS)
    considered, rejected = a["input"] - routine, a["rejected"] - routine
    if considered <= 0:
        return None
    if rejected >= REJECTED_WARN_SHARE * considered:
        reasons = sorted(((reason, n) for reason, n in stats["rejected"]["reasons"].items()
                          if reason not in ROUTINE_REJECTIONS), key=lambda kv: (-kv[1], kv[0]))
        by = ", ".join(f"{reason} {n:,}" for reason, n in reasons[:4]) + (", ..." if len(reasons) > 4 else "")
        advice = rejection_advice(reasons[0][0])
        return (f"{rejected:,} of the {considered:,} input records ({rejected / considered:.1%}) were "
                f"rejected ({by}{example}) and only {a['kept']:,} kept: {advice}, then build again with --overwrite")
    if a["kept"] < KEPT_WARN_SHARE * considered:
        reasons: dict[str, int] = {}
        for stage, entry in stats["removed"]["by_stage"].items():
            for reason, n in entry["reasons"].items():
                reasons[f"{stage} {reason}"] = reasons.get(f"{stage} {reason}", 0) + n
        by = ", ".join(f"{r} {n:,}" for r, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:4])
        what = "no document was kept" if not a["kept"] else f"only {a['kept']:,} of the {a['input']:,} input records were kept"
        return (f"{what}: the stages removed {a['removed']:,} ({by}; the documents in removed/). Loosen the rules "
                "that removed them (docs/quality.md, corpusforge rethreshold) or turn their stage off")
    return None


def format_summary(stats: dict[str, Any], extra_lines: Iterable[str] = (), metrics: bool = True,
                   rejected_examples: dict[str, str] | None = None) -> str:
    """The run summary printed at the end of a build (``metrics``: with the Beam metrics table).
    ``rejected_examples``: reason -> one rejected record's place and detail (``build._rejected_example``), shown for
    the ``WHOLE_INPUT_REASONS``: one input file with a wrong text field is a minority of a build's records, and
    without its detail the summary only counted them."""
    a, t = stats["accounting"], stats["timing"]
    lines = [
        f"records in: {a['input']:,}   kept: {a['kept']:,}   removed: {a['removed']:,}   rejected: {a['rejected']:,}"
        f"   ({'balanced' if a['balanced'] else 'NOT BALANCED'})",
        "",
        f"{'stage':<12}{'docs out':>12}{'chars out':>16}{'removed':>10}",
    ]
    for row in stats["funnel"]:
        removed = stats["removed"]["by_stage"].get(row["stage"], {}).get("total", 0)
        lines.append(f"{row['stage']:<12}{row['documents']:>12,}{row['chars']:>16,}{removed:>10,}")
    for stage, entry in stats["removed"]["by_stage"].items():
        reasons = ", ".join(f"{r} {n:,}" for r, n in sorted(entry["reasons"].items(), key=lambda kv: -kv[1]))
        lines.append(f"  removed by {stage}: {reasons}")
    if stats["rejected"]["total"]:
        reasons = ", ".join(f"{r} {n:,}" for r, n in stats["rejected"]["reasons"].items())
        lines.append(f"  rejected input: {reasons}")
        for reason in WHOLE_INPUT_REASONS:
            count = stats["rejected"]["reasons"].get(reason, 0)
            example = (rejected_examples or {}).get(reason, "")
            if count * 2 >= max(a["input"], 1):  # most of the input: the advice, and the example when there is one
                lines.append(f"  ({reason}: {REJECTION_ADVICE[reason]}{example})")
            elif count and example:  # a file or a few: where, what they hold and what to name (missing_text_detail)
                lines.append(f"  ({reason} {count:,}{example})")
    for stage, errors in stats["rejected"].get("stage_errors", {}).items():
        lines.append(f"  stage errors in {stage}: " + ", ".join(f"{e} {n:,}" for e, n in errors.items()))
    for stage, counters in stats["edits"].items():
        lines.append(f"  edits by {stage}: " + ", ".join(f"{c} {n:,}" for c, n in counters.items()))
    lines.extend(extra_lines)
    rate = t["records_per_second"]
    lines.append(f"wall time {t['wall_seconds']:.1f} s, {rate_text(rate)} records/s, "
                 f"{t['chars_in'] / max(t['wall_seconds'], 1e-9) / 1e6:.2f} M chars/s" if rate else
                 f"wall time {t['wall_seconds']:.1f} s")
    table = format_metrics(stats["metrics"]) if metrics and "metrics" in stats else ""
    if table:
        lines += ["", table]
    return "\n".join(lines)
