"""Where a build's time goes: per stage and per step, Beam's own work and document pickling, on one worker.

    python bench/build_profile.py                     # 3,000 web-like docs (~2.4 KB), every stage
    python bench/build_profile.py --docs 10000 --stages normalize,dedup
    python bench/build_profile.py --top 30            # also the 30 functions with the most own time
    python bench/build_profile.py --startup 5         # only start-up: `corpusforge build` of one document, 5 times
    python bench/build_profile.py --startup 5 --against d200b23   # ... alternating with an older commit's runs
    python bench/build_profile.py --startup 5 --email             # ... the document holds an e-mail (Presidio loads)
    python bench/build_profile.py --imports           # where start-up's imports go, by top-level package
    python bench/build_profile.py --graph --against d200b23   # fused stages a one-document build runs, both trees
    python bench/build_profile.py --plain --set dedup.near.components=distributed   # any config setting
    python bench/build_profile.py --plain --against 8807992 --rounds 3   # per-document work, both trees alternating
    python bench/build_profile.py --plain --email     # ... Presidio's one-off import subtracted as start-up
    python bench/build_profile.py --instructions --docs 400 --against 3228507   # instructions per document (valgrind)
    python bench/build_profile.py --plain --against main --corpus multilingual --stages normalize,dedup   # not English

The corpus is bench/build.py's ``distinct`` one (real prose, fixed seed, 8 .jsonl.zst files; ``--corpus
multilingual``: the same shape in seven other languages and scripts, with ``--plain``, ``--instructions`` and the
profile). One
``corpusforge build`` runs in this process on the in-process DirectRunner (one worker) twice: first plain,
for its wall time, then under cProfile. The profile's time is attributed to whoever Beam called:

- every function that Beam (or the dead-letter wrapper, corpusforge/core/faults.py) calls directly counts,
  with all it calls, towards the step of the file it lives in (``normalize``, ``quality``, ``dedup exact``,
  ``dedup near``, ``pii``, ``read``, ``write shards``, ``spill``, ``facts`` (stats), ``build glue``: the
  lambdas and sort keys of pipeline/build.py, ...);
- graph construction: ``segment_pipeline`` (every stage's ``expand`` and Beam's checks of each transform);
- document pickling: ``Document.__getstate__``/``__setstate__`` and everything spent in Beam's coders
  (apache_beam/coders, pickle) that is not already inside a step;
- the rest, Beam's own work: moving elements between fused steps, shuffles, bundles, metrics, graph
  building and start-up (imports, model loads in ``DoFn.setup`` count to their step).

``--startup N`` instead times what a user waits for with no data: ``corpusforge build`` of a one-document
corpus with the given stages, each in a fresh process (imports, graph, model loads, every fused stage run
once), N times after one untimed run that writes Python's bytecode cache (as a user's second run; the runs
ignore PYTHONDONTWRITEBYTECODE); it prints each wall time and CPU time (the process tree's) and their medians.

``--against COMMIT`` alternates those runs with runs of corpusforge as of that git commit (unpacked into the
work dir with ``git archive``; or ``--against DIR``: the ``corpusforge`` package in DIR, on PYTHONPATH) and
prints the ratio: a before/after figure under the same machine load.

``--imports`` runs that one-document build and ``corpusforge --help`` once each under ``python -X importtime``
and prints the import time by top-level package (each module's own time, summed), largest first, and who
imported each of the largest packages first (the chain of modules from corpusforge), so the next place to
cut is visible.

``--plain --against COMMIT`` times the per-document work (a corpus build minus a one-document build, imports
done) of this tree and of that commit, each round in fresh processes that alternate, ``--rounds`` times, and
prints docs per second and per CPU-second and the ratio.

``--instructions`` counts the instructions of a corpus build and of a one-document build under valgrind's
cachegrind (fresh processes, hash seed fixed, after a plain run that writes the tree's bytecode cache) and prints their difference per document, this tree's and
``--against``'s: on a machine shared with other jobs, where CPU time moves by ~30 % between rounds, a count
that load does not move (~50x slower than a plain build: ``--docs 400`` takes ~10 minutes for both trees).

``--graph`` runs that one-document build once (with ``--against``, once per tree) and prints the fused stages
the in-process runner set up and ran, and the transforms inside them: what every build pays for whatever
its size.

cProfile slows pure-Python code more than C code, so shares are approximate; the plain wall time is the
real figure. Nothing here is a pass/fail target.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import io
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.build import ALL_STAGES, write_corpus  # noqa: E402
from bench.workdirs import temporary_workdir  # noqa: E402

# The file (below the corpusforge package folders) -> the step it belongs to. First match wins.
STEPS = (
    ("pipeline/normalize/", "normalize"),
    ("pipeline/quality/langid", "quality: language ID"),
    ("pipeline/quality/", "quality: rules and classifiers"),
    ("pipeline/dedup/exact", "dedup: exact"),
    ("pipeline/dedup/near", "dedup: near (MinHash)"),
    ("pipeline/dedup/minhash", "dedup: near (MinHash)"),
    ("pipeline/dedup/components", "dedup: near (MinHash)"),
    ("pipeline/dedup/buckets", "dedup: near (MinHash)"),
    ("pipeline/dedup/lines", "dedup: lines"),
    ("pipeline/dedup/boilerplate", "dedup: lines + sentences (one join)"),
    ("pipeline/dedup/sentence", "dedup: sentences"),
    ("pipeline/dedup/common", "dedup: verdict joins"),
    ("pipeline/dedup/", "dedup: other"),
    ("pipeline/pii/", "pii"),
    ("pipeline/readers", "read"),
    ("pipeline/web", "read"),
    ("pipeline/spill", "spill text"),
    ("pipeline/shards", "write shards"),
    ("pipeline/stats", "facts (stats.json counts)"),
    ("pipeline/build", "build glue (keys, sort keys)"),
    ("corpusforge/core/progress", "progress"),
    ("pipeline/document", "pickling (Document state)"),
    ("pipeline/stage", "stage glue"),
)
_WRAPPERS = ("corpusforge/core/faults.py",)  # transparent: what they call is charged to the callee's step
_CODERS = ("apache_beam/coders/", "apache_beam/internal/pickler", "dill/", "cloudpickle")


def step_of(filename: str) -> str | None:
    """The step of a function by its file, or None when it is not corpusforge's."""
    path = filename.replace(os.sep, "/")
    if "apache_beam/" in path or "site-packages" in path and "corpusforge" not in path:
        return None
    for part, step in STEPS:
        if part in path:
            return step
    return None


