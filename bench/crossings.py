"""How many times a build encodes and decodes each document, and where: the fused-stage boundaries documents cross.

    OMP_NUM_THREADS=1 python bench/crossings.py --docs 3000                 # every stage
    OMP_NUM_THREADS=1 python bench/crossings.py --docs 3000 --stages normalize,dedup
    OMP_NUM_THREADS=1 python bench/crossings.py --docs 1000 --shared-ids     # as before 43845c0

One build of bench/build.py's ``distinct`` corpus runs on the in-process DirectRunner (one worker, as
``bench/build_profile.py --plain``) with ``DocumentCoder``'s fallback (``_DocumentOrPickleImpl``: every document,
batch of documents and removal that crosses a fused-stage boundary or a shuffle) wrapped to count, per call:

- the kind: ``encode``, ``decode``, or ``size`` (Beam's ``OperationCounters`` sampling an element's size on a
  ``ByteCountingOutputStream``: estimated from the text's length, not encoded);
- how many documents it carried (a ``Documents`` batch counts its length, a ``Removed`` one);
- where: the Beam operation or runner buffer up the Python stack (``DataOutputOperation`` writing a fused
  stage's output, ``DataInputOperation`` reading one, the runner's grouping buffer of a ``GroupByKey``, ...)
  and the PCollection that crossed (the transform that made it).

It prints documents encoded and decoded per input document by crossing, largest first, and the totals: the count
of each per-document coding a build pays, whatever each one costs (~19 us to encode and decode a document with an
every-stage build's annotations as rows, ~16 us in a ``Documents`` batch: ``bench/coder.py``). Where the Python
stack holds no operation between the coder and the fused stage's input (Beam's operations are compiled), the
fused stage is named by its input: a ``size`` sample or an encode on a spilling build's disk runs is attributed to
the ``DataInputOperation`` of the stage it happens in. The runner's own grouping buffers never decode a document:
on the runner side the SDK's coder is length-prefixed bytes.

Measured on 2026-11-29, ``--docs 1000`` (counts, so load does not move them):

- every stage, in-memory shuffles (the bench default): before 43845c0 9.71 encodes and 9.71 decodes per document:
  the reader's Flatten of documents and renames (1.0) and its spreading GroupByKey (1.0); per dedup step the wait
  for its verdicts (a side input: the step's documents are materialized until the verdicts are ready; exact 0.99,
  near 0.94, line + sentence 0.92) and the Flatten of its kept documents with the branch of documents sharing an
  id (0.94, 0.92, 0.92: a multi-input Flatten is a buffer of its own on Beam's in-process runner); the shard
  writer's lists waiting for the shard count (0.92) and its GroupByShard (0.92, both in ``Documents`` batches);
  removals (0.08 each at FlattenRemoved, the writer's wait and its shuffle). Now 6.93: no Flatten after a dedup
  step (a build's ids are unique, ``StageContext.unique_ids``). Fused stages of a one-document build 51 -> 43
  (``bench/build_profile.py --graph --against f6c5703``); its start-up 3.99 -> 3.38 CPU s by the median
  (``bench/build_profile.py --startup 3 --against f042c49``, alternating, load average 7.8).
- normalize + dedup (``--stages normalize,dedup``, and ``--shared-ids`` for the build before): 9.75 -> 6.96, the
  same crossings (quality and PII cross none: they are fused with the read and with the last dedup step).
- every stage with ``--set output.disk_shuffle_mb=0`` (shuffles on disk; dedup joins by shuffle): 6.00, each
  shuffle of documents writes its runs in the step that made them (disk_grouping), so no Flatten crossing.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench import build_profile as bp  # noqa: E402
from bench.build import ALL_STAGES, write_corpus  # noqa: E402
from bench.workdirs import temporary_workdir  # noqa: E402

COUNTS: collections.Counter = collections.Counter()  # (kind, where) -> documents
CALLS: collections.Counter = collections.Counter()  # (kind, where) -> calls


def _docs_in(value) -> int:
    from corpusforge.pipeline.document import Document, Removed
    from corpusforge.pipeline.document_coder import DocumentPairs, Documents

    if type(value) in (Documents, DocumentPairs) or (type(value) is list and value and type(value[0]) in (Document, Removed)):
        return len(value)
    return 1 if type(value) in (Document, Removed) else 0


def _where(depth: int = 2) -> str:
    """The Beam operation or runner buffer up the stack, and what it carries."""
    from apache_beam.runners.worker import operations

    frame = sys._getframe(depth)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if owner is not None:
            kind = type(owner).__name__
            if isinstance(owner, operations.Operation):
                name = getattr(owner, "name_context", None)
                step = getattr(name, "step_name", "?") if name else "?"
                return f"{kind} {step}"
            if "Buffer" in kind:
                return f"runner {kind}"
        frame = frame.f_back
    return "?"


STAGES: list = []  # (stage context, fused stages) the runner was handed


def _capture_stages():
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    run_stages = fn_runner.FnApiRunner.run_stages

    def capturing(self, context, stages):
        STAGES.append((context, stages))
        return run_stages(self, context, stages)

    fn_runner.FnApiRunner.run_stages = capturing


def describe(where: str) -> str:
    """``where`` with a buffer's PCollection named by the transform that made it, and the fused stage that reads
    or writes it (its first and last real transforms)."""
    m = re.search(r"(ref_PCollection_\S+?)/(Read|Write)", where)
    if not m or not STAGES:
        return where
    context, stages = STAGES[-1]
    pcoll = context.components.pcollections.get(m.group(1))
    made_by = ""
    for tid, t in context.components.transforms.items():
        if not t.subtransforms and m.group(1) in t.outputs.values():
            made_by = t.unique_name
    return f"{where} [{pcoll.unique_name if pcoll else '?'} made by {made_by}]"


@contextlib.contextmanager
def counting():
    from apache_beam.coders.coder_impl import ByteCountingOutputStream

    from corpusforge.pipeline import document_coder as dc

    impl = dc._DocumentOrPickleImpl
    encode, decode = impl.encode_to_stream, impl.decode_from_stream

    def counted_encode(self, value, stream, nested):
        kind = "size" if type(stream) is ByteCountingOutputStream else "encode"
        where = _where()
        COUNTS[kind, where] += _docs_in(value)
        CALLS[kind, where] += 1
        return encode(self, value, stream, nested)

    def counted_decode(self, stream, nested):
        value = decode(self, stream, nested)
        where = _where()
        COUNTS["decode", where] += _docs_in(value)
        CALLS["decode", where] += 1
        return value

    impl.encode_to_stream, impl.decode_from_stream = counted_encode, counted_decode
    try:
        yield
    finally:
        impl.encode_to_stream, impl.decode_from_stream = encode, decode


_CONTEXT: list = []


def _shared_ids(on: bool) -> None:
    """The build's dedup looks for ids that documents share (as before 43845c0), or not (as now)."""
    import dataclasses

    from corpusforge.pipeline import build

    if not _CONTEXT:
        _CONTEXT.append(build.StageContext)
    context = _CONTEXT[0]
    build.StageContext = (lambda **kw: dataclasses.replace(context(**kw), unique_ids=False)) if on else context


