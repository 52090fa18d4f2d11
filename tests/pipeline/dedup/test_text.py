"""Normalisation for hashing, shingles and the survivor rank."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpusforge.pipeline.dedup.text import (
    WORD_SEPARATORS, ascii_word_copy, char_shingles, count_words, jaccard, joined_words, normalize_for_hash, normalized_bytes, normalized_bytes_reference, shingles,
    survivor_rank, word_shingles, words, words_reference,
)
from tests.pipeline.dedup.corpus import paragraphs


def test_words_lowercase_split_punctuation_and_zero_digits():
    assert words("Hello, World! It's 2024_v3.") == ["hello", "world", "it", "s", "0000", "v0"]
    assert words("Hello 2024", normalize_numbers=False) == ["hello", "2024"]


def test_words_handles_unicode_punctuation_digits_and_spaces():
    text = "“Naïve” café—déjà vu\u00a0٣٤ straße\u3000ΟΔΟΣ"
    assert words(text) == ["naïve", "café", "déjà", "vu", "00", "straße", "οδος"]


def test_fast_words_equal_the_reference_definition():
    rng = random.Random(0)
    alphabet = list("abcXYZ09 ,.-_\n\t'é“”—٣ßİΣσ\u00a0\u3000") + ["\u0301"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        for numbers in (True, False):
            assert words(text, numbers) == words_reference(text, numbers), repr(text)


def test_normalized_bytes_are_the_reference_bytes():
    """The bytes.find scan for non-ASCII runs gives the regular expression's bytes exactly (not only the same
    words): runs at the start, the end, next to each other, and the whole text."""
    rng = random.Random(1)
    alphabet = list("ab Z9 ,.-\n'é“”—٣ßİΣ\u00a0\u3000") + ["\u0301"]
    texts = ["é", " é ", "éa", "aé", "“a” b “c”", "a\u00a0b", "x" * 50 + "é" + "y" * 50, *paragraphs(20)]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    for text in texts:
        for numbers in (True, False):
            assert normalized_bytes(text, numbers) == normalized_bytes_reference(text, numbers), repr(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ0 .-\n’“é٣ßİΣ\u00a0\u3000\u0301")) | st.characters(blacklist_categories=("Cs",)), max_size=60),
       st.booleans())
def test_normalized_bytes_are_the_reference_bytes_on_any_text(text, numbers):
    assert normalized_bytes(text, numbers) == normalized_bytes_reference(text, numbers)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ0 .-’é\ud800\udfff\ud83d\ude00")), max_size=40), st.booleans())
def test_a_lone_surrogate_separates_words_instead_of_raising(text, numbers):
    # a build repairs lone surrogates when it reads, but the dedup transforms may be used on any str
    expected = words_reference(text, numbers)
    assert normalized_bytes(text, numbers).decode("utf-8").split() == expected
    assert normalized_bytes_reference(text, numbers).decode("utf-8").split() == expected
    assert words(text, numbers) == expected
    assert words("ab\ud800cd") == ["ab", "cd"]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab0 .-\n’é٣")), max_size=600), st.booleans())
def test_word_count_and_joined_words_are_split_and_join(text, numbers):
    """Short and long (numpy) texts, leading, trailing and repeated spaces."""
    normalized = normalized_bytes(text, numbers)
    assert count_words(normalized) == len(normalized.split())
    assert joined_words(normalized) == b" ".join(normalized.split())


def test_word_separators_split_words_as_a_space_does_and_have_no_case():
    import re

    for separator in WORD_SEPARATORS:
        assert len(separator) == 1 and not separator.isascii() and separator.lower() == separator, repr(separator)
        assert re.fullmatch(r"\W", separator), repr(separator)
        assert normalized_bytes(f"Ab{separator}Cd").split() == [b"ab", b"cd"], repr(separator)


@settings(max_examples=800, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ0 .,-\n’‘“”—–…\u00a0\u200b©€éΣİ٣") + sorted(WORD_SEPARATORS)), max_size=50),
       st.data())
def test_ascii_word_copy_has_the_words_of_every_slice(text, data):
    # the copy is what sentence_words and line_records normalise once and slice in place of a non-ASCII text
    copy = ascii_word_copy(text)
    if copy is None:
        assert not set(c for c in text if not c.isascii()) <= WORD_SEPARATORS
        return
    assert copy.isascii() and len(copy) == len(text)
    assert all(a == b or a not in "\n.!?" and b == " " for a, b in zip(text, copy))
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert normalized_bytes(copy[start:end]).split() == normalized_bytes(text[start:end]).split()


def test_ascii_word_copy_refuses_letters_and_keeps_ascii_text_itself():
    text = "Plain ASCII text."
    assert ascii_word_copy(text) is text
    assert ascii_word_copy("It’s — “quoted” …") == "It s    quoted   "
    assert ascii_word_copy("Café’s") is None and ascii_word_copy("ΟΔΟΣ") is None


def test_word_count_and_joined_words_on_documents():
    for text in ["", " ", "a", " a ", "  a  b  ", "\n".join(paragraphs(30)), " " * 300 + "x", "x" + " " * 300]:
        normalized = normalized_bytes(text)
        assert count_words(normalized) == len(normalized.split())
        assert joined_words(normalized) == b" ".join(normalized.split())


def test_long_space_free_run_is_linear_time():
    text = "a" * 2_000_000 + "é"
    assert words(text) == ["a" * 2_000_000 + "é"]


def test_normalize_for_hash_ignores_case_punctuation_and_spacing():
    assert normalize_for_hash("The  cat,\nsat.") == normalize_for_hash("the cat sat") == "the cat sat"
    assert normalized_bytes("A-b") == b"a b"


def test_word_shingles():
    assert word_shingles(["a", "b", "c", "d"], 3) == ["a b c", "b c d"]
    assert word_shingles(["a", "b"], 3) == ["a b"]  # shorter than n: the whole text is one shingle
    assert word_shingles([], 3) == []


def test_char_shingles():
    assert char_shingles("abcd", 3) == ["abc", "bcd"]
    assert char_shingles("ab", 3) == ["ab"]
    assert char_shingles("", 3) == []
    assert shingles("A B!", 2, unit="char") == ["a ", " b"]
    with pytest.raises(ValueError):
        shingles("x", 2, unit="line")


def test_jaccard():
    assert jaccard({1, 2, 3}, {2, 3, 4}) == 0.5
    assert jaccard(set(), set()) == 1.0


def test_survivor_rank_prefers_high_score_then_small_id():
    ranks = sorted([
        survivor_rank("b", {"quality_score": 0.9}, "quality_score"),
        survivor_rank("a", {"quality_score": 0.5}, "quality_score"),
        survivor_rank("c", {"quality_score": 0.9}, "quality_score"),
        survivor_rank("0", {}, "quality_score"),
        survivor_rank("1", {"quality_score": float("nan")}, "quality_score"),
        survivor_rank("2", {"quality_score": True}, "quality_score"),
    ])
    assert [r[2] for r in ranks] == ["b", "c", "a", "0", "1", "2"]
    assert survivor_rank("x", {"quality_score": 0.0}, "quality_score") == survivor_rank(
        "x", {"quality_score": -0.0}, "quality_score")


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(list("aZ9 ,.-_\n\t'’“—٣ßİΣσςﬁＡ\u00a0\u3000\u0301") + [
    "ΟΔΟΣ", "Σ.", "Привет мир", "漢字です。", "Straße", "x\ud800y", "\udfff", "  ", "K"]) | st.characters(), max_size=40),
    st.booleans())
def test_normalized_joined_is_joined_words_of_normalized_bytes_on_either_path(pieces, numbers):
    # the whole-text regular expression (taken for mostly non-ASCII text) and the per-run path give the same
    # bytes: any characters, lone surrogates, final sigma, dotted capital I, digits of other scripts
    from corpusforge.pipeline.dedup.text import _joined_by_words, normalized_joined

    text = "".join(pieces)
    expected = b" ".join(normalized_bytes(text, numbers).split())
    assert _joined_by_words(text, numbers) == expected
    assert normalized_joined(text, numbers) == expected
    assert joined_words(normalized_bytes(text, numbers)) == expected


def test_normalized_joined_takes_the_whole_text_path_on_greek_and_not_on_english():
    from unittest import mock

    from corpusforge.pipeline.dedup import text as dedup_text

    with mock.patch.object(dedup_text, "_joined_by_words", wraps=dedup_text._joined_by_words) as whole:
        assert dedup_text.normalized_joined("Καλημέρα κόσμε, ΟΔΟΣ 12.") == "καλημέρα κόσμε οδος 00".encode()
        assert whole.call_count == 1
        dedup_text.normalized_joined("An English line with one café in it, and more words around it.")
        assert whole.call_count == 1


# Characters the whole-text path of normalized_bytes must treat as words_reference does: digits of other scripts
# (Nd: Arabic-Indic, Devanagari, Tamil, full-width, mathematical) and digit-like characters that are no Nd
# (superscripts, fractions, circled), combining marks, joiners, lone surrogates and a pair written as two, final
# sigma, dotted capital I, Kelvin sign, ligatures, spaces and punctuation of other scripts, scripts without spaces.
_UNICODE_PIECES = list("aZ9 ,.-_\n\t'’“”«»—…٣٤४௫０𝟘²½①ⅫΣσςİıKﬁＡß\u00a0\u2009\u3000\u200b\u200c\u200d\u0301\u0307\u20dd"
                       "。，、！") + [
    "ΟΔΟΣ", "Σ.", "Привет мир", "漢字です。", "ภาษาไทย", "مرحبا ١٢", "Straße", "x\ud800y", "\udfff", "\ud83d\ude00",
    "👩\u200d💻", "  ", "K", "ǅ", "ᾈ"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_UNICODE_PIECES) | st.characters(blacklist_categories=()), max_size=50), st.booleans())
def test_whole_text_path_is_the_reference_bytes_on_any_unicode_text(pieces, numbers):
    from corpusforge.pipeline.dedup.text import _normalized_whole

    text = "".join(pieces)
    expected = normalized_bytes_reference(text, numbers)
    assert _normalized_whole(text.lower(), numbers) == expected  # whichever path the text would take
    assert normalized_bytes(text, numbers) == expected
    assert normalized_bytes(text, numbers).split() == [w.encode() for w in words_reference(text, numbers)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_UNICODE_PIECES), min_size=1, max_size=12), st.integers(1, 60), st.booleans())
def test_whole_text_path_on_long_mostly_non_ascii_text(pieces, times, numbers):
    # long runs of separators, marks at the ends of the text and next to ASCII punctuation
    text = "".join(pieces) * times
    assert normalized_bytes(text, numbers) == normalized_bytes_reference(text, numbers)


def test_normalized_bytes_takes_the_whole_text_path_on_mostly_non_ascii_text_only():
    from unittest import mock

    from corpusforge.pipeline.dedup import text as dedup_text

    with mock.patch.object(dedup_text, "_normalized_whole", wraps=dedup_text._normalized_whole) as whole:
        greek = "«Καλημέρα» κόσμε, ΟΔΟΣ ٣٤ 12 — τέλος…"
        assert dedup_text.normalized_bytes(greek) == "καλημέρα κόσμε  οδος 00 00  τέλος".encode()
        assert whole.call_count == 1
        english = "An English line with one “café” in it. " + "More words around it, to stay mostly ASCII. " * 6
        assert dedup_text.normalized_bytes(english) == normalized_bytes_reference(english)
        assert whole.call_count == 1
