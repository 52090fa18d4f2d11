"""What the dedup sub-transforms share: the stage name, and the join that turns verdicts into outputs.

Every sub-transform decides on light records (ids, ranks, hashes, signatures) and only at the end joins
its verdicts back to the documents by id, so no step ever gathers documents by content.
"""
from __future__ import annotations

import hashlib

import apache_beam as beam
from apache_beam.metrics import Metrics

from corpusforge.pipeline.dedup.text import survivor_rank
from corpusforge.pipeline.stage import REMOVED, StageOutputs, removal, split_outputs

STAGE = "dedup"
KEYS = "keys"  # the tagged output of a step that passes documents on and emits their grouping keys beside them


def node_of(doc, score_key: str) -> tuple:
    """The graph node of a document: its survivor rank (the smallest node of a group survives)."""
    return survivor_rank(doc.id, doc.annotations, score_key)


def digest64(data: bytes) -> int:
    """A stable 64-bit hash (BLAKE2b) for grouping keys."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


class _ApplyVerdicts(beam.DoFn):
    """``(id, {"doc": [documents], "verdict": [details]})`` -> the document, or its removal."""

    def __init__(self, reason: str):
        self.reason = reason
        self.removed = Metrics.counter(STAGE, reason)
        self.shared_ids = Metrics.counter(STAGE, "documents_sharing_an_id")

    def process(self, item):
        _, grouped = item
        docs, verdicts = list(grouped["doc"]), list(grouped["verdict"])
        if len(docs) > 1:
            self.shared_ids.inc(len(docs))
        for doc in docs:
            if verdicts:
                self.removed.inc()
                yield removal(doc, STAGE, self.reason, **verdicts[0])
            else:
                yield doc


def apply_verdicts(docs, verdicts, reason: str, label: str) -> StageOutputs:
    """Remove the documents that ``verdicts`` (``(id, details)``) name, with ``reason`` and the details."""
    keyed = docs | f"{label}KeyDocs" >> beam.Map(lambda d: (d.id, d))
    joined = {"doc": keyed, "verdict": verdicts} | f"{label}JoinVerdicts" >> beam.CoGroupByKey()
    return split_outputs(
        joined | f"{label}Apply" >> beam.ParDo(_ApplyVerdicts(reason)).with_outputs(REMOVED, main="kept"))
