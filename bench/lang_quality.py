"""Quality keep rates in every language of the language-ID set against English on the same content, with
script-aware words (corpusforge.pipeline.words: a Han, kana or Thai character is one word) and with today's
whitespace words. See docs/quality.md ("Every language").

    .venv/bin/python bench/lang_quality.py [--docs 200] [--json out.json]

Good documents (bench/lang_data/parallel.py): runs of eight consecutive longer messages of a program's gettext
catalog in each language, each beside its English twin (the same messages' English originals); every one is
good text, so the share kept is the measure, and the English twin's share is the bar. The heuristic rules run at
the default config with the document's language given (language ID is left out: its own thresholds are not about
words). ``too short`` is sentence dedup's rule on short documents (two messages) written three times over: the
repeats collapse, then the document must keep ``dedup.sentences.min_words`` words.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.lang_data.parallel import LANGUAGES, documents  # noqa: E402
from corpusforge.pipeline import words as script_words  # noqa: E402
from corpusforge.pipeline.dedup import sentences as dedup_sentences  # noqa: E402
from corpusforge.pipeline.dedup import text as dedup_text  # noqa: E402
from corpusforge.pipeline.dedup.config import SentenceDedupConfig  # noqa: E402
from corpusforge.pipeline.quality import measure as quality_measure  # noqa: E402
from corpusforge.pipeline.quality import rules as quality_rules  # noqa: E402
from corpusforge.pipeline.quality import text as quality_text  # noqa: E402
from corpusforge.pipeline.quality.config import QualityConfig  # noqa: E402
from corpusforge.pipeline.quality.rules import HeuristicRules  # noqa: E402


_GATES = ("has_no_space_script", "has_wide_script", "writes_unpunctuated")


@contextlib.contextmanager
def whitespace_words():
    """Today's words: every test of corpusforge.pipeline.words that turns its script rules on answers no, in every
    module that asks it, so the tokenizer, the counts, the widths and the line ends are what they were."""
    saved = [(module, name, getattr(module, name)) for module in (script_words, quality_text, quality_measure,
                                                                  quality_rules, dedup_text)
             for name in _GATES if hasattr(module, name)]
    for module, name, _ in saved:
        setattr(module, name, lambda text: False)
    _clear()
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
        _clear()


def _clear() -> None:
    cache = quality_text._CHUNK_CACHE
    cache.clear()
    cache[quality_text._LINE_END] = quality_text._LINE_END_ENTRY


def keep_rates(docs, rules: HeuristicRules) -> tuple[float, float, collections.Counter]:
    """(share kept in the language, share of the English twins kept, the language's drop reasons)."""
    reasons = collections.Counter(rules.apply(d.text, d.lang).reason for d in docs)
    english = sum(rules.apply(d.english, "en").reason is None for d in docs)
    return reasons.pop(None, 0) / len(docs), english / len(docs), reasons


def too_short_survival(docs, cfg: SentenceDedupConfig) -> tuple[float, float]:
    """Shares of thrice-written short documents (and of their English twins) that keep enough words after their
    repeats collapse."""
    def survives(text: str, lang: str) -> bool:
        tripled = "\n".join([text] * 3)
        _, _, collapsed, left = dedup_sentences.without_sentences(tripled, lang, set(), cfg.min_sentence_chars, True)
        return not collapsed or left >= cfg.min_words
    return (sum(survives(d.text, d.lang) for d in docs) / len(docs),
            sum(survives(d.english, "en") for d in docs) / len(docs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--langs", default=",".join(LANGUAGES))
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    rules, sentence_cfg = HeuristicRules(QualityConfig()), SentenceDedupConfig()
    no_punct = QualityConfig()
    no_punct.fineweb.min_line_punct_ratio = None
    rules_no_punct = HeuristicRules(no_punct)
    rows = []
    print("| lang | docs | kept today | kept script-aware | English twins kept | gap | without the line-punctuation rule: "
          "kept | English twins | gap | top drop reasons (script-aware) | too short: survive today | script-aware "
          "| English twins |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    for lang in args.langs.split(","):
        docs = documents(lang, limit=args.docs)
        short = documents(lang, per_doc=2, limit=args.docs)
        if not docs:
            continue
        with whitespace_words():
            today, _, _ = keep_rates(docs, rules)
            short_today, _ = too_short_survival(short, sentence_cfg)
        aware, english, reasons = keep_rates(docs, rules)
        aware_np, english_np, _ = keep_rates(docs, rules_no_punct)
        short_aware, short_english = too_short_survival(short, sentence_cfg)
        top = ", ".join(f"{r} {n}" for r, n in reasons.most_common(3)) or "-"
        rows.append({"lang": lang, "docs": len(docs), "kept_today": today, "kept_script_aware": aware,
                     "kept_english_twins": english, "kept_no_line_punct": aware_np, "kept_english_no_line_punct": english_np,
                     "reasons": dict(reasons), "too_short_survive_today": short_today,
                     "too_short_survive_script_aware": short_aware, "too_short_survive_english": short_english})
        print(f"| {lang} | {len(docs)} | {today:.1%} | {aware:.1%} | {english:.1%} | {(aware - english) * 100:+.1f} "
              f"| {aware_np:.1%} | {english_np:.1%} | {(aware_np - english_np) * 100:+.1f} | {top} "
              f"| {short_today:.1%} | {short_aware:.1%} | {short_english:.1%} |", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
