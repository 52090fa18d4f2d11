"""Bounds put on text before it reaches third-party code that is super-linear on some input.

``unicodedata.normalize`` sorts each run of combining marks (non-starters: canonical combining class != 0)
by insertion, so a run of n marks costs ~n^2: 240 KB of one run took 29x prose's time per byte. Unicode's own
bound for this is the Stream-Safe Text Format (UAX #15): no more than 30 non-starters in a row, which no
writing system needs (real sequences stop under ten). ``bounded_normalize`` keeps the first 30 marks of a
longer run and drops the rest (Zalgo text), then normalizes: linear in the text.
``bench/adversarial.py`` rows ``combining_run`` / ``zalgo`` hold it to the 3x-prose-per-byte rule.

The ``tokenizers`` trainers (BPE, WordPiece, Unigram) are super-linear in the length of one pre-tokenized word:
BPE training on one 100k-character word (no spaces; a run of digits, dots, combining marks, emoji) took more
than 10 s where 10k took 0.06 s, and Unigram's Metaspace pre-tokenizer splits only at spaces, so a 100k run of
dots is one word to it. A word lies inside a run of characters between ASCII spaces, or is a run of spaces
(byte-level BPE keeps one as a word). ``bounded_pieces`` cuts a text whose runs are longer than ``MAX_RUN``
(C4's longest word, 1000) into pieces that the trainer takes as separate texts: no run in any piece is longer,
so no word is. A long run is cut just before its last whitespace character within the bound (a line break, a
tab: where every pre-tokenizer but Metaspace splits anyway), else at the bound. A text without such a run, all
ordinary text, is passed whole: the trained tokenizer is the same. ``bench/record_cost.py`` measures it.
"""
from __future__ import annotations

import functools
import unicodedata

MAX_NON_STARTERS = 30  # UAX #15, Stream-Safe Text Format
MAX_RUN = 1000  # characters between two ASCII spaces, or spaces in a row, that a tokenizer trainer sees


@functools.lru_cache(maxsize=1)
def _long_run():
    import regex  # on the first non-ASCII text (the bottom layer imports nothing heavy at import time)

    return regex.compile(r"\P{ccc=0}{%d,}" % (MAX_NON_STARTERS + 1))


def cap_combining_runs(text: str) -> tuple[str, int]:
    """``text`` with every run of more than ``MAX_NON_STARTERS`` combining marks cut to that many, and the
    number of runs cut."""
    if text.isascii():
        return text, 0
    runs = 0

    def cut(m) -> str:
        nonlocal runs
        runs += 1
        return m.group()[:MAX_NON_STARTERS]

    return _long_run().sub(cut, text), runs


def bounded_normalize(form: str, text: str) -> str:
    """``unicodedata.normalize(form, text)`` after ``cap_combining_runs``: linear whatever the text."""
    if text.isascii():
        return text
    return unicodedata.normalize(form, cap_combining_runs(text)[0])


@functools.lru_cache(maxsize=4)
def _long_space_run(limit: int):
    import re

    # A run starts after a space (or the text's start) / after a non-space: each run is scanned once from its
    # start, whatever its length, so the search is linear.
    return re.compile(r"(?<![^ ])[^ ]{%d,}|(?<! ) {%d,}" % (limit + 1, limit + 1))


@functools.lru_cache(maxsize=1)
def _whitespace():
    import re

    return re.compile(r"\s")


def bounded_pieces(text: str, limit: int = MAX_RUN) -> list[str]:
    """``text`` cut into consecutive pieces (``"".join`` gives it back) none of which holds a run of more than
    ``limit`` characters without an ASCII space, or of more than ``limit`` spaces; ``[text]`` when it has none."""
    if len(text) <= limit:
        return [text]
    pieces, start = [], 0
    for run in _long_space_run(limit).finditer(text):
        pos, end = run.start(), run.end()
        while end - pos > limit:
            cut = pos + limit
            if text[pos] != " ":
                last = None
                for last in _whitespace().finditer(text, pos + 1, cut + 1):
                    pass
                if last is not None:
                    cut = last.start()  # the whitespace character begins the next piece
            pieces.append(text[start:cut])
            start = pos = cut
    pieces.append(text[start:])
    return pieces
