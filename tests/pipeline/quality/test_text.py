"""The tokenizer's fast paths split every chunk as the frozen reference does (reference_tokenizer.py)."""
from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpusforge.pipeline.quality import text
from corpusforge.pipeline.sample import generate, texts
from tests.pipeline.quality import reference_tokenizer as reference

# Pieces that reach each special case and each prefix / suffix / infix rule, glued in random orders.
PIECES = ["a", "Word", "the", "x", "3", "42", "3.5", ".", "..", "...", "…", ",", ";", ":", "!", "?", "'", "’", "\"", "“",
          "”", "(", ")", "[", "]", "{", "}", "<", ">", "_", "*", "#", "&", "-", "--", "—", "–", "~", "/", "=", "+", "^",
          "$", "€", "£", "°", "°C", "%", "km", "km/h", "mbar", "'s", "’S", "n't", "'re", "'ll", "Don", "don't", "can't",
          "won’t", "cannot", "Dont", "DONT", "id", "Im", "shouldnt", "e.g.", "i.e.", "Mr.", "U.S.", "vs.", "etc.",
          "A.", "AB.", ":)", ":-(", "<3", "xD", "^_^", "http://", "https://a.b/c?d=e", "www.", "example", ".com",
          "a@b.co", "@", "ß", "é", "İ", "Я", "я", "ω", "½", "²", "\u0301", "@me", "os.path", "f(x)", "a[1]"]


def _same(t: str) -> None:
    assert text.words(t) == reference.words(t), t


def _sample_chunks() -> list[str]:
    rng = random.Random(0)
    docs = generate._paragraphs()[:1500] + texts.junk_pages(rng) + [t for _, t in texts.FOREIGN] + texts.BOILERPLATE
    return sorted({chunk for doc in docs for chunk in doc.split()})


def test_every_sample_chunk_splits_as_the_reference():
    chunks = _sample_chunks()
    assert len(chunks) > 1000
    for chunk in chunks:
        text._CHUNK_CACHE.pop(chunk, None)  # split now, not remembered from an earlier test
        _same(chunk)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunk=st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map("".join))
def test_glued_pieces_split_as_the_reference(chunk):
    text._CHUNK_CACHE.pop(chunk, None)
    _same(chunk)


# Code's shapes the peel path takes: snake_case cores and reStructuredText roles, with words that end in a number and
# a unit or an underscore, and the suffixes a sentence puts after them.
_CODE_WORDS = st.lists(st.sampled_from(["a", "Word", "x", "3", "42", "km", "m", "_", "é", "Я", "o", "O", "½", "²"]),
                       min_size=1, max_size=6).map("".join)
_CODE_SUFFIXES = st.lists(st.sampled_from(["", ".", "..", "…", ",", ")", "`", "'", "_", ":", "’", "*", ">"]),
                          max_size=3).map("".join)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=st.sampled_from(["", "(", "``", "*", "_", "'", ":class:`", ":c:func:`", ":py:x:`~", ":mod:`!", ":", ":x:`", ":p:`"]),
       word=_CODE_WORDS, tail=_CODE_SUFFIXES)
def test_code_shapes_split_as_the_reference(head, word, tail):
    chunk = head + word + ("`" if head.startswith(":") else "") + tail
    text._CHUNK_CACHE.pop(chunk, None)
    _same(chunk)


def test_code_shapes_hand_picked():
    assert text.words(":class:`Pool`,") == [":", "class:`Pool", "`", ","]
    assert text.words(":c:func:`~Py_Foo`.") == [":", "c", ":", "func:`~Py_Foo", "`", "."]
    assert text.words("``PY_MINOR_VERSION``.") == ["`", "`", "PY_MINOR_VERSION", "`", "`", "."]
    assert text.words("x_10km") == reference.words("x_10km") == ["x_10", "km"]  # a unit after a number: peeled


# The general shape the peel path takes (prefix characters, a core from a letter or digit to a letter or digit,
# suffix characters) and everything that must send a chunk of that shape to the general loop: special cases
# (contractions, abbreviations, emoticons, bare contractions), "'s" after a core, URLs and e-mail addresses,
# units after numbers, "+" "." "°" and currency signs beside digits, "." after letters the suffix rule skips.
_PEEL_HEADS = st.lists(st.sampled_from(list(text._PEEL_PREFIX_CHARS) + ["+", ".", "..", "°", "©", "—", "-", "@", "~", "/"]),
                       max_size=3).map("".join)
