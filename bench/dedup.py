"""Benchmark the dedup stage: near-duplicate quality against datasketch and datatrove, signature speed,
and end-to-end cost at growing corpus sizes. See docs/dedup.md for figures and how defaults were chosen.

    .venv/bin/python bench/dedup.py quality --docs 10000      # P/R: threshold sweep, stage, peers
    .venv/bin/python bench/dedup.py signatures --docs 5000    # docs/s vs datasketch's per-document loop
    .venv/bin/python bench/dedup.py scale --sizes 10000 100000
    .venv/bin/python bench/dedup.py components --edges 100000 1000000   # gathered vs distributed rounds
    .venv/bin/python bench/dedup.py all

The corpus (bench/dedup_data/corpus.py) is real text (Python's documentation, licences) with labelled
near-duplicate clusters and hard negatives. Quality is pair-level: two documents form a predicted pair
when a method puts them in one cluster (connected components of its links), a true pair when they come
from the same base document. datatrove is needed for its column only (pip install datatrove).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from math import comb

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

from dedup_data.corpus import Doc, build, pages, synthetic_bases, true_jaccard  # noqa: E402
from corpusforge.pipeline.dedup.components import assign_survivors, union_find_components  # noqa: E402
from corpusforge.pipeline.dedup.config import DedupConfig, NearDedupConfig  # noqa: E402
from corpusforge.pipeline.dedup.exact import text_digest  # noqa: E402
from corpusforge.pipeline.dedup.minhash import MinHasher, Shingler, band_hashes, lsh_params  # noqa: E402
from corpusforge.pipeline.dedup.near import bucket_pairs, survivor_priority  # noqa: E402

# ------------------------------------------------------------------------------------------- scoring


def clusters_from_links(n: int, links) -> list[int]:
    """A cluster label per document from (i, j) links (connected components)."""
    comp = union_find_components(links, nodes=range(n))
    return [comp[i] for i in range(n)]


def score(docs: list[Doc], labels: list[int]) -> dict:
    """Pair-level precision and recall of predicted cluster labels against the true clusters."""
    truth = [d.cluster if d.cluster >= 0 else -(i + 1) for i, d in enumerate(docs)]
    pred_sizes = Counter(labels)
    true_sizes = Counter(truth)
    both = Counter(zip(labels, truth))
    tp = sum(comb(c, 2) for c in both.values())
    pred_pairs = sum(comb(c, 2) for c in pred_sizes.values())
    true_pairs = sum(comb(c, 2) for c in true_sizes.values())
    # recall of base-variant pairs by the variant's true Jaccard to its base
    base_of = {d.cluster: i for i, d in enumerate(docs) if d.role == "base"}
    buckets = defaultdict(lambda: [0, 0])
    for i, d in enumerate(docs):
        if d.role == "variant":
            b = min(int(d.jaccard_to_base * 10) / 10, 0.9)
            buckets[b][1] += 1
            buckets[b][0] += labels[i] == labels[base_of[d.cluster]]
    # hard-negative pairs merged
    groups = defaultdict(list)
    for i, d in enumerate(docs):
        if d.role == "negative":
            groups[d.group].append(i)
    negative_pairs = sum(comb(len(g), 2) for g in groups.values())
    negative_merged = sum(comb(c, 2) for g in groups.values() for c in Counter(labels[i] for i in g).values())
    return {
        "precision": tp / pred_pairs if pred_pairs else 1.0,
        "recall": tp / true_pairs if true_pairs else 1.0,
        "pred_pairs": pred_pairs, "true_pairs": true_pairs, "tp": tp,
        "recall_by_jaccard": {f"{b:.1f}": round(hit / total, 4) for b, (hit, total) in sorted(buckets.items())},
        "negative_pairs_merged": f"{negative_merged}/{negative_pairs}",
    }


def false_pairs_sample(docs: list[Doc], labels: list[int], limit: int = 300) -> dict:
    """How many predicted-but-unlabelled pairs are near-duplicates after all (true Jaccard >= 0.5)."""
    truth = [d.cluster if d.cluster >= 0 else -(i + 1) for i, d in enumerate(docs)]
    members = defaultdict(list)
    for i, label in enumerate(labels):
        members[label].append(i)
    pairs = [(a, b) for m in members.values() if len(m) > 1 for k, a in enumerate(m) for b in m[k + 1:]
             if truth[a] != truth[b]]
    random.Random(0).shuffle(pairs)
    sample = pairs[:limit]
    js = [true_jaccard(docs[a].text, docs[b].text) for a, b in sample]
    return {"false_pairs": len(pairs), "sampled": len(sample),
            "sampled_true_jaccard_ge_0.5": sum(j >= 0.5 for j in js),
            "sampled_max_jaccard": round(max(js), 3) if js else None}


# ------------------------------------------------------------------------------------------- methods


def ours_in_memory(docs: list[Doc], sigs: np.ndarray, candidate: float, verify: float | None,
                   num_perm: int = 128, max_bucket_pairs: int = 50, split: bool = True) -> list[int]:
    """The stage's algorithm (exact groups + LSH buckets -> candidate pairs -> verification -> components
    split so that every removed document is verified similar to its survivor) run in memory with the
    stage's own functions, for the threshold sweep. ``split=False``: plain connected components of the
    verified pairs (chains merged), the stage's behaviour before the split."""
    bands, rows = lsh_params(candidate, num_perm)
    links = []
    by_digest = defaultdict(list)
    for i, d in enumerate(docs):
        by_digest[text_digest(d.text)].append(i)
    for g in by_digest.values():  # exact dedup first: the smallest id survives (no scores here)
        g.sort(key=lambda i: docs[i].id)
    links += [(g[0], j) for g in by_digest.values() for j in g[1:]]
    exact_survivor = {g[0] for g in by_digest.values()}
    keys = band_hashes(sigs, bands, rows)
    buckets = defaultdict(list)
    for i, row in enumerate(keys.tolist()):
        for band, key in enumerate(row):
            buckets[(band, key)].append(i)
    pairs = set()
    make_pairs = bucket_pairs(max_bucket_pairs)
    for key, members in buckets.items():
        if len(members) > 1:
            pairs.update(make_pairs((key, members)))
    pairs = {(a, b) for a, b in pairs if a in exact_survivor and b in exact_survivor}
    if verify is None:
        links += pairs
    elif pairs:
        a, b = np.array(sorted(pairs)).T
        sim = (sigs[a] == sigs[b]).mean(axis=1)
        if split:  # as the stage: each document goes to the first kept document it is verified similar to
            node = lambda i: (1, 0.0, docs[i].id, int(i))  # noqa: E731  (the stage's node: no scores here)
            verified = [(node(x), node(y), s) for x, y, s in zip(a, b, sim) if s >= verify]
            links += [(m[3], c[3]) for m, (c, _) in assign_survivors(verified, survivor_priority).items()]
        else:  # connected components of the verified pairs (the stage before splitting)
            links += [(int(x), int(y)) for x, y, s in zip(a, b, sim) if s >= verify]
    return clusters_from_links(len(docs), links)


