"""Text normalisation: mojibake repair (ftfy), Unicode normal form, control characters, whitespace.

Runs first, so every later stage (rules, hashing, shingling, PII patterns) sees the same canonical text.
"""
from __future__ import annotations

import re

import apache_beam as beam

from corpusforge.core.text_guards import bounded_normalize
from corpusforge.pipeline.normalize.config import NormalizeConfig
from corpusforge.pipeline.stage import (EDITS, ERRORS, REMOVED, Stage, StageContext, StageOutputs, edit, guarded, removal,
                                        split_outputs)

STAGE = "normalize"

# C0/C1 controls, except tab and newline (which carry layout), plus the zero-width/BOM characters that
# split words invisibly. \r is handled separately so CRLF becomes LF, and so are the Unicode line and
# paragraph separators, which are layout: U+2028 becomes a newline, U+2029 a paragraph break (a blank line),
# instead of being deleted and gluing two sentences together.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b\u200e\u200f\ufeff]")
# The ASCII characters _CONTROL matches (a test checks every ASCII code point): deleted from ASCII text by
# bytes.translate in C, ~5x faster than the regex trying its class at every character.
_ASCII_CONTROL = bytes(c for c in range(128) if c in (*range(0x00, 0x09), 0x0b, 0x0c, *range(0x0e, 0x20), 0x7f))
_SEPARATORS = str.maketrans({"\u2028": "\n", "\u2029": "\n\n"})
_SPACES = re.compile(r"[^\S\n]+")  # whitespace other than newline (tabs, NBSP, ideographic space...)
_OTHER_SPACE = re.compile(r"[^\S \n]")  # whitespace but a space or a newline
_LINE_EDGES = re.compile(r" ?\n ?")  # once runs are single spaces: a space beside a line break
_BLANK_LINES = re.compile(r"\n{3,}")
# The runs _SPACES.sub changes: two or more characters, or one that is not a space (a single space stays).
_CHANGED_RUNS = re.compile(r"[^\S\n]{2,}|[^\S \n]")
_SPACE_RUNS = re.compile("  +")  # a literal prefix: found by a fast substring search, not a class per character
# The ASCII characters _OTHER_SPACE matches (a test checks every ASCII code point).
_OTHER_ASCII_SPACE = "\t\x0b\x0c\r\x1c\x1d\x1e\x1f"


def normalize_text(text: str, config: NormalizeConfig) -> str:
    """The canonical form of ``text`` under ``config`` (idempotent: normalising twice changes nothing, which
    a property test checks over arbitrary text)."""
    return normalize_and_count(text, config)[0]


def normalize_and_count(text: str, config: NormalizeConfig) -> tuple[str, bool]:
    """``(normal form, whether mojibake was repaired)``.

    Mojibake goes first: its repair needs the bytes that the later steps change (C1 controls such as the
    \\x9d in a misread right quote, the no-break spaces that whitespace collapsing would turn into spaces).
    Those steps can in turn join characters into new mojibake (a control character removed from between two,
    a mark composed onto a letter), so the lines they changed are repaired again until nothing changes:
    normalising stays idempotent."""
    if not config.fix_mojibake:
        return _canonical(text, config), False
    fixed = repair_mojibake(text)
    repaired = fixed != text
    text = _canonical(fixed, config)
    for _ in range(_MAX_REPAIR_ROUNDS):
        if text == fixed:
            break
        again = repair_mojibake(text, stable=frozenset(fixed.split("\n")))
        if again == text:
            break
        repaired, fixed = True, again
        text = _canonical(again, config)
    return text, repaired


_MAX_REPAIR_ROUNDS = 4  # each round undoes a layer of encoding; real text needs at most one more


def _canonical(text: str, config: NormalizeConfig) -> str:
    # Control characters go before the Unicode normal form is taken: removing one between a letter and its
    # combining mark (e\x00\u0301) would otherwise leave a pair that only the next pass composes.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\u2028" in text or "\u2029" in text:
        text = text.translate(_SEPARATORS)
    if config.strip_control:
        text = strip_control(text)
    if config.unicode_form != "none":
        # runs of combining marks cut to 30 first (UAX #15): normalize is quadratic in a run's length
        text = bounded_normalize(config.unicode_form, text)
    if config.collapse_whitespace:
        text = collapse_whitespace(text)
    return text


def strip_control(text: str) -> str:
    """``text`` without the characters ``_CONTROL`` matches (``_CONTROL.sub("", text)``, which a test holds it
    equal to); ASCII text, most text, through ``bytes.translate``."""
    if text.isascii():
        data = text.encode("ascii")
        stripped = data.translate(None, _ASCII_CONTROL)
        return text if len(stripped) == len(data) else stripped.decode("ascii")
    return _CONTROL.sub("", text)


