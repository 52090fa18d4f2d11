"""The toxicity filter (``quality.toxicity``, alt-profanity-check's model): the share of clean, good documents it
removes and its recall on abusive messages, per threshold.

    apt-get install -y python3.11-doc dict-gcide fortunes
    pip install alt-profanity-check            # or: pip install -e '.[toxicity]'
    python bench/toxicity.py [--per-set 5000]

Clean sets (English, the model's language): Python's documentation (reStructuredText paragraphs and
docstrings), entries of the GNU Collaborative International Dictionary of English (gcide, Webster 1913), English
fortune files (quotes, jokes, verse, Pratchett, literature), plus the dictionary entries and fortunes that
contain a rude or violent word (``RUDE``): text that merely mentions one. Abusive messages:
``bench/toxicity_data/abusive.txt``, written by hand for this benchmark (see its header), by kind.
Every document is scored whole, in batches of 64, as the stage scores it; one core.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import os
import pathlib
import random
import re
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.quality_data.corpus import docstrings, rst_documents  # noqa: E402
from corpusforge.pipeline.quality.config import ToxicityConfig  # noqa: E402
from corpusforge.pipeline.quality.toxicity import SECOND_PERSON, ToxicityScorer  # noqa: E402

THRESHOLDS = (0.5, 0.8, 0.9, 0.95, 0.97, 0.99)
RUDE = re.compile(r"\b(?:ass|arse|bastard|bitch|bloody|bugger|crap|damn|dick|hell|piss|shit|fuck|cock|whore|slut|"
                  r"tits|screw|hate|kill|idiot|stupid|fool|moron|dumb)\w*", re.IGNORECASE)
ABUSIVE = pathlib.Path(__file__).parent / "toxicity_data" / "abusive.txt"


def gcide_entries() -> list[str]:
    path = "/usr/share/dictd/gcide.dict.dz"
    if not os.path.exists(path):
        sys.exit("no gcide; run: apt-get install -y dict-gcide")
    text = gzip.open(path).read().decode("utf-8", errors="replace")
    out = []
    for block in re.split(r"\n(?=[A-Z][^\s\\]*\s\\)", text):  # an entry starts with `Headword \Pro*nun"ci*a*tion\`
        entry = re.sub(r"\[1913 Webster\]|\[PJC\]|--[A-Z][\w.]*", "", block)
        entry = re.sub(r"\s+", " ", entry).strip()
        if len(entry.split()) >= 6:
            out.append(entry)
    return out


def english_fortunes() -> list[str]:
    out = []
    for path in sorted(glob.glob("/usr/share/games/fortunes/*")):
        if not os.path.isfile(path) or "." in os.path.basename(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            out += [q.strip() for q in f.read().split("\n%\n") if len(q.strip()) >= 40]
    if not out:
        sys.exit("no fortunes; run: apt-get install -y fortunes")
    return out


def abusive_messages() -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {}
    kind = "unlabelled"
    for line in ABUSIVE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            kind = line[3:].strip()
        elif line.strip() and not line.startswith("#"):
            kinds.setdefault(kind, []).append(line.strip())
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-set", type=int, default=5000, help="documents sampled from each clean set")
    args = parser.parse_args()
    rng = random.Random(0)

    def sample(items: list[str]) -> list[str]:
        return rng.sample(items, min(args.per_set, len(items)))

    docs = rst_documents(rng) + docstrings()
    gcide, fortunes = gcide_entries(), english_fortunes()
    clean = {
        "Python docs": sample(docs),
        "gcide entries": sample(gcide),
        "gcide entries with a rude word": sample([e for e in gcide if RUDE.search(e)]),
        "English fortunes": sample(fortunes),
        "fortunes with a rude word": sample([q for q in fortunes if RUDE.search(q)]),
    }
    abusive = abusive_messages()

    t0 = time.perf_counter()
    scorer = ToxicityScorer(ToxicityConfig(enabled=True))
    load = time.perf_counter() - t0
    scores: dict[str, list[float]] = {}
    total_docs, total_secs = 0, 0.0
    for name, texts in [*clean.items(), *abusive.items()]:
        t0 = time.perf_counter()
        scores[name] = [s for i in range(0, len(texts), 64) for s in scorer.score(texts[i:i + 64])]  # as the stage batches
        total_secs += time.perf_counter() - t0
        total_docs += len(texts)
    some = clean["English fortunes"][:300]
    t0 = time.perf_counter()
    one_by_one = [scorer.score([t])[0] for t in some]
    single_secs = time.perf_counter() - t0
    assert one_by_one == scores["English fortunes"][:300], "batched and single scores differ"
    print(f"alt-profanity-check: model load {load:.1f} s; {total_docs / total_secs:,.0f} docs/s in batches of 64 "
          f"(the stage's default), {len(some) / single_secs:,.0f} docs/s one at a time; same scores either way")

    header = f"{'set':34s} {'docs':>6s} " + " ".join(f"{'>=' + str(t):>7s}" for t in THRESHOLDS)
    for gate in (False, True):
        def removed(name: str, t: float) -> int:
            texts = clean[name] if name in clean else abusive[name]
            return sum(x >= t and (not gate or bool(SECOND_PERSON.search(text))) for x, text in zip(scores[name], texts))

        title = "require_second_person: " + ("true (the default)" if gate else "false")
        print(f"\n[{title}] share of clean documents removed, by threshold\n" + header)
        for name in clean:
            n = len(scores[name])
            print(f"{name:34s} {n:6,} " + " ".join(f"{removed(name, t) / n:7.2%}" for t in THRESHOLDS))
        print(f"[{title}] recall on abusive messages, by threshold\n" + header)
        for name in abusive:
            n = len(scores[name])
            print(f"{name:34s} {n:6,} " + " ".join(f"{removed(name, t) / n:7.2%}" for t in THRESHOLDS))
        n = sum(len(v) for v in abusive.values())
        print(f"{'all abusive messages':34s} {n:6,} "
              + " ".join(f"{sum(removed(k, t) for k in abusive) / n:7.2%}" for t in THRESHOLDS))


if __name__ == "__main__":
    main()
