"""Is a difference in held-out bits per byte real? Paired comparisons of two variants, their verdict, and the
budget that would resolve one.

Two intervals, because two things vary:

- **seeds**: the models of one variant differ by their seed (initialisation, data order). Seed ``s`` of both
  variants starts from the same initial weights, so the differences ``d_s = bpb_a[s] - bpb_b[s]`` are paired;
  their mean has a Student-t interval with ``S - 1`` degrees of freedom (needs two seeds or more).
- **documents**: the held-out set is a sample of text. A paired bootstrap resamples its documents (the same
  documents for both variants, each document's NLL averaged over the seeds) and recomputes the difference of
  bits per byte (total NLL over total bytes); the 2.5th and 97.5th percentiles are the interval. It gives an
  interval even with one seed, but it does not see the seed noise.

The verdict is ``better`` (lower bits per byte than the baseline) or ``worse`` only when every interval there
is excludes zero on that side; otherwise ``no detectable difference at this budget``. With one seed only the
document interval exists, and the verdict carries a ``caveat``: seed noise (which at small budgets is often as
large as the differences between data variants) is not in it.

The budget (``needed``): to resolve a difference ``delta``, the interval's half-width must fall below it. The
estimate assumes the seed noise of a model's held-out loss shrinks like ``1/sqrt(tokens)`` (the standard error
of an average over ``tokens`` noisy gradient steps) and that ``delta`` itself stays the same at a larger
budget: ``tokens_needed = tokens x (t x se / delta)^2``. Both are assumptions, not measurements: a difference
between data variants often grows with the budget (then fewer tokens suffice), and the noise of a
well-converged model shrinks more slowly (then more are needed). The seeds needed at the current budget
(independent seeds: ``se = sd / sqrt(S)``) rest on no such assumption. The held-out set's own sampling noise
does not shrink with tokens or seeds: when the bootstrap's half-width alone exceeds ``delta``, more held-out
documents are needed (``documents x (1.96 x se_docs / delta)^2``).
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Sequence

import numpy as np

BETTER, WORSE, UNRESOLVED = "better", "worse", "no detectable difference at this budget"
ONE_SEED = "one seed: the interval covers the held-out sample only, not the seed noise"
LEVEL = 0.95
RESAMPLES = 1000
BOOTSTRAP_SEED = 1000  # fixed: the same inputs give the same interval
Z = statistics.NormalDist().inv_cdf(0.5 + LEVEL / 2)  # 1.96


def t_quantile(dof: int) -> float:
    """The two-sided ``LEVEL`` quantile of Student's t with ``dof`` degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(0.5 + LEVEL / 2, dof))


