"""Two builds' fused stages, matched: what a change to the graph saved, at whatever load each ran.

    python bench/critical_path.py before.json -- build ...   # one tree (its package on PYTHONPATH)
    python bench/critical_path.py after.json -- build ...    # the other, back to back
    python bench/stage_shares.py before.json after.json

On a shared machine a build's CPU seconds move 10-20 % with the other jobs' load, more than a change that
removes or splits a stage or two. This compares within each run instead: the fused stages found in both builds
(the same transforms, by name, numbering aside) are the yardstick; the others are the ones the change touched
(removed, merged or split). Printed: each set's critical-path seconds (``critical_path.py``: per bundle, its
busiest process) and the touched stages' share of the untouched ones, which the load moves far less.
"""
from __future__ import annotations

import json
import re
import sys


def stage_key(name: str) -> tuple:
    """A fused stage by its transforms' names, without Beam's numbering (which shifts when the graph changes)."""
    transforms = re.findall(r"ref_AppliedPTransform_(.*?)_\d+\)", name)
    buffers = re.findall(r"\(([A-Za-z][^()+]*/(?:Read|Write)[^()+]*)\)", name)
    return tuple(sorted(transforms + buffers))


def critical_by_stage(path: str) -> dict[tuple, float]:
    with open(path) as f:
        stages = json.load(f)["stages"]
    out: dict[tuple, float] = {}
    for name, row in stages.items():
        key = stage_key(name)
        out[key] = out.get(key, 0.0) + row["critical"]
    return out


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = critical_by_stage(sys.argv[1]), critical_by_stage(sys.argv[2])
    both = before.keys() & after.keys()
    for label, stages in (("before", before), ("after", after)):
        untouched = sum(stages[k] for k in both)
        touched = sum(v for k, v in stages.items() if k not in both)
        print(f"{label}: {len(stages)} fused stages, critical path of the untouched {untouched:.2f} s, of the "
              f"touched ({len(stages) - len(both)}) {touched:.2f} s = {100 * touched / untouched:.1f} %")


if __name__ == "__main__":
    main()
