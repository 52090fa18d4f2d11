"""The pipeline's floor: what a build costs per document when a class of stage work costs nothing.

    OMP_NUM_THREADS=1 python bench/floor.py --stages normalize,dedup --docs 5000 --rounds 3
    OMP_NUM_THREADS=1 python bench/floor.py --docs 3000 --rounds 2            # every stage
    OMP_NUM_THREADS=1 python bench/floor.py --docs 5000 --stages normalize,dedup --rounds 1 --variants floor \\
        --profile floor --count          # + Beam elements per document, and where the floor's time goes
    OMP_NUM_THREADS=1 python bench/floor.py --beam 20000 --rounds 3      # plain Beam: per element step, shuffle
    OMP_NUM_THREADS=1 python bench/floor.py --beam 100000 --batch 1000   # ... and as Arrow record batches

It answers "what would a compiled kernel buy?" before anyone writes one: the build of
``bench/build_profile.py --plain`` (its corpus, ``run_build``, its CPU accounting: a one-document build's CPU
subtracted as start-up; imported from it, not copied) runs several times in this process, each time with one
class of stage work replaced by a stand-in that costs (almost) nothing and returns exactly what the real work
returned:

- a recording pass first runs the real build (and the one-document build) once with every stand-in's function
  wrapped, keeping each result by its input (the text, and the language, URL, ... it depends on);
- a variant then replays those results: the stand-in is a dict lookup by the text (Python hashes a 2.4 KB
  ``str`` once per object, ~1 us; a new ``str`` reaches each step). Nothing else changes: the same elements,
  the same shuffles, the same number of Beam steps, the same decisions. Every variant's outputs are checked
  against the real build's (``bench/build.py``'s ``output_digest``: shards and stats.json): the table says
  ``same`` or ``DIFFERENT``. A text the recording did not see (a miss) is computed for real and counted.

Variants (each a class of work; ``floor`` is all the stage work at once):

- ``keys``: dedup's line + sentence keys (``dedup.boilerplate.keyed_lines`` and its batch path
  ``keyed_lines_many``: line splitting, the sentence loop, normalising and hashing each sentence and line; the
  sentence table);
- ``minhash``: near-dedup's shingle hashes and signatures (``Shingler.hashes`` + ``MinHasher.from_hashes``;
  band hashing, grouping and verification stay);
- ``exact``: exact dedup's digests (``dedup.exact.text_digest``);
- ``normalize``: normalize's text work (``normalize.stage.normalize_and_count``);
- ``quality``: language ID (fastText ``LanguageIdentifier.predict``) and every heuristic rule
  (``HeuristicRules.apply_batch``);
- ``pii``: the PII scrubber (``Scrubber.scrub_batch``: screen, Presidio analysis, replacements) and the scrubbing
  of each document's id and metadata values (``FieldScrubber.document``, replayed by id and source; a build's ids
  are unique);
- ``coding``: Document coding between fused steps: ``DocumentCoder``'s fallback (documents, batches of them,
  removals) writes a reference to the object (kept in this process) instead of its fields, as if moving a
  document between steps were free; sizes sampled by Beam's counters stay estimated from the text, as today;
- ``floor``: every stage-work stand-in above at once (not ``coding``): Beam and corpusforge's orchestration
  (reading, spill, joins, verdicts, stats, shard writing, the removal of dropped lines) with stages that cost
  nothing;
- ``floor+coding``: ``floor`` and ``coding``.

What is left in ``floor`` that is stage work: applying dedup's verdicts (``drop_lines``/``drop_sentences`` on the
few documents with drops), near-dedup's band hashes and verification (numpy over batches), language
decisions from the recorded scores, PII's metadata-field scrubbing. What is left that is I/O: reading the
.jsonl.zst input (JSON parsing), writing Parquet shards.

Per variant the table prints docs per CPU-second of the per-document work (corpus build CPU minus the round's
one-document build CPU, measured once per round with the real code: the stand-ins change nothing a
one-document build pays), the median over rounds with every round's figure, and the microseconds per document
saved against the real build (median of each round's own difference). Variants alternate inside each round
(order reversed on odd rounds) so load drift shows as spread, not as a bias.

``--beam N`` times plain Beam alone on the same runner (no corpusforge): the CPU per element of one more fused
step and of one more ``GroupByKey`` (a shuffle) of ``(id, 2.4 KB text)`` pairs, what each Beam element and each
shuffle of a document costs whatever the stages do.

``--count`` prints the Beam elements per document in each PCollection (Beam's own element-count monitoring
infos of the in-process runner, one build), the largest first, and the total. ``--profile VARIANT`` (default
``floor``) runs that variant's build and its one-document build under cProfile, timed by the process's CPU time
(not wall time: other jobs on a shared machine would count), and prints the difference per document by step
(``build_profile.attribute``: Beam's own work, coders, corpusforge's steps) and own time by module area. cProfile's
per-call overhead (~3x here with a CPU timer) over-weights code that makes many small Python calls; the
"scaled" column is each share of the unprofiled figure.

Measured on 2026-11-29 (2 shared cores, load average 1-7: compare within a run), docs per CPU-second, median:

- normalize + dedup, 5,000 docs, ``--stages normalize,dedup --docs 5000 --rounds 3`` (two runs): real 1,568 / 1,249;
  keys 1,973 / 1,568 (saves 155-176 us/doc); minhash 1,854 / 1,424; exact 1,670 / 1,361; normalize 1,623 / 1,335;
  coding 1,809 / 1,434; floor 2,555 / 2,262 (391-442 us/doc); floor+coding 3,393 / 2,500 (295-400 us/doc).
- every stage, 3,000 docs, ``--docs 3000 --rounds 2`` (three runs): real 525 / 548 / 609; quality 1,042 / 994 /
  1,084 (saves 720-950 us/doc); keys 566 / 633 / 656 (120-290); floor 1,503 / 1,482 / 1,554 (644-675 us/doc);
  floor+coding 2,455 / 2,103 / 2,570 (389-476 us/doc). Every variant's outputs equal the real build's.
- ``--beam 20000 --rounds 3``: a fused step 1.0 us per element, a GroupByKey of (id, 2.4 KB text) 29 us per element.
- ``--beam 100000 --batch 1000 --rounds 3`` (11-30, load 4.5): one element a document, a fused step 1.22 us and a
  GroupByKey 31.4 us per document; as Arrow record batches of 1,000 rows, 0.39 us and 22.1 us per document. Each
  figure holds a fixed set-up per step (~18 ms: at ``--beam 2000`` a step is ~9 us a document either way), so per
  element a step costs ~1.0 us one each, ~0 in batches; a shuffle that carries 2.4 KB of text costs ~22 us a
  document whatever the unit (moving the bytes): text must not cross a shuffle at all (the spill's references,
  ``output.spill_text``), batches or not.
- ``--count``: normalize + dedup 23.5 Beam elements per document (212 PCollections), 4.1 records into GroupByKeys
  (one shuffle of every document, Read/SpreadDocuments; one of its id; ~1 candidate pair; the rest packed);
  every stage 27.9.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import gc
import os
import pstats
import statistics
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import build_profile as bp  # noqa: E402
from bench.build import ALL_STAGES, output_digest, write_corpus  # noqa: E402
from bench.workdirs import temporary_workdir  # noqa: E402

# ---------------------------------------------------------------------------------------------- stand-ins


class Memo:
    """Results of the real stage work by input, recorded once and replayed by the stand-ins."""

    def __init__(self):
        self.tables: dict[str, dict] = collections.defaultdict(dict)
        self.recording = True
        self.misses: collections.Counter = collections.Counter()
        self.calls: collections.Counter = collections.Counter()  # stand-in calls per variant while recording


MEMO = Memo()
_LOCAL = threading.local()


def _per_call(name: str, original, key):
    """A stand-in for ``original(*args)`` whose result depends on ``key(*args)`` only."""
    table = MEMO.tables[name]

    def stand_in(*args):
        k = key(*args)
        if MEMO.recording:
            table[k] = result = original(*args)
            return result
        try:
            return table[k]
        except KeyError:
            MEMO.misses[name] += 1
            return original(*args)
    return stand_in


def _per_text(name: str, original, keys):
    """A stand-in for a batch method ``original(self, texts, ...)`` returning one result per text, each
    depending on ``keys(texts, ...)``'s entry for it only."""
    table = MEMO.tables[name]

    def stand_in(self, *args):
        ks = list(keys(*args))
        if MEMO.recording:
            results = original(self, *args)
            for k, result in zip(ks, results):
                table[k] = result
            return results
        try:
            return [table[k] for k in ks]
        except KeyError:
            MEMO.misses[name] += 1
            return original(self, *args)
    return stand_in


