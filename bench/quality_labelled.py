"""How well do quality filters separate good text from junk? corpusforge's defaults vs datatrove's filters.

    apt-get install -y debian-reference-de debian-reference-fr debian-reference-es debian-reference-it \
        dict-wn fortunes-de fortunes-es fortunes-it            # real prose in several languages (optional)
    pip install -e '.[bench]'                                  # datatrove
    python bench/quality_labelled.py [--split test] [--per-kind 60] [--json out.json]

Good: real prose of varied length and language (Python's docs and docstrings, Debian Reference in German,
French, Spanish and Italian, WordNet definitions, fortune quotes). Bad: realistic junk generated from the
same split's words (menus, link lists, cookie banners, keyword stuffing, repeated lines, number tables,
lorem ipsum, symbol art, short fragments, mojibake, boilerplate pages, word salad). See
bench/quality_data/labelled.py. ``dev`` was used while choosing the defaults; ``test`` is held out.

Reported per configuration: share of good kept, share of bad removed, balanced accuracy (their mean), and
per kind. datatrove's LanguageFilter gets the same lid.176.ftz model (its own download is not reachable
offline), called on a one-element list because fastText's single-string predict fails under numpy 2.
"""
from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.quality_data.labelled import JUNK_KINDS, Example, build  # noqa: E402
from corpusforge.pipeline.quality.config import QualityConfig, paper_config  # noqa: E402
from corpusforge.pipeline.quality.langid import LanguageIdentifier, bundled_lid_path, language_decision  # noqa: E402
from corpusforge.pipeline.quality.rules import HeuristicRules  # noqa: E402


def corpusforge_decisions(cfg: QualityConfig, examples: list[Example], lid: LanguageIdentifier) -> dict[str, str | None]:
    """The quality stage's decision per example (the same calls the Beam DoFns make, without Beam)."""
    rules = HeuristicRules(cfg)
    out = {}
    preds = lid.predict([e.text for e in examples])
    for e, (lang, score) in zip(examples, preds):
        reason = language_decision(lang, score, len(e.text), cfg.langid) if cfg.langid.enabled else None
        if reason is None:
            reason = rules.apply(e.text, lang if cfg.langid.enabled else None).reason
        out[e.id] = reason
    return out


class _ListPredict:
    """fastText model whose predict(str) goes through a list (numpy 2 breaks the single-string path)."""

    def __init__(self, model):
        self.model = model

    def predict(self, text: str, k: int = 1):
        labels, scores = self.model.predict([text], k=k)
        return labels[0], scores[0]


def datatrove_filters():
    import fasttext
    from datatrove.pipeline.filters import (
        C4QualityFilter, FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter, LanguageFilter,
    )

    # datatrove asks for the fasttext-numpy2-wheel distribution by name; corpusforge's environment has
    # `fasttext` (the same module), and the model is handed over below, so skip that check while constructing.
    import datatrove.pipeline.base as dt_base

    check = dt_base.check_required_dependencies
    dt_base.check_required_dependencies = lambda *a, **k: None
    try:
        lang = LanguageFilter(languages=["en"], language_threshold=0.65)
    finally:
        dt_base.check_required_dependencies = check
    lang.model._model = _ListPredict(fasttext.load_model(bundled_lid_path()))
    return {
        "LanguageFilter(en)": lang,
        "GopherQuality": GopherQualityFilter(),
        "GopherRepetition": GopherRepetitionFilter(),
        "C4Quality": C4QualityFilter(),
        "FineWebQuality": FineWebQualityFilter(),
    }


def datatrove_decisions(filters: list, examples: list[Example]) -> dict[str, str | None]:
    from datatrove.data import Document as DtDocument

    out = {}
    for e in examples:
        doc = DtDocument(text=e.text, id=e.id)
        reason = None
        for f in filters:
            result = f.filter(doc)
            if result is not True and not (isinstance(result, tuple) and result[0]):
                reason = result[1] if isinstance(result, tuple) else type(f).__name__
                break
        out[e.id] = reason
    return out


