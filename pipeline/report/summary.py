"""The terminal summary ``corpusforge report`` prints: the build's summary, then tokenizer and training lines."""
from __future__ import annotations

import statistics

from corpusforge.pipeline.report.collect import RunData


def summary(data: RunData, report_path: str) -> str:
    from corpusforge.pipeline.stats import format_summary

    lines: list[str] = []
    if data.stats:
        lines.append(format_summary(data.stats))
    else:
        lines.append(f"no build in {data.run_dir} (no stats.json)")
    if data.cluster_sizes:
        clusters = sum(data.cluster_sizes.values())
        lines.append(f"duplicates: {clusters:,} clusters, largest {max(data.cluster_sizes):,} documents")
    rep = data.tokenizer
    if rep:
        held = rep.get("heldout") or {}
        lines.append(f"tokenizer: {rep.get('kind')} ({rep.get('family')}), vocabulary {rep.get('vocab_size', 0):,}, "
                     f"{held.get('bytes_per_token')} bytes/token, {held.get('chars_per_token')} chars/token on "
                     f"{held.get('documents', 0):,} held-out documents")
    if data.tokens:
        parts = [f"{name} {s.get('tokens', 0):,} tokens in {s.get('documents', 0):,} documents"
                 for name, s in (data.tokens.get("splits") or {}).items()]
        lines.append("token shards: " + ", ".join(parts))
    tr = data.training
    if tr and (tr.train or tr.val):
        parts = []
        if tr.train:
            last = tr.train[-1]
            parts.append(f"step {last.get('step')}: train loss {last.get('loss', float('nan')):.4f}")
            speeds = [r["tokens_per_s"] for r in tr.train if isinstance(r.get("tokens_per_s"), (int, float))]
            if speeds:
                parts.append(f"median {statistics.median(speeds):,.0f} tokens/s")
        if tr.val:
            v = tr.val[-1]
            if isinstance(v.get("discriminator_accuracy"), (int, float)):  # ELECTRA: each half under its name
                parts.append(f"val loss {v.get('loss', float('nan')):.4f} (generator {v.get('generator_loss', float('nan')):.4f}, "
                             f"discriminator accuracy {v['discriminator_accuracy']:.3f}) at step {v.get('step')}")
            else:
                parts.append(f"val loss {v.get('loss', float('nan')):.4f} (ppl {v.get('ppl', float('nan')):.2f}) at step {v.get('step')}")
        lines.append("training: " + ", ".join(parts))
    lines.append(f"report: {report_path}")
    return "\n".join(lines)
