"""The report as one self-contained HTML page, rendered from the Jinja2 templates in ``templates/``.

``page.html`` is the page, ``macros.html`` its building blocks (tables, figures, document cards, the
near-duplicate view), ``report.css`` and ``filter.js`` are inlined into it; figures are ``data:`` PNGs, so
the page loads nothing. Autoescaping is on: text from the run (reasons, ids, document text, tokens, config
values) is escaped wherever it lands, and only the macros' output is ``Markup``.
"""
from __future__ import annotations

import datetime as _dt
import json
import posixpath
import statistics
from typing import Any

import jinja2
from markupsafe import Markup, escape

from corpusforge.core.faults import STAGE_ERROR
from corpusforge.pipeline.report import plots
from corpusforge.pipeline.report.collect import ReasonSamples, RunData, value_stage
from corpusforge.pipeline.report.values import thresholds
from corpusforge.pipeline.stage import registered_stages

ENV = jinja2.Environment(loader=jinja2.PackageLoader("corpusforge.pipeline.report", "templates"), autoescape=True,
                         undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
MACROS = ENV.get_template("macros.html").module
# The building blocks, callable from Python; each returns Markup.
# The stylesheet as text and the escaper, for pages built outside these templates (corpusforge/ablate/page.py).
CSS = ENV.loader.get_source(ENV, "report.css")[0]
esc = escape
table, figure, facts, note, absent, heading, folded = (MACROS.table, MACROS.figure, MACROS.facts, MACROS.note,
                                                       MACROS.absent, MACROS.heading, MACROS.folded)


def num(value: Any, digits: int = 0) -> str:
    if value is None:
        return "–"
    if isinstance(value, int) or (isinstance(value, float) and digits == 0 and value.is_integer()):
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def share(part: float, whole: float, digits: int = 1) -> str:
    return f"{100 * part / whole:.{digits}f}%" if whole else "–"


def size(n: float) -> str:
    for unit, step in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= step:
            return f"{n / step:.1f} {unit}"
    return f"{int(n)} B"


# Sections of documents' text (samples, pairs, rejected previews) start folded: the page opens on the numbers and
# charts, each fold one click (or a link from the table of contents) away.
FOLDED = frozenset({"near-duplicates", "compare", "samples", "rejected", "details"})


class Section:
    """One card of the page, a ``<details>`` block: open unless its id is in ``FOLDED``."""

    def __init__(self, id: str, title: str, intro: str, body: Markup):
        self.id, self.title, self.intro, self.body = id, title, intro, body
        self.open = id not in FOLDED

    def html(self) -> Markup:
        return MACROS.section(self)


# ------------------------------------------------------------------------------------------------ sections
def stage_order(data: RunData) -> list[str]:
    return [row["stage"] for row in data.stats["funnel"]] if data.stats else []


def funnel_section(data: RunData) -> Section:
    intro = ("Every input record ends kept, removed by a stage (with a reason) or rejected as bad input: "
             "unreadable, without text or with empty text, oversize (or because a stage raised on it, stage_error). The bars show what is left after each stage; the "
             "table adds what each stage removed.")
    stats = data.stats
    if not stats:
        return Section("funnel", "Funnel", intro, absent("No build in this run (no stats.json): run `corpusforge build`."))
    funnel = stats["funnel"]
    by_stage = stats["removed"]["by_stage"]
    first_docs, first_chars = funnel[0]["documents"], funnel[0]["chars"]
    rows = []
    previous = None
    for row in funnel:
        entry = by_stage.get(row["stage"], {})
        reasons = sorted(entry.get("reasons", {}).items(), key=lambda kv: -kv[1])
        top = ", ".join(f"{r} {n:,}" for r, n in reasons[:3]) + (f", +{len(reasons) - 3} more" if len(reasons) > 3 else "")
        errors = sum(stats["rejected"].get("stage_errors", {}).get(row["stage"], {}).values())
        if errors:  # documents the stage raised on leave the funnel as rejections, not removals
            top = (top + "; " if top else "") + f"rejected as stage_error {errors:,}"
        chars_delta = "" if previous is None else num(row["chars"] - previous["chars"])
        rows.append([row["stage"], num(row["documents"]), share(row["documents"], first_docs), num(row["chars"]),
                     share(row["chars"], first_chars), chars_delta, num(entry.get("total", 0)), top or "–"])
        previous = row
    acc = stats["accounting"]
    body = (
        figure(plots.funnel([r["stage"] for r in funnel], [r["documents"] for r in funnel], [r["chars"] for r in funnel]),
               "Bar charts of documents and characters left after each stage")
        + table(["stage", "documents out", "of read", "characters out", "of read", "Δ characters", "removed",
                 "top reasons"], rows, numeric=(1, 2, 3, 4, 5, 6), cls="funnel")
        + note(f"Accounting: {acc['input']:,} input records = {acc['kept']:,} kept + {acc['removed']:,} removed + "
               f"{acc['rejected']:,} rejected ({'balanced' if acc['balanced'] else 'NOT balanced'}). Characters can "
               "fall without removals when a stage edits text (normalisation, C4 line removal, PII masking)."))
    return Section("funnel", "Funnel", intro, body)


def reasons_section(data: RunData) -> Section:
    intro = ("Why documents were removed, per stage. A reason that removes far more than expected is the first "
             "place to look for a rule that is too strict; the samples further down show what it removed.")
    stats = data.stats
    if not stats or not stats["removed"]["total"]:
        return Section("reasons", "Removal reasons", intro,
                       absent("Nothing was removed." if stats else "No build in this run."))
    rows = [(stage, reason, n) for stage, entry in stats["removed"]["by_stage"].items()
            for reason, n in entry["reasons"].items()]
    total = stats["removed"]["total"]
    # Every reason in a table the filter box above it searches (filter.js hides the rows that do not match).
    body = (figure(plots.removal_reasons(rows, stage_order(data)), "Removed documents per reason")
            + MACROS.filter_box("reasons-table", len(rows))
            + table(["stage", "reason", "documents", "of removed"],
                    [(s, r, num(n), share(n, total)) for s, r, n in sorted(rows, key=lambda r: (-r[2], r[0], r[1]))],
                    numeric=(2, 3), id="reasons-table"))
    edits = stats.get("edits") or {}
    if edits:
        counters = [(stage, counter, num(n)) for stage, counters in edits.items() for counter, n in counters.items()]
        body += folded(f"Edits: documents kept with their text changed ({len(counters)} counters)",
                       table(["stage", "counter", "amount"], counters, numeric=(2,)))
    return Section("reasons", "Removal reasons", intro, body)


def length_section(data: RunData) -> Section:
    intro = ("Document length in characters, in power-of-two buckets: every document read (after parsing, before "
             "any stage) against the clean documents that were kept.")
    hist = (data.stats or {}).get("histograms", {})
    if not hist.get("length_in") and not hist.get("length_out"):
        return Section("length", "Document length", intro, absent("No length histograms in this run."))
    body = figure(plots.length_histogram(hist.get("length_in", {}), hist.get("length_out", {})),
                  "Histogram of document length before and after")
    return Section("length", "Document length", intro, body)


def language_section(data: RunData) -> Section:
    intro = "Languages from fastText language ID (the quality stage's `lang` annotation)."
    kept = (data.stats or {}).get("languages") or {}
    removed = dict(data.removed_languages)
    if not kept and not removed:
        return Section("languages", "Languages", intro,
                       absent("No language annotations: language ID did not run (quality.langid)."))
    total = sum(kept.values())
    removed_header = "removed" if data.removed_coverage.complete else "removed (sample)"
    body = figure(plots.languages(kept, removed, removed_label=removed_header), "Documents per language")
    body += table(["language", "kept documents", "of kept", removed_header],
                  [(lang, num(kept.get(lang, 0)), share(kept.get(lang, 0), total), num(removed.get(lang, 0)))
                   for lang in sorted(set(kept) | set(removed), key=lambda k: (-kept.get(k, 0), -removed.get(k, 0), k))[:25]],
                  numeric=(1, 2, 3))
    body += note(f"Kept counts are exact; removed counts come from {coverage_text(data.removed_coverage)} removed records.")
    return Section("languages", "Languages", intro, body)


def _mixture_rows(by_stage: list[dict[str, Any]]) -> list[list[str]]:
    """One row per source (or language): documents and bytes after each stage."""
    names = sorted({name for row in by_stage for name in row["by"]})
    rows = []
    for name in names:
        cells = [name]
        for row in by_stage:
            entry = row["by"].get(name, {"documents": 0, "bytes": 0})
            cells.append(f"{num(entry['documents'])} / {size(entry['bytes'])}")
        rows.append(cells)
    return rows


def mixture_section(data: RunData) -> Section:
    intro = ("The mixture: documents and bytes per source and per language after every stage (stats.json "
             "`sources`, `languages_by_stage`), and the train split's tokens per source before and after the "
             "weighting of `inputs[].weight` and `tokenize.target_tokens` (tokens/manifest.json `sources`).")
    stats = data.stats or {}
    sources = stats.get("sources") or []
    token_sources = (data.tokens or {}).get("sources") or {}
    if not sources and not token_sources:
        return Section("mixture", "Sources and mixture", intro,
                       absent("No per-source counts in this run (a build of an earlier version, or no build)."))
    body = Markup()
    if sources:
        headers = ["source", *[f"{row['stage']} docs / bytes" for row in sources]]
        body += table(headers, _mixture_rows(sources), numeric=tuple(range(1, len(headers))))
    languages = stats.get("languages_by_stage") or []
    languages = [row for row in languages if row["by"]]
    if languages:
        headers = ["language", *[f"{row['stage']} docs / bytes" for row in languages]]
        body += table(headers, _mixture_rows(languages)[:25], numeric=tuple(range(1, len(headers))))
    if token_sources:
        mixture = (data.tokens or {}).get("mixture") or {}
        rows = [[name, f"{s['weight']:g}", num(s["tokens_before"]), share(s["share_before"], 1),
                 f"{s['epochs']:.3g}", num(s["documents"]), num(s["tokens"]), share(s["share"], 1)]
                for name, s in sorted(token_sources.items())]
        body += table(["source", "weight", "train tokens before", "share before", "epochs", "documents after",
                       "tokens after", "share after"], rows, numeric=(1, 2, 3, 4, 5, 6, 7))
        token_languages = (data.tokens or {}).get("languages") or {}
        if any(token_languages):
            rows = [[lang or "(none)", num(s["tokens_before"]), share(s["share_before"], 1), num(s["tokens"]),
                     share(s["share"], 1)]
                    for lang, s in sorted(token_languages.items(), key=lambda kv: -kv[1]["tokens"])[:25]]
            body += table(["language", "train tokens before", "share before", "tokens after", "share after"], rows,
                          numeric=(1, 2, 3, 4))
        budget = mixture.get("target_tokens") or 0
        body += note(f"Token budget {num(budget)} (tokenize.target_tokens); repeats are whole documents, drops "
                     "whole documents chosen by a stable hash of the id." if budget else
                     "No token budget (tokenize.target_tokens = 0): every document once, the natural mixture.")
    return Section("mixture", "Sources and mixture", intro, body)


def coverage_text(cov) -> str:
    return f"all {cov.rows_total:,}" if cov.complete else f"a sample of {cov.rows_read:,} of {cov.rows_total:,}"


def _quantile_cells(values: list[float]) -> list[str]:
    q = statistics.quantiles(values, n=10) if len(values) > 1 else [values[0]] * 9
    return [num(min(values), 3), num(q[0], 3), num(statistics.median(values), 3), num(q[-1], 3), num(max(values), 3)]


def _first_side(sides: dict[str, list[float]]) -> str:
    return next(side for side in ("kept", "removed", "other") if sides[side])


def values_section(data: RunData) -> Section:
    intro = ("Every value the stages stored with the documents (annotations of kept documents, annotations and "
             "details of removed ones: language-ID confidence, classifier scores, rule measurements such as word "
             "counts or repetition fractions), as a histogram with the run's thresholds marked: kept documents in "
             "blue, documents removed by the stage that decides on the value in red (by this rule or by another "
             "rule of that stage), documents a different stage removed in grey. Blue piling up right at a "
             "threshold suggests a strict rule.")
    present = {k: v for k, v in data.values.items() if v["kept"] or v["removed"] or v["other"]}
    if not present:
        return Section("values", "Rule values and thresholds", intro,
                       absent("No values stored: the annotations and details of this run hold no numbers to plot."))
    config = (data.manifest or {}).get("config") or {}
    lines = {key: thresholds(key, config) for key in present}
    rows = []
    for key in sorted(present):
        first = [key, ", ".join(f"{name} = {value:g}" for name, value in lines[key]) or "–"]
        for side, label in (("kept", "kept"), ("removed", f"removed by {value_stage(key)}"), ("other", "removed by another stage")):
            values = present[key][side]
            if values:
                rows.append((*first, label, num(len(values)), *_quantile_cells(values)))
                first = ["", ""]  # the value and its thresholds on its first row only
    constant = sorted(key for key in present if not plots.varies(present[key]))
    shown = [key for key in sorted(present) if key not in constant][:plots.MAX_PANELS]
    plotted = len(present) - len(constant)
    chart = figure(plots.value_histograms({k: present[k] for k in shown}, {k: lines[k] for k in shown},
                                          {k: value_stage(k) for k in shown}),
                   "Histograms of stored values with thresholds, kept against removed") if shown else Markup()
    body = (chart
            + folded(f"Percentiles of every value ({len(present)} values, {len(rows)} rows)",
                     table(["value", "threshold (run config)", "documents", "count", "min", "p10", "median", "p90", "max"],
                           rows, numeric=(3, 4, 5, 6, 7, 8), cls="values"))
            + note(f"From {coverage_text(data.clean_coverage)} kept and {coverage_text(data.removed_coverage)} removed "
                   "records. A removed document carries only the values of the steps it reached; a value without "
                   "a threshold is annotated only, or its rule is off in this run's configuration."
                   + (f" The figure shows the first {plots.MAX_PANELS} of the {plotted} values that vary." if plotted > len(shown) else "")
                   + (f" Not charted, the same in every record: {', '.join(f'{k} = {present[k][_first_side(present[k])][0]:g}' for k in constant)}."
                      if constant else "")))
    return Section("values", "Rule values and thresholds", intro, body)


def sources_section(data: RunData) -> Section:
    intro = ("Each source's way through the run: input records, rejected, removed by each stage, kept documents "
             "and characters, and the tokens each split of the token shards got from it (when the run was "
             "tokenized; repeats of a weighted mixture included).")
    if not data.sources:
        return Section("sources", "Sources", intro, absent("No per-source counts in this run (no build)."))
    stages = [stage for stage in stage_order(data)[1:]] or sorted({s for c in data.sources.values() for s in c.removed})
    splits = sorted({split for c in data.sources.values() for split in c.tokens})
    rows = []
    for name, c in data.sources.items():
        rows.append([name, num(c.input), num(c.rejected), *[num(c.removed.get(stage, 0)) for stage in stages], num(c.kept),
                     share(c.kept, c.input) if c.input else "–", num(c.kept_chars),
                     *[num(c.tokens.get(split, 0)) for split in splits]])
    headers = ["source", "input", "rejected", *[f"removed by {stage}" for stage in stages], "kept", "of input",
               "kept characters", *[f"{split} tokens" for split in splits]]
    body = (figure(plots.source_funnel({name: c for name, c in data.sources.items()}, stages),
                   "Share of each source's input kept, removed by each stage and rejected")
            + table(headers, rows, numeric=tuple(range(1, len(headers))), cls="sources"))
    balanced = [c.balanced for c in data.sources.values()]
    if not data.sources_exact:
        body += note("removed/ was not written: removals per stage are the drop in each source's documents across "
                     "the stage (documents a stage raised on included, they are also counted as rejected).")
    elif all(b is True for b in balanced):
        body += note("For every source, input = kept + removed + rejected.")
    elif any(b is False for b in balanced):
        body += note("For some source, input ≠ kept + removed + rejected: the shards do not match stats.json.")
    if any(c.rejected is None for c in data.sources.values()):
        body += note("rejected/ was not written: rejections per source are not known (–).")
    if splits:
        body += note("Tokens are those written to the token shards, per split, counted from their source column.")
    return Section("sources", "Sources", intro, body)


def _doc_card(sample) -> Markup:
    details = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}"
                        for k, v in sorted(sample.details.items()))
    return MACROS.doc_card(sample, details)


