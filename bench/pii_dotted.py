"""False positives of the PII scrubber on dotted numbers that are not phone numbers (docs/pii.md, Dotted numbers).

    .venv/bin/python bench/pii_dotted.py [--out FILE]

Three sets, each scrubbed with the default ``PIIConfig`` inside a sentence ("Tested with V and V."):
the version strings of every distribution installed in this environment (real versions), 2,000 drawn dotted
versions and builds of nine shapes (seed 0; three of them are phone-shaped on purpose: ``1.NNN.NNN.NNNN``,
``7.NNN.NNN.NNNN``, ``CC.D.DD.DD.DD.DD``), and Python's own documentation (``pydoc_data.topics``). Prints how
many each has changed; ``--out`` writes the changed drawn versions, one a line (to compare two commits).
"""
from __future__ import annotations

import argparse
import importlib.metadata
import random


def drawn_versions(n: int = 2000, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    r = rng.randrange
    return [rng.choice([
        f"{r(80, 140)}.0.{r(1000, 7000)}.{r(1, 300)}", f"10.0.{r(10000, 22631)}.{r(1, 3000)}",
        f"6.{r(0, 4)}.{r(7600, 9600)}.{r(16384, 23000)}", f"{r(1, 9)}.{r(100, 999)}.{r(100, 999)}.{r(1000, 9999)}",
        f"{r(1, 3)}.{r(10, 99)}.{r(100, 999)}.{r(1000, 99999)}", f"{r(2015, 2026)}.{r(1, 13):02d}.{r(1, 29):02d}.{r(1, 9)}",
        f"{r(10, 99)}.{r(1, 9)}.{r(10, 99)}.{r(10, 99)}.{r(10, 99)}.{r(10, 99)}", f"{r(1, 4)}.{r(0, 30)}.{r(0, 200)}",
        f"{r(1, 30)}.{r(0, 99)}.{r(1000, 99999)}"]) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="", help="Write the changed drawn versions here, one a line.")
    args = parser.parse_args()
    from pydoc_data.topics import topics

    from corpusforge.pipeline.pii.config import PIIConfig
    from corpusforge.pipeline.pii.scrubber import Scrubber

    scrubber = Scrubber(PIIConfig())

    def changed(v: str) -> bool:
        text = f"Tested with {v} and {v}."
        return scrubber.scrub(text).text != text

    installed = sorted({d.version for d in importlib.metadata.distributions()})
    hits = [v for v in installed if changed(v)]
    print(f"installed distribution versions: {len(installed)}, changed {len(hits)} {hits[:10]}")
    drawn = drawn_versions()
    hits = [v for v in drawn if changed(v)]
    print(f"drawn dotted versions and builds: {len(drawn)}, changed {len(hits)} {hits[:20]}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("\n".join(hits) + "\n")
    found = {k: [t[s.start:s.end] for s in scrubber.scrub(t).spans] for k, t in topics.items()}
    found = {k: v for k, v in found.items() if v}
    print(f"pydoc topics: {len(topics)} texts, {sum(map(len, topics.values()))} characters, "
          f"with a finding: {len(found)} {list(found.items())[:10]}")


if __name__ == "__main__":
    main()
