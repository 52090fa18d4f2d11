"""Where fastText language ID spends its time, and what a dense copy of lid.176.ftz's input matrix would save.

    python bench/langid_cost.py [--docs 3000] [--rounds 3]

Documents: bench/build.py's ``distinct`` corpus (the same first ``--docs`` texts as ``--corpus distinct``).
Times are this process's CPU seconds per document, rounds alternating, so the ratios hold on a busy machine.

1. ``predict``: ``LanguageIdentifier.predict`` as the quality stage calls it, and fastText's own
   ``multilinePredict`` under it; ``tokenize only``: fastText's ``multilineGetLine`` (reading the words, no
   n-grams, no matrices); ``one_line``: the two ``str.replace`` before fastText.
2. ``dense``: the same model with its product-quantized input matrix decoded into a dense float32 matrix
   (handed to fastText with ``setMatrices``; a dense model file cannot be written, because fastText refuses a
   non-quantized model whose dictionary is pruned, which lid.176.ftz's is). The predictions must be
   bit-identical, labels and scores: decoding gives the same float additions in the same order.

The answer (docs/quality.md, "Where language ID's time goes"): the dense copy saves only the product
quantizer's decoding (~7 % of the samples of ``perf record``); most of the time is fastText's lookup of every
character n-gram of out-of-vocabulary words in the pruned dictionary's index (a ``std::unordered_map``).
"""
from __future__ import annotations

import argparse
import mmap
import os
import random
import struct
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.build import distinct_texts  # noqa: E402
from corpusforge.pipeline.quality.langid import LanguageIdentifier, one_line  # noqa: E402

KSUB = 256  # centroids per sub-quantizer


def dense_matrices(path: str) -> tuple[np.ndarray, np.ndarray]:
    """The input matrix of a quantized fastText model (``qout`` false) decoded row by row as fastText's
    ``QuantMatrix::addRowToVector`` adds it (centroid values, times the row's norm when ``qnorm``), and
    its dense output matrix. Layout: fastText's ``saveModel`` (see ``check_fasttext_file``)."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        pos = 8 + struct.calcsize("<12id")
        words, _, _, _, pruned = struct.unpack_from("<iiiqq", data, pos)
        pos += struct.calcsize("<iiiqq")
        for _ in range(words):
            pos = data.find(b"\0", pos) + 1 + 9
        pos += max(pruned, 0) * 8

        def take(fmt):
            nonlocal pos
            values = struct.unpack_from(fmt, data, pos)
            pos += struct.calcsize(fmt)
            return values

        def floats(count):
            nonlocal pos
            out = np.frombuffer(data, np.float32, count, pos).copy()
            pos += count * 4
            return out

        quantized, = take("<?")
        qnorm, rows, dim, codesize = take("<?qqi")
        if not quantized:
            raise SystemExit(f"{path} is not quantized")
        codes = np.frombuffer(data, np.uint8, codesize, pos).copy()
        pos += codesize
        _, nsubq, dsub, lastdsub = take("<iiii")
        centroids = floats(dim * KSUB)
        codes = codes.reshape(rows, nsubq)
        dense = np.empty((rows, dim), np.float32)
        for m in range(nsubq):  # ProductQuantizer::get_centroids: the last sub-quantizer is lastdsub wide
            width = lastdsub if m == nsubq - 1 else dsub
            table = centroids[m * KSUB * dsub: m * KSUB * dsub + KSUB * width].reshape(KSUB, width)
            dense[:, m * dsub: m * dsub + width] = table[codes[:, m]]
        if qnorm:
            norm_codes = np.frombuffer(data, np.uint8, rows, pos).copy()
            pos += rows
            norm_dim = take("<iiii")[0]
            dense *= floats(norm_dim * KSUB)[norm_codes][:, None]  # float32 products, as alpha * c[n]
        qout, = take("<?")
        if qout:
            raise SystemExit(f"{path} has a quantized output matrix")
        out_rows, out_dim = take("<qq")
        output = floats(out_rows * out_dim).reshape(out_rows, out_dim)
    return np.ascontiguousarray(dense), output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    generator = distinct_texts(random.Random(0), 1)
    texts = [next(generator) for _ in range(args.docs)]
    lines = [one_line(t) + "\n" for t in texts]

    reference = LanguageIdentifier()
    started = time.process_time()
    dense_model = LanguageIdentifier()
    loaded = time.process_time()
    dense, output = dense_matrices(reference.model_path)
    dense_model.model.f.setMatrices(dense, output)
    decoded = time.process_time()
    print(f"{len(texts)} documents, mean {sum(map(len, texts)) / len(texts):,.0f} characters; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"start-up: load .ftz {loaded - started:.3f} s, decode + setMatrices {decoded - loaded:.3f} s; dense "
          f"input matrix {dense.shape[0]:,} x {dense.shape[1]} float32 = {dense.nbytes / 2**20:.1f} MiB")

    want = reference.model.f.multilinePredict(lines, 1, 0.0, "strict")
    got = dense_model.model.f.multilinePredict(lines, 1, 0.0, "strict")
    same = want[0] == got[0] and all(a.tobytes() == b.tobytes() for a, b in zip(want[1], got[1]))
    print(f"dense predictions bit-identical (labels and float32 scores): {same}")

    runs = {
        "LanguageIdentifier.predict": lambda: reference.predict(texts),
        "multilinePredict (.ftz)": lambda: reference.model.f.multilinePredict(lines, 1, 0.0, "strict"),
        "multilinePredict (dense)": lambda: dense_model.model.f.multilinePredict(lines, 1, 0.0, "strict"),
        "tokenize only (multilineGetLine)": lambda: reference.model.f.multilineGetLine(lines, "strict"),
        "one_line": lambda: [one_line(t) for t in texts],
    }
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            t = time.process_time()
            run()
            seconds[name].append(time.process_time() - t)
    for name, values in seconds.items():
        per_doc = sorted(v / len(texts) * 1e6 for v in values)
        print(f"  {name:34s} {per_doc[0]:7.1f} - {per_doc[-1]:7.1f} us/doc")
    ratios = sorted(a / b for a, b in zip(seconds["multilinePredict (.ftz)"], seconds["multilinePredict (dense)"]))
    print(f"dense vs .ftz, per round: {', '.join(f'{r:.2f}x' for r in ratios)}")


if __name__ == "__main__":
    main()
