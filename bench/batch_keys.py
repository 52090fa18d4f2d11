"""A batch's line + sentence keys at once (``boilerplate.keyed_lines_many``) against the per-text loop
(``keyed_lines`` of each text), on the same batch, in the same run:

    OMP_NUM_THREADS=1 .venv/bin/python bench/batch_keys.py [--hostile-kb 1000] [--prose-batches 30]
    OMP_NUM_THREADS=1 .venv/bin/python bench/batch_keys.py --batch-sentences 4096   # another sub-batch bound

Batches of 64 texts, the build's shape (near-dedup's kept lists): ``prose``, 64 of bench/build.py's ``distinct``
documents (~2.4 KB each); ``one-word lines`` and ``stops``, one text of ``--hostile-kb`` KB of ``"a\\n"`` or of
``". "`` (a sentence every two bytes) among 63 such documents. Each side of each shape runs in a fresh process:
peak memory is tracemalloc's peak over the call (the batch's texts are made before it starts; both sides return
the same records and tables), CPU is the best of ``--rounds`` calls (process time, tracemalloc off).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import random
import subprocess
import sys
import time
import tracemalloc

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHAPES = ["one-word lines", "stops", "prose"]
SIDES = {"batch": "keyed_lines_many", "loop": "keyed_lines per text"}
BATCH = 64


def batches(shape: str, hostile_kb: int, prose_batches: int) -> list[list[tuple[str, str | None]]]:
    from bench.build import CORPORA

    drawn = CORPORA["distinct"](random.Random(0), 1)
    if shape == "prose":
        return [[(next(drawn), "en") for _ in range(BATCH)] for _ in range(prose_batches)]
    unit = "a\n" if shape == "one-word lines" else ". "
    texts = [(next(drawn), "en") for _ in range(BATCH - 1)]
    texts.insert(BATCH // 2, (unit * (hostile_kb * 1000 // len(unit)), "en"))
    return [texts]


def measure(shape: str, side: str, hostile_kb: int, prose_batches: int, rounds: int,
            batch_sentences: int | None) -> dict:
    """One side on one shape, in this process: ``{"peak_mb", "cpu_s", "sentences", "bytes"}``."""
    from corpusforge.pipeline.dedup import boilerplate
    from corpusforge.pipeline.dedup.sentence_split import sentence_spans

    if batch_sentences is not None:
        boilerplate._BATCH_SENTENCES = batch_sentences
    line_chars, sentence_chars = 10, 20  # the defaults (LineDedupConfig, SentenceDedupConfig)
    work = batches(shape, hostile_kb, prose_batches)
    if side == "batch":
        def run():
            return [boilerplate.keyed_lines_many(texts, line_chars, sentence_chars) for texts in work]
    else:
        def run():
            return [[boilerplate.keyed_lines(text, lang, line_chars, sentence_chars) for text, lang in texts]
                    for texts in work]
    run()  # warm: imports, regex compilation
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return {"peak_mb": peak / 1e6, "cpu_s": best,
            "sentences": sum(len(sentence_spans(t, lang)) for texts in work for t, lang in texts),
            "bytes": sum(len(t.encode()) for texts in work for t, _ in texts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hostile-kb", type=int, default=1000)
    parser.add_argument("--prose-batches", type=int, default=30, help="Batches of 64 prose documents timed")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shapes", nargs="*", default=SHAPES)
    parser.add_argument("--batch-sentences", type=int, help="boilerplate._BATCH_SENTENCES for the batch side")
    parser.add_argument("--one", nargs=2, metavar=("SHAPE", "SIDE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(*args.one, args.hostile_kb, args.prose_batches, args.rounds,
                                 args.batch_sentences)))
        return
    print(f"batches of {BATCH}: hostile text {args.hostile_kb} KB among 63 prose documents; prose "
          f"{args.prose_batches} batches; batch sentences {args.batch_sentences or 'as in the tree'}")
    print(f"{'shape':16s} {'side':22s} {'peak MB':>9s} {'CPU ms':>9s} {'us/doc':>8s}   batch/loop: peak  CPU")
    for shape in args.shapes:
        figures = {}
        for side in SIDES:
            cmd = [sys.executable, __file__, "--one", shape, side, "--hostile-kb", str(args.hostile_kb),
                   "--prose-batches", str(args.prose_batches), "--rounds", str(args.rounds)]
            if args.batch_sentences is not None:
                cmd += ["--batch-sentences", str(args.batch_sentences)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            figures[side] = json.loads(out.splitlines()[-1])  # the corpus's reading prints the Zen of Python first
        docs = BATCH * (args.prose_batches if shape == "prose" else 1)
        for side, name in SIDES.items():
            f = figures[side]
            ratios = ""
            if side == "loop":
                b = figures["batch"]
                ratios = f"   {b['peak_mb'] / f['peak_mb']:.2f}x  {b['cpu_s'] / f['cpu_s']:.2f}x"
            print(f"{shape:16s} {name:22s} {f['peak_mb']:9.1f} {1e3 * f['cpu_s']:9.1f} "
                  f"{1e6 * f['cpu_s'] / docs:8.1f}{ratios}")
        print(f"{'':16s} ({figures['batch']['sentences']:,} sentences, {figures['batch']['bytes'] / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