def _is_beam(filename: str) -> bool:
    return "apache_beam/" in filename.replace(os.sep, "/")


def _is_wrapper(filename: str) -> bool:
    path = filename.replace(os.sep, "/")
    return any(w in path for w in _WRAPPERS)


def attribute(stats: pstats.Stats, entries: dict | None = None) -> tuple[dict[str, float], float]:
    """``({step: seconds}, total seconds)``: the inclusive time of each corpusforge function on the edges where
    Beam (or a wrapper) called it, by step; Beam's coders and pickling outside any step as "pickling".
    ``entries``, if given, receives ``{step: {function: seconds}}``."""
    raw = stats.stats  # (file, line, name) -> (cc, nc, tt, ct, callers{caller: (cc, nc, tt, ct)})
    steps: dict[str, float] = collections.Counter()
    for (filename, line, name), (_, _, _, _, callers) in raw.items():
        step = step_of(filename)
        if step is None or _is_wrapper(filename) or name == "expand":
            continue
        for (caller_file, _, _), edge in callers.items():
            if _is_beam(caller_file) or _is_wrapper(caller_file) or caller_file == "~":
                steps[step] += edge[3]
                if entries is not None:
                    where = f"{os.path.relpath(filename)}:{line} {name}"
                    entries.setdefault(step, collections.Counter())[where] += edge[3]
    coders = sum(tt for (filename, _, _), (_, _, tt, _, _) in raw.items()
                 if any(c in filename.replace(os.sep, "/") for c in _CODERS))
    coders += sum(tt for (filename, _, name), (_, _, tt, _, _) in raw.items()
                  if filename == "~" and ("_pickle" in name or "zlib" in name))
    steps["pickling (Beam coders)"] += coders
    steps["graph construction"] = sum(ct for (filename, _, name), (_, _, _, ct, _) in raw.items()
                                      if name == "segment_pipeline" and filename.endswith("build.py"))
    return dict(steps), stats.total_tt


