"""corpusforge and datatrove side by side: per stage and whole build, documents per CPU-second, one worker each.

    python bench/build_peer.py                       # 3,000 web-like docs: every row (~4-5 CPU-minutes)
    python bench/build_peer.py --markdown            # ... and the README's benchmark rows, ready to paste
    python bench/build_peer.py --rows normalize,pii  # some rows only (names below)
    python bench/build.py --corpus distinct --sizes 5000 --workers 1 --peer   # after the builds, every row

Both tools run on the same documents in the same command: bench/build.py's ``distinct`` corpus (real prose
from Python's docs, ~2.4 KB per document, 5 % exact and 5 % edited copies) written once as 8 .jsonl.zst files.

What a row measures (CPU seconds, user + system, of the process that runs it and of any child it waited for;
OMP_NUM_THREADS=1; one worker each):

- every measurement runs in a fresh process (no cache warmed by another row) that runs its pipeline three
  times: on a one-document corpus (imports, model loads, start-up), again on that corpus (what every run costs
  whatever its size: graph, executor, per-step set-up, fixed costs), then on the N-document corpus. The
  **per-document work is (N-document run - second one-document run) / (N - 1)**: start-up subtracted.
- corpusforge: ``corpusforge build`` (the CLI's build, in process, DirectRunner, one worker) with only the row's
  stage (and sub-steps) enabled through ``--set``: what a user runs, whatever the stages look like inside
  (documents or batches), so the bench measures whichever tree it runs in.
- datatrove: its pipeline through ``LocalPipelineExecutor(tasks=1, workers=1)`` (in process), each multi-step
  dedup as its documented steps in sequence (MinHash buckets with one task per bucket, as it requires):
  ``JsonlReader`` of the same files -> the row's steps -> ``JsonlWriter`` (uncompressed).
- a stage row subtracts, on each side, the same difference for that tool's pass-through run (read the files,
  write them: ``corpusforge build`` with only normalize on and its every step off (Beam refuses a build with no
  stage: an empty composite); datatrove's reader -> writer): what is left is the
  stage with its shuffles, its passes over the data and its joins ("own work"; the figure with reading and
  writing is printed beside it). A stage's own work under 10 % of its tool's pass-through cannot be told apart
  from run-to-run noise and is shown as ">X (noise)". Whole-build rows subtract nothing but start-up.
- the one-document corpus holds an e-mail address and a phone number, so models a stage loads only for some
  text (Presidio, for a PII candidate) load in start-up, not in the timed run.
- the MinHash signature row times signatures only, in one process, on the corpus's texts, at the stage's
  ``num_perm``: corpusforge's ``MinHasher`` with ``hash: sha1`` (datasketch's hash family: bit-identical
  signatures) and with its default ``hash: fast``, against datasketch's ``MinHash.bulk`` (its fastest path,
  same family as sha1: like with like) and its per-document ``MinHash.update_batch`` loop (its slowest path).

The rules differ (each row's note says how); ``kept`` is each side's surviving share, so a side that drops
more early does less later. Figures on a shared machine move ~10-30 % between runs; the ratio of one run
moves less (both sides see the same load). Needs ``pip install datatrove`` (bench only; corpusforge does not).
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import io
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)
from bench.workdirs import temporary_workdir  # noqa: E402

ALL_STAGES = ("normalize", "quality", "dedup", "pii")
DEDUP_STEPS = ("exact", "near", "lines", "sentences")

# row -> (kind, corpusforge stages on, dedup sub-steps on (None: the stage's defaults), datatrove's path, note)
ROWS = {
    "normalize": ("stage", ["normalize"], None, "FTFYFormatter",
                  "datatrove runs all of ftfy's fixes; corpusforge ftfy on lines its badness screen flags, NFC, "
                  "controls, whitespace"),
    "quality": ("stage", ["quality"], None,
                "LanguageFilter(en, 0.65) -> GopherRepetitionFilter -> GopherQualityFilter -> "
                "C4QualityFilter(filter_no_terminal_punct=False) -> FineWebQualityFilter (FineWeb's order)",
                "both with fastText lid.176.ftz; datatrove's rules tokenize with its spaCy English word tokenizer "
                "(included); corpusforge also runs its junk detectors, rules adapted per language"),
    "dedup: exact": ("stage", ["dedup"], ["exact"], "ExactDedupSignature -> ExactFindDedups -> ExactDedupFilter",
                     "datatrove hashes the raw text; corpusforge folds case, punctuation and digits first"),
    "dedup: near (MinHash)": ("stage", ["dedup"], ["near"],
                              "MinhashDedupSignature -> MinhashDedupBuckets (14 tasks) -> MinhashDedupCluster -> "
                              "MinhashDedupFilter",
                              "datatrove 5-grams, 14x8 bands, clusters unverified; corpusforge 256 permutations, "
                              "candidate pairs verified, components"),
    "dedup: lines + sentences": ("stage", ["dedup"], ["lines", "sentences"],
                                 "SentenceDedupSignature -> SentenceFindDedups -> SentenceDedupFilter",
                                 "datatrove removes repeated 3-sentence spans (spaCy sentence splitter, included), "
                                 "no line dedup; corpusforge repeated lines, then single sentences"),
    "pii": ("stage", ["pii"], None, "PIIFormatter",
            "datatrove masks e-mail and IP addresses (two regexes); corpusforge 10 entity types with Presidio, "
            "pre-screened"),
    "build: every stage": ("build", list(ALL_STAGES), None,
                           "reader -> FTFY -> the quality row's filters -> writer; exact dedup (3 steps); MinHash "
                           "(4 steps); sentence dedup (3 steps) -> PIIFormatter -> writer",
                           "each datatrove step re-reads the previous step's output files (its design)"),
    "build: normalize + dedup": ("build", ["normalize", "dedup"], None,
                                 "reader -> FTFY -> writer; exact dedup (3 steps); MinHash (4 steps); sentence "
                                 "dedup (3 steps) -> writer", "as above, without quality and PII"),
    "minhash signatures": ("signatures", [], None, "datasketch 1.x MinHash", ""),
}


def cpu_seconds() -> float:
    """User + system CPU of this process (all its threads) and of its waited-for children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# ----------------------------------------------------------------------------------------- corpusforge
