"""Deduplication: exact, line-level, sentence-level and MinHash LSH near-duplicates, and decontamination.

``Dedup`` is the stage; ``ExactDedup``, ``NearDedup``, ``LineDedup``, ``SentenceDedup``, ``LineAndSentenceDedup`` (the
two in one document join) and ``Decontaminate`` can be used alone. Each returns ``StageOutputs(kept, removed, edits)`` with stage name ``"dedup"``.

The transforms import apache_beam; they load on first use so that reading the configuration (every CLI
command and every torchrun worker does) stays fast.
"""
from corpusforge.pipeline.dedup.config import (
    DecontaminateConfig,
    DedupConfig,
    ExactDedupConfig,
    LineDedupConfig,
    NearDedupConfig,
    SentenceDedupConfig,
)

__all__ = [
    "ConnectedComponents", "Decontaminate", "DecontaminateConfig", "Dedup", "DedupConfig", "ExactDedup",
    "ExactDedupConfig", "GatheredComponents", "LineAndSentenceDedup", "LineDedup", "LineDedupConfig", "NearDedup", "NearDedupConfig",
    "SentenceDedup", "SentenceDedupConfig",
]

_TRANSFORMS = {
    "Decontaminate": "corpusforge.pipeline.dedup.decontaminate",
    "ExactDedup": "corpusforge.pipeline.dedup.exact",
    "LineAndSentenceDedup": "corpusforge.pipeline.dedup.boilerplate",
    "LineDedup": "corpusforge.pipeline.dedup.lines",
    "ConnectedComponents": "corpusforge.pipeline.dedup.near",
    "GatheredComponents": "corpusforge.pipeline.dedup.near",
    "NearDedup": "corpusforge.pipeline.dedup.near",
    "SentenceDedup": "corpusforge.pipeline.dedup.sentences",
    "Dedup": "corpusforge.pipeline.dedup.stage",
}


def __getattr__(name: str):
    if name in _TRANSFORMS:
        import importlib

        return getattr(importlib.import_module(_TRANSFORMS[name]), name)
    raise AttributeError(f"module 'corpusforge.pipeline.dedup' has no attribute {name!r}")
