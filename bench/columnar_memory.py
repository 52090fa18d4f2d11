"""Peak memory of reading Parquet and Arrow IPC inputs that hold huge cells (docs/inputs.md, "Bounded memory").

    OMP_NUM_THREADS=1 .venv/bin/python bench/columnar_memory.py                  # every case, read_file and build
    OMP_NUM_THREADS=1 .venv/bin/python bench/columnar_memory.py --cases huge_cell --no-build

Cases (written once into a temporary folder, by pyarrow's writer with its defaults unless said):
- ``normal``: 20,000 rows of ~600-byte texts, one row group (what the others are compared with);
- ``huge_cell``: 2,000 such rows and, in the middle of the same row group, one text cell of ``--huge-mb`` MiB
  (pyarrow's writer puts up to 1,024 values in one page: the cell shares its page);
- ``huge_cell_own_group``: the same rows, the huge cell alone in its own row group (rows 0-999, 1000, 1001-1999);
- ``at_limit``: 256 rows of ~0.95 x ``output.max_record_bytes`` (set to 2 MiB for this case) each, one row group
  (in one page of ~490 MB);
- ``at_limit_paged``: the same rows written with ``write_batch_size=8`` (pages of 8 values, ~16 MB);
- ``huge_cell_arrow``: ``huge_cell``'s table as an Arrow IPC file (one record batch).

For each case, each in a fresh process: the peak resident memory (``ru_maxrss``) that ``read_file`` adds to an
interpreter that has imported the reader, and the peak of ``corpusforge build`` with only the normalize stage
(quality, dedup and PII off; the process and its children, ``RUSAGE_CHILDREN``). Also how each record ended.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

REPO = pathlib.Path(__file__).resolve().parents[1]
WORDS = "the quick brown fox jumps over a lazy dog while seven wise owls watch quietly".split()

_READ = textwrap.dedent("""
    import collections, resource, sys
    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.readers import read_file
    path, max_bytes = sys.argv[1], int(sys.argv[2])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ends = collections.Counter(getattr(i, "reason", "kept") for i in
                               read_file(path, InputConfig(path=path), max_chars=100_000, max_bytes=max_bytes))
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
    print(grown, dict(sorted(ends.items())))
""")
_PEAK = "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); " \
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)"


def _text(rng_index: int, size: int) -> str:
    words = [WORDS[(rng_index * 7 + i * 3) % len(WORDS)] for i in range(size // 5 + 1)]
    return " ".join(words)[:size].capitalize()


def _huge(size: int) -> str:
    sentence = "Each sentence of this cell says the same thing again and again. "
    return (sentence * (size // len(sentence) + 1))[:size]


def write_cases(folder: pathlib.Path, huge_mb: int, dry: bool = False) -> dict[str, tuple[pathlib.Path, int]]:
    """``{case: (path, max_record_bytes)}``; 0 keeps the default limit (6 x max_doc_chars + 1 MiB). ``dry``: the
    paths only, nothing written."""
    limit = 2 << 20
    names = {"normal": ("normal.parquet", 0), "huge_cell": ("huge_cell.parquet", 0),
             "huge_cell_own_group": ("huge_cell_own_group.parquet", 0), "huge_cell_arrow": ("huge_cell.arrow", 0),
             "at_limit": ("at_limit.parquet", limit), "at_limit_paged": ("at_limit_paged.parquet", limit)}
    cases = {case: (folder / name, bytes_) for case, (name, bytes_) in names.items()}
    if dry:
        return cases
    import pyarrow as pa
    import pyarrow.parquet as pq

    normal = pa.table({"text": [_text(i, 600) for i in range(20_000)], "id": list(range(20_000))})
    pq.write_table(normal, cases["normal"][0])
    texts = [_text(i, 600) for i in range(2_000)]
    texts[1_000] = _huge(huge_mb << 20)
    huge = pa.table({"text": texts, "id": list(range(2_000))})
    del texts
    pq.write_table(huge, cases["huge_cell"][0])
    with pq.ParquetWriter(cases["huge_cell_own_group"][0], huge.schema) as writer:
        for start, stop in ((0, 1_000), (1_000, 1_001), (1_001, 2_000)):
            writer.write_table(huge.slice(start, stop - start))
    with pa.ipc.new_file(cases["huge_cell_arrow"][0], huge.schema) as writer:
        writer.write_table(huge, max_chunksize=len(huge))
    del huge
    rows = pa.table({"text": [_huge(int(limit * 0.95) - i) for i in range(256)], "id": list(range(256))})
    pq.write_table(rows, cases["at_limit"][0])
    pq.write_table(rows, cases["at_limit_paged"][0], write_batch_size=8)
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="normal,huge_cell,huge_cell_own_group,at_limit,at_limit_paged,huge_cell_arrow")
    parser.add_argument("--huge-mb", type=int, default=300, help="Size of the huge cell in MiB.")
    parser.add_argument("--no-build", action="store_true", help="Measure read_file only.")
    parser.add_argument("--write", metavar="DIR", help=argparse.SUPPRESS)  # the child that writes the cases
    args = parser.parse_args()
    if args.write:
        write_cases(pathlib.Path(args.write), args.huge_mb)
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryDirectory(prefix="cf-bench-columnar-") as tmp:
        folder = pathlib.Path(tmp)
        # written by a child process: a child's ru_maxrss starts at its parent's (Linux keeps it across exec), so
        # this process must stay small for the figures below to be the readers' own
        subprocess.run([sys.executable, __file__, "--write", tmp, "--huge-mb", str(args.huge_mb)], check=True, env=env)
        cases = write_cases(folder, args.huge_mb, dry=True)
        print(f"{'case':<16} {'file MB':>8} {'read_file +MB':>13} {'build peak MB':>13}  records")
        for name in args.cases.split(","):
            path, limit = cases[name]
            read = subprocess.run([sys.executable, "-c", _READ, str(path), str(limit)], capture_output=True,
                                  text=True, env=env)
            if read.returncode != 0:
                print(f"{name:<16} read_file failed: {read.stderr.strip().splitlines()[-1:]}")
                continue
            grown, ends = read.stdout.strip().split(" ", 1)
            build = "-"
            if not args.no_build:
                off = [f"--set={stage}.enabled=false" for stage in ("quality", "dedup", "pii")]
                cmd = [sys.executable, "-m", "corpusforge", "build", "--input", str(path), "--run-dir",
                       str(folder / f"run-{name}"), "--overwrite", "--no-progress", "--set=output.max_doc_chars=100000",
                       *([f"--set=output.max_record_bytes={limit}"] if limit else []), *off]
                code, peak = subprocess.run([sys.executable, "-c", _PEAK, *cmd], capture_output=True, text=True,
                                            env=env).stdout.split()
                build = peak if code == "0" else f"exit {code}"
            print(f"{name:<16} {path.stat().st_size / 1e6:>8.1f} {grown:>13} {build:>13}  {ends}", flush=True)


if __name__ == "__main__":
    main()
