"""--leave-one-out: the variants come from the config's dataclasses, one per part that is on."""
import dataclasses

import pytest

from corpusforge.ablate.leave_one_out import leave_one_out
from corpusforge.ablate.variants import variant_config
from corpusforge.config import load_config
from corpusforge.core.errors import UserError


def test_quality_gives_one_variant_per_sub_step_that_is_on():
    config = load_config(None, ["quality.c4.enabled=false"])
    assert "without-quality.langid" not in {
        v.name for v in leave_one_out(load_config(None, ["quality.langid.enabled=false"]), "quality")}
    variants = {v.name: v.overrides for v in leave_one_out(config, "quality")}
    assert variants == {
        "without-quality.langid": {"quality.langid.filter": False},  # it keeps labelling; only its drops stop
        "without-quality.junk": {"quality.junk.enabled": False},
        "without-quality.gopher": {"quality.gopher.enabled": False},
        "without-quality.repetition": {"quality.repetition.enabled": False},
        "without-quality.fineweb": {"quality.fineweb.enabled": False},
    }  # c4 is off already; toxicity is off by default; length and blocklist have no switch
    for variant in leave_one_out(config, "quality"):
        variant_config(config, variant)  # every override is a valid setting


def test_a_section_of_rules_gives_one_variant_per_rule_that_is_on():
    config = load_config(None, ["quality.junk.max_url_fraction=null"])
    names = [v.name for v in leave_one_out(config, "quality.junk")]
    assert "without-quality.junk.max_url_fraction" not in names
    assert "without-quality.junk.drop_lorem_ipsum" in names and "without-quality.junk.max_mojibake_fraction" in names
    repetition = {v.name: v.overrides for v in leave_one_out(config, "quality.repetition")}
    assert repetition["without-quality.repetition.top_ngram_char_frac.2"] == {
        "quality.repetition.top_ngram_char_frac.2": None}
    assert "without-quality.repetition.dup_ngram_char_frac.5" not in repetition  # off by default: nothing to leave out
    assert "without-quality.repetition.ngram_min_words" not in repetition  # a gate: null applies the rules more
    changed = variant_config(config, leave_one_out(config, "quality.repetition")[-1])
    assert None in changed.quality.repetition.top_ngram_char_frac.values()


def test_the_list_follows_the_dataclasses_not_a_hand_list():
    @dataclasses.dataclass
    class NewRule:
        enabled: bool = True
        max_thing: float | None = 0.5

    @dataclasses.dataclass
    class Quality:
        enabled: bool = True
        newrule: NewRule = dataclasses.field(default_factory=NewRule)

    @dataclasses.dataclass
    class Config:
        quality: Quality = dataclasses.field(default_factory=Quality)

    assert [v.name for v in leave_one_out(Config(), "quality")] == ["without-quality.newrule"]
    assert [v.overrides for v in leave_one_out(Config(), "quality.newrule")] == [{"quality.newrule.max_thing": None}]


@pytest.mark.parametrize("section, message", [
    ("train", "a variant may change only"),
    ("quality.nope", "no config section 'quality.nope'"),
    ("quality.gopher.min_words", "is a setting, not a section"),
    ("dedup.near", "nothing in dedup.near is on"),
])
def test_bad_sections_are_one_line_errors(section, message):
    with pytest.raises(UserError, match=message):
        leave_one_out(load_config(None, []), section)


def test_a_section_that_is_off_is_refused():
    with pytest.raises(UserError, match="quality is off"):
        leave_one_out(load_config(None, ["quality.enabled=false"]), "quality")
