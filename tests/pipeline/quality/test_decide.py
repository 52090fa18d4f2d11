"""measure -> decide gives every document the reason of the reference rules (rules.py), and decides from stored
values alone."""
from __future__ import annotations

import dataclasses
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpusforge.pipeline.quality.config import (
    BlocklistConfig, C4Config, GopherConfig, JunkConfig, LengthConfig, QualityConfig, RepetitionConfig,
    paper_config,
)
from corpusforge.pipeline.quality.decide import NotMeasured, decide_heuristics
from corpusforge.pipeline.quality.rules import HeuristicRules
from tests.pipeline.quality.reference import reference_chain
from corpusforge.pipeline.sample import generate, texts

LANGS = [None, "en", "de", "zh", "xx", "eng_Latn"]


def _configs() -> dict[str, QualityConfig]:
    return {
        "defaults": QualityConfig(),
        "paper": paper_config(),
        "limits": QualityConfig(
            length=LengthConfig(min_chars=40, max_chars=3000, min_words=8, max_words=400),
            blocklist=BlocklistConfig(patterns=[r"\bpython\b"], url_patterns=["/tag/"], max_url_length=40),
            c4=C4Config(min_sentences=3, drop_curly_bracket=True, min_words_per_line=2),
            gopher=GopherConfig(stop_words_per_language=True, stop_words={"xx": ["zz"]}),
        ),
        "lazy": QualityConfig(store_values=False),
    }


CONFIGS = _configs()
RULES = {name: HeuristicRules(cfg) for name, cfg in CONFIGS.items()}


def _sample_corpus() -> list[str]:
    rng = random.Random(0)
    paragraphs = generate._paragraphs()
    docs = ["\n\n".join(paragraphs[i:i + rng.choice([1, 2, 3, 5])]) for i in range(0, min(len(paragraphs), 1500), 3)]
    docs += texts.junk_pages(rng) + [text for _, text in texts.FOREIGN] + texts.BOILERPLATE
    docs += ["", " ", "\n\n", "#", "lorem ipsum", "a b c d e f g h", "word " * 300, "{x}. Done. Ok. Yes.",
             "Ã©tÃ© â€™ bad", "- a\n- b\n- c\n- d\n", "end...\nmore...\nand…\nfin...", "x[1] and France.[2] [edit]"]
    return docs


CORPUS = _sample_corpus()


def _same(rules: HeuristicRules, text: str, lang: str | None, url: str | None = None):
    verdict = rules.apply(text, lang, url)
    ref_text, ref_reason, ref_edits = reference_chain(rules, text, lang, url)
    assert (verdict.text, verdict.reason, verdict.edits) == (ref_text, ref_reason, ref_edits), text[:200]
    if rules.cfg.store_values:  # the stored values alone give the same reason, through JSON and back
        values = json.loads(json.dumps(verdict.values))
        assert decide_heuristics(values, rules.cfg) == ref_reason, text[:200]
    return verdict


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_sample_document_gets_the_reference_reason(name):
    rules = RULES[name]
    reasons = set()
    for i, text in enumerate(CORPUS):
        lang = LANGS[i % len(LANGS)]
        url = "https://example.com/tag/" + "x" * (i % 50)
        reasons.add(_same(rules, text, lang, url).reason)
    assert len(reasons) >= 5, reasons  # the sample reaches several rules, not only "kept"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.lists(st.sampled_from(list("ab xyz.,!?#-•…\n\n{}[]1@éÃ©") + ["the ", "and ", "...", "www.a.com ",
                                                                            "Lorem ipsum ", "buy "]),
                     max_size=200).map("".join),
       name=st.sampled_from(sorted(CONFIGS)), lang=st.sampled_from(LANGS))
def test_random_text_gets_the_reference_reason(text, name, lang):
    _same(RULES[name], text, lang)


# Pieces of what the fast patterns (boilerplate lines, sentence starts, URLs) must agree with the reference on.
PIECES = ["Home", "home |", "Back to top", " 12 comments", "Menu » ", "a | b | c", "·", "Read more", "\r", "\u2028",
          "Cookie Policy", "COOKIES", "cooKieſ", "we use cookies", "© 2024", "Copyright 1999", "Política de privacidad",
          "Mr. Smith", "e.g. this", "etc. and", "z.B. so", "Dr. who", ". the", "! «Yes", "? (no", "...", "x. y",
          "http://a.b", "www.x.org", "@me.com", "a@b.c", "hi", "word", " ", "\n", "\t", "Share this page", "İ", "ı", "K", "ſ", "Ä", "Ã©", "â€™", "\ufffd", "\x85", "²", "_x_", "3½",
          "This website uses cookies to improve your visit ", "please ACCEPT ALL COOKIES now and later ",
          "all of it, all rights reserved by the company ", "see the Política de privacidad y los datos aquí ",
          "our long privacy policy text is here for you ", "so the cat sat on the mat and then "]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.lists(st.sampled_from(PIECES), max_size=40).map("".join), lang=st.sampled_from(LANGS))
