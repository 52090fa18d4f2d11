"""Build throughput and peak memory on DirectRunner at several corpus sizes and worker counts.

    python bench/build.py --sizes 10000 100000 --workers 1 2
    python bench/build.py --sizes 1000000 --workers 2 --stages normalize,quality
    python bench/build.py --sizes 10000 100000 --workers 1 --spill both   # text spilled to disk vs in memory
    python bench/build.py --corpus distinct --sizes 5000 --workers 1 --digests  # + sha256 of each run's outputs
    python bench/build.py --corpus distinct --sizes 5000 --workers 1 --peer     # + per stage vs datatrove
    python bench/build.py --corpus distinct --sizes 2000 --workers 1 2 --digests --set dedup.near.components=distributed

Corpus (`--corpus`), drawn with a fixed seed from real prose (Python's reStructuredText documentation from
Debian's python3.11-doc, `apt-get install python3.11-doc`, plus pydoc topics) and written as 8 .jsonl.zst files:

- `passages` (default): documents of 1-6 consecutive paragraphs of one page. There are only ~45k such runs,
  so large corpora are mostly exact duplicates, and with `--segments 2` most documents share a passage.
- `distinct`: a web-like corpus. Documents of 2-5 paragraphs of 3-8 sentences mixed from all pages (~2.4 KB;
  two of them rarely share a sentence), plus 5 % exact copies and 5 % edited copies (typos, substitutions,
  dropped or swapped paragraphs, boilerplate, truncation) of recent documents.
- `multilingual`: `distinct`'s shape in other languages and scripts, from the gettext catalogs installed
  (bench/lang_data/parallel.py, no network): each document in one of German, French, Spanish (20/15/15 %),
  Greek (15 %), Russian (20 %), Chinese, Japanese (7.5 % each, sentences joined without spaces), its
  sentences translated program messages (prose: ~80 characters, a full stop added where a message has none;
  ~20k in all), with the same exact and edited copies.
 Each run is `corpusforge build` in a subprocess; peak memory is the largest sum of RSS
over the whole process tree (driver and Beam workers), sampled every 0.2 s with psutil. CPU seconds are the
tree's (`CPU s`), the driver's, and each Beam worker process's; `longest` is the busiest process's, so on an
idle machine with a core per process the wall-clock speed-up over one worker is at most one worker's `CPU s`
over this `longest` (``cpu_split``). With 1 worker the build runs in the driver process (no worker processes),
unless `--worker-processes`.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import time

import zstandard

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.dedup_data.corpus import edit, licence_sentences, pages, synthetic_bases  # noqa: E402  (real prose)
from bench.workdirs import temporary_workdir  # noqa: E402

ALL_STAGES = ("normalize", "quality", "dedup", "pii")
LAST_CPU_SECONDS = 0.0  # of the last ``measure``d command
LAST_WORKER_CPU: list[float] = []  # its descendant processes', largest first (``measure``)
LAST_PEAKS: tuple[float, list[float]] = (0.0, [])  # its driver's peak RSS in MB, and each big descendant's (``measure``)


def passage_texts(rng: random.Random, segments: int):
    """Endless texts of ``segments`` runs of 1-6 consecutive paragraphs, each from a random page."""
    page_list = pages()
    while True:
        runs = []
        for _ in range(segments):
            page = page_list[rng.randrange(len(page_list))]
            start = rng.randrange(len(page))
            runs.append("\n\n".join(page[start: start + rng.randint(1, 6)]))
        yield "\n\n".join(runs)


def distinct_texts(rng: random.Random, segments: int, exact: float = 0.05, near: float = 0.05):
    """Endless web-like texts: mostly distinct sentence-mixed documents of ``segments`` x 2-5 paragraphs, with
    ``exact`` copies and ``near`` edited copies of one of the last 1,000 documents."""
    page_list, licences = pages(), licence_sentences()
    recent: list[list[str]] = []
    vocab: list[str] = []
    while True:
        r = rng.random()
        if recent and r < exact:
            yield "\n\n".join(rng.choice(recent))
        elif recent and r < exact + near:
            yield edit(rng.choice(recent), rng, vocab, licences)[0]
        else:
            paras = [p for paras in synthetic_bases(page_list, segments, rng) for p in paras]
            if len(vocab) < 5000:
                vocab.extend(w for w in paras[0].split() if w.isalpha())
            recent = (recent + [paras])[-1000:]
            yield "\n\n".join(paras)


# --corpus multilingual: the share of documents in each language (a locale of the gettext catalogs that
# bench/lang_data/parallel.py reads): accented Latin, Greek, Cyrillic and two scripts written without spaces.
MULTILINGUAL = {"de": 0.2, "fr": 0.15, "es": 0.15, "el": 0.15, "ru": 0.2, "zh_CN": 0.075, "ja": 0.075}
_NO_SPACE = {"zh_CN", "ja"}  # sentences joined without a space, as such text is written
_POOL = 20_000  # sentences drawn from in all: about distinct's ~19.5k, so a sentence repeats about as often


def multilingual_texts(rng: random.Random, segments: int, exact: float = 0.05, near: float = 0.05):
    """Endless web-like texts in ``MULTILINGUAL``'s languages, shaped as ``distinct_texts``: a document of one
    language, ``segments`` x 2-5 paragraphs of 3-8 sentences drawn from that language's pool (translated
    messages of programs' gettext catalogs on the machine, mostly letters, each ending a sentence; ``_POOL`` x
    its share of them, a fixed sample), with
    ``exact`` copies and ``near`` edited copies (``edit``, words substituted from the copy's language) of one of
    the last 1,000 documents. The catalogs follow the packages installed: two machines' corpora differ."""
    import re

    from bench.lang_data.parallel import messages

    pools, vocab = {}, {}
    for locale, share in MULTILINGUAL.items():
        found = messages(locale)
        if not found:
            print(f"note: no gettext catalogs for {locale}: left out of the multilingual corpus", file=sys.stderr)
            continue
        stop = "。" if locale in _NO_SPACE else "."
        found = [m if m[-1] in ".!?…。！？" else m + stop for m in found  # a sentence: prose with its full stop
                 if sum(c.isalpha() or c.isspace() for c in m) >= 0.8 * len(m)]
        pools[locale] = random.Random(f"pool-{locale}").sample(found, min(len(found), round(_POOL * share)))
        vocab[locale] = sorted({w for m in pools[locale] for w in re.findall(r"[^\W\d_]+", m)})
    if not pools:
        raise SystemExit("--corpus multilingual needs gettext catalogs under /usr/share/locale (none found)")
    locales, weights = list(pools), [MULTILINGUAL[locale] for locale in pools]
    licences = licence_sentences()
    recent: list[tuple[str, list[str]]] = []
    while True:
        r = rng.random()
        if recent and r < exact:
            yield "\n\n".join(rng.choice(recent)[1])
        elif recent and r < exact + near:
            locale, paras = rng.choice(recent)
            yield edit(paras, rng, vocab[locale], licences)[0]
        else:
            locale = rng.choices(locales, weights)[0]
            glue = "" if locale in _NO_SPACE else " "
            paras = [glue.join(rng.sample(pools[locale], rng.randint(3, 8)))
                     for _ in range(segments) for _ in range(rng.randint(2, 5))]
            recent = (recent + [(locale, paras)])[-1000:]
            yield "\n\n".join(paras)


CORPORA = {"passages": passage_texts, "distinct": distinct_texts, "multilingual": multilingual_texts}


def write_corpus(directory: str, documents: int, seed: int = 0, files: int = 8, segments: int = 1,
                 kind: str = "passages") -> int:
    """``documents`` docs of real text (``CORPORA[kind]``) in ``files`` .jsonl.zst files; returns the bytes
    of text written."""
    rng = random.Random(seed)
    texts = CORPORA[kind](rng, segments)
    os.makedirs(directory, exist_ok=True)
    writers = [zstandard.ZstdCompressor(level=3).stream_writer(open(os.path.join(directory, f"part-{i}.jsonl.zst"), "wb"))
               for i in range(files)]
    text_bytes = 0
    for n in range(documents):
        text = next(texts)
        line = json.dumps({"id": f"d{n:08d}", "text": text}).encode() + b"\n"
        text_bytes += len(text.encode())
        writers[n % files].write(line)
    for w in writers:
        w.close()
    return text_bytes


def measure(cmd: list[str]) -> tuple[float, float, int]:
    """Run ``cmd``; return (wall seconds, peak RSS of the process tree in MB, exit code). The CPU seconds of
    the process tree (user + system, every waited-for descendant) are left in ``LAST_CPU_SECONDS``: on a
    shared machine they move less than wall time. ``LAST_WORKER_CPU`` gets each descendant process's CPU
    seconds (Beam's SDK worker processes, in a multi-process build) from its last 0.2 s sample before it
    exited (up to ~0.2 s of each missed); the driver's is the rest: ``LAST_CPU_SECONDS - sum(LAST_WORKER_CPU)``."""
    import psutil
    import resource

    global LAST_CPU_SECONDS, LAST_WORKER_CPU, LAST_PEAKS
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    root, peak, workers, peaks = psutil.Process(proc.pid), 0, {}, {}
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            rss = {p.pid: p.memory_info().rss for p in tree if p.is_running()}
            peak = max(peak, sum(rss.values()))
            for pid, value in rss.items():
                peaks[pid] = max(peaks.get(pid, 0), value)
            for p in tree[1:]:
                with contextlib.suppress(psutil.Error):
                    times = p.cpu_times()
                    workers[p.pid] = times.user + times.system
        except psutil.Error:
            pass
        time.sleep(0.2)
    output = proc.stdout.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    LAST_CPU_SECONDS = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    LAST_WORKER_CPU = sorted(workers.values(), reverse=True)
    LAST_PEAKS = (peaks.pop(proc.pid, 0) / 1e6, sorted((v / 1e6 for v in peaks.values() if v > 100e6), reverse=True))
    if proc.returncode:
        print(output[-3000:], file=sys.stderr)
    return time.time() - started, peak / 1e6, proc.returncode


def peaks_split() -> str:
    """The last ``measure``d build's peak RSS by process: the driver's and each worker's over 100 MB (each at its
    own peak, so they need not add up to the tree's peak)."""
    driver, workers = LAST_PEAKS
    return f"  peak MB: driver {driver:.0f}" + (f", workers {'/'.join(f'{w:.0f}' for w in workers)}" if workers else "")


def cpu_split() -> str:
    """The last ``measure``d build's CPU seconds by process, and the wall-clock ratio an idle machine with a
    core per process would give at best: the tree's CPU over the busiest process's (its critical path)."""
    workers = [w for w in LAST_WORKER_CPU if w >= 0.5]  # not the short-lived helpers (a `uname` call)
    driver = LAST_CPU_SECONDS - sum(LAST_WORKER_CPU)
    busiest = max([driver, *workers])
    return f"{driver:>7.1f} {'/'.join(f'{w:.1f}' for w in workers) or '-':>11} {busiest:>7.1f}"


def outcome(run: str, size: int) -> str:
    """Shares of the input kept and removed as exact / near duplicates (the generator repeats passages, so
    small corpora have few duplicates and large ones many: read throughput figures with this beside them)."""
    try:
        with open(os.path.join(run, "stats.json")) as f:
            stats = json.load(f)
    except OSError:
        return ""
    reasons = stats["removed"].get("by_stage", {}).get("dedup", {}).get("reasons", {})
    share = lambda n: f"{100 * n / size:.1f}%"
    return (f"{share(stats['accounting']['kept']):>6} {share(reasons.get('exact_duplicate', 0)):>9} "
            f"{share(reasons.get('near_duplicate', 0)):>8}")


def output_digest(run: str) -> str:
    """sha256 over every clean, removed and rejected shard and stats.json without its timing and the runner's
    metrics: equal digests mean the same decisions and the same bytes (compare before and after a change)."""
    import hashlib

    digest = hashlib.sha256()
    for sub in ("clean", "removed", "rejected"):
        folder = os.path.join(run, sub)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            with open(os.path.join(folder, name), "rb") as f:
                digest.update(f"{sub}/{name}\0".encode() + hashlib.sha256(f.read()).digest())
    with open(os.path.join(run, "stats.json")) as f:
        stats = json.load(f)
    stats.pop("timing", None)
    stats.pop("metrics", None)
    digest.update(json.dumps(stats, sort_keys=True).encode())
    return digest.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--stages", default=",".join(ALL_STAGES), help="Comma-separated stages to run.")
    parser.add_argument("--workdir", default=None, help="Where corpora and runs go (default: a temporary directory, removed at exit).")
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="passages",
                        help="passages: runs of paragraphs, repeating at scale; distinct: web-like, ~90%% distinct; "
                             "multilingual: distinct's shape in German, French, Spanish, Greek, Russian, Chinese, "
                             "Japanese.")
    parser.add_argument("--segments", type=int, nargs="+", default=[1],
                        help="Text units per document (default 1: ~700 bytes for passages, ~2.4 KB for distinct); "
                             "10 makes texts 10x longer.")
    parser.add_argument("--spill", choices=("on", "off", "both"), default="on",
                        help="output.spill_text: shuffle references to spilled text (on, the default) or the text.")
    parser.add_argument("--peer", action="store_true",
                        help="Then corpusforge vs datatrove on the first corpus's documents: per stage, whole "
                             "build, MinHash signatures (bench/build_peer.py; pip install datatrove).")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="A config setting for every build (corpusforge build --set), e.g. "
                             "dedup.near.components=distributed.")
    parser.add_argument("--worker-processes", action="store_true",
                        help="Run 1 worker as a worker process too (Beam's multi_processing mode), not in the driver: "
                             "what the process boundary costs, apart from the second worker.")
    parser.add_argument("--digests", action="store_true",
                        help="Also print a sha256 of each run's outputs (shards and counts; output_digest).")
    args = parser.parse_args()
    stages = [s for s in args.stages.split(",") if s]
    workdir = args.workdir or temporary_workdir("cf-bench-build-")
    off = [f"--set={s}.enabled=false" for s in ALL_STAGES if s not in stages]
    print(f"stages: {', '.join(stages)}; corpus: {args.corpus}; {os.cpu_count()} CPU cores; work dir {workdir}")
    spills = ["on", "off"] if args.spill == "both" else [args.spill]
    print(f"{'docs':>10} {'MB text':>8} {'workers':>7} {'spill':>5} {'wall s':>8} {'docs/s':>8} {'CPU s':>7} "
          f"{'driver':>7} {'worker CPU s':>11} {'longest':>7} {'peak MB':>8} {'kept':>6} {'exact dup':>9} {'near dup':>8}")
    corpora = []
    for size, segments in ((size, segments) for size in args.sizes for segments in args.segments):
        corpus = os.path.join(workdir, f"corpus-{args.corpus}-{size}-x{segments}")
        text_mb = write_corpus(corpus, size, segments=segments, kind=args.corpus) / 1e6
        corpora.append(corpus)
        for workers in args.workers:
            for spill in spills:
                run = os.path.join(workdir, f"run-{args.corpus}-{size}-x{segments}-{workers}-{spill}")
                mode = ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"] if workers > 1 or args.worker_processes else []
                cmd = [sys.executable, "-m", "corpusforge", "build", "--input", os.path.join(corpus, "*.jsonl.zst"),
                       "--run-dir", run, "--overwrite", "--no-progress", f"--set=output.spill_text={spill == 'on'}",
                       *off, *(f"--set={setting}" for setting in args.set), *mode]
                wall, peak, code = measure(cmd)
                status = "" if code == 0 else f"  FAILED (exit {code})"
                digest = f"  outputs {output_digest(run)}" if args.digests and code == 0 else ""
                print(f"{size:>10,} {text_mb:>8.1f} {workers:>7} {spill:>5} {wall:>8.1f} {size / wall:>8.0f} "
                      f"{LAST_CPU_SECONDS:>7.1f} {cpu_split()} {peak:>8.0f} {outcome(run, size)}{status}{digest}{peaks_split()}", flush=True)
    if args.peer:
        from bench.build_peer import side_by_side

        side_by_side(corpora[0], os.path.join(workdir, "peer"))


if __name__ == "__main__":
    main()
