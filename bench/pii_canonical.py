"""Cost and decisions of the PII canonical view (``corpusforge.pipeline.pii.canonical``) on the PII bench's set.

    .venv/bin/python bench/pii_canonical.py --docs 2000 --paragraphs 4 --rounds 3

Scrubs the labelled set of ``bench/pii_data/generate.py`` twice in one process, rounds interleaved: with the
canonical view (what the ``Scrubber`` does) and with the view switched off (every text its own view: the
scrubber before it). Prints CPU time per document of each (best of ``--rounds``) and how many documents come
out different (plain-text decisions must not change: 0 expected on this set, which holds no disguises).
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time
from unittest import mock

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from pii_data.generate import build  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--paragraphs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    from corpusforge.pipeline.pii import scrubber as module
    from corpusforge.pipeline.pii.canonical import Canonical
    from corpusforge.pipeline.pii.config import PIIConfig

    texts = [d["text"] for d in build(args.docs, args.seed, paragraphs_per_doc=args.paragraphs)]
    scrubber = module.Scrubber(PIIConfig(), salt="0" * 32)
    scrubber.scrub_batch(texts[:50])  # warm-up: Presidio loaded
    best, outputs = {"canonical": float("inf"), "off": float("inf")}, {}
    for _ in range(args.rounds):
        for name in best:
            patch = (mock.patch.object(module, "canonical", lambda t, ambiguous=True: Canonical(t, t, None)) if name == "off"
                     else mock.patch.object(module, "canonical", module.canonical))
            with patch:
                start = time.process_time()
                outputs[name] = [r.text for r in scrubber.scrub_batch(texts)]
                best[name] = min(best[name], time.process_time() - start)
    changed = sum(a != b for a, b in zip(outputs["canonical"], outputs["off"]))
    chars = sum(map(len, texts))
    print(f"{len(texts)} docs, {chars / len(texts):.0f} chars/doc, {sum(not t.isascii() for t in texts)} non-ASCII")
    for name, seconds in best.items():
        print(f"{name:10s} {seconds / len(texts) * 1e6:8.1f} us/doc  ({len(texts) / seconds:.0f} docs/CPU-s)")
    print(f"documents scrubbed differently: {changed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