def test_random_boilerplate_and_sentences_get_the_reference_reason(text, lang):
    rules = RULES["defaults"]
    _same(rules, text, lang)
    from corpusforge.pipeline.quality.measure import measure_junk
    from tests.pipeline.quality.reference import junk_rule
    from corpusforge.pipeline.quality.text import TextView

    values = measure_junk(TextView(text), lang)  # every junk value, not only the first failing one
    for key, limit in (("boilerplate_fraction", "max_boilerplate_fraction"), ("url_fraction", "max_url_fraction"),
                       ("lowercase_start_fraction", "max_lowercase_sentence_starts"),
                       ("non_letter_fraction", "max_non_letter_fraction"), ("mojibake_fraction", "max_mojibake_fraction")):
        if values[key] is None or values[key] == 0:
            continue
        only = JunkConfig(max_mojibake_fraction=None, max_non_letter_fraction=None, drop_lorem_ipsum=False,
                          max_boilerplate_fraction=None, max_top_word_fraction=None, max_url_fraction=None,
                          max_lowercase_sentence_starts=None)
        just_below = dataclasses.replace(only, **{limit: max(0.0, values[key] - 1e-9)})
        at = dataclasses.replace(only, **{limit: min(1.0, values[key])})
        assert junk_rule(text, at, lang) is None  # the reference agrees on the value: not above it ...
        if values[key] - 1e-9 > 0 and (key != "lowercase_start_fraction" or values["sentence_starts"] >= 3):
            assert junk_rule(text, just_below, lang) is not None  # ... and above anything just below it


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=300), lang=st.sampled_from(LANGS))
def test_random_unicode_gets_the_reference_reason(text, lang):
    _same(RULES["defaults"], text, lang)


def test_store_values_measures_every_family_even_after_a_failing_one():
    verdict = RULES["defaults"].apply("Buy now. " * 3, "en")
    assert verdict.reason == "gopher_few_stop_words"
    assert all(verdict.values[f] is not None for f in ("length", "junk", "gopher", "repetition", "c4", "fineweb"))
    lazy = RULES["lazy"].apply("Buy now. " * 3, "en")
    assert lazy.reason == "gopher_few_stop_words"
    assert lazy.values["gopher"] is not None and lazy.values["repetition"] is None and lazy.values["fineweb"] is None


def test_every_family_stores_the_fields_its_type_declares():
    from corpusforge.pipeline.quality.measure import value_types

    cfg = CONFIGS["limits"]
    verdict = RULES["limits"].apply("Some prose here. And more of it.\n\nA second paragraph, too.", "en",
                                    "https://example.com/tag/a")
    types = value_types(cfg.repetition)
    assert list(verdict.values) == list(types)
    for family, values in verdict.values.items():
        assert list(values) == list(types[family]), family
        for name, value in values.items():
            assert value is None or type(value) is types[family][name], (family, name, value)


def test_decide_from_values_follows_a_new_threshold():
    cfg = QualityConfig()
    text = "The cat sat on the mat and it was happy there."
    verdict = HeuristicRules(cfg).apply(text, "en")
    assert verdict.reason is None and verdict.values["gopher"]["n_words"] == 11
    stricter = dataclasses.replace(cfg, gopher=dataclasses.replace(cfg.gopher, min_words=12))
    assert decide_heuristics(verdict.values, stricter) == "gopher_short_doc"


def test_a_value_that_was_not_measured_is_refused():
    verdict = HeuristicRules(QualityConfig()).apply("Some words here, and the rest of them.", "en")
    assert verdict.values["length"]["n_words"] is None  # no word limit: not tokenized twice
    with pytest.raises(NotMeasured, match="length.n_words"):
        decide_heuristics(verdict.values, QualityConfig(length=LengthConfig(min_words=3)))
    with pytest.raises(NotMeasured, match="junk"):
        decide_heuristics({**verdict.values, "junk": None}, QualityConfig())


def test_only_four_characters_match_an_ascii_letter_under_ignorecase():
    """The boilerplate pre-check compares in lower case, exact except for CASE_FOLDS_TO_ASCII."""
    import re
    import string

    from corpusforge.pipeline.quality.text import CASE_FOLDS_TO_ASCII

    letters = re.compile(f"[{string.ascii_lowercase}]", re.IGNORECASE)
    found = {chr(cp) for cp in range(0x80, 0x30000) if letters.fullmatch(chr(cp))}
    assert found == CASE_FOLDS_TO_ASCII


