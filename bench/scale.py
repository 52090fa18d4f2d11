"""Build throughput on 1 and 2 workers, per runner, on one corpus; and where the time goes.

    python bench/scale.py                                  # 5k docs, normalize,quality,dedup
    python bench/scale.py --docs 20000 --stages normalize,quality,dedup,pii --runs direct-mp-2 dask-2

Runs (each `corpusforge build` in a subprocess, on the same corpus, in this order):
  in-process     DirectRunner, one process (the reference)
  direct-mp-1/2  DirectRunner --direct_running_mode=multi_processing --direct_num_workers=1/2
  dask-1/2       corpusforge.core.dask_runner.DaskRunner on a dask.distributed LocalCluster of 1/2 worker processes
                 (one thread each), started in its own process before the run and stopped after it

Corpus: bench/build.py's ``write_corpus`` (real prose, 8 .jsonl.zst files, fixed seed); wall time and exit
code come from bench/build.py's ``measure``. Per run it prints docs/s, the speed-up over 1 worker of the same
runner, the peak RSS of all processes involved (driver tree + cluster tree, summed at each 0.2 s sample),
and CPU seconds by process role, read with psutil:
  driver     the `corpusforge build` process (builds the graph; on the DirectRunner it also runs the
             shuffles: the FnApi runner's GroupByKey buffers live in the driver)
  workers    Beam SDK worker processes (DirectRunner) or Dask worker processes
  scheduler  the Dask scheduler (and nannies) process
Driver and DirectRunner-worker figures are each process's last sample before it exited (up to 0.2 s of CPU
missed per process); the cluster's are exact (read before and after the run; worker start-up excluded,
their Beam imports and model loads included).

Where time goes in serialisation (``--no-serialisation`` skips it): one extra in-process build counts how
often a ``Document`` is pickled and unpickled (Beam's coder for ``Document`` is FastPrimitivesCoder, which
pickles it; every pickle is a crossing of a fused-stage boundary: a shuffle, a side input, a process
boundary), split by whether the text travelled inline or by reference to a spill file. Separately, Beam's
coder encodes and decodes the corpus's documents in both forms to give a cost per crossing. Their product
is an estimate of the CPU seconds spent encoding and decoding documents in that build, compared with the
build's own CPU seconds. It leaves out keys, facts and other small elements, and documents grow a few
annotations on the way, so it is a lower bound on what the documents' serialisation costs.
"""
from __future__ import annotations

import argparse
import collections
import json
import contextlib
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.build import ALL_STAGES, measure, write_corpus  # noqa: E402
from bench.workdirs import temporary_workdir  # noqa: E402

RUNS = ("in-process", "direct-mp-1", "direct-mp-2", "dask-1", "dask-2")

_CLUSTER = """
import sys
from distributed import LocalCluster
cluster = LocalCluster(n_workers=int(sys.argv[1]), threads_per_worker=1, processes=True, dashboard_address=None)
print(cluster.scheduler_address, flush=True)
sys.stdin.read()  # runs until the benchmark closes stdin
cluster.close()
"""


