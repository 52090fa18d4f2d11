"""Text normalisation: Unicode normal form, control characters, whitespace.

Runs first, so every later stage (rules, hashing, shingling, PII patterns) sees the same canonical text.
"""
from __future__ import annotations

import re
import unicodedata

import apache_beam as beam

from corpusforge.pipeline.normalize.config import NormalizeConfig
from corpusforge.pipeline.stage import ERRORS, REMOVED, Stage, StageContext, StageOutputs, guarded, removal, split_outputs

STAGE = "normalize"

# C0/C1 controls, except tab and newline (which carry layout), plus the zero-width/BOM characters that
# split words invisibly. \r is handled separately so CRLF becomes LF, and so are the Unicode line and
# paragraph separators, which are layout: U+2028 becomes a newline, U+2029 a paragraph break (a blank line),
# instead of being deleted and gluing two sentences together.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b\u200e\u200f\ufeff]")
_SEPARATORS = str.maketrans({"\u2028": "\n", "\u2029": "\n\n"})
_SPACES = re.compile(r"[^\S\n]+")  # whitespace other than newline (tabs, NBSP, ideographic space...)
_BLANK_LINES = re.compile(r"\n{3,}")


def normalize_text(text: str, config: NormalizeConfig) -> str:
    """The canonical form of ``text`` under ``config`` (idempotent: normalising twice changes nothing, which
    a property test checks over arbitrary text).

    Control characters go before the Unicode normal form is taken: removing one between a letter and its
    combining mark (``e\\x00\\u0301``) would otherwise leave a pair that only the next pass composes."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\u2028" in text or "\u2029" in text:
        text = text.translate(_SEPARATORS)
    if config.strip_control:
        text = _CONTROL.sub("", text)
    if config.unicode_form != "none":
        text = unicodedata.normalize(config.unicode_form, text)
    if config.collapse_whitespace:
        lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
        text = _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip("\n")
    return text


class _NormalizeFn(beam.DoFn):
    def __init__(self, config: NormalizeConfig):
        self.config = config

    def process(self, doc):
        text = normalize_text(doc.text, self.config)
        if not text.strip():
            yield removal(doc, STAGE, "empty_after_normalize")
        else:
            yield doc.with_text(text) if text != doc.text else doc


class Normalize(Stage, section="normalize", order=10):
    """Normalise every document's text; documents left empty are removed (``empty_after_normalize``)."""

    def __init__(self, config: NormalizeConfig | None = None, context: StageContext | None = None,
                 label: str | None = None):
        super().__init__(config or NormalizeConfig(), context, label)

    def expand(self, docs) -> StageOutputs:
        normalize = guarded(_NormalizeFn(self.config), STAGE, self.context.fail_fast)
        return split_outputs(docs | "NormalizeText" >> beam.ParDo(normalize).with_outputs(REMOVED, ERRORS, main="kept"),
                             with_errors=True)