def _reason_blocks(groups: list[ReasonSamples], total: int) -> Markup:
    return MACROS.reason_blocks([(group, share(group.count, total), [_doc_card(s) for s in group.samples])
                                 for group in groups])


def compare_section(data: RunData) -> Section:
    intro = ("Kept documents, spread evenly over the clean shards, beside one removed document for each of the most "
             "frequent removal reasons: what the corpus keeps against what it drops. Each card lists the values "
             "stored with the document.")
    if not data.kept_samples and not data.removed_samples:
        return Section("compare", "Kept beside removed", intro, absent("No clean or removed shards in this run."))
    removed = [(f"{group.stage} · {group.reason}", _doc_card(group.samples[0]))
               for group in data.removed_samples if group.samples]
    return Section("compare", "Kept beside removed", intro,
                   MACROS.compare([_doc_card(s) for s in data.kept_samples], removed))


def samples_section(data: RunData, per_reason: int) -> Section:
    intro = ("A few documents removed for each of the most frequent reasons, spread evenly over the removed "
             "shards, so a person can judge whether a rule is too strict. Text is shown as that stage saw it, "
             "truncated, with personal data replaced by placeholders (always, on this page).")
    if not data.removed_samples:
        text = ("No removed records were written (output.write_removed is off)." if data.stats and data.stats["removed"]["total"]
                else "Nothing was removed." if data.stats else "No build in this run.")
        return Section("samples", "Removed documents, by reason", intro, absent(text))
    total = (data.stats or {}).get("removed", {}).get("total", 0)
    return Section("samples", "Removed documents, by reason", intro, _reason_blocks(data.removed_samples, total))


