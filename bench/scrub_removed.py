"""What scrubbing removed text costs: the same build with ``pii.scrub_removed`` true and false.

    python bench/scrub_removed.py --documents 2000 --rounds 2

The corpus is the built-in sample (``corpusforge.pipeline.sample``: web-like records with duplicates,
junk, PII and bad lines). Each build is ``corpusforge build`` in a subprocess, all stages, DirectRunner;
rounds alternate the two settings so load from other work falls on both alike. Prints wall seconds per
build, the medians, and how many removed documents and entities the scrubbing step changed (from
stats.json's Beam metrics). With ``false``, ids and metadata of removed documents are still scrubbed, so the
difference is the cost of scrubbing their text.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from corpusforge.pipeline.sample import write_sample  # noqa: E402


def build(config: str, run_dir: str, scrub: bool) -> tuple[float, dict]:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "corpusforge.pipeline.cli", "build", "-c", config, "--run-dir", run_dir,
                    "--overwrite", "--no-progress", "--set", f"pii.scrub_removed={str(scrub).lower()}"],
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    with open(os.path.join(run_dir, "stats.json")) as f:
        return wall, json.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    root = args.workdir or tempfile.mkdtemp(prefix="cf-scrub-bench-")
    sample = write_sample(os.path.join(root, "sample"), documents=args.documents)
    config = os.path.join(root, "corpus.yaml")
    with open(config, "w") as f:
        f.write("inputs:\n" + "".join(f"  - {{path: '{i['path']}', name: {i['name']}}}\n" for i in sample.inputs))
    times: dict[bool, list[float]] = {True: [], False: []}
    for round_ in range(args.rounds):
        for scrub in (True, False) if round_ % 2 == 0 else (False, True):
            wall, stats = build(config, os.path.join(root, f"run-{scrub}"), scrub)
            times[scrub].append(wall)
            counters = ((stats.get("metrics") or {}).get("counters") or {}).get("pii", {})
            pii = {k: v for k, v in counters.items() if k.startswith("removed_")}
            print(f"round {round_} scrub_removed={str(scrub).lower():5} {wall:6.1f} s  "
                  f"input {stats['accounting']['input']}, removed {stats['accounting']['removed']}, "
                  f"rejected {stats['accounting']['rejected']}  {pii}", flush=True)
    on, off = statistics.median(times[True]), statistics.median(times[False])
    print(f"median wall: scrub_removed=true {on:.1f} s, false {off:.1f} s, difference {on - off:+.1f} s "
          f"({100 * (on - off) / off:+.1f} %)")


if __name__ == "__main__":
    main()
