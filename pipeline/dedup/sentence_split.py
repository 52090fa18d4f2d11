"""Sentence boundaries, language-aware and linear in the text: what sentence-level dedup cuts documents at.

A rule-based splitter (no library that installs offline is both language-aware and fast enough: pysbd runs
at a few hundred KB/s and backtracks on long punctuation runs). A line break always ends a sentence; inside
a line a sentence ends after a run of ``. ! ? …`` (optionally followed by closing quotes or brackets) and
whitespace, unless the word before the full stop is an abbreviation of the document's language or an
initial, or the next sentence would start with a lower-case letter or a digit. The CJK full stops
``。！？`` end a sentence without needing a space. A colon (``:`` or reStructuredText's ``::``) and whitespace
end a sentence too when what follows reads as a sentence of its own appended to a list introduction ("... as
follows: This article first appeared in ..."): ``_colon_ends`` asks for at least ``_COLON_WORDS`` words (with
a letter or digit: a list item's "- " is none) before the colon, a letter, digit or closing bracket or quote
just before it (or before one space before it), after it a capitalised word followed by a space and a letter
or digit, and a line that is no list item (``- term: ...``). So a boilerplate sentence after a line's colon is
a sentence that dedup can find, while code (``x: int = 0``, ``{'a': True}``), ``key: Value`` pairs, list
items and a short "Note: ..." stay whole. Pure functions, no Beam.
"""
from __future__ import annotations

import re

# A line break, or a boundary candidate: a run of terminators taken only from its start (the lookbehind) and
# without backtracking (possessive quantifiers), so a run of n full stops costs O(n), not O(n^2). One pattern
# for all three, so a text is scanned once however many lines it has. This is the definition; ``_BOUNDARY``
# below finds the same matches (tests/pipeline/dedup/test_sentence_split.py holds them equal).
_BOUNDARY_REFERENCE = re.compile(r"\n"
                                 r"|(?<![.!?…])[.!?…]++[\"'”’»)\]]*+[^\S\n]++"
                                 r"|(?<![。！？])[。！？]++[”’」』）)]*+[^\S\n]*+"
                                 r"|(?<!:):++[^\S\n]++")
# The same pattern led by one character class, which the regex engine searches for fast; the lookbehinds
# move after it (a two-character lookbehind: the character before the one just taken is no terminator of
# its kind). ~3x the reference's speed on web-like text, where the scan was most of splitting's time.
_BOUNDARY = re.compile(r"[\n.!?…。！？:]"
                       r"(?:(?<=\n)"
                       r"|(?<=[.!?…])(?<![.!?…]{2})[.!?…]*+[\"'”’»)\]]*+[^\S\n]++"
                       r"|(?<=[。！？])(?<![。！？]{2})[。！？]*+[”’」』）)]*+[^\S\n]*+"
                       r"|(?<=:)(?<!::):*+[^\S\n]++)")
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


_COLON_WORDS = 2  # words before a colon that ends a sentence: "For example:" ends one, "Note:" and "key:" do not
_BEFORE_COLON = "\"'”’»)]"  # besides a letter or digit, what may stand right before such a colon
# After the colon: a word of letters and digits (its first character checked upper case in Python), a space,
# and a letter or digit: "This article", "Copyright 2024", not "Dict[str", "True," or "Foo = None".
_NEXT_WORD = re.compile(r"[^\W\d_][^\W_]*[^\S\n]+[^\W_]")
# A list item's line ("- term: Its description.", "2) term: ..."): its colon introduces no list, and two items
# may share a description that splitting would let dedup collapse.
_LIST_ITEM = re.compile(r"[^\S\n]*+(?:[-*+•–—]|\d{1,3}[.)]|[a-zA-Z][.)])[^\S\n]")


def colon_words_reference(text: str) -> int:
    """The definition of what ``_has_two_words`` tests (that this is ``_COLON_WORDS`` or more): the whitespace-split
    words of ``text`` that hold a letter or digit."""
    return sum(any(c.isalnum() for c in word) for word in text.split())