class Cluster:
    """A LocalCluster in its own process (its CPU and memory are measured apart from the driver's)."""

    def __init__(self, workers: int):
        self.proc = subprocess.Popen([sys.executable, "-c", _CLUSTER, str(workers)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.address = self.proc.stdout.readline().strip()
        if not self.address:
            raise SystemExit("the Dask LocalCluster did not start (pip install 'corpusforge[dask]')")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


class Sampler(threading.Thread):
    """Every 0.2 s: RSS of every process under this one, and the CPU seconds of each, by role."""

    def __init__(self, cluster_pid: int | None):
        super().__init__(daemon=True)
        import psutil

        self.psutil, self.cluster_pid = psutil, cluster_pid
        self.me = psutil.Process()
        self.stop, self.peak_rss = threading.Event(), 0
        self.cpu: dict[int, tuple[str, float]] = {}
        self.start_cpu = self._cluster_cpu()

    def _roles(self) -> list:
        out = []
        for child in self.me.children():
            out.append((child, "scheduler" if child.pid == self.cluster_pid else "driver"))
            try:
                out += [(p, "workers") for p in child.children(recursive=True)]
            except self.psutil.Error:  # the tree changed while it was listed
                pass
        return out

    def _cluster_cpu(self) -> dict[tuple[str, int], float]:
        if not self.cluster_pid:
            return {}
        root = self.psutil.Process(self.cluster_pid)
        out = {}
        for p, role in ((root, "scheduler"), *((q, "workers") for q in root.children(recursive=True))):
            t = p.cpu_times()
            out[(role, p.pid)] = t.user + t.system
        return out

    def run(self):
        while not self.stop.is_set():
            rss = 0
            for p, role in self._roles():
                try:
                    t, m = p.cpu_times(), p.memory_info()
                except self.psutil.Error:
                    continue
                rss += m.rss
                self.cpu[p.pid] = (role, t.user + t.system)
            self.peak_rss = max(self.peak_rss, rss)
            time.sleep(0.2)

    def finish(self) -> dict[str, float]:
        end_cluster = self._cluster_cpu()  # before stopping: the cluster is still alive and exact
        self.stop.set()
        self.join()
        by_role = collections.Counter()
        cluster_pids = {pid for _, pid in end_cluster}
        for pid, (role, seconds) in self.cpu.items():
            if pid not in cluster_pids:
                by_role[role] += seconds
        for key, seconds in end_cluster.items():
            by_role[key[0]] += seconds - self.start_cpu.get(key, 0.0)
        return dict(by_role)


SETTINGS: list[str] = []  # --set KEY=VALUE for every build


def build_command(corpus: str, run_dir: str, stages: list[str], flags: list[str]) -> list[str]:
    off = [f"--set={s}.enabled=false" for s in ALL_STAGES if s not in stages]
    return [sys.executable, "-m", "corpusforge", "build", "--input", os.path.join(corpus, "*.jsonl.zst"),
            "--run-dir", run_dir, "--overwrite", "--no-progress", *off, *(f"--set={x}" for x in SETTINGS), *flags]


def run_flags(name: str, cluster: Cluster | None) -> list[str]:
    if name == "in-process":
        return []
    kind, workers = name.rsplit("-", 1)
    if kind == "direct-mp":
        return ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"]
    return ["--runner=DaskRunner", f"--dask_client_address={cluster.address}"]


def clean_bytes(run_dir: str) -> dict[str, bytes]:
    clean = os.path.join(run_dir, "clean")
    return {name: open(os.path.join(clean, name), "rb").read() for name in sorted(os.listdir(clean))}


def run_one(name: str, corpus: str, workdir: str, stages: list[str]) -> dict:
    workers = 1 if name == "in-process" else int(name.rsplit("-", 1)[1])
    cluster = Cluster(workers) if name.startswith("dask") else None
    try:
        sampler = Sampler(cluster.proc.pid if cluster else None)
        sampler.start()
        run_dir = os.path.join(workdir, f"run-{name}")
        wall, _, code = measure(build_command(corpus, run_dir, stages, run_flags(name, cluster)))
        cpu = sampler.finish()
    finally:
        if cluster:
            cluster.close()
    return {"run": name, "workers": workers, "wall": wall, "code": code, "peak_mb": sampler.peak_rss / 1e6,
            "cpu": cpu, "run_dir": run_dir}


# --------------------------------------------------------------------------------- serialisation
def count_document_pickles(corpus: str, run_dir: str, stages: list[str]) -> dict[str, int]:
    """Run the build in this process with Document's pickling hooks counted (in-process DirectRunner)."""
    from corpusforge.cli.main import main
    from corpusforge.pipeline.document import Document

    counts = collections.Counter()
    get, set_ = Document.__getstate__, Document.__setstate__

    def counting_get(self):
        counts["encoded_by_reference" if self.__dict__.get("text_ref") is not None else "encoded_with_text"] += 1
        return get(self)

    def counting_set(self, state):
        counts["decoded"] += 1
        return set_(self, state)

    Document.__getstate__, Document.__setstate__ = counting_get, counting_set
    try:
        cmd = build_command(corpus, run_dir, stages, [])
        started = time.process_time()
        with contextlib.redirect_stdout(open(os.devnull, "w")):
            code = main(cmd[cmd.index("build"):])
        counts["cpu_seconds"] = time.process_time() - started
        if code != 0:
            raise SystemExit(f"the counting build failed (exit {code})")
    finally:
        Document.__getstate__, Document.__setstate__ = get, set_
    return dict(counts)


def coder_cost(corpus: str, limit: int = 5000) -> dict[str, float]:
    """Seconds per document for Beam's coder to encode + decode a Document, text inline and by reference."""
    import zstandard
    from apache_beam import coders

    from corpusforge.pipeline.document import Document

    docs = []
    for name in sorted(os.listdir(corpus)):
        with open(os.path.join(corpus, name), "rb") as f:
            for line in zstandard.ZstdDecompressor().stream_reader(f).read().splitlines():
                record = json.loads(line)
                docs.append(Document(id=f"bench/{record['id']}", text=record["text"], source="bench"))
    docs = docs[:limit]
    coder = coders.registry.get_coder(Document)
    out = {"coder": type(coder).__name__, "bytes_per_doc_with_text": 0.0}
    for form, batch in (("with_text", docs), ("by_reference", [d.with_ref(("/spill/x.txt", 0, len(d.text))) for d in docs])):
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            encoded = [coder.encode(d) for d in batch]
            for e in encoded:
                coder.decode(e)
            best = min(best, time.perf_counter() - started)
        out[form] = best / len(batch)
        if form == "with_text":
            out["bytes_per_doc_with_text"] = sum(map(len, encoded)) / len(batch)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--stages", default="normalize,quality,dedup", help="Comma-separated stages to run.")
    parser.add_argument("--runs", nargs="+", choices=RUNS, default=list(RUNS))
    parser.add_argument("--workdir", default=None, help="Where the corpus and runs go (default: a temporary directory, removed at exit).")
    parser.add_argument("--no-serialisation", action="store_true", help="Skip the pickling count and coder timing.")
    parser.add_argument("--json", default=None, help="Also write every figure to this JSON file.")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="A config setting for every build, e.g. output.disk_shuffle_mb=0 (shuffles on disk).")
    args = parser.parse_args()
    SETTINGS.extend(args.set)
    stages = [s for s in args.stages.split(",") if s]
    workdir = args.workdir or temporary_workdir("cf-bench-scale-")
    corpus = os.path.join(workdir, f"corpus-{args.docs}")
    text_mb = write_corpus(corpus, args.docs) / 1e6
    print(f"{args.docs:,} docs ({text_mb:.1f} MB of text); stages {','.join(stages)}; {os.cpu_count()} CPU cores; "
          f"load average {os.getloadavg()[0]:.1f}; work dir {workdir}", flush=True)
    print(f"{'run':<12} {'wall s':>7} {'docs/s':>7} {'speed-up':>8} {'peak MB':>8} {'driver':>7} {'workers':>8} "
          f"{'sched.':>7}  (CPU seconds)", flush=True)
    results, one_worker = [], {}
    for name in args.runs:
        r = run_one(name, corpus, workdir, stages)
        family = name.rsplit("-", 1)[0]
        if r["workers"] == 1:
            one_worker.setdefault(family, r["wall"])
        speedup = f"{one_worker[family] / r['wall']:.2f}x" if family in one_worker and r["workers"] > 1 else "-"
        cpu = r["cpu"]
        status = "" if r["code"] == 0 else f"  FAILED (exit {r['code']})"
        print(f"{name:<12} {r['wall']:>7.1f} {args.docs / r['wall']:>7.0f} {speedup:>8} {r['peak_mb']:>8.0f} "
              f"{cpu.get('driver', 0):>7.1f} {cpu.get('workers', 0):>8.1f} {cpu.get('scheduler', 0):>7.1f}{status}",
              flush=True)
        results.append({k: v for k, v in r.items() if k != "run_dir"} | {"speedup": speedup})
    ok = [r for r in results if r["code"] == 0]
    ref = os.path.join(workdir, f"run-{ok[0]['run']}") if ok else None
    same = all(clean_bytes(os.path.join(workdir, f"run-{r['run']}")) == clean_bytes(ref) for r in ok) if ok else False
    print(f"clean shards byte-identical across the {len(ok)} successful runs: {same}", flush=True)

    serial = None
    if not args.no_serialisation:
        counts = count_document_pickles(corpus, os.path.join(workdir, "run-counted"), stages)
        cost = coder_cost(corpus)
        seconds = (counts.get("encoded_with_text", 0) * cost["with_text"]
                   + counts.get("encoded_by_reference", 0) * cost["by_reference"])
        serial = {"counts": counts, "coder": cost, "estimated_seconds": seconds}
        encodes = counts.get("encoded_with_text", 0) + counts.get("encoded_by_reference", 0)
        print(f"serialisation (in-process build, counted): {encodes:,} Document pickles "
              f"({encodes / args.docs:.1f} per input document; {counts.get('encoded_with_text', 0):,} with the text, "
              f"{counts.get('encoded_by_reference', 0):,} by reference), {counts.get('decoded', 0):,} unpickles", flush=True)
        print(f"  {cost['coder']} encode+decode: {cost['with_text'] * 1e6:.1f} us/doc with text "
              f"({cost['bytes_per_doc_with_text']:.0f} B), {cost['by_reference'] * 1e6:.1f} us/doc by reference", flush=True)
        print(f"  estimated document serialisation: {seconds:.2f} CPU s of the build's {counts['cpu_seconds']:.1f} "
              f"({100 * seconds / counts['cpu_seconds']:.1f} %)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"docs": args.docs, "text_mb": text_mb, "stages": stages, "cpus": os.cpu_count(),
                       "runs": results, "byte_identical": same, "serialisation": serial}, f, indent=2)


if __name__ == "__main__":
    main()