def score(examples: list[Example], decisions: dict[str, str | None]) -> dict:
    good = [e for e in examples if e.good]
    bad = [e for e in examples if not e.good]
    good_kept = sum(decisions[e.id] is None for e in good) / len(good)
    bad_removed = sum(decisions[e.id] is not None for e in bad) / len(bad)
    per_kind = collections.defaultdict(lambda: [0, 0])
    for e in examples:
        ok = (decisions[e.id] is None) == e.good
        per_kind[e.kind][0] += ok
        per_kind[e.kind][1] += 1
    return {
        "good_kept": good_kept, "bad_removed": bad_removed, "balanced_accuracy": (good_kept + bad_removed) / 2,
        "per_kind": {k: v[0] / v[1] for k, v in per_kind.items()},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=["dev", "test", "both"], default="both")
    ap.add_argument("--per-kind", type=int, default=60, help="Examples per good source and per junk kind.")
    ap.add_argument("--json", help="Write all figures to this file.")
    ap.add_argument("--show-errors", type=int, default=0, help="Print this many misjudged examples of the defaults.")
    ap.add_argument("--corpusforge-only", action="store_true", help="Leave datatrove's filters out (not installed).")
    ap.add_argument("--before-39", action="store_true", help="Add the defaults before issue 39 as a configuration.")
    args = ap.parse_args()

    lid = LanguageIdentifier()
    dt = {} if args.corpusforge_only else datatrove_filters()
    results = {}
    for split in (["dev", "test"] if args.split == "both" else [args.split]):
        examples = build(split, args.per_kind)
        n_good = sum(e.good for e in examples)
        print(f"\n=== split {split}: {n_good} good, {len(examples) - n_good} bad examples")
        configs: dict[str, dict[str, str | None]] = {}
        t = time.perf_counter()
        configs["corpusforge defaults"] = corpusforge_decisions(QualityConfig(), examples, lid)
        configs["corpusforge paper_config()"] = corpusforge_decisions(paper_config(), examples, lid)
        for name, f in dt.items():
            configs[f"datatrove {name}"] = datatrove_decisions([f], examples)
        if args.before_39:
            from bench.ablate_defaults import BEFORE_39
            from corpusforge.config import load_config
            before = load_config(None, [f"{k}={json.dumps(v)}" for k, v in BEFORE_39.items()]).quality
            configs["corpusforge defaults before issue 39"] = corpusforge_decisions(before, examples, lid)
        if dt:
            chain = [dt["LanguageFilter(en)"], dt["GopherRepetition"], dt["GopherQuality"], dt["C4Quality"], dt["FineWebQuality"]]
            configs["datatrove chained (FineWeb order)"] = datatrove_decisions(chain, examples)
            configs["datatrove chained, no LanguageFilter"] = datatrove_decisions(chain[1:], examples)
        elapsed = time.perf_counter() - t

        scores = {name: score(examples, d) for name, d in configs.items()}
        width = max(map(len, scores))
        print(f"{'configuration':<{width}}  good kept  bad removed  balanced acc")
        for name, s in scores.items():
            print(f"{name:<{width}}  {s['good_kept']:9.3f}  {s['bad_removed']:11.3f}  {s['balanced_accuracy']:12.3f}")
        kinds = list(dict.fromkeys(e.kind for e in examples))
        shown = [n for n in ["corpusforge defaults", "corpusforge defaults before issue 39", "corpusforge paper_config()",
                             "datatrove chained (FineWeb order)", "datatrove GopherQuality", "datatrove FineWebQuality"]
                 if n in scores]
        print("\nper kind: share judged correctly (good kept / bad removed)")
        print(f"{'kind':<26}" + "".join(f"{n[:22]:>24}" for n in shown))
        for k in kinds:
            mark = "bad " if k in JUNK_KINDS else "good"
            print(f"{mark} {k:<21}" + "".join(f"{scores[n]['per_kind'][k]:24.3f}" for n in shown))
        best_peer = max([(s["balanced_accuracy"], n) for n, s in scores.items() if n.startswith("datatrove")] or [(0.0, "none")])
        ours = scores["corpusforge defaults"]["balanced_accuracy"]
        print(f"\ncorpusforge defaults: balanced accuracy {ours:.3f}; best datatrove configuration: {best_peer[1]} "
              f"{best_peer[0]:.3f}  ({elapsed:.1f} s for all configurations)")
        if args.show_errors:
            d = configs["corpusforge defaults"]
            wrong = [e for e in examples if (d[e.id] is None) != e.good]
            for e in wrong[: args.show_errors]:
                print(f"--- {e.kind} ({'good' if e.good else 'bad'}) -> {d[e.id]}: {e.text[:200]!r}")
        reasons = collections.Counter(r for r in configs["corpusforge defaults"].values() if r)
        print("corpusforge defaults, removals by reason:", dict(reasons.most_common()))
        results[split] = scores
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