# corpusforge's pass-through: normalize with every step off (a build with no stage at all is refused by Beam's
# in-process runner: an empty composite), so the run reads, hands every document through one step, and writes.
PASS_THROUGH = ["normalize.fix_mojibake=false", "normalize.unicode_form=none", "normalize.strip_control=false",
                "normalize.collapse_whitespace=false"]


def corpusforge_run(corpus: str, run_dir: str, stages: list[str], dedup_steps: list[str] | None,
                    settings: list[str] = ()) -> int:
    """One ``corpusforge build`` in this process; returns the documents kept (stats.json)."""
    from corpusforge.cli.main import main

    off = [f"--set={s}.enabled=false" for s in ALL_STAGES if s not in stages] + [f"--set={s}" for s in settings]
    if dedup_steps is not None:
        off += [f"--set=dedup.{s}.enabled=false" for s in DEDUP_STEPS if s not in dedup_steps]
    args = ["build", "--input", os.path.join(corpus, "*.jsonl.zst"), "--run-dir", run_dir, "--overwrite",
            "--no-progress", *off]
    with contextlib.redirect_stdout(io.StringIO()):
        if main(args):
            raise SystemExit("the build failed: corpusforge " + " ".join(args))
    with open(os.path.join(run_dir, "stats.json")) as f:
        return json.load(f)["accounting"]["kept"]


# ------------------------------------------------------------------------------------------- datatrove
def _patch_datatrove() -> None:
    import xxhash
    from datatrove.utils.hashes import xxhash as trove_xxhash
    from loguru import logger  # datatrove's progress lines would bury the table

    logger.remove()
    # datatrove asks for fastText by its numpy-2 wheel's distribution name; corpusforge's `fasttext` is the same
    # module (and the model is handed over: _quality_filters)
    import datatrove.utils._import_utils as trove_imports

    available = trove_imports._is_distribution_available
    trove_imports._is_distribution_available = lambda name: name == "fasttext-numpy2-wheel" or available(name)
    if int(xxhash.VERSION.split(".")[0]) >= 4:  # xxhash 4 refuses str; 3.x hashed its UTF-8 bytes (bench/dedup.py)
        trove_xxhash.xxhash32 = lambda data: xxhash.xxh32_intdigest(data.encode() if isinstance(data, str) else data)
        trove_xxhash.xxhash64 = lambda data: xxhash.xxh64_intdigest(data.encode() if isinstance(data, str) else data)


