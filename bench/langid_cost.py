"""Where fastText language ID spends its time, and what the dense copy of lid.176.ftz's input matrix saves.

    python bench/langid_cost.py [--docs 3000] [--rounds 3]

Documents: bench/build.py's ``distinct`` corpus (the same first ``--docs`` texts as ``--corpus distinct``).
Times are this process's CPU seconds per document, rounds alternating, so the ratios hold on a busy machine.

1. ``predict``: ``LanguageIdentifier.predict`` as the quality stage calls it, and fastText's own
   ``multilinePredict`` under it; ``tokenize only``: fastText's ``multilineGetLine`` (reading the words, no
   n-grams, no matrices); ``one_line``: the two ``str.replace`` before fastText.
2. ``dense``: the model as ``LanguageIdentifier`` loads it, its product-quantized input matrix decoded into a dense
   float32 matrix (``langid.decoded_model``, handed to fastText with ``setMatrices``; a dense model file cannot be
   written, because fastText refuses a non-quantized model whose dictionary is pruned, which lid.176.ftz's is),
   against ``.ftz``: the file as fastText loads it. The predictions must be bit-identical, labels and scores:
   decoding gives the same float additions in the same order.

The answer (docs/quality.md, "Where language ID's time goes"): the dense copy saves only the product
quantizer's decoding (~7 % of the samples of ``perf record``; 1.1-1.4x of the CPU), which the stage now does; most of the time is fastText's lookup of every
character n-gram of out-of-vocabulary words in the pruned dictionary's index (a ``std::unordered_map``).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time


sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.build import distinct_texts  # noqa: E402
from corpusforge.pipeline.quality.langid import (LanguageIdentifier, load_fasttext_model, one_line,  # noqa: E402
                                                 quantized_matrices)

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    generator = distinct_texts(random.Random(0), 1)
    texts = [next(generator) for _ in range(args.docs)]
    lines = [one_line(t) + "\n" for t in texts]

    identifier = LanguageIdentifier()  # as the quality stage loads it: the input matrix decoded
    started = time.process_time()
    reference = load_fasttext_model(identifier.model_path, "language-ID model")  # quantized, as fastText loads it
    loaded = time.process_time()
    dense, output = quantized_matrices(identifier.model_path)
    decoded = time.process_time()
    dense_model = identifier.model
    if not getattr(dense_model, "input_decoded", False):
        raise SystemExit("LanguageIdentifier kept the quantized matrix (its probe predicted otherwise)")
    print(f"{len(texts)} documents, mean {sum(map(len, texts)) / len(texts):,.0f} characters; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"start-up: load .ftz {loaded - started:.3f} s, decode {decoded - loaded:.3f} s; dense "
          f"input matrix {dense.shape[0]:,} x {dense.shape[1]} float32 = {dense.nbytes / 2**20:.1f} MiB")

    want = reference.f.multilinePredict(lines, 1, 0.0, "strict")
    got = dense_model.f.multilinePredict(lines, 1, 0.0, "strict")
    same = want[0] == got[0] and all(a.tobytes() == b.tobytes() for a, b in zip(want[1], got[1]))
    print(f"dense predictions bit-identical (labels and float32 scores): {same}")

    runs = {
        "LanguageIdentifier.predict": lambda: identifier.predict(texts),
        "multilinePredict (.ftz)": lambda: reference.f.multilinePredict(lines, 1, 0.0, "strict"),
        "multilinePredict (dense)": lambda: dense_model.f.multilinePredict(lines, 1, 0.0, "strict"),
        "tokenize only (multilineGetLine)": lambda: reference.f.multilineGetLine(lines, "strict"),
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
