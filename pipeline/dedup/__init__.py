"""Deduplication: exact, line-level and MinHash LSH near-duplicates, and decontamination.

``Dedup`` is the stage; ``ExactDedup``, ``NearDedup``, ``LineDedup`` and ``Decontaminate`` can be used
alone. Each returns ``StageOutputs(kept, removed, edits)`` with stage name ``"dedup"``.
"""
from pipeline.dedup.config import (
    DecontaminateConfig,
    DedupConfig,
    ExactDedupConfig,
    LineDedupConfig,
    NearDedupConfig,
)
from pipeline.dedup.decontaminate import Decontaminate
from pipeline.dedup.exact import ExactDedup
from pipeline.dedup.lines import LineDedup
from pipeline.dedup.near import ConnectedComponents, NearDedup
from pipeline.dedup.stage import Dedup

__all__ = [
    "ConnectedComponents", "Decontaminate", "DecontaminateConfig", "Dedup", "DedupConfig", "ExactDedup",
    "ExactDedupConfig", "LineDedup", "LineDedupConfig", "NearDedup", "NearDedupConfig",
]
