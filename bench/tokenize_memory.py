"""Peak memory of `corpusforge tokenize` on DirectRunner at several corpus sizes: does it stay flat?

    python bench/tokenize_memory.py --sizes 50000 200000
    python bench/tokenize_memory.py --sizes 50000 200000 --workers 1 2 --digests
    python bench/tokenize_memory.py --sizes 20000 --digests --set output.disk_shuffle_mb=1e9   # in memory
    python bench/tokenize_memory.py --sizes 20000 --digests --set output.disk_shuffle_mb=0     # on disk
    python bench/tokenize_memory.py --sizes 50000 200000 --set tokenize.target_tokens=20000000 \
        --set tokenize.shard_tokens=2000000                                                   # a mixture

Corpus: ``bench/build.py``'s ``passages`` texts (real prose from Python's docs, ~700 bytes a document; needs
``apt-get install python3.11-doc``), written straight as clean Arrow shards (8 files, two sources ``a`` and ``b``,
as a build writes them; no build is run), cached in the work directory. One byte-level BPE tokenizer (vocabulary
4,000) is trained on the first 20,000 documents and used for every size. Each run is `corpusforge tokenize` in a
subprocess; peak memory is the largest sum of RSS over its process tree (driver and Beam workers), sampled every
0.2 s with psutil (``bench.build.measure``). ``--digests``: a sha256 over every file of tokens/ (shards and
manifest), which must be the same with the shuffles in memory and on disk, on 1 and 2 workers.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import pyarrow as pa  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402

from bench.build import measure, passage_texts  # noqa: E402
import bench.build as build_bench  # noqa: E402
from bench.workdirs import temporary_workdir  # noqa: E402
from corpusforge.pipeline.document import DOCUMENT_SCHEMA  # noqa: E402

SHARDS = 8
TOKENIZER_DOCS = 20_000


def write_clean(directory: str, documents: int, seed: int = 0) -> float:
    """``documents`` passages as clean Arrow shards in ``directory`` (cached); returns MB of text."""
    done = os.path.join(directory, ".done")
    if os.path.exists(done):
        with open(done) as f:
            return float(f.read())
    os.makedirs(directory, exist_ok=True)
    texts = passage_texts(random.Random(seed), 1)
    size = 0
    for shard in range(SHARDS):
        rows = []
        for n in range(shard, documents, SHARDS):
            text = next(texts)
            size += len(text.encode("utf-8"))
            rows.append({"id": f"d{n:08d}", "text": text, "source": "ab"[n % 3 == 0], "metadata": "{}",
                         "annotations": "{}"})
        path = os.path.join(directory, f"part-{shard:05d}-of-{SHARDS:05d}.arrow")
        with pa.OSFile(path, "wb") as sink, ipc.new_file(sink, DOCUMENT_SCHEMA) as writer:
            for start in range(0, len(rows), 2000):
                writer.write_batch(pa.RecordBatch.from_pylist(rows[start:start + 2000], schema=DOCUMENT_SCHEMA))
    with open(done, "w") as f:
        f.write(str(size / 1e6))
    return size / 1e6


def train_tokenizer(path: str) -> None:
    if os.path.exists(path):
        return
    from corpusforge.tokenizer.config import TokenizerConfig
    from corpusforge.tokenizer.train import train_from_texts

    texts = passage_texts(random.Random(1), 1)
    batches = ([next(texts) for _ in range(1000)] for _ in range(TOKENIZER_DOCS // 1000))
    train_from_texts(batches, TokenizerConfig(vocab_size=4000)).save(path)


def tokens_digest(tokens: str) -> str:
    """sha256 over every file under tokens/ (relative path and content)."""
    digest = hashlib.sha256()
    for root, dirs, names in os.walk(tokens):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                digest.update(os.path.relpath(path, tokens).encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return digest.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 200_000])
    parser.add_argument("--workers", type=int, nargs="+", default=[1])
    parser.add_argument("--workdir", default=None, help="Where corpora and runs go, kept (default: a temp dir, removed at exit).")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="A config setting for every run (corpusforge tokenize --set).")
    parser.add_argument("--digests", action="store_true", help="Also print a sha256 of each run's tokens/.")
    args = parser.parse_args()
    workdir = args.workdir or temporary_workdir("cf-bench-tokenize-")
    os.makedirs(workdir, exist_ok=True)
    tokenizer = os.path.join(workdir, "tokenizer.json")
    train_tokenizer(tokenizer)
    print(f"{os.cpu_count()} CPU cores; work dir {workdir}; settings: {' '.join(args.set) or '(defaults)'}")
    print(f"{'docs':>10} {'MB text':>8} {'workers':>7} {'wall s':>8} {'CPU s':>7} {'peak MB':>8}")
    for size in args.sizes:
        clean = os.path.join(workdir, f"clean-{size}")
        text_mb = write_clean(clean, size)
        for workers in args.workers:
            run = os.path.join(workdir, f"run-{size}-{workers}")
            mode = (["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"] if workers > 1
                    else [])
            cmd = [sys.executable, "-m", "corpusforge", "tokenize", "--run-dir", run, "--input", clean,
                   "--tokenizer", tokenizer, "--no-progress", "--set=output.overwrite=true",
                   *(f"--set={setting}" for setting in args.set), *mode]
            wall, peak, code = measure(cmd)
            status = "" if code == 0 else f"  FAILED (exit {code})"
            digest = f"  tokens {tokens_digest(os.path.join(run, 'tokens'))}" if args.digests and code == 0 else ""
            print(f"{size:>10,} {text_mb:>8.1f} {workers:>7} {wall:>8.1f} {build_bench.LAST_CPU_SECONDS:>7.1f} "
                  f"{peak:>8.0f}{status}{digest}", flush=True)


if __name__ == "__main__":
    main()