def _quality_filters() -> list:
    """datatrove's FineWeb filter chain; its LanguageFilter given the lid.176.ftz model corpusforge bundles (it
    would download lid.176.bin)."""
    from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                            GopherRepetitionFilter)

    from bench.quality_labelled import datatrove_filters
    from corpusforge.pipeline.quality.langid import bundled_lid_path

    language = datatrove_filters()["LanguageFilter(en)"]
    language.model._model = _LazyFastText(bundled_lid_path())  # its executor copies the pipeline: load on first use
    return [language, GopherRepetitionFilter(), GopherQualityFilter(),
            C4QualityFilter(filter_no_terminal_punct=False), FineWebQualityFilter()]


class _LazyFastText:
    """A fastText model loaded on first use and left out of copies (datatrove's executor pickles its steps), whose
    predict(str) goes through a list (numpy 2 breaks fastText's single-string path)."""

    def __init__(self, path: str):
        self.path, self.model = path, None

    def __getstate__(self) -> dict:
        return {"path": self.path, "model": None}

    def predict(self, text: str, k: int = 1):
        if self.model is None:
            import fasttext

            self.model = fasttext.load_model(self.path)
        labels, scores = self.model.predict([text], k=k)
        return labels[0], scores[0]


class _Runner:
    """Runs datatrove pipelines through ``LocalPipelineExecutor`` in this process; every run its own folders
    (its executor skips tasks it finds completed in a logging folder)."""

    def __init__(self, workdir: str):
        self.workdir, self.count, self.calls = workdir, 0, 0

    def folder(self, name: str) -> str:
        return os.path.join(self.workdir, f"r{self.count}", name)

    def __call__(self, steps: list, tasks: int = 1) -> None:
        from datatrove.executor import LocalPipelineExecutor

        self.calls += 1
        logs = self.folder(f"logs-{self.calls}")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            LocalPipelineExecutor(steps, tasks=tasks, workers=1, logging_dir=logs).run()


def datatrove_run(corpus: str, runner: _Runner, parts: list[str]) -> int:
    """One datatrove pipeline over ``corpus``: ``parts`` in order (``normalize``, ``quality``, ``exact``, ``near``,
    ``sentences``, ``pii``), each dedup as its steps, every intermediate result written and read back as
    datatrove's dedup steps require. Returns the documents in the final output."""
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    runner.count += 1
    f = runner.folder
    os.makedirs(f(""), exist_ok=True)
    source, inline, n = corpus, [], 0

    def flush() -> None:  # reader(source) -> inline steps -> writer(next); the next part reads that
        nonlocal source, inline, n
        n += 1
        runner([JsonlReader(source), *inline, JsonlWriter(f(f"out{n}"), compression=None)])
        source, inline = f(f"out{n}"), []

    for part in parts:
        if part == "normalize":
            from datatrove.pipeline.formatters import FTFYFormatter

            inline.append(FTFYFormatter())
        elif part == "quality":
            inline.extend(_quality_filters())
        elif part == "pii":
            from datatrove.pipeline.formatters import PIIFormatter

            inline.append(PIIFormatter())
        elif part == "exact":
            from datatrove.pipeline.dedup.exact_dedup import (ExactDedupConfig, ExactDedupFilter,
                                                              ExactDedupSignature, ExactFindDedups)

            if inline:
                flush()
            config = ExactDedupConfig(content_getter=_text)
            runner([JsonlReader(source), ExactDedupSignature(f("exact-sigs"), config=config)])
            runner([ExactFindDedups(f("exact-sigs"), f("exact-dups"), config=config)])
            inline.append(ExactDedupFilter(f("exact-dups"), config=config))
        elif part == "near":
            from datatrove.pipeline.dedup import MinhashDedupSignature
            from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster,
                                                          MinhashDedupFilter)

            if inline:
                flush()
            config = MinhashConfig()
            runner([JsonlReader(source), MinhashDedupSignature(f("mh-sigs"), config=config)])
            runner([MinhashDedupBuckets(f("mh-sigs"), f("mh-buckets"), config=config)], tasks=config.num_buckets)
            runner([MinhashDedupCluster(f("mh-buckets"), f("mh-remove"), config=config)])
            inline.append(MinhashDedupFilter(f("mh-remove")))
        elif part == "sentences":
            from datatrove.pipeline.dedup.sentence_dedup import (SentDedupConfig, SentenceDedupFilter,
                                                                 SentenceDedupSignature, SentenceFindDedups)

            if inline:
                flush()
            config = SentDedupConfig()  # its default None breaks its __init__
            runner([JsonlReader(source), SentenceDedupSignature(f("sent-sigs"), config=config)])
            runner([SentenceFindDedups(f("sent-sigs"), f("sent-dups"), config=config)])
            inline.append(SentenceDedupFilter(f("sent-dups"), config=config))
        else:
            raise ValueError(part)
    flush()
    return sum(1 for path in glob.glob(os.path.join(source, "*")) for _ in open(path, "rb"))


