"""The line + sentence keys of a whole batch at once (``boilerplate.keyed_lines_many``) against
``keyed_lines_by_line``, the definition: records and sentence table byte for byte, on drawn batches of hostile
texts (every kind of whitespace and separator, CJK without spaces, lone surrogates, empty lines, very long lines)."""
from __future__ import annotations

import random
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpusforge.pipeline.dedup import boilerplate
from corpusforge.pipeline.dedup.boilerplate import keyed_lines, keyed_lines_by_line, keyed_lines_many
from corpusforge.pipeline.dedup.sentence_split import sentence_spans

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


# sentence bounds of a sub-batch (boilerplate._BATCH_SENTENCES): small enough that drawn batches split into several
# sub-batches at every kind of boundary and hold texts of more sentences (keyed alone), and the tree's
BOUNDS = [1, 2, 3, 5, 8, 13, 21, 40, 100, None]
# ... and byte bounds (boilerplate._BATCH_BYTES), the same way
BYTE_BOUNDS = [1, 10, 50, 200, 1000, 20_000, None]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(PIECES), max_size=40), st.sampled_from(["en", "de", "fr", "zh", None]),
                          st.integers(0, 30)), min_size=1, max_size=40),
       st.sampled_from([(10, 20), (1, 1), (3, 2), (30, 5), (20, 20)]), st.booleans(), st.sampled_from(BOUNDS),
       st.sampled_from(BYTE_BOUNDS))
def test_keyed_lines_many_is_keyed_lines_by_line_on_drawn_batches(drawn, chars, small, bound, byte_bound):
    # small: every sub-batch of two texts or more through the batch path (_BATCH_TEXTS 2), else a small one's texts
    # one by one
    texts = [(_texts(pieces, long_line == 0), lang) for pieces, lang, long_line in drawn]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(boilerplate, "_BATCH_TEXTS", 2 if small else boilerplate._BATCH_TEXTS)
        patch.setattr(boilerplate, "_BATCH_SENTENCES", bound or boilerplate._BATCH_SENTENCES)
        patch.setattr(boilerplate, "_BATCH_BYTES", byte_bound or boilerplate._BATCH_BYTES)
        assert keyed_lines_many(texts, *chars) == [keyed_lines_by_line(text, lang, *chars) for text, lang in texts]


def test_sub_batches_hold_at_most_the_bound_of_sentences(monkeypatch):
    # texts of one-word lines of n sentences each, around the bound: a text of more goes alone through the loop, the
    # others in order into sub-batches of at most the bound (one that reaches it exactly is full), and a sub-batch of
    # fewer than _BATCH_TEXTS texts through the loop; every text keyed as the definition keys it
    bound = 12
    monkeypatch.setattr(boilerplate, "_BATCH_SENTENCES", bound)
    monkeypatch.setattr(boilerplate, "_BATCH_TEXTS", 2)
    batched = []
    keyed_together = boilerplate._keyed_ascii_texts

    def spy(copies, spans, *chars):
        batched.append([len(text_spans) for text_spans in spans])
        return keyed_together(copies, spans, *chars)

    monkeypatch.setattr(boilerplate, "_keyed_ascii_texts", spy)
    sizes = [5, 7, 13, 12, 1, 11, 6, 6, 3, 4, 5, 12, 2, 9, 400, 1, 1]
    texts = [("\n".join(["word"] * n), "en") for n in sizes]
    texts.insert(4, ("ünïcode\n" * 30, "de"))  # not ASCII-able: the definition's loop, between two sub-batches
    assert [len(sentence_spans(text, lang)) for text, lang in texts if text.isascii()] == sizes
    assert keyed_lines_many(texts, 1, 1) == [keyed_lines_by_line(text, lang, 1, 1) for text, lang in texts]
    # 13 and 400 alone (the sub-batch being filled waits: 2 + 9 + 1 after 400); 5 + 7 and 1 + 11 reach the bound;
    # each 12, and the last 1, is a sub-batch of one text (the loop's)
    assert batched == [[5, 7], [1, 11], [6, 6], [3, 4, 5], [2, 9, 1]]


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


# a text of many tiny sentences: one-word lines, stops, "a. b. c." lines
TINY_SENTENCES = ["a\n", ". ", "a. b. c.\n"]


@pytest.mark.parametrize("unit", TINY_SENTENCES)
def test_a_text_of_tiny_sentences_costs_the_batch_no_more_memory_than_the_loop(unit):
    # ~100 KB of sentences of a byte or two (~40k-50k of them) among 31 prose documents: the batch path held arrays,
    # lists and bytes objects for every sentence of the batch at once (1.4-1.55x the loop's peak before sub-batches
    # were bounded by sentences), where the loop holds one text's
    prose = "The river runs through the old town and past the mill. Every spring the water rose over the fields.\n\n"
    texts = [(f"Document {i}. " + prose * 10, "en") for i in range(31)]
    texts.insert(16, (unit * (100_000 // len(unit)), "en"))
    loop = _peak(lambda: [keyed_lines(text, lang, 10, 20) for text, lang in texts])
    batch = _peak(lambda: keyed_lines_many(texts, 10, 20))
    assert batch <= 1.1 * loop, f"keyed_lines_many's peak {batch / 1e6:.1f} MB, the loop's {loop / 1e6:.1f} MB"


def test_texts_of_few_long_sentences_cost_the_batch_a_bounded_multiple_of_the_loop():
    # 24 texts of 200 KB in a few long sentences each: the batch path holds ~14 bytes a text byte of what it keys at
    # once (the joined copy, its normalisation, the marked array), 67 MB here against the loop's ~5.4 MB before
    # sub-batches were bounded by bytes too; now at most _BATCH_BYTES (1 MiB: ~5 such texts) at once
    texts = [(("word " * 4000 + ". ") * 10, "en") for _ in range(24)]
    loop = _peak(lambda: [keyed_lines(text, lang, 10, 20) for text, lang in texts])
    batch = _peak(lambda: keyed_lines_many(texts, 10, 20))
    assert batch <= 4 * loop, f"keyed_lines_many's peak {batch / 1e6:.1f} MB, the loop's {loop / 1e6:.1f} MB"


def _peak(call) -> int:
    call()  # warm: regexes, caches
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("chars", [(0, 20), (10, 0), (0, 0), (-1, 5)])
def test_minimums_under_one_character_are_refused_by_every_path(chars):
    # with 0 the paths disagreed (the batch path keyed an empty sentence, the whole-text loop left an empty line
    # unkeyed, the definition keyed both); the config allows only >= 1
    texts = [("Hello there. \n\nYes . . ok\n", "en")] * boilerplate._BATCH_TEXTS
    for keyed in (lambda: keyed_lines_many(texts, *chars), lambda: keyed_lines_many(texts[:1], *chars),
                  lambda: keyed_lines(*texts[0], *chars), lambda: keyed_lines_by_line(*texts[0], *chars)):
        with pytest.raises(ValueError, match="at least 1 character"):
            keyed()
