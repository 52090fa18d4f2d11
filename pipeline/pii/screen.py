"""Cheap pre-screens: which parts of a document can hold a given entity at all.

A recognizer declares a ``ScreenSpec``: how to find *candidates* (a few fast scans shared by all
recognizers: numeric runs, ``@``, ``:hex:``, ``XX99``, ``0x``...), which characters its matches are made of
(``token``), and how much context it reads around a match (``before``/``after``). A document with no
candidate never reaches the recognizer; one with candidates reaches it only through *windows*: each
candidate grown to whole tokens, widened by the context margins, grown to whole tokens again and padded
by a few characters for look-arounds. Windows that touch are merged.

Soundness: every match the recognizer finds in the full text contains a candidate (the scans are
necessary conditions), and the window of that candidate covers the whole token plus the context the
recognizer reads, so running the recognizer on the windows finds exactly what it finds on the full text.
``tests/pipeline/pii/test_screen.py`` checks this equality on every test case and on long mixed texts.

This module imports no Presidio: a ``Scrubber`` screens every text with it and loads Presidio only for a text
that has candidates. ``ScreenedRecognizer``, the Presidio side, lives in ``corpusforge.pipeline.pii.screened``.
"""
from __future__ import annotations

import re
from typing import Callable, Iterable, NamedTuple

_DIGITS = re.compile(r"[0-9]+")  # starts with a character class: the regex engine skips the rest fast
_V6 = re.compile(r":[0-9A-Fa-f]{0,4}:")  # starts with a literal: fast
_BASE58 = re.compile(r"[13][a-km-zA-HJ-NP-Z1-9]{25}")
_ETH = re.compile(r"0x[0-9a-fA-F]{40}")
_URL = re.compile(r"://|www\.", re.IGNORECASE)
_DASHED_QUAD = re.compile(r"(?<![0-9])[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3}(?![0-9])")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")  # an IBAN's country, either case
# A text's bytes with every ASCII digit as b"0" and everything else as b" " (``_digit_mask``): digit runs are
# then found with ``bytes.find`` (memchr) instead of a regex character class tried at every character (~6x).
_DIGIT_MASK = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))

NUMERIC_TOKEN = r"[0-9 \t\u00a0\u2007.\-/()+]"
EMAIL_TOKEN = r"[\w.!#$%&'*+/=?^`{|}~@-]"
# "-": an IPv4 address dotted after a dash is one when a host name follows (``ec2-81.2.69.160.compute-1.example.com``)
HEX_TOKEN = r"[0-9A-Za-z:.%/\-]"
ALNUM_TOKEN = r"[0-9A-Za-z]"
NON_SPACE_TOKEN = r"[\S\u2007]"  # a URL, across the space a %20 in it is read as (URL_SPACE)
PAD = 4  # characters beyond a window's tokens, for look-behinds/-aheads and boundary checks
# Between windows joined into one text: no token contains a newline, and it is longer than any context.
SEPARATOR = "\n" * 64
_SEPARATOR_CHARS = " \t\u00a0\u2007.-/()+"


class Run(NamedTuple):
    start: int
    end: int
    digits: int
    has_dot: bool


