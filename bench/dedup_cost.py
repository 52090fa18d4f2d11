"""CPU cost per document of each pure function the dedup stage's steps call, outside Beam and without a profiler.

    .venv/bin/python bench/dedup_cost.py                        # 3,000 docs of bench/build.py's distinct corpus
    .venv/bin/python bench/dedup_cost.py --docs 3000 --rounds 5 --against 8807992   # alternate with that commit
    .venv/bin/python bench/dedup_cost.py --build 3000 --rounds 3 --against 8807992  # whole builds, alternated
    .venv/bin/python bench/dedup_cost.py --instructions --docs 1000 --against 7c4d7be  # lines + sentences steps

Each function runs over every document of the corpus (bench/build.py's ``distinct`` one, ~2.4 KB web-like
documents, no language annotation: what a normalize + dedup build sees) with the default configuration, and
its CPU time (``time.process_time``, the fastest of ``--reps`` runs) is printed in microseconds per document. The steps and what they call:

- exact: ``text_digest`` (ExactDedup's key);
- near: ``Shingler.hashes`` and ``MinHasher.from_hashes`` on batches of ``dedup.near.batch_size`` documents,
  then ``band_hashes`` (NearDedup's signature step);
- lines + sentences: ``line_records`` (LineAndSentenceDedup's keys: line keys, words, sentence keys);
- removal, per corpus document though only the documents that lose lines or sentences pay it: ``drop_lines``
  and ``drop_sentences`` (the text without them, its word count, the edits) with the drops the corpus itself
  produces (keys in more than ``max_occurrences`` documents; this corpus mixes sentences of its pages, so
  nearly every document loses some).

``--instructions`` instead counts the instructions per document of the lines + sentences steps (valgrind's
cachegrind, hash seed fixed: a figure other jobs on the machine do not move): ``line_records``, ``shard_drops`` of
the line and sentence keys (the two boilerplate groupings), and the removal (``drop_lines`` then
``drop_sentences`` on the documents the corpus's own drops hit), each as a fresh process that prepares
everything and runs that step minus one that only prepares (~1-2 minutes a run; ``--docs 1000``).

``--build N`` instead times a whole normalize + dedup build of N such documents in one process (the per-document
CPU beyond a one-document build, as bench/build_profile.py --plain) and prints its output digest
(bench/build.py's ``output_digest``: shards and counts).

``--against COMMIT`` (or a folder holding a ``corpusforge`` package) runs the same measurement on that tree in
a fresh process after each round of this tree's, and prints both trees' medians and the ratio: CPU time moves
less than wall time on a shared machine, and alternating spreads the load over both. Every round's outputs
(digests, signatures, records, edited texts) are hashed, so the two trees must print the same ``outputs``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.append(ROOT)  # appended: a tree put first on PYTHONPATH (--against) provides corpusforge

# The measurement itself, run in a fresh process per tree and round; prints one JSON line.
_MEASURE = r"""
import collections, hashlib, json, sys, time
import numpy as np
texts = json.load(open(sys.argv[1]))
import corpusforge.pipeline.dedup.exact as exact
from corpusforge.pipeline.dedup.boilerplate import line_records
from corpusforge.pipeline.dedup.config import LineDedupConfig, NearDedupConfig, SentenceDedupConfig
from corpusforge.pipeline.dedup.lines import drop_lines
from corpusforge.pipeline.dedup.minhash import MinHasher, Shingler, band_hashes
from corpusforge.pipeline.dedup.near import banding
from corpusforge.pipeline.dedup.sentences import drop_sentences
from corpusforge.pipeline.document import Document

near, lines, sentences = NearDedupConfig(), LineDedupConfig(), SentenceDedupConfig()
hasher = MinHasher(near.num_perm, near.seed, Shingler(near.ngram, near.unit, near.hash))
bands, rows = banding(near)
batches = [texts[i:i + near.batch_size] for i in range(0, len(texts), near.batch_size)]
timings, outputs = {}, hashlib.sha256()

reps = int(sys.argv[2])

def digest(value):
    if isinstance(value, np.ndarray):
        outputs.update(value.tobytes())
    elif isinstance(value, (list, tuple)):
        for item in value:
            digest(item)
    else:
        outputs.update(repr(value).encode())

def timed(name, fn):
    best = float("inf")
    for _ in range(reps):  # the fastest of reps runs: the first pays for page faults and cold caches
        started = time.process_time()
        result = fn()
        best = min(best, time.process_time() - started)
    timings[name] = 1e6 * best / len(texts)
    digest(result)
    return result