def ours_beam(docs: list[Doc], config: DedupConfig) -> tuple[list[int], float]:
    """The real Dedup stage on DirectRunner; clusters from the removed records' survivor ids."""
    import apache_beam as beam

    from corpusforge.pipeline.dedup import Dedup
    from corpusforge.pipeline.document import Document
    from corpusforge.pipeline.spill import SpillText
    from corpusforge.pipeline.stage import StageContext

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        with beam.Pipeline(runner="DirectRunner") as p:
            out = (p | beam.Create([Document(d.id, d.text, "bench") for d in docs]) | Dedup(config))
            _ = (out.removed | beam.Map(lambda r: json.dumps([r.doc.id, r.details.get("survivor_id")]))
                 | beam.io.WriteToText(os.path.join(tmp, "removed")))
        elapsed = time.perf_counter() - start
        removed = [json.loads(line) for path in sorted(pathlib.Path(tmp).glob("removed*"))
                   for line in path.read_text().splitlines()]
    index = {d.id: i for i, d in enumerate(docs)}
    links = [(index[a], index[b]) for a, b in removed if b is not None]
    return clusters_from_links(len(docs), links), elapsed


def datasketch_lsh(docs: list[Doc], sigs_sha1: np.ndarray) -> list[int]:
    """datasketch's MinHashLSH with its defaults (threshold 0.9, 128 permutations) over the same 5-word
    shingles; the MinHash objects are built from signatures identical to ``MinHash.update_batch``'s."""
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH()
    mins = [MinHash(hashvalues=s, scheme="affine32") for s in sigs_sha1]
    with lsh.insertion_session() as session:
        for i, m in enumerate(mins):
            session.insert(i, m)
    links = [(i, j) for i, m in enumerate(mins) for j in lsh.query(m) if j != i]
    return clusters_from_links(len(docs), links)


