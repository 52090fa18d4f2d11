"""What the dedup stage's verdict joins cost: ``dedup.joins: shuffle`` against ``side_input``, alternated.

    .venv/bin/python bench/dedup_joins.py --docs 20000 --rounds 2
    .venv/bin/python bench/dedup_joins.py --docs 20000 --modes shuffle side_input --rounds 3

Each run is a fresh process that reads bench/build.py's ``distinct`` corpus (real prose, 5 % exact and 5 %
near copies, fixed seed) from JSONL, spills the texts (as a build does, corpusforge.pipeline.spill) and runs the
whole dedup stage (exact, near, lines + sentences) with defaults on the in-process DirectRunner (one worker), in
one mode. It prints the process's CPU time and peak RSS for ``--docs`` documents and for one document
(start-up: imports, graph, every fused stage once), the per-document CPU time (their difference) and a
digest of everything the stage decided (kept ids and texts, removals with their details, edits, errors): the
digests of the modes must be equal. CPU time, not wall time: the machine is shared.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)


def write_jsonl(path: str, documents: int) -> None:
    from bench.build import distinct_texts

    texts = distinct_texts(random.Random(0), 1)
    with open(path, "w") as f:
        for n in range(documents):
            f.write(json.dumps({"id": f"d{n:08d}", "text": next(texts)}) + "\n")


def run_stage(path: str, mode: str, out: str) -> None:
    """(child process) The dedup stage on ``path`` in ``mode``; its decisions, sorted, to ``out``."""
    import logging

    import apache_beam as beam

    from corpusforge.pipeline.dedup import Dedup, DedupConfig
    from corpusforge.pipeline.document import Document
    from corpusforge.pipeline.spill import SpillText
    from corpusforge.pipeline.stage import StageContext

    logging.getLogger().setLevel(logging.ERROR)

    def to_doc(line):
        record = json.loads(line)
        return Document(record["id"], record["text"], "bench", annotations={"quality_score": len(record["text"]) % 7 / 7})

    with tempfile.TemporaryDirectory() as tmp:
        spill = os.path.join(tmp, "spill")
        with beam.Pipeline(runner="DirectRunner") as p:
            docs = p | beam.io.ReadFromText(path) | "Doc" >> beam.Map(to_doc) | SpillText(spill)
            result = docs | Dedup(DedupConfig(joins=mode), StageContext(spill_dir=spill, direct_runner=True))
            rows = (
                result.kept | "Kept" >> beam.Map(lambda d: json.dumps(["kept", d.id, d.text])),
                result.removed | "Removed" >> beam.Map(
                    lambda r: json.dumps(["removed", r.doc.id, r.reason, sorted(r.details.items()), r.doc.text])),
                result.edits | "Edits" >> beam.Map(lambda e: json.dumps(["edit", *e])),
                result.errors | "Errors" >> beam.Map(lambda r: json.dumps(["error", r.path, r.detail])),
            ) | beam.Flatten()
            _ = rows | beam.io.WriteToText(os.path.join(tmp, "rows"))
        lines = sorted(line for name in os.listdir(tmp) if name.startswith("rows")
                       for line in open(os.path.join(tmp, name)))
    with open(out, "w") as f:
        f.writelines(lines)


def measure(path: str, mode: str, out: str) -> tuple[float, float]:
    """CPU seconds (user + system) and peak RSS (MB) of one child run."""
    proc = subprocess.Popen([sys.executable, __file__, "_run", path, mode, out], cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"the {mode} run failed")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--modes", nargs="+", default=["shuffle", "side_input"])
    args = parser.parse_args()
    if len(sys.argv) > 1 and sys.argv[1] == "_run":
        return
    with tempfile.TemporaryDirectory() as tmp:
        corpus, one = os.path.join(tmp, "corpus.jsonl"), os.path.join(tmp, "one.jsonl")
        write_jsonl(corpus, args.docs)
        write_jsonl(one, 1)
        print(f"{args.docs:,} documents, dedup stage alone, in-process DirectRunner; "
              f"load average {os.getloadavg()[0]:.1f}")
        per_doc: dict[str, list[float]] = {mode: [] for mode in args.modes}
        digests: dict[str, set[str]] = {mode: set() for mode in args.modes}
        for r in range(args.rounds):
            for mode in args.modes:
                out = os.path.join(tmp, f"{mode}-{r}.rows")
                cpu, rss = measure(corpus, mode, out)
                cpu_one, _ = measure(one, mode, os.path.join(tmp, "one.rows"))
                digests[mode].add(hashlib.sha256(open(out, "rb").read()).hexdigest()[:16])
                per_doc[mode].append((cpu - cpu_one) / args.docs * 1e6)
                print(f"  round {r + 1} {mode:10s}: {cpu:6.1f} CPU s, one document {cpu_one:4.1f} CPU s; "
                      f"{per_doc[mode][-1]:5.0f} us per document ({1e6 / per_doc[mode][-1]:5.0f} docs per CPU-s); "
                      f"peak RSS {rss:5.0f} MB; load {os.getloadavg()[0]:.1f}")
        for mode in args.modes:
            print(f"{mode:10s}: {min(per_doc[mode]):.0f}-{max(per_doc[mode]):.0f} us per document; "
                  f"decisions digest {' '.join(sorted(digests[mode]))}")
        print("decisions identical across modes and rounds:",
              len(set().union(*digests.values())) == 1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_run":
        run_stage(*sys.argv[2:5])
    else:
        main()