class _Texts(list):
    """What the ``minhash`` stand-in of ``Shingler.hashes`` returns in place of the shingle hashes: the texts,
    whose recorded signatures ``MinHasher.from_hashes``' stand-in stacks."""


def _minhash_patches():
    from corpusforge.pipeline.dedup.minhash import MinHasher, Shingler

    table = MEMO.tables["minhash"]
    hashes, from_hashes = Shingler.hashes, MinHasher.from_hashes

    def hashes_stand_in(self, texts):
        if MEMO.recording:
            _LOCAL.texts = list(texts)
            return hashes(self, texts)
        if all(t in table for t in texts):
            return _Texts(texts), np.fromiter((table[t][0] for t in texts), dtype=np.int64, count=len(texts))
        MEMO.misses["minhash"] += 1
        return hashes(self, texts)

    def from_hashes_stand_in(self, shingle_hashes, counts):
        if type(shingle_hashes) is _Texts:
            if not len(shingle_hashes):
                return np.empty((0, self.num_perm), dtype=np.uint32)
            return np.stack([table[t][1] for t in shingle_hashes])
        sigs = from_hashes(self, shingle_hashes, counts)
        texts = getattr(_LOCAL, "texts", None)
        if MEMO.recording and texts is not None and len(texts) == len(sigs):
            for text, count, sig in zip(texts, np.asarray(counts).tolist(), sigs):
                table[text] = (count, sig.copy())
        _LOCAL.texts = None
        return sigs

    return [(Shingler, "hashes", hashes_stand_in), (MinHasher, "from_hashes", from_hashes_stand_in)]