# Two words that hold a letter or digit (``[^\W_]`` is ``str.isalnum``, ``\s`` and ``\S`` are ``str.split``'s
# whitespace and the rest): a letter or digit, whitespace after it, a letter or digit after that; one regex search
# instead of a Python generator per word (~1 call in 2 sentences of web text goes here: a colon run before a
# capitalised word). Tried only at a word's start, and the atomic group keeps the word's first letter or digit,
# so a failed try scans its word and what follows once: linear, where a search from every letter of a long word
# that the rest of the text could not complete would be quadratic.
_TWO_WORDS = re.compile(r"(?<!\S)(?>\S*?[^\W_])\S*+\s[\W_]*+[^\W_]")
assert _COLON_WORDS == 2  # what _TWO_WORDS counts to


def _has_two_words(text: str) -> bool:
    """``colon_words_reference(text) >= _COLON_WORDS``."""
    return _TWO_WORDS.search(text) is not None


def _colon_ends(text: str, match: re.Match, start: int) -> bool:
    """Whether a colon run and its whitespace (``match``) end the sentence that starts at ``start``."""
    colon = match.start()
    if match.group().rstrip().count(":") > 2 or colon == 0:
        return False
    before = text[colon - 1]
    if before in " \u00a0\u202f" and colon >= 2:  # "is ::" (reStructuredText), "mot : Phrase" (French)
        before = text[colon - 2]
    if not (before.isalnum() or before in _BEFORE_COLON):
        return False
    end = match.end()
    if end == len(text) or not text[end].isupper() or not _NEXT_WORD.match(text, end):
        return False
    if not _has_two_words(text[start:colon]):  # the slice: its start is a word's start, whatever stands before
        return False
    return not _LIST_ITEM.match(text, text.rfind("\n", 0, colon) + 1)


def _ends_sentence(text: str, match: re.Match, abbrevs: frozenset[str], start: int = 0) -> bool:
    """Whether the boundary candidate ``match`` ends the sentence that starts at ``start``."""
    first, end = text[match.start()], match.end()
    if first == ":":
        return _colon_ends(text, match, start)
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


def split_sentences_reference(text: str, lang: str | None = None) -> list[list[str]]:
    """The definition of ``split_sentences``: every boundary candidate of ``_BOUNDARY`` checked by
    ``_ends_sentence`` (tests/pipeline/dedup/test_sentence_split.py holds the two equal)."""
    abbrevs = abbreviations(lang)
    lines: list[list[str]] = []
    line: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.group() == "\n":
            line.append(text[start:match.start()])
            lines.append(line)
            line, start = [], match.end()
        elif _ends_sentence(text, match, abbrevs, start):
            line.append(text[start:match.end()])
            start = match.end()
    if start < len(text) or not line:
        line.append(text[start:])
    lines.append(line)
    return lines


# The fast path decides most boundaries inside one regex per language, so Python looks only at the doubtful
# ones. Each ``_BOUNDARY`` candidate is matched by the first of these branches whose lookarounds hold (the
# branches consume the same span, so the matches are ``_BOUNDARY``'s):
# - ``line``: a line break;
# - ``bang``: a run led by ``! ? …`` followed by a character that is ASCII and neither lower case, a digit nor
#   space (``_ends_sentence`` says yes without looking at the word before);
# - ``stop``: the same led by ``.`` whose word before is provably neither an abbreviation of the language nor
#   an initial: longer than any abbreviation (that many characters that are neither space nor the quotes
#   ``_ends_sentence`` strips), or 2-6 ASCII letters after a space that spell none of the language's
#   abbreviations (one fixed-width negative lookbehind per abbreviation);
# - ``cjk``: a CJK run that neither ends the text nor a line;
# - ``maybe``: anything else, which ``_ends_sentence`` decides; of colon runs only those followed by what may be
#   a capitalised word, a space and a letter (``_CAPITALISED``): the others end no sentence, and skipping a
#   candidate that only spans a colon run and spaces leaves the later matches as they are.
_TERMS, _CLOSERS, _STRIPPED = ".!?…", "\"'”’»)\\]", "\"'“‘«(\\["
_ABBREVIATION_CHARS = max(len(word) for words in ABBREVIATIONS.values() for word in words)
assert _ABBREVIATION_CHARS + 1 <= _LOOKBACK  # the word must be whole inside the reference's look-back window
_UPPER_OR_PUNCTUATION = r"[\x21-\x2f\x3a-\x60\x7b-\x7e]"  # ASCII, not a lower-case letter, digit or space
_WESTERN_RUN = rf"(?<![{_TERMS}]{{2}})[{_TERMS}]*+[{_CLOSERS}]*+[^\S\n]++"
_CJK_RUN = r"(?<![。！？]{2})[。！？]*+[”’」』）)]*+[^\S\n]*+"


