"""Mojibake repair (``normalize.fix_mojibake``, ftfy): does it change clean text, what does it cost, what does it
repair, and how much mojibake the quality stage's junk detector misses without it.

    apt-get install -y python3.11-doc debian-reference-de debian-reference-fr debian-reference-es \\
        debian-reference-it fortunes-de fortunes-es fortunes-it
    python bench/mojibake.py [--docs 24000] [--repeat 3]

Clean text: ``bench.quality_data.corpus.real_corpus`` (Python's documentation, docstrings, the Debian Reference
in German, French, Spanish and Italian, fortunes). Mojibake: the clean documents that hold non-ASCII
characters, garbled the ways it happens on the web: UTF-8 bytes read as Windows-1252 (undefined bytes kept as
Latin-1 control characters, what browsers and ftfy's "sloppy" codec do), as Latin-1, the same twice
(``doesnÃ¢â‚¬â„¢t``), and one paragraph only in an otherwise good document. A garbled document is *repaired*
when normalising it gives exactly what normalising the clean original gives.
"""
from __future__ import annotations

import argparse
import dataclasses
import pathlib
import random
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import ftfy.bad_codecs  # noqa: E402,F401  (registers sloppy-windows-1252)

from bench.quality_data.corpus import APT_PACKAGES, real_corpus  # noqa: E402
from corpusforge.pipeline.normalize.config import NormalizeConfig  # noqa: E402
from corpusforge.pipeline.normalize.stage import normalize_text, repair_mojibake  # noqa: E402
from corpusforge.pipeline.quality.config import JunkConfig  # noqa: E402
from corpusforge.pipeline.quality.decide import decide_junk  # noqa: E402
from corpusforge.pipeline.quality.measure import measure_junk  # noqa: E402
from corpusforge.pipeline.quality.text import TextView  # noqa: E402


def junk_rule(text: str, junk: JunkConfig) -> str | None:
    """The quality stage's junk rules on one text (measure -> decide)."""
    return decide_junk(measure_junk(TextView(text)), junk)


def cp1252(text: str) -> str:
    return text.encode("utf-8").decode("sloppy-windows-1252")


def latin1(text: str) -> str:
    return text.encode("utf-8").decode("latin-1")


def one_paragraph(text: str, rng: random.Random) -> str:
    paragraphs = text.split("\n\n")
    candidates = [i for i, p in enumerate(paragraphs) if not p.isascii()]
    i = rng.choice(candidates)
    paragraphs[i] = cp1252(paragraphs[i])
    return "\n\n".join(paragraphs)


GARBLERS = {
    "UTF-8 read as Windows-1252": lambda t, rng: cp1252(t),
    "UTF-8 read as Latin-1": lambda t, rng: latin1(t),
    "Windows-1252 twice": lambda t, rng: cp1252(cp1252(t)),
    "one paragraph as Windows-1252": one_paragraph,
}


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=24_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    docs = real_corpus(args.docs)
    if len(docs) < 1000:
        sys.exit("too few documents; run: apt-get install -y " + " ".join(APT_PACKAGES))
    chars = sum(map(len, docs))
    non_ascii = [d for d in docs if not d.isascii()]
    print(f"{len(docs):,} clean documents ({chars / 1e6:.1f} M chars), {len(non_ascii):,} with non-ASCII characters")

    changed = [(d, repair_mojibake(d)) for d in docs]
    changed = [(a, b) for a, b in changed if a != b]
    print(f"\nclean documents changed by the repair: {len(changed)} of {len(docs):,} ({len(changed) / len(docs):.3%})")
    for before, after in changed[:8]:
        line = next((x, y) for x, y in zip(before.split("\n"), after.split("\n")) if x != y)
        print(f"  {line[0][:90]!r}\n    -> {line[1][:90]!r}")

    on, off = NormalizeConfig(), NormalizeConfig(fix_mojibake=False)
    print(f"\nnormalize, one core, best of {args.repeat}:")
    for label, subset in (("all documents", docs), ("documents with non-ASCII characters", non_ascii)):
        n_chars = sum(map(len, subset))
        t_off = best_of(args.repeat, lambda: [normalize_text(d, off) for d in subset])
        t_on = best_of(args.repeat, lambda: [normalize_text(d, on) for d in subset])
        print(f"  {label}: without repair {n_chars / t_off / 1e6:.1f} M chars/s ({len(subset) / t_off:,.0f} docs/s), "
              f"with repair {n_chars / t_on / 1e6:.1f} M chars/s ({len(subset) / t_on:,.0f} docs/s): "
              f"+{(t_on - t_off) / len(subset) * 1e6:.0f} us per document")

    junk = dataclasses.replace(JunkConfig(), max_non_letter_fraction=None, max_boilerplate_fraction=None,
                               max_top_word_fraction=None, max_url_fraction=None, max_lowercase_sentence_starts=None,
                               drop_lorem_ipsum=False)
    print("\ngarbled documents: repaired exactly by normalize (fix_mojibake on); caught by the quality stage's "
          "junk_mojibake rule without the repair / after it")
    rng = random.Random(0)
    for name, garble in GARBLERS.items():
        originals = [d for d in non_ascii]
        garbled = [garble(d, rng) for d in originals]
        pairs = [(o, g) for o, g in zip(originals, garbled) if o != g]
        repaired = sum(normalize_text(g, on) == normalize_text(o, on) for o, g in pairs)
        caught_before = sum(junk_rule(normalize_text(g, off), junk) == "junk_mojibake" for _, g in pairs)
        caught_after = sum(junk_rule(normalize_text(g, on), junk) == "junk_mojibake" for _, g in pairs)
        n = len(pairs)
        failures = [(o, g) for o, g in pairs if normalize_text(g, on) != normalize_text(o, on)]
        print(f"  {name:32s} {n:6,} docs: repaired {repaired / n:7.2%}; junk_mojibake catches "
              f"{caught_before / n:7.2%} unrepaired, {caught_after / n:6.2%} after repair")
        for o, g in failures[:3]:
            want, got = normalize_text(o, on).split("\n"), normalize_text(g, on).split("\n")
            line = next(((a, b) for a, b in zip(want, got) if a != b), (want[0], got[0]))
            print(f"      not repaired: {line[0][:70]!r}\n                 -> {line[1][:70]!r}")


if __name__ == "__main__":
    main()