def _keys_patches():
    from corpusforge.pipeline.dedup import boilerplate

    many = boilerplate.keyed_lines_many
    table = MEMO.tables["keys"]

    def many_stand_in(texts, line_chars, sentence_chars):  # the batch path (side-input and batch joins): per text
        ks = [(text, lang, line_chars, sentence_chars) for text, lang in texts]
        if MEMO.recording:
            results = many(texts, line_chars, sentence_chars)
            table.update(zip(ks, results))
            return results
        try:
            return [table[k] for k in ks]
        except KeyError:
            MEMO.misses["keys"] += 1
            return many(texts, line_chars, sentence_chars)

    return [(boilerplate, "keyed_lines", _per_call("keys", boilerplate.keyed_lines, lambda *a: a)),
            (boilerplate, "keyed_lines_many", many_stand_in)]


def _exact_patches():
    from corpusforge.pipeline.dedup import exact

    return [(exact, "text_digest", _per_call("exact", exact.text_digest, lambda *a: a))]


def _normalize_patches():
    from corpusforge.pipeline.normalize import stage

    return [(stage, "normalize_and_count", _per_call("normalize", stage.normalize_and_count, lambda text, _: text))]


def _quality_patches():
    from corpusforge.pipeline.quality.langid import LanguageIdentifier
    from corpusforge.pipeline.quality.rules import HeuristicRules

    return [(LanguageIdentifier, "predict", _per_text("langid", LanguageIdentifier.predict, lambda texts: texts)),
            (HeuristicRules, "apply_batch", _per_text("rules", HeuristicRules.apply_batch, zip))]


def _pii_patches():
    from corpusforge.pipeline.pii.fields import FieldScrubber
    from corpusforge.pipeline.pii.scrubber import Scrubber

    table = MEMO.tables["pii fields"]

    def document_stand_in(self, doc):  # FieldScrubber.document with its id and metadata scrubbing replayed
        scrubbed = None if MEMO.recording else table.get((doc.id, doc.source))
        if scrubbed is None:
            if not MEMO.recording:
                MEMO.misses["pii fields"] += 1
            scrubbed = table[(doc.id, doc.source)] = (self.id(doc.id), self.metadata(doc.metadata))
        new_id, metadata = scrubbed
        if new_id == doc.id and metadata == doc.metadata:
            return doc
        return doc.with_id_metadata(new_id, metadata)

    return [(Scrubber, "scrub_batch", _per_text("pii", Scrubber.scrub_batch, lambda texts: texts)),
            (FieldScrubber, "document", document_stand_in)]


