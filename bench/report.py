"""Benchmark ``corpusforge report`` on a synthetic large run: how long gathering and rendering take, and how
large the page is.

    .venv/bin/python bench/report.py --kept 100000 --removed 50000

The run is written once into a temporary directory (or ``--run-dir``): ``--kept`` clean documents of ~1 KB
from three sources, ``--removed`` removed ones (quality removals with typed rule values in their details,
near-duplicates naming a kept survivor, a few 200,000-character documents among them), stats.json and a
manifest with the default quality thresholds. Then ``collect`` (reading the shards) and ``render`` (figures
and templates) are timed separately, CPU and wall, best of ``--rounds``; the first collect also pays for
loading Presidio (the scrubbing of every text shown), reported apart. The load average is printed next to
the times: on a shared machine compare only figures from one run.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import tempfile
import time

from corpusforge.core.config_loader import public_dict
from corpusforge.pipeline.document import DOCUMENT_SCHEMA, REMOVED_SCHEMA
from corpusforge.pipeline.quality.config import QualityConfig
from corpusforge.pipeline.shards import write_arrow_file

SOURCES = ("web", "books", "code")
WORDS = ("the river bank holds a quiet light over stones while people walk and talk about the weather "
         "and the long summer evenings in small towns near the coast").split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def write_run(root: pathlib.Path, kept: int, removed: int, shards: int = 8) -> None:
    rng = random.Random(0)
    (root / "clean").mkdir(parents=True)
    (root / "removed").mkdir()
    docs = [{"id": f"{SOURCES[i % 3]}/doc-{i}", "text": _text(rng, 180), "source": SOURCES[i % 3], "metadata": "{}",
             "annotations": json.dumps({"lang": "en", "lang_score": round(rng.uniform(0.65, 1), 4)})}
            for i in range(kept)]
    for s in range(shards):
        write_arrow_file(str(root / "clean" / f"part-{s:05d}-of-{shards:05d}.arrow"), DOCUMENT_SCHEMA, docs[s::shards])
    rows = []
    for i in range(removed):
        source = SOURCES[i % 3]
        if i % 2:  # a near duplicate of a kept document (every 1000th one 200,000 characters long)
            survivor = docs[rng.randrange(kept)]
            text = survivor["text"] * (180 if i % 1000 == 1 else 1) + " Copied."
            details = {"survivor_id": survivor["id"], "cluster_size": 2, "similarity": 0.9}
            stage, reason = "dedup", "minhash_near_duplicate"
        else:
            words = rng.randrange(1, 5)
            text = _text(rng, words)
            details = {"quality": {"gopher": {"n_words": words, "mean_word_length": 4.2}}}
            stage, reason = "quality", "gopher_short_doc"
        rows.append({"id": f"{source}/rem-{i}", "source": source, "stage": stage, "reason": reason,
                     "details": json.dumps(details), "text": text,
                     "annotations": json.dumps({"lang": "en", "lang_score": 0.9})})
    for s in range(shards):
        write_arrow_file(str(root / "removed" / f"part-{s:05d}-of-{shards:05d}.arrow"), REMOVED_SCHEMA, rows[s::shards])
    quality = sum(1 for r in rows if r["stage"] == "quality")
    total = kept + removed
    stats = {
        "accounting": {"input": total, "kept": kept, "removed": removed, "rejected": 0, "balanced": True},
        "funnel": [{"stage": "read", "documents": total, "chars": 0}, {"stage": "quality", "documents": total - quality, "chars": 0},
                   {"stage": "dedup", "documents": kept, "chars": 0}],
        "removed": {"total": removed, "by_stage": {
            "quality": {"total": quality, "chars": 0, "reasons": {"gopher_short_doc": quality}},
            "dedup": {"total": removed - quality, "chars": 0, "reasons": {"minhash_near_duplicate": removed - quality}}}},
        "rejected": {"total": 0, "reasons": {}, "stage_errors": {}},
        "edits": {}, "histograms": {}, "languages": {"en": kept}, "timing": {},
        "sources": [{"stage": stage, "by": {s: {"documents": n // 3, "bytes": 0} for s in SOURCES}}
                    for stage, n in (("read", total), ("quality", total - quality), ("dedup", kept))],
    }
    (root / "stats.json").write_text(json.dumps(stats))
    (root / "manifest.json").write_text(json.dumps({"stages": ["quality", "dedup"],
                                                    "config": {"quality": public_dict(QualityConfig())}}))


def _timed(function):
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kept", type=int, default=100_000)
    parser.add_argument("--removed", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--run-dir", default="", help="Write (or reuse) the synthetic run here; default: a temporary directory.")
    args = parser.parse_args()

    from corpusforge.pipeline.report.collect import collect
    from corpusforge.pipeline.report.page import render

    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(args.run_dir or tmp) / "run"
        if not (root / "stats.json").exists():
            _, wall, _ = _timed(lambda: write_run(root, args.kept, args.removed))
            print(f"wrote {args.kept:,} kept + {args.removed:,} removed documents in {wall:.1f} s")
        size = sum(f.stat().st_size for f in root.rglob("*.arrow"))
        print(f"run: {size / 1e6:,.0f} MB of shards; load average {os.getloadavg()[0]:.1f} (2 cores shared)")
        _, first_wall, first_cpu = _timed(lambda: collect(str(root)))
        collects, renders = [], []
        for _ in range(args.rounds):
            data, wall, cpu = _timed(lambda: collect(str(root)))
            collects.append((wall, cpu))
            page, wall, cpu = _timed(lambda: render(data))
            renders.append((wall, cpu))
        collect_wall, collect_cpu = min(collects, key=lambda t: t[1])
        render_wall, render_cpu = min(renders, key=lambda t: t[1])
        print(f"collect (first, Presidio loading included): {first_cpu:.1f} s CPU, {first_wall:.1f} s wall")
        print(f"collect: {collect_cpu:.1f} s CPU, {collect_wall:.1f} s wall (best of {args.rounds})")
        print(f"render:  {render_cpu:.1f} s CPU, {render_wall:.1f} s wall (best of {args.rounds})")
        pairs = page.count('<div class="pair">')
        print(f"page: {len(page.encode('utf-8')) / 1e3:,.0f} kB, {page.count('<img ')} figures, {pairs} near-duplicate "
              f"pairs; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