def collapse_whitespace(text: str) -> str:
    """Every run of whitespace inside a line as one space, lines stripped, at most one blank line in a row,
    no blank lines at either end (``collapse_whitespace_reference`` is the definition; a test holds them
    equal). Whitespace runs never cross a line break, so the whole text is handled at once, and each step
    runs only where a fast scan finds work for it: in most text every run is one space already, and
    replacing those one by one (a match per word) was most of normalize's time (~110 -> ~25 us on 2.4 KB).
    Only the runs that change are matched (``_CHANGED_RUNS``, not every single space: ~400 matches in a
    2.4 KB text with one double space), and in ASCII text, where the only whitespace but spaces and line
    breaks is a handful of characters, substring tests replace the regex scans (~22 -> ~6 us)."""
    if text.isascii():
        if any(char in text for char in _OTHER_ASCII_SPACE):
            text = _CHANGED_RUNS.sub(" ", text)
        elif "  " in text:  # only spaces: runs of two or more
            text = _SPACE_RUNS.sub(" ", text)
    elif "  " in text or _OTHER_SPACE.search(text):
        text = _CHANGED_RUNS.sub(" ", text)
    # Runs are single spaces now: the spaces beside a line break are those of " \n" and "\n " (what
    # _LINE_EDGES removes), and removing them makes no new ones.
    if " \n" in text:
        text = text.replace(" \n", "\n")
    if "\n " in text:
        text = text.replace("\n ", "\n")
    text = text.strip(" ")
    if "\n\n\n" in text:
        text = _BLANK_LINES.sub("\n\n", text)
    return text.strip("\n")


def collapse_whitespace_reference(text: str) -> str:
    """``collapse_whitespace`` line by line, as it reads."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip("\n")


_FTFY_CONFIG = None


def _ftfy_config():
    """ftfy's config with only its encoding steps on (built once: ftfy is imported on first use)."""
    global _FTFY_CONFIG
    import ftfy

    if _FTFY_CONFIG is None:
        _FTFY_CONFIG = ftfy.TextFixerConfig(
            unescape_html=False, remove_terminal_escapes=False, fix_latin_ligatures=False, fix_character_width=False,
            uncurl_quotes=False, fix_line_breaks=False, fix_surrogates=False, remove_control_chars=False,
            normalization=None, explain=False)
    return _FTFY_CONFIG


def repair_mojibake(text: str, stable: frozenset[str] = frozenset()) -> str:
    """``text`` with mojibake undone by ftfy, line by line (so one garbled line is fixed beside good ones),
    using only ftfy's encoding steps: curly quotes, ligatures, full-width letters, HTML entities and line
    breaks are left as they are. Text without mojibake comes back unchanged (docs/quality.md measures it).
    Lines in ``stable`` are known to need no repair and are skipped."""
    if text.isascii():  # mojibake needs non-ASCII characters; most text has none (ftfy would cost ~0.5 us/char)
        return text
    import ftfy

    from corpusforge.pipeline.normalize.mojibake_screen import may_be_bad

    config = _ftfy_config()
    # What ftfy.fix_text does with this config, for less: its segments are lines too, and with every other
    # step off it runs fix_encoding on each (1.4-1.8x the speed called directly); ASCII lines need nothing,
    # and fix_encoding returns a line unchanged unless ftfy's badness regex matches it, which may_be_bad
    # decides for ~5 % of that regex's cost (mojibake_screen).
    return "\n".join(line if line.isascii() or line in stable or not may_be_bad(line)
                     else ftfy.fix_encoding(line, config) for line in text.split("\n"))


def repair_mojibake_reference(text: str, stable: frozenset[str] = frozenset()) -> str:
    """``repair_mojibake`` without the screen: every non-ASCII line not in ``stable`` through ``fix_encoding``."""
    import ftfy

    config = _ftfy_config()
    return "\n".join(line if line.isascii() or line in stable else ftfy.fix_encoding(line, config)
                     for line in text.split("\n"))


class _NormalizeFn(beam.DoFn):
    def __init__(self, config: NormalizeConfig):
        self.config = config

    def process(self, doc):
        original = doc.text  # read once: a spilled document's text comes from disk on every access
        text, repaired = normalize_and_count(original, self.config)
        if repaired:
            yield edit(STAGE, "mojibake_repaired")
        if not text.strip():
            yield removal(doc, STAGE, "empty_after_normalize")
        else:
            yield doc.with_text(text) if text != original else doc


class Normalize(Stage, section="normalize", order=10):
    """Normalise every document's text; documents left empty are removed (``empty_after_normalize``); repaired
    mojibake is counted on the edits output (``mojibake_repaired``, one per document)."""

    def __init__(self, config: NormalizeConfig | None = None, context: StageContext | None = None,
                 label: str | None = None):
        super().__init__(config or NormalizeConfig(), context, label)

    def expand(self, docs) -> StageOutputs:
        normalize = guarded(_NormalizeFn(self.config), STAGE, self.context.fail_fast)
        tagged = docs | "NormalizeText" >> beam.ParDo(normalize).with_outputs(REMOVED, EDITS, ERRORS, main="kept")
        return split_outputs(tagged, with_edits=True, with_errors=True)
