"""Throughput and agreement of corpusforge's quality rules vs datatrove's filters, in one process, on real text.

    apt-get install -y python3.11-doc        # Python's reStructuredText docs (the bulk of the corpus)
    pip install -e '.[bench]'                # datatrove
    python bench/quality.py [--docs 24000] [--doc-chars 2000] [--json out.json]

Everything runs in this process, one core, on the same documents, back to back, so the ratios hold on a busy
machine (absolute figures less so; the load average is printed beside them). Times are this process's CPU
seconds (``time.process_time``), so docs/s is per core.

1. Per rule, corpusforge vs datatrove: corpusforge's ``paper_config()`` (published thresholds) against
   datatrove's ``LanguageFilter(en, 0.65)``, ``GopherQualityFilter``, ``GopherRepetitionFilter``,
   ``C4QualityFilter``, ``FineWebQualityFilter`` at their defaults; every rule sees every document (no early
   exit), so the times add up per rule. corpusforge's side is the stage's own path: language ID on batches,
   one ``TextView`` per document, each family measured then decided. agreement = share of documents on which
   both keep or both drop. Both language filters use the same lid.176.ftz model.
2. Where the time of corpusforge's adapted defaults goes: tokenizing, C4's line edits and each family's measure.
3. The whole quality stage on the adapted defaults (language ID + every rule, the stage's calls without Beam):
   the reference chain (one fastText call per document, first failing rule stops) against measure -> decide
   with ``store_values`` on (every family measured on every document) and off. The reference chain shares the
   tokenizer (and its chunk cache) with the new path, so this ratio leaves out the tokenizer's gain; the figure
   against the previous release is in docs/quality.md.
4. ``--compare REV``: the whole quality stage (3.'s ``store_values`` on and off) at git revision REV against the
   working tree, in alternating child processes (REV, tree, REV, tree ...; ``--rounds``), on the same documents;
   each child also hashes every document's text after edits, reason, edit counts and stored values, and the
   hashes must be equal (the speed-up changed nothing a build writes). The source for REV comes from
   ``git archive``; nothing is checked out.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import os
import pathlib
import random
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
if "--source" in sys.argv:  # a child of --compare: corpusforge from another revision's tree (see compare_revisions),
    sys.path.insert(0, sys.argv[sys.argv.index("--source") + 1])  # imported now: later path edits cannot swap it
    import corpusforge  # noqa: E402, F401

from bench.quality_data.corpus import real_corpus  # noqa: E402
from bench.quality_labelled import datatrove_filters  # noqa: E402
from corpusforge.pipeline.quality.config import QualityConfig, paper_config  # noqa: E402
from corpusforge.pipeline.quality.langid import LanguageIdentifier, language_decision  # noqa: E402
from corpusforge.pipeline.quality import text as text_module  # noqa: E402
from corpusforge.pipeline.quality.text import TextView  # noqa: E402
from corpusforge.pipeline.quality.decide import (  # noqa: E402
    decide_c4, decide_fineweb, decide_gopher, decide_heuristics, decide_repetition,
)
from corpusforge.pipeline.quality.measure import (  # noqa: E402
    measure_c4, measure_fineweb, measure_gopher, measure_junk, measure_length, measure_repetition,
)
from corpusforge.pipeline.quality.rules import HeuristicRules, c4_edit  # noqa: E402
from corpusforge.pipeline.quality.stage import MODEL_BATCH as BATCH  # noqa: E402


def ours_per_rule(docs: list[str], lid: LanguageIdentifier) -> tuple[dict[str, list[bool]], dict[str, float]]:
    """corpusforge, paper_config(), the stage's path: keep/drop per rule and seconds per rule."""
    text_module._CHUNK_CACHE.clear()  # every timed run starts with the tokenizer's chunk cache empty
    cfg = paper_config()
    rules = HeuristicRules(cfg)
    keep: dict[str, list[bool]] = {k: [] for k in ("LanguageFilter", "GopherQuality", "GopherRepetition", "C4Quality", "FineWebQuality")}
    secs = dict.fromkeys(keep, 0.0)
    pc = time.process_time
    t0 = pc()
    for start in range(0, len(docs), BATCH):  # the stage's batches
        part = docs[start:start + BATCH]
        for raw, (lang, score) in zip(part, lid.predict(part)):
            keep["LanguageFilter"].append(language_decision(lang, score, len(raw), cfg.langid) is None)
    secs["LanguageFilter"] = pc() - t0
    for raw in docs:
        # One TextView per document, shared by the rules (datatrove shares its tokenization through an LRU cache).
        t1 = pc()
        view = TextView(raw)
        keep["GopherQuality"].append(decide_gopher(measure_gopher(view, cfg.gopher), cfg.gopher) is None)
        t2 = pc()
        keep["GopherRepetition"].append(decide_repetition(measure_repetition(view, cfg.repetition), cfg.repetition) is None)
        t3 = pc()
        edited, _ = c4_edit(raw, cfg.c4)
        keep["C4Quality"].append(decide_c4(measure_c4(TextView(edited), rules.bad_words), cfg.c4) is None)
        t4 = pc()
        keep["FineWebQuality"].append(decide_fineweb(measure_fineweb(view, cfg.fineweb), cfg.fineweb) is None)
        t5 = pc()
        for k, a, b in (("GopherQuality", t1, t2), ("GopherRepetition", t2, t3), ("C4Quality", t3, t4),
                        ("FineWebQuality", t4, t5)):
            secs[k] += b - a
    return keep, secs


