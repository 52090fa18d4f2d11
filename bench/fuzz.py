"""The fuzz harness's long mode: every family in tests/fuzz/ for a set time, each failing case kept.

    python bench/fuzz.py --seconds 600                          # every family, round robin, 10 minutes
    python bench/fuzz.py --family readers --seconds 300 --seed 7 --failures fuzz-failures/

A family is a module ``tests/fuzz/<family>.py`` with ``FAMILY`` and ``fuzz_one(rng, workdir)`` (docs/fuzz.md):
it builds one random case from ``rng`` under ``workdir``, runs corpusforge on it and raises AssertionError
when a promise breaks. Case ``i`` of a family runs with ``random.Random(f"{seed}:{family}:{i}")``, so a failure
is replayed with ``--seed S --family F --case I``. Any exception counts as a failure (the harness's promise is
that nothing escapes); the case's workdir is copied to ``--failures DIR/<family>-<case>/`` with ``error.txt``.
Prints, per family, the cases tried and failed (and what the family counts in a ``TRIED`` counter, such as
the cases per class of input), and exits 1 if any case failed.
"""
from __future__ import annotations

import argparse
import collections
import importlib
import os
import pathlib
import random
import shutil
import sys
import tempfile
import time
import traceback

from corpusforge.core import rundir

ROOT = pathlib.Path(__file__).resolve().parents[1]


def families(only: list[str] | None = None) -> dict[str, object]:
    """``{FAMILY: module}`` for every tests/fuzz/*.py that defines ``fuzz_one`` (test_* slices excluded)."""
    sys.path.insert(0, str(ROOT))
    found = {}
    for path in sorted((ROOT / "tests" / "fuzz").glob("*.py")):
        if path.name.startswith(("test_", "_")):
            continue
        module = importlib.import_module(f"tests.fuzz.{path.stem}")
        if callable(getattr(module, "fuzz_one", None)):
            found[getattr(module, "FAMILY", path.stem)] = module
    if only:
        unknown = sorted(set(only) - set(found))
        if unknown:
            raise SystemExit(f"no fuzz family {', '.join(unknown)}; there are: {', '.join(found) or 'none'}")
        found = {name: found[name] for name in only}
    return found


def run_case(module, family: str, seed: str, case: int, failures: pathlib.Path | None) -> str | None:
    """Run one case; the error's text if it failed (its workdir then copied under ``failures``)."""
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{family}-") as tmp:
        workdir = pathlib.Path(tmp) / "case"
        workdir.mkdir()
        # every family also checks that corpusforge leaves nothing in the temporary folder (rundir.scoped_tempfiles)
        temp = pathlib.Path(tmp) / "temp"
        temp.mkdir()
        try:
            with rundir.tempfiles_in(str(temp), rundir.lasting_caches()):  # caches stay where they last
                module.fuzz_one(random.Random(f"{seed}:{family}:{case}"), workdir)
            left = sorted(p.name for p in temp.iterdir())
            assert not left, f"left in the temporary folder after the case: {left[:5]}"
            return None
        except BaseException as exc:  # noqa: BLE001 - every escape is a finding (KeyboardInterrupt aside)
            if isinstance(exc, KeyboardInterrupt):
                raise
            error = "".join(traceback.format_exception(exc))
            if failures is not None:
                kept = failures / f"{family}-{case}"
                if kept.exists():
                    shutil.rmtree(kept)
                shutil.copytree(workdir, kept, symlinks=True, ignore_dangling_symlinks=True,
                                ignore=_special_files)
                (kept / "error.txt").write_text(f"replay: python bench/fuzz.py --seed {seed} --family {family} "
                                                f"--case {case}\n\n{error}", encoding="utf-8", errors="replace")
            return error


def _special_files(directory: str, names: list[str]) -> list[str]:
    """FIFOs and devices are not copied (copying would block or read forever); error.txt names the case."""
    import os
    import stat

    skipped = []
    for name in names:
        try:
            mode = os.lstat(os.path.join(directory, name)).st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            skipped.append(name)
    return skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="Run for this long in all (round robin).")
    parser.add_argument("--seed", default="0", help="Seed of the run: the same seed tries the same cases.")
    parser.add_argument("--failures", type=pathlib.Path, default=None, help="Copy each failing case here.")
    parser.add_argument("--family", action="append", default=None, help="Only this family (repeatable).")
    parser.add_argument("--case", type=int, default=None, help="Replay this one case (with --family, --seed).")
    args = parser.parse_args(argv)
    chosen = families(args.family)
    if not chosen:
        print("no fuzz families in tests/fuzz/")
        return 0
    if args.failures is not None:
        args.failures.mkdir(parents=True, exist_ok=True)
    tried: collections.Counter = collections.Counter()
    failed: collections.Counter = collections.Counter()
    if args.case is not None:
        for family, module in chosen.items():
            error = run_case(module, family, args.seed, args.case, args.failures)
            print(f"{family} case {args.case}: {'held' if error is None else 'FAILED'}")
            if error:
                print(error)
        return 0 if error is None else 1
    deadline = time.monotonic() + args.seconds
    names = list(chosen)
    while time.monotonic() < deadline:
        for family in names:
            if time.monotonic() >= deadline:
                break
            error = run_case(chosen[family], family, args.seed, tried[family], args.failures)
            tried[family] += 1
            if error is not None:
                failed[family] += 1
                print(f"FAILED {family} case {tried[family] - 1}: {error.strip().splitlines()[-1][:300]}", flush=True)
    for family in names:
        extra = getattr(chosen[family], "TRIED", None)
        detail = f"  ({', '.join(f'{k} {v}' for k, v in sorted(extra.items()))})" if extra else ""
        print(f"{family}: {tried[family]} cases tried, {failed[family]} failed, "
              f"{tried[family] - failed[family]} held{detail}")
    return 1 if sum(failed.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
