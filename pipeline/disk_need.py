"""How much local disk a build needs while it runs, told before it starts when the run directory's disk has less.

A build that spills keeps its texts and, above ``output.disk_shuffle_mb``, its shuffles on the run directory's disk
until each segment ends (docs/scale.md, "Shuffles on local disk"): ``python bench/shuffle_disk.py`` measures that at
1.96x the input's text for normalize + dedup and 2.30-2.35x with every stage. A 10M-document build (22 GB of text)
that runs out of disk does so hours in; the estimate below is known before the first document is read, from the
input files' sizes alone (``readers.input_text_bytes``: compressed files count 5x), so the build says so at its
start instead. It only warns: the estimate is an upper bound for web-like text, and a user may free space meanwhile.
"""
from __future__ import annotations

import os
import shutil

from corpusforge.core.progress import format_bytes
from corpusforge.pipeline.config import BuildConfig

# Scratch per byte of input text, rounded up from bench/shuffle_disk.py's largest segment: texts spilled (1.72x with
# every stage: each text, the texts a stage changes, near dedup's signatures, line dedup's tables) and, with
# shuffles on disk, the run files (0.64x).
SCRATCH_SPILLED = 1.8
SCRATCH_SHUFFLED = 2.5
# Shards per byte of input text: Parquet and JSON Lines shards compressed with zstd hold web-like text at ~0.3-0.4x;
# Arrow shards and uncompressed ones at ~1x (the text, its metadata and annotations).
OUTPUT_COMPRESSED = 0.5
OUTPUT_PLAIN = 1.1


def disk_need(config: BuildConfig, text_bytes: int, spills: bool, shuffles_on_disk: bool, segments: int) -> int:
    """Bytes of local disk a build of ``text_bytes`` of input text may hold at its peak in its run directory: its
    scratch (``spills``: texts spilled; ``shuffles_on_disk``: run files too) beside its outputs, and with stage
    checkpoints every earlier stage's shards (``segments`` - 1 of them), kept until the build ends."""
    fmt = config.output
    plain = fmt.format == "arrow" or fmt.compression == "none"
    shards = text_bytes * (OUTPUT_PLAIN if plain else OUTPUT_COMPRESSED)
    scratch = text_bytes * (SCRATCH_SHUFFLED if shuffles_on_disk else SCRATCH_SPILLED if spills else 0.0)
    return int(scratch + shards * max(1, segments))


def free_disk(path: str) -> int | None:
    """Free bytes on the disk that holds local ``path`` (or the nearest folder above it that exists); None for a
    remote path or a disk that cannot be asked."""
    if "://" in path:
        return None
    probe = os.path.abspath(path)
    while not os.path.isdir(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return None


def disk_warning(run_dir: str, need: int, text_bytes: int) -> str | None:
    """One line when the disk of ``run_dir`` has less free than ``need``; None otherwise."""
    free = free_disk(run_dir)
    if free is None or free >= need:
        return None
    return (f"warning: this build may need up to {format_bytes(need)} of free disk in {run_dir} while it runs (its "
            f"scratch files and outputs, for about {format_bytes(text_bytes)} of input text); {format_bytes(free)} "
            "are free there, so it may stop with a full disk: free some space, or build into a run directory on a "
            "bigger disk")
