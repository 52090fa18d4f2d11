"""DIR/ablation.html: one self-contained page (figures inlined as data: URIs) from ablation.json's content."""
from __future__ import annotations

from typing import Any

from corpusforge.pipeline.report import plots
from corpusforge.pipeline.report.page import CSS, Markup, esc, figure, num, table


def _interval(part: dict[str, float] | None) -> str:
    return f"[{part['low']:+.4f}, {part['high']:+.4f}]" if part else "– (one seed)"


def _needed(result: dict[str, Any]) -> str:
    out = []
    for need in result.get("needed", []):
        if need.get("at_this_budget"):
            out.append(f"{need['difference']:.4f}: this budget")
        elif need.get("tokens_per_model"):
            text = f"{need['difference']:.4f}: ~{num(need['tokens_per_model'])} tokens"
            if need.get("seeds_at_this_budget"):
                text += f" or {need['seeds_at_this_budget']} seeds"
            if need.get("heldout_documents"):
                text += f", ~{num(need['heldout_documents'])} held-out docs"
            out.append(text)
    return "; ".join(out)


def _group_table(variants: list[dict[str, Any]], field: str, versus: str, info: dict[str, Any]) -> Markup:
    groups = sorted({g for v in variants for g in v[field]})
    if len(groups) < 1:
        return Markup("")
    headers = ["variant"] + [f"{g or '–'} ({num(info[g]['documents'])} docs)" for g in groups]
    rows = []
    for v in variants:
        cells = [v["name"]]
        for g in groups:
            seeds = v[field].get(g)
            cell = f"{sum(seeds) / len(seeds):.4f}" if seeds else "–"
            c = v.get(versus, {}).get(g)
            if c:
                cell += f" ({c['difference']:+.4f} {_interval(c['documents'])}, {c['verdict']})"
            cells.append(cell)
        rows.append(cells)
    return table(headers, rows, numeric=range(1, len(groups) + 1))


def render(report: dict[str, Any]) -> str:
    variants = report["variants"]
    baseline = report.get("baseline", variants[0]["name"])
    rows = []
    for v in variants:
        s, c = v["bits_per_byte_summary"], v.get("vs_baseline")
        rows.append((v["name"], ", ".join(f"{k}={val}" for k, val in v["overrides"].items()) or "defaults",
                     f"{100 * v['kept_fraction']:.1f}%", num(v["documents"]), num(v["tokens"]), f"{v['epochs']:.2f}",
                     f"{s['mean']:.4f}", f"{s['std']:.4f}",
                     f"{c['difference']:+.4f}" if c else "baseline",
                     _interval(c["seeds"]) if c else "", _interval(c["documents"]) if c else "",
                     (c["verdict"] + (f" ({c['caveat']})" if "caveat" in c else "")) if c else "",
                     _needed(c) if c else "",
                     " ".join(f"{x:.4f}" for x in v["bits_per_byte"])))
    comparison = report.get("comparison", {})
    how = Markup(
        "<p>Differences are variant minus baseline (negative: fewer bits per byte, better). The seed interval is "
        f"a {100 * comparison.get('level', 0.95):.0f}% Student-t interval of the paired per-seed differences (seed s "
        "of both variants starts from the same weights); the document interval a paired bootstrap over the held-out "
        f"documents ({num(comparison.get('bootstrap_resamples'))} resamples, seed "
        f"{comparison.get('bootstrap_seed')}). The verdict says better or worse only when every interval excludes "
        "zero. When it does not, the last column estimates the tokens per model (assuming the seed noise shrinks "
        "like 1/sqrt(tokens) and the difference stays) or the seeds at this budget that would resolve "
        f"{comparison.get('resolve', 0.01)} bits per byte and the observed difference.</p>")
    heldout = report["heldout"]
    by_source = _group_table(variants, "by_source", "vs_baseline_by_source", heldout.get("sources", {}))
    by_language = _group_table(variants, "by_language", "vs_baseline_by_language", heldout.get("languages", {}))
    loo = Markup("")
    if report.get("leave_one_out"):
        loo = Markup("<h2>Leave one out</h2><p>Each part of the section switched off alone. <em>removes</em>: the "
                     "share of the input's characters (and documents) the reference keeps less than the variant "
                     "without the part, i.e. what only that part removes. <em>effect</em>: reference minus the "
                     "variant (positive: the part costs bits per byte).</p>") + table(
            ["left out", "removes (chars)", "removes (docs)", "effect", "seeds", "documents", "verdict"],
            [(r["variant"], f"{100 * r['removes_chars_fraction']:.1f}%", f"{100 * r['removes_documents_fraction']:.1f}%",
              f"{r['effect']['difference']:+.4f}", _interval(r["effect"]["seeds"]),
              _interval(r["effect"]["documents"]),
              r["verdict"] + (f" ({r['effect']['caveat']})" if "caveat" in r["effect"] else ""))
             for r in report["leave_one_out"]],
            numeric=(1, 2, 3))
    funnels = Markup("").join(
        Markup(f"<h3>{esc(v['name'])}</h3>") + figure(
            plots.funnel([r["stage"] for r in v["funnel"]], [r["documents"] for r in v["funnel"]],
                         [r["chars"] for r in v["funnel"]]), f"funnel of {v['name']}")
        for v in variants if v["funnel"])
    model = report["model"]
    intro = (f"{len(variants)} variants; each trains a {model['size']} {model['family']} model "
             f"({num(model['parameters'])} parameters, objective {model['objective']}) for exactly "
             f"{num(report['tokens_per_model'])} tokens ({report['steps']} steps) per seed, seeds "
             f"{', '.join(map(str, report['seeds']))}, with one shared tokenizer; bits per byte on "
             f"{num(heldout['documents'])} held-out documents ({num(heldout['bytes'])} bytes). "
             "Epochs above 1 mean the variant's data was repeated to reach the budget.")
    body = (Markup(f"<p>{esc(intro)}</p>")
            + table(["variant", "overrides", "kept", "documents", "tokens", "epochs", "bits/byte", "seed std",
                     f"vs {baseline}", "seed interval", "document interval", "verdict", "to resolve", "per seed"],
                    rows, numeric=(2, 3, 4, 5, 6, 7, 8))
            + how
            + figure(plots.bits_per_byte_by_variant([v["name"] for v in variants],
                                                    [v["bits_per_byte"] for v in variants]),
                     "bits per byte per variant, one dot per seed")
            + loo
            + (Markup("<h3>Per held-out source (mean over seeds; vs baseline, document interval)</h3>") + by_source
               if by_source else Markup(""))
            + (Markup("<h3>Per language of the held-out documents (language ID of the quality stage)</h3>")
               + by_language if by_language else Markup(""))
            + Markup("<h2>Funnels</h2>") + funnels)
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>corpusforge ablation</title><style>{CSS}</style></head><body><div class=\"wrap\">"
            f"<section><h1>corpusforge ablation</h1>{body}</section></div></body></html>")