_PEEL_TAILS = st.lists(st.sampled_from(list(text._PEEL_SUFFIX_CHARS) + ["..", "...", "+", "°", "©", "—", "'s", "’S", "%",
                                                                      "$", "/"]), max_size=3).map("".join)
_PEEL_CORES = st.lists(st.sampled_from([
    "a", "Z", "x", "o", "O", "D", "P", "s", "S", "t", "n", "d", "m", "re", "ll", "e", "g", "i", "U", "km", "m", "5", "42",
    "0", "3", "8", "é", "Я", "я", "ω", "Ω", "ǅ", "İ", "ı", "ſ", "\u212a", "½", "²", "\u0301", "_", ".", "..", "-", "--",
    "(", ")", "=", ":", "/", "'", "’", "`", "~", "@", ",", "<", ">", "+", "*", "^", "…", "$", "%", "°", "°C", "com",
    "io", "www", "http", "://", "Mr", "dont", "cannot", "can", "won", "e.g", "U.S", "and/or", "w/o", "os", "path",
    "join", "Py_Foo", "class", "n't", "'re", "’d", "'M", "'s",
]), min_size=1, max_size=6).map("".join)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(head=_PEEL_HEADS, core=_PEEL_CORES, tail=_PEEL_TAILS)
def test_peeled_shapes_split_as_the_reference(head, core, tail):
    chunk = head + core + tail
    text._CHUNK_CACHE.pop(chunk, None)
    _same(chunk)


def test_peel_path_hand_picked():
    """The shapes the peel path takes, and those it must leave to the general loop (each of which it would split
    otherwise, so a missing check fails here)."""
    for chunk in ["os.path.join(),", "f(x,", "_foo-bar:", ":c:func:`~a.b`.", "``'a'``,", "x='a',", "<a-b>`", "__init__"]:
        assert text._peel_split(chunk, out := []) and out == reference.words(chunk), chunk
    for chunk in ["('s)", "(it's)", "(xD)", "(D:", "(e.g.", "(U.S.", "www.x)", "(a.com)", "(a@b.c)", "(5km)", "(A.)",
                  "(Mr.)", "(dont)", "(and/or)", "(http://a)", "(Ω.)", "x.CoM,", "(cannot)"]:
        assert not text._peel_split(chunk, []), chunk
        _same(chunk)


@settings(max_examples=1000, deadline=None)
@given(s=st.lists(st.sampled_from(list("aZé5_.…+-*^,–—~:<>=/'\"”’“‘ ²") + ["---", "--", "——", "..."]), max_size=14).map("".join))
def test_fast_infix_regex_finds_the_infixes(s):
    assert [m.span() for m in text._INFIX_FAST_RE.finditer(s)] == [m.span() for m in text._INFIX_RE.finditer(s)]


@settings(max_examples=1000, deadline=None)
@given(s=st.lists(st.sampled_from(list("wWcCoOmMıİſsSeEdDiItTfFgGnNuU.:/@_-a5\u212a") + ["www.", ".com", ".io", "://"]),
                  max_size=12).map("".join))
def test_url_hint_precedes_every_url_block(s):
    assert not text._PEEL_BLOCK_RE.search(s) or text._PEEL_BLOCK_HINT(s)


@settings(max_examples=500, deadline=None)
@given(chunk=st.text(min_size=1, max_size=30))
def test_random_unicode_splits_as_the_reference(chunk):
    text._CHUNK_CACHE.clear()
    _same(chunk)


def test_hand_picked_splits():
    assert text.words("(see os.path.join(), e.g. here...)") == ["(", "see", "os.path.join", "(", ")", ",", "e.g.", "here",
                                                             "...", ")"]
    assert text.words("It costs 5km/h... Don't! U.S. 3.5%") == ["It", "costs", "5", "km/h", "...", "Do", "n't", "!",
                                                                "U.S.", "3.5", "%"]
    # a URL keeps what follows it up to the next space, as spaCy's URL match does
    assert text.words("well-known: http://a.b/c, cannot") == ["well", "-", "known", ":", "http://a.b/c,", "can", "not"]


