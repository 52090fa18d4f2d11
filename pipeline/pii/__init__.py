"""PII removal with Presidio: ``PII`` (the Beam stage), ``Scrubber`` (the engine), ``coverage``.

Imports are lazy: loading ``corpusforge.pipeline.pii.config`` (every CLI command does) must not import Presidio,
spaCy or Beam.
"""
from __future__ import annotations

from corpusforge.pipeline.pii.entities import Coverage, coverage

__all__ = ["Coverage", "PII", "PIIConfig", "Scrubber", "coverage"]


def __getattr__(name: str):
    if name == "PII":
        from corpusforge.pipeline.pii.stage import PII

        return PII
    if name == "Scrubber":
        from corpusforge.pipeline.pii.scrubber import Scrubber

        return Scrubber
    if name == "PIIConfig":
        from corpusforge.pipeline.pii.config import PIIConfig

        return PIIConfig
    raise AttributeError(f"module 'corpusforge.pipeline.pii' has no attribute {name!r}")