def _text(doc) -> str:
    return doc.text


def datatrove_parts(stages: list[str], dedup_steps: list[str] | None) -> list[str]:
    """The datatrove parts matching corpusforge's stages on (lines have no datatrove counterpart)."""
    parts = []
    for stage in stages:
        if stage == "dedup":
            steps = dedup_steps if dedup_steps is not None else list(DEDUP_STEPS)
            parts += [s for s in ("exact", "near", "sentences") if s in steps]
        else:
            parts.append(stage)
    return parts


# ---------------------------------------------------------------------------------------------- children
def child(spec: dict) -> dict:
    """Runs in a fresh process: the pipeline on the one-document corpus twice, then on the corpus."""
    tool, stages, dedup_steps = spec["tool"], spec["stages"], spec["dedup_steps"]
    if tool == "corpusforge":
        def run(corpus: str, label: str) -> int:
            return corpusforge_run(corpus, os.path.join(spec["workdir"], f"run-{label}"), stages, dedup_steps,
                                   spec.get("settings", []))
    else:
        _patch_datatrove()
        runner, parts = _Runner(spec["workdir"]), datatrove_parts(stages, dedup_steps)

        def run(corpus: str, label: str) -> int:
            return datatrove_run(corpus, runner, parts)
    run(spec["one"], "warm")
    times = {}
    for label, corpus in (("one", spec["one"]), ("corpus", spec["corpus"])):
        started = cpu_seconds()
        kept = run(corpus, label)
        times[label] = cpu_seconds() - started
    return {"one": times["one"], "corpus": times["corpus"], "kept": kept}


def signature_child(spec: dict) -> dict:
    """CPU seconds of MinHash signatures of the corpus's texts, four ways (best of ``rounds``)."""
    from bench.dedup import signature_methods
    from corpusforge.pipeline.dedup.config import DedupConfig

    texts = read_texts(spec["corpus"])
    num_perm = DedupConfig().near.num_perm
    methods = signature_methods(texts, num_perm)
    best = {}
    for _ in range(spec["rounds"]):  # interleaved: load hits every method alike
        for name, fn in methods.items():
            started = cpu_seconds()
            fn()
            best[name] = min(best.get(name, float("inf")), cpu_seconds() - started)
    return {"num_perm": num_perm, "seconds": best, "docs": len(texts)}


def spawn(spec: dict) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)], env=env,
                          cwd=spec["workdir"], capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        raise RuntimeError((done.stderr or done.stdout).strip().splitlines()[-1][:300] if (done.stderr or done.stdout)
                           else f"exit {done.returncode}")
    return json.loads(lines[-1])


# ------------------------------------------------------------------------------------------------- table
def per_document(result: dict, docs: int) -> float:
    return (result["corpus"] - result["one"]) / max(docs - 1, 1)


