"""Sentence boundaries, language-aware and linear in the text: what sentence-level dedup cuts documents at.

A rule-based splitter (no library that installs offline is both language-aware and fast enough: pysbd runs
at a few hundred KB/s and backtracks on long punctuation runs). A line break always ends a sentence; inside
a line a sentence ends after a run of ``. ! ? …`` (optionally followed by closing quotes or brackets) and
whitespace, unless the word before the full stop is an abbreviation of the document's language or an
initial, or the next sentence would start with a lower-case letter or a digit. The CJK full stops
``。！？`` end a sentence without needing a space. Pure functions, no Beam.
"""
from __future__ import annotations

import re

# A boundary candidate: a run of terminators taken only from its start (the lookbehind) and without
# backtracking (possessive quantifiers), so a run of n full stops costs O(n), not O(n^2).
_LATIN_END = re.compile(r"(?<![.!?…])[.!?…]++[\"'”’»)\]]*+\s++")
_CJK_END = re.compile(r"(?<![。！？])[。！？]++[”’」』）)]*+\s*+")

# Abbreviations that end in a full stop without ending a sentence, lower case, without their final stop.
_COMMON = {"e.g", "i.e", "etc", "vs", "cf", "ca", "approx", "no", "nos", "fig", "figs", "vol", "vols", "pp", "p",
           "ed", "eds", "al", "dr", "prof", "st", "mt"}
ABBREVIATIONS: dict[str, frozenset[str]] = {
    "en": frozenset(_COMMON | {"mr", "mrs", "ms", "jr", "sr", "inc", "ltd", "co", "corp", "dept", "est", "gen",
                               "gov", "lt", "col", "sgt", "rev", "hon", "jan", "feb", "mar", "apr", "jun", "jul",
                               "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "a.m", "p.m", "ph.d"}),
    "de": frozenset(_COMMON | {"z.b", "bzw", "usw", "vgl", "ggf", "evtl", "inkl", "nr", "str", "abs", "bspw",
                               "d.h", "u.a", "s", "hr", "fr", "jh", "mio", "mrd", "zb", "z", "u"}),
    "fr": frozenset(_COMMON | {"m", "mm", "mme", "mlle", "me", "cie", "env", "av", "apr", "j.-c", "p.ex", "n°"}),
    "es": frozenset(_COMMON | {"sr", "sra", "srta", "ud", "uds", "dña", "pág", "núm", "av", "avda", "ej", "aprox"}),
    "it": frozenset(_COMMON | {"sig", "sigg", "dott", "ing", "avv", "pag", "ecc", "es"}),
    "pt": frozenset(_COMMON | {"sr", "sra", "dra", "pág", "av", "ex", "nº"}),
    "nl": frozenset(_COMMON | {"dhr", "mevr", "bijv", "o.a", "m.b.t", "blz", "nr"}),
}
_LOOKBACK = 16  # characters before a full stop searched for the abbreviation (longer words are no abbreviation)


def abbreviations(lang: str | None) -> frozenset[str]:
    """The abbreviations of ``lang`` (a language-ID label such as ``en`` or ``__label__de``); English for an
    unknown or missing language, whose abbreviations are the most common in mixed web text."""
    code = (lang or "").removeprefix("__label__").split("_")[0].split("-")[0].lower()
    return ABBREVIATIONS.get(code, ABBREVIATIONS["en"])


def _ends_sentence(line: str, match: re.Match, abbrevs: frozenset[str]) -> bool:
    end = match.end()
    if end < len(line) and (line[end].islower() or line[end].isdigit()):
        return False
    if line[match.start()] != ".":
        return True
    before = line[max(0, match.start() - _LOOKBACK):match.start()]
    word = before.rsplit(None, 1)[-1] if before.strip() else ""
    word = word.lstrip("\"'“‘«([").lower()
    if len(word) == 1 and word.isalpha():
        return False  # an initial: "J. R. R. Tolkien"
    return word not in abbrevs


def line_sentences(line: str, abbrevs: frozenset[str]) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of one line; a sentence's span includes the whitespace after it, so
    the spans cover the line."""
    cuts = [m.end() for m in _LATIN_END.finditer(line) if m.end() < len(line) and _ends_sentence(line, m, abbrevs)]
    cuts += [m.end() for m in _CJK_END.finditer(line) if m.end() < len(line)]
    spans, start = [], 0
    for cut in sorted(set(cuts)):
        spans.append((start, cut))
        start = cut
    if start < len(line) or not spans:
        spans.append((start, len(line)))
    return spans


def split_sentences(text: str, lang: str | None = None) -> list[list[str]]:
    """The sentences of ``text``, line by line: ``"".join`` of a line's sentences is the line, and
    ``"\\n".join`` of the lines is the text."""
    abbrevs = abbreviations(lang)
    return [[line[a:b] for a, b in line_sentences(line, abbrevs)] for line in text.split("\n")]
