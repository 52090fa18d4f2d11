"""Presidio's side of the ``Scrubber``: the analyzer with corpusforge's screened recognizers.

Importing this module imports Presidio and spaCy (~0.9 s of a worker's start-up), so the ``Scrubber`` imports
it only when a text first has a candidate for some recognizer (``corpusforge.pipeline.pii.screen``) or an NER
model is configured; a worker whose texts never have one never pays for it.
"""
from __future__ import annotations

from typing import NamedTuple

from corpusforge.pipeline.pii import presidio  # noqa: F401  (first: Presidio without transformers and torch)
from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
from presidio_analyzer.context_aware_enhancers import ContextAwareEnhancer
from presidio_analyzer.nlp_engine import NlpArtifacts, NlpEngineProvider
from presidio_anonymizer import AnonymizerEngine

from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.entities import LANGUAGE
from corpusforge.pipeline.pii.recognizers import build_recognizers
from corpusforge.pipeline.pii.screened import ScreenedRecognizer


class Engine(NamedTuple):
    analyzer: AnalyzerEngine
    nlp_engine: object
    screened: list[ScreenedRecognizer]  # in the order of config.entities
    anonymizer: AnonymizerEngine
    empty_artifacts: NlpArtifacts | None  # the no-op engine's artifacts, shared by every text (no NER model)


class _NoContextEnhancer(ContextAwareEnhancer):
    """Our recognizers read their own context words; skip Presidio's lemma-based pass (nothing to do
    without tokens, and work per result with them)."""

    def __init__(self) -> None:
        super().__init__(context_similarity_factor=0.0, min_score_with_context_similarity=0.0,
                         context_prefix_count=0, context_suffix_count=0)

    def enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers, context=None):
        return raw_results


def build_engine(config: PIIConfig) -> Engine:
    """The analyzer for ``config``: its pattern recognizers, each wrapped by its screen, and with
    ``config.ner_model`` a spaCy NLP engine and Presidio's ``SpacyRecognizer`` (the model must be installed:
    ``check_ner_model``)."""
    registry = RecognizerRegistry(supported_languages=[LANGUAGE])
    # Each pattern recognizer is registered wrapped: it only sees the windows its screen selects.
    screened = [ScreenedRecognizer(r, r.SCREEN) for r in build_recognizers(config)]
    for recognizer in screened:
        registry.add_recognizer(recognizer)
    if config.ner_model:
        from presidio_analyzer.nlp_engine import SpacyNlpEngine
        from presidio_analyzer.predefined_recognizers import SpacyRecognizer

        nlp_engine = SpacyNlpEngine(models=[{"lang_code": LANGUAGE, "model_name": config.ner_model}])
        nlp_engine.load()
        registry.add_recognizer(SpacyRecognizer(supported_language=LANGUAGE,
                                                supported_entities=list(config.ner_entities)))
    else:
        nlp_engine = NlpEngineProvider(nlp_configuration={
            "nlp_engine_name": "no_op", "models": [{"lang_code": LANGUAGE, "model_name": "none"}],
        }).create_engine()
    analyzer = AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=[LANGUAGE],
                              context_aware_enhancer=_NoContextEnhancer())
    empty = None if config.ner_model else nlp_engine.process_text("", LANGUAGE)
    return Engine(analyzer, nlp_engine, screened, AnonymizerEngine(), empty)
