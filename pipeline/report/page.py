"""The report as one self-contained HTML page: inline CSS, figures as ``data:`` PNGs, no scripts, no network.

Every piece of text that comes from the run (reasons, ids, document text, tokens, config values) goes
through ``esc`` before it reaches the page.
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import posixpath
import statistics
from collections import Counter
from typing import Any, Iterable, Sequence

from corpusforge.pipeline.core.faults import STAGE_ERROR
from corpusforge.pipeline.report import plots
from corpusforge.pipeline.report.collect import ReasonSamples, RunData


class Markup(str):
    """HTML that is already safe (built here from escaped parts)."""


def esc(value: Any) -> Markup:
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value), quote=True))


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


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = (), cls: str = "") -> Markup:
    head = "".join(f'<th class="{"num" if i in numeric else ""}">{esc(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"num" if i in numeric else ""}">{esc(c)}</td>' for i, c in enumerate(row)) + "</tr>"
        for row in rows)
    return Markup(f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def figure(uri: str, alt: str, caption: str = "") -> Markup:
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return Markup(f'<figure><img src="{uri}" alt="{esc(alt)}">{cap}</figure>')


def facts(pairs: Iterable[tuple[str, Any]]) -> Markup:
    items = "".join(f"<div><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>" for k, v in pairs)
    return Markup(f'<dl class="facts">{items}</dl>')


def note(text: str) -> Markup:
    return Markup(f'<p class="note">{esc(text)}</p>')


def absent(text: str) -> Markup:
    return Markup(f'<p class="absent">{esc(text)}</p>')


class Section:
    def __init__(self, id: str, title: str, intro: str, body: Markup):
        self.id, self.title, self.intro, self.body = id, title, intro, body

    def html(self) -> str:
        return (f'<section id="{esc(self.id)}"><h2>{esc(self.title)}</h2><p class="intro">{esc(self.intro)}</p>'
                f"{self.body}</section>")


# ------------------------------------------------------------------------------------------------ sections
def _stage_order(data: RunData) -> list[str]:
    return [row["stage"] for row in data.stats["funnel"]] if data.stats else []


def funnel_section(data: RunData) -> Section:
    intro = ("Every input record ends kept, removed by a stage (with a reason) or rejected as unreadable input "
             "(or because a stage raised on it, stage_error). The bars show what is left after each stage; the "
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
    body = Markup(
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
    body = Markup(figure(plots.removal_reasons(rows, _stage_order(data)), "Removed documents per reason")
                  + Markup(f"<details><summary>All {len(rows)} reasons as a table</summary>")
                  + table(["stage", "reason", "documents", "of removed"],
                          [(s, r, num(n), share(n, total)) for s, r, n in sorted(rows, key=lambda r: (-r[2], r[0], r[1]))],
                          numeric=(2, 3))
                  + Markup("</details>"))
    edits = stats.get("edits") or {}
    if edits:
        body += Markup("<h3>Edits (documents kept, text changed)</h3>") + table(
            ["stage", "counter", "amount"],
            [(stage, counter, num(n)) for stage, counters in edits.items() for counter, n in counters.items()],
            numeric=(2,))
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
    body = figure(plots.languages(kept, removed), "Documents per language")
    body += table(["language", "kept documents", "of kept", "removed (sample)"],
                  [(lang, num(kept.get(lang, 0)), share(kept.get(lang, 0), total), num(removed.get(lang, 0)))
                   for lang in sorted(set(kept) | set(removed), key=lambda k: (-kept.get(k, 0), -removed.get(k, 0), k))[:25]],
                  numeric=(1, 2, 3))
    body += note(f"Kept counts are exact; removed counts come from {_coverage(data.removed_coverage)} removed records.")
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
    body = Markup("")
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


def _coverage(cov) -> str:
    return f"all {cov.rows_total:,}" if cov.complete else f"a sample of {cov.rows_read:,} of {cov.rows_total:,}"


def scores_section(data: RunData) -> Section:
    intro = ("Scores the stages attached to documents (language-ID confidence, classifier scores), for kept and "
             "removed documents. A threshold sits where red meets blue; blue mass right at it suggests a strict rule.")
    scores = {k: v for k, v in data.scores.items() if k.endswith("_score") and (v["kept"] or v["removed"])}
    if not scores:
        return Section("scores", "Quality scores", intro, absent("No scores in the annotations of this run."))
    rows = []
    for key in sorted(scores):
        for side in ("kept", "removed"):
            values = scores[key][side]
            if values:
                q = statistics.quantiles(values, n=10) if len(values) > 1 else [values[0]] * 9
                rows.append((key, side, num(len(values)), num(min(values), 3), num(q[0], 3), num(statistics.median(values), 3),
                             num(q[-1], 3), num(max(values), 3)))
    body = Markup(figure(plots.score_histograms(scores), "Histograms of scores, kept against removed")
                  + table(["score", "documents", "count", "min", "p10", "median", "p90", "max"], rows,
                          numeric=(2, 3, 4, 5, 6, 7))
                  + note(f"From {_coverage(data.clean_coverage)} kept and {_coverage(data.removed_coverage)} removed "
                         "records. Removed documents carry only the scores of the steps they reached."))
    return Section("scores", "Quality scores", intro, body)


def dedup_section(data: RunData) -> Section:
    intro = ("Near-duplicate and exact-duplicate clusters: one survivor is kept per cluster, the others are removed "
             "by the dedup stage. Large clusters are usually boilerplate or mirrored pages.")
    by_stage = (data.stats or {}).get("removed", {}).get("by_stage", {})
    dedup = by_stage.get("dedup")
    if not data.cluster_sizes:
        text = ("Deduplication did not run in this build." if "dedup" not in _stage_order(data) else
                "No duplicates were found." if not dedup else
                "The dedup removals do not record cluster sizes or survivors.")
        return Section("dedup", "Duplicates", intro, absent(text))
    clusters = sum(data.cluster_sizes.values())
    biggest = max(data.cluster_sizes)
    body = Markup(facts([("clusters", num(clusters)), ("documents removed as duplicates", num(dedup["total"] if dedup else 0)),
                         ("largest cluster", num(biggest)),
                         ("reasons", ", ".join(f"{r} {n:,}" for r, n in (dedup or {}).get("reasons", {}).items()) or "–")])
                  + figure(plots.cluster_sizes(dict(data.cluster_sizes)), "Clusters by size"))
    if data.dedup_rows_read < data.dedup_rows_total:
        body += note(f"Cluster sizes from the first {data.dedup_rows_read:,} of {data.dedup_rows_total:,} dedup removals.")
    return Section("dedup", "Duplicates", intro, body)


def pii_section(data: RunData) -> Section:
    intro = ("Personal data found and masked by the PII stage (Presidio recognizers), by entity type. Documents stay "
             "in the corpus with the entities replaced; only documents dominated by PII are removed.")
    edits = (data.stats or {}).get("edits", {}).get("pii", {})
    entities = {k[len("entity_"):]: v for k, v in edits.items() if k.startswith("entity_")}
    if not entities:
        text = "The PII stage did not run in this build." if "pii" not in _stage_order(data) else "No PII was found."
        return Section("pii", "Personal data (PII)", intro, absent(text))
    removed = (data.stats or {}).get("removed", {}).get("by_stage", {}).get("pii", {})
    body = Markup(facts([("entities masked", num(sum(entities.values()))),
                         ("documents changed", num(edits.get("docs_changed", 0))),
                         ("documents removed", num(removed.get("total", 0)))])
                  + figure(plots.horizontal_counts(entities, "PII entities masked, by type", "entities"),
                           "PII entities by type"))
    per_doc = (data.scores.get("pii_count") or {}).get("kept") or []
    if per_doc:
        counts = Counter("5+" if v >= 5 else str(int(v)) for v in per_doc)
        body += note("Kept documents by entities masked in them: "
                     + ", ".join(f"{k}: {counts[k]:,}" for k in ["0", "1", "2", "3", "4", "5+"] if counts[k])
                     + f" (from {_coverage(data.clean_coverage)} kept documents).")
    return Section("pii", "Personal data (PII)", intro, body)


def _doc_card(sample) -> str:
    more = sample.chars - len(sample.text)
    tail = f'<span class="more">… {more:,} more characters</span>' if more > 0 else ""
    details = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}"
                        for k, v in sorted(sample.details.items()))
    meta = [f'<span class="id">{esc(sample.id)}</span>', esc(sample.source), f'<span class="nowrap">{sample.chars:,} characters</span>']
    if details:
        meta.append(f'<span class="details">{esc(details)}</span>')
    text = esc(sample.text) if sample.text else '<span class="more">(empty)</span>'
    return (f'<article class="doc"><div class="doc-meta">{" · ".join(meta)}</div>'
            f"<pre>{text}{tail}</pre></article>")


def _reason_blocks(groups: list[ReasonSamples], total: int) -> Markup:
    out = []
    for group in groups:
        badge = f'<span class="badge">{esc(group.stage)}</span>'
        head = (f'<h3>{badge}<code>{esc(group.reason)}</code><span class="count">{group.count:,} '
                f'removed · {share(group.count, total)}</span></h3>')
        cards = "".join(_doc_card(s) for s in group.samples) or absent("No sample found in the shards.")
        out.append(f'<div class="reason">{head}<div class="docs">{cards}</div></div>')
    return Markup("".join(out))


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
                raw = Markup('<span class="more">(in rejected/)</span>') if sample else ""
            else:
                raw = (Markup(f'<code class="raw">{esc(sample.text)}</code>') if sample and sample.text
                       else Markup('<span class="more">(none)</span>') if sample else "")
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
            body += Markup("<h3>Longest tokens</h3>") + table(
                ["id", "token (␣ = space)", "vocabulary entry", "bytes"],
                [(t.get("id"), _visible(t.get("text", "")), t.get("token", ""), t.get("bytes")) for t in longest],
                numeric=(0, 3), cls="tokens")
    if data.tokens:
        splits = data.tokens.get("splits") or {}
        body += Markup("<h3>Token shards</h3>") + table(
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
        pairs += [("final validation loss", num(tr.val[-1].get("loss"), 4)),
                  ("final validation perplexity", num(tr.val[-1].get("ppl"), 2))]
    if model:
        pairs.append(("model", f"d_model {model.get('d_model')}, {model.get('n_layers')} layers, "
                               f"{model.get('n_heads')} heads, vocab {num(model.get('vocab_size'))}"))
    if any("mfu" in r for r in tr.train):
        pairs.append(("last MFU", share(tr.train[-1].get("mfu") or 0, 1)))
    body = facts(pairs)
    if tr.train:
        body += figure(plots.training_curves(tr.train, tr.val), "Loss, learning rate and throughput against step")
    if tr.val:
        body += Markup("<h3>Validation</h3>") + table(
            ["step", "loss", "perplexity", "accuracy", "tokens"],
            [(r.get("step"), num(r.get("loss"), 4), num(r.get("ppl"), 2),
              share(r["accuracy"], 1) if isinstance(r.get("accuracy"), (int, float)) else "–", num(r.get("tokens")))
             for r in tr.val], numeric=(0, 1, 2, 3, 4))
    return Section("training", "Training", intro, body)


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
        body += Markup(f'<details><summary>Configuration</summary><pre class="config">'
                       f"{esc(json.dumps(config, indent=2, ensure_ascii=False))}</pre></details>")
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
    return Markup("<details><summary>Beam metrics</summary>") + table(["namespace", "metric", "value"], rows,
                                                                        numeric=(2,)) + Markup("</details>")


# ------------------------------------------------------------------------------------------------ header
def privacy_banner(data: RunData) -> Markup:
    """A warning when the run's files hold personal data in clear (the page itself never shows it)."""
    config = (data.manifest or {}).get("config") or {}
    pii = config.get("pii") or {}
    if not config or not data.stats:
        return Markup("")
    if not pii.get("enabled", True):
        text = ("The PII stage did not run: clean/, removed/ and rejected/ hold personal data in clear. "
                "Texts on this page are scrubbed.")
    elif pii.get("scrub_removed") is False:
        text = ("pii.scrub_removed is false: removed/ and rejected/ hold the raw text of what was removed, "
                "personal data included (kept for an audit). Texts on this page are scrubbed.")
    else:
        return Markup("")
    return Markup(f'<div class="banner" role="alert">{esc(text)}</div>')


