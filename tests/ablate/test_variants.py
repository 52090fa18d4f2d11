import pytest

from corpusforge.ablate.run import check_budget
from corpusforge.ablate.variants import (Variant, build_key, check_unique, load_variants, parse_variant,
                                                  variant_config)
from corpusforge.config import load_config
from corpusforge.core.errors import UserError


def test_a_bare_name_means_the_defaults():
    assert parse_variant("full") == Variant("full", {})


def test_overrides_are_yaml_values_and_lists_keep_their_commas():
    variant = parse_variant("raw:quality.enabled=false,dedup.near.verify_threshold=0.7,quality.langid.languages=[en, de]")
    assert variant.name == "raw"
    assert variant.overrides == {"quality.enabled": False, "dedup.near.verify_threshold": 0.7,
                                 "quality.langid.languages": ["en", "de"]}


def test_a_variant_may_change_only_the_build():
    with pytest.raises(UserError, match=r"train.seq_len is not a build setting"):
        parse_variant("long:train.seq_len=1024")
    with pytest.raises(UserError, match="not key=value"):
        parse_variant("raw:quality.enabled")
    with pytest.raises(UserError, match="names a directory"):
        parse_variant("../up:quality.enabled=false")


def test_an_unknown_key_names_the_variant():
    with pytest.raises(UserError, match=r"variant 'typo': .*quality.*enabld"):
        variant_config(load_config(), parse_variant("typo:quality.enabld=false"))


def test_variants_file_with_a_threshold_sweep(tmp_path):
    path = tmp_path / "variants.yaml"
    path.write_text("variants:\n  raw: {quality: {enabled: false}, dedup.enabled: false}\n  full: {}\n"
                    "sweeps:\n  - {name: near, key: dedup.near.verify_threshold, values: [0.7, 0.9], set: {quality.enabled: false}}\n")
    variants = load_variants(str(path))
    assert [v.name for v in variants] == ["raw", "full", "near-0.7", "near-0.9"]
    assert variants[0].overrides == {"quality.enabled": False, "dedup.enabled": False}
    assert variants[3].overrides == {"quality.enabled": False, "dedup.near.verify_threshold": 0.9}
    configs = [variant_config(load_config(), v) for v in variants]
    assert configs[2].dedup.near.verify_threshold == 0.7 and not configs[2].quality.enabled


def test_a_variants_file_with_an_unknown_section_is_refused(tmp_path):
    path = tmp_path / "variants.yaml"
    path.write_text("variant:\n  full: {}\n")
    with pytest.raises(UserError, match="unknown top-level key 'variant'"):
        load_variants(str(path))


def test_equal_builds_share_a_key_and_the_model_settings_do_not_count():
    base = load_config()
    full = build_key(variant_config(base, parse_variant("full")))
    assert full == build_key(variant_config(base, parse_variant("again:dedup.enabled=true")))
    assert full == build_key(load_config(overrides=["train.seq_len=64", "output.run_dir=elsewhere"]))
    assert full != build_key(variant_config(base, parse_variant("raw:dedup.enabled=false")))


def test_names_are_unique():
    with pytest.raises(UserError, match="two variants are named 'a'"):
        check_unique([Variant("a"), Variant("a", {"dedup.enabled": False})])


def test_the_budget_is_whole_steps():
    config = load_config(overrides=["train.seq_len=128", "train.micro_batch_size=16"])
    assert check_budget(config.train, 20480) == 10
    with pytest.raises(UserError, match="use 18,432 or 20,480"):
        check_budget(config.train, 20000)
