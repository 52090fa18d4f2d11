"""Near-dedup in every language of the language-ID set: planted near-duplicates per language, found by the default
configuration with script-aware words (corpusforge.pipeline.words: a Han, kana or Thai character is one word)
against today's whitespace words. See docs/dedup.md ("Every language").

    .venv/bin/python bench/lang_dedup.py [--docs 150] [--edit 0.04] [--json out.json]

Per language (bench/lang_data/parallel.py: gettext catalogs on the machine, no network): ``--docs`` documents of
consecutive messages of one program, so every other document of the set is a hard negative (same program, same
vocabulary and phrasing, different messages). Two in five get a planted variant with ``--edit`` of their characters
changed: ``words``, edits of one word (a space-delimited word, or one to three characters of a script written
without spaces) replaced, deleted or inserted at random places; ``typos``, single characters replaced at random
places (the harder case for word shingles: every changed character changes a whole word). Recall is planted pairs
found; false merges are pairs of different documents put in one cluster. The in-memory run of the stage's
algorithm (bench/dedup.py ``ours_in_memory``: buckets, verification, survivor split) at the stage's defaults.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import random
import re
import sys
from math import comb

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench.lang_data.parallel import LANGUAGES, documents  # noqa: E402
from dedup import ours_in_memory  # noqa: E402
from dedup_data.corpus import Doc  # noqa: E402
from corpusforge.pipeline import words as script_words  # noqa: E402
from corpusforge.pipeline.dedup import minhash  # noqa: E402
from corpusforge.pipeline.dedup.config import NearDedupConfig  # noqa: E402
from corpusforge.pipeline.dedup.text import normalized_bytes, segmented_bytes  # noqa: E402

# A unit of an edit: one character of a no-space script (with its marks) or a run of other non-space characters.
_UNIT = re.compile(f"[{script_words.BASE_CLASS}][{script_words._MARK_CLASS}]*|[^\\s{script_words.BASE_CLASS}]+")


def word_edits(text: str, rate: float, vocab: list[str], rng: random.Random) -> str:
    """``text`` with about ``rate`` of its characters changed by word-sized edits (see the module docstring)."""
    budget, changed = rate * len(text), 0
    while changed < budget:
        units = list(_UNIT.finditer(text))
        i = rng.randrange(len(units))
        span = rng.randint(1, 3) if script_words.has_no_space_script(units[i].group()) else 1
        start, end = units[i].start(), units[min(i + span, len(units)) - 1].end()
        op = rng.random()
        new = "".join(rng.choice(vocab) for _ in range(span))
        if op < 0.5:  # replace
            text, delta = text[:start] + new + text[end:], max(end - start, len(new))
        elif op < 0.75:  # delete
            text, delta = text[:start] + text[end:], end - start
        else:  # insert after
            glue = "" if script_words.has_no_space_script(new) else " "
            text, delta = text[:end] + glue + new + text[end:], len(new)
        changed += delta
    return text


def typo_edits(text: str, rate: float, rng: random.Random) -> str:
    """``text`` with about ``rate`` of its characters replaced, one at a time, by another character of the text."""
    chars = list(text)
    positions = [i for i, c in enumerate(chars) if not c.isspace()]
    for i in rng.sample(positions, max(1, round(rate * len(text)))):
        chars[i] = chars[rng.choice(positions)]
    return "".join(chars)


def planted_set(lang: str, n: int, rate: float, mode: str, seed: int = 0) -> list[Doc]:
    rng = random.Random(f"{lang}-{seed}-{mode}")
    bases = documents(lang, limit=n)
    vocab = [m.group() for d in bases for m in _UNIT.finditer(d.text)]
    docs: list[Doc] = []
    for k, base in enumerate(bases):
        planted = k % 5 < 2
        docs.append(Doc(base.id, base.text, k if planted else -1, "base"))
        if planted:
            text = word_edits(base.text, rate, vocab, rng) if mode == "words" else typo_edits(base.text, rate, rng)
            docs.append(Doc(base.id + "-variant", text, k, "variant"))
    return docs


def found(docs: list[Doc], labels: list[int]) -> tuple[int, int, int]:
    """(planted pairs found, planted pairs, false merges: pairs of different documents in one cluster)."""
    truth = [d.cluster if d.cluster >= 0 else -(i + 1) for i, d in enumerate(docs)]
    planted = sum(1 for d in docs if d.role == "variant")
    hits = sum(1 for i, d in enumerate(docs) if d.role == "variant"
               and labels[i] == labels[next(j for j, e in enumerate(docs) if e.id == d.id[:-len("-variant")])])
    clusters: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        clusters.setdefault(label, []).append(i)
    false = sum(comb(len(m), 2) - sum(comb(list(map(truth.__getitem__, m)).count(t), 2) for t in set(map(truth.__getitem__, m)))
                for m in clusters.values())
    return hits, planted, false


def run(docs: list[Doc], cfg: NearDedupConfig, script_aware: bool) -> list[int]:
    hasher = minhash.MinHasher(cfg.num_perm, cfg.seed, minhash.Shingler(cfg.ngram, cfg.unit, cfg.hash))
    saved = minhash.segmented_bytes
    minhash.segmented_bytes = segmented_bytes if script_aware else normalized_bytes
    try:
        sigs = hasher.signatures([d.text for d in docs])
    finally:
        minhash.segmented_bytes = saved
    return ours_in_memory(docs, sigs, cfg.candidate_threshold, cfg.verify_threshold, num_perm=cfg.num_perm,
                          max_bucket_pairs=cfg.max_bucket_pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=150)
    parser.add_argument("--edit", type=float, default=0.04)
    parser.add_argument("--langs", default=",".join(LANGUAGES))
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    cfg = NearDedupConfig()
    rows = []
    print(f"defaults: unit={cfg.unit} ngram={cfg.ngram} num_perm={cfg.num_perm} candidate={cfg.candidate_threshold} "
          f"verify={cfg.verify_threshold}; {args.edit:.0%} of characters edited")
    print("| lang | docs | planted | edits | recall today | recall script-aware | false merges today | false merges script-aware |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for lang in args.langs.split(","):
        for mode in ("words", "typos"):
            docs = planted_set(lang, args.docs, args.edit, mode)
            if not docs:
                continue
            today = found(docs, run(docs, cfg, False))
            aware = found(docs, run(docs, cfg, True))
            row = {"lang": lang, "mode": mode, "docs": len(docs), "planted": today[1], "recall_today": today[0] / today[1],
                   "recall_script_aware": aware[0] / aware[1], "false_today": today[2], "false_script_aware": aware[2]}
            rows.append(row)
            print(f"| {lang} | {len(docs)} | {today[1]} | {mode} | {row['recall_today']:.2f} | {row['recall_script_aware']:.2f} "
                  f"| {today[2]} | {aware[2]} |", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
