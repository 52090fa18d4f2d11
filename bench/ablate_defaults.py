"""Do the default cleaning settings make better models, on corpora corpusforge did not write? Two corpora of
different make-up, raw against the defaults, with a leave-one-out of the quality stage that says which rule
costs or earns bits per byte.

    python bench/ablate_defaults.py --corpus mixed --work /tmp/cf-defaults --debian-root / --tokens 102400 --seeds 2
    python bench/ablate_defaults.py --corpus sample --work /tmp/cf-defaults --tokens 102400 --seeds 2
    python bench/ablate_defaults.py --corpus mixed --work /tmp/cf-defaults --analyze   # no models: what the
                                                                                        # rules remove, by kind

- ``mixed``: the labelled quality sets' sources (bench/quality_data): English prose from Python's
  documentation and Debian Reference, docstrings, Debian Reference in German, French, Spanish and Italian,
  fortunes in German, Spanish and Italian (``apt-get install`` the packages in ``sources.APT_PACKAGES`` plus
  ``debian-reference-en``, or ``apt-get download`` them and ``dpkg-deb -x`` them into ``--debian-root``), half of
  it junk of the labelled set's twelve kinds, with exact and near-duplicate clusters. Held out: the last third
  of each prose source, one file per source (``pydoc-en``, ``debref-en``, ``debref-de``).
- ``sample``: the built-in sample (bench/ablate.py): Python documentation prose with junk pages, duplicates,
  personal data and a few foreign documents; held out: the documentation paragraphs it does not use.

Document ids carry their kind (``good-en_doc-12``, ``junk-nav_menu-3``) so ``--analyze`` can say which rule
removes which kind of good text.
"""
from __future__ import annotations

import argparse
import collections
import glob
import html
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.quality_data import labelled, sources  # noqa: E402

QUALITY_DOCS = 120  # junk documents per kind (twelve kinds)


def _debian_reference(root: str, lang: str) -> list[str]:
    out = []
    for path in sorted(glob.glob(os.path.join(root, f"usr/share/debian-reference/*.{lang}.html"))):
        parser = sources._Paragraphs()
        with open(path, encoding="utf-8", errors="replace") as f:
            parser.feed(f.read())
        out.extend(html.unescape(p) for p in parser.pars if sources._prose(p) and "$" not in p[:3])
    return out


def _fortunes(root: str, lang: str) -> list[str]:
    out = []
    for path in sorted(glob.glob(os.path.join(root, f"usr/share/games/fortunes/{lang}/*.u8"))):
        if os.path.basename(path).startswith("asciiart"):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            out += [t.strip("\n%") for t in f.read().split("\n%\n") if 60 <= len(t.strip("\n%")) <= 1200]
    return out


def _split(items: list[str]) -> tuple[list[str], list[str]]:
    """First two thirds train, last third held out (runs of paragraphs never straddle)."""
    cut = 2 * len(items) // 3
    return items[:cut], items[cut:]


def _runs(pars: list[str], rng: random.Random, lo: int = 2, hi: int = 5) -> list[str]:
    """The paragraphs grouped into documents of a few consecutive paragraphs, each paragraph used once."""
    out, i = [], 0
    while i < len(pars):
        k = rng.randint(lo, hi)
        out.append("\n\n".join(pars[i:i + k]))
        i += k
    return out


