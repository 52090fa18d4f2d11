"""What a review of the view's mail and code escapes (encoded-words, quoted-printable) found: hostile input that
cost quadratic time, crashed, left an encoded-word's PII readable, or made a URL's value read as quoted-printable.
Each test fails on 8f0a577."""
from __future__ import annotations

import time

import pytest

from corpusforge.pipeline.pii.canonical import canonical


def _seconds(text: str) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        canonical(text)
        best = min(best, time.perf_counter() - start)
        if best > 2.0:  # far over: no second run needed
            break
    return best


def _sized(prefix: str, unit: str, n: int) -> str:
    return (prefix + unit * (n // len(unit) + 1))[:n]


@pytest.mark.parametrize("prefix, unit", [("", "=E0=80=80"), ("", "=ED=A0=80"), ("=2Ea", "=E0=80=80"),
                                          ("x=40y", "=ED=A0=80")])
def test_quoted_printable_escapes_of_no_character_cost_linear_time(prefix, unit):
    # The class: escapes _QUOTED_PRINTABLE matches that decode to no character (an overlong or surrogate UTF-8
    # sequence) after a word's escape: the word's whitespace search restarted from that escape every time (8f0a577:
    # 24K characters 3.6 s, 20x the time for 4x the text). Linear: ~10x for 10x, 2M characters ~1.2 s here.
    small, large = _seconds(_sized(prefix, unit, 20_000)), _seconds(_sized(prefix, unit, 80_000))
    assert large < max(8 * small, 0.5), (small, large)
    assert _seconds(_sized(prefix, unit, 2_000_000)) < 15.0