def time_both(corpus: str, workdir: str, stages: list[str], docs: int, rounds: int) -> None:
    import gc
    import statistics

    one = bp.write_one(workdir, email="pii" in stages)
    rates: dict[str, list[float]] = {"shared ids (before)": [], "unique ids (now)": []}
    for r in range(rounds):
        order = list(rates) if r % 2 == 0 else list(rates)[::-1]
        for name in order:
            _shared_ids(name.startswith("shared"))
            gc.collect()  # the builds before's garbage, not this build's, as floor.py does
            bp.run_build(bp.build_args(one, os.path.join(workdir, "run-1"), stages))
            fixed = bp._LAST_CPU[0]
            gc.collect()
            bp.run_build(bp.build_args(corpus, os.path.join(workdir, "run-time"), stages))
            rates[name].append((docs - 1) / max(bp._LAST_CPU[0] - fixed, 1e-9))
        print(f"round {r + 1}: " + ", ".join(f"{name} {v[-1]:.0f}" for name, v in rates.items())
              + f" docs per CPU-second; load average {os.getloadavg()[0]:.1f}", flush=True)
    before, now = (statistics.median(v) for v in rates.values())
    ratios = [b / a for a, b in zip(*rates.values())]
    print(f"median docs per CPU-second: before {before:.0f}, now {now:.0f}; per round now/before "
          f"{', '.join(f'{x:.2f}' for x in ratios)} (median {statistics.median(ratios):.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--stages", default=",".join(ALL_STAGES))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--time", type=int, default=0, metavar="ROUNDS",
                        help="Instead: CPU seconds per document of builds with and without --shared-ids, alternating in "
                             "this process (a one-document build subtracted), ROUNDS times.")
    parser.add_argument("--shared-ids", action="store_true",
                        help="Build as before 43845c0: dedup looks for ids that documents share (StageContext.unique_ids "
                             "false), each step's kept documents a Flatten with the gathered branch's.")
    args = parser.parse_args()
    stages = args.stages.split(",")
    bp.SETTINGS.extend(args.set)
    workdir = os.path.abspath(args.workdir or temporary_workdir("cf-bench-crossings-"))
    corpus = os.path.join(workdir, f"corpus-distinct-{args.docs}")
    write_corpus(corpus, args.docs, kind="distinct")
    if args.time:
        time_both(corpus, workdir, stages, args.docs, args.time)
        return
    if args.shared_ids:
        _shared_ids(True)
    _capture_stages()
    with counting():
        bp.run_build(bp.build_args(corpus, os.path.join(workdir, "run"), stages))
    n = args.docs
    print(f"{n:,} docs, stages {','.join(stages)}; settings {' '.join(args.set) or 'default'}: documents coded per "
          "input document by crossing (calls per document in brackets)")
    for (kind, where), docs in sorted(COUNTS.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{kind:<7} {docs / n:6.2f} ({CALLS[kind, where] / n:6.2f})  {describe(where)}")
    totals = collections.Counter()
    for (kind, _), docs in COUNTS.items():
        totals[kind] += docs
    print("total per document: " + ", ".join(f"{kind} {v / n:.2f}" for kind, v in sorted(totals.items())))


if __name__ == "__main__":
    main()
