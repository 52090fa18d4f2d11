"""Where the quality stage's per-document work goes, per part, and its instructions against an older commit.

    python bench/quality_cost.py                              # CPU us per document per part, this tree
    python bench/quality_cost.py --against 8d28ebd            # ... and the same parts of that commit, alternating
    python bench/quality_cost.py --instructions --against 8d28ebd --docs 300   # instructions per document (valgrind)

Documents: bench/build.py's ``distinct`` corpus (the build benches' web-like ~2.4 KB documents), the adapted
defaults (``QualityConfig()``, every value stored), the stage's calls without Beam: language ID on batches of 256,
then ``HeuristicRules.apply_batch`` on the same batches (``apply`` on each document in trees without it). The parts
are timed on warm views (the tokenizer's chunk cache filled by a first pass, as a worker's is after its first
bundles): each part's CPU time is the minimum of ``--repeat`` passes over the documents, so a busy machine moves it
less than a mean. ``rules (apply)`` is the whole, batch work included; ``rules one by one`` the same documents each
as a batch of one (the per-document path, timed in the same process: the batch work's gain); the other parts time
each measure per document (``repetition``: its per-document path).

``--instructions`` counts, under valgrind's cachegrind, a process that prepares the documents and models (and runs
the rules on 8 of them, so that what a first call imports is left out) and one that also runs language ID and the
rules over them (chunk cache nearly empty, as a fresh worker), and prints the difference per document: a figure
that machine load does not move (~1 minute per 300 documents and tree). Valgrind runs numpy without its AVX-512
kernels, so the figure is, if anything, high for work done in numpy.

Every run also prints a digest of every document's language, text after edits, reason, edit counts and stored
values: equal digests between trees mean the same decisions.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

PARTS = ("language ID", "rules (apply)", "rules one by one", "C4 edit check", "tokenize + views", "junk", "gopher", "repetition", "c4",
         "fineweb", "decide")


def documents(n: int) -> list[str]:
    from bench.build import distinct_texts

    texts = distinct_texts(random.Random(0), 1)
    return [next(texts) for _ in range(n)]


def parts(docs: list[str], repeat: int) -> tuple[dict[str, float], str]:
    """CPU us per document of each part (minimum over ``repeat`` passes), and the outputs' digest."""
    from corpusforge.pipeline.quality.config import QualityConfig
    from corpusforge.pipeline.quality.decide import decide_heuristics
    from corpusforge.pipeline.quality.langid import LanguageIdentifier
    from corpusforge.pipeline.quality.measure import (measure_c4, measure_fineweb, measure_gopher, measure_junk,
                                                      measure_length, measure_repetition)
    from corpusforge.pipeline.quality.rules import HeuristicRules, c4_edit_view

    cfg = QualityConfig()
    lid, rules = LanguageIdentifier(cfg.langid.model), HeuristicRules(cfg)
    langs = [lang for s in range(0, len(docs), 256) for lang, _ in lid.predict(docs[s:s + 256])]
    digest = hashlib.sha256()
    for text, lang, v in zip(docs, langs, apply_all(rules, docs, langs)):  # also fills the chunk cache
        digest.update(json.dumps([lang, v.text, v.reason, v.edits, v.values], sort_keys=True).encode())
    pc, n = time.process_time, len(docs)

    def best(run) -> float:
        times = []
        for _ in range(repeat):
            start = pc()
            run()
            times.append(pc() - start)
        return 1e6 * min(times) / n

    out = {"language ID": best(lambda: [lid.predict(docs[s:s + 256]) for s in range(0, n, 256)]),
           "rules (apply)": best(lambda: apply_all(rules, docs, langs)),
           "rules one by one": best(lambda: [rules.apply(t, lang) for t, lang in zip(docs, langs)]),
           "C4 edit check": best(lambda: [c4_edit_view(t, cfg.c4) for t in docs])}
    views: list = []

    def tokenize():
        views[:] = [c4_edit_view(t, cfg.c4)[0] for t in docs]
        for v in views:
            v.content_words, v.lower_word_counts, v.n_tokens, v.n_letter_words, v.n_sentences  # noqa: B018
    out["tokenize + views"] = best(tokenize) - out["C4 edit check"]
    measures = {"junk": lambda v, lang: measure_junk(v, lang),
                "gopher": lambda v, lang: measure_gopher(v, cfg.gopher, lang),
                "repetition": lambda v, lang: measure_repetition(v, cfg.repetition),
                "c4": lambda v, lang: measure_c4(v, rules.bad_words),
                "fineweb": lambda v, lang: measure_fineweb(v, cfg.fineweb)}
    for name, measure in measures.items():
        times = []
        for _ in range(repeat):
            tokenize()  # fresh views: each measure computes what it reads beyond the tokens
            start = pc()
            for v, lang in zip(views, langs):
                measure(v, lang)
            times.append(pc() - start)
        out[name] = 1e6 * min(times) / n
    values = [{"length": measure_length(t, cfg.length), "blocklist": None, "c4": measure_c4(v, rules.bad_words),
               "junk": measure_junk(v, lang), "gopher": measure_gopher(v, cfg.gopher, lang),
               "repetition": measure_repetition(v, cfg.repetition), "fineweb": measure_fineweb(v, cfg.fineweb)}
              for t, v, lang in zip(docs, views, langs)]
    out["decide"] = best(lambda: [decide_heuristics(v, cfg) for v in values])
    return out, digest.hexdigest()[:16]


