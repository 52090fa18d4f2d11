"""Fuzz family ``retried_batches``: a batch that raises and is run again record by record leaves no trace.

The dead-letter rule (``corpusforge/core/faults.py``): a batch element whose step raises is run again one record
at a time, so only the records that raise are rejected. The class that breaks it is every effect an attempt has
before it raises: a counter incremented (stop 58 found near dedup's ``near_documents_without_shingles`` counted
twice), a document held for a later list (``HeldDocs``), a text spilled, a key or a verdict kept for the bundle's
end. Each of those the failed attempt leaves behind and the retry makes again.

Each case draws a small build (tests/fuzz/graphs.py's settings: stages, sub-steps, join and component modes, output
format; shuffles on disk or in memory; and its word-salad corpus, which quality mostly removes, or ``prose``: the
demo sample's English paragraphs with exact and near copies, boilerplate lines and personal data, which reaches
every step) and builds it twice: as it is, and with ``run_isolated`` made to raise on the first attempt at drawn
batch elements (of at least two records) of every batched step (quality's, PII's, near dedup's signatures, the
line + sentence keys), before the step runs or, for a step that yields as it goes, between two of its outputs
(``WHERE``); the record-by-record retry runs as usual. The injected error is a record's (a ``ValueError``), never
the environment's, and no single record raises, so nothing may be rejected and the two builds must agree: every
shard byte for byte, the stats, and every Beam counter.
"""
from __future__ import annotations

import collections
import functools
import inspect
import json
import pathlib
import random
import zlib

FAMILY = "retried_batches"
TRIED: collections.Counter = collections.Counter()

# Where an attempt raises: before the step runs, or (a step that yields as it goes: a generator) between two of its
# outputs, as a later record's work raising would. Never after the step returned or ran to its end: no record's
# work is left there, and a step may keep effects it has finished (a list-returning step holds its batch only once
# nothing can raise: boilerplate._KeysFn), so raising there would be a fault no input can cause.
WHERE = ("before", "part way")


class InjectedFault(ValueError):
    """What the fuzz makes a batch attempt raise: a record's error (retried record by record)."""


def _first_id(records: list) -> str:
    first = records[0]
    doc = first[0] if isinstance(first, tuple) else first
    return str(getattr(doc, "id", first))


def failing_attempts(rng: random.Random, original):
    """``run_isolated`` whose first attempt at a drawn batch element raises ``InjectedFault`` (``WHERE``: before the
    step runs, or, for a step that is a generator, once it has yielded ``k`` outputs and before it resumes); the
    parts of the retry run as usual."""
    share, where, salt = rng.choice((0.3, 0.6, 1.0)), rng.choice(WHERE), rng.randrange(1 << 30)
    steps_out = rng.randint(1, 3)

    def run_isolated(process, element, stage, to_error, records=lambda element: [element], split=None,
                     text_of=lambda record: "", errors=None, counts=None):
        held = records(element) if split is not None else []
        chosen = len(held) >= 2 and zlib.crc32(f"{salt}:{stage}:{_first_id(held)}".encode()) % 1000 < share * 1000
        if not chosen:
            return original(process, element, stage, to_error, records, split, text_of, errors, counts)
        at = where if inspect.isgeneratorfunction(process) else "before"

        def attempt(part):
            if part is not element:  # a part of the retry
                return process(part)
            if at == "before":
                TRIED[f"{stage} raised before"] += 1
                raise InjectedFault("injected before the step")
            out = []
            for item in process(element):
                if len(out) == steps_out:  # instead of resuming the step
                    TRIED[f"{stage} raised part way"] += 1
                    raise InjectedFault(f"injected after {len(out)} outputs")
                out.append(item)
            return out  # it ended before: this attempt succeeds

        return original(attempt, element, stage, to_error, records, split, text_of, errors, counts)

    return run_isolated


@functools.lru_cache(maxsize=1)
def _paragraphs() -> tuple[str, ...]:
    from corpusforge.pipeline.sample.generate import _paragraphs as sample_paragraphs

    return tuple(sample_paragraphs())


