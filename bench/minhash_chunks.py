"""MinHash signatures' cost per MB against the number of shingles permuted at a time.

    python bench/minhash_chunks.py            # batches of 256 web-like documents, one 100k / 1M / 4M-character text

``MinHasher.from_hashes`` permutes a batch's shingles one permutation at a time through one buffer. With the buffer
as large as the batch (the code before chunking), one 4M-character document's ~700k shingles left the cache on every
one of the 256 permutations; chunks of ``_CHUNK_SHINGLES`` (1 MB of uint32) keep it there. This times both on the
same shingle hashes in one process (best of 5, CPU seconds per MB of text, 256 permutations), after checking that
they give the same signatures.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    import numpy as np

    import corpusforge.pipeline.dedup.minhash as minhash
    from bench.build import distinct_texts

    texts = distinct_texts(random.Random(0), 1)
    docs = [next(texts) for _ in range(2500)]
    prose = "\n".join(docs)
    hasher = minhash.MinHasher(num_perm=256)
    chunked_size = minhash._CHUNK_SHINGLES
    cases = {"batch of 256 docs": docs[:256], "100k chars": [prose[:100_000]], "1M chars": [prose[:1_000_000]],
             "4M chars": [prose[:4_000_000]]}
    print(f"{'text':>18}  {'one buffer':>10}  {'chunked':>8}  s/MB (256 permutations)")
    for name, batch in cases.items():
        hashes, counts = hasher.shingler.hashes(batch)
        mb = sum(len(t.encode()) for t in batch) / 1e6
        reps = max(3, int(4 / mb))
        best, sigs = {}, {}
        for _ in range(5):
            for label, size in (("one buffer", 1 << 62), ("chunked", chunked_size)):
                minhash._CHUNK_SHINGLES = size
                start = time.process_time()
                for _ in range(reps):
                    sigs[label] = hasher.from_hashes(hashes, counts)
                best[label] = min(best.get(label, 9e9), (time.process_time() - start) / reps / mb)
        minhash._CHUNK_SHINGLES = chunked_size
        assert np.array_equal(sigs["one buffer"], sigs["chunked"]), name
        print(f"{name:>18}  {best['one buffer']:>10.4f}  {best['chunked']:>8.4f}  "
              f"({best['one buffer'] / best['chunked']:.2f}x)")


if __name__ == "__main__":
    main()