def profile_defaults(docs: list[str], lid: LanguageIdentifier) -> dict[str, float]:
    """Seconds per part of the adapted defaults' heuristic step, every family measured on every document."""
    from corpusforge.pipeline.quality.rules import c4_edit_view  # here: a --compare child may run an older revision

    text_module._CHUNK_CACHE.clear()  # every timed run starts with the tokenizer's chunk cache empty
    cfg = QualityConfig()
    rules = HeuristicRules(cfg)
    langs = [lang for lang, _ in lid.predict(docs)]
    parts = dict.fromkeys(("length + blocklist", "c4 line edits", "tokenize", "c4 measure", "junk measure",
                           "gopher measure", "repetition measure", "fineweb measure", "decide (all)"), 0.0)
    pc = time.process_time
    for raw, lang in zip(docs, langs):
        t0 = pc()
        length = measure_length(raw, cfg.length)
        t1 = pc()
        view, _ = c4_edit_view(raw, cfg.c4)  # as the stage: the check's lines and lower case go on to the measures
        t2 = pc()
        view.content_words, view.lower_words  # noqa: B018 - the shared tokenization, timed on its own
        t3 = pc()
        values = {"length": length, "blocklist": None, "c4": measure_c4(view, rules.bad_words)}
        t4 = pc()
        values["junk"] = measure_junk(view, lang)
        t5 = pc()
        values["gopher"] = measure_gopher(view, cfg.gopher, lang)
        t6 = pc()
        values["repetition"] = measure_repetition(view, cfg.repetition)
        t7 = pc()
        values["fineweb"] = measure_fineweb(view, cfg.fineweb)
        t8 = pc()
        decide_heuristics(values, cfg)
        t9 = pc()
        for name, a, b in zip(parts, (t0, t1, t2, t3, t4, t5, t6, t7, t8), (t1, t2, t3, t4, t5, t6, t7, t8, t9)):
            parts[name] += b - a
    return parts


def whole_stage(docs: list[str], lid: LanguageIdentifier, mode: str) -> tuple[float, list[str | None]]:
    """Seconds for language ID + heuristics on the adapted defaults, and each document's reason. ``mode``:
    ``reference`` (one fastText call per document, the reference chain), ``store`` or ``lazy`` (batched language
    ID, measure -> decide with store_values on / off)."""
    text_module._CHUNK_CACHE.clear()  # every timed run starts with the tokenizer's chunk cache empty
    cfg = dataclasses.replace(QualityConfig(), store_values=(mode != "lazy"))
    rules = HeuristicRules(cfg)
    reasons: list[str | None] = []
    t0 = time.process_time()
    if mode == "reference":
        from tests.pipeline.quality.reference import reference_chain  # the rules written plainly, as the tests hold

        for text in docs:
            (lang, score), = lid.predict([text])
            reason = language_decision(lang, score, len(text), cfg.langid)
            reasons.append(reason or reference_chain(rules, text, lang)[1])
    else:
        for start in range(0, len(docs), BATCH):
            part = docs[start:start + BATCH]
            for text, (lang, score) in zip(part, lid.predict(part)):
                reason = language_decision(lang, score, len(text), cfg.langid)
                reasons.append(reason or rules.apply(text, lang).reason)
    return time.process_time() - t0, reasons


