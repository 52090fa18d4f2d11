"""The dedup stage: decontaminate -> exact -> near-duplicates -> boilerplate lines, across all sources.

Decontamination runs first so a contaminated document is reported as such rather than as someone's
duplicate; exact dedup before MinHash keeps identical copies out of the LSH buckets; line dedup runs last
so near-duplicate clusters are judged on their full text.
"""
from __future__ import annotations

import apache_beam as beam

from pipeline.dedup.config import DedupConfig
from pipeline.dedup.decontaminate import Decontaminate
from pipeline.dedup.exact import ExactDedup
from pipeline.dedup.lines import LineDedup
from pipeline.dedup.near import NearDedup
from pipeline.stage import StageOutputs


class Dedup(beam.PTransform):
    """The whole stage as one composite transform: ``docs -> StageOutputs(kept, removed, edits)``."""

    def __init__(self, config: DedupConfig | None = None, spill_dir: str | None = None):
        """``spill_dir``: where near-dedup may keep its signatures and band records on local disk (``NearDedup``)."""
        super().__init__()
        self.config = config or DedupConfig()
        c, key = self.config, self.config.survivor_score
        self.steps: list[tuple[str, beam.PTransform]] = []
        if c.decontaminate.eval_sets:
            self.steps.append(("Decontaminate", Decontaminate(c.decontaminate)))
        if c.exact.enabled:
            self.steps.append(("ExactDedup", ExactDedup(key, c.exact.key_fold)))
        if c.near.enabled:
            self.steps.append(("NearDedup", NearDedup(c.near, key, spill_dir)))
        if c.lines.enabled:
            self.steps.append(("LineDedup", LineDedup(c.lines, key)))

    def expand(self, docs) -> StageOutputs:
        removed, edits = [], []
        for label, step in self.steps:
            outputs = docs | label >> step
            docs = outputs.kept
            removed.append(outputs.removed)
            if outputs.edits is not None:
                edits.append(outputs.edits)
        if not removed:
            removed = [docs.pipeline | "NoRemovals" >> beam.Create([])]
        return StageOutputs(
            kept=docs,
            removed=removed | "FlattenRemoved" >> beam.Flatten(),
            edits=(edits | "FlattenEdits" >> beam.Flatten()) if edits else None,
        )