_REFERENCE = 0x7F  # a tag none of DocumentCoder's own (0-4) uses
_OBJECTS: list = []  # what the ``coding`` stand-in wrote, by reference; emptied after each build


def _coding_patches():
    from apache_beam.coders.coder_impl import ByteCountingOutputStream

    from corpusforge.pipeline import document_coder as dc

    encode = dc._DocumentOrPickleImpl.encode_to_stream

    def encode_stand_in(self, value, stream, nested):
        if type(stream) is ByteCountingOutputStream:  # Beam's sampled sizes: estimated from the text, as today
            return encode(self, value, stream, nested)
        _OBJECTS.append(value)
        if nested:
            stream.write_var_int64(9)  # the tag and the index, as DocumentCoder announces its bodies
        stream.write_byte(_REFERENCE)
        stream.write_bigendian_int64(len(_OBJECTS) - 1)
        return None

    def decode_stand_in(self, stream, nested):
        if nested:
            stream.read_var_int64()
        if stream.read_byte() != _REFERENCE:  # every element of a build is written by the stand-in
            raise AssertionError("a body the coding stand-in did not write")
        return _OBJECTS[stream.read_bigendian_int64()]

    return [(dc._DocumentOrPickleImpl, "encode_to_stream", encode_stand_in),
            (dc._DocumentOrPickleImpl, "decode_from_stream", decode_stand_in)]


# stage work per variant: (name, the stages it needs (any of), the patches it makes)
STAGE_WORK = (
    ("keys", {"dedup"}, _keys_patches),
    ("minhash", {"dedup"}, _minhash_patches),
    ("exact", {"dedup"}, _exact_patches),
    ("normalize", {"normalize"}, _normalize_patches),
    ("quality", {"quality"}, _quality_patches),
    ("pii", {"pii"}, _pii_patches),
)


def _counted(variant: str, stand_in):
    """``stand_in`` counting its calls under ``variant`` (``MEMO.calls``): a plain function, so that it binds as a
    method where it replaces one."""
    def counting(*args, **kwargs):
        MEMO.calls[variant] += 1
        return stand_in(*args, **kwargs)

    return counting


@contextlib.contextmanager
def patched(patches):
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    try:
        for owner, name, new in patches:
            setattr(owner, name, new)
        yield
    finally:
        for owner, name, old in reversed(saved):
            setattr(owner, name, old)


def variants(stages: list[str]) -> dict[str, list]:
    """``{variant: its patches}`` for a build of ``stages`` (the stage-work variants whose stage is on)."""
    work = {name: maker() for name, needs, maker in STAGE_WORK if needs & set(stages)}
    out = {"real": []}
    out.update(work)
    out["coding"] = _coding_patches()
    out["floor"] = [p for patches in work.values() for p in patches]
    out["floor+coding"] = out["floor"] + out["coding"]
    return out


# --------------------------------------------------------------------------------- element counts (Beam's)

_RESULTS: list = []  # (stage context, RunnerResult) of the builds run since the last reset


def _capture_results():
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    run_stages = fn_runner.FnApiRunner.run_stages

    def capturing(self, stage_context, stages):
        result = run_stages(self, stage_context, stages)
        _RESULTS.append((stage_context, result))
        return result

    return [(fn_runner.FnApiRunner, "run_stages", capturing)]