def stage_digest(docs: list[str], lid: LanguageIdentifier) -> str:
    """SHA-256 over every document's language, text after edits, reason, edit counts and stored values (adapted
    defaults, ``store_values`` on): what a build writes from the heuristic step."""
    rules = HeuristicRules(QualityConfig())
    digest = hashlib.sha256()
    for start in range(0, len(docs), BATCH):
        part = docs[start:start + BATCH]
        for text, (lang, score) in zip(part, lid.predict(part)):
            verdict = rules.apply(text, lang)
            digest.update(json.dumps([lang, verdict.text, verdict.reason, verdict.edits, verdict.values],
                                     sort_keys=True).encode())
    return digest.hexdigest()


def stage_only(docs: list[str], lid: LanguageIdentifier) -> dict:
    """The child of --compare: the whole stage's docs/s with store_values on and off, and the digest."""
    whole_stage(docs[:50], lid, "store")  # warm-up (fastText's first call)
    figures = {mode: len(docs) / whole_stage(docs, lid, mode)[0] for mode in ("store", "lazy")}
    return {"docs_per_s": figures, "digest": stage_digest(docs, lid), "source": text_module.__file__}


def compare_revisions(rev: str, args: argparse.Namespace) -> dict:
    """Alternating child processes, REV's source and the working tree's, each timing the whole stage."""
    with tempfile.TemporaryDirectory(prefix="quality-compare-") as tree:
        package = _revision_package(rev, pathlib.Path(tree))
        results: dict = {"revision": rev, "rounds": []}
        for round_ in range(args.rounds):
            row = {}
            for label, extra in ((rev, ["--source", str(package.parent)]), ("working tree", [])):
                out = pathlib.Path(tree, "child.json")
                subprocess.run([sys.executable, __file__, "--docs", str(args.docs), "--doc-chars", str(args.doc_chars),
                                "--stage-only", str(out), *extra], check=True)
                row[label] = json.loads(out.read_text())
            results["rounds"].append(row)
            assert row[rev]["source"].startswith(tree) and not row["working tree"]["source"].startswith(tree), row
            ours, base = row["working tree"], row[rev]
            print(f"  round {round_ + 1}: " + "; ".join(
                f"store_values {'on' if mode == 'store' else 'off'}: {base['docs_per_s'][mode]:,.0f} -> "
                f"{ours['docs_per_s'][mode]:,.0f} docs/s ({ours['docs_per_s'][mode] / base['docs_per_s'][mode]:.2f}x)"
                for mode in ("store", "lazy"))
                + f"; outputs {'identical' if ours['digest'] == base['digest'] else 'DIFFERENT'}")
    return results


