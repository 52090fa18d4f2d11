"""Exact deduplication: one survivor per group of documents whose normalised text is the same."""
from __future__ import annotations

import hashlib

import apache_beam as beam

from corpusforge.pipeline.dedup.common import apply_verdicts, node_of
from corpusforge.pipeline.dedup.text import normalized_bytes
from corpusforge.pipeline.stage import StageOutputs

REASON = "exact_duplicate"


def text_digest(text: str) -> bytes:
    """128-bit BLAKE2b of the normalised words (lower case, no punctuation, digits as 0, one space)."""
    return hashlib.blake2b(b" ".join(normalized_bytes(text).split()), digest_size=16).digest()


def exact_verdicts(group):
    """``(digest, [nodes])`` -> ``(id, details)`` for every node but the smallest (the survivor).

    Iterates the group twice and keeps nothing but the smallest node, so on runners that stream grouped
    values (Dataflow) memory does not grow with the group.
    """
    _, nodes = group
    survivor, size = None, 0
    for node in nodes:
        size += 1
        if survivor is None or node < survivor:
            survivor = node
    if size < 2:
        return
    for node in nodes:
        if node != survivor:
            yield node[2], {"survivor_id": survivor[2], "cluster_size": size, "similarity": 1.0}


class ExactDedup(beam.PTransform):
    """Remove documents whose normalised text equals a better-ranked document's (reason ``exact_duplicate``).

    Groups only ``(digest, rank)`` pairs, then joins the verdicts back to the documents by id.
    """

    def __init__(self, score_key: str = "quality_score"):
        super().__init__()
        self.score_key = score_key

    def expand(self, docs) -> StageOutputs:
        score_key = self.score_key
        verdicts = (
            docs
            | "ExactDigest" >> beam.Map(lambda d: (text_digest(d.text), node_of(d, score_key)))
            | "ExactGroup" >> beam.GroupByKey()
            | "ExactVerdicts" >> beam.FlatMap(exact_verdicts)
        )
        return apply_verdicts(docs, verdicts, REASON, "Exact")
