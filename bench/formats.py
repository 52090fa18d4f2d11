"""Output formats side by side: size on disk, write and read time of one clean shard in each format.

    .venv/bin/python bench/formats.py [--docs 20000] [--repeat 3]

Writes the same generated documents (DOCUMENT_SCHEMA rows, ~2 kB of text each) with
``corpusforge.core.shard_files.write_shard`` as Arrow, Parquet (zstd) and JSON Lines (zstd, gzip), then
reads each back whole with ``open_shard`` (batch by batch, ordinary reads: docs/outputs.md), and times a DuckDB aggregate over the shard (Parquet natively, the
others through pyarrow). Prints the best of ``--repeat`` runs and each figure as a ratio to Arrow, measured in
the same process (absolute times depend on the machine and its load; see uptime).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from corpusforge.core.shard_files import ShardFormat, open_shard, write_shard  # noqa: E402
from corpusforge.pipeline.document import DOCUMENT_SCHEMA  # noqa: E402

WORDS = ("the of and to in is was for on that with as by at from river mountain city garden window morning "
         "library language history science music theatre pipeline shard corpus quality filter document").split()
FORMATS = [ShardFormat("arrow"), ShardFormat("parquet"), ShardFormat("jsonl", "zstd"), ShardFormat("jsonl", "gzip")]


def documents(n: int) -> list[dict]:
    rng = random.Random(0)
    rows = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(150, 450)))
        rows.append({"id": f"web/{i:08d}", "text": text, "source": ("web", "books", "code")[i % 3],
                     "metadata": json.dumps({"url": f"https://example.org/{i}"}),
                     "annotations": json.dumps({"lang": "en", "lang_score": round(rng.random(), 4)})})
    return rows


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import duckdb

    rows = documents(args.docs)
    text_mb = sum(len(r["text"]) for r in rows) / 1e6
    print(f"{args.docs:,} documents, {text_mb:.1f} MB of text; load average {os.getloadavg()[0]:.2f}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        write_shard(os.path.join(tmp, "warm-up.arrow"), DOCUMENT_SCHEMA, rows[:10])  # imports Beam's filesystems
        for fmt in FORMATS:
            path = os.path.join(tmp, f"part-00000-of-00001{fmt.suffix}")
            write = best(lambda: write_shard(path, DOCUMENT_SCHEMA, rows, fmt), args.repeat)
            read = best(lambda: open_shard(path, DOCUMENT_SCHEMA).read_all(), args.repeat)
            if fmt.name == "parquet":
                query = f"SELECT source, count(*), sum(length(text)) FROM '{path}' GROUP BY source"
                duck = best(lambda: duckdb.connect().execute(query).fetchall(), args.repeat)
            else:
                def through_pyarrow():
                    shard = open_shard(path, DOCUMENT_SCHEMA).read_all()  # noqa: F841  (DuckDB scans the variable)
                    duckdb.connect().execute("SELECT source, count(*), sum(length(text)) FROM shard GROUP BY source"
                                             ).fetchall()
                duck = best(through_pyarrow, args.repeat)
            results[f"{fmt.name} ({fmt.codec})"] = (os.path.getsize(path) / 1e6, write, read, duck)
    base = results["arrow (none)"]
    # no read ratio: reading an Arrow shard is a memory map, next to no time until the pages are used
    print(f"{'format':<16} {'MB':>7} {'x':>6} {'write s':>8} {'x':>6} {'read s':>7} {'duckdb s':>9} {'x':>6}")
    for name, (size, write, read, duck) in results.items():
        print(f"{name:<16} {size:7.1f} {size / base[0]:6.2f} {write:8.3f} {write / base[1]:6.2f} {read:7.3f} "
              f"{duck:9.3f} {duck / base[3]:6.2f}")


if __name__ == "__main__":
    main()