def measure(corpus: str, one: str, workdir: str, rows: list[str], docs: int, rounds: int, log=print) -> list[dict]:
    """Every row's figures (see the module's docstring), printed as they come."""
    out, base = [], {}
    for name in rows:
        kind, stages, dedup_steps, path, note = ROWS[name]
        row = {"row": name, "kind": kind, "datatrove_path": path, "note": note}
        if kind == "signatures":
            try:
                row.update(spawn({"sig": True, "corpus": corpus, "rounds": rounds,
                                  "workdir": os.path.join(workdir, "sig")} | _mk(workdir, "sig")))
            except RuntimeError as exc:
                row["error"] = str(exc)
            out.append(row)
            log(format_signatures(row))
            continue
        for tool in ("corpusforge", "datatrove"):
            try:
                if kind == "stage" and tool not in base:  # the pass-through run, once per tool
                    base[tool] = _best(tool, ["normalize"] if tool == "corpusforge" else [], None, corpus, one,
                                       workdir, "base", rounds, PASS_THROUGH)
                got = _best(tool, stages, dedup_steps, corpus, one, workdir, name, rounds)
                cost = per_document(got, docs) - (per_document(base[tool], docs) if kind == "stage" else 0.0)
                alone = per_document(got, docs)
                row[tool] = {"docs_per_cpu_s": 1.0 / max(cost, 1e-9), "kept": got["kept"] / docs,
                             "cpu_s": got["corpus"], "fixed_cpu_s": got["one"], "us_per_doc": 1e6 * cost,
                             "alone_docs_per_cpu_s": 1.0 / max(alone, 1e-9)}
                if kind == "stage":
                    pass_through = per_document(base[tool], docs)
                    row[tool]["pass_through_us_per_doc"] = 1e6 * pass_through
                    # CPU time on a shared machine moves ~10 % between runs: a difference below that is noise
                    row[tool]["within_noise"] = cost < NOISE * pass_through
            except RuntimeError as exc:
                row[tool] = {"error": str(exc)}
        out.append(row)
        log(format_row(row))
    return out


def _mk(workdir: str, name: str) -> dict:
    path = os.path.join(workdir, name.replace(" ", "").replace(":", "-").replace("+", "_").replace("(", "").replace(")", ""))
    os.makedirs(path, exist_ok=True)
    return {"workdir": path}


def _best(tool, stages, dedup_steps, corpus, one, workdir, name, rounds, settings=()) -> dict:
    """The round with the least per-document CPU (load only ever adds time)."""
    runs = [spawn({"tool": tool, "stages": stages, "dedup_steps": dedup_steps, "corpus": corpus, "one": one,
                   "settings": list(settings)}
                  | _mk(workdir, f"{tool}-{name}-{r}")) for r in range(rounds)]
    return min(runs, key=lambda r: r["corpus"] - r["one"])


NOISE = 0.10  # of the pass-through's per-document CPU: a stage's own work below it is not told apart from noise


def _rate(side: dict) -> str:
    if "error" in side:
        return f"failed: {side['error']}"
    if side.get("within_noise"):
        return f">{1e6 / (NOISE * side['pass_through_us_per_doc']):,.0f} (noise)"
    return f"{side['docs_per_cpu_s']:,.0f}"


def _alone(side: dict) -> str:
    return "" if "error" in side else f"{side['alone_docs_per_cpu_s']:,.0f}"


def _ratio(cf: dict, dt: dict) -> str:
    if "error" in cf or "error" in dt or cf.get("within_noise") or dt.get("within_noise"):
        return "-"
    return f"{cf['docs_per_cpu_s'] / dt['docs_per_cpu_s']:.2f}x"


def format_row(row: dict) -> str:
    cf, dt = row["corpusforge"], row["datatrove"]
    kept = (f"kept {cf['kept']:.1%} / {dt['kept']:.1%}" if "error" not in cf and "error" not in dt else "")
    alone = f"{_alone(cf):>8} {_alone(dt):>8}" if row["kind"] == "stage" else " " * 17
    return f"{row['row']:<26} {_rate(cf):>16} {_rate(dt):>16} {_ratio(cf, dt):>7} {alone}  {kept}"


def signature_figures(row: dict) -> dict[str, float]:
    return {name: row["docs"] / max(s, 1e-9) for name, s in row["seconds"].items()}


