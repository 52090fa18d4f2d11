"""Hostile documents against ordinary prose: time per byte of every stage's per-document work.

    .venv/bin/python bench/adversarial.py                  # every stage, defaults and capping rules off
    .venv/bin/python bench/adversarial.py --chars 100000 --stages quality pii
    .venv/bin/python bench/adversarial.py --build          # also one all-stage build (Beam) per document

Each hostile document (long punctuation runs, 20k+ PII matches, a 200k-character word, 50k tiny lines,
repeated n-grams, nested brackets...) is timed through the plain functions each stage's DoFn calls
(outside Beam, so pipeline overhead does not hide the per-document cost), next to ordinary prose of the
same size (real text: Python's topic help, no repeats). Printed: time per byte relative to the prose,
per stage and setting (``defaults``; ``uncapped``: the rules that happen to cap the work turned off, such
as C4's 1000-character word rule, which removes long-word lines before anything tokenizes them). The
target is <= 3x for every stage at every setting. ``all`` is the stages one after another on the same
text. Best of ``--repeat`` runs; documents are built by a fixed recipe (no randomness).
"""
from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET = 3.0


# ------------------------------------------------------------------------------------------- documents
def prose(chars: int) -> str:
    """Ordinary English prose: distinct paragraphs of Python's topic help, up to ``chars`` characters."""
    from pydoc_data.topics import topics

    out, size = [], 0
    for key in sorted(topics):
        for para in topics[key].split("\n\n"):
            para = " ".join(para.split())
            if len(para) > 200 and para[0].isalpha():
                out.append(para)
                size += len(para) + 2
                if size >= chars:
                    return "\n\n".join(out)[:chars]
    text = "\n\n".join(out)
    return (text * (chars // len(text) + 1))[:chars]


def _fill(unit: str, chars: int) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


def hostile(chars: int) -> dict[str, str]:
    """The hostile documents, each about ``chars`` characters (some need a minimum size to be hostile)."""
    word = max(chars // 2, 200_000)
    docs = {
        # punctuation runs: peeled prefixes/suffixes, a word glued to a long ellipsis, emoticon-like pairs
        "punct_runs": _fill("Wait" + "." * 40 + "now " + "(" * 500 + "word" + ")" * 500 + " " + "+" * 1000 + " "
                            + "x" + "):" * 500 + " ", chars),
        "long_ellipsis": _fill("and" + "." * 60 + "then ", chars),
        "emails_20k": " ".join(f"user{i}@mail{i % 97}.example.com" for i in range(max(20_000, chars // 28))),
        "phones_20k": " ".join(f"+1 202 555 {i % 10000:04d}" for i in range(max(20_000, chars // 17))),
        "ips_20k": " ".join(f"10.{i % 256}.{i // 256 % 256}.7" for i in range(max(20_000, chars // 12))),
        "word_200k": "Start of text. " + "a" * word + " End of text.",
        "word_200k_at": "x" + "a@" * (word // 2),
        "word_200k_dots": "a." * (word // 2),
        "word_200k_mixed": _fill("Ab1-", word),
        "numeric_gaps": _fill("1234.......", word),
        "tiny_lines_50k": "\n".join(f"l{i}" for i in range(max(50_000, chars // 6))),
        "same_tiny_line_50k": "\n".join(["ok."] * max(50_000, chars // 4)),
        "repeated_5gram": _fill("the cat sat on the mat ", chars),
        "repeated_word": _fill("buffalo ", chars),
        "nested_parens": "(" * (chars // 2) + "x" + ")" * (chars // 2),
        "nested_brackets": "[" * (chars // 4) + "{" * (chars // 4) + "x" + "}" * (chars // 4) + "]" * (chars // 4),
        "citations": _fill("See [1] and [citation needed][2][edit] ", chars),
    }
    return docs


# ---------------------------------------------------------------------------------------------- stages
def stage_functions(uncapped: bool) -> dict:
    """``{stage: fn(text)}``: the per-document work of each stage, as its DoFn does it."""
    from corpusforge.pipeline.normalize.config import NormalizeConfig
    from corpusforge.pipeline.dedup.boilerplate import line_records
    from corpusforge.pipeline.dedup.config import DedupConfig
    from corpusforge.pipeline.dedup.decontaminate import text_ngrams
    from corpusforge.pipeline.dedup.exact import text_digest
    from corpusforge.pipeline.dedup.lines import line_keys
    from corpusforge.pipeline.dedup.minhash import MinHasher, Shingler, band_hashes
    from corpusforge.pipeline.dedup.near import banding
    from corpusforge.pipeline.dedup.sentences import remove_sentences, sentence_keys
    from corpusforge.pipeline.normalize.stage import normalize_text
    from corpusforge.pipeline.pii.config import PIIConfig
    from corpusforge.pipeline.pii.scrubber import Scrubber
    from corpusforge.pipeline.quality.config import QualityConfig
    from corpusforge.pipeline.quality.rules import HeuristicRules

    normalize_config = NormalizeConfig()
    quality = QualityConfig()
    quality.langid.enabled = False  # a fastText model file; its cost is linear (C++)
    if uncapped:
        quality.c4.max_word_length = None  # no line is removed for a long word: everything is tokenized
    rules = HeuristicRules(quality)

    every = HeuristicRules(dataclasses.replace(quality, store_values=True))

    def every_rule(text: str):
        """Every heuristic rule on the text, none skipped by an earlier verdict (every family measured)."""
        every.apply(text)

    dedup = DedupConfig()
    near = dedup.near
    hasher = MinHasher(near.num_perm, near.seed, Shingler(near.ngram, near.unit, near.hash))
    char_hasher = MinHasher(near.num_perm, near.seed, Shingler(5, "char", near.hash))
    bands, rows = banding(near)

    def dedup_keys(text: str):
        text_digest(text)
        band_hashes(hasher.signatures([text]), bands, rows)
        line_keys(text, dedup.lines.min_line_chars)
        line_records(text, "en", dedup.lines.min_line_chars, dedup.sentences.min_sentence_chars)  # the build's keys
        text_ngrams([text], dedup.decontaminate.ngram)
        dedup_sentences(text)
        if uncapped:
            char_hasher.signatures([text])

    def dedup_sentences(text: str):
        # both passes of sentence dedup: keys, then removal of every other sentence key (the worst case
        # rebuilds the text) with the repeats collapsed
        sentences = dedup.sentences
        keys, _ = sentence_keys(text, "en", sentences.min_sentence_chars)
        remove_sentences(text, "en", set(sorted(keys)[::2]), sentences.min_sentence_chars)

    scrubber = Scrubber(PIIConfig(), salt="bench")
    functions = {
        "normalize": lambda t: normalize_text(t, normalize_config),
        "quality": lambda t: rules.apply(t),
        "quality_every_rule": every_rule,
        "dedup": dedup_keys,
        "dedup_sentences": dedup_sentences,
        "pii": scrubber.scrub,
    }
    chain = [fn for name, fn in functions.items() if name not in ("quality_every_rule", "dedup_sentences")]
    functions["all"] = lambda t: [fn(t) for fn in chain]
    return functions


def _timeout(signum, frame):
    raise TimeoutError


def best_time(fn, text: str, repeat: int, budget: float, limit: float = 60.0) -> float:
    """Best of ``repeat`` runs; a run past ``limit`` seconds is abandoned and counts as ``limit``
    (reported as a lower bound: ``>``)."""
    import signal

    best = float("inf")
    signal.signal(signal.SIGALRM, _timeout)
    for _ in range(repeat):
        start = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            fn(text)
        except TimeoutError:
            return limit
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        best = min(best, time.perf_counter() - start)
        if best > budget:
            break
    return best


def run(chars: int, stages: list[str] | None, repeat: int, budget: float, only: list[str] | None,
        limit: float = 60.0) -> dict:
    base = prose(chars)
    docs = hostile(chars)
    if only:
        docs = {k: v for k, v in docs.items() if k in only}
    results: dict = {}
    worst = 0.0
    for setting in ("defaults", "uncapped"):
        functions = stage_functions(setting == "uncapped")
        for stage, fn in functions.items():
            if stages and stage not in stages:
                continue
            fn(base[:2000])  # warm up (lazy tables)
            per_byte = best_time(fn, base, repeat, budget) / len(base.encode())
            row = {}
            for name, text in docs.items():
                seconds = best_time(fn, text, repeat, budget, limit)
                ratio = seconds / len(text.encode()) / per_byte
                row[name] = (round(ratio, 2), round(seconds, 3))
                worst = max(worst, ratio)
            results[f"{stage} [{setting}]"] = row
            cells = "  ".join(f"{n}={r:.1f}x" for n, (r, _) in row.items())
            flag = max(r for r, _ in row.values()) if row else 0
            print(f"{stage:18s} {setting:9s} prose {per_byte * 1e9:7.1f} ns/B | worst {flag:6.1f}x | {cells}",
                  flush=True)
    print(f"worst ratio {worst:.1f}x (target <= {TARGET:.0f}x): {'OK' if worst <= TARGET else 'OVER'}")
    return results


def build_run(chars: int, only: list[str] | None) -> None:
    """One all-stage build (DirectRunner, in process) per hostile document and one for the prose."""
    import json
    import tempfile

    from corpusforge.pipeline.build import run_build
    from corpusforge.core.config_loader import from_dict
    from corpusforge.config import Config

    docs = {"prose": prose(chars), **hostile(chars)}
    if only:
        docs = {k: v for k, v in docs.items() if k in only or k == "prose"}
    times = {}
    for name, text in docs.items():
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp, "in.jsonl")
            path.write_text(json.dumps({"id": name, "text": text}) + "\n")
            config = from_dict(Config, {"inputs": [{"path": str(path)}], "output": {"run_dir": str(pathlib.Path(tmp, "run"))},
                                        "quality": {"langid": {"enabled": False}}})
            start = time.perf_counter()
            run_build(config)
            times[name] = (time.perf_counter() - start) / len(text.encode())
    for name, t in times.items():
        print(f"build {name:20s} {t / times['prose']:6.1f}x the prose's time per byte (start-up included)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chars", type=int, default=400_000, help="size of the prose and of most hostile documents")
    parser.add_argument("--stages", nargs="*", help="normalize quality quality_every_rule dedup dedup_sentences pii all")
    parser.add_argument("--docs", nargs="*", help="only these hostile documents")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget", type=float, default=20.0, help="stop repeating a measurement past this many seconds")
    parser.add_argument("--limit", type=float, default=60.0, help="abandon one run of a stage on one document after this many seconds")
    parser.add_argument("--build", action="store_true", help="also time one all-stage build per document")
    args = parser.parse_args(argv)
    run(args.chars, args.stages, args.repeat, args.budget, args.docs, args.limit)
    if args.build:
        build_run(args.chars, args.docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
