"""Presidio's side of the ``Scrubber``: the analyzer with corpusforge's screened recognizers.

Importing this module imports Presidio and spaCy (~0.9 s of a worker's start-up), so the ``Scrubber`` imports
it only when a text first has a candidate for some recognizer (``corpusforge.pipeline.pii.screen``) or an NER
model is configured; a worker whose texts never have one never pays for it.

One engine per process and configuration (``shared_engine``): the PII stage, ``ScrubRemoved`` and
``ScrubRejected`` (and every thread that runs their bundles) use the same analyzer, its recognizers and, with
``pii.ner_model``, the same spaCy pipeline. What an engine depends on is ``ENGINE_FIELDS`` of the config (a test
holds ``build_engine`` to reading nothing else); the salt, the actions, the allow list and the score threshold
are the ``Scrubber``'s. The recognizers keep what a text's screen prepared for the ``analyze`` call that follows
per thread (``screened.ScreenedRecognizer``), and the spaCy pipeline runs under ``Engine.nlp_lock``.
"""
from __future__ import annotations

import threading
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
    nlp_lock: threading.Lock  # held while the spaCy pipeline runs (one pipeline, threads of one worker)


# The fields of a PIIConfig that build_engine reads: the key of the process's engines.
ENGINE_FIELDS = ("entities", "ner_model", "ner_entities", "phone_regions", "keep_private_ips", "url_patterns")
MAX_ENGINES = 8  # a worker runs one configuration; tests and `corpusforge report` a few
_ENGINES: dict[tuple, Engine] = {}  # insertion order: the oldest first
_ENGINES_LOCK = threading.Lock()


def engine_key(config: PIIConfig) -> tuple:
    """What makes two configurations' engines the same: their ``ENGINE_FIELDS``, as a hashable tuple."""
    return tuple(tuple(v) if isinstance(v, list) else v for v in (getattr(config, f) for f in ENGINE_FIELDS))


def shared_engine(config: PIIConfig) -> Engine:
    """The process's engine for ``config``: built on the first call with its ``engine_key``, under a lock (every
    other caller waits for that one build and gets the same object), then kept. A build that raises caches
    nothing: the next call builds again. The oldest of more than ``MAX_ENGINES`` is let go (its users keep it)."""
    key = engine_key(config)
    engine = _ENGINES.get(key)
    if engine is not None:
        return engine
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = build_engine(config)
            _ENGINES[key] = engine
            while len(_ENGINES) > MAX_ENGINES:
                del _ENGINES[next(iter(_ENGINES))]
        return engine


def forget_engine(config: PIIConfig, engine: Engine) -> None:
    """Let the process's engine for ``config`` go if it is ``engine`` (a warm-up failed with it): the next
    ``shared_engine`` call builds a new one."""
    with _ENGINES_LOCK:
        key = engine_key(config)
        if _ENGINES.get(key) is engine:
            del _ENGINES[key]


class _NoContextEnhancer(ContextAwareEnhancer):
    """Our recognizers read their own context words; skip Presidio's lemma-based pass (nothing to do
    without tokens, and work per result with them)."""

    def __init__(self) -> None:
        super().__init__(context_similarity_factor=0.0, min_score_with_context_similarity=0.0,
                         context_prefix_count=0, context_suffix_count=0)

    def enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers, context=None):
        return raw_results


def build_engine(config: PIIConfig) -> Engine:
    """A new analyzer for ``config`` (``shared_engine`` gives the process's one): its pattern recognizers, each
    wrapped by its screen, and with ``config.ner_model`` a spaCy NLP engine and Presidio's ``SpacyRecognizer``
    (the model must be installed: ``check_ner_model``)."""
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
    return Engine(analyzer, nlp_engine, screened, AnonymizerEngine(), empty, threading.Lock())