def element_counts() -> tuple[dict[str, int], dict[str, int]]:
    """Elements per PCollection (its unique name) of the builds whose results were captured, and elements into
    each GroupByKey (the shuffled records) by the GroupByKey's name."""
    from apache_beam.metrics import monitoring_infos
    from apache_beam.portability import common_urns

    counts: collections.Counter = collections.Counter()
    shuffled: collections.Counter = collections.Counter()
    group_inputs = {}  # pcollection id -> the name of the GroupByKey it goes into
    for context, _ in _RESULTS:
        for transform in context.components.transforms.values():
            if transform.spec.urn == common_urns.primitives.GROUP_BY_KEY.urn:
                for pid in transform.inputs.values():
                    group_inputs[pid] = transform.unique_name
    for context, result in _RESULTS:
        names = {pid: p.unique_name for pid, p in context.components.pcollections.items()}
        for info in result.monitoring_infos():
            if info.urn == monitoring_infos.ELEMENT_COUNT_URN:
                pid = info.labels.get(monitoring_infos.PCOLLECTION_LABEL, "")
                counts[names.get(pid, pid)] += monitoring_infos.extract_counter_value(info)
                if pid in group_inputs:
                    shuffled[group_inputs[pid]] += monitoring_infos.extract_counter_value(info)
    return dict(counts), dict(shuffled)


# --------------------------------------------------------------------------------------------- measuring


def timed_build(corpus: str, run_dir: str, stages: list[str]) -> float:
    """CPU seconds of one build of ``corpus`` (this process's, bp.run_build's accounting), the garbage of the
    builds before collected first."""
    gc.collect()
    bp.run_build(bp.build_args(corpus, run_dir, stages))
    _OBJECTS.clear()
    return bp._LAST_CPU[0]


def measure(workdir: str, stages: list[str], docs: int, rounds: int, chosen: list[str] | None) -> dict[str, float]:
    """Time the variants; returns each one's median us per document."""
    email = "pii" in stages  # as build_profile --plain --email: Presidio's one-off load counts as start-up
    corpus = os.path.join(workdir, f"corpus-distinct-{docs}")
    text_mb = write_corpus(corpus, docs, kind="distinct") / 1e6
    one = bp.write_one(workdir, email)
    all_variants = variants(stages)
    names = [v for v in all_variants if not chosen or v in chosen or v == "real"]
    print(f"{docs:,} web-like docs ({text_mb:.1f} MB of text); stages {','.join(stages)}; settings "
          f"{' '.join(bp.SETTINGS) or 'default'}; in-process DirectRunner, one worker; OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}; load average {os.getloadavg()[0]:.1f}; work dir {workdir}",
          flush=True)
    # the recording pass: every stand-in wrapped, recording (also the imports' and caches' warm-up)
    work = [name for name in all_variants if name not in ("real", "coding", "floor", "floor+coding")]
    recording = [(owner, attr, _counted(name, new)) for name in work for owner, attr, new in all_variants[name]]
    MEMO.recording = True
    with patched(recording):
        timed_build(one, os.path.join(workdir, "run-1"), stages)
        cpu = timed_build(corpus, os.path.join(workdir, "run-record"), stages)
    MEMO.recording = False
    # the recorded results (and everything else alive now) out of the collector's sight: its passes then scan
    # what a fresh process's build would have alive, not the tables every variant shares
    gc.collect()
    gc.freeze()
    print(f"recorded: {', '.join(f'{k} {len(v):,}' for k, v in MEMO.tables.items())} results ({cpu:.1f} CPU s)",
          flush=True)
    # a variant none of whose stand-ins the build called replays nothing and measures nothing (12-01: ``keys`` patched
    # keyed_lines only, while the joins had moved to keyed_lines_many): said here and in its row
    idle = {name for name in work if not MEMO.calls[name]}
    if idle:
        print(f"WARNING: the build never called the stand-ins of {', '.join(sorted(idle))}: those variants replace "
              "nothing (the code they patch is no longer on this build's path)", flush=True)
    reference = output_digest(os.path.join(workdir, "run-record"))
    rates: dict[str, list[float]] = {name: [] for name in names}
    saved: dict[str, list[float]] = {name: [] for name in names}
    same: dict[str, set] = {name: set() for name in names}
    for r in range(rounds):
        fixed = timed_build(one, os.path.join(workdir, "run-1"), stages)
        per_doc = {}
        for name in (names if r % 2 == 0 else names[::-1]):
            run = os.path.join(workdir, f"run-{name}")
            with patched(all_variants[name]):
                cpu = timed_build(corpus, run, stages)
            per_doc[name] = (cpu - fixed) / max(docs - 1, 1)
            rates[name].append(1 / per_doc[name])
            same[name].add(output_digest(run) == reference)
        for name in names:
            saved[name].append(1e6 * (per_doc["real"] - per_doc[name]))
        print(f"round {r + 1}: one-document build {fixed:.2f} CPU s; "
              + ", ".join(f"{name} {rates[name][-1]:.0f}" for name in names)
              + f" docs/CPU-s; load average {os.getloadavg()[0]:.1f}", flush=True)
    if rounds:
        print(f"\nstages {','.join(stages)}, {docs:,} docs, {rounds} rounds: docs per CPU-second of per-document work "
              "(start-up subtracted), median (each round), and us per document saved against the real build")
        print(f"{'variant':<14} {'docs/CPU-s':>10} {'rounds':<28} {'us/doc':>7} {'saved us/doc':>12}  outputs")
        for name in names:
            med = statistics.median(rates[name])
            outputs = ("same" if same[name] == {True} else "DIFFERENT") + (" (replaced nothing)" if name in idle else "")
            print(f"{name:<14} {med:>10.0f} {' '.join(f'{x:.0f}' for x in rates[name]):<28} {1e6 / med:>7.0f} "
                  f"{statistics.median(saved[name]):>12.0f}  {outputs}")
        print(f"stand-in misses (computed for real): {dict(MEMO.misses) or 'none'}", flush=True)
    return {name: 1e6 / statistics.median(rates[name]) for name in names if rates[name]}


