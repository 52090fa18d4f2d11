"""Exact deduplication: one survivor per group of documents whose normalised text is the same."""
from __future__ import annotations

import hashlib

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from corpusforge.core.disk_grouping import GroupByKey, spill_directory
from corpusforge.core.text_guards import bounded_normalize
from corpusforge.pipeline.dedup.common import (
    BATCHES, KEYS, SHUFFLE, STAGE, HeldDocs, apply_verdicts, in_batch, join_mode, node_of, verdict_of,
)
from corpusforge.pipeline.dedup.text import normalized_bytes, normalized_joined
from corpusforge.pipeline.stage import ERRORS, StageOutputs, guarded

REASON = "exact_duplicate"


def fold_text(text: str, key_fold: str = "lower") -> str:
    """``text`` folded for the exact-dedup key: ``lower`` leaves it to ``normalized_bytes`` (lower case);
    ``nfkc_casefold`` first applies NFKC and Unicode case folding (NFKC_Casefold-like: NFKC, casefold, NFKC),
    so compatibility forms and case variants hash alike: full-width ``ｌａｎｇ`` = ``lang``, the ligature
    ``ﬁ`` = ``fi``, ``Straße`` = ``STRASSE``."""
    if key_fold == "nfkc_casefold" and not text.isascii():
        # bounded_normalize: runs of combining marks cut to 30 first (normalize is quadratic in a run's length)
        return bounded_normalize("NFKC", bounded_normalize("NFKC", text).casefold())
    return text  # ASCII: casefold is lower(), which normalized_bytes does anyway


def text_digest(text: str, key_fold: str = "lower") -> bytes:
    """128-bit BLAKE2b of the normalised words (lower case, no punctuation, digits as 0, one space), after
    ``fold_text``."""
    return hashlib.blake2b(normalized_joined(fold_text(text, key_fold)), digest_size=16).digest()


def text_digest_reference(text: str, key_fold: str = "lower") -> bytes:
    """The definition of ``text_digest``: the normalised words split and joined by single spaces."""
    return hashlib.blake2b(b" ".join(normalized_bytes(fold_text(text, key_fold)).split()), digest_size=16).digest()


def exact_verdicts(group):
    """``(digest, [nodes])`` -> ``(id, details)`` for every node but the smallest (the survivor); for nodes that
    name their batch (``batches`` joins), ``(batch key, (id, details))`` (``common.verdict_of``).

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
            yield verdict_of(node, {"survivor_id": survivor[2], "cluster_size": size, "similarity": 1.0})


def gathered_verdicts(item):
    """``(None, [lists of (digest, node)])``: every key of the stage on one worker -> what ``exact_verdicts``
    gives for each digest's group (the same verdicts as a ``GroupByKey`` by digest)."""
    _, packs = item
    groups: dict = {}
    for pack in packs:
        for digest, node in pack:
            groups.setdefault(digest, []).append(node)
    for digest, nodes in groups.items():
        if len(nodes) > 1:
            yield from exact_verdicts((digest, nodes))


class _DigestFn(beam.DoFn):
    """A document -> itself (or, ``batched``, lists of documents, ``HeldDocs``; ``by_batch``: ``(batch key,
    list)``), and ``(digest, node)`` tagged KEYS (``gathered``: the bundle's keys as one ``(None, [(digest,
    node)...])`` when it ends; ``by_batch``: the node names the document's batch): a document whose key cannot
    be computed is rejected (stage_error) rather than judged unique."""

    def __init__(self, score_key: str, key_fold: str, batched: bool = False, gathered: bool = False,
                 by_batch: bool = False):
        self.score_key, self.key_fold, self.batched, self.gathered = score_key, key_fold, batched, gathered
        self.by_batch = by_batch

    def start_bundle(self):
        self.held = HeldDocs(keyed=self.by_batch)
        self.keys: list = []

    def process(self, doc):
        digest, node = text_digest(doc.text, self.key_fold), node_of(doc, self.score_key)
        # nothing after this raises: a document that raised has no key and is not held
        held = self.held.hold(doc) if self.batched else ()
        if self.by_batch:  # the keys go as one list a batch, with it (a listed input of ExactGroup)
            self.keys.append((digest, in_batch(node, self.held.key)))
            if held:  # the batch this document completed: its keys are every key held
                keys, self.keys = self.keys, []
                yield beam.pvalue.TaggedOutput(KEYS, keys)
            yield from held
            return
        if self.gathered:
            self.keys.append((digest, node))
        else:
            yield beam.pvalue.TaggedOutput(KEYS, (digest, node))
        if self.batched:
            yield from held
        else:
            yield doc

    def finish_bundle(self):
        out = self.held.rest()
        if self.keys:
            keys = self.keys if self.by_batch else (None, self.keys)
            out.append(beam.pvalue.TaggedOutput(KEYS, GlobalWindows.windowed_value(keys)))
        self.keys = []
        return out


class ExactDedup(beam.PTransform):
    """Remove documents whose normalised text equals a better-ranked document's (reason ``exact_duplicate``).

    Groups only ``(digest, rank)`` pairs, then joins the verdicts back to the documents by id (``joins``:
    ``shuffle`` or ``side_input``, see ``common.join_verdicts``; ``shared_ids``: the stage's ``SharedIds``,
    when it has one).
    """

    def __init__(self, score_key: str = "quality_score", key_fold: str = "lower", fail_fast: bool = False,
                 joins: str = SHUFFLE, direct_runner: bool = False):
        """``direct_runner``: the pipeline runs on Beam's DirectRunner, whose driver holds every shuffle in
        memory anyway: the ``(digest, node)`` keys (~100 bytes a document) are gathered on one worker, one
        element per bundle (``gathered_verdicts``), instead of one ``GroupByKey`` element each."""
        super().__init__()
        # Not when the shuffles wait on disk (disk_grouping.spilling_to): one key's group is read back into one
        # worker's memory there, so gathering would hold every document's key at once (~100 bytes each)
        self.gathered = direct_runner and spill_directory() is None
        self.score_key = score_key
        self.key_fold = key_fold  # see fold_text and dedup.exact.key_fold
        self.fail_fast = fail_fast
        self.joins, self.shared_ids = join_mode(joins, direct_runner=False), None  # auto: no build, shuffle
        # the kept documents go on in lists (side-input joins only): the stage sets it when the next step,
        # near-dedup, takes lists (NearDedup.docs_in_lists)
        self.kept_lists = False

    def expand(self, docs) -> StageOutputs:
        batched, by_batch = self.joins != SHUFFLE, self.joins == BATCHES
        gathered = self.gathered and not by_batch  # batches: the keys go in lists a batch, grouped by digest
        digest = guarded(_DigestFn(self.score_key, self.key_fold, batched, gathered, by_batch), STAGE, self.fail_fast)
        keyed = docs | "ExactDigest" >> beam.ParDo(digest).with_outputs(KEYS, ERRORS, main="docs")
        verdicts = (
            keyed[KEYS]
            | "ExactGroup" >> GroupByKey(listed=by_batch)
            | "ExactVerdicts" >> beam.FlatMap(gathered_verdicts if gathered else exact_verdicts)
        )
        return apply_verdicts(keyed.docs, verdicts, REASON, "Exact", self.joins, self.shared_ids, batched,
                              self.kept_lists)._replace(errors=keyed[ERRORS])
