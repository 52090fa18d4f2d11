"""Bounds put on text before it reaches third-party code that is super-linear on some input.

``unicodedata.normalize`` sorts each run of combining marks (non-starters: canonical combining class != 0)
by insertion, so a run of n marks costs ~n^2: 240 KB of one run took 29x prose's time per byte. Unicode's own
bound for this is the Stream-Safe Text Format (UAX #15): no more than 30 non-starters in a row, which no
writing system needs (real sequences stop under ten). ``bounded_normalize`` keeps the first 30 marks of a
longer run and drops the rest (Zalgo text), then normalizes: linear in the text.
``bench/adversarial.py`` rows ``combining_run`` / ``zalgo`` hold it to the 3x-prose-per-byte rule.
"""
from __future__ import annotations

import functools
import unicodedata

MAX_NON_STARTERS = 30  # UAX #15, Stream-Safe Text Format


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