def write_mixed(work: str, root: str, per_source: int = 200, seed: int = 0) -> tuple[list[str], list[str]]:
    """The mixed corpus (one JSONL) and its held-out files; returns (inputs, held-out paths). ``per_source``:
    at most this many documents of each good source (and half as many held out)."""
    rng = random.Random(seed)
    prose = {("en", "pydoc"): sources.python_doc_paragraphs(), ("en", "debref"): _debian_reference(root, "en")}
    for lang in ("de", "fr", "es", "it"):
        prose[(lang, "debref")] = _debian_reference(root, lang)
    if not prose[("en", "debref")] or not prose[("de", "debref")]:
        raise SystemExit(f"no Debian Reference under {root}: install debian-reference-en/-de/-fr/-es/-it or pass "
                         "--debian-root with the packages unpacked (dpkg-deb -x)")
    train, heldout = [], {}
    for (lang, name), pars in prose.items():
        kept, held = _split(pars)
        train += [(f"good-{lang}_{name}", text, lang) for text in _runs(kept, rng)[:per_source]]
        if name == "pydoc" or lang in ("en", "de"):
            heldout[f"{name}-{lang}"] = _runs(held, rng)[:per_source // 2]
    train += [("good-en_docstring", t, "en") for t in sources.docstring_paragraphs()[:per_source]]
    for lang in ("de", "es", "it"):
        fortunes = _fortunes(root, lang)
        train += [(f"good-{lang}_fortune", t, lang) for t in rng.sample(fortunes, min(per_source, len(fortunes)))]
    pars_by_lang = {lang: [t for (k, t, l) in train if l == lang and "_fortune" not in k][:60]
                    for lang in ("en", "de", "fr", "es")}
    art: list[str] = []  # symbol-art junk draws on German fortunes' asciiart, as the labelled set does
    art_path = os.path.join(root, "usr/share/games/fortunes/de/asciiart.u8")
    if os.path.exists(art_path):
        with open(art_path, encoding="utf-8", errors="replace") as f:
            art = [t.strip("\n%") for t in f.read().split("\n%\n") if t.strip("\n%")]
    goods = len(train)
    per_kind = max(1, goods // len(labelled.JUNK_KINDS))  # as much junk as good documents, by count
    for kind in labelled.JUNK_KINDS:
        train += [(f"junk-{kind}", labelled.junk(kind, rng, pars_by_lang, art), "") for _ in range(per_kind)]
    # near-duplicate clusters: copies of good documents with a changed word or two, and exact copies
    for _ in range(goods // 10):
        kind, text, lang = rng.choice(train[:goods])
        words = text.split(" ")
        for _copy in range(rng.randint(1, 4)):
            changed = list(words)
            for _edit in range(rng.randint(0, 2)):
                changed[rng.randrange(len(changed))] = rng.choice(words)
            train.append((kind.replace("good-", "dup-"), " ".join(changed), lang))
    rng.shuffle(train)
    os.makedirs(os.path.join(work, "heldout"), exist_ok=True)
    path = os.path.join(work, "mixed.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for number, (kind, text, _lang) in enumerate(train):
            f.write(json.dumps({"id": f"{kind}-{number}", "text": text}) + "\n")
    paths = []
    for name, docs in heldout.items():
        paths.append(os.path.join(work, "heldout", f"{name}.jsonl"))
        with open(paths[-1], "w", encoding="utf-8") as f:
            for text in docs:
                f.write(json.dumps({"text": text}) + "\n")
    counts = collections.Counter(k.split("-")[0] for k, _, _ in train)
    print(f"mixed: {len(train):,} documents ({dict(counts)}), {sum(len(t) for _, t, _ in train):,} characters; "
          f"held out {', '.join(f'{n} {len(d)}' for n, d in heldout.items())}", flush=True)
    return [path], paths


def write_sample(work: str, documents: int) -> tuple[list[str], list[str]]:
    from bench.ablate import write_corpus
    import yaml

    config, heldout = write_corpus(work, documents)
    with open(config, encoding="utf-8") as f:
        inputs = yaml.safe_load(f)["inputs"]
    return [i["path"] for i in inputs], [heldout]


def analyze(work: str, inputs: list[str]) -> None:
    """One build with the defaults; per kind of document, the share removed and by which reason."""
    from corpusforge.config import load_config
    from corpusforge.pipeline.build import run_build
    from corpusforge.pipeline.run import open_run

    run = os.path.join(work, "analyze")
    if not os.path.exists(os.path.join(run, "manifest.json")):
        config = load_config(None, ["pii.enabled=false", f"output.run_dir={run}", "output.overwrite=true"],
                             base={"inputs": [{"path": p} for p in inputs]})
        run_build(config, out=open(os.devnull, "w"), progress=False)
    built = open_run(run)
    removed = built.removed.to_table(columns=["id", "stage", "reason"])
    kept = built.clean.to_table(columns=["id"])
    kind = lambda doc_id: doc_id.rsplit("-", 1)[0]  # noqa: E731
    total = collections.Counter(kind(i) for i in kept.column("id").to_pylist())
    reasons: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for doc_id, stage, reason in zip(*(removed.column(c).to_pylist() for c in ("id", "stage", "reason"))):
        total[kind(doc_id)] += 1
        reasons[kind(doc_id)][f"{stage}:{reason}"] += 1
    for k in sorted(total):
        gone = sum(reasons[k].values())
        top = ", ".join(f"{r} {n}" for r, n in reasons[k].most_common(4))
        print(f"{k:<28} {total[k]:>5} removed {100 * gone / total[k]:5.1f}%  {top}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=["mixed", "sample"], required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--debian-root", default="/", help="Where debian-reference-* and fortunes-* are unpacked.")
    parser.add_argument("--documents", type=int, default=400, help="sample: good documents in the sample; "
                                                                   "mixed: at most this many per good source.")
    parser.add_argument("--tokens", type=int, default=102400)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--vocab-size", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--leave-one-out", default="quality", help="Section to leave out part by part ('' none).")
    parser.add_argument("--analyze", action="store_true", help="No models: what the default rules remove, by kind.")
    parser.add_argument("--set", action="append", default=[], help="Config overrides for every variant.")
    args = parser.parse_args()
    work = os.path.join(args.work, args.corpus)
    os.makedirs(work, exist_ok=True)
    inputs, heldout = (write_mixed(work, args.debian_root, args.documents // 2) if args.corpus == "mixed"
                       else write_sample(work, args.documents))
    if args.analyze:
        return analyze(work, inputs)
    command = [sys.executable, "-m", "corpusforge.cli", "ablate", "--out", os.path.join(work, "out"),
               "--tokens", str(args.tokens), "--seeds", str(args.seeds), "--no-progress",
               "--set", "pii.enabled=false", "--set", f"tokenizer.vocab_size={args.vocab_size}",
               "--set", f"train.optim.lr={args.lr}",
               "--variant", "raw:quality.enabled=false,dedup.enabled=false", "--variant", "full"]
    for path in inputs:
        command += ["--input", path]
    for path in heldout:
        command += ["--eval", path]
    for item in args.set:
        command += ["--set", item]
    if args.leave_one_out:
        command += ["--leave-one-out", args.leave_one_out]
    print(" ".join(command), flush=True)
    raise SystemExit(subprocess.call(command))


if __name__ == "__main__":
    main()