def rejected_section(data: RunData) -> Section:
    intro = ("Input records that could not become documents (malformed JSON, invalid UTF-8, missing text, "
             "truncated files ...), with a short preview of the raw bytes and where they are; and documents a "
             "stage raised on (stage_error: the stage, exception type and message; their text stays in rejected/).")
    rejected = (data.stats or {}).get("rejected")
    if not rejected or not rejected["total"]:
        return Section("rejected", "Rejected input", intro,
                       absent("No input was rejected." if data.stats else "No build in this run."))
    total = rejected["total"]
    samples = {group.reason: group.samples for group in data.rejected_samples}
    rows = []
    for reason, n in sorted(rejected["reasons"].items(), key=lambda kv: (-kv[1], kv[0])):
        examples = samples.get(reason) or [None]
        for i, sample in enumerate(examples):
            if reason == STAGE_ERROR:  # a document's text, which only rejected/ holds
                raw = MACROS.more("(in rejected/)") if sample else ""
            else:
                raw = (MACROS.raw_preview(sample.text) if sample and sample.text
                       else MACROS.more("(none)") if sample else "")
            rows.append((reason if i == 0 else "", num(n) if i == 0 else "", share(n, total) if i == 0 else "",
                         sample.id if sample else "", sample.details.get("detail", "") if sample else "", raw))
    body = table(["reason", "records", "share", "example (file:record, or document id)", "detail", "raw preview"],
                 rows, numeric=(1, 2), cls="rejected")
    errors = rejected.get("stage_errors") or {}
    if errors:
        body += table(["stage", "exception", "records"],
                      [(stage, error, num(n)) for stage, by_type in errors.items()
                       for error, n in sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))], numeric=(2,))
    if not rejected_samples_written(data):
        body += note("Rejected records were not written (output.write_rejected is off); only the counts are known.")
    return Section("rejected", "Rejected input", intro, body)


