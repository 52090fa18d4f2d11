"""The measure path's fast functions give exactly what their plain twins in ``reference.py`` give, on the sample corpus and on
drawn text (each fast function was written to compute the same value with less work per document)."""
from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpusforge.pipeline.quality import measure, rules
from corpusforge.pipeline.quality.config import C4Config, QualityConfig, paper_config
from corpusforge.pipeline.quality.batch_counts import count_batch
from corpusforge.pipeline.quality.text import BOILERPLATE_PHRASE_HINTS, TextView, top_ngrams
from tests.pipeline.quality import reference, reference_measures
from tests.pipeline.quality.test_decide import CONFIGS, CORPUS, LANGS, PIECES, RULES

# C4 settings that reach every branch of the check: the defaults, each line rule alone, a small word limit.
C4_CONFIGS = [C4Config(), paper_config().c4, C4Config(max_word_length=5), C4Config(max_word_length=None),
              C4Config(remove_citations=False, remove_javascript_lines=False, remove_policy_lines=False),
              C4Config(min_words_per_line=2)]
C4_PIECES = PIECES + ["[1]", " [12]", "[edit]", "x[2]", "[citation needed]", "[]", "[12345]", "javascript",
                      "JavaScript is", "Terms of Use", "uses cookies", "averyveryverylongword", "\v", "\x1c", "\f"]
_draws = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same_c4(text: str) -> None:
    for cfg in C4_CONFIGS:
        assert rules._edits_nothing(TextView(text), cfg) == reference.edits_nothing(text, cfg), (text, cfg)
        view, edits = rules.c4_edit_view(text, cfg)
        assert (view.text, edits) == rules.c4_edit(text, cfg), (text, cfg)


def test_c4_check_on_the_sample():
    for text in CORPUS:
        _same_c4(text)


@_draws
@given(text=st.lists(st.sampled_from(C4_PIECES), max_size=40).map("".join))
def test_c4_check_on_drawn_pieces(text):
    _same_c4(text)


@_draws
@given(text=st.text(max_size=300))
def test_c4_check_on_drawn_unicode(text):
    _same_c4(text)


URL_PIECES = PIECES + ["x@y", "a.b@c", "@@", "www.", "WWW.x.com", "https://", "http:/", "ftp://a.b", "h", "w.",
                       "mailto:me@x.org", "(http://a.b/c)", "<a@b.c>", "\r\n", "\x1c", "\u2029"]


def _same_urls(text: str) -> None:
    assert measure.url_tokens(TextView(text)) == reference.url_token_count(TextView(text)), text


def test_url_tokens_on_the_sample():
    for text in CORPUS:
        _same_urls(text)


@_draws
@given(text=st.lists(st.sampled_from(URL_PIECES), max_size=40).map("".join))
def test_url_tokens_on_drawn_pieces(text):
    _same_urls(text)


@_draws
@given(text=st.text(max_size=300))
def test_url_tokens_on_drawn_unicode(text):
    _same_urls(text)


def _same_values(text: str, lang: str | None) -> None:
    for cfg in (QualityConfig(), paper_config()):
        view, old = TextView(text), TextView(text)
        assert measure.measure_junk(view, lang) == reference_measures.measure_junk(old, lang), text
        assert (measure.measure_gopher(view, cfg.gopher, lang)
                == reference_measures.measure_gopher(old, cfg.gopher, lang)), text
        assert (measure.measure_repetition(view, cfg.repetition)
                == reference_measures.measure_repetition(old, cfg.repetition)), text
        assert measure.measure_c4(view) == reference_measures.measure_c4(old), text
        assert measure.measure_fineweb(view, cfg.fineweb) == reference_measures.measure_fineweb(old, cfg.fineweb), text


def test_measures_on_the_sample():
    for i, text in enumerate(CORPUS):
        _same_values(text, LANGS[i % len(LANGS)])


@_draws
@given(text=st.lists(st.sampled_from(URL_PIECES + ["- a", "• b", "end...", "x…", "Lorem", "ipsum", "the", " of ",
                                                   "#", "a b a b a b", "!\"", ")]"]), max_size=60).map("".join),
       lang=st.sampled_from(LANGS))