def datatrove_minhash(docs: list[Doc], workdir: str) -> list[int]:
    """datatrove's MinHash pipeline (signatures, buckets, clusters; its defaults: 5-grams, 14 buckets x 8
    hashes) with the documents given as one task's input; clusters read from the saved cluster ids."""
    import struct

    from datatrove.data import Document as TroveDocument
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster

    import xxhash
    from datatrove.utils.hashes import xxhash as trove_xxhash

    if int(xxhash.VERSION.split(".")[0]) >= 4:  # xxhash 4 refuses str; 3.x hashed its UTF-8 bytes
        trove_xxhash.xxhash32 = lambda data: xxhash.xxh32_intdigest(data.encode() if isinstance(data, str) else data)
        trove_xxhash.xxhash64 = lambda data: xxhash.xxh64_intdigest(data.encode() if isinstance(data, str) else data)
    config = MinhashConfig()
    logs = os.path.join(workdir, "logs")
    data = [TroveDocument(text=d.text, id=d.id) for d in docs]
    LocalPipelineExecutor([data, MinhashDedupSignature(os.path.join(workdir, "sigs"), config=config)],
                          tasks=1, logging_dir=f"{logs}/1").run()
    LocalPipelineExecutor([MinhashDedupBuckets(os.path.join(workdir, "sigs"), os.path.join(workdir, "buckets"),
                                               config=config)],
                          tasks=config.num_buckets, workers=1, logging_dir=f"{logs}/2").run()
    LocalPipelineExecutor([MinhashDedupCluster(os.path.join(workdir, "buckets"), os.path.join(workdir, "remove"),
                                               config=config, save_cluster_id=True)],
                          tasks=1, logging_dir=f"{logs}/3").run()
    labels = list(range(len(docs), 2 * len(docs)))  # singletons: unique labels
    path = os.path.join(workdir, "remove", "000000.clusters")
    if os.path.exists(path):
        raw = open(path, "rb").read()
        for doc_index, cluster in struct.iter_unpack("<II", raw):
            labels[doc_index] = cluster
    return labels


# ---------------------------------------------------------------------------------------------- parts


def signatures(texts: list[str], num_perm: int, hash_name: str, batch: int = 512) -> np.ndarray:
    hasher = MinHasher(num_perm, 1, Shingler(5, "word", hash_name))
    return np.concatenate([hasher.signatures(texts[i:i + batch]) for i in range(0, len(texts), batch)])


