"""What scrubbing removed text costs: the same build with ``pii.scrub_removed`` true and false.

    python bench/scrub_removed.py --copies 8 --rounds 3

The corpus is the built-in sample (``corpusforge.pipeline.sample``: ~400 web-like records with duplicates,
junk, PII and bad lines), read ``--copies`` times as separate inputs: every copy after the first is removed
by exact dedup, so most documents end in removed/ (a removal-heavy corpus, where scrubbing costs most). Each build is ``corpusforge build`` in a subprocess, all stages, DirectRunner;
rounds alternate the two settings so load from other work falls on both alike. Prints wall seconds per
build (wall and CPU), the medians, and how many removed documents and entities the scrubbing step changed (from
stats.json's Beam metrics). With ``false``, ids and metadata of removed documents are still scrubbed, so the
difference is the cost of scrubbing their text.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.workdirs import temporary_workdir  # noqa: E402
from corpusforge.pipeline.sample import write_sample  # noqa: E402


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(config: str, run_dir: str, scrub: bool) -> tuple[float, float, dict]:
    """Wall seconds, CPU seconds of the whole process tree (the build and the Beam workers it waited for) and
    stats.json. CPU time is what to compare on a shared machine: wall time there follows other people's load."""
    started, cpu = time.perf_counter(), _children_cpu()
    subprocess.run([sys.executable, "-m", "corpusforge.cli", "build", "-c", config, "--run-dir", run_dir,
                    "--overwrite", "--no-progress", "--set", f"pii.scrub_removed={str(scrub).lower()}"],
                   check=True, stdout=subprocess.DEVNULL)
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    with open(os.path.join(run_dir, "stats.json")) as f:
        return wall, cpu, json.load(f)


def direct_cost(run_dir: str) -> tuple[int, int, float]:
    """(documents, characters, CPU seconds) to scrub the raw text of every removed document of a
    ``scrub_removed=false`` run in this process, one ``Scrubber`` as a worker builds it (not counted)."""
    from corpusforge.core.shard_files import open_shard
    from corpusforge.pipeline.pii.config import PIIConfig
    from corpusforge.pipeline.pii.scrubber import Scrubber

    texts = []
    for name in sorted(os.listdir(os.path.join(run_dir, "removed"))):
        texts += open_shard(os.path.join(run_dir, "removed", name)).read_all().column("text").to_pylist()
    scrubber = Scrubber(PIIConfig())
    started = time.process_time()
    for i in range(0, len(texts), 64):
        scrubber.scrub_batch(texts[i:i + 64])
    return len(texts), sum(map(len, texts)), time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1000, help="Sample documents (capped by the sample's prose).")
    parser.add_argument("--copies", type=int, default=8, help="Inputs reading the same sample files.")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    root = args.workdir or temporary_workdir("cf-scrub-bench-")
    sample = write_sample(os.path.join(root, "sample"), documents=args.documents)
    config = os.path.join(root, "corpus.yaml")
    with open(config, "w") as f:
        f.write("inputs:\n" + "".join(f"  - {{path: '{i['path']}', name: {i['name']}}}\n"
                                      for _ in range(args.copies) for i in sample.inputs))
    times: dict[bool, list[float]] = {True: [], False: []}
    cpus: dict[bool, list[float]] = {True: [], False: []}
    for round_ in range(args.rounds):
        for scrub in (True, False) if round_ % 2 == 0 else (False, True):
            wall, cpu, stats = build(config, os.path.join(root, f"run-{scrub}"), scrub)
            times[scrub].append(wall)
            cpus[scrub].append(cpu)
            counters = ((stats.get("metrics") or {}).get("counters") or {}).get("pii", {})
            pii = {k: v for k, v in counters.items() if k.startswith("removed_")}
            print(f"round {round_} scrub_removed={str(scrub).lower():5} wall {wall:6.1f} s, CPU {cpu:6.1f} s  "
                  f"input {stats['accounting']['input']}, removed {stats['accounting']['removed']}, "
                  f"rejected {stats['accounting']['rejected']}  {pii}", flush=True)
    docs, chars, seconds = direct_cost(os.path.join(root, "run-False"))
    print(f"scrubbing the {docs} removed texts ({chars / 1e6:.2f} M characters) alone: {seconds:.2f} CPU s "
          f"({docs / seconds:,.0f} docs/s)")
    for label, values in (("wall", times), ("CPU", cpus)):
        on, off = statistics.median(values[True]), statistics.median(values[False])
        print(f"median {label}: scrub_removed=true {on:.1f} s, false {off:.1f} s, difference {on - off:+.1f} s "
              f"({100 * (on - off) / off:+.1f} %)")


if __name__ == "__main__":
    main()
