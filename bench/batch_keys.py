"""A batch's line + sentence keys at once (``boilerplate.keyed_lines_many``) against the per-text loop
(``keyed_lines`` of each text), on the same batch, in the same run:

    OMP_NUM_THREADS=1 .venv/bin/python bench/batch_keys.py [--hostile-kb 1000] [--prose-batches 30]
    OMP_NUM_THREADS=1 .venv/bin/python bench/batch_keys.py --batch-sentences 2048 16384   # other sub-batch bounds too
    cd /tmp && PYTHONPATH=<another commit's package> python <this tree>/bench/batch_keys.py  # that commit's code

Batches of ``--docs`` texts (64; the build's are near-dedup's kept lists, 64-512 documents): ``prose``, bench/build.py's
``distinct`` documents (~2.4 KB each); ``one-word lines`` and ``stops``, one text of ``--hostile-kb`` KB of ``"a\\n"``
or of ``". "`` (a sentence every two bytes) among such documents; ``one-word docs``, every document 1 KB of
``"a\\n"``. Each shape runs in a fresh process: peak memory
is tracemalloc's peak over a call (the batch's texts are made before it starts; every side returns the same
records and tables, checked), CPU the best of ``--rounds`` calls (process time, tracemalloc off, the sides
alternating, each call after a full collection, the collector at a build's thresholds: where a full collection
lands otherwise follows the order of the sides, and moved one side's time by 1.6x).
"""
from __future__ import annotations

import argparse
import gc
import json
import pathlib
import random
import subprocess
import sys
import time
import tracemalloc

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # appended: a corpusforge on PYTHONPATH (another commit's, for a figure before) comes first

SHAPES = ["one-word lines", "stops", "one-word docs", "prose"]
SIDES = {"batch": "keyed_lines_many", "loop": "keyed_lines per text"}


def batches(shape: str, hostile_kb: int, prose_batches: int, docs: int) -> list[list[tuple[str, str | None]]]:
    from bench.build import CORPORA

    drawn = CORPORA["distinct"](random.Random(0), 1)
    if shape == "prose":
        return [[(next(drawn), "en") for _ in range(docs)] for _ in range(prose_batches)]
    if shape == "one-word docs":
        return [[("a\n" * 500, "en")] * docs]
    unit = "a\n" if shape == "one-word lines" else ". "
    texts = [(next(drawn), "en") for _ in range(docs - 1)]
    texts.insert(docs // 2, (unit * (hostile_kb * 1000 // len(unit)), "en"))
    return [texts]


def measure(shape: str, hostile_kb: int, prose_batches: int, docs: int, rounds: int,
            bounds: list[int | None]) -> dict:
    """Every side on one shape, in this process: per side (the loop; the batch path with each sentence bound, None
    the tree's) tracemalloc's peak over a call, then the best CPU time of ``rounds`` rounds, the sides alternating
    in each round (a load that comes and goes weighs on all of them alike)."""
    from corpusforge.core.collector import fewer_collections
    from corpusforge.pipeline.dedup import boilerplate
    from corpusforge.pipeline.dedup.sentence_split import sentence_spans

    line_chars, sentence_chars = 10, 20  # the defaults (LineDedupConfig, SentenceDedupConfig)
    work = batches(shape, hostile_kb, prose_batches, docs)
    tree_bound = getattr(boilerplate, "_BATCH_SENTENCES", None)

    def batch(bound):
        def run():
            boilerplate._BATCH_SENTENCES = tree_bound if bound is None else bound
            return [boilerplate.keyed_lines_many(texts, line_chars, sentence_chars) for texts in work]
        return run

    def loop():
        return [[boilerplate.keyed_lines(text, lang, line_chars, sentence_chars) for text, lang in texts]
                for texts in work]

    sides = {"loop": loop, **{f"batch {bound or 'tree'}": batch(bound) for bound in bounds}}
    expected = loop()
    peaks, best = {}, dict.fromkeys(sides, float("inf"))
    for name, run in sides.items():
        assert run() == expected, f"{name}: other keys than the loop's"  # and warm: imports, regexes
        tracemalloc.start()
        run()
        peaks[name] = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    with fewer_collections():  # the collector's thresholds of a build (corpusforge/core/collector.py)
        for _ in range(rounds):
            for name, run in sides.items():
                gc.collect()  # each call from the same collector state: a full collection lands in no side's turn
                started = time.process_time()
                run()
                best[name] = min(best[name], time.process_time() - started)
    return {"peak_mb": peaks, "cpu_s": best, "tree_bound": tree_bound, "code": boilerplate.__file__,
            "sentences": sum(len(sentence_spans(t, lang)) for texts in work for t, lang in texts),
            "bytes": sum(len(t.encode()) for texts in work for t, _ in texts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hostile-kb", type=int, default=1000)
    parser.add_argument("--prose-batches", type=int, default=30, help="Batches of prose documents timed")
    parser.add_argument("--docs", type=int, default=64, help="Documents a batch (the build's: 64-512, near-dedup's "
                        "kept lists)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--shapes", nargs="*", default=SHAPES)
    parser.add_argument("--batch-sentences", type=int, nargs="*", default=[],
                        help="Also the batch path with these bounds (boilerplate._BATCH_SENTENCES)")
    parser.add_argument("--one", metavar="SHAPE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    bounds = [None] + args.batch_sentences
    if args.one:
        print(json.dumps(measure(args.one, args.hostile_kb, args.prose_batches, args.docs, args.rounds, bounds)))
        return
    print(f"batches of {args.docs}: hostile text {args.hostile_kb} KB among {args.docs - 1} prose documents; prose "
          f"{args.prose_batches} batches; best of {args.rounds} rounds")
    print(f"{'shape':16s} {'side':44s} {'peak MB':>8s} {'CPU ms':>8s} {'us/doc':>8s}   against the loop: peak  CPU")
    for shape in args.shapes:
        cmd = [sys.executable, __file__, "--one", shape, "--hostile-kb", str(args.hostile_kb), "--prose-batches",
               str(args.prose_batches), "--docs", str(args.docs), "--rounds", str(args.rounds),
               "--batch-sentences", *map(str, args.batch_sentences)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        f = json.loads(out.splitlines()[-1])  # the corpus's reading prints the Zen of Python first
        docs = args.docs * (args.prose_batches if shape == "prose" else 1)
        if shape == args.shapes[0]:
            print(f"(keyed_lines_many of {f['code']})")
        for side, peak in f["peak_mb"].items():
            cpu = f["cpu_s"][side]
            name = "keyed_lines per text" if side == "loop" else "keyed_lines_many, at most " + (
                f"{f['tree_bound'] or 'all'} (tree)" if side == "batch tree" else side.split()[1]) + " sentences"
            print(f"{shape:16s} {name:44s} {peak:8.1f} {1e3 * cpu:8.1f} {1e6 * cpu / docs:8.1f}   "
                  f"{peak / f['peak_mb']['loop']:.2f}x  {cpu / f['cpu_s']['loop']:.2f}x")
        print(f"{'':16s} ({f['sentences']:,} sentences, {f['bytes'] / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