timed("exact: text_digest", lambda: [exact.text_digest(t) for t in texts])
shingled = timed("near: Shingler.hashes", lambda: [hasher.shingler.hashes(b) for b in batches])
sigs = timed("near: from_hashes", lambda: [hasher.from_hashes(h, c) for h, c in shingled])
timed("near: band_hashes", lambda: [band_hashes(s, bands, rows) for s in sigs])
records = timed("lines+sentences: line_records",
                lambda: [line_records(t, None, lines.min_line_chars, sentences.min_sentence_chars) for t in texts])
line_count = collections.Counter(k for rec in records for k in {r[0] for r in rec if r[0] is not None})
sentence_count = collections.Counter(k for rec in records for k in {s for r in rec for s in r[2]})
line_drop = {k for k, n in line_count.items() if n > lines.max_occurrences}
sentence_drop = {k for k, n in sentence_count.items() if n > sentences.max_occurrences}
hit_lines = [t for t, rec in zip(texts, records) if any(r[0] in line_drop for r in rec)]
hit_sentences = [t for t, rec in zip(texts, records)
                 if any(s in sentence_drop for r in rec for s in r[2])
                 or len({s for r in rec for s in r[2]}) < sum(len(r[2]) for r in rec)]

class Counter:
    def inc(self, n=1):
        pass

def removal(drop, hit):  # what drop_lines / drop_sentences yield (edits, removal) and return (document left)
    out = []
    for doc in hit:
        steps = drop(doc)
        try:
            while True:
                tagged = next(steps)
                out.append(repr((tagged.tag, tagged.value)))
        except StopIteration as stop:
            out.append(stop.value.text if stop.value is not None else None)
    return out

line_docs = [Document(f"d{i}", t, "web") for i, t in enumerate(hit_lines)]
sentence_docs = [Document(f"d{i}", t, "web") for i, t in enumerate(hit_sentences)]
timed(f"removal: drop_lines ({len(hit_lines)} docs)",
      lambda: removal(lambda d: drop_lines(d, line_drop, lines, Counter()), line_docs))
timed(f"removal: drop_sentences ({len(hit_sentences)} docs)",
      lambda: removal(lambda d: drop_sentences(d, sentence_drop, sentences, Counter()), sentence_docs))
print(json.dumps({"timings": timings, "outputs": outputs.hexdigest()[:16], "where": exact.__file__}))
"""


# ``--build``: a normalize + dedup build in this process (the in-process DirectRunner, one worker), as
# bench/build_profile.py --plain runs it: a one-document build twice (imports, graph, every fused stage once),
# then the corpus; the CPU time of the difference is the per-document cost. corpusforge is imported before
# bench/ goes on sys.path, so PYTHONPATH decides the tree.
_BUILD = r"""
import json, os, sys
import corpusforge.cli.main
corpus, one, workdir, root = sys.argv[1:5]
sys.path.append(root)
from bench.build import output_digest
from bench.build_profile import _LAST_CPU, build_args, run_build
stages = ["normalize", "dedup"]
run_build(build_args(one, os.path.join(workdir, "run-1"), stages))
run_build(build_args(one, os.path.join(workdir, "run-1"), stages))
fixed = _LAST_CPU[0]
run = os.path.join(workdir, "run-corpus")
run_build(build_args(corpus, run, stages))
print(json.dumps({"cpu": _LAST_CPU[0] - fixed, "outputs": output_digest(run),
                  "where": corpusforge.pipeline.__file__}))
"""


# ``--instructions``: everything prepared natively (imports, records, drops, documents), then one step (or none).
_COUNT = r"""
import collections, json, sys
texts, step = json.load(open(sys.argv[1])), sys.argv[2]
from corpusforge.pipeline.dedup.boilerplate import line_records, sentence_keys_after_lines
from corpusforge.pipeline.dedup.config import LineDedupConfig, SentenceDedupConfig
from corpusforge.pipeline.dedup.lines import KeysByShard, drop_lines, shard_drops
from corpusforge.pipeline.dedup.sentences import drop_sentences
from corpusforge.pipeline.dedup.text import survivor_rank
from corpusforge.pipeline.document import Document

lines, sentences = LineDedupConfig(), SentenceDedupConfig()
records = [line_records(t, None, lines.min_line_chars, sentences.min_sentence_chars) for t in texts]
nodes = [survivor_rank(f"d{i:08d}", {}, "quality_score") for i in range(len(texts))]
line_packs, sentence_packs = KeysByShard(), KeysByShard()
line_packs.start_bundle(); sentence_packs.start_bundle()
for rec, node in zip(records, nodes):
    line_packs.add(list({r[0] for r in rec if r[0] is not None}), node)
    sentence_packs.add(list(set(sentence_keys_after_lines(rec, set(), lines.min_words))), node)