def rejected_samples_written(data: RunData) -> bool:
    return any(group.samples for group in data.rejected_samples)


def _visible(token: str) -> str:
    return token.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")


def tokenizer_section(data: RunData) -> Section:
    intro = ("The tokenizer trained on the clean shards, measured on held-out documents: more bytes per token "
             "means better compression (shorter sequences for the same text).")
    rep = data.tokenizer
    if not rep and not data.tokens:
        return Section("tokenizer", "Tokenizer", intro,
                       absent("No tokenizer in this run (no tokenizer/report.json): run `corpusforge tokenizer train`."))
    body = Markup()
    if rep:
        held, train = rep.get("heldout") or {}, rep.get("training") or {}
        body += facts([
            ("algorithm", f"{rep.get('kind', '–')} · {rep.get('family', '–')} family"),
            ("vocabulary", f"{num(rep.get('vocab_size'))} (asked {num(rep.get('requested_vocab_size'))})"),
            ("bytes / token", num(held.get("bytes_per_token"), 3)),
            ("characters / token", num(held.get("chars_per_token"), 3)),
            ("unknown tokens", share(held["unk_share"], 1, 3) if held.get("unk_share") is not None else "–"),
            ("exact round trip", share(held["round_trip_share"], 1) if held.get("round_trip_share") is not None else "–"),
            ("trained on", f"{num(train.get('documents'))} documents, {size(train.get('bytes') or 0)} "
                           f"in {num(train.get('seconds'), 1)} s"),
            ("special tokens", ", ".join(f"{k}={v}" for k, v in (rep.get("special_tokens") or {}).items()) or "–"),
        ])
        longest = rep.get("longest_tokens") or []
        if longest:
            body += heading("Longest tokens") + table(
                ["id", "token (␣ = space)", "vocabulary entry", "bytes"],
                [(t.get("id"), _visible(t.get("text", "")), t.get("token", ""), t.get("bytes")) for t in longest],
                numeric=(0, 3), cls="tokens")
    if data.tokens:
        splits = data.tokens.get("splits") or {}
        body += heading("Token shards") + table(
            ["split", "documents", "tokens", "tokens / document", "shards"],
            [(name, num(s.get("documents")), num(s.get("tokens")),
              num(s["tokens"] / s["documents"], 1) if s.get("documents") else "–", num(len(s.get("shards") or [])))
             for name, s in splits.items()], numeric=(1, 2, 3, 4))
        body += note(f"dtype {data.tokens.get('dtype', '–')}, vocabulary {num(data.tokens.get('vocab_size'))}.")
    return Section("tokenizer", "Tokenizer", intro, body)