def bench_quality(n_docs: int, skip_beam: bool, skip_datatrove: bool) -> dict:
    t = time.perf_counter()
    docs = build(n_docs)
    roles = Counter(d.role for d in docs)
    print(f"corpus: {len(docs)} documents ({dict(roles)}), built in {time.perf_counter() - t:.0f} s")
    js = sorted(d.jaccard_to_base for d in docs if d.role == "variant")
    print(f"variant Jaccard to base: min {js[0]:.2f}, deciles {[round(q, 2) for q in np.quantile(js, np.linspace(.1, .9, 9))]}")
    texts = [d.text for d in docs]
    results: dict = {"corpus": {"documents": len(docs), **roles}}
    sweep = {}
    for num_perm in (128, 256):
        sigs = signatures(texts, num_perm, "fast")
        for candidate in (0.3, 0.35, 0.4, 0.45, 0.5):
            for verify in (None, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8):
                if verify is not None and verify < candidate:
                    continue
                s = score(docs, ours_in_memory(docs, sigs, candidate, verify, num_perm))
                key = f"perm={num_perm} candidate={candidate} verify={verify}"
                sweep[key] = s
                print(f"  {key:42s} P={s['precision']:.4f} R={s['recall']:.4f} "
                      f"negatives merged {s['negative_pairs_merged']}")
    results["sweep"] = sweep
    defaults = NearDedupConfig()
    print(f"defaults: candidate {defaults.candidate_threshold} (bands x rows "
          f"{lsh_params(defaults.candidate_threshold, defaults.num_perm)}), verify {defaults.verify_threshold}, "
          f"num_perm {defaults.num_perm}")
    peers = {}
    in_memory = score(docs, ours_in_memory(docs, signatures(texts, defaults.num_perm, defaults.hash),
                                           defaults.candidate_threshold, defaults.verify_threshold, defaults.num_perm,
                                           defaults.max_bucket_pairs))
    print(f"in-memory run of the stage's algorithm at the defaults: P={in_memory['precision']:.4f} "
          f"R={in_memory['recall']:.4f}")
    results["defaults_in_memory"] = in_memory
    merged = score(docs, ours_in_memory(docs, signatures(texts, defaults.num_perm, defaults.hash),
                                        defaults.candidate_threshold, defaults.verify_threshold, defaults.num_perm,
                                        defaults.max_bucket_pairs, split=False))
    print(f"the same with chained components merged (no split, the stage before): P={merged['precision']:.4f} "
          f"R={merged['recall']:.4f}")
    results["defaults_in_memory_components_merged"] = merged
    if not skip_beam:
        config = DedupConfig()
        config.lines.enabled = config.sentences.enabled = False  # pair quality of document-level dedup only
        labels, elapsed = ours_beam(docs, config)
        peers["corpusforge Dedup (DirectRunner, defaults)"] = (labels, elapsed)
    sigs_sha1 = signatures(texts, 128, "sha1")
    t = time.perf_counter()
    labels = datasketch_lsh(docs, sigs_sha1)
    peers["datasketch MinHashLSH (defaults: threshold 0.9)"] = (labels, time.perf_counter() - t)
    if not skip_datatrove:
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            labels = datatrove_minhash(docs, tmp)
            peers["datatrove MinHash pipeline (defaults: 14 x 8)"] = (labels, time.perf_counter() - t)
    results["methods"] = {}
    for name, (labels, elapsed) in peers.items():
        s = score(docs, labels)
        s["false_pair_check"] = false_pairs_sample(docs, labels)
        s["seconds"] = round(elapsed, 1)
        results["methods"][name] = s
        print(f"{name:50s} P={s['precision']:.4f} R={s['recall']:.4f} ({elapsed:.0f} s) "
              f"negatives merged {s['negative_pairs_merged']}\n    recall by Jaccard {s['recall_by_jaccard']}\n"
              f"    false pairs {s['false_pair_check']}")
    return results


def signature_methods(texts: list[str], num_perm: int) -> dict:
    """Signatures of ``texts`` (word 5-gram shingles) four ways, each a callable returning a (docs, num_perm)
    array: datasketch's per-document ``update_batch`` loop (its slowest path) and ``MinHash.bulk`` (its fastest),
    both SHA-1 shingle hashes; corpusforge's ``MinHasher`` with ``hash: sha1`` (the same family: bit-identical)
    and ``hash: fast``. Also used by bench/build_peer.py."""
    from datasketch import MinHash

    shingler = Shingler(5, "word", "sha1")

    def loop():
        out = np.empty((len(texts), num_perm), dtype=np.uint32)
        for i, t in enumerate(texts):
            m = MinHash(num_perm=num_perm)
            m.update_batch(shingler.shingle_bytes(t))
            out[i] = m.hashvalues
        return out

    def bulk():
        return np.stack([m.hashvalues for m in
                         MinHash.bulk([shingler.shingle_bytes(t) for t in texts], num_perm=num_perm)])

    return {"datasketch update_batch loop": loop, "datasketch MinHash.bulk": bulk,
            "corpusforge sha1": lambda: signatures(texts, num_perm, "sha1"),
            "corpusforge fast": lambda: signatures(texts, num_perm, "fast")}


