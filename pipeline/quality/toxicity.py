"""Toxicity scores, offline: alt-profanity-check's English model (a TF-IDF + linear SVM shipped inside its wheel)
or the user's own fastText classifier. ``ToxicityScorer`` is built once per worker (``DoFn.setup``);
``toxicity_decision`` is the keep/drop rule. docs/quality.md measures both on clean text and abusive messages.
"""
from __future__ import annotations

import re

from corpusforge.core.errors import missing_dependency
from corpusforge.pipeline.quality.config import ToxicityConfig

KEEP = None
BUILTIN = "alt-profanity-check"
# Abuse is mostly aimed at someone; a profanity model alone also fires on narration, quotes and dictionary
# entries that merely contain a rude word (bench/toxicity.py measures both).
SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|yourselves|you're|youre|ya|u|ur)\b", re.IGNORECASE)


def check_available(cfg: ToxicityConfig) -> None:
    """Fail at construction, not on a worker, when the built-in model's package is missing."""
    import importlib.util

    if not cfg.model and importlib.util.find_spec("profanity_check") is None:
        raise missing_dependency("profanity_check", "'corpusforge[toxicity]'", "quality.toxicity with the built-in model")


def builtin_model_path() -> str:
    """The file of alt-profanity-check's model (for the manifest)."""
    from importlib import resources

    return str(resources.files("profanity_check") / "data" / "model.joblib")


class ToxicityScorer:
    """``score(texts) -> [probability that each text is toxic]`` with the configured model."""

    def __init__(self, cfg: ToxicityConfig):
        self.cfg = cfg
        if cfg.model:
            from corpusforge.pipeline.quality.classifier import QualityClassifier

            self._fasttext = QualityClassifier(cfg.model, cfg.label)
            self.name = cfg.model
        else:
            check_available(cfg)
            from profanity_check import predict_prob  # loads the vectorizer and model (~4 s), once per worker

            self._predict_prob = predict_prob
            self._fasttext = None
            self.name = BUILTIN

    def score(self, texts: list[str]) -> list[float]:
        if not texts:
            return []
        if self._fasttext is not None:
            return self._fasttext.score(texts)
        return [float(p) for p in self._predict_prob(texts)]


def scored_language(lang: str | None, cfg: ToxicityConfig) -> bool:
    """Whether a document of language ``lang`` is scored: its language is one the model knows (or none is
    known: language ID off)."""
    return lang is None or not cfg.languages or lang in cfg.languages


def toxicity_decision(score: float, text: str, cfg: ToxicityConfig) -> str | None:
    """``toxic`` when the score reaches the threshold in filter mode (and, with ``require_second_person``, the
    text addresses someone), else KEEP."""
    if cfg.mode != "filter" or score < cfg.threshold:
        return KEEP
    if cfg.require_second_person and not SECOND_PERSON.search(text):
        return KEEP
    return "toxic"
