"""Cost per document of dedup's per-document text work on bench/build.py's corpora, with and without the whole-text
path of ``dedup.text.normalized_bytes`` (``--per-word``: every mostly non-ASCII text through the per-word path,
as before it):

    OMP_NUM_THREADS=1 .venv/bin/python bench/dedup_text_cost.py --corpus multilingual [--docs 1500] [--per-word]

Times are the best of ``--rounds`` passes, CPU microseconds per document (process time), each with a digest of its
outputs: both modes must print the same digests.
"""
from __future__ import annotations

import argparse
import hashlib
import pathlib
import random
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="multilingual", help="bench/build.py's corpus: distinct, multilingual")
    parser.add_argument("--docs", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-word", action="store_true", help="Disable the whole-text path (the cost before it).")
    args = parser.parse_args()

    from bench.build import CORPORA
    from corpusforge.pipeline.dedup import exact
    from corpusforge.pipeline.dedup import text as dedup_text
    from corpusforge.pipeline.dedup.boilerplate import line_records
    from corpusforge.pipeline.dedup.config import LineDedupConfig, NearDedupConfig, SentenceDedupConfig
    from corpusforge.pipeline.dedup.minhash import MinHasher, Shingler

    if args.per_word:
        dedup_text._WHOLE_TEXT = 0
    drawn = CORPORA[args.corpus](random.Random(0), 1)
    texts = [next(drawn) for _ in range(args.docs)]
    near, lines, sentences = NearDedupConfig(), LineDedupConfig(), SentenceDedupConfig()
    hasher = MinHasher(near.num_perm, near.seed, Shingler(near.ngram, near.unit, near.hash))
    batches = [texts[i:i + near.batch_size] for i in range(0, len(texts), near.batch_size)]
    steps = {
        "normalized_bytes (whole text)": lambda: [dedup_text.normalized_bytes(t) for t in texts],
        "exact key": lambda: [exact.text_digest(t) for t in texts],
        "line + sentence keys": lambda: [line_records(t, None, lines.min_line_chars, sentences.min_sentence_chars)
                                         for t in texts],
        "MinHash signatures": lambda: [hasher.from_hashes(*hasher.shingler.hashes(b)).tobytes() for b in batches],
    }
    print(f"{args.docs:,} documents ({args.corpus}), {'per-word path' if args.per_word else 'this tree'}")
    for name, step in steps.items():
        best = float("inf")
        for _ in range(args.rounds):
            started = time.process_time()
            result = step()
            best = min(best, time.process_time() - started)
        digest = hashlib.sha256(repr(result).encode()).hexdigest()[:12]
        print(f"  {name:30s} {1e6 * best / len(texts):7.1f} us a document   outputs {digest}")


if __name__ == "__main__":
    main()