def seed_interval(a: Sequence[float], b: Sequence[float]) -> dict[str, float] | None:
    """Mean paired difference ``a[s] - b[s]`` over seeds with its t interval; None with fewer than two seeds."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} seeds against {len(b)}: a paired comparison needs the same seeds")
    if len(a) < 2:
        return None
    diffs = [x - y for x, y in zip(a, b)]
    mean, sd = statistics.fmean(diffs), statistics.stdev(diffs)
    se = sd / math.sqrt(len(diffs))
    half = t_quantile(len(diffs) - 1) * se
    return {"difference": mean, "low": mean - half, "high": mean + half, "sd": sd, "se": se, "seeds": len(diffs)}


def bootstrap_interval(nll_a: np.ndarray, nll_b: np.ndarray, nbytes: np.ndarray, resamples: int = RESAMPLES,
                       seed: int = BOOTSTRAP_SEED) -> dict[str, float]:
    """Paired bootstrap over documents of ``bpb(a) - bpb(b)``: ``nll_*`` are per-document NLL in bits (already
    averaged over seeds), ``nbytes`` each document's UTF-8 bytes. Percentile interval, fixed RNG seed."""
    nll_a, nll_b = np.asarray(nll_a, dtype=np.float64), np.asarray(nll_b, dtype=np.float64)
    nbytes = np.asarray(nbytes, dtype=np.float64)
    if not (nll_a.shape == nll_b.shape == nbytes.shape) or nbytes.ndim != 1 or not len(nbytes):
        raise ValueError("per-document losses and bytes must be equally long, non-empty vectors")
    point = float((nll_a.sum() - nll_b.sum()) / nbytes.sum())
    rng = np.random.default_rng(seed)
    n = len(nbytes)
    # how often each document is drawn in each resample: the resampled totals are then matrix products
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)
    diffs = (counts @ (nll_a - nll_b)) / (counts @ nbytes)
    low, high = np.quantile(diffs, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return {"difference": point, "low": float(low), "high": float(high), "se": float(diffs.std(ddof=1)),
            "documents": n, "resamples": resamples}


def verdict(intervals: Sequence[dict[str, float] | None]) -> str:
    """``better`` when every interval lies below zero, ``worse`` when every one lies above, else unresolved."""
    present = [i for i in intervals if i is not None]
    if present and all(i["high"] < 0 for i in present):
        return BETTER
    if present and all(i["low"] > 0 for i in present):
        return WORSE
    return UNRESOLVED


def needed(delta: float, tokens: int, seeds: dict[str, float] | None, docs: dict[str, float]) -> dict[str, Any]:
    """What would resolve a difference of ``delta`` bits per byte (see the module docstring for the model)."""
    delta = abs(delta)
    out: dict[str, Any] = {"difference": delta}
    if delta <= 0:
        return out | {"tokens_per_model": None, "note": "a difference of zero cannot be resolved"}
    if seeds is not None:
        half, source = t_quantile(seeds["seeds"] - 1) * seeds["se"], "seed spread"
        out["seeds_at_this_budget"] = seeds_needed(delta, seeds["sd"])
    else:
        half, source = Z * docs["se"], "bootstrap se (one seed: no seed spread measured)"
    out["tokens_per_model"] = max(tokens, math.ceil(tokens * (half / delta) ** 2)) if half > 0 else tokens
    out["at_this_budget"] = half < delta  # this budget's seed (or bootstrap) interval is narrower than delta
    out["from"] = source
    docs_half = Z * docs["se"]
    if docs_half >= delta:
        out["heldout_documents"] = math.ceil(docs["documents"] * (docs_half / delta) ** 2)
    return out


def seeds_needed(delta: float, sd: float, most: int = 1000) -> int | None:
    """The fewest seeds whose paired-difference t interval (seed spread ``sd``) is narrower than ``delta``."""
    if sd <= 0:
        return 2
    for count in range(2, most + 1):
        if t_quantile(count - 1) * sd / math.sqrt(count) < delta:
            return count
    return None


def compare(bpb_a: Sequence[float], bpb_b: Sequence[float], nll_a: np.ndarray, nll_b: np.ndarray,
            nbytes: np.ndarray, tokens: int, resolve: float) -> dict[str, Any]:
    """Variant ``a`` against ``b``: ``nll_*`` are (seeds, documents) NLL in bits, ``bpb_*`` the per-seed bits
    per byte. The difference is ``a - b`` (negative: ``a`` is better). ``needed`` (the budget that would resolve
    ``resolve`` bits per byte, and the observed difference) only when the verdict is unresolved."""
    seeds = seed_interval(bpb_a, bpb_b)
    docs = bootstrap_interval(np.mean(nll_a, axis=0), np.mean(nll_b, axis=0), nbytes)
    result: dict[str, Any] = {"difference": statistics.fmean(bpb_a) - statistics.fmean(bpb_b),
                              "seeds": seeds, "documents": docs, "verdict": verdict([seeds, docs])}
    if seeds is None:
        result["caveat"] = ONE_SEED
    if result["verdict"] == UNRESOLVED:
        result["needed"] = [needed(resolve, tokens, seeds, docs)]
        if abs(result["difference"]) > 0 and not math.isclose(abs(result["difference"]), resolve):
            result["needed"].append(needed(result["difference"], tokens, seeds, docs))
    return result


def describe(result: dict[str, Any]) -> str:
    """One line: the difference, its intervals and the verdict (and the budget when unresolved)."""
    parts = [f"{result['difference']:+.4f}"]
    if result["seeds"]:
        parts.append(f"seeds [{result['seeds']['low']:+.4f}, {result['seeds']['high']:+.4f}]")
    parts.append(f"documents [{result['documents']['low']:+.4f}, {result['documents']['high']:+.4f}]")
    line = f"{' '.join(parts)}: {result['verdict']}" + (f" ({result['caveat']})" if "caveat" in result else "")
    for need in result.get("needed", []):
        if need.get("at_this_budget"):
            line += f"; {need['difference']:.4f} is resolvable at this budget"
        elif need.get("tokens_per_model"):
            line += f"; {need['difference']:.4f} needs ~{need['tokens_per_model']:,} tokens per model"
            if need.get("seeds_at_this_budget"):
                line += f" or {need['seeds_at_this_budget']} seeds"
            if need.get("heldout_documents"):
                line += f" and ~{need['heldout_documents']:,} held-out documents"
    return line