class ScanCache:
    """The shared scans of one text, each computed at most once. One pass over its digit runs serves the
    numeric entities (phone, card, SSN, IPv4), IBANs (two check digits after two capitals) and crypto
    addresses (base58 ``1``/``3``, bech32 ``bc1``, Ethereum ``0x``)."""

    def __init__(self, text: str):
        self.text = text
        self._digits: list[tuple[int, int]] | None = None
        self._runs: list[Run] | None = None
        self._reversed: str | None = None

    @property
    def reversed(self) -> str:
        if self._reversed is None:
            self._reversed = self.text[::-1]
        return self._reversed

    @property
    def digit_runs(self) -> list[tuple[int, int]]:
        """The spans of the runs of ASCII digits (``[0-9]+``; ``digit_runs_reference``, which tests hold equal)."""
        if self._digits is None:
            self._digits = _digit_runs(self.text)
        return self._digits

    def digit_runs_reference(self) -> list[tuple[int, int]]:
        return [m.span() for m in _DIGITS.finditer(self.text)]

    @property
    def numeric_runs(self) -> list[Run]:
        """Runs of at least 4 digits with at most 6 separator characters (space, ``.-/()+``) between digits."""
        if self._runs is None:
            runs, text = [], self.text
            start = end = digits = -1
            for s, e in self.digit_runs + [(-1, -1)]:
                gap = text[end:s] if start >= 0 else ""
                if start >= 0 and s >= 0 and len(gap) <= 6 and not gap.strip(_SEPARATOR_CHARS):
                    end, digits = e, digits + e - s
                    continue
                if start >= 0 and digits >= 4:
                    runs.append(Run(start, end, digits, "." in text[start:end]))
                start, end, digits = s, e, e - s
            self._runs = runs
        return self._runs

    def iban_candidates(self) -> list[tuple[int, int]]:
        text = self.text
        return [(s - 2, s + 2) for s, e in self.digit_runs
                if e - s >= 2 and s >= 2 and text[s - 1] in _LETTERS and text[s - 2] in _LETTERS]

    def crypto_candidates(self) -> list[tuple[int, int]]:
        text, out = self.text, []
        for s, e in self.digit_runs:
            first = text[s]
            if first in "13":
                m = _BASE58.match(text, s)
                if m:
                    out.append(m.span())
                if first == "1" and s >= 2 and text[s - 2:s].lower() == "bc":
                    out.append((s - 2, s + 1))
            elif first == "0" and e == s + 1:
                m = _ETH.match(text, s)
                if m:
                    out.append(m.span())
        return out

    def find_all(self, pattern: re.Pattern) -> list[tuple[int, int]]:
        return [m.span() for m in pattern.finditer(self.text)]

    def url_candidates(self) -> list[tuple[int, int]]:
        """``find_all(_URL)``, skipped when the text holds neither "://" nor "www." in any case: both are
        substrings the regex needs, and the case-insensitive regex tries its alternation at every character
        (~6x the cost of the two substring tests)."""
        text = self.text
        if "://" not in text and "www." not in text.lower():
            return []
        return self.find_all(_URL)

    def dashed_quad_candidates(self) -> list[tuple[int, int]]:
        """Numeric runs holding four groups of 1-3 digits joined by ``-``: where an IPv4 address written with
        dashes in a host name can be (``ec2-81-2-69-160.compute.example.com``), from the runs already found (a
        date, ``2024-03-15``, or a phone number, ``1-800-555-0199``, holds none)."""
        text = self.text
        return [(r.start, r.end) for r in self.numeric_runs if _DASHED_QUAD.search(text, r.start, r.end) is not None]

    def email_candidates(self) -> list[tuple[int, int]]:
        """Each ``@``, widened over what a quoted local part or an address literal can hold when one may be
        there (a ``"`` right before it: 64 characters back; a ``[`` right after: 53 on): the token runs the
        window grows to stop at ``"``, spaces and ``[``, which those forms hold."""
        text, out = self.text, []
        for at, end in self.find_char("@"):
            start = max(0, at - 66) if at and text[at - 1] == '"' else at
            if text[at + 1:at + 2] == "[":
                end = min(len(text), at + 54)
            out.append((start, end))
        return out

    def find_char(self, char: str) -> list[tuple[int, int]]:
        out, i = [], self.text.find(char)
        while i >= 0:
            out.append((i, i + 1))
            i = self.text.find(char, i + 1)
        return out


Candidates = Callable[[ScanCache], Iterable[tuple[int, int]]]


def numeric(min_digits: int, need_dot: bool = False) -> Candidates:
    def candidates(cache: ScanCache):
        return [(r.start, r.end) for r in cache.numeric_runs
                if r.digits >= min_digits and (r.has_dot or not need_dot)]
    return candidates


