"""What Python's garbage collector costs a build: collections by generation and their CPU seconds (``gc.callbacks``),
with the youngest generation collected every ``corpusforge.core.collector.YOUNG_THRESHOLD`` allocations while the
pipeline runs (this tree) and every 700 (CPython's default, as before ``collector.fewer_collections``):

    OMP_NUM_THREADS=1 .venv/bin/python bench/gc_cost.py --docs 5000 --rounds 2

Each build is the ``corpusforge`` command (``cli.main.run``, start-up included) in a fresh process on
bench/build.py's ``distinct`` corpus, normalize + dedup; the two settings alternate. The CPU seconds inside
collections move less with the machine's load than a whole build's, which moves by ~5-10 % between rounds.
"""
from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# Run in a fresh process: the corpusforge command with its collections timed; argv[1] the young threshold to use
# while the pipeline runs (0: the tree's own), the rest the command's arguments.
_TIMED = """
import atexit, gc, sys, time
young = int(sys.argv.pop(1))
if young:
    from corpusforge.core import collector
    collector.YOUNG_THRESHOLD = young
spent = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
began = [0.0]
def timed(phase, info):
    if phase == "start":
        began[0] = time.process_time()
    else:
        entry = spent[info["generation"]]
        entry[0] += 1
        entry[1] += time.process_time() - began[0]
gc.callbacks.append(timed)
atexit.register(lambda: print("GC", repr(spent), time.process_time(), file=sys.stderr))
from corpusforge.cli.main import run
run()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from bench.build import ALL_STAGES, write_corpus

    with tempfile.TemporaryDirectory(prefix="cf-bench-gc-") as workdir:
        corpus = os.path.join(workdir, "corpus")
        write_corpus(corpus, args.docs, kind="distinct")
        off = [f"--set={stage}.enabled=false" for stage in ALL_STAGES if stage not in ("normalize", "dedup")]
        command = ["build", "--input", os.path.join(corpus, "*.jsonl.zst"), "--run-dir", os.path.join(workdir, "run"),
                   "--overwrite", "--no-progress", *off]
        print(f"{args.docs:,} distinct docs, normalize + dedup, one worker; collections by generation (young, "
              "middle, full) and the CPU seconds inside them; the process's CPU seconds", flush=True)
        from corpusforge.core.collector import YOUNG_THRESHOLD

        for round_ in range(args.rounds):
            for label, young in ((f"every {YOUNG_THRESHOLD:,} (this tree)", 0), ("every 700 (CPython's default)", 700)):
                done = subprocess.run([sys.executable, "-c", _TIMED, str(young), *command], capture_output=True,
                                      text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, cwd=ROOT)
                line = [x for x in done.stderr.splitlines() if x.startswith("GC ")]
                if done.returncode or not line:
                    raise SystemExit(f"the build failed:\n{done.stderr[-2000:]}")
                spent, cpu = line[-1][3:].rsplit(" ", 1)
                spent = ast.literal_eval(spent)
                counts = " / ".join(str(spent[g][0]) for g in range(3))
                seconds = sum(spent[g][1] for g in range(3))
                print(f"  round {round_ + 1}, young generation {label}: collections {counts}, "
                      f"{seconds:.3f} CPU s in them; process {float(cpu):.2f} CPU s", flush=True)


if __name__ == "__main__":
    main()
