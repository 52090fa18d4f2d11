"""Do the default cleaning settings make better models, on corpora corpusforge did not write? Two corpora of
different make-up, raw against the defaults, with a leave-one-out of the quality stage that says which rule
costs or earns bits per byte.

    python bench/ablate_defaults.py --corpus mixed --work /tmp/cf-defaults --debian-root / --tokens 102400 --seeds 2
    python bench/ablate_defaults.py --corpus sample --work /tmp/cf-defaults --tokens 102400 --seeds 2
    python bench/ablate_defaults.py --corpus mixed --work /tmp/cf-defaults --analyze   # no models: what the
                                                                                        # rules remove, by kind
    python bench/ablate_defaults.py --corpus mixed --work /tmp/cf-defaults --check quality.langid.min_score=0.65
                                                 # no models: what a change of the defaults keeps, good and junk

- ``mixed``: the labelled quality sets' sources (bench/quality_data): English prose from Python's
  documentation and Debian Reference, docstrings, Debian Reference in German, French, Spanish and Italian,
  fortunes in German, Spanish and Italian (``apt-get install`` the packages in ``sources.APT_PACKAGES`` plus
  ``debian-reference-en``, or ``apt-get download`` them and ``dpkg-deb -x`` them into ``--debian-root``), half of
  it junk of the labelled set's twelve kinds, with exact and near-duplicate clusters. Held out: the last third
  of each prose source, one file per source (``pydoc-en``, ``debref-en``, ``debref-de``).
- ``sample``: the built-in sample (bench/ablate.py): Python documentation prose with junk pages, duplicates,
  personal data and a few foreign documents; held out: the documentation paragraphs it does not use, and with
  ``--library-heldout N`` N paragraphs of the standard library's reference too.

``--before`` adds the variant ``before-39`` (the defaults before issue 39 changed two of them); ``--baseline``,
``--tokenizer`` and ``--set`` pass through to ``corpusforge ablate``. docs/ablation.md has the runs.

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
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.quality_data import labelled, sources  # noqa: E402

QUALITY_DOCS = 120  # junk documents per kind (twelve kinds)
# The two quality defaults issue 39 changed, as they were: variant ``before-39`` (--before).
BEFORE_39 = {"quality.langid.min_score": 0.65,
             "quality.repetition.dup_ngram_char_frac": {"5": 0.15, "6": 0.14, "7": 0.13, "8": 0.12, "9": 0.11,
                                                        "10": 0.10}}


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


_ROLE = re.compile(r":[\w:]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")
_LINK = re.compile(r"`([^`<]*?)\s*<[^>]*>`_+")


def library_paragraphs(root: str = "/usr/share/doc/python3.11/html/_sources/library") -> list[str]:
    """Prose paragraphs of the standard library's reference (the reST sources Python's docs install), markup
    stripped: roles and links to their text, literals to their content. Code blocks (after ``::``),
    directives, tables and doctests are left out."""
    out = []
    for path in sorted(glob.glob(os.path.join(root, "*.rst.txt"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            blocks = re.split(r"\n\s*\n", f.read())
        code = False
        for block in blocks:
            first = block.strip().splitlines()[0] if block.strip() else ""
            was_code, code = code, block.rstrip().endswith("::")
            if was_code and block.startswith((" ", "\t")) or first.startswith((".. ", ":", "=", "-", "+", "*")):
                continue
            text = " ".join(block.split())
            text = _LINK.sub(r"\1", _ROLE.sub(r"\1", text)).replace("``", "").replace("**", "")
            if len(text) >= 200 and ">>>" not in text and text.count("|") < 3 and not text.endswith("::"):
                out.append(text)
    return list(dict.fromkeys(out))


def _shingles(text: str, n: int = 8) -> set[int]:
    words = re.findall(r"\w+", text.lower())
    return {hash(tuple(words[i:i + n])) for i in range(max(0, len(words) - n + 1))}


def write_sample(work: str, documents: int, library: int = 0) -> tuple[list[str], list[str]]:
    """The sample and its held-out paragraphs; ``library`` > 0 adds a second held-out file of that many
    paragraphs of the standard library's reference (same kind of prose, none sharing an 8-word run with the
    sample: the sample holds stdlib docstrings), so the held-out set's own sampling noise can resolve a
    difference of ~0.02 bits per byte."""
    from bench.ablate import write_corpus
    from corpusforge.pipeline.build import run_build
    from corpusforge.config import load_config
    from corpusforge.pipeline.run import open_run
    import yaml

    config, heldout = write_corpus(work, documents)
    with open(config, encoding="utf-8") as f:
        inputs = yaml.safe_load(f)["inputs"]
    heldouts = [heldout]
    if library:
        run = os.path.join(work, "read")  # every text the sample holds, as the build reads it
        if not os.path.exists(os.path.join(run, "manifest.json")):
            read = load_config(config, ["quality.enabled=false", "dedup.enabled=false", "pii.enabled=false",
                                        f"output.run_dir={run}", "output.overwrite=true"])
            run_build(read, out=open(os.devnull, "w"), progress=False)
        seen: set[int] = set()
        for text in open_run(run).clean.to_table(columns=["text"]).column("text").to_pylist():
            seen |= _shingles(text)
        with open(heldout, encoding="utf-8") as f:
            for line in f:
                seen |= _shingles(json.loads(line)["text"])
        clean = [p for p in library_paragraphs() if not _shingles(p) & seen]
        kept = clean[::max(1, len(clean) // library)][:library]  # spread over every module's page
        heldouts.append(os.path.join(work, "heldout-library.jsonl"))
        with open(heldouts[-1], "w", encoding="utf-8") as f:
            for text in kept:
                f.write(json.dumps({"text": text, "source": "python-library"}) + "\n")
        print(f"sample: held out {len(kept)} paragraphs of the library reference too", flush=True)
    return [i["path"] for i in inputs], heldouts


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
    by_reason: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])  # junk, good or copy of good
    for k, counter in reasons.items():
        for reason, n in counter.items():
            by_reason[reason][0 if "junk-" in k else 1] += n
    print("\nby reason (the first rule that fails): junk documents, good documents (or copies of good ones)")
    for reason, (junk, good) in sorted(by_reason.items(), key=lambda kv: (-kv[1][1], -kv[1][0])):
        print(f"  {reason:<44} junk {junk:>4}  good {good:>4}")


def check_rules(work: str, inputs: list[str], changes: list[str]) -> None:
    """The training-side check behind a default: each change (``;``-separated --set items) against the defaults,
    on the input corpus alone (no model, no held-out text), with the quality stage's own decisions. Prints the
    share of good and of junk characters kept (by the ids' kinds; ``sample`` ids carry none, so every document
    counts as good there) and each document whose decision changes."""
    from bench.quality_data.labelled import Example
    from bench.quality_labelled import corpusforge_decisions
    from corpusforge.config import load_config
    from corpusforge.pipeline.quality.langid import LanguageIdentifier, bundled_lid_path
    from corpusforge.pipeline.build import run_build
    from corpusforge.pipeline.run import open_run

    run = os.path.join(work, "normalized")  # the text the quality stage sees: read and normalised, nothing else
    if not os.path.exists(os.path.join(run, "manifest.json")):
        config = load_config(None, ["quality.enabled=false", "dedup.enabled=false", "pii.enabled=false",
                                    f"output.run_dir={run}", "output.overwrite=true"],
                             base={"inputs": [{"path": p} for p in inputs]})
        run_build(config, out=open(os.devnull, "w"), progress=False)
    table = open_run(run).clean.to_table(columns=["id", "text"])
    examples = [Example(i, t, "/junk-" not in "/" + i.split("/")[-1], i.split("/")[-1].rsplit("-", 1)[0], "")
                for i, t in zip(table.column("id").to_pylist(), table.column("text").to_pylist())]
    lid = LanguageIdentifier(bundled_lid_path())
    base = corpusforge_decisions(load_config(None, []).quality, examples, lid)
    for change in [""] + changes:
        decided = corpusforge_decisions(load_config(None, [c for c in change.split(";") if c]).quality, examples, lid)
        kept = {good: sum(len(e.text) for e in examples if e.good == good and decided[e.id] is None) /
                max(1, sum(len(e.text) for e in examples if e.good == good)) for good in (True, False)}
        print(f"{change or 'defaults'}: good kept {100 * kept[True]:.2f}% of characters, junk kept "
              f"{100 * kept[False]:.2f}%")
        for e in examples:
            if (decided[e.id] is None) != (base[e.id] is None):
                what = f"now kept ({base[e.id]})" if decided[e.id] is None else f"now removed ({decided[e.id]})"
                print(f"    {what:<36} {e.kind:<24} {e.text[:70]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=["mixed", "sample"], required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--debian-root", default="/", help="Where debian-reference-* and fortunes-* are unpacked.")
    parser.add_argument("--documents", type=int, default=400, help="sample: good documents in the sample; "
                                                                   "mixed: at most this many per good source.")
    parser.add_argument("--library-heldout", type=int, default=0, metavar="N",
                        help="sample: also hold out N paragraphs of the standard library's reference.")
    parser.add_argument("--out", default="out", help="The ablation's directory, under WORK/CORPUS.")
    parser.add_argument("--tokens", type=int, default=102400)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--vocab-size", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--leave-one-out", default="quality", help="Section to leave out part by part ('' none).")
    parser.add_argument("--tokenizer", default="", help="Use this tokenizer.json (e.g. an earlier run's, to add "
                                                         "variants to it and reuse its models).")
    parser.add_argument("--baseline", default="", help="Compare with this variant instead of raw.")
    parser.add_argument("--before", action="store_true", help="Add variant before-39: the defaults before issue 39.")
    parser.add_argument("--analyze", action="store_true", help="No models: what the default rules remove, by kind.")
    parser.add_argument("--set", action="append", default=[], help="Config overrides for every variant.")
    parser.add_argument("--check", action="append", default=[], metavar="KEY=VALUE[;KEY=VALUE...]",
                        help="No models: what this change of the quality defaults keeps or removes on the input "
                             "corpus, good and junk (repeatable).")
    args = parser.parse_args()
    work = os.path.join(args.work, args.corpus)
    os.makedirs(work, exist_ok=True)
    inputs, heldout = (write_mixed(work, args.debian_root, args.documents // 2) if args.corpus == "mixed"
                       else write_sample(work, args.documents, args.library_heldout))
    if args.analyze:
        return analyze(work, inputs)
    if args.check:
        return check_rules(work, inputs, args.check)
    command = [sys.executable, "-m", "corpusforge.cli", "ablate", "--out", os.path.join(work, args.out),
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
    if args.tokenizer:
        command += ["--tokenizer", args.tokenizer]
    if args.baseline:
        command += ["--baseline", args.baseline]
    if args.before:
        variants = os.path.join(work, "before-39.yaml")  # JSON is YAML
        with open(variants, "w", encoding="utf-8") as f:
            json.dump({"variants": {"before-39": BEFORE_39}}, f)
        command += ["--variants", variants]
    if args.leave_one_out:
        command += ["--leave-one-out", args.leave_one_out]
    print(" ".join(command), flush=True)
    raise SystemExit(subprocess.call(command))


if __name__ == "__main__":
    main()
