"""How often a build reads spilled bytes back (``corpusforge.pipeline.spill.read_bytes``), per document and by
call site: texts (read through ``Document.text``) and the rest (near-dedup's signatures and band records, the
sentence tables).

    python bench/text_reads.py                                     # 2,000 docs, normalize + dedup
    python bench/text_reads.py --docs 5000 --set output.disk_shuffle_mb=0   # shuffles on disk (texts as zstd frames)

One in-process ``corpusforge build`` of bench/build.py's ``distinct`` corpus; each call of ``read_bytes`` is
counted under the first three frames outside spill.py and document.py that led to it (file, function, line),
and a read in a step of the build's facts under the stage whose documents the step counts ("[facts of dedup]").
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.build import ALL_STAGES, write_corpus  # noqa: E402

COUNTS: collections.Counter = collections.Counter()
_SKIP = ("spill.py", "document.py")


_ORIGINAL: list = []  # spill.read_bytes before it was patched


def counted(ref):
    """``spill.read_bytes``, counted (a function of this importable module: Beam pickles it by reference)."""
    stack = traceback.extract_stack(limit=16)[:-1]
    site = [f"{os.path.basename(f.filename)}:{f.name}:{f.lineno}" for f in reversed(stack)
            if not f.filename.endswith(_SKIP)]
    kind = "text" if any(f.name == "__getattr__" for f in stack) else "other"
    frame, step = sys._getframe(1), ""
    while frame is not None:  # the build's facts step names its stage: which stage's load this is
        fns = getattr(frame.f_locals.get("self"), "fns", None)
        if fns and hasattr(fns[0], "stage"):
            step = f" [facts of {fns[0].stage}]"
            break
        frame = frame.f_back
    COUNTS[(kind, " <- ".join(site[:3]) + step)] += 1
    return _ORIGINAL[0](ref)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--stages", default="normalize,dedup")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()

    # patched where every reader finds it: spill's module global (read_text, Document.text) and the names that
    # near-dedup and the boilerplate step imported; the DoFns run in this process (in-process DirectRunner)
    from corpusforge.pipeline import spill
    from corpusforge.pipeline.dedup import boilerplate, near

    import bench.text_reads as this  # not __main__: its functions pickle by reference

    this._ORIGINAL.append(spill.read_bytes)
    spill.read_bytes = near.read_bytes = boilerplate.read_bytes = this.counted
    from corpusforge.cli.main import main as corpusforge

    stages = args.stages.split(",")
    with tempfile.TemporaryDirectory(prefix="cf-bench-reads-") as work:
        write_corpus(os.path.join(work, "corpus"), args.docs, kind="distinct")
        build = ["build", "--input", os.path.join(work, "corpus", "*.jsonl.zst"), "--run-dir", os.path.join(work, "run"),
                 "--overwrite", "--no-progress", *(f"--set={s}.enabled=false" for s in ALL_STAGES if s not in stages),
                 *(f"--set={setting}" for setting in args.set)]
        with contextlib.redirect_stdout(io.StringIO()):
            if corpusforge(build):
                raise SystemExit("the build failed: corpusforge " + " ".join(build))
    n, counts = args.docs, this.COUNTS
    texts = sum(count for (kind, _), count in counts.items() if kind == "text")
    print(f"{n:,} docs, stages {args.stages}, settings {' '.join(args.set) or 'default'}: "
          f"{sum(counts.values()) / n:.2f} reads a document, {texts / n:.2f} of texts")
    for (kind, site), count in counts.most_common():
        print(f"{count / n:6.2f} {count:7,}  {kind:5}  {site}")


if __name__ == "__main__":
    main()
