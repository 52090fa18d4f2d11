"""The line + sentence keys of a whole batch at once (``boilerplate.keyed_lines_many``) against
``keyed_lines_by_line``, the definition: records and sentence table byte for byte, on drawn batches of hostile
texts (every kind of whitespace and separator, CJK without spaces, lone surrogates, empty lines, very long lines)."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpusforge.pipeline.dedup import boilerplate
from corpusforge.pipeline.dedup.boilerplate import keyed_lines, keyed_lines_by_line, keyed_lines_many

# what the batch path could break on: whitespace that ends a sentence (ASCII, typographic, the separators that
# ascii_word_copy makes spaces and those it refuses), terminator and colon runs, empty lines and sentences, lines of
# one sentence, \r, closers, abbreviations and initials at a text's start (the texts of a batch are joined)
PIECES = list("aZ9 .!?,;:'\")]\t\r\n\x0b\x0c\x1c\x1f_-|") + [
    "", "\n\n", "\n \n", "   ", "Mr", "Dr", "e.g", "J", "U.S", "word", "’", "“", "—", "\u00a0", "\u2009", "\u202f",
    "\u3000", "\u2028", "\x85", "\ufeff", "…", "é", "Σ", "ΟΔΟΣ", "İ", "ß", "ǅ", "𝐀", "😀", "e\u0301", "漢字です。",
    "中文没有空格的句子！", "。", "」", "ไทย", "\ud800", "x\udc80. ", "A long enough sentence", " Yes. ", "\n. ",
    ". Then", "as follows: This article", "- item: Value here", "This article first appeared here. ", "x" * 25,
    "Home | News | Sport", "١٢٣", "Ünïcode wörds. "]


def _texts(draw_pieces, long_line: bool) -> str:
    text = "".join(draw_pieces)
    return text + "\n" + "word " * 3000 + ". Next one. " + "y" * 5000 if long_line else text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(PIECES), max_size=40), st.sampled_from(["en", "de", "fr", "zh", None]),
                          st.integers(0, 30)), min_size=1, max_size=40),
       st.sampled_from([(10, 20), (1, 1), (3, 2), (30, 5), (20, 20)]), st.booleans())
def test_keyed_lines_many_is_keyed_lines_by_line_on_drawn_batches(drawn, chars, small):
    # small: every batch through the batch path (_BATCH_TEXTS 1), else a small batch's texts one by one
    texts = [(_texts(pieces, long_line == 0), lang) for pieces, lang, long_line in drawn]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(boilerplate, "_BATCH_TEXTS", 1 if small else boilerplate._BATCH_TEXTS)
        assert keyed_lines_many(texts, *chars) == [keyed_lines_by_line(text, lang, *chars) for text, lang in texts]


@pytest.mark.parametrize("seed", range(3))
def test_keyed_lines_many_on_random_documents(seed):
    # web-like documents: real prose, boilerplate lines and sentences, empty lines, a few non-ASCII lines
    from tests.pipeline.dedup.test_boilerplate import corpus

    rng = random.Random(seed)
    docs = corpus(200, seed)
    texts = [(doc.text, doc.annotations.get("lang")) for doc in docs]
    rng.shuffle(texts)
    assert len(texts) >= boilerplate._BATCH_TEXTS
    for chars in ((10, 20), (1, 1)):
        assert keyed_lines_many(texts, *chars) == [keyed_lines(text, lang, *chars) for text, lang in texts] == \
            [keyed_lines_by_line(text, lang, *chars) for text, lang in texts]


def test_every_text_of_a_batch_joined_or_not_keeps_its_own_start():
    # a text that starts with a full stop after spaces: whether it ends a sentence reads the word before it, which
    # is no other text's (a batch's texts are joined for one regex); an initial or abbreviation ends the text before
    texts = [("Dr", "en"), ("  . Next sentence here. And more", "en"), ("J", "en"), (". Then we go on. Yes", None)]
    texts = texts * boilerplate._BATCH_TEXTS
    assert keyed_lines_many(texts, 1, 1) == [keyed_lines_by_line(text, lang, 1, 1) for text, lang in texts]