def bench_signatures(n_docs: int, rounds: int) -> dict:
    from datasketch import MinHash

    docs = build(min(n_docs, 3000))
    rng = random.Random(1)
    texts = [d.text for d in docs] + ["\n\n".join(p) for p in synthetic_bases(pages(), max(0, n_docs - len(docs)), rng)]
    texts = texts[:n_docs]
    chars = sum(map(len, texts)) / len(texts)
    print(f"{len(texts)} documents, {chars:.0f} characters on average, one process")

    result = {}
    for num_perm in (128, 256):
        timings = defaultdict(list)
        outputs = {}
        for _ in range(rounds):  # interleaved, best of rounds: contention hits every method alike
            for name, fn in signature_methods(texts, num_perm).items():
                t = time.perf_counter()
                outputs[name] = fn()
                timings[name].append(time.perf_counter() - t)
        identical_sha1 = bool((outputs["corpusforge sha1"] == outputs["datasketch update_batch loop"]).all()
                              and (outputs["datasketch MinHash.bulk"] == outputs["datasketch update_batch loop"]).all())
        fast = Shingler(5, "word", "fast")
        sample = range(0, len(texts), max(1, len(texts) // 300))
        identical_fast = True
        for i in sample:
            m = MinHash(num_perm=num_perm, hashfunc=fast.hashfunc)
            m.update_batch(fast.shingle_bytes(texts[i]))
            identical_fast &= m.hashvalues.tolist() == outputs["corpusforge fast"][i].tolist()
        base = min(timings["datasketch update_batch loop"])
        print(f"  num_perm={num_perm}")
        for name, ts in timings.items():
            best = min(ts)
            result[f"{name} (num_perm={num_perm})"] = {"docs_per_s": round(len(texts) / best),
                                                       "vs_loop": round(base / best, 2)}
            print(f"    {name:32s} {len(texts) / best:8.0f} docs/s   x{base / best:.2f} vs the update_batch loop")
        print(f"    identical signatures: sha1 mode vs update_batch loop (all docs): {identical_sha1}; "
              f"fast mode vs MinHash(hashfunc=Shingler.hashfunc) ({len(sample)} docs): {identical_fast}")
        result[f"identical_sha1_all (num_perm={num_perm})"] = identical_sha1
        result[f"identical_fast_sample (num_perm={num_perm})"] = identical_fast
    return result


def write_corpus(path: str, n_docs: int) -> None:
    """A labelled 10k corpus topped up with mixed-paragraph filler to ``n_docs``, as JSONL."""
    rng = random.Random(2)
    docs = build(min(n_docs, 10_000))
    page_list = pages()
    with open(path, "w") as f:
        for d in docs:
            f.write(json.dumps({"id": d.id, "text": d.text}) + "\n")
        for k in range(n_docs - len(docs)):
            f.write(json.dumps({"id": f"fill{k:08d}", "text": "\n\n".join(synthetic_bases(page_list, 1, rng)[0])}) + "\n")


def run_stage(path: str, runner: str, spill: bool = True) -> None:
    """(child process) Read JSONL, run the Dedup stage with defaults, print counts as JSON. With ``spill``
    the texts go to spill files first and near-dedup's signatures and band records wait there, as in a build
    (corpusforge.pipeline.spill), so shuffles carry references."""
    import apache_beam as beam
    import logging

    from corpusforge.core.beam_options import runs_on_direct_runner
    from corpusforge.pipeline.dedup import Dedup
    from corpusforge.pipeline.document import Document
    from corpusforge.pipeline.spill import SpillText
    from corpusforge.pipeline.stage import StageContext

    logging.getLogger().setLevel(logging.ERROR)

    def to_doc(line):
        r = json.loads(line)
        return Document(r["id"], r["text"], "bench")

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        with beam.Pipeline(runner=runner) as p:
            docs = p | beam.io.ReadFromText(path) | beam.Map(to_doc)
            if spill:
                docs = docs | SpillText(os.path.join(tmp, "spill"))
            # As a build constructs it: components gathered on the DirectRunner (dedup.near.components: auto)
            context = StageContext(spill_dir=os.path.join(tmp, "spill") if spill else None,
                                   direct_runner=runs_on_direct_runner({"runner": runner}, runner))
            out = docs | Dedup(DedupConfig(), context)
            kept = out.kept | "Kept" >> beam.Map(lambda d: "kept")
            removed = out.removed | "Reasons" >> beam.Map(lambda r: r.reason)
            _ = ((kept, removed) | beam.Flatten() | beam.combiners.Count.PerElement()
                 | beam.Map(json.dumps) | beam.io.WriteToText(os.path.join(tmp, "counts")))
        seconds = time.perf_counter() - start
        pairs = dict(json.loads(line) for f in sorted(pathlib.Path(tmp).glob("counts*"))
                     for line in f.read_text().splitlines())
    counts = {"kept": pairs.pop("kept", 0), "removed": pairs, "seconds": seconds}
    print(json.dumps(counts))


def bench_scale(sizes: list[int], runner: str, spills: tuple[bool, ...] = (True,)) -> dict:
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, spill in ((n, spill) for n in sizes for spill in spills):
            path = os.path.join(tmp, f"corpus-{n}.jsonl")
            if not os.path.exists(path):
                write_corpus(path, n)
            mb = os.path.getsize(path) / 1e6
            proc = subprocess.Popen([sys.executable, __file__, "_stage", path, "--runner", runner,
                                     *([] if spill else ["--no-spill"])], stdout=subprocess.PIPE, text=True)
            out = proc.stdout.read()
            _, status, usage = os.wait4(proc.pid, 0)
            if status != 0:
                raise RuntimeError(f"stage run on {n} documents failed: {out}")
            counts = json.loads(out.strip().splitlines()[-1])
            rss = usage.ru_maxrss / 1024
            results[f"{n}{'' if spill else '-inline'}"] = {"corpus_mb": round(mb, 1), "spill": spill, "seconds": round(counts["seconds"], 1),
                          "docs_per_s": round(n / counts["seconds"]), "peak_rss_mb": round(rss),
                          "kept": counts["kept"], "removed": counts["removed"]}
            print(f"  {n:>9,} docs ({mb:7.1f} MB JSONL, text {'spilled' if spill else 'in memory'}): "
                  f"{counts['seconds']:7.1f} s, {n / counts['seconds']:6.0f} docs/s, "
                  f"peak RSS {rss:6.0f} MB, kept {counts['kept']:,}, removed {counts['removed']}")
    return results


def edge_memory() -> dict:
    """Memory one edge takes in the connected-components steps (Python objects and pickled)."""
    import pickle
    import tracemalloc

    tracemalloc.start()
    edges = [((1, 0.0, f"doc{i:07d}"), (1, 0.0, f"doc{i + 7:07d}")) for i in range(100_000)]
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    pickled = len(pickle.dumps(edges[0]))
    print(f"  one edge: {current / len(edges):.0f} bytes as Python objects, {pickled} bytes pickled "
          "(ids of 10 characters, no score)")
    return {"bytes_python": round(current / len(edges)), "bytes_pickled": pickled}


def cluster_edges(n_edges: int, seed: int = 0) -> list[tuple]:
    """About ``n_edges`` edges of a near-duplicate-like graph: clusters of 2 to ~200 documents (sizes drawn
    from a power law), each a random tree plus a few extra verified pairs; nodes as near-dedup's ranks."""
    rng = random.Random(seed)
    edges, next_id = [], 0
    while len(edges) < n_edges:
        size = min(200, int(rng.paretovariate(1.2)) + 1)
        nodes = [(1, 0.0, f"doc{next_id + k:09d}") for k in range(size)]
        next_id += size
        rng.shuffle(nodes)
        edges += [(nodes[k], nodes[rng.randrange(k)]) for k in range(1, size)]
        edges += [tuple(rng.sample(nodes, 2)) for _ in range(size // 4)]
    return [(u, v) if u < v else (v, u) for u, v in edges if u != v]


def run_components(mode: str, n_edges: int) -> None:
    """One Beam pipeline on the DirectRunner: ``n_edges`` edges -> components, gathered or by rounds; prints
    the seconds and a digest of the (node, centre) pairs as JSON."""
    import hashlib

    import apache_beam as beam

    from corpusforge.pipeline.dedup.near import ConnectedComponents, GatheredComponents

    edges = cluster_edges(n_edges)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        with beam.Pipeline(runner="DirectRunner") as p:
            components = GatheredComponents() if mode == "single" else ConnectedComponents(max_rounds=10)
            _ = (p | beam.Create(edges, reshuffle=False) | components | beam.Map(json.dumps)
                 | beam.io.WriteToText(os.path.join(tmp, "centres")))
        seconds = time.perf_counter() - start
        lines = sorted(line for f in pathlib.Path(tmp).glob("centres*") for line in f.read_text().splitlines())
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    print(json.dumps({"seconds": seconds, "edges": len(edges), "nodes": len(lines), "digest": digest}))


def bench_components(sizes: list[int]) -> dict:
    """Connected components of the same edges gathered on one worker (union-find) and by ten distributed
    rounds, each in a fresh process on the in-process DirectRunner (back to back): seconds, peak RSS, and
    whether the (node, centre) pairs are identical."""
    results = {}
    for n in sizes:
        for mode in ("single", "distributed"):
            proc = subprocess.Popen([sys.executable, __file__, "_components", mode, str(n)], stdout=subprocess.PIPE,
                                    text=True)
            out = proc.stdout.read()
            _, status, usage = os.wait4(proc.pid, 0)
            if status != 0:
                raise RuntimeError(f"components ({mode}) of {n} edges failed: {out}")
            run = json.loads(out.strip().splitlines()[-1]) | {"peak_rss_mb": round(usage.ru_maxrss / 1024)}
            results[f"{n}-{mode}"] = run
            print(f"  {run['edges']:>9,} edges, {run['nodes']:>9,} nodes not a centre, {mode:<11}: "
                  f"{run['seconds']:6.1f} s, peak RSS {run['peak_rss_mb']:5d} MB, pairs {run['digest']}", flush=True)
        same = results[f"{n}-single"]["digest"] == results[f"{n}-distributed"]["digest"]
        print(f"  {n:,} edges: single {results[f'{n}-distributed']['seconds'] / results[f'{n}-single']['seconds']:.1f}x "
              f"as fast; identical pairs: {same}; load average {os.getloadavg()[0]:.1f}", flush=True)
    return results


def _quiet_logs() -> None:
    import logging

    logging.getLogger().setLevel(logging.ERROR)
    try:
        from loguru import logger  # datatrove's logger

        logger.remove()
        logger.add(sys.stderr, level="ERROR")
    except ImportError:
        pass


def main(argv=None) -> int:
    _quiet_logs()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="part", required=True)
    q = sub.add_parser("quality")
    q.add_argument("--docs", type=int, default=10_000)
    q.add_argument("--skip-beam", action="store_true")
    q.add_argument("--skip-datatrove", action="store_true")
    s = sub.add_parser("signatures")
    s.add_argument("--docs", type=int, default=5_000)
    s.add_argument("--rounds", type=int, default=3)
    c = sub.add_parser("scale")
    c.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    c.add_argument("--runner", default="DirectRunner")
    c.add_argument("--spill", choices=("on", "off", "both"), default="on",
                   help="Spill texts to disk before the stage, as a build does (on), keep them in memory, or both.")
    cc = sub.add_parser("components")
    cc.add_argument("--edges", type=int, nargs="+", default=[100_000])
    a = sub.add_parser("all")
    a.add_argument("--out", default=None, help="Write all results as JSON here.")
    st = sub.add_parser("_stage")
    st.add_argument("path")
    st.add_argument("--runner", default="DirectRunner")
    st.add_argument("--no-spill", action="store_true")
    ce = sub.add_parser("_components")
    ce.add_argument("mode", choices=("single", "distributed"))
    ce.add_argument("edges", type=int)
    args = parser.parse_args(argv)
    if args.part == "_components":
        run_components(args.mode, args.edges)
        return 0
    if args.part == "_stage":
        run_stage(args.path, args.runner, spill=not args.no_spill)
        return 0
    results = {}
    if args.part in ("quality", "all"):
        print("== near-duplicate quality")
        results["quality"] = bench_quality(getattr(args, "docs", 10_000), getattr(args, "skip_beam", False),
                                           getattr(args, "skip_datatrove", False))
    if args.part in ("signatures", "all"):
        print("== signature throughput")
        results["signatures"] = bench_signatures(getattr(args, "docs", 5_000), getattr(args, "rounds", 3))
    if args.part in ("scale", "all"):
        print("== end-to-end stage (defaults) on", getattr(args, "runner", "DirectRunner"))
        results["edge_memory"] = edge_memory()
        spill = getattr(args, "spill", "on")
        results["scale"] = bench_scale(getattr(args, "sizes", [10_000, 100_000]), getattr(args, "runner", "DirectRunner"),
                                       (True, False) if spill == "both" else (spill == "on",))
    if args.part in ("components", "all"):
        print("== near-dedup connected components: gathered (union-find) vs distributed rounds, DirectRunner")
        results["components"] = bench_components(getattr(args, "edges", [100_000]))
    if getattr(args, "out", None):
        pathlib.Path(args.out).write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