def format_signatures(row: dict) -> str:
    if "error" in row:
        return f"{'minhash signatures':<26} failed: {row['error']}"
    r = signature_figures(row)
    bulk, loop = r["datasketch MinHash.bulk"], r["datasketch update_batch loop"]
    return (f"{'minhash signatures':<26} num_perm {row['num_perm']}: corpusforge sha1 {r['corpusforge sha1']:,.0f} "
            f"({r['corpusforge sha1'] / bulk:.2f}x bulk, {r['corpusforge sha1'] / loop:.2f}x loop), fast "
            f"{r['corpusforge fast']:,.0f} ({r['corpusforge fast'] / bulk:.2f}x bulk, {r['corpusforge fast'] / loop:.2f}x"
            f" loop); datasketch MinHash.bulk {bulk:,.0f}, update_batch loop {loop:,.0f}")


def markdown(results: list[dict], docs: int, command: str, when: str) -> str:
    """The README's benchmark rows: one per stage group, the whole build, the MinHash signatures."""
    def pair(row: dict) -> tuple[str, str]:
        cf, dt = row["corpusforge"], row["datatrove"]
        if "error" in cf or "error" in dt:
            return f"{row['row']} {_rate(cf)}", f"{_rate(dt)} ({row['datatrove_path']})"
        alone = (lambda side: f", {_alone(side)} with reading and writing") if row["kind"] == "stage" else (lambda side: "")
        return (f"{row['row']} **{_rate(cf)}**{alone(cf)} (kept {cf['kept']:.1%})",
                f"{_rate(dt)}{alone(dt)} ({_ratio(cf, dt)}; {row['datatrove_path']}; kept {dt['kept']:.1%}; "
                f"{row['note']})")

    head = (f"{docs:,} web-like docs (~2.4 KB, bench/build.py's `distinct`), one worker each, documents per "
            f"CPU-second, start-up subtracted (N-document run minus a one-document run, each in a fresh process), "
            f"same command ({when}, load {os.getloadavg()[0]:.1f})")
    lines = []
    stage_rows = [r for r in results if r["kind"] == "stage"]
    build_rows = [r for r in results if r["kind"] == "build"]
    for title, rows, extra in (("per stage vs datatrove", stage_rows, "; each side's pass-through run (read, write) "
                                "subtracted too"), ("whole build vs datatrove", build_rows, "")):
        if rows:
            cells = [pair(r) for r in rows]
            lines.append(f"| {title}: {head}{extra} | `{command}` | {'; '.join(c[0] for c in cells)} | "
                         f"datatrove: {'; '.join(r['row'] + ': ' + c[1] for r, c in zip(rows, cells))} |")
    for row in (r for r in results if r["kind"] == "signatures" and "error" not in r):
        r = signature_figures(row)
        bulk, loop = r["datasketch MinHash.bulk"], r["datasketch update_batch loop"]
        lines.append(
            f"| MinHash signatures, the same {row['docs']:,} docs, {row['num_perm']} permutations (the stage's), one "
            f"process, CPU seconds, best of rounds ({when}) | `{command}` | `hash: sha1` (datasketch's SHA-1 "
            f"family, bit-identical signatures): {r['corpusforge sha1']:,.0f} docs/s, **{r['corpusforge sha1'] / bulk:.2f}x "
            f"datasketch's `MinHash.bulk`** (like with like); `hash: fast` (the default): {r['corpusforge fast']:,.0f}, "
            f"{r['corpusforge fast'] / bulk:.2f}x `bulk` | datasketch `MinHash.bulk` (its fastest path): {bulk:,.0f} "
            f"docs/s; its per-document `update_batch` loop (its slowest): {loop:,.0f} (sha1 {r['corpusforge sha1'] / loop:.2f}x, "
            f"fast {r['corpusforge fast'] / loop:.2f}x that loop) |")
    return "\n".join(lines)