def training_section(data: RunData) -> Section:
    intro = ("The pretraining run: training loss (averaged over each logging window), validation loss on the "
             "fixed held-out windows, the learning-rate schedule and throughput.")
    tr = data.training
    if not tr or not (tr.train or tr.val):
        return Section("training", "Training", intro,
                       absent("No training in this run (no model/metrics.jsonl): run `corpusforge train`."))
    cfg = tr.config or {}
    model = cfg.get("model") or {}
    last = tr.train[-1] if tr.train else {}
    speeds = [r["tokens_per_s"] for r in tr.train if isinstance(r.get("tokens_per_s"), (int, float))]
    pairs = [
        ("objective", f"{cfg.get('objective', '–')} · {model.get('arch', '–')}" if cfg else "– (training not finished)"),
        ("steps", num(max([r.get("step", 0) for r in tr.train + tr.val], default=0))),
        ("final train loss", num(last.get("loss"), 4)),
        ("median tokens/s", num(statistics.median(speeds)) if speeds else "–"),
    ]
    if tr.val:
        v = tr.val[-1]
        pairs.append(("final validation loss", num(v.get("loss"), 4)))
        if _is_rtd(v):  # ELECTRA: the combined loss has no perplexity; each half is named
            pairs += [("final generator masked-LM loss", num(v.get("generator_loss"), 4)),
                      ("final discriminator accuracy", f"{share(v['discriminator_accuracy'], 1)} "
                                                       f"({share(v.get('replaced_share') or 0, 1)} of tokens replaced)")]
        else:
            pairs.append(("final validation perplexity", num(v.get("ppl"), 2)))
    if model:
        pairs.append(("model", f"d_model {model.get('d_model')}, {model.get('n_layers')} layers, "
                               f"{model.get('n_heads')} heads, vocab {num(model.get('vocab_size'))}"))
    if any("mfu" in r for r in tr.train):
        pairs.append(("last MFU", share(tr.train[-1].get("mfu") or 0, 1)))
    body = facts(pairs)
    if tr.train:
        body += figure(plots.training_curves(tr.train, tr.val), "Loss, learning rate and throughput against step")
    if tr.val and _is_rtd(tr.val[-1]):
        body += heading("Validation") + table(
            ["step", "loss", "generator loss", "discriminator loss", "discriminator accuracy", "tokens"],
            [(r.get("step"), num(r.get("loss"), 4), num(r.get("generator_loss"), 4), num(r.get("discriminator_loss"), 4),
              share(r["discriminator_accuracy"], 1) if _is_rtd(r) else "–", num(r.get("tokens")))
             for r in tr.val], numeric=(0, 1, 2, 3, 4, 5))
    elif tr.val:
        body += heading("Validation") + table(
            ["step", "loss", "perplexity", "accuracy", "tokens"],
            [(r.get("step"), num(r.get("loss"), 4), num(r.get("ppl"), 2),
              share(r["accuracy"], 1) if isinstance(r.get("accuracy"), (int, float)) else "–", num(r.get("tokens")))
             for r in tr.val], numeric=(0, 1, 2, 3, 4))
    return Section("training", "Training", intro, body)