line_drops, sentence_drops = collections.defaultdict(set), collections.defaultdict(set)
line_packs, sentence_packs = line_packs.packs(), sentence_packs.packs()
for shard, pack in line_packs:
    for doc_id, key in shard_drops(lines.max_occurrences)((shard, [pack])):
        line_drops[doc_id].add(key)
for shard, pack in sentence_packs:
    for doc_id, key in shard_drops(sentences.max_occurrences, "boilerplate_sentences")((shard, [pack])):
        sentence_drops[doc_id].add(key)
docs = [Document(node[2], t, "web") for node, t in zip(nodes, texts)]

class Counter:
    def inc(self, n=1):
        pass

def removal(doc):  # what _RemoveFn does with a document's drops (every edit and removal yielded)
    steps = []
    if line_drops[doc.id]:
        gen = drop_lines(doc, line_drops[doc.id], lines, Counter())
        doc = yield_all(gen, steps)
    if doc is not None and sentence_drops[doc.id]:
        doc = yield_all(drop_sentences(doc, sentence_drops[doc.id], sentences, Counter()), steps)
    return steps

def yield_all(gen, steps):
    try:
        while True:
            steps.append(next(gen))
    except StopIteration as stop:
        return stop.value

if step == "line_records":
    [line_records(t, None, lines.min_line_chars, sentences.min_sentence_chars) for t in texts]
elif step == "shard_drops":
    for packs, config, counter in ((line_packs, lines, "boilerplate_lines"),
                                   (sentence_packs, sentences, "boilerplate_sentences")):
        for shard, pack in packs:
            list(shard_drops(config.max_occurrences, counter)((shard, [pack])))
elif step == "removal":
    [removal(doc) for doc in docs]
"""
_STEPS = ["line_records", "shard_drops", "removal"]


def count_instructions(args, trees: dict, workdir: str) -> None:
    """Instructions per document of each lines + sentences step (``_COUNT``), per tree."""
    import re

    texts = corpus_texts(args.docs)
    corpus = os.path.join(workdir, f"distinct-{args.docs}.json")
    with open(corpus, "w") as f:
        json.dump(texts, f)
    counts: dict[str, dict[str, int]] = {name: {} for name in trees}
    for name, env in trees.items():
        # one native run first: it writes the tree's .pyc files, which the first counted run would pay for alone
        subprocess.run([sys.executable, "-c", _COUNT, corpus, "none"], env=env, cwd=workdir, check=True)
        for step in ["none", *_STEPS]:
            done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                                   sys.executable, "-c", _COUNT, corpus, step], capture_output=True, text=True,
                                  env={**env, "PYTHONHASHSEED": "0"}, cwd=workdir)
            found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
            if done.returncode or not found:
                raise SystemExit(f"cachegrind run failed ({name}, {step}):\n{done.stderr[-2000:]}")
            counts[name][step] = int(found.group(1).replace(",", ""))
    print(f"{args.docs:,} distinct docs: instructions per document (valgrind --tool=cachegrind), a step's run minus "
          f"a run that only prepares")
    print(f"{'step':<16}" + "".join(f"{name[:24]:>26}" for name in trees) + ("   ratio" if args.against else ""))
    totals = {name: 0.0 for name in trees}
    for step in _STEPS:
        per_doc = {name: (counts[name][step] - counts[name]["none"]) / args.docs for name in trees}
        for name in trees:
            totals[name] += per_doc[name]
        ratio = f"{per_doc[args.against] / per_doc['this tree']:>7.2f}x" if args.against else ""
        print(f"{step:<16}" + "".join(f"{per_doc[name] / 1000:>22.1f} K  " for name in trees) + ratio)
    ratio = f"{totals[args.against] / totals['this tree']:>7.2f}x" if args.against else ""
    print(f"{'sum':<16}" + "".join(f"{totals[name] / 1000:>22.1f} K  " for name in trees) + ratio, flush=True)


def time_builds(args, trees: dict, workdir: str) -> None:
    """Per-document CPU of a normalize + dedup build of ``args.build`` documents, per tree, alternated."""
    from bench.build import write_corpus

    corpus, one = os.path.join(workdir, f"corpus-{args.build}"), os.path.join(workdir, "corpus-1")
    write_corpus(corpus, args.build, kind="distinct")
    write_corpus(one, 1, kind="distinct", files=1)
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, env in trees.items():
            out = os.path.join(workdir, f"build-{len(runs[name])}-{name.replace(' ', '-')}")
            done = subprocess.run([sys.executable, "-c", _BUILD, corpus, one, out, ROOT], env=env, cwd=workdir,
                                  check=True, capture_output=True, text=True)
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"normalize + dedup build of {args.build:,} distinct docs, in-process DirectRunner, one worker: CPU us/doc "
          f"beyond a one-document build (median of {args.rounds} rounds, range)")
    medians = {}
    for name in trees:
        per_doc = [1e6 * r["cpu"] / args.build for r in runs[name]]
        medians[name] = statistics.median(per_doc)
        print(f"  {name:<24} {medians[name]:>8.0f} ({min(per_doc):.0f}-{max(per_doc):.0f}) = "
              f"{1e6 / medians[name]:.0f} docs per CPU-second; outputs "
              f"{', '.join(sorted({r['outputs'] for r in runs[name]}))}  (corpusforge from "
              f"{runs[name][0]['where'].rsplit('/pipeline/', 1)[0]})")
    if args.against:
        print(f"  ratio {medians[args.against] / medians['this tree']:.2f}x")
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)


def corpus_texts(docs: int, seed: int = 0) -> list[str]:
    """The texts of bench/build.py's ``distinct`` corpus (as ``write_corpus`` draws them)."""
    from bench.build import CORPORA

    texts = CORPORA["distinct"](random.Random(seed), 1)
    return [next(texts) for _ in range(docs)]


