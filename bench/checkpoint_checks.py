"""CPU a checkpointed build spends checking its stage checkpoints' shards (size and CRC-32, pipeline/build.py:
``_shard_check``), against the whole build's, in one in-process build on one worker.

    python bench/checkpoint_checks.py                         # 3,000 docs, normalize + dedup, Arrow shards
    python bench/checkpoint_checks.py --documents 10000 --set output.format=parquet

The corpus is bench/build.py's `distinct` (web-like, ~2.2 KB of text a document).
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build import write_corpus  # noqa: E402
from workdirs import temporary_workdir  # noqa: E402

from corpusforge.config import load_config  # noqa: E402
from corpusforge.pipeline import build  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=3000)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    work = temporary_workdir("cf-bench-checkpoint-checks-")
    corpus = os.path.join(work, "corpus")
    write_corpus(corpus, args.documents, kind="distinct")
    spent, read, calls = 0.0, 0, 0
    check = build._shard_check

    def timed(path):
        nonlocal spent, read, calls
        started = time.process_time()
        result = check(path)
        spent, read, calls = spent + time.process_time() - started, read + result[0], calls + 1
        return result

    build._shard_check = timed
    config = load_config(overrides=[f"inputs=[{{path: '{corpus}/*.jsonl.zst'}}]", f"output.run_dir={work}/run",
                                    "output.stage_checkpoints=true", "output.format=arrow", "quality.enabled=false",
                                    "pii.enabled=false", *args.set])
    started = time.process_time()
    build.run_build(config, out=io.StringIO(), progress=False)
    total = time.process_time() - started
    print(f"build {total:.2f} CPU s; shard checks {spent * 1000:.1f} CPU ms over {read / 1e6:.1f} MB in {calls} "
          f"reads ({spent / total:.2%} of the build)")


if __name__ == "__main__":
    main()