@settings(max_examples=500, deadline=None)
@given(ws=st.lists(st.sampled_from(["a", "b", "c", "the", "dd", "é"]), max_size=80), max_n=st.integers(1, 8))
def test_repeated_ngrams_give_the_counts_of_every_ngram(ws, max_n):
    """The top n-gram and the greedy duplicated characters, from repeated positions only, equal those from all
    n-grams (Counter over every n-gram; duplicated_ngram_chars' full scan)."""
    from collections import Counter

    repeats = text.repeated_ngrams(ws, set(range(1, max_n + 1)))
    for n in range(1, max_n + 1):
        grams = list(zip(*(ws[i:] for i in range(n))))
        positions, repeated, _ = repeats[n]
        assert repeated == [g for g in grams if grams.count(g) > 1]
        if grams:
            assert text.most_common_ngram(ws, n, *repeats[n]) == Counter(grams).most_common(1)[0]
            assert text.most_common_ngram(ws, n, positions, repeated) == Counter(grams).most_common(1)[0]
        assert text.greedy_duplicated_chars(n, positions, repeated) == text.duplicated_ngram_chars(ws, n)
    assert text.count_duplicates(ws) == text.find_duplicates(ws)


def test_repeated_ngrams_hand_picked():
    ws = "a b a b a b c".split()
    positions, grams, _ = text.repeated_ngrams(ws, {2})[2]
    assert positions == [0, 1, 2, 3, 4] and grams == [("a", "b"), ("b", "a"), ("a", "b"), ("b", "a"), ("a", "b")]
    assert text.most_common_ngram(ws, 2, positions, grams) == (("a", "b"), 3)
    # the scan: a b (new), b a (new), a b (repeat: +2, skip to 4), a b (repeat: +2, skip to 6)
    assert text.greedy_duplicated_chars(2, positions, grams) == 4
    assert text.most_common_ngram(["x", "y", "z"], 2, [], []) == (("x", "y"), 1)  # no repeat: the first n-gram


def _check_view(t: str) -> None:
    """Each view and count of TextView against its definition over the reference tokenizer's tokens."""
    view = text.TextView(t)
    line_words = [reference.words(line) for line in t.splitlines()]
    tokens = [w for line in line_words for w in line]
    content = [w for w in tokens if text.is_word(w)]
    assert (view.words, view.content_words, view.line_words) == (tokens, content, line_words), t
    assert view.lower_words == [w.lower() for w in content], t
    assert view.n_tokens == len(tokens), t
    assert view.n_letter_words == sum(1 for w in tokens if any(c.isalpha() for c in w)), t
    assert view.n_sentences == sum(text.count_sentences(line) for line in line_words), t


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=st.lists(st.sampled_from(PIECES + [" ", " ", "\n", "\n\n", "!", "?", "。", "\u2028", "\r\n", "x. Y"]),
                  max_size=40).map("".join))
def test_view_counts_equal_their_definitions(t):
    _check_view(t)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=st.lists(st.tuples(_PEEL_HEADS, _PEEL_CORES, _PEEL_TAILS, st.sampled_from([" ", "\n", "\n\n", ". ", "! "])),
                  max_size=12).map(lambda parts: "".join("".join(p) for p in parts)))
def test_view_counts_of_code_equal_their_definitions(t):
    text._CHUNK_CACHE.clear()
    _check_view(t)


def test_view_counts_on_the_sample():
    rng = random.Random(0)
    docs = generate._paragraphs()[:300] + texts.junk_pages(rng) + [t for _, t in texts.FOREIGN] + texts.BOILERPLATE
    for doc in docs:
        _check_view(doc)
    view = text.TextView("One. Two! three\n. Four ... five\n\nSix?")
    # line 1: One, then a word after "." and after "!" (3); line 2: ". Four": the line's first, then "Four" after
    # "." ("..." is no sentence end) (2); the empty line: none; "Six?" (1)
    assert view.n_sentences == 3 + 2 + 1
    assert view.n_tokens == 11 and view.n_letter_words == 6


@settings(max_examples=500, deadline=None)
@given(t=st.lists(st.sampled_from(["a", "bc", " ", "\n", "\n\n", "\n\n\n", "\t", "\r", "\u2028"]), max_size=30).map("".join))
def test_line_and_paragraph_splits_equal_the_regex_splits(t):
    assert text.split_line_runs(t) == text.LINES_RE.split(t)
    assert text.split_paragraphs(t.strip()) == text.PARAGRAPH_RE.split(t.strip())
