"""What each worker process of a multi-process build spends on setting fused stages up, by thread CPU seconds.

    python bench/worker_setup.py --docs 100            # normalize + dedup, 2 worker processes
    python bench/worker_setup.py --docs 2000 --against e070e11

Runs ``corpusforge build`` (``python -m corpusforge build``'s path: lean imports) on a `distinct` corpus
(bench/build.py's generator) with ``--direct_running_mode=multi_processing --direct_num_workers=2``, each worker
started through this script, which runs ``corpusforge.core.sdk_worker`` as the build would and adds timers.
Each worker reports, in CPU seconds of the thread that did the work (``time.thread_time``):

- ``bundles``: every ProcessBundle request on the bundle thread, making the bundle processor included;
- ``make``: making the bundle processors on that thread (Beam's ``BundleProcessorCache.get`` when it has none for
  the stage: the operations' set-up, DoFn signatures, the state/timer lookup);
- ``tree``: Beam's ``create_execution_tree``, which each bundle processor runs on a thread of its own
  (``ExecutionTreeCreator``): unpickling each DoFn, pickling it again with its windowing, coders; the modules
  the DoFns live in are imported there the first time;
- ``process``: the whole process (imports at start-up, gRPC and data-plane threads included).

The driver reports when Beam's runner is reached (after the driver's imports, config and graph), when it starts
the first worker, and when the first fused stage, which waits on the workers' start-up, is done.

Each worker makes one bundle processor per fused stage it runs (Beam caches them by stage, and a build runs
each stage once), so ``make`` and ``tree`` over the stage count is the set-up a fused stage costs a worker.
CPU seconds move with the machine's load: compare trees with ``--against`` (same run, alternating).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(argv: list[str]) -> None:
    """A worker process: ``corpusforge.core.sdk_worker.main`` with timers; writes $CF_WORKER_SETUP_DIR/<pid>.json."""
    import collections
    import threading

    from corpusforge.core import sdk_worker

    sdk_worker.import_modules(sdk_worker.LEAN in argv)
    from apache_beam.runners.worker import bundle_processor
    from apache_beam.runners.worker import sdk_worker as harness

    spent: collections.Counter = collections.Counter()
    lock = threading.Lock()

    def timed(owner, name: str, key: str, count: str | None = None) -> None:
        original = getattr(owner, name)

        def run(*args, **kwargs):
            started = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                with lock:
                    spent[key] += time.thread_time() - started
                    if count:
                        spent[count] += 1

        setattr(owner, name, run)

    timed(harness.SdkWorker, "process_bundle", "bundles", "stages")
    timed(harness.BundleProcessorCache, "get", "make")
    timed(bundle_processor.BundleProcessor, "create_execution_tree", "tree")
    try:
        sdk_worker.main(argv)
    finally:
        spent["process"] = time.process_time()
        with open(os.path.join(os.environ["CF_WORKER_SETUP_DIR"], f"{os.getpid()}.json"), "w") as f:
            json.dump(spent, f)


def driver(argv: list[str]) -> None:
    """The build's driver: ``corpusforge build ARGV`` with worker processes started through ``worker``; writes
    $CF_WORKER_SETUP_DIR/driver.json: wall and CPU seconds since the process started when Beam's runner starts
    the first worker, and when the first fused stage (which waits on the workers' start-up) ends."""
    import atexit
    import shlex

    from corpusforge.core import sdk_worker

    started = time.perf_counter() - time.process_time()  # ~when the interpreter started
    marks: dict[str, list[float]] = {}

    def mark(label: str) -> None:
        marks.setdefault(label, [time.perf_counter() - started, time.process_time()])

    sdk_worker.command = lambda lean: " ".join(
        [shlex.quote(sys.executable), shlex.quote(os.path.abspath(__file__)), "--worker", *([sdk_worker.LEAN] if lean else [])])
    from corpusforge.core import direct_runner

    run_pipeline = direct_runner.DirectRunner.run_pipeline

    def timed_run_pipeline(self, *args, **kwargs):
        from apache_beam.runners.portability.fn_api_runner import fn_runner, worker_handlers

        start_worker = worker_handlers.SubprocessSdkWorkerHandler.start_worker
        execute = fn_runner.FnApiRunner._execute_bundle

        def timed_start_worker(handler):
            mark("first worker started")
            return start_worker(handler)

        def timed_execute(runner, *a, **k):
            try:
                return execute(runner, *a, **k)
            finally:
                mark("first stage done")

        worker_handlers.SubprocessSdkWorkerHandler.start_worker = timed_start_worker
        fn_runner.FnApiRunner._execute_bundle = timed_execute
        mark("runner reached")
        return run_pipeline(self, *args, **kwargs)

    direct_runner.DirectRunner.run_pipeline = timed_run_pipeline

    def report() -> None:
        mark("exit")
        with open(os.path.join(os.environ["CF_WORKER_SETUP_DIR"], "driver.json"), "w") as f:
            json.dump(marks, f)

    atexit.register(report)
    from corpusforge.cli.main import run

    sys.argv = ["corpusforge", *argv]
    run()


def measure(tree: str, corpus: str, out: str) -> list[dict]:
    from bench.workdirs import temporary_workdir  # main put the repository on sys.path

    reports = temporary_workdir("cf-worker-setup-")
    env = dict(os.environ, PYTHONPATH=tree, CF_WORKER_SETUP_DIR=reports, OMP_NUM_THREADS="1")
    cmd = [sys.executable, os.path.abspath(__file__), "--driver", "build", "--input", os.path.join(corpus, "*.jsonl.zst"),
           "--run-dir", out, "--overwrite", "--no-progress", "--set=quality.enabled=false", "--set=pii.enabled=false",
           "--direct_running_mode=multi_processing", "--direct_num_workers=2"]
    subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), check=True, stdout=subprocess.DEVNULL)
    return [json.load(open(os.path.join(reports, name))) for name in sorted(os.listdir(reports))]  # driver.json last


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("--worker", "--driver"):
        role, argv = sys.argv[1], sys.argv[2:]
        return worker(argv) if role == "--worker" else driver(argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--against", default=None, metavar="COMMIT",
                        help="Also measure this commit (git archive into a temp dir), alternating with this tree.")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(HERE, ".."))
    from bench.build import write_corpus
    from bench.workdirs import temporary_workdir

    work = temporary_workdir("cf-bench-worker-setup-")
    corpus = os.path.join(work, "corpus")
    write_corpus(corpus, args.docs, kind="distinct")
    trees = {"this tree": os.path.join(HERE, "..")}
    if args.against:
        other = os.path.join(work, "against")
        os.makedirs(other)
        archive = subprocess.run(["git", "-C", trees["this tree"], "archive", args.against], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", other], input=archive.stdout, check=True)
        trees = {args.against: other, **trees}
    print(f"{args.docs} docs, normalize + dedup, 2 worker processes; CPU s per worker (ms per fused stage)")
    print(f"{'tree':>12} {'stages':>6} {'make':>14} {'tree':>14} {'bundles':>14} {'process':>8}")
    for _ in range(args.rounds):
        for name, tree in trees.items():
            *workers, marks = measure(tree, corpus, os.path.join(work, "run"))
            for report in workers:
                n = report.get("stages", 0) or 1
                cell = lambda key: f"{report.get(key, 0):.3f} ({1e3 * report.get(key, 0) / n:4.1f})"
                print(f"{name:>12} {report.get('stages', 0):>6} {cell('make'):>14} {cell('tree'):>14} "
                      f"{cell('bundles'):>14} {report['process']:>8.2f}", flush=True)
            print(f"{'':>12} driver, s since start (wall / CPU): " + ", ".join(
                f"{label} {wall:.2f} / {cpu:.2f}" for label, (wall, cpu) in marks.items()), flush=True)


if __name__ == "__main__":
    main()
