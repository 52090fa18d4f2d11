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
    BlocklistConfig, C4Config, GopherConfig, JunkConfig, LengthConfig, QualityConfig, RepetitionConfig, paper_config,
)
from corpusforge.pipeline.quality.decide import NotMeasured, decide_heuristics
from corpusforge.pipeline.quality.rules import HeuristicRules
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
    ref_text, ref_reason, ref_edits = rules.apply_reference(text, lang, url)
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