def side_by_side(corpus: str, workdir: str | None = None, out=sys.stdout, rows: list[str] | None = None,
                 rounds: int = 1) -> list[dict]:
    """Every row on ``corpus`` (a bench/build.py corpus folder); prints the table to ``out``."""
    from bench.build import write_corpus

    workdir = os.path.abspath(workdir or temporary_workdir("cf-bench-peer-"))
    one = one_document_corpus(workdir)
    docs = len(read_texts(corpus))
    log = lambda line: print(line, file=out, flush=True)  # noqa: E731
    log(f"\n{docs:,} docs, one worker each, documents per CPU-second (per-document work: start-up subtracted; "
        f"stage rows: each tool's pass-through run subtracted too); load average {os.getloadavg()[0]:.1f}; "
        f"work dir {workdir}")
    log(f"{'':<26} {'own work (docs per CPU-s)':^33} {'':>7} {'with read+write':^17}")
    log(f"{'row':<26} {'corpusforge':>16} {'datatrove':>16} {'ratio':>7} {'cf':>8} {'dt':>8}  kept (corpusforge / "
        "datatrove)")
    results = measure(corpus, one, workdir, rows or list(ROWS), docs, rounds, log)
    stage = next((r for r in results if r["kind"] == "stage"), None)
    if stage:
        log("\npass-through runs (subtracted from each stage row; 'with read+write' keeps them): " + "; ".join(
            f"{tool} {stage[tool]['pass_through_us_per_doc']:,.0f} us per document" for tool in ("corpusforge", "datatrove")
            if "pass_through_us_per_doc" in stage[tool]) + f"; a stage's own work below {NOISE:.0%} of its tool's "
            "pass-through is shown as '>X (noise)'")
    log("\ndatatrove's path per row (its fastest like-for-like), and how the rules differ:")
    for row in results:
        if row["kind"] != "signatures":
            log(f"  {row['row']}: {row['datatrove_path']}. {row['note']}")
    return results


def one_document_corpus(workdir: str) -> str:
    """The start-up runs' corpus: the corpus's first document plus an e-mail address, so that models a stage loads
    only for some text (Presidio, for a candidate) load in start-up, not in the timed corpus run."""
    import zstandard

    from bench.build import write_corpus

    one = os.path.join(workdir, "corpus-1")
    write_corpus(one, 1, kind="distinct", files=1)
    path = os.path.join(one, "part-0.jsonl.zst")
    with open(path, "rb") as f:
        row = json.loads(zstandard.ZstdDecompressor().stream_reader(f).read())
    row["text"] += "\n\nQuestions? Write to jane.doe@example.org or call +1 415 555 0132."
    with open(path, "wb") as f:
        f.write(zstandard.ZstdCompressor().compress(json.dumps(row).encode() + b"\n"))
    return one


def read_texts(directory: str) -> list[str]:
    """The text of every record of a bench/build.py corpus, in file order."""
    import zstandard

    texts = []
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            texts += [json.loads(line)["text"] for line in zstandard.ZstdDecompressor().stream_reader(f).read().splitlines()]
    return texts


def main() -> None:
    if "--child" in sys.argv:
        spec = json.loads(sys.argv[sys.argv.index("--child") + 1])
        print(json.dumps(signature_child(spec) if spec.get("sig") else child(spec)))
        return
    from bench.build import write_corpus

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--rows", default=",".join(ROWS), help=f"Comma-separated rows of: {', '.join(ROWS)}.")
    parser.add_argument("--rounds", type=int, default=1,
                        help="Runs per measurement; the least per-document CPU is kept (load only adds time).")
    parser.add_argument("--markdown", action="store_true", help="Also print the README's benchmark rows.")
    parser.add_argument("--json", default=None, help="Also write the figures to this file.")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        parser.error(f"unknown rows {unknown}; choose from: {', '.join(ROWS)}")
    try:
        import datasketch  # noqa: F401
        import datatrove  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"this bench needs the peers: pip install datatrove datasketch ({exc})")
    workdir = os.path.abspath(args.workdir or temporary_workdir("cf-bench-peer-"))
    corpus = os.path.join(workdir, f"corpus-distinct-{args.docs}")
    write_corpus(corpus, args.docs, kind="distinct")
    started = time.time()
    results = side_by_side(corpus, workdir, rows=rows, rounds=args.rounds)
    print(f"\n{time.time() - started:.0f} s wall; load average {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    if args.markdown:
        command = "python bench/build_peer.py" + (f" --docs {args.docs}" if args.docs != 3000 else "") + " --markdown"
        print("\nREADME rows:\n" + markdown(results, args.docs, command, time.strftime("%m-%d")))


if __name__ == "__main__":
    main()