def _revision_package(rev: str, tree: pathlib.Path) -> pathlib.Path:
    """REV's corpusforge package under ``tree`` in its installed layout (corpusforge.pipeline <- pipeline/)."""
    archive = subprocess.run(["git", "archive", rev, "corpusforge", "pipeline", "tokenizer", "trainers"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tree / "src", filter="data")
    package = tree / "pkg" / "corpusforge"
    package.parent.mkdir()
    (tree / "src" / "corpusforge").rename(package)
    for folder in ("pipeline", "tokenizer", "trainers"):
        (tree / "src" / folder).rename(package / folder)
    return package


def theirs_per_rule(docs: list[str], filters: dict) -> tuple[dict[str, list[bool]], dict[str, float]]:
    from datatrove.data import Document as DtDocument

    names = {"LanguageFilter(en)": "LanguageFilter", "GopherQuality": "GopherQuality",
             "GopherRepetition": "GopherRepetition", "C4Quality": "C4Quality", "FineWebQuality": "FineWebQuality"}
    keep: dict[str, list[bool]] = {v: [] for v in names.values()}
    secs = dict.fromkeys(keep, 0.0)
    pc = time.process_time
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
    ap.add_argument("--doc-chars", type=int, default=2000,
                    help="Join consecutive corpus pieces into documents of at least this many characters (0: as cut).")
    ap.add_argument("--json", help="Write the figures to this file.")
    ap.add_argument("--show-disagreements", type=int, default=0, help="Print this many disagreements per rule.")
    ap.add_argument("--compare", metavar="REV", help="Also time the whole stage at git revision REV against the "
                    "working tree, alternating child processes, and check that both write the same values.")
    ap.add_argument("--rounds", type=int, default=2, help="Alternating REV / working-tree runs for --compare.")
    ap.add_argument("--stage-only", metavar="JSON", help=argparse.SUPPRESS)  # a --compare child: figures to JSON
    ap.add_argument("--source", help=argparse.SUPPRESS)  # a --compare child: REV's package (read at import)
    args = ap.parse_args()

    corpus = real_corpus(args.docs * 4)
    docs = random.Random(0).sample(corpus, min(args.docs * 4, len(corpus)))
    if args.doc_chars:  # web pages are ~2 KB: consecutive pieces joined as paragraphs
        joined, current = [], ""
        for piece in docs:
            current = f"{current}\n\n{piece}" if current else piece
            if len(current) >= args.doc_chars:
                joined.append(current)
                current = ""
        docs = joined
    docs = docs[:args.docs]
    if args.stage_only:
        pathlib.Path(args.stage_only).write_text(json.dumps(stage_only(docs, LanguageIdentifier())), encoding="utf-8")
        return 0
    chars = sum(map(len, docs))
    print(f"{len(docs)} documents, {chars / 1e6:.1f} M characters (mean {chars / len(docs):.0f}); "
          f"one process, one core; machine shared with other jobs (os.cpu_count()={os.cpu_count()})")

    lid = LanguageIdentifier()
    n = len(docs)
    results: dict = {"documents": n, "characters": chars, "rules": {}}
    try:
        filters = datatrove_filters()
    except ImportError as exc:  # the peer is optional: the rest measures corpusforge alone
        print(f"\ndatatrove not installed ({exc}): no per-rule comparison (pip install -e '.[bench]')")
        filters = None
    if filters is not None:
        # warm-up: spaCy's tokenizer and fastText load lazily
        theirs_per_rule(docs[:50], filters)
        ours_per_rule(docs[:50], lid)

        ours_keep, ours_secs = ours_per_rule(docs, lid)
        theirs_keep, theirs_secs = theirs_per_rule(docs, filters)

        print(f"\n{'rule':<18}{'corpusforge docs/s':>20}{'datatrove docs/s':>18}{'ratio':>8}{'agreement':>11}"
              f"{'kept (cf / dt)':>18}")
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
        results.update(all_five={"corpusforge_docs_per_s": n / ours_total, "datatrove_docs_per_s": n / theirs_total,
                                 "agreement_on_kept": chain_agree})

    parts = profile_defaults(docs, lid)
    total = sum(parts.values())
    print(f"\nwhere the adapted defaults' heuristic step spends its time (every family measured on every document; "
          f"{n / total:,.0f} docs/s for the step):")
    for name, sec in parts.items():
        print(f"  {name:<22}{sec / n * 1e6:8.1f} us/doc{sec / total:8.1%}")
    results["profile_us_per_doc"] = {name: sec / n * 1e6 for name, sec in parts.items()}

    t0 = time.process_time()
    for start in range(0, n, BATCH):
        lid.predict(docs[start:start + BATCH])
    batched = time.process_time() - t0
    t0 = time.process_time()
    for text in docs:
        lid.predict([text])
    single = time.process_time() - t0
    print(f"\nlanguage ID: {n / batched:,.0f} docs/s in batches of {BATCH}, {n / single:,.0f} one document per call")
    results["langid_docs_per_s"] = {"batched": n / batched, "one_per_call": n / single}

    print("\nthe whole quality stage, adapted defaults (language ID + every rule), same documents, back to back:")
    timed = {mode: whole_stage(docs, lid, mode) for mode in ("reference", "store", "lazy")}
    base = timed["reference"][0]
    labels = {"reference": "before: reference chain, fastText per document",
              "store": "after: batched language ID, measure -> decide, store_values on",
              "lazy": "after: batched language ID, measure -> decide, store_values off"}
    for mode, (sec, reasons) in timed.items():
        same = sum(a == b for a, b in zip(reasons, timed["reference"][1]))
        kept = sum(r is None for r in reasons) / n
        print(f"  {labels[mode]:<66}{n / sec:9,.0f} docs/s{base / sec:7.2f}x  kept {kept:.3f}  "
              f"same reason as before: {same}/{n}")
        results.setdefault("whole_stage", {})[mode] = {"docs_per_s": n / sec, "ratio_vs_reference": base / sec,
                                                       "same_reason": same, "kept": kept}
    if args.compare:
        print(f"\nthe whole quality stage at {args.compare} -> the working tree (alternating child processes, "
              "same documents):")
        results["compare"] = compare_revisions(args.compare, args)
    print(f"load average: {os.getloadavg()[0]:.2f} (absolute docs/s are per core on a shared machine; "
          "ratios are from the same run)")
    if args.show_disagreements and filters is not None:
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