def key_numbers(data: RunData) -> list[tuple[str, str, str]]:
    """(label, value, sub-line) for the header cards."""
    cards = []
    s, m = data.stats, data.manifest or {}
    if s:
        a = s["accounting"]
        funnel = s["funnel"]
        chars_in, chars_out = funnel[0]["chars"], funnel[-1]["chars"]
        cards += [
            ("input records", num(a["input"]), f"{a['rejected']:,} rejected as unreadable"),
            ("kept documents", num(a["kept"]), f"{share(a['kept'], a['input'])} of input"),
            ("removed", num(a["removed"]), f"by {len(s['removed']['by_stage'])} stage(s)"),
            ("characters kept", plots.human(chars_out), f"{share(chars_out, chars_in)} of {plots.human(chars_in)} read"),
        ]
        langs = s.get("languages") or {}
        if langs:
            top, n = next(iter(sorted(langs.items(), key=lambda kv: -kv[1])))
            cards.append(("languages", num(len(langs)), f"{top} {share(n, sum(langs.values()), 0)} of kept"))
        if m:
            cards.append(("clean shards", size(m.get("bytes") or 0), f"{len(m.get('shards') or [])} Arrow files"))
        if s.get("timing", {}).get("wall_seconds") is not None:
            cards.append(("build time", f"{s['timing']['wall_seconds']:.1f} s",
                          f"{num(s['timing'].get('records_per_second'))} records/s"))
    if data.tokenizer:
        held = data.tokenizer.get("heldout") or {}
        cards.append(("vocabulary", num(data.tokenizer.get("vocab_size")),
                      f"{num(held.get('bytes_per_token'), 2)} bytes/token"))
    if data.training and data.training.val:
        v = data.training.val[-1]
        cards.append(("validation ppl", num(v.get("ppl"), 1), f"loss {num(v.get('loss'), 3)} at step {v.get('step')}"))
    elif data.training and data.training.train:
        t = data.training.train[-1]
        cards.append(("train loss", num(t.get("loss"), 3), f"at step {t.get('step')}"))
    return cards


