"""CPU seconds of a multi-process build, by fused stage and process, and its critical path.

    python bench/critical_path.py OUT.json -- build --input 'corpus/*.jsonl.zst' --run-dir run \\
        --direct_running_mode=multi_processing --direct_num_workers=2

Runs ``corpusforge ARGS`` in this process (the driver) with Beam's FnApiRunner timed per bundle: before and
after each bundle it reads the CPU seconds of this process (every thread: the gRPC data plane included) and of
each of its child processes (Beam's SDK workers) from /proc. A multi-process FnApiRunner runs one fused stage
at a time, each stage's input split between the workers, so on an idle machine with a core per process a
stage takes about its busiest process's CPU, and the build about:

    critical path = driver CPU outside bundles (graph, planning, stats) + the workers' start-up (largest)
                    + sum over bundles of max(driver's CPU in it, each worker's CPU in it)

which counts the driver's serial work, every stage's imbalance and the workers' start-up as serial (an upper
bound on wall time: the workers start while the driver plans). The speed-up over one worker on an idle
machine is at most (one worker's CPU) / (critical path). OUT.json gets the totals and, per fused stage, the
driver's and the workers' CPU seconds, the stage's share of the critical path and its input bytes held by the
driver (in-memory shuffles only). Run it back to back with the in-process build (no multi-processing flags:
its ``critical_path`` is then its CPU seconds) on a shared machine: CPU seconds move with the load.
"""
from __future__ import annotations

import atexit
import json
import os
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    pids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                pids += [int(p) for p in f.read().split()]
    except OSError:  # it exited while it was read
        pass
    return pids


def _child_pids() -> list[int]:
    """Every process under this one (Beam starts each SDK worker through a shell)."""
    todo, pids = _children(os.getpid()), []
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo += _children(pid)
    return pids


def _cpu(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / HZ  # utime + stime


def _snapshot() -> tuple[float, dict[int, float]]:
    return time.process_time(), {pid: _cpu(pid) for pid in _child_pids()}


BUNDLES: list[dict] = []
WORKERS: dict[int, float] = {}  # last CPU seconds seen per worker process


def install() -> None:
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    execute = fn_runner.FnApiRunner._execute_bundle

    def timed(self, runner_execution_context, bundle_context_manager, bundle_input):
        driver0, workers0 = _snapshot()
        wall0 = time.perf_counter()
        try:
            return execute(self, runner_execution_context, bundle_context_manager, bundle_input)
        finally:
            driver1, workers1 = _snapshot()
            WORKERS.update(workers1)
            inputs = bundle_input.data.values()
            BUNDLES.append({
                "stage": bundle_context_manager.stage.name,
                "wall": time.perf_counter() - wall0,
                "driver": driver1 - driver0,
                "workers": {pid: workers1[pid] - workers0.get(pid, 0.0) for pid in workers1},
                "input_bytes": sum(len(b) for buf in inputs for b in getattr(buf, "_inputs", ())),
            })

    fn_runner.FnApiRunner._execute_bundle = timed


def summary(driver_total: float) -> dict:
    in_bundles = sum(b["driver"] for b in BUNDLES)
    worker_in = {pid: sum(b["workers"].get(pid, 0.0) for b in BUNDLES) for pid in WORKERS}
    worker_outside = {pid: WORKERS[pid] - worker_in[pid] for pid in WORKERS}
    steps = sum(max([b["driver"], *b["workers"].values()]) for b in BUNDLES)
    busy = [pid for pid in sorted(WORKERS) if WORKERS[pid] >= 0.05]  # not the shells Beam starts workers with
    startup = max(worker_outside.values(), default=0.0)
    stages: dict[str, list[float]] = {}
    for b in BUNDLES:
        row = stages.setdefault(b["stage"], [0.0, 0.0, 0.0, 0])
        row[0] += b["driver"]
        row[1] += sum(b["workers"].values())
        row[2] += max([b["driver"], *b["workers"].values()])
        row[3] += b["input_bytes"]
    return {
        "driver_cpu": driver_total, "driver_outside_bundles": driver_total - in_bundles,
        "driver_in_bundles": in_bundles, "workers_cpu": [WORKERS[p] for p in busy],
        "workers_outside_bundles": [worker_outside[p] for p in busy],
        "bundles": len(BUNDLES), "bundles_max": steps, "bundles_wall": sum(b["wall"] for b in BUNDLES),
        "critical_path": driver_total - in_bundles + startup + steps,
        "stages": {name: dict(zip(("driver", "workers", "critical", "input_bytes"), row)) for name, row in stages.items()},
    }


def main() -> None:
    out, argv = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    install()
    atexit.register(lambda: json.dump(summary(time.process_time()), open(out, "w"), indent=1))
    from corpusforge.cli.main import run  # the command as users run it: lean Beam imports, gc frozen at exit

    sys.argv = ["corpusforge", *argv]
    run()


if __name__ == "__main__":
    main()
