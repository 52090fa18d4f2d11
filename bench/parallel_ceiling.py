"""What two processes at once cost on this machine: the ceiling of a 2-worker build's speed-up (#38).

A 2-worker build can be at most as fast as two *independent* processes running at once allow. On a VM whose two
vCPUs share a physical core, caches or memory bandwidth, each process at once runs slower than alone, whatever
corpusforge does. This bench measures that with three workloads, each run alone and then as two copies at once:

  build    a one-worker `corpusforge build` (in-process DirectRunner) of bench/build.py's `distinct` corpus
           (normalize + dedup unless --stages), the work a worker does; its own CPU seconds, start-up included
  python   a pure-Python loop (dict and string work, in the caches): the interpreter alone
  memory   numpy passes over 256 MB (memory bandwidth)

For each, `ceiling` = 2 x (CPU seconds alone / mean CPU seconds at once): the speed-up two workers that share
nothing, and wait on nothing, would get. A 2-worker build's measured speed-up (bench/scale.py, bench/build.py
--workers 1 2) is below it by what the build itself adds (the driver's serial work, shuffles, set-up twice).

    python bench/parallel_ceiling.py                     # 5,000 docs, normalize + dedup, 2 rounds
    python bench/parallel_ceiling.py --docs 3000 --stages normalize,quality,dedup,pii --rounds 3

Run it on an otherwise idle machine (it prints the load average): other jobs make "alone" a pair too.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from build import ALL_STAGES, write_corpus  # noqa: E402  (bench/build.py: the corpus every build bench uses)

PYTHON_LOOP = """
import time
t = time.process_time()
d = {}
for i in range(6_000_000):
    k = str(i % 5000)
    d[k] = d.get(k, 0) + len(k)
print(time.process_time() - t)
"""

MEMORY_LOOP = """
import time
import numpy as np
a = np.ones(32 * 1024 * 1024)  # 256 MB: far past the caches
t = time.process_time()
for _ in range(40):
    a += 1.0
print(time.process_time() - t)
"""


def _child_cpu(procs: list[subprocess.Popen]) -> list[float]:
    """Wait for ``procs``; each one's CPU seconds as it printed them (its own measure, start-up excluded)."""
    return [float(p.communicate()[0].strip().splitlines()[-1]) for p in procs]


def _loop(code: str, copies: int) -> list[float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(copies)]
    return _child_cpu(procs)


def _builds(corpus: str, stages: list[str], copies: int, workdir: str) -> list[float]:
    """CPU seconds (user + system) of each of ``copies`` one-worker builds started at once."""
    off = [f"--set={s}.enabled=false" for s in ALL_STAGES if s not in stages]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    script = ("import resource, runpy, sys; sys.argv = ['corpusforge'] + sys.argv[1:]\n"
              "try:\n    runpy.run_module('corpusforge', run_name='__main__')\n"
              "except SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
              "u = resource.getrusage(resource.RUSAGE_SELF)\nprint(u.ru_utime + u.ru_stime)\nsys.exit(code or 0)\n")
    procs = []
    for copy in range(copies):
        run = os.path.join(workdir, f"run{copy}")
        cmd = [sys.executable, "-c", script, "build", "--input", os.path.join(corpus, "*.jsonl.zst"), "--run-dir", run,
               "--overwrite", "--no-progress", *off]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env))
    out = []
    for p in procs:
        text, _ = p.communicate()
        if p.returncode:
            raise SystemExit(f"a build failed (exit {p.returncode}); run it alone to see why")
        out.append(float(text.strip().splitlines()[-1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=5000, help="Documents in the build's corpus.")
    parser.add_argument("--stages", default="normalize,dedup", help="Stages the builds run (comma-separated).")
    parser.add_argument("--rounds", type=int, default=2, help="Rounds of alone-then-pair per workload.")
    parser.add_argument("--workloads", default="build,python,memory", help="Which of build, python, memory.")
    args = parser.parse_args()
    stages = [s for s in args.stages.split(",") if s]
    workloads = [w for w in args.workloads.split(",") if w]
    print(f"load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs; {args.rounds} rounds")
    with tempfile.TemporaryDirectory(prefix="cf-bench-ceiling-") as workdir:
        corpus = os.path.join(workdir, "corpus")
        if "build" in workloads:
            write_corpus(corpus, args.docs, kind="distinct")
        print(f"{'workload':<10} {'alone CPU s':>12} {'each of 2 at once':>18} {'ceiling':>8}")
        for workload in workloads:
            alone, paired = [], []
            for _ in range(args.rounds):
                if workload == "build":
                    alone += _builds(corpus, stages, 1, workdir)
                    paired += _builds(corpus, stages, 2, workdir)
                else:
                    code = PYTHON_LOOP if workload == "python" else MEMORY_LOOP
                    alone += _loop(code, 1)
                    paired += _loop(code, 2)
            a, p = statistics.median(alone), statistics.mean(paired)
            print(f"{workload:<10} {a:>12.2f} {p:>18.2f} {2 * a / p:>7.2f}x   "
                  f"(alone {', '.join(f'{x:.2f}' for x in alone)}; at once {', '.join(f'{x:.2f}' for x in paired)})")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
