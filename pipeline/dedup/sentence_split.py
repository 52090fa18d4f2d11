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

# A line break, or a boundary candidate: a run of terminators taken only from its start (the lookbehind) and
# without backtracking (possessive quantifiers), so a run of n full stops costs O(n), not O(n^2). One pattern
# for all three, so a text is scanned once however many lines it has. This is the definition; ``_BOUNDARY``
# below finds the same matches (tests/pipeline/dedup/test_sentence_split.py holds them equal).
_BOUNDARY_REFERENCE = re.compile(r"\n"
                                 r"|(?<![.!?…])[.!?…]++[\"'”’»)\]]*+[^\S\n]++"
                                 r"|(?<![。！？])[。！？]++[”’」』）)]*+[^\S\n]*+")
# The same pattern led by one character class, which the regex engine searches for fast; the lookbehinds
# move after it (a two-character lookbehind: the character before the one just taken is no terminator of
# its kind). ~3x the reference's speed on web-like text, where the scan was most of splitting's time.
_BOUNDARY = re.compile(r"[\n.!?…。！？]"
                       r"(?:(?<=\n)"
                       r"|(?<=[.!?…])(?<![.!?…]{2})[.!?…]*+[\"'”’»)\]]*+[^\S\n]++"
                       r"|(?<=[。！？])(?<![。！？]{2})[。！？]*+[”’」』）)]*+[^\S\n]*+)")
_CJK_STOPS = "。！？"

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


def _ends_sentence(text: str, match: re.Match, abbrevs: frozenset[str]) -> bool:
    first, end = text[match.start()], match.end()
    if end == len(text) or text[end] == "\n":
        return False  # the text or line ends here anyway
    if first in _CJK_STOPS:
        return True
    if text[end].islower() or text[end].isdigit():
        return False
    if first != ".":
        return True
    before = text[max(0, match.start() - _LOOKBACK):match.start()]
    word = before.rsplit(None, 1)[-1] if before.strip() else ""
    word = word.lstrip("\"'“‘«([").lower()
    if len(word) == 1 and word.isalpha():
        return False  # an initial: "J. R. R. Tolkien"
    return word not in abbrevs


def split_sentences(text: str, lang: str | None = None) -> list[list[str]]:
    """The sentences of ``text``, line by line: ``"".join`` of a line's sentences is the line (a sentence
    keeps the whitespace after it), and ``"\\n".join`` of the lines is the text."""
    abbrevs = abbreviations(lang)
    lines: list[list[str]] = []
    line: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.group() == "\n":
            line.append(text[start:match.start()])
            lines.append(line)
            line, start = [], match.end()
        elif _ends_sentence(text, match, abbrevs):
            line.append(text[start:match.end()])
            start = match.end()
    if start < len(text) or not line:
        line.append(text[start:])
    lines.append(line)
    return lines
