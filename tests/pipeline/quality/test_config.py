"""The quality section loads from files and --set overrides, and rejects bad values with the key's name."""
from __future__ import annotations

import pytest

from corpusforge.config import load_config
from corpusforge.core.config_loader import ConfigError
from corpusforge.pipeline.quality.config import QualityConfig, paper_config


def test_one_section_drives_everything(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(
        "quality:\n"
        "  langid: {languages: [en, de], min_scores: {de: 0.5}}\n"
        "  gopher: {min_words: 50, stop_words: {pl: [i, w]}}\n"
        "  repetition: {top_ngram_char_frac: {'2': null}}\n"
        "  classifiers:\n"
        "    - {name: quality, model: q.bin}\n"
        "    - {name: toxicity, model: t.bin, label: toxic, keep_above: false, mode: pareto}\n",
        encoding="utf-8",
    )
    q = load_config(f, ["quality.gopher.min_stop_words=null", "quality.c4.min_sentences=3"]).quality
    assert q.langid.languages == ["en", "de"] and q.langid.threshold("de") == 0.5 and q.langid.threshold("en") == 0.65
    assert q.gopher.min_words == 50 and q.gopher.min_stop_words is None and q.gopher.stop_words == {"pl": ["i", "w"]}
    assert q.repetition.top_ngrams() == [(3, 0.18), (4, 0.16)]
    assert q.c4.min_sentences == 3
    assert [(c.name, c.mode, c.keep_above) for c in q.classifiers] == [("quality", "threshold", True), ("toxicity", "pareto", False)]


@pytest.mark.parametrize(
    "override,message",
    [
        ("quality.langid.min_score=1.5", "quality.langid.min_score must be between 0 and 1"),
        ("quality.gopher.min_words=-1", "quality.gopher.min_words must be >= 0"),
        ("quality.repetition.dup_ngram_char_frac={x: 0.1}", "keys must be integers"),
        ("quality.classifiers=[{name: q}]", "must name a fastText model file"),
        ("quality.classifiers=[{name: q, model: a}, {name: q, model: b}]", "names must be unique"),
        ("quality.classifiers=[{name: q, model: a, mode: sample}]", "not allowed"),
        ("quality.gopher.nope=1", "unknown key"),
    ],
)
def test_bad_values_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_paper_config_is_the_published_setting():
    p = paper_config()
    assert p.gopher.min_words == 50 and not p.gopher.stop_words_per_language and p.gopher.alpha_ratio_counts_punctuation
    assert p.c4.min_sentences == 5 and p.c4.min_words_per_line == 3 and p.c4.remove_lines_without_terminal_punct
    assert p.langid.languages == ["en"] and p.langid.min_score == 0.65 and not p.junk.enabled
    assert QualityConfig().langid.languages == []