def _short_words_that_end(abbrevs: frozenset[str]) -> str:
    """Lookbehinds (after the ``.``) that hold when the word before it is 2.._ABBREVIATION_CHARS ASCII letters
    after a space and is none of ``abbrevs`` (ASCII letters only: ``.lower()`` is then ASCII case folding)."""
    branches = []
    for length in range(2, _ABBREVIATION_CHARS + 1):
        spelled = sorted(w for w in abbrevs if len(w) == length and w.isascii() and w.isalpha())
        not_these = "".join(
            "(?<!\\s" + "".join(f"[{c}{c.upper()}]" for c in word) + "\\.)" for word in spelled)
        branches.append(f"(?<=\\s[A-Za-z]{{{length}}}\\.){not_these}")
    return "(?:" + "|".join(branches) + ")"


_CAPITALISED = r"(?:[A-Z]|[^\x00-\x7f])[^\W_]*[^\S\n]+[^\W_]"  # non-ASCII: Python checks isupper()
_PATTERNS: dict[frozenset, re.Pattern] = {}


def _sentence_end(abbrevs: frozenset[str]) -> re.Pattern:
    """The fast path's pattern for ``abbrevs`` (built once per language)."""
    pattern = _PATTERNS.get(abbrevs)
    if pattern is None:
        long_word = rf"(?<=[^\s{_STRIPPED}]{{{_ABBREVIATION_CHARS}}}[^\s{_STRIPPED}{_TERMS}]\.)"
        pattern = _PATTERNS[abbrevs] = re.compile(
            r"[\n.!?…。！？:](?:"
            r"(?<=\n)(?P<line>)"
            rf"|(?<=[!?…]){_WESTERN_RUN}(?={_UPPER_OR_PUNCTUATION})(?P<bang>)"
            rf"|(?:{long_word}|{_short_words_that_end(abbrevs)}){_WESTERN_RUN}(?={_UPPER_OR_PUNCTUATION})(?P<stop>)"
            rf"|(?<=[。！？]){_CJK_RUN}(?=[^\n])(?P<cjk>)"
            rf"|(?<=[{_TERMS}]){_WESTERN_RUN}(?P<maybe>)"
            rf"|(?<=[。！？]){_CJK_RUN}(?P<maybe_cjk>)"
            rf"|(?<=:)(?<!::):*+[^\S\n]++(?={_CAPITALISED})(?P<maybe_colon>))")
    return pattern


def sentence_spans(text: str, lang: str | None = None) -> list[tuple[int, int, bool]]:
    """``(start, end, last of its line)`` of every sentence of ``text``, in order: the spans of
    ``split_sentences``, whose lines end at the spans marked last (a line's ``\\n`` belongs to no span)."""
    abbrevs = abbreviations(lang)
    spans: list[tuple[int, int, bool]] = []
    start = line_start = 0
    for match in _sentence_end(abbrevs).finditer(text):
        kind = match.lastgroup
        if kind == "line":
            spans.append((start, match.start(), True))
            start = line_start = match.end()
        elif kind[0] != "m" or _ends_sentence(text, match, abbrevs, start):
            spans.append((start, match.end(), False))
            start = match.end()
    if start < len(text) or start == line_start:
        spans.append((start, len(text), True))
    else:  # the text ends right after a sentence: that sentence ends the last line
        spans[-1] = spans[-1][:2] + (True,)
    return spans


def split_sentences(text: str, lang: str | None = None) -> list[list[str]]:
    """The sentences of ``text``, line by line: ``"".join`` of a line's sentences is the line (a sentence
    keeps the whitespace after it), and ``"\\n".join`` of the lines is the text."""
    lines: list[list[str]] = []
    line: list[str] = []
    for start, end, last in sentence_spans(text, lang):
        line.append(text[start:end])
        if last:
            lines.append(line)
            line = []
    return lines