def count(workdir: str, stages: list[str], docs: int, top: int) -> None:
    corpus = os.path.join(workdir, f"corpus-distinct-{docs}")
    if not os.path.isdir(corpus):
        write_corpus(corpus, docs, kind="distinct")
    _RESULTS.clear()
    with patched(_capture_results()):
        timed_build(corpus, os.path.join(workdir, "run-count"), stages)
    counts, shuffled = element_counts()
    _RESULTS.clear()
    total = sum(counts.values())
    print(f"\nBeam elements per document by PCollection (real build, {docs:,} docs, {len(counts)} PCollections): "
          f"{total / docs:.1f} in all; the {top} largest:")
    for name, n in sorted(counts.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {n / docs:>7.2f}  {name}")
    by_step: collections.Counter = collections.Counter()
    for name, n in counts.items():  # Beam prefixes a PCollection's unique name with a number: not the step's
        by_step["/".join(name.lstrip("0123456789").split("/")[:2])] += n
    print("by step (the transform path's first two parts): " + ", ".join(
        f"{k} {v / docs:.1f}" for k, v in by_step.most_common() if v / docs >= 0.05), flush=True)
    largest = sorted(shuffled.items(), key=lambda kv: -kv[1])
    print(f"elements into GroupByKeys (shuffled records) per document: {sum(shuffled.values()) / docs:.2f} in all, "
          f"{len(shuffled)} GroupByKeys; " + ", ".join(f"{name.lstrip('0123456789')} {n / docs:.2f}"
                                                     for name, n in largest if n / docs >= 0.01), flush=True)


def _beam_area(filename: str) -> str | None:
    path = filename.replace(os.sep, "/")
    if "apache_beam/" not in path:
        return None
    tail = path.split("apache_beam/", 1)[1]
    return "apache_beam/" + "/".join(tail.split("/")[:3 if tail.startswith("runners/") else 1])


def _profiled(corpus: str, run_dir: str, stages: list[str], patches) -> pstats.Stats:
    # CPU time of the process, not wall time: on a shared machine other jobs' time would land on whatever ran
    # (build_profile's wall-clock profile counts it), and waits on another thread of this process count nothing
    profiler = cProfile.Profile(time.process_time)
    with patched(patches):
        gc.collect()
        profiler.enable()
        bp.run_build(bp.build_args(corpus, run_dir, stages))
        profiler.disable()
    _OBJECTS.clear()
    return pstats.Stats(profiler)


def _areas(stats: pstats.Stats) -> collections.Counter:
    """Own time (not inclusive) by module area: Beam's modules by folder, corpusforge's by step, builtins by name,
    other libraries by package, the standard library by module."""
    own: collections.Counter = collections.Counter()
    for (filename, _, name), (_, _, tt, _, _) in stats.stats.items():
        path = filename.replace(os.sep, "/")
        area = _beam_area(path)
        if area:
            own[area] += tt
        elif filename == "~":
            own["builtin " + name] += tt
        elif "site-packages/" in path:
            own["lib " + path.split("site-packages/")[-1].split("/")[0]] += tt
        elif "/corpusforge/" in path or "/pipeline/" in path or "/wt/" in path:
            own["corpusforge " + (bp.step_of(path) or os.path.basename(path))] += tt
        else:
            own["stdlib " + os.path.basename(path)] += tt
    return own


def profile(workdir: str, stages: list[str], docs: int, variant: str, top: int, measured: float | None) -> None:
    """``variant``'s build of the corpus and its one-document build under cProfile: the difference per step
    (``build_profile.attribute``) and by module area, per document; with ``measured`` (the variant's us per
    document without the profiler) also each share of it ("scaled": cProfile's overhead is per call, so this
    over-weights code that makes many small Python calls)."""
    corpus = os.path.join(workdir, f"corpus-distinct-{docs}")
    one = bp.write_one(workdir, "pii" in stages)
    patches = variants(stages)[variant]
    if not MEMO.tables and variant != "real" and variant != "coding":
        raise SystemExit("--profile needs the recording pass: run it with --rounds 1 or more")
    _profiled(one, os.path.join(workdir, "run-profiled-1"), stages, patches)  # warm
    small = _profiled(one, os.path.join(workdir, "run-profiled-1"), stages, patches)
    big = _profiled(corpus, os.path.join(workdir, "run-profiled"), stages, patches)
    (small_steps, small_total), (steps, total) = bp.attribute(small), bp.attribute(big)
    n = max(docs - 1, 1)
    per_doc = total - small_total
    print(f"\nprofiled {variant} build: {total:.1f} s under cProfile, a one-document build {small_total:.1f} s: "
          f"{1e6 * per_doc / n:.0f} us/doc of per-document work; by step (build_profile.attribute, inclusive of the "
          "libraries each calls), the one-document build's subtracted:")
    scale = measured / (1e6 * per_doc / n) if measured else None
    print(f"{'step':<36} {'seconds':>8} {'share':>6} {'us/doc':>8} {'scaled':>7}"
          + (f"  (scaled: share x the {measured:.0f} us/doc measured unprofiled)" if measured else ""))
    rows = {step: seconds - small_steps.get(step, 0.0) for step, seconds in steps.items()}
    rows["Beam's own work (the rest)"] = (total - sum(steps.values())) - (small_total - sum(small_steps.values()))
    for step, seconds in sorted(rows.items(), key=lambda kv: -kv[1]):
        print(f"{step:<36} {seconds:>8.2f} {100 * seconds / per_doc:>5.1f}% {1e6 * seconds / n:>8.0f} "
              + (f"{scale * 1e6 * seconds / n:>7.0f}" if scale else ""))
    own, small_own = _areas(big), _areas(small)
    diff = collections.Counter({area: own[area] - small_own.get(area, 0.0) for area in own})
    print(f"\nown time (not inclusive) by module area, one-document build subtracted, the {top} largest (Beam's "
          "compiled modules are not profiled: their time is their Python caller's own time or a builtin's):")
    for area, seconds in diff.most_common(top):
        print(f"  {seconds:>7.2f} s {1e6 * seconds / n:>6.0f} us/doc"
              + (f" ({scale * 1e6 * seconds / n:>4.0f} scaled)" if scale else "") + f"  {area}")
    beam = sum(v for k, v in diff.items() if k.startswith("apache_beam"))
    print(f"  Beam's Python modules in all: {1e6 * beam / n:.0f} us/doc")


def beam_costs(elements: int, rounds: int, batch: int = 0) -> None:
    """Plain Beam on the same in-process runner (no corpusforge): CPU per element of a fused step (an identity
    ``Map``) and of a ``GroupByKey`` of ``(id, 2.4 KB text)`` pairs (grouped, then ungrouped by a ``FlatMap``),
    from pipelines of 0 and 20 extra steps, 0 and 2 extra ``GroupByKey`` s, alternating.

    ``batch``: the same documents as Arrow record batches of ``batch`` rows (``id``, ``text``), each a Beam
    element keyed by its batch number: what a step and a shuffle cost *per document* when the element is a batch
    (#38's design), Beam coding each batch as Arrow IPC (``pyarrow.RecordBatch``'s pickling)."""
    import apache_beam as beam
    import pyarrow as pa
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    text = "x" * 2400

    def pairs(i):
        return [(str(i), text)]

    def record_batch(first):
        ids = [str(i) for i in range(first, min(first + batch, elements))]
        return [(first, pa.record_batch([pa.array(ids), pa.array([text] * len(ids))], names=["id", "text"]))]

    def run(maps: int, groups: int) -> float:
        gc.collect()
        cpu = time.process_time()
        with beam.Pipeline(runner=fn_runner.FnApiRunner(), options=PipelineOptions([])) as p:
            starts = list(range(0, elements, batch)) if batch else list(range(elements))
            pc = p | beam.Create(starts) | "Make" >> beam.FlatMap(record_batch if batch else pairs)
            for g in range(groups):
                pc = (pc | f"Group{g}" >> beam.GroupByKey()
                      | f"Ungroup{g}" >> beam.FlatMap(lambda kv: ((kv[0], v) for v in kv[1])))
            for m in range(maps):
                pc = pc | f"Step{m}" >> beam.Map(lambda x: x)
        return time.process_time() - cpu

    run(0, 0)
    steps, groups = [], []
    for _ in range(rounds):
        base = run(0, 0)
        steps.append(1e6 * (run(20, 0) - base) / elements / 20)
        groups.append(1e6 * (run(0, 2) - base) / elements / 2)
    unit = f"as Arrow record batches of {batch:,} rows" if batch else "one element each"
    print(f"\nplain Beam, in-process FnApiRunner, {elements:,} (id, 2.4 KB text) documents {unit}, {rounds} rounds: "
          f"a fused step {statistics.median(steps):.2f} us per document ({' '.join(f'{x:.2f}' for x in steps)}), a "
          f"GroupByKey (and ungroup) {statistics.median(groups):.2f} us per document "
          f"({' '.join(f'{x:.2f}' for x in groups)}); load average {os.getloadavg()[0]:.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--stages", default=",".join(ALL_STAGES), help="Comma-separated stages to run.")
    parser.add_argument("--rounds", type=int, default=2, help="Rounds of every variant (alternating order).")
    parser.add_argument("--variants", default="", help="Comma-separated variants to time (default: all; real always).")
    parser.add_argument("--workdir", default=None, help="Where the corpus and runs go (default: a temporary directory, removed at exit).")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="A config setting for every build (corpusforge build --set).")
    parser.add_argument("--count", action="store_true", help="Also print Beam elements per document per PCollection.")
    parser.add_argument("--profile", default="", nargs="?", const="floor", metavar="VARIANT",
                        help="Also profile one build of VARIANT (default floor) under cProfile.")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--beam", type=int, default=0, metavar="ELEMENTS",
                        help="Only time plain Beam's cost per element of a fused step and of a GroupByKey.")
    parser.add_argument("--batch", type=int, default=0, metavar="ROWS",
                        help="With --beam: the documents as Arrow record batches of ROWS rows (also timed one each).")
    args = parser.parse_args()
    stages = [s for s in args.stages.split(",") if s]
    bp.SETTINGS.extend(args.set)
    workdir = os.path.abspath(args.workdir or temporary_workdir("cf-bench-floor-"))
    chosen = [v for v in args.variants.split(",") if v] or None
    if args.batch and not args.beam:
        parser.error("--batch ROWS times plain Beam's batches: give --beam ELEMENTS too")
    if args.beam:
        beam_costs(args.beam, max(args.rounds, 1))
        if args.batch:
            beam_costs(args.beam, max(args.rounds, 1), args.batch)
        return
    measured = measure(workdir, stages, args.docs, max(args.rounds, 0), chosen)
    if args.count:
        count(workdir, stages, args.docs, args.top)
    if args.profile:
        profile(workdir, stages, args.docs, args.profile, args.top, measured.get(args.profile))


if __name__ == "__main__":
    main()