def top_functions(stats: pstats.Stats, n: int) -> list[tuple[float, str]]:
    rows = [(tt, f"{os.path.relpath(f) if f != '~' else ''}:{line} {name}")
            for (f, line, name), (_, _, tt, _, _) in stats.stats.items()]
    return sorted(rows, reverse=True)[:n]


# --set KEY=VALUE from the command line: passed to every build this script runs.
SETTINGS: list[str] = []


def build_args(corpus: str, run_dir: str, stages: list[str]) -> list[str]:
    off = [f"--set={s}.enabled=false" for s in ALL_STAGES if s not in stages]
    return ["build", "--input", os.path.join(corpus, "*.jsonl.zst"), "--run-dir", run_dir, "--overwrite",
            "--no-progress", *off, *(f"--set={setting}" for setting in SETTINGS)]


_LAST_CPU = [0.0]  # CPU seconds of this process during the last run_build


def run_build(args: list[str]) -> float:
    from corpusforge.cli.main import main

    started, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    if code:
        raise SystemExit(f"the build failed (exit {code}): corpusforge {' '.join(args)}")
    _LAST_CPU[0] = time.process_time() - cpu
    return time.perf_counter() - started


def user_environ() -> dict[str, str]:
    """This process's environment as a user's second run has it: Python's bytecode cache written (pip writes it
    for an installed wheel, Python on the first import of an editable install). PYTHONDONTWRITEBYTECODE, set on
    some CI and sandbox machines, would make every run compile corpusforge's ~80 modules from source (~0.2 s),
    and an unpacked ``--against`` tree's in every run, this tree's only where no cache was ever written."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def write_one(workdir: str, email: bool = False) -> str:
    """The one-document corpus whose build is subtracted as start-up; ``email``: its document also holds an e-mail
    address, so the PII stage loads Presidio in it (a one-off per worker that a text with no candidate skips)."""
    import json

    import zstandard

    one = os.path.join(workdir, "corpus-1-email" if email else "corpus-1")
    write_corpus(one, 1, kind="distinct", files=1)
    if email:
        path = os.path.join(one, "part-0.jsonl.zst")
        with open(path, "rb") as f:
            row = json.loads(zstandard.ZstdDecompressor().stream_reader(f).read())
        row["text"] += "\n\nQuestions? Write to jane.doe@example.org."
        with open(path, "wb") as f:
            f.write(zstandard.ZstdCompressor().compress(json.dumps(row).encode() + b"\n"))
    return one


def time_startup(workdir: str, stages: list[str], repeat: int, against: str | None = None,
                 email: bool = False) -> None:
    """Wall time of a one-document ``corpusforge build`` in a fresh process, ``repeat`` times; with ``against``
    (a directory holding another ``corpusforge`` package, e.g. an older commit's), that one's runs alternate
    with this one's, so both see the same machine load, and the ratio is printed. ``email``: the document
    also holds an e-mail address (the PII stage then loads Presidio, which it skips for a text with no
    candidate)."""
    import resource
    import statistics
    import subprocess

    one = write_one(workdir, email)
    cmd = [sys.executable, "-m", "corpusforge", *build_args(one, os.path.join(workdir, "run-startup"), stages)]
    environ = user_environ()
    versions = {"this tree": environ}
    if against:
        package = against if os.path.isdir(against) else package_of_commit(against, workdir)
        versions = {against: {**environ, "PYTHONPATH": os.path.abspath(package)}, **versions}
    for env in versions.values():  # untimed: writes the bytecode cache
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env, cwd=workdir)
    walls: dict[str, list[float]] = {name: [] for name in versions}
    cpus: dict[str, list[float]] = {name: [] for name in versions}
    for _ in range(repeat):
        for name, env in versions.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            # Run outside the repository: `python -m` puts the working directory first on sys.path, where
            # this tree's corpusforge/ would shadow the one on PYTHONPATH.
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env, cwd=workdir)
            walls[name].append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    for name in versions:
        print(f"start-up ({name}), one-document build, stages {','.join(stages)}: median "
              f"{statistics.median(walls[name]):.2f} s wall ({', '.join(f'{w:.2f}' for w in walls[name])}), "
              f"{statistics.median(cpus[name]):.2f} CPU s ({', '.join(f'{c:.2f}' for c in cpus[name])})", flush=True)
    if against:
        wall_ratio = statistics.median(walls[against]) / statistics.median(walls["this tree"])
        cpu_ratio = statistics.median(cpus[against]) / statistics.median(cpus["this tree"])
        print(f"this tree starts {wall_ratio:.2f}x as fast as {against} by median wall time, {cpu_ratio:.2f}x by "
              "median CPU time (runs alternated; on a busy machine the CPU figure is the steadier one)", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)


# Run in a fresh process (cwd outside the repository, corpusforge from PYTHONPATH or the installed one): a
# one-document build twice, then the corpus, each timed; prints JSON.
_PER_DOCUMENT = """
import contextlib, io, json, sys, time
from corpusforge.cli.main import main
one, corpus = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def timed(args):
    wall, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        if main(args):
            raise SystemExit("the build failed: corpusforge " + " ".join(args))
    return time.perf_counter() - wall, time.process_time() - cpu
timed(one)
print(json.dumps({"one": timed(one), "corpus": timed(corpus)}))
"""


def time_per_document(workdir: str, stages: list[str], docs: int, rounds: int, against: str,
                      email: bool = False, kind: str = "distinct") -> None:
    """Per-document work (a corpus build minus a one-document build, both after the imports) of this tree and of
    ``against`` (a commit or a folder with a ``corpusforge`` package), each round in fresh processes that
    alternate, so both trees see the same machine load; prints docs per second and per CPU-second and the ratio."""
    import json
    import statistics
    import subprocess

    corpus = os.path.join(workdir, f"corpus-{kind}-{docs}")
    write_corpus(corpus, docs, kind=kind)
    one = write_one(workdir, email)
    package = against if os.path.isdir(against) else package_of_commit(against, workdir)
    versions = {against: {**os.environ, "PYTHONPATH": os.path.abspath(package)}, "this tree": dict(os.environ)}
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name in versions}
    print(f"{docs:,} web-like docs ({kind}); stages {','.join(stages)}; settings {' '.join(SETTINGS) or 'default'}; "
          f"{rounds} alternating rounds; one-document build{' with an e-mail' if email else ''}; load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    for _ in range(rounds):
        for name, env in versions.items():
            args = [json.dumps(build_args(one, os.path.join(workdir, "run-1"), stages)),
                    json.dumps(build_args(corpus, os.path.join(workdir, "run-plain"), stages))]
            done = subprocess.run([sys.executable, "-c", _PER_DOCUMENT, *args], check=True, capture_output=True,
                                  text=True, env=env, cwd=workdir)
            times = json.loads(done.stdout.strip().splitlines()[-1])
            (one_wall, one_cpu), (wall, cpu) = times["one"], times["corpus"]
            rates[name].append((docs / max(wall - one_wall, 1e-9), docs / max(cpu - one_cpu, 1e-9)))
            print(f"  {name}: corpus {wall:.1f} s wall, {cpu:.1f} CPU s; one document {one_wall:.1f} s; per-document "
                  f"work {rates[name][-1][0]:.0f} docs/s, {rates[name][-1][1]:.0f} docs per CPU-second", flush=True)
    for name in versions:
        print(f"{name}: per-document work, median {statistics.median(r[0] for r in rates[name]):.0f} docs/s, "
              f"{statistics.median(r[1] for r in rates[name]):.0f} docs per CPU-second", flush=True)
    ratio = statistics.median(r[1] for r in rates["this tree"]) / statistics.median(r[1] for r in rates[against])
    print(f"this tree does {ratio:.2f}x the per-document work of {against} per CPU-second (median of the rounds); "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)


# Run under valgrind in a fresh process: one build, its output hidden.
_ONE_BUILD = """
import contextlib, io, json, sys
from corpusforge.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    sys.exit(main(json.loads(sys.argv[1])))
"""


def count_instructions(workdir: str, stages: list[str], docs: int, against: str | None, kind: str = "distinct") -> None:
    """Instructions per document (valgrind's cachegrind: a corpus build minus a one-document build, each in a fresh
    process, hash seed fixed) of this tree and of ``against``: a count that other jobs on the machine do not move,
    where time on a shared machine varies by 30 % between rounds. Under valgrind a build runs ~50x slower."""
    import json
    import re
    import shutil
    import subprocess

    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    corpus = os.path.join(workdir, f"corpus-{kind}-{docs}")
    write_corpus(corpus, docs, kind=kind)
    one = os.path.join(workdir, "corpus-1")
    write_corpus(one, 1, kind="distinct", files=1)
    environ = user_environ()
    versions = {"this tree": environ}
    if against:
        package = against if os.path.isdir(against) else package_of_commit(against, workdir)
        versions = {against: {**environ, "PYTHONPATH": os.path.abspath(package)}, **versions}
    print(f"{docs:,} web-like docs ({kind}); stages {','.join(stages)}; settings {' '.join(SETTINGS) or 'default'}; "
          "instructions counted by valgrind --tool=cachegrind", flush=True)
    per_doc = {}
    for name, env in versions.items():
        # a plain run first writes the tree's bytecode cache, so neither counted run compiles modules
        subprocess.run([sys.executable, "-c", _ONE_BUILD, json.dumps(build_args(one, os.path.join(workdir, "run-warm"),
                                                                               stages))],
                       check=True, capture_output=True, env=env, cwd=workdir)
        counts = []
        for label, data in (("one", one), ("corpus", corpus)):
            run = os.path.join(workdir, f"run-{label}")
            done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                                   sys.executable, "-c", _ONE_BUILD, json.dumps(build_args(data, run, stages))],
                                  capture_output=True, text=True, env={**env, "PYTHONHASHSEED": "0"}, cwd=workdir)
            found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
            if done.returncode or not found:
                raise SystemExit(f"the build under valgrind failed ({name}, {label}):\n{done.stderr[-2000:]}")
            counts.append(int(found.group(1).replace(",", "")))
        per_doc[name] = (counts[1] - counts[0]) / max(docs - 1, 1)
        print(f"  {name}: one-document build {counts[0] / 1e9:.2f} G instructions; corpus {counts[1] / 1e9:.2f} G; "
              f"per document {per_doc[name] / 1e6:.2f} M", flush=True)
    if against:
        print(f"this tree runs {per_doc[against] / per_doc['this tree']:.3f}x fewer instructions per document than "
              f"{against}", flush=True)


# Run in a fresh process: counts what Beam's in-process runner (FnApiRunner.run_stages) is handed, then builds.
_COUNT_STAGES = """
import sys
from apache_beam.runners.portability.fn_api_runner import fn_runner
run_stages = fn_runner.FnApiRunner.run_stages
def counted(self, context, stages):
    print(f"fused stages {len(stages)}, transforms in them {sum(len(s.transforms) for s in stages)}", file=sys.stderr)
    return run_stages(self, context, stages)
fn_runner.FnApiRunner.run_stages = counted
from corpusforge.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def count_stages(workdir: str, stages: list[str], against: str | None = None) -> None:
    """Print the fused stages (and the transforms in them) of a one-document build, this tree's and, with
    ``against``, that commit's or folder's."""
    import subprocess

    one = os.path.join(workdir, "corpus-1")
    write_corpus(one, 1, kind="distinct", files=1)
    args = build_args(one, os.path.join(workdir, "run-graph"), stages)
    versions = {"this tree": dict(os.environ)}
    if against:
        package = against if os.path.isdir(against) else package_of_commit(against, workdir)
        versions[against] = {**os.environ, "PYTHONPATH": os.path.abspath(package)}
    for name, env in versions.items():
        done = subprocess.run([sys.executable, "-c", _COUNT_STAGES, *args], check=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=workdir)
        counts = [line for line in done.stderr.splitlines() if line.startswith("fused stages")]
        print(f"{name}, one-document build, stages {','.join(stages)}: {'; '.join(counts)}", flush=True)


def package_of_commit(ref: str, workdir: str) -> str:
    """A folder holding the ``corpusforge`` package of git commit ``ref`` of this repository (put it on
    PYTHONPATH): the commit's files unpacked with ``git archive``, and ``corpusforge/`` laid out as setup.py
    maps it (``pipeline/`` -> ``corpusforge.pipeline``, ...)."""
    import subprocess
    import tarfile

    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    source = os.path.join(workdir, f"src-{ref}")
    package = os.path.join(workdir, f"pkg-{ref}")
    if not os.path.isdir(package):
        archive = subprocess.run(["git", "-C", repo, "archive", "--format=tar", ref], check=True,
                                 capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(source, filter="data")
        os.makedirs(os.path.join(package, "corpusforge"))
        for name in os.listdir(os.path.join(source, "corpusforge")):
            os.symlink(os.path.join(source, "corpusforge", name), os.path.join(package, "corpusforge", name))
        for folder in ("pipeline", "tokenizer", "trainers"):
            os.symlink(os.path.join(source, folder), os.path.join(package, "corpusforge", folder))
    return package


def import_times(lines: list[str]) -> tuple[dict[str, float], dict[str, list[str]], float]:
    """``({top-level package: own seconds}, {package: the import chain that first reached it}, total seconds)``
    from ``-X importtime`` lines (``import time: self [us] | cumulative | <indent>module``: a module is listed
    after the modules it imported, which are one indent level deeper)."""
    own: dict[str, float] = collections.Counter()
    parent: dict[str, str] = {}
    first_module: dict[str, str] = {}  # top-level package -> the first of its modules reached from another package
    pending: list[tuple[int, str]] = []  # (depth, module) listed before their importer
    for line in lines:
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:"):].split("|", 2)
        depth = (len(name) - len(name.lstrip()) - 1) // 2
        module = name.strip()
        own[module.split(".")[0]] += int(self_us) / 1e6
        for d, child in pending:
            if d == depth + 1:
                parent[child] = module
        pending = [(d, m) for d, m in pending if d <= depth] + [(depth, module)]
    for module, importer in parent.items():
        top = module.split(".")[0]
        if importer.split(".")[0] != top:
            first_module.setdefault(top, module)
    chains = {}
    for top, module in first_module.items():
        chain = [module]
        while chain[-1] in parent and len(chain) < 40:
            chain.append(parent[chain[-1]])
        chains[top] = chain[::-1]
    return dict(own), chains, sum(own.values())


def _importtime(cmd: list[str], cwd: str) -> list[str]:
    import subprocess

    done = subprocess.run([sys.executable, "-X", "importtime", *cmd], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False, cwd=cwd)
    if done.returncode not in (0,):
        raise SystemExit(f"failed (exit {done.returncode}): {' '.join(cmd)}\n{done.stderr[-2000:]}")
    return done.stderr.splitlines()


def _shorten(chain: list[str]) -> list[str]:
    """The chain from the first corpusforge module on, each package's run of modules cut to its last."""
    firsts = [i for i, m in enumerate(chain) if m.startswith("corpusforge")]
    chain = chain[firsts[-1]:] if firsts else chain
    return [m for i, m in enumerate(chain) if i + 1 == len(chain) or m.split(".")[0] != chain[i + 1].split(".")[0]
            or m.startswith("corpusforge")]


def print_imports(workdir: str, stages: list[str], top: int) -> None:
    """Import time by top-level package of a one-document build and of ``corpusforge --help``."""
    one = os.path.join(workdir, "corpus-1")
    write_corpus(one, 1, kind="distinct", files=1)
    runs = (("corpusforge --help", ["-m", "corpusforge", "--help"]),
            (f"one-document build, stages {','.join(stages)}",
             ["-m", "corpusforge", *build_args(one, os.path.join(workdir, "run-imports"), stages)]))
    for title, cmd in runs:
        own, chains, total = import_times(_importtime(cmd, workdir))
        print(f"\nimports of {title}: {total:.2f} s in all (own time of every module, by top-level package; "
              f"load average {os.getloadavg()[0]:.1f})", flush=True)
        for package, seconds in sorted(own.items(), key=lambda kv: -kv[1])[:top]:
            via = " > ".join(_shorten(chains[package])) if package in chains else "(imported inside a function)"
            print(f"  {package:<28} {seconds:>6.2f} s  {via}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--stages", default=",".join(ALL_STAGES), help="Comma-separated stages to run.")
    parser.add_argument("--workdir", default=None, help="Where the corpus and runs go (default: a temporary directory, removed at exit).")
    parser.add_argument("--corpus", choices=("distinct", "multilingual"), default="distinct",
                        help="bench/build.py's corpus the docs are drawn from (the one-document build subtracted as "
                             "start-up stays distinct's): distinct (English) or multilingual (German, French, "
                             "Spanish, Greek, Russian, Chinese, Japanese).")
    parser.add_argument("--top", type=int, default=0, help="Also print the N functions with the most own time.")
    parser.add_argument("--entries", type=int, default=0,
                        help="Also print, per step, the N functions Beam called that took the most time.")
    parser.add_argument("--plain", action="store_true", help="Only the plain builds' figures, no profile.")
    parser.add_argument("--startup", type=int, default=0, metavar="N",
                        help="Only time a one-document build in a fresh process, N times.")
    parser.add_argument("--against", default=None, metavar="COMMIT_OR_DIR",
                        help="With --startup, --graph or --plain: also time corpusforge as of a git commit of this repository (or the "
                             "corpusforge package found in a folder, put on PYTHONPATH), alternating runs, and "
                             "print the ratio.")
    parser.add_argument("--rounds", type=int, default=3, help="With --plain --against: alternating rounds.")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="A config setting for every build run here (corpusforge build --set), e.g. "
                             "dedup.near.components=distributed.")
    parser.add_argument("--email", action="store_true",
                        help="With --startup or --plain: the one document also holds an e-mail address (so PII loads "
                             "Presidio in it; with --plain, Presidio's one-off import is then subtracted as start-up "
                             "instead of counted as per-document work).")
    parser.add_argument("--graph", action="store_true",
                        help="Only print the fused stages of a one-document build (and --against's).")
    parser.add_argument("--instructions", action="store_true",
                        help="Only count instructions per document under valgrind (cachegrind), this tree's and "
                             "--against's: a figure machine load does not move. ~50x slower: use --docs 400.")
    parser.add_argument("--imports", action="store_true",
                        help="Only print the import time by top-level package of a one-document build and of --help.")
    args = parser.parse_args()
    stages = [s for s in args.stages.split(",") if s]
    SETTINGS.extend(args.set)
    workdir = os.path.abspath(args.workdir or temporary_workdir("cf-bench-profile-"))
    if args.imports:
        print_imports(workdir, stages, args.top or 25)
        return
    if args.graph:
        count_stages(workdir, stages, args.against)
        return
    if args.instructions:
        count_instructions(workdir, stages, args.docs, args.against, args.corpus)
        return
    if args.startup:
        time_startup(workdir, stages, args.startup, args.against, email=args.email)
        return
    if args.plain and args.against:
        time_per_document(workdir, stages, args.docs, args.rounds, args.against, email=args.email, kind=args.corpus)
        return
    corpus = os.path.join(workdir, f"corpus-{args.corpus}-{args.docs}")
    text_mb = write_corpus(corpus, args.docs, kind=args.corpus) / 1e6
    print(f"{args.docs:,} web-like docs ({args.corpus}, {text_mb:.1f} MB of text); stages {','.join(stages)}; settings "
          f"{' '.join(SETTINGS) or 'default'}; in-process DirectRunner; one-document build"
          f"{' with an e-mail' if args.email else ''}; load average {os.getloadavg()[0]:.1f}; work dir {workdir}",
          flush=True)

    # A one-document build twice first (the first pays the imports): the second costs what every build costs
    # besides its documents (graph, model loads, every fused stage run once), so the difference is per-document.
    one = write_one(workdir, args.email)
    run_build(build_args(one, os.path.join(workdir, "run-1"), stages))
    fixed = run_build(build_args(one, os.path.join(workdir, "run-1"), stages))
    fixed_cpu = _LAST_CPU[0]
    wall = run_build(build_args(corpus, os.path.join(workdir, "run-plain"), stages))
    cpu = _LAST_CPU[0]
    print(f"plain build: {wall:.1f} s wall ({args.docs / wall:.0f} docs/s); a 1-document build in the same process "
          f"(imports done): {fixed:.1f} s; per-document work (the difference) {args.docs / max(wall - fixed, 1e-9):.0f} "
          "docs/s", flush=True)
    # CPU time of this process (the in-process runner's threads included) moves less than wall time when other
    # jobs share the machine
    print(f"CPU: {cpu:.1f} s, 1-document build {fixed_cpu:.1f} s; per-document work "
          f"{args.docs / max(cpu - fixed_cpu, 1e-9):.0f} docs per CPU-second", flush=True)

    if args.plain:
        return
    profiler = cProfile.Profile()
    profiler.enable()
    run_build(build_args(corpus, os.path.join(workdir, "run-profiled"), stages))
    profiler.disable()
    stats = pstats.Stats(profiler)
    entries: dict[str, collections.Counter] = {}
    steps, total = attribute(stats, entries)
    beam_own = total - sum(steps.values())
    print(f"\nprofiled build: {total:.1f} s under cProfile; by step (inclusive of the libraries each calls):")
    print(f"{'step':<36} {'seconds':>8} {'share':>6} {'us/doc':>8}")
    for step, seconds in sorted(steps.items(), key=lambda kv: -kv[1]) + [("Beam's own work (the rest)", beam_own)]:
        print(f"{step:<36} {seconds:>8.2f} {100 * seconds / total:>5.1f}% {1e6 * seconds / args.docs:>8.0f}")
    if args.entries:
        print(f"\nper step, the {args.entries} functions Beam called with the most time (inclusive):")
        for step, seconds in sorted(steps.items(), key=lambda kv: -kv[1]):
            for where, t in entries.get(step, collections.Counter()).most_common(args.entries):
                print(f"{step:<36} {t:>8.2f} s  {where}")
    if args.top:
        print(f"\nthe {args.top} functions with the most own time:")
        for seconds, where in top_functions(stats, args.top):
            print(f"{seconds:>8.2f} s  {where}")


if __name__ == "__main__":
    main()
