"""The toxicity filter: alt-profanity-check's real model, a user's fastText model, the decision rule, the stage."""
from __future__ import annotations

import random

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.core.config_loader import ConfigError
from corpusforge.core.errors import UserError
from corpusforge.pipeline.document import Document
from corpusforge.pipeline.quality import Quality, QualityConfig
from corpusforge.pipeline.quality.classifier import train_classifier
from corpusforge.pipeline.quality.config import (
    C4Config, FineWebConfig, GopherConfig, JunkConfig, LangIdConfig, RepetitionConfig, ToxicityConfig,
)
from corpusforge.pipeline.quality.stage import model_files
from corpusforge.pipeline.quality.toxicity import ToxicityScorer, scored_language, toxicity_decision

ABUSE = "You are a fucking idiot and everyone here knows it, so shut up."
RUDE_NARRATION = "The old sailor swore: damn this fog, damn the tide and damn the bloody harbour master."
CLEAN = "The library opens at nine and closes at six on weekdays; on Sundays it stays closed."


def only_toxicity(**toxicity) -> QualityConfig:
    """The quality stage with every other rule off, so the test sees the toxicity step alone."""
    return QualityConfig(langid=LangIdConfig(enabled=False), junk=JunkConfig(enabled=False),
                         gopher=GopherConfig(enabled=False), repetition=RepetitionConfig(enabled=False),
                         c4=C4Config(enabled=False), fineweb=FineWebConfig(enabled=False),
                         toxicity=ToxicityConfig(enabled=True, **toxicity))


def test_decision_threshold_mode_and_second_person():
    cfg = ToxicityConfig(threshold=0.9)
    assert toxicity_decision(0.95, ABUSE, cfg) == "toxic"
    assert toxicity_decision(0.85, ABUSE, cfg) is None
    assert toxicity_decision(0.99, RUDE_NARRATION, cfg) is None  # addresses no one
    assert toxicity_decision(0.99, RUDE_NARRATION, ToxicityConfig(require_second_person=False)) == "toxic"
    assert toxicity_decision(0.99, ABUSE, ToxicityConfig(mode="annotate")) is None
    assert scored_language("en", cfg) and scored_language(None, cfg) and not scored_language("de", cfg)
    assert scored_language("de", ToxicityConfig(languages=[]))
    with pytest.raises(ConfigError, match="threshold"):
        ToxicityConfig(threshold=1.5)


def test_builtin_model_scores_abuse_high_and_clean_text_low_in_any_batch():
    scorer = ToxicityScorer(ToxicityConfig())
    scores = scorer.score([ABUSE, CLEAN, RUDE_NARRATION])
    assert scores[0] > 0.9 and scores[1] < 0.5
    # the stage scores in batches whose make-up depends on the runner: a score must not
    assert scores == [scorer.score([t])[0] for t in (ABUSE, CLEAN, RUDE_NARRATION)]


def test_stage_drops_toxic_documents_and_annotates_the_rest():
    docs = [Document("a", ABUSE, "s"), Document("b", CLEAN, "s"), Document("c", RUDE_NARRATION, "s"),
            Document("d", ABUSE, "s", annotations={"lang": "de"})]  # not a language the model knows
    with TestPipeline() as p:
        out = p | beam.Create(docs) | Quality(only_toxicity())
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.reason, r.doc.annotations["toxicity_score"] > 0.9)),
                    equal_to([("a", "toxic", True)]), label="Removed")
        assert_that(out.kept | beam.Map(lambda d: (d.id, "toxicity_score" in d.annotations)),
                    equal_to([("b", True), ("c", True), ("d", False)]), label="Kept")


def test_annotate_mode_never_drops():
    with TestPipeline() as p:
        out = p | beam.Create([Document("a", ABUSE, "s")]) | Quality(only_toxicity(mode="annotate"))
        assert_that(out.kept | beam.Map(lambda d: (d.id, d.annotations["toxicity_score"] > 0.9)),
                    equal_to([("a", True)]), label="Kept")
        assert_that(out.removed, equal_to([]), label="Removed")


@pytest.fixture(scope="module")
def fasttext_model(tmp_path_factory):
    rng = random.Random(0)
    insults = "idiot moron loser clown fool creep coward liar".split()
    things = "garden bridge river market library station harbour valley".split()
    toxic = [f"you {rng.choice(insults)} you are a {rng.choice(insults)} and a {rng.choice(insults)}" for _ in range(300)]
    ok = [f"the {rng.choice(things)} is near the {rng.choice(things)} and the {rng.choice(things)}" for _ in range(300)]
    path = tmp_path_factory.mktemp("tox") / "toxic.bin"
    train_classifier(toxic, ok, path, positive_label="toxic", negative_label="ok", epoch=10)
    return str(path)


def test_users_fasttext_model_and_its_manifest_entry(fasttext_model):
    cfg = only_toxicity(model=fasttext_model, threshold=0.5)
    docs = [Document("a", "you idiot, you are a clown and a liar", "s"),
            Document("b", "the garden is near the bridge and the river", "s")]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | Quality(cfg)
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.reason)), equal_to([("a", "toxic")]), label="Removed")
        assert_that(out.kept | beam.Map(lambda d: d.id), equal_to(["b"]), label="Kept")
    roles = [m["role"] for m in model_files(cfg)]
    assert roles == ["quality.toxicity.model"] and model_files(cfg)[0]["path"] == fasttext_model
    with pytest.raises(UserError, match="no label 'abusive'"):
        ToxicityScorer(ToxicityConfig(model=fasttext_model, label="abusive"))


def test_missing_model_file_fails_at_construction(tmp_path):
    from corpusforge.pipeline.quality.stage import ToxicityFilter

    with pytest.raises(UserError, match="quality.toxicity.model"):
        ToxicityFilter(ToxicityConfig(enabled=True, model=str(tmp_path / "nope.bin")))
