"""The dedup stage: decontaminate -> exact -> near-duplicates -> boilerplate lines -> boilerplate sentences,
across all sources.

Decontamination runs first so a contaminated document is reported as such rather than as someone's
duplicate; exact dedup before MinHash keeps identical copies out of the LSH buckets; line and sentence dedup
run last so near-duplicate clusters are judged on their full text, and sentence dedup after line dedup so a
boilerplate line that is one sentence is counted once, as a line.
"""
from __future__ import annotations

import apache_beam as beam

from corpusforge.pipeline.dedup.boilerplate import LineAndSentenceDedup
from corpusforge.pipeline.dedup.common import BATCHES, SHUFFLE, SIDE_INPUT, UNIQUE_IDS, SharedIds, join_mode
from corpusforge.pipeline.dedup.config import DedupConfig
from corpusforge.pipeline.dedup.decontaminate import Decontaminate
from corpusforge.pipeline.dedup.exact import ExactDedup
from corpusforge.pipeline.dedup.lines import LineDedup
from corpusforge.pipeline.dedup.near import NearDedup
from corpusforge.pipeline.dedup.sentences import SentenceDedup
from corpusforge.pipeline.stage import Stage, StageContext, StageOutputs, chain_steps


class Dedup(Stage, section="dedup", order=30):
    """The whole stage as one composite transform: ``docs -> StageOutputs(kept, removed, edits)``.

    ``context.spill_dir``: where near-dedup may keep its signatures and band records on local disk;
    ``context.direct_runner``: what near-dedup's ``components: auto`` and ``joins: auto`` decide by
    (``NearDedup``, ``common.join_mode``). With side-input joins, the ids that several input documents share are
    found once for the three joins (``SharedIds``): those documents take the shuffle join; ``context.unique_ids``
    (a build's documents) skips that search, and each join's kept documents go straight on to the next step."""

    details_are_values = False  # a removal's details describe its duplicate cluster

    @classmethod
    def report_sections(cls) -> list:
        from corpusforge.pipeline.dedup.report import dedup_section, near_duplicates_section

        return [dedup_section, near_duplicates_section]

    def __init__(self, config: DedupConfig | None = None, context: StageContext | None = None,
                 label: str | None = None):
        super().__init__(config or DedupConfig(), context, label)
        c, key, fail_fast = self.config, self.config.survivor_score, self.context.fail_fast
        joins = join_mode(c.joins, self.context.direct_runner, self.context.unique_ids)
        if joins == BATCHES and not self.context.unique_ids:  # ids may be shared: see join_mode
            joins = SHUFFLE
        self.joins = joins
        lists = joins in (SIDE_INPUT, BATCHES)  # the joins whose kept documents can go on as lists
        self.steps: list[tuple[str, beam.PTransform]] = []
        if c.decontaminate.eval_sets:
            self.steps.append(("Decontaminate", Decontaminate(c.decontaminate, fail_fast)))
        if c.exact.enabled:
            self.steps.append(("ExactDedup", ExactDedup(key, c.exact.key_fold, fail_fast, joins,
                                                        self.context.direct_runner)))
        if c.near.enabled:
            near = NearDedup(c.near, key, self.context.spill_dir, fail_fast, self.context.direct_runner, joins)
            if lists and self.steps and isinstance(self.steps[-1][1], ExactDedup):
                # exact dedup's kept documents reach near-dedup's batches as lists, not one Beam element each
                self.steps[-1][1].kept_lists = near.docs_in_lists = True
            self.steps.append(("NearDedup", near))
        if c.lines.enabled and c.sentences.enabled:  # the same decisions as the two steps, one document join
            boilerplate = LineAndSentenceDedup(c.lines, c.sentences, key, fail_fast, joins, self.context.spill_dir)
            if lists and self.steps and isinstance(self.steps[-1][1], (ExactDedup, NearDedup)):
                # the kept documents of the step before reach the boilerplate keys as lists, not one element each
                self.steps[-1][1].kept_lists = boilerplate.docs_in_lists = True
            self.steps.append(("LineAndSentenceDedup", boilerplate))
        elif c.lines.enabled:
            self.steps.append(("LineDedup", LineDedup(c.lines, key, fail_fast)))
        elif c.sentences.enabled:
            self.steps.append(("SentenceDedup", SentenceDedup(c.sentences, key, fail_fast)))

    @classmethod
    def files(cls, config: DedupConfig) -> list[tuple[str, str]]:
        from corpusforge.pipeline.dedup.decontaminate import eval_set_files

        if not (config.enabled and config.decontaminate.eval_sets):
            return []
        return [("dedup.decontaminate.eval_sets", path) for path in eval_set_files(config.decontaminate.eval_sets)]

    @classmethod
    def detail_fields(cls, config: DedupConfig) -> list:
        import pyarrow as pa

        if not (config.exact.enabled or config.near.enabled):
            return []
        return [pa.field("survivor_id", pa.string()), pa.field("cluster_size", pa.int64()),
                pa.field("similarity", pa.float64())]

    def expand(self, docs) -> StageOutputs:
        joining = [step for _, step in self.steps if getattr(step, "joins", None) == SIDE_INPUT]
        if joining:  # one SharedIds for the three joins: a step's documents are a subset of the stage's
            # (none in a build, whose reader makes ids unique: each document is joined alone)
            shared = UNIQUE_IDS if self.context.unique_ids else docs | "DedupSharedIds" >> SharedIds()
            for step in joining:
                step.shared_ids = shared
        return chain_steps(docs, self.steps)
