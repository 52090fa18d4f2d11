"""Stored values read from struct or JSON annotations, and the run config's thresholds that decide on them."""
import json

import pyarrow as pa

from corpusforge.pipeline.quality.config import LangIdConfig, QualityConfig
from corpusforge.core.config_loader import public_dict
from corpusforge.pipeline.report.values import as_dict, flat_items, numeric_values, thresholds


def test_as_dict_reads_a_struct_a_json_string_or_nothing():
    record = {"lang": "en", "quality": {"gopher": {"n_words": 12, "mean_word_length": 4.5}}}
    struct = pa.array([record]).to_pylist()[0]  # what an Arrow struct column gives back
    assert as_dict(struct) == record
    assert as_dict(json.dumps(record)) == record
    assert as_dict("") == {} and as_dict(None) == {} and as_dict("not json") == {} and as_dict("[1]") == {}


def test_numeric_values_flatten_nested_keys_and_skip_nulls_flags_and_ids():
    record = {"lang": "en", "lang_score": 0.93, "pii_count": 2, "flag": True, "nan": float("nan"),
              "quality": {"gopher": {"n_words": 12, "mean_word_length": None}}, "survivor_id": 7}
    assert dict(numeric_values(record)) == {"lang_score": 0.93, "pii_count": 2.0, "quality.gopher.n_words": 12.0}
    assert dict(flat_items(record))["quality.gopher.n_words"] == 12 and "quality.gopher.mean_word_length" not in dict(flat_items(record))


def _config(**quality):
    return {"quality": public_dict(QualityConfig(**quality))}


def test_thresholds_by_the_config_names():
    config = _config()
    assert thresholds("quality.gopher.n_words", config) == [("quality.gopher.min_words", 5.0),
                                                            ("quality.gopher.max_words", 100000.0)]
    assert thresholds("gopher.mean_word_length", config) == [("quality.gopher.min_mean_word_length", 3.0),
                                                             ("quality.gopher.max_mean_word_length", 10.0)]
    assert thresholds("quality.repetition.dup_line_frac", config) == [("quality.repetition.max_dup_line_frac", 0.3)]
    assert thresholds("quality.repetition.top_ngram_char_frac.2", config) == [
        ("quality.repetition.top_ngram_char_frac.2", 0.2)]
    assert thresholds("lang_score", config) == []  # every language kept: no confidence floor by default
    assert thresholds("lang_score", _config(langid=LangIdConfig(languages=["en"]))) == [("quality.langid.min_score", 0.65)]
    assert thresholds("lang_score", _config(langid=LangIdConfig(min_score=0.4))) == [("quality.langid.min_score", 0.4)]
    assert thresholds("toxicity_score", config) == []  # toxicity is off by default
    assert thresholds("quality.gopher.something_unknown", config) == [] and thresholds("pii_count", config) == []
    assert thresholds("lang_score", None) == []


def test_thresholds_follow_the_run_config():
    from corpusforge.pipeline.quality.config import ClassifierConfig, GopherConfig, LangIdConfig, ToxicityConfig

    config = _config(langid=LangIdConfig(min_score=0.5, filter=False), gopher=GopherConfig(enabled=False, min_words=80),
                     toxicity=ToxicityConfig(enabled=True, threshold=0.9),
                     classifiers=[ClassifierConfig(name="edu", model="m.bin", threshold=0.3),
                                  ClassifierConfig(name="ads", model="a.bin", mode="annotate")])
    assert thresholds("lang_score", config) == []  # annotate only
    assert thresholds("quality.gopher.n_words", config) == []  # rule off
    assert thresholds("toxicity_score", config) == [("quality.toxicity.threshold", 0.9)]
    assert thresholds("edu_score", config) == [("quality.classifiers[edu].threshold", 0.3)]
    assert thresholds("ads_score", config) == []