def test_hand_counted_values():
    """Values counted by hand for one document (not only the two paths agreeing with each other)."""
    text = "The cat sat on the mat. The cat sat on the mat.\n\nThe dog ran."  # 61 characters, 18 tokens, 15 words
    paper_dup = paper_config().repetition.dup_ngram_char_frac  # off by default, so not measured by default
    v = HeuristicRules(QualityConfig(repetition=RepetitionConfig(dup_ngram_char_frac=paper_dup))).apply(text, "en").values
    assert (v["gopher"]["n_tokens"], v["gopher"]["n_words"], v["gopher"]["n_lines"]) == (18, 15, 3)
    assert v["gopher"]["mean_word_length"] == 43 / 15 and v["gopher"]["alpha_words_fraction"] == 1.0
    assert (v["gopher"]["n_stop_words"], v["gopher"]["stop_word_fraction"]) == (2, 7 / 15)  # the x5, on x2
    rep = v["repetition"]
    assert (rep["dup_para_frac"], rep["dup_line_frac"], rep["n_content_words"]) == (0.0, 0.0, 15)
    # "The cat" x2 (first of the pairs seen twice), "The cat sat" x2, "The cat sat on" x2
    assert (rep["top_2gram_count"], rep["top_2gram_char_frac"]) == (2, 7 * 2 / 61)
    assert (rep["top_3gram_char_frac"], rep["top_4gram_char_frac"]) == (11 * 2 / 61, 14 * 2 / 61)
    # the greedy scan meets the 2nd "The cat sat on the (mat The)" at word 6: 14, 17, 20 characters for n = 5, 6, 7
    assert [rep[f"dup_{n}gram_char_frac"] for n in range(5, 11)] == [14 / 61, 17 / 61, 20 / 61, 0.0, 0.0, 0.0]
    assert v["c4"]["n_sentences"] == 3
    assert v["fineweb"] == {"n_lines": 2, "line_punct_ratio": 1.0, "short_line_ratio": 0.5, "char_dup_ratio": 0.0,
                            "newline_word_ratio": 2 / 18}
    junk = v["junk"]
    assert (junk["sentence_starts"], junk["lowercase_start_fraction"], junk["top_word_count"]) == (2, 0.0, 2)
    assert junk["non_letter_fraction"] == 1.0 - 43 / 46  # 46 non-space characters, 3 of them full stops


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(PIECES + ["Ä", "Ø\x81", "Â°", "\xa0", "\u3000", "ж", "٣", "x"]), max_size=30).map("".join)
       | st.text(max_size=200))
def test_junk_character_counts_equal_their_regex_definitions(text):
    from corpusforge.pipeline.quality.measure import measure_junk
    from corpusforge.pipeline.quality.text import LETTER_RE, MOJIBAKE_RE, SPACE_RE, TextView

    values = measure_junk(TextView(text))
    if values["empty"]:
        return
    non_space = len(text) - SPACE_RE.subn("", text)[1]
    letters = LETTER_RE.subn("", text)[1]
    assert values["non_letter_fraction"] == (1.0 - letters / non_space if non_space else 0.0)
    assert values["mojibake_fraction"] == sum(len(m) for m in MOJIBAKE_RE.findall(text)) / len(text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.lists(st.sampled_from(PIECES + ["\n", "\n", "a b c d e", "| x | y |", "» a » b", "previous ·", "5 comments"]),
                     max_size=40).map("".join))
def test_boilerplate_lines_are_those_the_regex_finds_something_in(text):
    from corpusforge.pipeline.quality.measure import boilerplate_chars
    from corpusforge.pipeline.quality.text import BOILERPLATE_RE, TextView

    view = TextView(text)
    assert boilerplate_chars(view) == sum(len(line) + 1 for line in view.splitlines if BOILERPLATE_RE.search(line))


def test_boilerplate_phrase_width_is_the_longest_match():
    """has_phrase searches a window of BOILERPLATE_PHRASE_WIDTH characters either side of a hint: no match may be
    longer."""
    import re
    import re._parser  # the parsed pattern's widths: what sre itself allocates by

    from corpusforge.pipeline.quality.text import BOILERPLATE_PHRASE_WIDTH, BOILERPLATE_PHRASES

    assert re._parser.parse(BOILERPLATE_PHRASES, re.IGNORECASE).getwidth()[1] == BOILERPLATE_PHRASE_WIDTH


# A match of each of BOILERPLATE_PHRASES' alternatives, and near misses.
PHRASES = ["accept all cookies", "use of cookies", "Cookie Settings", "cookies consent", "privacy notice",
           "All rights reserved", "subscribe to our newsletter", "sign up for the NEWSLETTER", "enable javascript",
           "JavaScript is disabled", "javascript required", "your browser does not support", "skip to main content",
           "Follow us on", "share on twitter", "Datenschutzerklärung", "datenschutz", "Impressum", "cookies akzeptieren",
           "wir verwenden Cookies", "nous utilisons des cookies", "politique de confidentialité", "mentions légales",
           "accepter les cookies", "utilizamos cookies", "aviso legal", "aceptar las cookies", "política de cookies",
           "this site uses cookie", "our website use cookies", "terms and conditions", "share this",
           "your browser does", "follow us", "skip to", "rights reserved", "copyright 12"]