def _is_rtd(record: dict) -> bool:
    """A validation record of the ELECTRA (rtd) objective: generator and discriminator figures, no perplexity."""
    return isinstance(record.get("discriminator_accuracy"), (int, float))


def details_section(data: RunData) -> Section:
    intro = "How the build ran: stages, runner, time, output and library versions, and the full configuration."
    m = data.manifest
    if not m and not data.stats:
        return Section("details", "Run details", intro, absent("No build manifest in this run."))
    m = m or {}
    timing = (data.stats or {}).get("timing", {})
    config = m.get("config") or {}
    pairs = [
        ("run directory", data.run_dir),
        ("stages", " → ".join(["read", *m.get("stages", [])])),
        ("runner", (config.get("beam") or {}).get("runner", "–")),
        ("wall time", f"{num(timing.get('wall_seconds'), 1)} s" if timing else "–"),
        ("records / s", num(timing.get("records_per_second"), 1) if timing else "–"),
        ("clean output", f"{num(m.get('rows'))} documents, {size(m.get('bytes') or 0)} in {len(m.get('shards') or [])} shards"
         if m else "–"),
    ]
    body = facts(pairs)
    if m.get("versions"):
        body += note("Versions: " + ", ".join(f"{k} {v}" for k, v in m["versions"].items()) + ".")
    if config:
        body += MACROS.config(json.dumps(config, indent=2, ensure_ascii=False))
    metrics = (data.stats or {}).get("metrics")
    if metrics:
        body += _metrics_block(metrics)
    return Section("details", "Run details", intro, body)