def apply_all(rules, docs: list[str], langs: list) -> list:
    """The rules' verdicts as the stage asks for them: ``apply_batch`` on batches of 256 where the tree has it (older
    trees: ``apply`` per document)."""
    if not hasattr(rules, "apply_batch"):
        return [rules.apply(t, lang) for t, lang in zip(docs, langs)]
    return [v for s in range(0, len(docs), 256)
            for v in rules.apply_batch(docs[s:s + 256], langs[s:s + 256], [None] * len(docs[s:s + 256]))]


# A child process: the figures of the corpusforge found first on sys.path (PYTHONPATH: an older commit's package).
_CHILD = """
import json, sys
import corpusforge.pipeline.quality.rules  # before bench.build, which puts this tree first on sys.path
sys.path.append({root!r})
from bench.quality_cost import documents, parts
print(json.dumps(parts(documents({docs}), {repeat})))
"""

# Under valgrind: prepare (documents, models), then with "loop" run language ID and the rules.
_COUNTED = """
import sys
import corpusforge.pipeline.quality.rules as rules_module
from corpusforge.pipeline.quality.config import QualityConfig
from corpusforge.pipeline.quality.langid import LanguageIdentifier
sys.path.append({root!r})
from bench.quality_cost import documents
docs = documents({docs})
cfg = QualityConfig()
lid, rules = LanguageIdentifier(cfg.langid.model), rules_module.HeuristicRules(cfg)
from bench.quality_cost import apply_all
apply_all(rules, docs[:8], ["en"] * 8)  # once in both processes: what a first call imports or sets up is not counted
if {loop}:
    for s in range(0, len(docs), 256):
        part = docs[s:s + 256]
        apply_all(rules, part, [lang for lang, _ in lid.predict(part)])
"""


def run_child(code: str, env: dict, valgrind: bool = False) -> str:
    cmd = [sys.executable, "-c", code]
    if valgrind:
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**env, "PYTHONHASHSEED": "0",
                                                                    "OMP_NUM_THREADS": "1"}, cwd=tempfile.gettempdir())
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return done.stderr if valgrind else done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=7, help="Passes per part; the fastest counts.")
    parser.add_argument("--rounds", type=int, default=2, help="With --against: alternating rounds per tree.")
    parser.add_argument("--against", default=None, metavar="COMMIT", help="Also measure this git commit's code.")
    parser.add_argument("--instructions", action="store_true", help="Count instructions per document instead.")
    args = parser.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    sys.path.insert(0, root)
    from bench.build_profile import package_of_commit

    with tempfile.TemporaryDirectory(prefix="quality-cost-") as work:
        trees = {"this tree": dict(os.environ)}
        if args.against:
            trees = {args.against: {**os.environ, "PYTHONPATH": os.path.abspath(package_of_commit(args.against, work))},
                     **trees}
        if args.instructions:
            for name, env in trees.items():
                counts = []
                for loop in (False, True):
                    found = re.search(r"I\s+refs:\s+([\d,]+)", run_child(
                        _COUNTED.format(root=root, docs=args.docs, loop=loop), env, valgrind=True))
                    counts.append(int(found.group(1).replace(",", "")))
                print(f"{name}: language ID + rules {(counts[1] - counts[0]) / args.docs / 1e6:.2f} M instructions per "
                      f"document ({args.docs} documents, chunk cache empty)", flush=True)
            return
        rows: dict[str, list[dict]] = {name: [] for name in trees}
        for _ in range(args.rounds if args.against else 1):
            for name, env in trees.items():
                figures, digest = json.loads(run_child(_CHILD.format(root=root, docs=args.docs, repeat=args.repeat), env))
                rows[name].append(figures)
                print(f"{name}: " + ", ".join(f"{part} {figures[part]:.0f}" for part in PARTS)
                      + f" us per document; outputs {digest}", flush=True)
        print(f"{args.docs} documents, warm chunk cache, CPU us per document (fastest of {args.repeat} passes); "
              f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
