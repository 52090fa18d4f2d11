"""Fuzz family ``batch_sentences``: a batch's line + sentence keys cost what its texts cost keyed one by one.

The dedup keys step takes its documents in lists bounded by documents and bytes (near-dedup's kept lists) and keys
a list at once (``boilerplate.keyed_lines_many``), where the work and memory follow the count of sentences and
lines, not of bytes: 1 MB of one-word lines is 500k sentences, a sentence every two bytes. One case draws a batch
with texts of many tiny sentences or lines, of random shapes (one-word lines, runs of ``". "``, ``"a. b. c."``,
CJK full stops, colons before a capital, empty lines, a random chain of such pieces): one large text (100-400k
characters) among ordinary documents, or a batch of small such texts of one or two shapes (0.5-8 KB each, prose
between them now and then). It writes the batch under ``workdir`` and checks:

- the keys are the definition's (``keyed_lines_by_line`` of each text), records and tables byte for byte;
- memory: tracemalloc's peak over ``keyed_lines_many`` at most ``ALLOWANCE_MB`` above its peak over ``keyed_lines``
  of each text in turn (what the batch path may hold beyond the loop is one sub-batch, whatever the batch holds; on
  the batch path before its sub-batches were bounded by sentences, 1 MB of one-word lines held 70 MB more);
- CPU: at most ``CPU_BOUND`` times the loop's (the best of alternating rounds; under ``FLOOR_S`` a measure is noise).
"""
from __future__ import annotations

import collections
import json
import pathlib
import random
import time
import tracemalloc

FAMILY = "batch_sentences"
TRIED: collections.Counter = collections.Counter()

ALLOWANCE_MB = 4.0  # one sub-batch's working set (~2.3 MB for 64 prose documents, bench/batch_keys.py)
CPU_BOUND = 3.0
FLOOR_S = 0.2
LINE_CHARS, SENTENCE_CHARS = 10, 20  # the defaults (LineDedupConfig, SentenceDedupConfig)

PROSE = ("The river runs through the old town and past the mill, where the miller kept his accounts in a heavy "
         "ledger bound in leather. Every spring the water rose over the lower fields.\n\nThe farmers moved their "
         "sheep to the hills until it fell again: nobody remembers a year without it. ")
# Pieces of tiny sentences and lines: what the sentence splitter ends a sentence on (line breaks, terminators and
# their runs, CJK stops, a colon before a capitalised word) around a word or none.
PIECES = ["a\n", "word\n", "\n", " \n", ". ", "a. ", "b! ", "? ", "...", "A. ", "e.g. ", "1. ", "x.\n", "—\n",
          "。", "字。", "！", "a: B ", ": ", "Ab: Cd ", "a;\n", "\r\n", "\u2028", "\t.\t"]
SHAPES = {
    "one_word_lines": lambda rng: rng.choice(["a", "x", "1", "word", "Zz"]) + "\n",
    "stops": lambda rng: rng.choice([". ", "! ", "? ", ".\n", "..", ". . "]),
    "abc": lambda rng: " ".join(f"{c}." for c in rng.sample("abcdefgh", rng.randint(2, 5))) + rng.choice([" ", "\n"]),
    "cjk_stops": lambda rng: rng.choice(["。", "字。", "漢字。", "。」", "！", "字？"]),
    "colons": lambda rng: rng.choice(["a: B ", "x: Y\n", "Ab: Cd ", ": A "]),
    "empty_lines": lambda rng: rng.choice(["\n", " \n", "\n\n", "\t\n"]),
    "mixed": lambda rng: "".join(rng.choice(PIECES) for _ in range(rng.randint(2, 10))),
}


def tiny_sentences(rng: random.Random, size: int, shape: str | None = None) -> tuple[str, str]:
    """``(shape, text)`` of about ``size`` characters of tiny sentences or lines: a unit of ``shape`` (else a random
    one), repeated."""
    shape = shape or rng.choice(sorted(SHAPES))
    unit = SHAPES[shape](rng)
    return shape, (unit * (size // len(unit) + 1))[:size]


def batch(rng: random.Random) -> tuple[list[str], list[tuple[str, str | None]]]:
    """``(shapes, texts)``: one large text of tiny sentences among 15-63 prose documents, or 16-96 small ones."""
    prose = [(f"Document {i}. " + PROSE * rng.randint(1, 12), "en") for i in range(rng.randint(15, 63))]
    if rng.random() < 0.5:
        shape, text = tiny_sentences(rng, rng.choice([100_000, 200_000, 400_000]))
        prose.insert(rng.randrange(len(prose) + 1), (text, rng.choice(["en", "zh", None])))
        return [shape], prose
    shapes, texts = [], []
    drawn = rng.sample(sorted(SHAPES), rng.randint(1, 2))  # a batch dense in one class or two
    for _ in range(rng.randint(16, 96)):
        shape, text = tiny_sentences(rng, rng.choice([500, 2_000, 8_000]), rng.choice(drawn))
        shapes.append(shape)
        texts.append((text, rng.choice(["en", "de", None])))
    if rng.random() < 0.3:
        texts += prose
        rng.shuffle(texts)
    return shapes, texts


def _peak_mb(call) -> float:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    from corpusforge.pipeline.dedup.boilerplate import keyed_lines, keyed_lines_by_line, keyed_lines_many

    shapes, texts = batch(rng)
    TRIED.update(set(shapes))
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "batch.jsonl").write_text(
        "".join(json.dumps({"text": text, "lang": lang}) + "\n" for text, lang in texts), encoding="utf-8")

    def many():
        return keyed_lines_many(texts, LINE_CHARS, SENTENCE_CHARS)

    def loop():
        return [keyed_lines(text, lang, LINE_CHARS, SENTENCE_CHARS) for text, lang in texts]

    what = f"a batch of {len(texts)} texts ({', '.join(sorted(set(shapes)))})"
    assert many() == [keyed_lines_by_line(text, lang, LINE_CHARS, SENTENCE_CHARS) for text, lang in texts], \
        f"{what}: keyed_lines_many's keys are not the definition's"
    batch_mb, loop_mb = _peak_mb(many), _peak_mb(loop)
    assert batch_mb <= loop_mb + ALLOWANCE_MB, \
        f"{what}: keyed_lines_many peaked at {batch_mb:.1f} MB, keyed_lines one by one at {loop_mb:.1f} MB"
    best = {many: float("inf"), loop: float("inf")}
    for _ in range(3):  # alternating: a load that comes and goes weighs on both
        for call in best:
            started = time.process_time()
            call()
            best[call] = min(best[call], time.process_time() - started)
        if best[many] <= max(FLOOR_S, CPU_BOUND * best[loop]):
            return
    raise AssertionError(f"{what}: keyed_lines_many took {best[many]:.2f} CPU s, keyed_lines one by one "
                         f"{best[loop]:.2f} s")