def _metrics_block(metrics: dict[str, Any]) -> Markup:
    """The runner's Beam metrics from stats.json, by namespace, folded away (they are diagnostics)."""
    if "unavailable" in metrics:
        return note(f"The runner reported no Beam metrics ({metrics['unavailable']}).")
    rows = [(ns, name, num(value)) for ns, names in metrics.get("counters", {}).items() for name, value in names.items()]
    rows += [(ns, name, f"n={num(d['count'])}, mean {num(d['mean'], 2)}, min {num(d['min'])}, max {num(d['max'])}")
             for ns, names in metrics.get("distributions", {}).items() for name, d in names.items()]
    if not rows:
        return Markup("")
    return folded("Beam metrics", table(["namespace", "metric", "value"], rows, numeric=(2,)))


# ------------------------------------------------------------------------------------------------ header
def privacy_banner(data: RunData) -> str:
    """A warning when the run's files hold personal data in clear (the page itself never shows it)."""
    config = (data.manifest or {}).get("config") or {}
    pii = config.get("pii") or {}
    if not config or not data.stats:
        return ""
    if not pii.get("enabled", True):
        text = ("The PII stage did not run: clean/, removed/ and rejected/ hold personal data in clear. "
                "Texts on this page are scrubbed.")
    elif pii.get("scrub_removed") is False:
        text = ("pii.scrub_removed is false: removed/ and rejected/ hold the raw text of what was removed, "
                "personal data included (kept for an audit). Texts on this page are scrubbed.")
    else:
        return ""
    return text


