"""Name detection with a spaCy pipeline: a rule-based one saved to disk stands in for en_core_web_lg."""
from __future__ import annotations

import pytest

from corpusforge.core.errors import UserError
from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.entities import coverage

spacy = pytest.importorskip("spacy")


@pytest.fixture(scope="module")
def ner_model_dir(tmp_path_factory):
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([
        {"label": "PERSON", "pattern": [{"LOWER": "ada"}, {"LOWER": "lovelace"}]},
        {"label": "GPE", "pattern": "London"},
        {"label": "ORG", "pattern": "Acme"},
    ])
    path = tmp_path_factory.mktemp("ner") / "ruler_ner"
    nlp.to_disk(path)
    return str(path)


def test_missing_model_raises_user_error_with_the_install_command():
    from corpusforge.pipeline.pii.scrubber import Scrubber

    with pytest.raises(UserError, match=r"python -m spacy download en_core_web_zz"):
        Scrubber(PIIConfig(ner_model="en_core_web_zz"))


def test_missing_model_fails_at_transform_construction():
    from corpusforge.pipeline.pii.stage import PII

    with pytest.raises(UserError, match="not installed"):
        PII(PIIConfig(ner_model="en_core_web_zz"))


def test_ner_model_adds_person_and_location(ner_model_dir):
    from corpusforge.pipeline.pii.scrubber import Scrubber

    scrubber = Scrubber(PIIConfig(ner_model=ner_model_dir))
    texts = ["Ada Lovelace lived in London and worked with Acme; mail ada@example.org.", "Nothing here."]
    results = scrubber.scrub_batch(texts)
    assert results[0].text == "<PERSON> lived in <LOCATION> and worked with Acme; mail <EMAIL>."
    assert results[0].counts == {"PERSON": 1, "LOCATION": 1, "EMAIL_ADDRESS": 1}
    assert results[1].text == "Nothing here." and results[1].spans == ()


def test_coverage_reports_names_only_with_a_model(ner_model_dir):
    without = coverage(PIIConfig())
    assert "PERSON" in without.uncovered and "LOCATION" in without.uncovered
    assert "pii.ner_model" in without.uncovered["PERSON"]
    assert "PERSON" not in without.covered
    with_model = coverage(PIIConfig(ner_model=ner_model_dir))
    assert {"PERSON", "LOCATION"} <= set(with_model.covered)
    assert "PERSON" not in with_model.uncovered
    assert "NOT covered: URL" in with_model.summary()