def prose(rng: random.Random, path: pathlib.Path) -> int:
    """JSON Lines of 2-60 English documents (the demo sample's paragraphs, 1-4 each), with exact copies, near copies
    (the sample's own), boilerplate lines and personal data (the sample's sentences) mixed in."""
    from corpusforge.pipeline.sample import texts
    from corpusforge.pipeline.sample.generate import _near_duplicate, _with_pii

    paragraphs = _paragraphs()
    docs: list[dict] = []
    for i in range(rng.randint(2, 60)):
        start = rng.randrange(len(paragraphs) - 4)
        text = "\n\n".join(paragraphs[start:start + rng.randint(1, 4)])
        roll = rng.random()
        if docs and roll < 0.12:
            text = rng.choice(docs)["text"]
        elif docs and roll < 0.24:
            text = _near_duplicate(rng.choice(docs)["text"], rng)
        elif roll < 0.34:
            text = _with_pii(text, rng)
        if rng.random() < 0.3:
            text += "\n" + rng.choice(texts.BOILERPLATE)
        docs.append({"id": f"p{i}", "text": text})
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return len(docs)


def _outputs(run: pathlib.Path) -> tuple[dict, dict, dict]:
    from tests.fuzz.graphs import _outputs as shards_and_stats

    files, stats = shards_and_stats(run)
    counters = json.loads((run / "stats.json").read_text()).get("metrics", {}).get("counters", {})
    return files, stats, counters


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> int:
    """One case; the number of batch attempts it made raise (0: no batched step got a batch it drew)."""
    import pytest

    from corpusforge.cli.main import main
    from corpusforge.core import faults
    from tests.fuzz.graphs import corpus, settings

    work = pathlib.Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    source = work / "in.jsonl"
    kind = rng.choice(("prose", "prose", "salad"))
    TRIED[f"corpus {kind}"] += 1
    count = (prose if kind == "prose" else corpus)(rng, source)
    chosen = settings(rng) + [f"output.disk_shuffle_mb={rng.choice(['0', '1000000'])}"]
    flags = [x for s in chosen for x in ("--set", s)]
    (work / "case.json").write_text(json.dumps({"corpus": kind, "documents": count, "settings": chosen}, indent=1))
    patched = failing_attempts(rng, faults.run_isolated)
    raised_before = sum(n for what, n in TRIED.items() if " raised " in what)
    runs = {}
    for name in ("plain", "retried"):
        run = work / f"run-{name}"
        with pytest.MonkeyPatch.context() as patch:
            if name == "retried":
                patch.setattr(faults, "run_isolated", patched)
            try:
                code = main(["build", "--input", str(source), "--run-dir", str(run), "--no-progress", *flags])
            except BaseException as error:  # noqa: BLE001 - the broken promise is the report
                raise AssertionError(f"retried_batches: {name} build, {chosen}: {type(error).__name__}: {error}") \
                    from error
        if code != 0:
            raise AssertionError(f"retried_batches: {name} build, {chosen}: exit {code}")
        runs[name] = _outputs(run)
    plain, retried = runs["plain"], runs["retried"]
    for part, label in ((0, "shards"), (1, "stats"), (2, "Beam counters")):
        if plain[part] != retried[part]:
            if part == 0:
                differ = sorted(k for k in plain[0].keys() | retried[0].keys() if plain[0].get(k) != retried[0].get(k))
            else:
                differ = _differences(plain[part], retried[part])
            raise AssertionError(f"retried_batches: {chosen}: batches raised and retried record by record changed the "
                                 f"{label}: {differ[:6]}")
    return sum(n for what, n in TRIED.items() if " raised " in what) - raised_before


def _differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(a.keys() | b.keys(), key=str) for d in _differences(a.get(k), b.get(k), f"{path}/{k}")]
    return [] if a == b else [f"{path}: {a!r} -> {b!r}"]
