"""Codecs for what a build writes to its scratch disk: CPU per MB written and read against the bytes saved.

    python bench/scratch_codecs.py --documents 1000

Builds bench/build.py's `distinct` corpus (normalize + dedup, shuffles forced onto disk), keeps the segment's
spill directory, and compresses with each codec an installed core dependency offers (zstandard; pyarrow's zstd
and lz4): document texts one by one (pipeline/spill.py writes and reads each text alone), the run files in
blocks of 8, 32 and 128 KB (corpusforge/core/disk_grouping.py compresses each partition's block of a run: 32 MB
runs over 256 partitions at 1M documents, ~2,000 at 10M), and near dedup's and line dedup's spill files.
CPU time (process time), one process; ratio = bytes before / bytes after.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import pyarrow as pa  # noqa: E402
import zstandard  # noqa: E402

from bench.build import write_corpus  # noqa: E402
from corpusforge.cli.main import main as cli  # noqa: E402
from corpusforge.core import disk_grouping, rundir  # noqa: E402


def _kept_spill(tmp: str, documents: int) -> tuple[list[bytes], str]:
    """The corpus's texts, and a copy of the build's spill directory taken just before it was deleted."""
    write_corpus(os.path.join(tmp, "in"), documents, kind="distinct")
    texts = []
    for path in sorted(glob.glob(os.path.join(tmp, "in", "*"))):
        with open(path, "rb") as f:
            data = zstandard.ZstdDecompressor().stream_reader(f).read() if path.endswith(".zst") else f.read()
        texts += [json.loads(line)["text"].encode() for line in data.splitlines() if line.strip()]
    kept, delete = os.path.join(tmp, "kept"), rundir.delete

    def keep(path: str) -> None:
        if os.path.basename(path) == "spill" and os.path.isdir(path) and not os.path.exists(kept):
            shutil.copytree(path, kept)
        delete(path)

    with open(os.path.join(tmp, "corpus.yaml"), "w") as f:
        f.write(f"inputs:\n  - {{path: '{tmp}/in', format: jsonl}}\n")
    # the runs as they were before they were compressed: what the codecs below are measured on
    write_setup, read_setup = disk_grouping._WriteRuns.setup, disk_grouping._GroupRuns.setup

    def uncompressed(setup):
        def set_up(self):
            setup(self)
            self.compress = None  # blocks stored as they are (with their CRC-32)
        return set_up

    disk_grouping._WriteRuns.setup, disk_grouping._GroupRuns.setup = uncompressed(write_setup), uncompressed(read_setup)
    rundir.delete = keep
    try:
        code = cli(["build", "-c", os.path.join(tmp, "corpus.yaml"), "--run-dir", os.path.join(tmp, "run"),
                    "--set", "output.disk_shuffle_mb=0", "--set", "quality.enabled=false",
                    "--set", "pii.enabled=false"])
    finally:
        rundir.delete = delete
        disk_grouping._WriteRuns.setup, disk_grouping._GroupRuns.setup = write_setup, read_setup
    if code:
        sys.exit(code)
    return texts, kept


def _codecs() -> dict:
    codecs = {}
    for level in (1, 3):
        compressor = zstandard.ZstdCompressor(level=level, write_checksum=True)
        decompressor = zstandard.ZstdDecompressor()
        codecs[f"zstandard {level}"] = (compressor.compress, lambda data, size, d=decompressor: d.decompress(data))
    for name, level in (("zstd", 1), ("zstd", -5), ("lz4", None), ("lz4_raw", None)):
        codec = pa.Codec(name, compression_level=level) if level is not None else pa.Codec(name)
        codecs[f"pyarrow {name}" + (f" {level}" if level is not None else "")] = (
            lambda data, c=codec: c.compress(data, asbytes=True),
            lambda data, size, c=codec: c.decompress(data, size, asbytes=True))
    return codecs


def _measure(items: list[bytes], compress, decompress) -> tuple[float, float, float]:
    """(ratio, ms of CPU per MB compressed, per MB decompressed), over ~3 MB of work at least."""
    total = sum(map(len, items))
    repeats = max(1, int(3e6 // max(total, 1)))
    started = time.process_time()
    for _ in range(repeats):
        frames = [compress(item) for item in items]
    compressing = (time.process_time() - started) / repeats
    started = time.process_time()
    for _ in range(repeats):
        for frame, item in zip(frames, items):
            decompress(frame, len(item))
    decompressing = (time.process_time() - started) / repeats
    assert all(decompress(frame, len(item)) == item for frame, item in zip(frames[:20], items[:20]))
    return total / sum(map(len, frames)), compressing / total * 1e9, decompressing / total * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        texts, kept = _kept_spill(tmp, args.documents)

        def joined(pattern: str) -> bytes:
            return b"".join(open(p, "rb").read() for p in sorted(glob.glob(os.path.join(kept, pattern))))

        runs, near, sentences = joined("shuffle/*.run"), joined("*.near"), joined("*.sentences")

    def blocks(data: bytes, size: int) -> list[bytes]:
        return [data[i:i + size] for i in range(0, len(data), size)]

    print(f"{len(texts):,} documents, {sum(map(len, texts)) / len(texts):,.0f} bytes of text each")
    codecs = _codecs()
    for label, items in [("texts, one by one", texts), ("run files, 8 KB blocks", blocks(runs, 8192)),
                         ("run files, 32 KB blocks", blocks(runs, 32768)),
                         ("run files, 128 KB blocks", blocks(runs, 131072)),
                         (".near (signatures, bands), 64 KB", blocks(near, 65536)),
                         (".sentences (line dedup's tables), 64 KB", blocks(sentences, 65536))]:
        print(f"{label}: {sum(map(len, items)):,} bytes")
        for name, (compress, decompress) in codecs.items():
            ratio, written, read = _measure(items, compress, decompress)
            print(f"  {name:18s} ratio {ratio:5.2f}   {written:5.1f} ms/MB written   {read:5.1f} ms/MB read")


if __name__ == "__main__":
    main()