def pattern(*patterns: re.Pattern) -> Candidates:
    def candidates(cache: ScanCache):
        return [span for p in patterns for span in cache.find_all(p)]
    return candidates


def char(c: str) -> Candidates:
    return lambda cache: cache.find_char(c)


def union(*sources: Candidates) -> Candidates:
    return lambda cache: [span for source in sources for span in source(cache)]


class ScreenSpec:
    """``candidates``: where matches may be; ``token``: a regex character class the recognizer's matches are
    made of; ``before``/``after``: how much context the recognizer reads around a match."""

    def __init__(self, candidates: Candidates, token: str, before: int = 0, after: int = 0, grow_first: bool = True):
        self.candidates = candidates
        self.token = token
        self.before = before
        self.after = after
        # Numeric runs already hold every digit a match can have, so margins can start from them; other
        # candidates ("@") sit inside their match, so the margins start from the grown token.
        self.grow_first = grow_first
        self._run = re.compile(token + "*")

    def _grower(self, cache: ScanCache):
        """``grow(start, end)``: the span widened to the token run on each side."""
        text, n, run = cache.text, len(cache.text), self._run

        def grow(start: int, end: int) -> tuple[int, int]:
            # to the left: match the token run on the reversed text
            return n - run.match(cache.reversed, n - start).end(), run.match(text, end).end()
        return grow

    def windows(self, cache: ScanCache) -> list[tuple[int, int]]:
        spans = sorted(self.candidates(cache))
        if not spans:
            return []
        n, grow = len(cache.text), self._grower(cache)
        grown = []
        # Growing is monotone (a span inside a grown one grows to a part of it) and a grown span ends at
        # non-token characters, so a candidate inside the previous candidate's grown span (its token run, when
        # grow_first; its whole window otherwise) gets a window inside the previous one, which adds nothing
        # once windows are merged. Skipping it keeps a long token run from being rescanned once per candidate
        # in it ('a@a@a@...', phone numbers joined by spaces: quadratic before).
        covered_start, covered_end = n + 1, -1
        for start, end in spans:
            if self.grow_first:
                if covered_start <= start and end <= covered_end:
                    continue
                start, end = covered_start, covered_end = grow(start, end)
            else:
                if covered_start <= max(0, start - self.before) and min(n, end + self.after) <= covered_end:
                    continue
            start, end = grow(max(0, start - self.before), min(n, end + self.after))
            if not self.grow_first:
                covered_start, covered_end = start, end
            grown.append((max(0, start - PAD), min(n, end + PAD)))
        return _merge(grown)

    def windows_reference(self, cache: ScanCache) -> list[tuple[int, int]]:
        """``windows`` growing every candidate (what it did before skipping covered ones; tests hold them equal)."""
        n, grow, grown = len(cache.text), self._grower(cache), []
        for start, end in sorted(self.candidates(cache)):
            if self.grow_first:
                start, end = grow(start, end)
            start, end = grow(max(0, start - self.before), min(n, end + self.after))
            grown.append((max(0, start - PAD), min(n, end + PAD)))
        return _merge(grown)


def _digit_runs(text: str) -> list[tuple[int, int]]:
    """The spans of ``[0-9]+`` in ``text``, from a byte mask of its digits (one byte per character: ASCII, or
    Latin-1 with every other character as "?", which is no digit)."""
    data = text.encode("ascii") if text.isascii() else text.encode("latin-1", "replace")
    mask = data.translate(_DIGIT_MASK)
    find, out, n = mask.find, [], len(mask)
    start = find(48)  # b"0"
    while start >= 0:
        end = find(32, start)  # b" "
        if end < 0:
            out.append((start, n))
            break
        out.append((start, end))
        start = find(48, end)
    return out


