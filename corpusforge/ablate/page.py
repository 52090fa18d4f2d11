"""DIR/ablation.html: one self-contained page (figures inlined as data: URIs) from ablation.json's content."""
from __future__ import annotations

from typing import Any

from corpusforge.pipeline.report import plots
from corpusforge.pipeline.report.page import CSS, Markup, esc, figure, num, table


def render(report: dict[str, Any]) -> str:
    variants = report["variants"]
    baseline = variants[0]["bits_per_byte_summary"]["mean"]
    rows = []
    for v in variants:
        s = v["bits_per_byte_summary"]
        rows.append((v["name"], ", ".join(f"{k}={val}" for k, val in v["overrides"].items()) or "defaults",
                     f"{100 * v['kept_fraction']:.1f}%", num(v["documents"]), num(v["tokens"]), f"{v['epochs']:.2f}",
                     f"{s['mean']:.4f}", f"{s['std']:.4f}", f"{s['mean'] - baseline:+.4f}",
                     " ".join(f"{x:.4f}" for x in v["bits_per_byte"])))
    sources = sorted({src for v in variants for src in v["by_source"]})
    by_source = Markup("")
    if sources:
        by_source = Markup("<h3>Per source (mean over seeds)</h3>") + table(
            ["variant", *sources],
            [(v["name"], *(f"{sum(v['by_source'][s]) / len(v['by_source'][s]):.4f}" if s in v["by_source"] else "–"
                           for s in sources)) for v in variants], numeric=range(1, len(sources) + 1))
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
             f"{num(report['heldout']['documents'])} held-out documents ({num(report['heldout']['bytes'])} bytes). "
             "Epochs above 1 mean the variant's data was repeated to reach the budget.")
    body = (Markup(f"<p>{esc(intro)}</p>")
            + table(["variant", "overrides", "kept", "documents", "tokens", "epochs", "bits/byte", "seed std",
                     f"vs {variants[0]['name']}", "per seed"], rows, numeric=(2, 3, 4, 5, 6, 7, 8))
            + figure(plots.bits_per_byte_by_variant([v["name"] for v in variants],
                                                    [v["bits_per_byte"] for v in variants]),
                     "bits per byte per variant, one dot per seed")
            + by_source + Markup("<h2>Funnels</h2>") + funnels)
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>corpusforge ablation</title><style>{CSS}</style></head><body><div class=\"wrap\">"
            f"<section><h1>corpusforge ablation</h1>{body}</section></div></body></html>")
