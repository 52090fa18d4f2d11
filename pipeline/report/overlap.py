"""The text a near-duplicate shares with its survivor, for the report to highlight.

Both texts are cut to ``max_chars`` first, then split into words (with the whitespace after each) and
matched with ``difflib.SequenceMatcher`` on the word lists: a few thousand words at most, so a 200,000-
character document cannot stall the report.
"""
from __future__ import annotations

import dataclasses
import difflib
import re

MAX_CHARS = 3000
_WORDS = re.compile(r"\S+\s*|\s+")


@dataclasses.dataclass
class Overlap:
    """Each side as ``[(text, shared)]`` runs (joined, they give the side's text back) and the share of the
    removed side's characters that the survivor shares."""

    removed: list[tuple[str, bool]]
    survivor: list[tuple[str, bool]]
    shared_share: float


def _runs(words: list[str], shared: list[bool]) -> list[tuple[str, bool]]:
    runs: list[tuple[str, bool]] = []
    for word, flag in zip(words, shared):
        if runs and runs[-1][1] == flag:
            runs[-1] = (runs[-1][0] + word, flag)
        else:
            runs.append((word, flag))
    return runs


def shared_text(removed: str, survivor: str, max_chars: int = MAX_CHARS) -> Overlap:
    """Mark the words of ``removed`` and ``survivor`` (each cut to ``max_chars``) that appear in both, in order."""
    a, b = _WORDS.findall(removed[:max_chars]), _WORDS.findall(survivor[:max_chars])
    # Compare words without their trailing whitespace: a line break against a space is the same text.
    matcher = difflib.SequenceMatcher(None, [w.strip() for w in a], [w.strip() for w in b], autojunk=False)
    in_a, in_b = [False] * len(a), [False] * len(b)
    for block in matcher.get_matching_blocks():
        for i in range(block.size):
            in_a[block.a + i] = in_b[block.b + i] = bool(a[block.a + i].strip())
    total = sum(len(w) for w in a)
    shared = sum(len(w) for w, flag in zip(a, in_a) if flag)
    return Overlap(_runs(a, in_a), _runs(b, in_b), shared / total if total else 0.0)