def _merge(grown: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching spans as one."""
    merged: list[list[int]] = []
    for start, end in sorted(grown):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


SCREENS = {
    "email": ScreenSpec(ScanCache.email_candidates, EMAIL_TOKEN, before=PAD, after=PAD),
    "phone": ScreenSpec(numeric(7), NUMERIC_TOKEN, before=48, after=28, grow_first=False),
    "card": ScreenSpec(numeric(12), NUMERIC_TOKEN, before=PAD, after=PAD, grow_first=False),
    "ssn": ScreenSpec(numeric(9), NUMERIC_TOKEN, before=48, after=PAD, grow_first=False),
    "ip": ScreenSpec(union(numeric(4, need_dot=True), pattern(_V6), ScanCache.dashed_quad_candidates), HEX_TOKEN,
                     before=28, after=PAD),
    "iban": ScreenSpec(ScanCache.iban_candidates, r"[0-9A-Za-z \u00a0\u2007\-]", before=PAD, after=PAD),
    "crypto": ScreenSpec(ScanCache.crypto_candidates, ALNUM_TOKEN, before=PAD, after=PAD),
    "url": ScreenSpec(ScanCache.url_candidates, NON_SPACE_TOKEN, before=PAD, after=PAD),
}

# The screen of each pattern entity type: the SCREEN of its recognizer (corpusforge.pipeline.pii.recognizers),
# known here without importing Presidio. tests/pipeline/pii/test_screen.py holds the two equal.
ENTITY_SCREENS = {
    "EMAIL_ADDRESS": SCREENS["email"],
    "PHONE_NUMBER": SCREENS["phone"],
    "CREDIT_CARD": SCREENS["card"],
    "IP_ADDRESS": SCREENS["ip"],
    "IBAN_CODE": SCREENS["iban"],
    "US_SSN": SCREENS["ssn"],
    "CRYPTO": SCREENS["crypto"],
    "URL": SCREENS["url"],
}


# A word of ASCII letters, digits and "_" that starts with a letter or "_": most document ids (d00000123,
# doc_12) and many metadata values. ``_IBAN_IN_WORD``: an IBAN's start where the IBAN recognizer looks for one
# (its look-behind refuses letters and digits, not "_"). ``word_without_pii`` explains.
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
# An IBAN in a word has no separators: its 15 or more characters (Norway's are the fewest) are all there.
_IBAN_IN_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}[0-9]{2}[A-Za-z0-9]{11}")


def word_without_pii(text: str) -> bool:
    """Whether ``text`` is a word that no pattern recognizer can find anything in (the NER model aside): the
    ``Scrubber`` then skips the screens and the phone check (~20 us for an id such as ``d00000123``, whose
    digit run is a phone candidate).

    The proof, recognizer by recognizer, for an ASCII word that starts with a letter or ``_`` (no ``@``,
    ``.``, ``:``, ``/``, ``+``, ``(``, space, nor any non-ASCII character, so the canonical view is the text):
    e-mail needs ``@``, IP ``.`` or ``:``, URL ``://`` or ``www.`` (their screens' candidates); phone, card and
    SSN matches start at a digit that follows no letter, digit or ``_`` (``phones._boundary_ok``, the look-behind
    ``_NUM_BEFORE``) or at ``+``/``(``, and every digit here follows one of those; a crypto address starts where
    no ``\\w`` precedes it, so only at the word's start, with ``1``, ``3``, ``0x`` or ``bc1``/``BC1``, of which
    only ``bc1`` can begin a word (refused here in any case); an IBAN starts with two letters (either case) and two
    digits after no letter or digit, and is at least 15 letters and digits long, which ``_IBAN_IN_WORD`` looks
    for (refused when found).
    ``tests/pipeline/pii/test_screen.py`` holds the full scrubber to finding nothing on every word this
    accepts, among words built to come close (``_DE89…``, ``bc1…``, ``x4111…``)."""
    return (_WORD.fullmatch(text) is not None and text[:3].lower() != "bc1"
            and _IBAN_IN_WORD.search(text) is None)
