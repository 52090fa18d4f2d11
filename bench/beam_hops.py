"""What one more per-document step costs Beam inside a fused stage: the bound on what batching a fused chain saves.

    python bench/beam_hops.py                 # 20,000 documents, 1 vs 9 chained steps, 2 rounds
    python bench/beam_hops.py --docs 50000 --rounds 3

Issue #38 item 1 asks whether readers should emit batches so that the fused read -> normalize -> quality chain
moves lists of documents instead of one element per document. What that can save is Beam's cost of handing one
element from a step to the next one fused with it (the steps' own work is the same either way). This builds, on
the in-process DirectRunner (one worker), a pipeline of N documents through 1 and through 9 chained steps of two
kinds, and prints the CPU time per document and step that the 8 extra steps added:

- ``bare``: ``beam.ParDo`` of a DoFn that yields its element;
- ``guarded``: the same DoFn as a stage applies it, under the dead-letter wrapper with the ``removed``,
  ``edits`` and ``errors`` tagged outputs (``corpusforge.pipeline.stage.guarded``).

Multiply by the per-document steps of a fused stage (``python bench/build_profile.py --graph`` lists them) for what
batching that chain could save at most.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def _chain_cpu(docs: int, steps: int, guarded_steps: bool) -> float:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from corpusforge.pipeline.document import Document
    from corpusforge.pipeline.stage import EDITS, ERRORS, REMOVED, guarded

    class Pass(beam.DoFn):
        def process(self, doc):
            yield doc

    def make(_):
        return (Document(id=f"d{i}", text="x" * 2000, source="bench") for i in range(docs))

    started = time.process_time()
    options = PipelineOptions(["--runner=DirectRunner", "--direct_num_workers=1"])
    with beam.Pipeline(options=options) as pipeline:
        pcoll = pipeline | beam.Create([None]) | "Make" >> beam.FlatMap(make)
        for i in range(steps):
            if guarded_steps:
                pcoll = (pcoll | f"Step{i}" >> beam.ParDo(guarded(Pass(), "bench"))
                         .with_outputs(REMOVED, EDITS, ERRORS, main="kept")).kept
            else:
                pcoll = pcoll | f"Step{i}" >> beam.ParDo(Pass())
        _ = pcoll | beam.combiners.Count.Globally()
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for kind, is_guarded in (("bare", False), ("guarded", True)):
        per_step = []
        for _ in range(args.rounds):
            one, nine = _chain_cpu(args.docs, 1, is_guarded), _chain_cpu(args.docs, 9, is_guarded)
            per_step.append((nine - one) / 8 / args.docs * 1e6)
        print(f"{kind:>8} step: {statistics.median(per_step):.2f} us of CPU per document and step "
              f"(rounds: {', '.join(f'{p:.2f}' for p in per_step)}; {args.docs:,} documents; load average "
              f"{os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
