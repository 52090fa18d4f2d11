"""PII removal with Presidio: ``ScrubPII`` (the Beam stage), ``Scrubber`` (the engine), ``coverage``.

Imports are lazy: loading ``pipeline.pii.config`` (every CLI command does) must not import Presidio,
spaCy or Beam.
"""
from __future__ import annotations

from pipeline.pii.entities import Coverage, coverage

__all__ = ["Coverage", "PIIConfig", "ScrubPII", "Scrubber", "coverage"]


def __getattr__(name: str):
    if name == "ScrubPII":
        from pipeline.pii.transform import ScrubPII

        return ScrubPII
    if name == "Scrubber":
        from pipeline.pii.scrubber import Scrubber

        return Scrubber
    if name == "PIIConfig":
        from pipeline.pii.config import PIIConfig

        return PIIConfig
    raise AttributeError(f"module 'pipeline.pii' has no attribute {name!r}")
