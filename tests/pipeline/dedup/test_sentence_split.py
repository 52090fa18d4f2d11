"""The sentence splitter: boundaries, abbreviations by language, CJK full stops, and exact round trips."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpusforge.pipeline.dedup.sentence_split import ABBREVIATIONS, abbreviations, split_sentences


def sentences(text, lang="en"):
    return [s for line in split_sentences(text, lang) for s in line]


def test_splits_at_terminators_followed_by_space_and_keeps_the_text():
    text = "It rained. Did it? Yes! \"Quite so.\" The end"
    assert sentences(text) == ["It rained. ", "Did it? ", "Yes! ", "\"Quite so.\" ", "The end"]
    assert "".join(sentences(text)) == text


def test_a_line_break_ends_a_sentence_and_lines_round_trip():
    text = "First line without stop\nSecond. Third.\n\nFourth"
    lines = split_sentences(text, "en")
    assert lines == [["First line without stop"], ["Second. ", "Third."], [""], ["Fourth"]]
    assert "\n".join("".join(line) for line in lines) == text


@pytest.mark.parametrize("lang,text", [
    ("en", "Mr. Smith met Dr. Jones at 5 p.m. Today."),
    ("en", "See e.g. Fig. 3 for details."),
    ("de", "Das gilt z.B. auch für Nr. 5 usw. Ende."),
    ("fr", "M. Dupont et Mme. Durand sont arrivés."),
    ("es", "La Sra. García vive en la Avda. Central."),
])
def test_abbreviations_of_the_language_do_not_end_a_sentence(lang, text):
    assert len(sentences(text, lang)) == 1 or sentences(text, lang)[-1] in ("Today.", "Ende.")


def test_language_picks_the_abbreviations():
    assert "z.b" in abbreviations("de") and "z.b" not in abbreviations("en")
    assert abbreviations("__label__de") == abbreviations("de")
    assert abbreviations(None) == abbreviations("en") == abbreviations("xx")
    assert sentences("Er kam bzw. ging. Dann nichts.", "de") == ["Er kam bzw. ging. ", "Dann nichts."]
    assert sentences("Er kam bzw. Ging. Dann nichts.", "en") == ["Er kam bzw. ", "Ging. ", "Dann nichts."]


def test_initials_lower_case_and_digits_do_not_start_a_sentence():
    assert len(sentences("J. R. R. Tolkien wrote it.")) == 1
    assert len(sentences("It cost 3. and more. 4 items followed.")) == 1


def test_cjk_full_stops_need_no_space():
    assert sentences("今天下雨了。我们在家。好吗？", "zh") == ["今天下雨了。", "我们在家。", "好吗？"]


def test_a_sentence_appended_after_a_list_introduction_is_a_sentence_of_its_own():
    notice = "This article first appeared in The Daily Example and is reprinted with permission."
    for intro in ("The options are as follows: ", "For example:: ", "Example code :: ", "Il répond : ",
                  "Rewrite it (as shown): "):
        assert sentences(intro + notice) == [intro, notice], intro
    assert sentences("We saw three things: Paris in spring. And more.") == [
        "We saw three things: ", "Paris in spring. ", "And more."]


@pytest.mark.parametrize("text", [
    "The following options are available:\n- verbose: Print more.\n- quiet: Print less.",  # a list
    "Options include: apples, pears and plums.",  # what follows is no sentence of its own
    "Note: This matters.", "Warning: Do not do this.",  # one word before the colon
    "author: John Smith\neditor: John Smith",  # key: value pairs
    "- first option: The same long explanation.\n2) second option: The same long explanation.",  # list items
    "def f(self, x: Dict[str, int], y: Optional[str] = None) -> None:\n    return {'a': True, 'b': False}",
    "    name: Type = Value\n    other: Type = Value",  # annotated fields
    "x = {\"key\": \"Value here\", 'k': Foo(1)}", "Meet at 10:30 Today or at http://Example.com here.",
    "Three colons ::: Here it stays whole.", "A line ends here:\nThis article starts a new line.",
])
def test_list_introductions_and_code_are_not_split_at_their_colons(text):
    assert split_sentences(text, "en") == [[line] for line in text.split("\n")]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", ["word" + "." * 1_000_000 + "x", "!?" * 500_000, "。" * 1_000_000 + "a",
                                  "Mr. " * 250_000, ". " * 500_000, "a\n" * 500_000, ""])
def test_hostile_punctuation_finishes_and_round_trips(text):
    # quadratic work on a million characters would not finish in the timeout; the cost per byte is measured
    # in bench/adversarial.py (step dedup_sentences)
    assert "\n".join("".join(line) for line in split_sentences(text, "en")) == text


# The fast boundary pattern against its definition: the same matches on any text made of the characters that
# matter (terminators of both kinds, closing quotes, spaces, line breaks, letters) and on the sample corpus.
_ALPHABET = ".!?…。！？:\"'”’»)]」』）  \t\n\u00a0aZ1é"


def _spans(pattern, text):
    return [m.span() for m in pattern.finditer(text)]


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=60))
def test_fast_boundary_pattern_matches_the_reference(text):
    from corpusforge.pipeline.dedup import sentence_split

    assert _spans(sentence_split._BOUNDARY, text) == _spans(sentence_split._BOUNDARY_REFERENCE, text)


def test_fast_boundary_pattern_matches_the_reference_on_the_sample_corpus(tmp_path):
    import gzip
    import json

    from corpusforge.pipeline.dedup import sentence_split
    from corpusforge.pipeline.sample import write_sample

    write_sample(tmp_path, documents=300)
    texts = []
    with gzip.open(tmp_path / "web.jsonl.gz", "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            try:  # the sample holds malformed records on purpose
                text = json.loads(line)["text"]
            except (ValueError, KeyError, TypeError):
                continue
            if isinstance(text, str):
                texts.append(text)
    assert len(texts) > 100
    for text in texts:
        assert _spans(sentence_split._BOUNDARY, text) == _spans(sentence_split._BOUNDARY_REFERENCE, text)
        for lang in ("en", "de"):
            assert split_sentences(text, lang) == sentence_split.split_sentences_reference(text, lang)


# The fast splitter (most boundaries decided inside one regex) against its definition (every candidate checked
# by ``_ends_sentence``): texts made of abbreviations of every language, initials, words just longer than any
# abbreviation, quotes that the abbreviation check strips, digits, lower and upper case, terminators and spaces.
_PIECES = sorted({w for words in ABBREVIATIONS.values() for w in words}) + [
    "J", "x", "É", "é", "Word", "word", "approxim", "abcdefg", "abcdef", "Straße", "3", "42", "\"", "'", "“", "(",
    "«", "[", ")", "”", "»", ".", "..", "!", "?", "…", "。", "！", "？", "」", " ", "  ", "\n", "\t", "\u00a0", "_",
    ":", "::", ": ", " : ", "as follows: ", "For example:: ", "This article", "Dict[str", "True,", "Über den"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40), st.sampled_from(["en", "de", "fr", "es", "nl", "zh", None]))
def test_fast_splitter_matches_the_reference(pieces, lang):
    from corpusforge.pipeline.dedup import sentence_split

    text = "".join(pieces)
    assert split_sentences(text, lang) == sentence_split.split_sentences_reference(text, lang)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=_ALPHABET + "Mr.eg" + "abcdefgh", max_size=80))
def test_fast_splitter_matches_the_reference_on_any_characters(text):
    from corpusforge.pipeline.dedup import sentence_split

    assert split_sentences(text, "en") == sentence_split.split_sentences_reference(text, "en")


# Whether a colon can end a sentence asks for two words with a letter or digit before it: one regex search
# (``_has_two_words``) against the generator per word it replaced (``colon_words_reference``), on any characters
# (underscores, which are no letter or digit but \w; Unicode digits, marks and spaces; lone surrogates), and on
# every code point alone and between two words; and in linear time on long words that the rest cannot complete.
_WORD_PIECES = ["a", "Z", "9", "_", "_a", "a_", " ", "\t", "\n", ".", ":", "é", "\u00a0", "\u3000", "\u2028", "\x1c",
                "\x85", "\ud800", "中", "٣", "²", "Ⅷ", "\u0301", "—", "’"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_WORD_PIECES), max_size=20) | st.text(max_size=20))
def test_two_words_before_a_colon_as_the_reference_counts_them(pieces):
    from corpusforge.pipeline.dedup import sentence_split

    text = "".join(pieces)
    assert sentence_split._has_two_words(text) == (sentence_split.colon_words_reference(text) >= 2)


def test_two_words_before_a_colon_on_every_code_point():
    from corpusforge.pipeline.dedup import sentence_split

    for code in range(0x110000):
        c = chr(code)
        for text in (c, "a " + c, c + " a", "a" + c + "a", "_" + c + "_"):
            assert sentence_split._has_two_words(text) == (sentence_split.colon_words_reference(text) >= 2), hex(code)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", ["a" * 1_000_000 + "." * 1_000_000, "a" * 1_000_000 + " " + "." * 1_000_000,
                                  ("a_" * 500_000 + " ") * 2, "a " + " " * 2_000_000])
def test_two_words_before_a_colon_in_linear_time(text):
    from corpusforge.pipeline.dedup import sentence_split

    assert sentence_split._has_two_words(text) == (sentence_split.colon_words_reference(text) >= 2)
    assert split_sentences(text + ": This article ends it.", "en")
