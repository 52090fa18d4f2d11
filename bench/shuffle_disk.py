"""Local disk a build's shuffles take (corpusforge.core.disk_grouping): the run files and spilled texts of each
segment, measured just before the segment's spill directory is deleted, against the input's text.

    python bench/shuffle_disk.py --documents 1000                                   # every stage
    python bench/shuffle_disk.py --documents 1000 --set quality.enabled=false --set pii.enabled=false
    python bench/shuffle_disk.py --documents 1000 --set output.stage_checkpoints=true   # one segment per stage

The corpus is bench/build.py's `distinct` (web-like, ~2.2 KB of text a document); shuffles are forced onto disk
(`output.disk_shuffle_mb=0`). One in-process build; run files stay until their segment ends, so the largest
segment's figure is the most the build holds on disk besides its inputs and outputs. Spilled files by suffix:
.txt document texts (pipeline/spill.py), .near near dedup's signatures and bands, .sentences line + sentence
dedup's tables.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.build import write_corpus  # noqa: E402
from corpusforge.cli.main import main as cli  # noqa: E402
from corpusforge.core import rundir  # noqa: E402


def _bytes(directory: str, inside_shuffle: bool) -> dict[str, int]:
    """Bytes of the files in (or beside) the shuffle directory, by file suffix."""
    total: dict[str, int] = {}
    for folder, _, names in os.walk(directory):
        if ("shuffle" in os.path.relpath(folder, directory).split(os.sep)) == inside_shuffle:
            for name in names:
                suffix = os.path.splitext(name)[1]
                total[suffix] = total.get(suffix, 0) + os.path.getsize(os.path.join(folder, name))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--set", action="append", default=[], help="a config setting, as corpusforge build --set")
    args = parser.parse_args()
    segments = []
    delete = rundir.delete

    def measured_delete(path: str) -> None:  # the segment's spill directory, just before it goes
        if os.path.basename(path) == "spill" and os.path.isdir(path):
            segments.append((os.path.basename(os.path.dirname(path)), _bytes(path, True), _bytes(path, False)))
        delete(path)

    rundir.delete = measured_delete
    with tempfile.TemporaryDirectory() as tmp:
        text = write_corpus(os.path.join(tmp, "in"), args.documents, kind="distinct")
        config = os.path.join(tmp, "corpus.yaml")
        with open(config, "w") as f:
            f.write(f"inputs:\n  - {{path: '{tmp}/in', format: jsonl}}\n")
        settings = [x for s in ["output.disk_shuffle_mb=0", *args.set] for x in ("--set", s)]
        code = cli(["build", "-c", config, "--run-dir", os.path.join(tmp, "run"), *settings])
    rundir.delete = delete
    if code:
        sys.exit(code)
    print(f"{args.documents:,} documents, {text:,} bytes of text")
    for name, runs, spilled in segments:
        runs, parts = sum(runs.values()), ", ".join(f"{suffix} {size / text:.2f}x" for suffix, size in sorted(spilled.items()))
        spilled = sum(spilled.values())
        print(f"  {name}: run files {runs:,} bytes ({runs / text:.2f}x the text), spilled texts {spilled:,} "
              f"({spilled / text:.2f}x: {parts}), together {(runs + spilled) / text:.2f}x")


if __name__ == "__main__":
    main()