def test_measures_on_drawn_pieces(text, lang):
    _same_values(text, lang)


@_draws
@given(text=st.text(max_size=300), lang=st.sampled_from(LANGS))
def test_measures_on_drawn_unicode(text, lang):
    _same_values(text, lang)


@settings(max_examples=200, deadline=None)
@given(words=st.frozensets(st.sampled_from("a b c d e f g h".split())),
       counts=st.dictionaries(st.sampled_from("a b c x y z".split()), st.integers(1, 5)))
def test_words_in_is_the_intersection(words, counts):
    assert measure.words_in(words, counts) == words.intersection(counts)


def _top_ngram_reference(ws: list[str], n: int) -> tuple[int, int]:
    """The plain count: every n-gram in a Counter, the first of the most frequent (Counter.most_common's tie-break)."""
    gram, count = Counter(zip(*(ws[i:] for i in range(n)))).most_common(1)[0]
    return count, sum(map(len, gram)) + n - 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(st.lists(st.sampled_from(["a", "b", "cc", "ddd", "A", "é"]), max_size=30), max_size=12),
       ns=st.sets(st.integers(1, 6), min_size=1, max_size=4))
def test_top_ngrams_of_a_batch_are_each_lists_most_common(docs, ns):
    found = top_ngrams(docs, ns)
    for ws, grams in zip(docs, found):
        assert grams == {n: _top_ngram_reference(ws, n) for n in ns if len(ws) >= n}, (ws, ns)


def test_top_ngrams_keep_the_documents_of_a_batch_apart():
    # the same words in another list of the batch add nothing to a list's counts
    assert top_ngrams([["a", "b"], ["a", "b", "a", "b"], ["a", "b"]], [2]) == [
        {2: (1, 3)}, {2: (2, 3)}, {2: (1, 3)}]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_batch_gets_what_each_document_gets_alone(name):
    rules = RULES[name]
    langs = [LANGS[i % len(LANGS)] for i in range(len(CORPUS))]
    urls = ["https://example.com/tag/" + "x" * (i % 50) for i in range(len(CORPUS))]
    batched = [v for s in range(0, len(CORPUS), 256)
               for v in rules.apply_batch(CORPUS[s:s + 256], langs[s:s + 256], urls[s:s + 256])]
    assert batched == [rules.apply(t, lang, url) for t, lang, url in zip(CORPUS, langs, urls)]


@_draws
@given(texts=st.lists(st.lists(st.sampled_from(URL_PIECES + ["a b a b a b", "the cat the cat ", "中文字", "x y z "]),
                               max_size=40).map("".join), min_size=8, max_size=20),
       name=st.sampled_from(sorted(CONFIGS)), lang=st.sampled_from(LANGS))
def test_a_drawn_batch_gets_what_each_document_gets_alone(texts, name, lang):
    rules = RULES[name]
    n = len(texts)
    assert rules.apply_batch(texts, [lang] * n, [None] * n) == [rules.apply(t, lang) for t in texts]


@_draws
@given(texts=st.lists(st.lists(st.sampled_from(PIECES + list(BOILERPLATE_PHRASE_HINTS)
                                              + [h.upper() for h in BOILERPLATE_PHRASE_HINTS]
                                              + ["skip  to", "POLÍTICA", "polÍtica", "\u0130", "rights\nreserved", " ", "\n", "x", "中"]),
                               max_size=12).map("".join), max_size=12))
def test_hints_found_from_a_batchs_chunks_are_the_texts_hints(texts):
    views = [TextView(t) for t in texts]
    count_batch(views, [None] * len(views), QualityConfig())
    assert [v.phrase_hints for v in views] == [[h for h in BOILERPLATE_PHRASE_HINTS if h in t.lower()] for t in texts]


def test_a_batch_with_a_lone_surrogate_gets_what_each_document_gets_alone():
    rules = RULES["defaults"]
    texts = CORPUS[:12] + ["Cookies \ud800 here. " * 20, "plain words and more of them " * 10]
    n = len(texts)
    assert rules.apply_batch(texts, ["en"] * n, [None] * n) == [rules.apply(t, "en") for t in texts]