def test_the_phrases_by_hint_are_the_phrases_alternatives_each_once():
    from corpusforge.pipeline.quality.text import (
        BOILERPLATE_PHRASE_HINTS, BOILERPLATE_PHRASES, BOILERPLATE_PHRASES_BY_HINT, phrase_alternatives,
    )

    alternatives = phrase_alternatives(BOILERPLATE_PHRASES)
    assert "|".join(alternatives) == BOILERPLATE_PHRASES and len(alternatives) > 20
    grouped = [a for pattern in BOILERPLATE_PHRASES_BY_HINT.values() for a in phrase_alternatives(pattern.pattern)]
    assert sorted(grouped) == sorted(alternatives)
    assert set(BOILERPLATE_PHRASES_BY_HINT) <= set(BOILERPLATE_PHRASE_HINTS)


@pytest.mark.parametrize("hint", ["cookie", "privacy", "terms", "rights reserved", "©", "copyright", "newsletter",
                                  "javascript", "browser", "skip to", "follow us", "share", "datenschutz", "impressum",
                                  "confidentialit", "mentions", "política", "aviso legal"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_match_of_a_hints_phrases_holds_the_hint(hint, data):
    """What has_phrase relies on: a line's matches of the hint's alternatives lie around a place the hint is in its lower
    case (drawn matches of each alternative, case varied; CASE_FOLDS_TO_ASCII texts take the whole-line path)."""
    import re

    from corpusforge.pipeline.quality.text import BOILERPLATE_PHRASES_BY_HINT, CASE_FOLDS_TO_ASCII, phrase_alternatives

    for alternative in phrase_alternatives(BOILERPLATE_PHRASES_BY_HINT[hint].pattern):
        match = data.draw(st.from_regex(re.compile(alternative, re.IGNORECASE), fullmatch=True))
        if CASE_FOLDS_TO_ASCII.isdisjoint(match):
            assert hint in match.lower(), (alternative, match)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(["we use cookies", "This Website Uses Cookies", "cookie", "xcookies",
                                        "privacy policy", "privacyx", "terms of use", "terms", "share this page",
                                        "© 2024", "copyright 1999", "Política de privacidad", "skip to content",
                                        "a", "b ", " ", "_", "9", "é", "word ", "x" * 30, "y" * 29] + PHRASES),
                         max_size=30))
def test_phrase_search_in_windows_is_the_whole_line_search(pieces):
    from corpusforge.pipeline.quality.measure import has_phrase
    from corpusforge.pipeline.quality.text import BOILERPLATE_PHRASE_HINTS, BOILERPLATE_PHRASES_RE

    line = "".join(pieces)
    hints = [h for h in BOILERPLATE_PHRASE_HINTS if h in line.lower()]
    assert has_phrase(line, line.lower(), hints) == (BOILERPLATE_PHRASES_RE.search(line) is not None), line


@pytest.mark.parametrize("text", ["caf\u00e9 \ud800 lone surrogate", "\udcff\u00c3\u00a9 x", "ab\ud83d\ude00c \u2028 d"])
def test_junk_character_counts_of_text_with_surrogates(text):
    """The non-ASCII characters are read from the text's UTF-8 (surrogates passed through): a lone surrogate, which
    strict UTF-8 refuses, is counted as the regex definitions count it."""
    from corpusforge.pipeline.quality.measure import measure_junk
    from corpusforge.pipeline.quality.text import LETTER_RE, MOJIBAKE_RE, SPACE_RE, TextView

    values = measure_junk(TextView(text))
    non_space = len(text) - SPACE_RE.subn("", text)[1]
    assert values["non_letter_fraction"] == 1.0 - LETTER_RE.subn("", text)[1] / non_space
    assert values["mojibake_fraction"] == sum(len(m) for m in MOJIBAKE_RE.findall(text)) / len(text)


def test_lower_case_keeps_positions_where_the_phrase_search_runs():
    """has_phrase finds hints in ``line.lower()`` and searches ``line`` at the same positions: only U+0130 changes
    length in lower case, and a text holding it takes the whole-line path (CASE_FOLDS_TO_ASCII)."""
    from corpusforge.pipeline.quality.text import CASE_FOLDS_TO_ASCII

    longer = {chr(cp) for cp in range(0x110000) if len(chr(cp).lower()) != 1}
    assert longer == {"\u0130"} and longer <= CASE_FOLDS_TO_ASCII