def package_dir(ref: str, workdir: str) -> str:
    if os.path.isdir(ref):
        return ref
    from bench.build_profile import package_of_commit

    return package_of_commit(ref, workdir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3, help="Fresh processes per tree (alternated).")
    parser.add_argument("--reps", type=int, default=3, help="Runs of each function per process (the fastest counts).")
    parser.add_argument("--against", default=None, metavar="COMMIT_OR_DIR")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--instructions", action="store_true",
                        help="Instead: instructions per document of the lines + sentences steps, under cachegrind.")
    parser.add_argument("--build", type=int, default=0, metavar="N",
                        help="Instead: CPU per document of a whole normalize + dedup build of N documents.")
    args = parser.parse_args()
    from bench.workdirs import temporary_workdir

    workdir = os.path.abspath(args.workdir or temporary_workdir("cf-bench-dedup-cost-"))
    os.makedirs(workdir, exist_ok=True)
    trees = {"this tree": dict(os.environ)}
    if args.against:
        trees[args.against] = {**os.environ, "PYTHONPATH": package_dir(args.against, workdir)}
    if args.build:
        time_builds(args, trees, workdir)
        return
    if args.instructions:
        count_instructions(args, trees, workdir)
        return
    texts = corpus_texts(args.docs)
    corpus = os.path.join(workdir, f"distinct-{args.docs}.json")
    with open(corpus, "w") as f:
        json.dump(texts, f)
    # Run outside the repository, so that PYTHONPATH (not the working directory) decides which tree is imported.
    size = sum(len(t.encode()) for t in texts) / len(texts)
    print(f"{args.docs:,} distinct docs (~{size / 1000:.1f} KB); {args.rounds} rounds; CPU us/doc "
          f"(median of the rounds, range); {args.reps} reps each; load average {os.getloadavg()[0]:.1f}", flush=True)
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, env in trees.items():
            done = subprocess.run([sys.executable, "-c", _MEASURE, corpus, str(args.reps)], env=env, cwd=workdir, check=True,
                                  capture_output=True, text=True)
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    names = list(runs[next(iter(trees))][0]["timings"])
    header = "".join(f"{name[:24]:>26}" for name in trees)
    print(f"{'function':<52}{header}" + ("   ratio" if args.against else ""))
    totals = {name: 0.0 for name in trees}
    for fn in names:
        cells, medians = "", {}
        for name in trees:
            values = [r["timings"].get(fn, float("nan")) for r in runs[name]]
            medians[name] = statistics.median(values)
            totals[name] += medians[name]
            cells += f"{medians[name]:>10.1f} ({min(values):.0f}-{max(values):.0f})".rjust(26)
        ratio = f"{medians[args.against] / medians['this tree']:>7.2f}x" if args.against and medians['this tree'] else ""
        print(f"{fn:<52}{cells} {ratio}")
    cells = "".join(f"{totals[name]:>26.1f}" for name in trees)
    ratio = f"{totals[args.against] / totals['this tree']:>7.2f}x" if args.against else ""
    print(f"{'sum':<52}{cells} {ratio}")
    for name in trees:
        digests = sorted({r["outputs"] for r in runs[name]})
        print(f"outputs ({name}): {', '.join(digests)}  (corpusforge from {runs[name][0]['where'].rsplit('/pipeline/', 1)[0]})")
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
