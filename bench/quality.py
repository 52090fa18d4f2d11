"""Throughput and agreement of corpusforge's quality rules vs datatrove's filters, in one process, on real text.

    apt-get install -y python3.11-doc        # Python's reStructuredText docs (the bulk of the corpus)
    pip install -e '.[bench]'                # datatrove
    python bench/quality.py [--docs 24000] [--json out.json]

Both sides run in this process, one core, on the same documents; every rule sees every document (no early
exit), so the times add up per rule. The rules are compared where they are the same: corpusforge's
``paper_config()`` (published thresholds) against datatrove's ``LanguageFilter(en, 0.65)``,
``GopherQualityFilter``, ``GopherRepetitionFilter``, ``C4QualityFilter``, ``FineWebQualityFilter`` at their
defaults; agreement = share of documents on which both keep or both drop. Both language filters use the
same lid.176.ftz model. The throughput of corpusforge's adapted defaults is reported too.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.quality_data.corpus import real_corpus  # noqa: E402
from bench.quality_labelled import datatrove_filters  # noqa: E402
from corpusforge.pipeline.quality.config import QualityConfig, paper_config  # noqa: E402
from corpusforge.pipeline.quality.langid import LanguageIdentifier, language_decision  # noqa: E402
from corpusforge.pipeline.quality.text import TextView  # noqa: E402
from corpusforge.pipeline.quality.rules import (  # noqa: E402
    HeuristicRules, c4_edit, c4_quality, fineweb_quality, gopher_quality, gopher_repetition,
)


def ours_per_rule(docs: list[str], lid: LanguageIdentifier) -> tuple[dict[str, list[bool]], dict[str, float]]:
    """corpusforge, paper_config(): keep/drop per rule and seconds per rule."""
    cfg = paper_config()
    c4_cfg = cfg.c4
    keep: dict[str, list[bool]] = {k: [] for k in ("LanguageFilter", "GopherQuality", "GopherRepetition", "C4Quality", "FineWebQuality")}
    secs = dict.fromkeys(keep, 0.0)
    pc = time.perf_counter
    for raw in docs:
        # One TextView per document, shared by the rules (datatrove shares its tokenization through an LRU cache).
        t0 = pc()
        text = TextView(raw)
        (lang, score), = lid.predict([raw])
        keep["LanguageFilter"].append(language_decision(lang, score, len(raw), cfg.langid) is None)
        t1 = pc()
        keep["GopherQuality"].append(gopher_quality(text, cfg.gopher) is None)
        t2 = pc()
        keep["GopherRepetition"].append(gopher_repetition(text, cfg.repetition) is None)
        t3 = pc()
        edited, _ = c4_edit(raw, c4_cfg)
        keep["C4Quality"].append(c4_quality(edited, c4_cfg) is None)
        t4 = pc()
        keep["FineWebQuality"].append(fineweb_quality(text, cfg.fineweb) is None)
        t5 = pc()
        for k, a, b in (("LanguageFilter", t0, t1), ("GopherQuality", t1, t2), ("GopherRepetition", t2, t3),
                        ("C4Quality", t3, t4), ("FineWebQuality", t4, t5)):
            secs[k] += b - a
    return keep, secs


def theirs_per_rule(docs: list[str], filters: dict) -> tuple[dict[str, list[bool]], dict[str, float]]:
    from datatrove.data import Document as DtDocument

    names = {"LanguageFilter(en)": "LanguageFilter", "GopherQuality": "GopherQuality",
             "GopherRepetition": "GopherRepetition", "C4Quality": "C4Quality", "FineWebQuality": "FineWebQuality"}
    keep: dict[str, list[bool]] = {v: [] for v in names.values()}
    secs = dict.fromkeys(keep, 0.0)
    pc = time.perf_counter
    for i, text in enumerate(docs):
        for dt_name, name in names.items():
            doc = DtDocument(text=text, id=str(i))  # a fresh document: C4 edits the text in place
            t0 = pc()
            try:
                result = filters[dt_name].filter(doc)
            except ZeroDivisionError:  # datatrove divides by the word count of documents without words
                result = (False, "error")
            secs[name] += pc() - t0
            keep[name].append(result is True or (isinstance(result, tuple) and bool(result[0])))
    return keep, secs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=24_000, help="Number of real documents.")
    ap.add_argument("--json", help="Write the figures to this file.")
    ap.add_argument("--show-disagreements", type=int, default=0, help="Print this many disagreements per rule.")
    args = ap.parse_args()

    corpus = real_corpus(args.docs)
    docs = random.Random(0).sample(corpus, min(args.docs, len(corpus)))
    chars = sum(map(len, docs))
    print(f"{len(docs)} documents, {chars / 1e6:.1f} M characters (mean {chars / len(docs):.0f}); "
          f"one process, one core; machine shared with other jobs (os.cpu_count()={os.cpu_count()})")

    lid = LanguageIdentifier()
    filters = datatrove_filters()
    # warm-up: spaCy's tokenizer and fastText load lazily
    theirs_per_rule(docs[:50], filters)
    ours_per_rule(docs[:50], lid)

    ours_keep, ours_secs = ours_per_rule(docs, lid)
    theirs_keep, theirs_secs = theirs_per_rule(docs, filters)

    t0 = time.perf_counter()
    rules = HeuristicRules(QualityConfig())
    defaults_cfg = QualityConfig()
    kept_defaults = 0
    for text in docs:
        (lang, score), = lid.predict([text])
        if language_decision(lang, score, len(text), defaults_cfg.langid) is None and rules.apply(text, lang)[1] is None:
            kept_defaults += 1
    defaults_secs = time.perf_counter() - t0

    n = len(docs)
    print(f"\n{'rule':<18}{'corpusforge docs/s':>20}{'datatrove docs/s':>18}{'ratio':>8}{'agreement':>11}"
          f"{'kept (cf / dt)':>18}")
    results = {"documents": n, "characters": chars, "rules": {}}
    for name in ours_keep:
        agree = sum(a == b for a, b in zip(ours_keep[name], theirs_keep[name])) / n
        ours_rate, theirs_rate = n / ours_secs[name], n / theirs_secs[name]
        print(f"{name:<18}{ours_rate:20,.0f}{theirs_rate:18,.0f}{ours_rate / theirs_rate:8.1f}{agree:11.4f}"
              f"{sum(ours_keep[name]) / n:9.3f} / {sum(theirs_keep[name]) / n:.3f}")
        results["rules"][name] = {"corpusforge_docs_per_s": ours_rate, "datatrove_docs_per_s": theirs_rate, "agreement": agree}
    ours_total, theirs_total = sum(ours_secs.values()), sum(theirs_secs.values())
    ours_chain = [all(k[i] for k in ours_keep.values()) for i in range(n)]
    theirs_chain = [all(k[i] for k in theirs_keep.values()) for i in range(n)]
    chain_agree = sum(a == b for a, b in zip(ours_chain, theirs_chain)) / n
    print(f"{'all five':<18}{n / ours_total:20,.0f}{n / theirs_total:18,.0f}{theirs_total / ours_total:8.1f}"
          f"{chain_agree:11.4f}{sum(ours_chain) / n:9.3f} / {sum(theirs_chain) / n:.3f}")
    print(f"\ncorpusforge adapted defaults (language ID + every rule, first drop wins): {n / defaults_secs:,.0f} docs/s, "
          f"kept {kept_defaults / n:.3f}")
    results.update(all_five={"corpusforge_docs_per_s": n / ours_total, "datatrove_docs_per_s": n / theirs_total,
                             "agreement_on_kept": chain_agree},
                   defaults={"docs_per_s": n / defaults_secs, "kept": kept_defaults / n})
    if args.show_disagreements:
        for name in ours_keep:
            shown = 0
            for i in range(n):
                if ours_keep[name][i] != theirs_keep[name][i] and shown < args.show_disagreements:
                    shown += 1
                    print(f"--- {name}: corpusforge {'keeps' if ours_keep[name][i] else 'drops'}: {docs[i][:300]!r}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
