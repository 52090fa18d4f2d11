"""The report's figures: matplotlib (Agg backend) rendered to PNG and returned as ``data:`` URIs.

Each function takes plain numbers and returns a ``data:image/png;base64,...`` string, so the page needs
nothing from the network (or from disk) to show them.
"""
from __future__ import annotations

import base64
import functools
import io
import math
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

# One palette for the whole page (Tableau 10, which reads well for people with colour-vision deficiencies).
PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]
KEPT, REMOVED, INK, MUTED, GRID = "#4e79a7", "#e15759", "#1f2933", "#616e7c", "#e4e7eb"
WIDTH = 9.6  # inches; at DPI the PNG is 1.5 times the page's ~960 CSS pixels of content, sharp enough on HiDPI
DPI = 150

# Applied per figure (rc_context), never globally: other plots in the same process keep their own style.
STYLE = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.edgecolor": "#9aa5b1",
    "axes.labelcolor": INK,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlecolor": INK,
    "axes.titlelocation": "left",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": GRID,
    "grid.linewidth": 0.8,
    "axes.axisbelow": True,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "legend.frameon": False,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
}


def styled(function):
    """Draw ``function``'s figure under the report's style."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with plt.rc_context(STYLE):
            return function(*args, **kwargs)
    return wrapper


def stage_color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def human(n: float) -> str:
    """1234567 -> '1.2M' (axis labels)."""
    n = float(n)
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            value = n / size
            return f"{value:.0f}{unit}" if value >= 100 or value == int(value) else f"{value:.1f}{unit}"
    return f"{n:.0f}" if n == int(n) else f"{n:.2g}"


_HUMAN = FuncFormatter(lambda v, _pos: human(v))


def to_data_uri(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})  # tight_layout already fitted it
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


@styled
def funnel(stages: Sequence[str], documents: Sequence[int], chars: Sequence[int]) -> str:
    """Documents and characters left after each stage, as bars with the share of the input on top."""
    fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 2.9))
    for ax, values, title in ((axes[0], documents, "Documents after each stage"),
                              (axes[1], chars, "Characters after each stage")):
        colors = [stage_color(i) for i in range(len(stages))]
        bars = ax.bar(range(len(stages)), values, color=colors, width=0.64)
        top = max(values) if values and max(values) > 0 else 1
        for bar, value in zip(bars, values):
            share = value / values[0] if values and values[0] else 0
            ax.annotate(f"{human(value)}\n{share:.0%}", (bar.get_x() + bar.get_width() / 2, value),
                        xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=8, color=INK)
        ax.set_xticks(range(len(stages)), stages)
        ax.set_ylim(0, top * 1.28)
        ax.yaxis.set_major_formatter(_HUMAN)
        ax.grid(axis="x", visible=False)
        ax.set_title(title)
    fig.tight_layout(w_pad=3)
    return to_data_uri(fig)


@styled
def removal_reasons(rows: Sequence[tuple[str, str, int]], stage_order: Sequence[str], limit: int = 24) -> str:
    """Removed documents per (stage, reason), largest first, coloured by stage."""
    rows = sorted(rows, key=lambda r: -r[2])
    if len(rows) > limit:
        rest = rows[limit - 1:]
        rows = [*rows[:limit - 1], ("", f"{len(rest)} other reasons", sum(r[2] for r in rest))]
    rows = rows[::-1]
    fig, ax = plt.subplots(figsize=(WIDTH, 0.8 + 0.28 * len(rows)))
    order = {s: i for i, s in enumerate(stage_order)}
    colors = [stage_color(order[s]) if s in order else "#9aa5b1" for s, _, _ in rows]
    bars = ax.barh(range(len(rows)), [r[2] for r in rows], color=colors, height=0.7)
    ax.set_yticks(range(len(rows)), [f"{reason}  ·  {stage}" if stage else reason for stage, reason, _ in rows])
    for bar, (_, _, n) in zip(bars, rows):
        ax.annotate(f"{n:,}", (bar.get_width(), bar.get_y() + bar.get_height() / 2), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8, color=INK)
    ax.xaxis.set_major_formatter(_HUMAN)
    ax.set_xlim(0, max(r[2] for r in rows) * 1.12)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("documents removed")
    ax.set_title("Removal reasons (colour = stage)")
    fig.tight_layout()
    return to_data_uri(fig)


@styled
def length_histogram(before: dict[str, int], after: dict[str, int]) -> str:
    """Documents per power-of-two length bucket, before (read) and after (clean)."""
    buckets = sorted({int(k) for k in before} | {int(k) for k in after})
    x = range(len(buckets))
    fig, ax = plt.subplots(figsize=(WIDTH, 2.9))
    width = 0.4
    ax.bar([i - width / 2 for i in x], [before.get(str(b), 0) for b in buckets], width, color="#9aa5b1",
           label="read (before)")
    ax.bar([i + width / 2 for i in x], [after.get(str(b), 0) for b in buckets], width, color=KEPT,
           label="clean (after)")
    ax.set_xticks(list(x), [f"≤{human(b)}" for b in buckets], rotation=0 if len(buckets) < 14 else 45)
    ax.yaxis.set_major_formatter(_HUMAN)
    ax.grid(axis="x", visible=False)
    ax.set_xlabel("document length in characters (bucket upper bound)")
    ax.set_ylabel("documents")
    ax.set_title("Document length before and after cleaning")
    ax.legend(loc="upper right")
    fig.tight_layout()
    return to_data_uri(fig)


@styled
def languages(kept: dict[str, int], removed: dict[str, int], limit: int = 15, removed_label: str = "removed") -> str:
    """Kept documents per language (exact), next to removed documents per language (``removed_label`` says whether
    they are all removed documents or a sample of them)."""
    names = sorted(set(kept) | set(removed), key=lambda k: (-kept.get(k, 0), -removed.get(k, 0), k))
    if len(names) > limit:
        names = names[:limit]
    names = names[::-1]
    fig, ax = plt.subplots(figsize=(WIDTH, 0.9 + 0.3 * len(names)))
    y = range(len(names))
    height = 0.4 if removed else 0.7
    ax.barh([i + (height / 2 if removed else 0) for i in y], [kept.get(n, 0) for n in names], height, color=KEPT,
            label="kept")
    if removed:
        ax.barh([i - height / 2 for i in y], [removed.get(n, 0) for n in names], height, color=REMOVED,
                label=removed_label)
        ax.legend(loc="lower right")
    ax.set_yticks(list(y), names)
    ax.xaxis.set_major_formatter(_HUMAN)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("documents")
    ax.set_title("Languages")
    fig.tight_layout()
    return to_data_uri(fig)


MAX_PANELS = 36  # histograms in the values figure (a table lists every value)
OTHER = "#bab0ac"


def _bins(values: list[float]):
    """Bin edges and whether the axis is logarithmic: one bar per value for small integers, log bins for
    positive values spanning more than two orders of magnitude (word counts), 30 even bins otherwise."""
    import numpy as np

    lo, hi = min(values), max(values)
    if all(float(v).is_integer() for v in values) and hi - lo <= 40:
        return np.arange(lo - 0.5, hi + 1.5), False
    if lo > 0 and hi / lo > 100:
        return np.geomspace(lo, hi, 31), True
    return (np.linspace(lo, hi, 31) if hi > lo else np.array([lo - 0.5, lo + 0.5])), False


def varies(sides: dict[str, list[float]]) -> bool:
    """Whether a stored value takes more than one value over kept and removed documents (a chart of a value
    that never varies, such as a PII entity count that is 0 everywhere, shows one bar on a made-up axis)."""
    seen = {v for data in sides.values() for v in data}
    return len(seen) > 1


def _title(key: str, width: int = 26) -> str:
    """The whole dotted key, broken after a dot when it is long (never cut)."""
    if len(key) <= width or "." not in key:
        return key
    head, _, last = key.rpartition(".")
    return f"{head}.\n{last}"


@styled
def value_histograms(values: dict[str, dict[str, list[float]]], lines: dict[str, list[tuple[str, float]]],
                     stages: dict[str, str]) -> str:
    """Small multiples, one panel per stored value that varies: kept, removed by another stage and removed by the
    stage that decides on it (``stages``), stacked on the same bins, with one legend for all panels above them
    and each threshold as a dashed line (named under the axis when far off). Integer values (counts) get one
    bar per integer and integer ticks."""
    from matplotlib.patches import Patch

    keys = sorted(values)
    columns = min(4, len(keys))
    rows = math.ceil(len(keys) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(WIDTH, 0.5 + 1.9 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        sides = [(values[key][side], color) for side, color in (("kept", KEPT), ("other", OTHER), ("removed", REMOVED))
                 if values[key][side]]
        everything = [v for data, _ in sides for v in data]
        edges, log = _bins(everything)
        ax.hist([data for data, _ in sides], bins=edges, stacked=True, color=[c for _, c in sides])
        if log:
            ax.set_xscale("log")
        lo, hi = float(edges[0]), float(edges[-1])
        # A threshold near the values widens the axis to show it; one far away (max_words 100,000 against
        # documents of a few hundred words) is named under the axis instead.
        if log:
            near_lo, near_hi = lo / 10, hi * 10
        else:
            span = (hi - lo) or abs(lo) or 1.0
            near_lo, near_hi = lo - span / 2, hi + span / 2
        outside, shown = [], [lo, hi]
        marked = []
        for name, threshold in lines.get(key, []):
            short = name.rsplit(".", 1)[-1]
            if near_lo <= threshold <= near_hi and (threshold > 0 or not log):
                ax.axvline(threshold, color=INK, linestyle="--", linewidth=1.1)
                # min_/max_ say which side the rule keeps; the key's whole name is in the table under the figure
                side = next((word for word in ("min", "max") if short.startswith(word)), short)
                marked.append((threshold, f"{side} {threshold:g}"))
                shown.append(threshold)
            else:
                outside.append(f"{short} {human(threshold)}")
        pad = 0 if log else 0.02 * ((max(shown) - min(shown)) or 1)
        left, right = min(shown) / (1.05 if log else 1) - pad, max(shown) * (1.05 if log else 1) + pad
        ax.set_xlim(left, right)
        for n, (threshold, label) in enumerate(marked):
            # each label a line lower than the last (two close thresholds never overlap), on the side of its
            # line that has room (never past the panel's edge)
            middle = math.sqrt(left * right) if log else (left + right) / 2
            right_side = threshold <= middle
            ax.annotate(label, (threshold, 1), xycoords=("data", "axes fraction"), xytext=(3 if right_side else -3,
                        -10 - 9 * n), textcoords="offset points", fontsize=6.5, color=INK,
                        ha="left" if right_side else "right")
        ax.set_title(_title(key), fontsize=8)
        ax.tick_params(labelsize=7)
        if outside:
            ax.set_xlabel("off the axis: " + ", ".join(outside), fontsize=6, color=MUTED)
        if not log:
            ax.xaxis.set_major_locator(MaxNLocator(integer=all(float(v).is_integer() for v in everything), nbins=4))
            ax.xaxis.set_major_formatter(_HUMAN)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=4))
        ax.yaxis.set_major_formatter(_HUMAN)
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    fig.legend(handles=[Patch(color=KEPT, label="kept"), Patch(color=REMOVED, label="removed by the stage that decides on it"),
                        Patch(color=OTHER, label="removed by another stage"),
                        plt.Line2D([], [], color=INK, linestyle="--", label="threshold (run config)")],
               loc="upper center", ncol=4, fontsize=8, frameon=False, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(h_pad=1.4, w_pad=1.2, rect=(0, 0, 1, 1 - 0.4 / (0.5 + 1.9 * rows)))
    return to_data_uri(fig)


@styled
def source_funnel(sources: dict, stages: Sequence[str]) -> str:
    """One horizontal bar per source, its input split into kept, removed per stage and rejected (shares)."""
    names = list(sources)[::-1]
    fig, ax = plt.subplots(figsize=(WIDTH, 1.5 + 0.34 * len(names)), layout="constrained")
    left = [0.0] * len(names)
    parts = [("kept", KEPT, lambda c: c.kept)]
    parts += [(f"removed by {stage}", stage_color(i + 1), lambda c, s=stage: c.removed.get(s, 0))
              for i, stage in enumerate(stages)]
    parts.append(("rejected", OTHER, lambda c: c.rejected or 0))
    for label, color, amount in parts:
        widths = []
        for name in names:
            c = sources[name]
            whole = c.input or (c.kept + sum(c.removed.values()) + (c.rejected or 0)) or 1
            widths.append(amount(c) / whole)
        if any(widths):
            ax.barh(range(len(names)), widths, left=left, color=color, height=0.62, label=label)
        left = [a + b for a, b in zip(left, widths)]
    ax.set_yticks(range(len(names)), names)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.0%}"))
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("share of the source's input records")
    ax.set_title("Per source: kept, removed by each stage, rejected")
    fig.legend(loc="outside lower center", ncol=min(len(parts), 6), fontsize=7.5)
    return to_data_uri(fig)


@styled
def cluster_sizes(sizes: dict[int, int]) -> str:
    """Duplicate clusters by the number of documents in them."""
    items = sorted(sizes.items())
    fig, ax = plt.subplots(figsize=(WIDTH, 2.6))
    labels = [str(s) for s, _ in items]
    if len(items) > 20:  # keep the axis readable: fold large clusters into power-of-two buckets
        folded: dict[str, int] = {}
        for size, n in items:
            key = str(size) if size <= 8 else f"≤{2 ** math.ceil(math.log2(size))}"
            folded[key] = folded.get(key, 0) + n
        labels, counts = list(folded), list(folded.values())
    else:
        counts = [n for _, n in items]
    bars = ax.bar(range(len(labels)), counts, color=PALETTE[4], width=0.64)
    for bar, n in zip(bars, counts):
        ax.annotate(f"{n:,}", (bar.get_x() + bar.get_width() / 2, n), xytext=(0, 2), textcoords="offset points",
                    ha="center", fontsize=8, color=INK)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylim(0, max(counts) * 1.18)
    ax.yaxis.set_major_formatter(_HUMAN)
    ax.grid(axis="x", visible=False)
    ax.set_xlabel("documents in the cluster (the survivor included)")
    ax.set_ylabel("clusters")
    ax.set_title("Duplicate cluster sizes")
    fig.tight_layout()
    return to_data_uri(fig)


@styled
def horizontal_counts(counts: dict[str, int], title: str, xlabel: str, color: str = PALETTE[6]) -> str:
    items = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]))
    fig, ax = plt.subplots(figsize=(WIDTH, 0.8 + 0.3 * len(items)))
    bars = ax.barh(range(len(items)), [n for _, n in items], color=color, height=0.65)
    ax.set_yticks(range(len(items)), [k for k, _ in items])
    for bar, (_, n) in zip(bars, items):
        ax.annotate(f"{n:,}", (bar.get_width(), bar.get_y() + bar.get_height() / 2), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8, color=INK)
    ax.set_xlim(0, max(n for _, n in items) * 1.12)
    ax.xaxis.set_major_formatter(_HUMAN)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    fig.tight_layout()
    return to_data_uri(fig)


@styled
def training_curves(train: list[dict], val: list[dict]) -> str:
    """Loss (train and validation), learning rate and throughput against the optimizer step."""
    panels = [("loss", "Loss (nats per predicted token)")]
    if any("lr" in r for r in train):
        panels.append(("lr", "Learning rate"))
    if any("tokens_per_s" in r for r in train):
        panels.append(("tokens_per_s", "Throughput (tokens/s)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(WIDTH, 2.9), squeeze=False)
    for ax, (key, title) in zip(axes[0], panels):
        points = [(r["step"], r[key]) for r in train if isinstance(r.get(key), (int, float))]
        if points:
            ax.plot(*zip(*points), color=KEPT if key == "loss" else PALETTE[1 if key == "lr" else 2], linewidth=1.4,
                    label="train")
        if key == "loss" and val:
            vpoints = [(r["step"], r["loss"]) for r in val if isinstance(r.get("loss"), (int, float))]
            if vpoints:
                ax.plot(*zip(*vpoints), "o-", color=REMOVED, linewidth=1.2, markersize=3.5, label="validation")
            ax.legend(loc="upper right")
        if key == "lr":
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: "0" if v == 0 else f"{v:.1e}"))
        elif key == "tokens_per_s":
            ax.yaxis.set_major_formatter(_HUMAN)
        ax.set_xlabel("step")
        ax.set_title(title)
    fig.tight_layout(w_pad=2.5)
    return to_data_uri(fig)


@styled
def bits_per_byte_by_variant(names: Sequence[str], values: Sequence[Sequence[float]]) -> str:
    """Each variant's bits per byte: one dot per seed and the mean as a bar, so the seed spread shows."""
    fig, ax = plt.subplots(figsize=(WIDTH, 0.5 + 0.42 * max(len(names), 2)))
    for row, seeds in enumerate(values):
        mean = sum(seeds) / len(seeds)
        ax.plot([min(seeds), max(seeds)], [row, row], color=MUTED, linewidth=1.2, zorder=2)
        ax.scatter(seeds, [row] * len(seeds), color=stage_color(row), s=22, zorder=3)
        ax.plot([mean, mean], [row - 0.3, row + 0.3], color=INK, linewidth=2, zorder=4)
        ax.annotate(f"{mean:.4f}", (max(seeds), row), xytext=(6, 0), textcoords="offset points", va="center",
                    fontsize=8, color=INK)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("bits per byte on the held-out set (lower is better); dots: seeds, bar: mean")
    ax.grid(axis="y", visible=False)
    ax.set_title("Held-out bits per byte per variant")
    fig.tight_layout()
    return to_data_uri(fig)