def key_numbers(data: RunData) -> list[tuple[str, str, str]]:
    """(label, value, sub-line) for the header cards."""
    cards = []
    s, m = data.stats, data.manifest or {}
    if s:
        a = s["accounting"]
        funnel = s["funnel"]
        chars_in, chars_out = funnel[0]["chars"], funnel[-1]["chars"]
        cards += [
            ("input records", num(a["input"]), f"{a['rejected']:,} rejected as bad input"),
            ("kept documents", num(a["kept"]), f"{share(a['kept'], a['input'])} of input"),
            ("removed", num(a["removed"]), f"by {len(s['removed']['by_stage'])} stage(s)"),
            ("characters kept", plots.human(chars_out), f"{share(chars_out, chars_in)} of {plots.human(chars_in)} read"),
        ]
        langs = s.get("languages") or {}
        if langs:  # the kept documents' languages; the Languages chart adds those only removed documents have
            top, n = next(iter(sorted(langs.items(), key=lambda kv: -kv[1])))
            only_removed = len(set(data.removed_languages) - set(langs))
            cards.append(("languages kept", num(len(langs)), f"{top} {share(n, sum(langs.values()), 0)} of kept"
                          + (f"; {only_removed} more only in removed" if only_removed else "")))
        if m:
            fmt = (m.get("format") or {}).get("name", "arrow")
            count = len(m.get("shards") or [])
            cards.append(("clean shards", size(m.get("bytes") or 0),
                          f"{count} {fmt.capitalize() if fmt != 'jsonl' else 'JSON Lines'} file{'' if count == 1 else 's'}"))
        if s.get("timing", {}).get("wall_seconds") is not None:
            cards.append(("build time", f"{s['timing']['wall_seconds']:.1f} s",
                          f"{num(s['timing'].get('records_per_second'))} records/s"))
    if data.tokenizer:
        held = data.tokenizer.get("heldout") or {}
        cards.append(("vocabulary", num(data.tokenizer.get("vocab_size")),
                      f"{num(held.get('bytes_per_token'), 2)} bytes/token"))
    if data.training and data.training.val and _is_rtd(data.training.val[-1]):
        v = data.training.val[-1]
        cards.append(("discriminator accuracy", share(v["discriminator_accuracy"], 1),
                      f"generator loss {num(v.get('generator_loss'), 3)} at step {v.get('step')}"))
    elif data.training and data.training.val:
        v = data.training.val[-1]
        cards.append(("validation ppl", num(v.get("ppl"), 1), f"loss {num(v.get('loss'), 3)} at step {v.get('step')}"))
    elif data.training and data.training.train:
        t = data.training.train[-1]
        cards.append(("train loss", num(t.get("loss"), 3), f"at step {t.get('step')}"))
    return cards


def render(data: RunData, per_reason: int = 3, generated: _dt.datetime | None = None) -> str:
    sections = [funnel_section(data), sources_section(data), reasons_section(data), length_section(data),
                language_section(data), mixture_section(data), values_section(data),
                *[section(data) for stage in registered_stages() for section in stage.report_sections()],
                compare_section(data),
                samples_section(data, per_reason), rejected_section(data), tokenizer_section(data),
                training_section(data), details_section(data)]
    generated = generated or _dt.datetime.now().astimezone()
    m = data.manifest or {}
    meta = [data.run_dir]
    if m.get("created_unix"):
        meta.append("built " + _dt.datetime.fromtimestamp(m["created_unix"]).astimezone().strftime("%Y-%m-%d %H:%M %Z"))
    if m.get("corpusforge_version"):
        meta.append(f"corpusforge {m['corpusforge_version']}")
    return ENV.get_template("page.html").render(
        name=posixpath.basename(data.run_dir.rstrip("/")) or data.run_dir, meta=meta, cards=key_numbers(data),
        banner=privacy_banner(data), sections=sections, generated=generated.strftime("%Y-%m-%d %H:%M %Z"))