def render(data: RunData, per_reason: int = 3, generated: _dt.datetime | None = None) -> str:
    sections = [funnel_section(data), reasons_section(data), length_section(data), language_section(data),
                mixture_section(data),
                scores_section(data), dedup_section(data), pii_section(data), samples_section(data, per_reason),
                rejected_section(data), tokenizer_section(data), training_section(data), details_section(data)]
    generated = generated or _dt.datetime.now().astimezone()
    m = data.manifest or {}
    meta = [esc(data.run_dir)]
    if m.get("created_unix"):
        meta.append(esc("built " + _dt.datetime.fromtimestamp(m["created_unix"]).astimezone().strftime("%Y-%m-%d %H:%M %Z")))
    if m.get("corpusforge_version"):
        meta.append(esc(f"corpusforge {m['corpusforge_version']}"))
    cards = "".join(f'<div class="card"><div class="label">{esc(l)}</div><div class="value">{esc(v)}</div>'
                    f'<div class="sub">{esc(sub)}</div></div>' for l, v, sub in key_numbers(data))
    nav = "".join(f'<a href="#{esc(s.id)}">{esc(s.title)}</a>' for s in sections)
    name = posixpath.basename(data.run_dir.rstrip("/")) or data.run_dir
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="corpusforge report">
<title>{esc(name)} · corpusforge report</title>
<style>{CSS}</style>
</head>
<body>
<header class="hero"><div class="wrap">
<div class="eyebrow">corpusforge run report</div>
<h1>{esc(name)}</h1>
<p class="meta">{' · '.join(meta)}</p>
<div class="cards">{cards}</div>
{privacy_banner(data)}
</div></header>
<nav class="toc"><div class="wrap">{nav}</div></nav>
<main class="wrap">
{''.join(s.html() for s in sections)}
</main>
<footer class="wrap">Generated {esc(generated.strftime('%Y-%m-%d %H:%M %Z'))} by <code>corpusforge report</code>.
This page is self-contained: it loads nothing from the network.</footer>
</body>
</html>
"""


CSS = """
:root { --ink:#1f2933; --muted:#616e7c; --line:#e4e7eb; --bg:#f5f7fa; --card:#fff; --accent:#4e79a7; --navy:#102a43; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin:0; background:var(--bg); color:var(--ink);
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "DejaVu Sans", Arial, sans-serif; }
.wrap { max-width: 1040px; margin: 0 auto; padding: 0 28px; }
code, pre, .id { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace; }
.hero { background: linear-gradient(135deg, #102a43 0%, #243b53 100%); color:#f0f4f8; padding: 34px 0 30px; }
.eyebrow { text-transform: uppercase; letter-spacing: .12em; font-size: 12px; color:#9fb3c8; font-weight:600; }
.hero h1 { margin: 4px 0 2px; font-size: 32px; font-weight: 700; letter-spacing: -.01em; word-break: break-all; }
.hero .meta { margin: 0 0 22px; color:#bcccdc; font-size: 13.5px; word-break: break-all; }
.cards { display:grid; grid-template-columns: repeat(auto-fill, minmax(172px, 1fr)); gap: 12px; }
.card { background: rgba(255,255,255,.07); border: 1px solid rgba(255,255,255,.13); border-radius: 10px; padding: 12px 14px; }
.card .label { font-size: 11.5px; text-transform: uppercase; letter-spacing: .08em; color:#9fb3c8; }
.card .value { font-size: 25px; font-weight: 700; font-variant-numeric: tabular-nums; margin-top: 2px; color:#fff; }
.card .sub { font-size: 12.5px; color:#bcccdc; }
.toc { background:#fff; border-bottom:1px solid var(--line); position: sticky; top: 0; z-index: 2; }
.toc .wrap { display:flex; flex-wrap: wrap; gap: 2px 18px; padding-top: 10px; padding-bottom: 10px; }
.toc a { color: var(--muted); text-decoration: none; font-size: 13.5px; }
.toc a:hover { color: var(--accent); }
section { background: var(--card); border:1px solid var(--line); border-radius: 12px; padding: 22px 26px 24px;
  margin: 22px 0; box-shadow: 0 1px 2px rgba(16,42,67,.04); }
h2 { margin: 0 0 4px; font-size: 21px; letter-spacing: -.01em; }
h3 { font-size: 15px; margin: 22px 0 8px; display:flex; align-items: baseline; gap: 8px; flex-wrap: wrap; }
.intro { color: var(--muted); margin: 0 0 14px; max-width: 78ch; }
figure { margin: 8px 0 14px; }
figure img { display:block; width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: 13px; }
table { border-collapse: collapse; width: 100%; font-size: 13.5px; margin: 6px 0 8px; }
th { text-align:left; font-weight:600; color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing:.04em;
  border-bottom: 2px solid var(--line); padding: 6px 8px; }
td { border-bottom: 1px solid var(--line); padding: 6px 8px; vertical-align: top; }
tbody tr:nth-child(even) td { background: #fafbfc; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.funnel td:last-child { color: var(--muted); font-size: 12.5px; min-width: 16em; }
table.rejected td { font-size: 12.5px; overflow-wrap: anywhere; }
table.rejected td:first-child { white-space: nowrap; overflow-wrap: normal; }
table.rejected td:nth-child(4) { min-width: 12em; }
table.rejected td:nth-child(4) { font-family: ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace; }
code.raw { white-space: pre-wrap; overflow-wrap: anywhere; display: block; max-height: 6em; overflow: hidden; }
table.tokens td:nth-child(2), table.tokens td:nth-child(3) { font-family: ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace; }
.banner { margin: 18px 0 0; padding: 10px 14px; border-radius: 8px; background: #fff3c4; color: #513c06; font-weight: 600; font-size: 14px; }
.note { color: var(--muted); font-size: 13px; margin: 8px 0 0; }
.absent { color: var(--muted); font-style: italic; background: var(--bg); border-radius: 8px; padding: 12px 14px; margin: 0; }
.facts { display:grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 10px 24px; margin: 4px 0 16px; }
.facts div { border-left: 3px solid var(--accent); padding-left: 10px; }
.facts dt { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .05em; }
.facts dd { margin: 0; font-weight: 600; font-variant-numeric: tabular-nums; word-break: break-word; }
.reason { margin-top: 18px; }
.reason h3 code { font-size: 14.5px; }
.badge { background: #e8eef5; color: var(--accent); border-radius: 999px; padding: 1px 9px; font-size: 12px; font-weight: 600; }
.count { color: var(--muted); font-weight: 400; font-size: 13px; }
.docs { display:grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 12px; }
.doc { border: 1px solid var(--line); border-radius: 8px; background: #fbfcfd; overflow: hidden; }
.doc-meta { font-size: 12px; color: var(--muted); padding: 7px 10px; border-bottom: 1px solid var(--line); background:#fff;
  overflow-wrap: anywhere; }
.nowrap { white-space: nowrap; }
.doc-meta .id { color: var(--ink); }
.doc-meta .details { color: #8a4b08; }
.doc pre { margin: 0; padding: 9px 10px; font-size: 12px; line-height: 1.5; white-space: pre-wrap; word-break: break-word;
  max-height: 15em; overflow: auto; }
.more { color: #9aa5b1; font-style: italic; }
details { margin-top: 10px; }
summary { cursor: pointer; color: var(--accent); font-weight: 600; }
pre.config { background: var(--bg); border-radius: 8px; padding: 12px; font-size: 12px; max-height: 28em; overflow: auto; }
footer { color: var(--muted); font-size: 12.5px; padding: 8px 28px 40px; }
@media print { .toc { position: static; } section { break-inside: avoid-page; } }
"""
