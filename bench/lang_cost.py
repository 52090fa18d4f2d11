"""Cost per document of the script-aware words (corpusforge.pipeline.words) against today's whitespace words, on
English and on Chinese and Japanese text: the quality rules (tokenizer, counts, n-grams, widths) and dedup's word
work (near-dedup shingle hashes, sentence dedup's split and word count, line dedup's word count).

    .venv/bin/python bench/lang_cost.py [--docs 300] [--rounds 5]
    .venv/bin/python bench/lang_cost.py --instructions [--docs 100]    # instructions per document (valgrind)

English: paragraphs of Python's documentation (pydoc_data, run together four at a time); CJK: the gettext documents
of bench/lang_data (zh and ja, translated UI messages). Times are the best of ``--rounds`` passes over all documents
(the quality tokenizer's chunk cache cleared before each pass), in CPU microseconds per document (process time:
waiting for a shared core is not counted); ``--instructions``
runs each (mode, text) pass once under ``valgrind --tool=cachegrind`` and prints instructions per document beyond an
empty pass's (about four minutes a run on the shared 2-core machine: eight runs).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def texts(kind: str, n: int) -> list[tuple[str, str]]:
    """(text, lang) documents of one kind: en, or cjk (zh and ja alternating)."""
    if kind == "en":
        from bench.quality_data.sources import python_doc_paragraphs

        paragraphs = python_doc_paragraphs()
        return [("\n\n".join(paragraphs[i:i + 4]), "en") for i in range(0, 4 * n, 4)][:n]
    from bench.lang_data.parallel import documents

    zh, ja = documents("zh", limit=n), documents("ja", limit=n)
    mixed = [d for pair in zip(zh, ja) for d in pair][:n]
    return [(d.text, d.lang) for d in mixed]


def one_pass(docs: list[tuple[str, str]]) -> None:
    from corpusforge.pipeline.dedup.minhash import Shingler
    from corpusforge.pipeline.dedup.sentences import without_sentences
    from corpusforge.pipeline.dedup.text import count_words, normalized_bytes
    from corpusforge.pipeline.quality.config import QualityConfig
    from corpusforge.pipeline.quality.rules import HeuristicRules

    rules = _RULES.setdefault("rules", HeuristicRules(QualityConfig()))
    for text, lang in docs:
        rules.apply(text, lang)
        without_sentences(text, lang, set(), 20, True)
        count_words(normalized_bytes(text))
    Shingler(5, "word", "fast").hashes([text for text, _ in docs])


_RULES: dict = {}


def timed(kind: str, docs: int, rounds: int) -> tuple[float, float]:
    """Best time per document (us) of a pass today and script-aware, the two passes alternating round by round so
    that both see the same load on a shared machine."""
    from bench.lang_quality import _clear, whitespace_words

    sample = texts(kind, docs)
    one_pass(sample)  # imports, compiled patterns
    best = {"today": float("inf"), "aware": float("inf")}
    for _ in range(rounds):
        for mode in best:
            ctx = whitespace_words() if mode == "today" else contextlib.nullcontext()
            with ctx:
                _clear()
                start = time.process_time()
                one_pass(sample)
                best[mode] = min(best[mode], time.process_time() - start)
    return best["today"] / docs * 1e6, best["aware"] / docs * 1e6


def instructions(mode: str, kind: str, docs: int) -> int:
    """Instructions (valgrind's Ir) of one pass over ``docs`` documents, less those of a pass over none."""
    counts = []
    for n in (0, docs):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "cg.out")
            code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from bench.lang_cost import *; "
                    f"from bench.lang_quality import whitespace_words; import contextlib; "
                    f"sample = texts({kind!r}, {docs})[:{n}]; one_pass(sample[:1]); "
                    f"ctx = whitespace_words() if {mode!r} == 'today' else contextlib.nullcontext()\n"
                    f"with ctx: one_pass(sample)")
            subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                            sys.executable, "-c", code], check=True, capture_output=True)
            summary = [line for line in open(out) if line.startswith("summary:")][0]
            counts.append(int(summary.split()[1]))
    return (counts[1] - counts[0]) // docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--instructions", action="store_true")
    args = parser.parse_args()
    unit = "instructions per document" if args.instructions else "CPU us per document, best of rounds"
    print(f"| text | today ({unit}) | script-aware | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for kind in ("en", "cjk"):
        if args.instructions:
            today, aware = instructions("today", kind, args.docs), instructions("aware", kind, args.docs)
            print(f"| {kind} | {today:,} | {aware:,} | {aware / today:.3f} |", flush=True)
        else:
            today, aware = timed(kind, args.docs, args.rounds)
            print(f"| {kind} | {today:.0f} | {aware:.0f} | {aware / today:.3f} |", flush=True)


if __name__ == "__main__":
    main()
