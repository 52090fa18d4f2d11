"""What Beam's adaptive batch sizing costs a stage, against the fixed size corpusforge's stages batch by
(``corpusforge.pipeline.stage.fixed_batches``), on the same elements in the same run:

    OMP_NUM_THREADS=1 .venv/bin/python bench/batch_sizing.py --elements 200000 --rounds 3

Each round runs one pipeline per setting on the in-process DirectRunner: ``--elements`` integers, batched by
``beam.BatchElements`` (adaptive: ``min_batch_size=1, max_batch_size=--size``, as the PII stage batched before;
fixed: ``min_batch_size = max_batch_size = --size``), then a DoFn that does ``--work`` loop steps per element in the
batch and counts the batches and their elements. It prints CPU seconds per setting (best of the rounds, alternating),
the difference per element, and the mean batch each setting made. Beam's adaptive sizing fits a line to its batches'
timings (``numpy.polyfit``) at every batch and restarts from ``min_batch_size`` at every bundle.
"""
from __future__ import annotations

import argparse
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


class _Work(beam.DoFn):
    """Stands for a stage's per-batch work: ``work`` loop steps per element; counts batches and elements."""

    def __init__(self, work: int):
        self.work = work
        self.batches = beam.metrics.Metrics.counter("bench", "batches")
        self.elements = beam.metrics.Metrics.counter("bench", "elements")

    def process(self, batch):
        total = 0
        for element in batch:
            for step in range(self.work):
                total += element ^ step
        self.batches.inc()
        self.elements.inc(len(batch))
        yield total


def run(elements: int, size: int, work: int, adaptive: bool) -> tuple[float, float]:
    """``(CPU seconds, mean batch)`` of one pipeline."""
    batching = (beam.BatchElements(min_batch_size=1, max_batch_size=size) if adaptive
                else beam.BatchElements(min_batch_size=size, max_batch_size=size))
    began = time.process_time()
    pipeline = beam.Pipeline(options=PipelineOptions(["--runner=DirectRunner"]))
    _ = (pipeline | beam.Create(list(range(elements)), reshuffle=False) | batching | beam.ParDo(_Work(work)))
    result = pipeline.run()
    result.wait_until_finish()
    spent = time.process_time() - began
    counters = {c.key.metric.name: c.committed for c in result.metrics().query()["counters"]}
    return spent, counters["elements"] / max(counters["batches"], 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=int, default=200_000, help="Elements per pipeline.")
    parser.add_argument("--size", type=int, default=64, help="The batch size (the adaptive one's largest).")
    parser.add_argument("--work", type=int, default=20, help="Loop steps of work per element.")
    parser.add_argument("--rounds", type=int, default=3, help="Alternating rounds (best is reported).")
    args = parser.parse_args()
    best = {True: (float("inf"), 0.0), False: (float("inf"), 0.0)}
    for _ in range(args.rounds):
        for adaptive in (True, False):
            spent, mean = run(args.elements, args.size, args.work, adaptive)
            best[adaptive] = min(best[adaptive], (spent, mean))
    for adaptive, name in ((True, "adaptive (min 1)"), (False, "fixed")):
        spent, mean = best[adaptive]
        print(f"{name:17s} {spent:7.2f} CPU s  {spent / args.elements * 1e6:6.2f} us an element  "
              f"mean batch {mean:5.1f} of {args.size}")
    extra = (best[True][0] - best[False][0]) / args.elements * 1e6
    print(f"adaptive sizing costs {extra:+.2f} us an element ({best[True][0] / best[False][0]:.2f}x the fixed size's)")


if __name__ == "__main__":
    main()
