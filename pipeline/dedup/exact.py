"""Exact deduplication: one survivor per group of documents whose normalised text is the same."""
from __future__ import annotations

import hashlib
import unicodedata

import apache_beam as beam

from corpusforge.pipeline.dedup.common import KEYS, SHUFFLE, STAGE, HeldDocs, apply_verdicts, join_mode, node_of
from corpusforge.pipeline.dedup.text import joined_words, normalized_bytes
from corpusforge.pipeline.stage import ERRORS, StageOutputs, guarded

REASON = "exact_duplicate"


def fold_text(text: str, key_fold: str = "lower") -> str:
    """``text`` folded for the exact-dedup key: ``lower`` leaves it to ``normalized_bytes`` (lower case);
    ``nfkc_casefold`` first applies NFKC and Unicode case folding (NFKC_Casefold-like: NFKC, casefold, NFKC),
    so compatibility forms and case variants hash alike: full-width ``ｌａｎｇ`` = ``lang``, the ligature
    ``ﬁ`` = ``fi``, ``Straße`` = ``STRASSE``."""
    if key_fold == "nfkc_casefold" and not text.isascii():
        return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return text  # ASCII: casefold is lower(), which normalized_bytes does anyway


def text_digest(text: str, key_fold: str = "lower") -> bytes:
    """128-bit BLAKE2b of the normalised words (lower case, no punctuation, digits as 0, one space), after
    ``fold_text``."""
    return hashlib.blake2b(joined_words(normalized_bytes(fold_text(text, key_fold))), digest_size=16).digest()


def text_digest_reference(text: str, key_fold: str = "lower") -> bytes:
    """The definition of ``text_digest``: the normalised words split and joined by single spaces."""
    return hashlib.blake2b(b" ".join(normalized_bytes(fold_text(text, key_fold)).split()), digest_size=16).digest()


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


class _DigestFn(beam.DoFn):
    """A document -> itself (or, ``batched``, lists of documents, ``HeldDocs``), and ``(digest, node)`` tagged
    KEYS: a document whose key cannot be computed is rejected (stage_error) rather than judged unique."""

    def __init__(self, score_key: str, key_fold: str, batched: bool = False):
        self.score_key, self.key_fold, self.batched = score_key, key_fold, batched

    def start_bundle(self):
        self.held = HeldDocs()

    def process(self, doc):
        key = (text_digest(doc.text, self.key_fold), node_of(doc, self.score_key))
        yield beam.pvalue.TaggedOutput(KEYS, key)
        if self.batched:
            yield from self.held.hold(doc)  # after the key: a document that raised is not held
        else:
            yield doc

    def finish_bundle(self):
        return self.held.rest()


class ExactDedup(beam.PTransform):
    """Remove documents whose normalised text equals a better-ranked document's (reason ``exact_duplicate``).

    Groups only ``(digest, rank)`` pairs, then joins the verdicts back to the documents by id (``joins``:
    ``shuffle`` or ``side_input``, see ``common.join_verdicts``; ``shared_ids``: the stage's ``SharedIds``,
    when it has one).
    """

    def __init__(self, score_key: str = "quality_score", key_fold: str = "lower", fail_fast: bool = False,
                 joins: str = SHUFFLE):
        super().__init__()
        self.score_key = score_key
        self.key_fold = key_fold  # see fold_text and dedup.exact.key_fold
        self.fail_fast = fail_fast
        self.joins, self.shared_ids = join_mode(joins, direct_runner=False), None  # auto: no build, shuffle
        # the kept documents go on in lists (side-input joins only): the stage sets it when the next step,
        # near-dedup, takes lists (NearDedup.docs_in_lists)
        self.kept_lists = False

    def expand(self, docs) -> StageOutputs:
        batched = self.joins != SHUFFLE
        digest = guarded(_DigestFn(self.score_key, self.key_fold, batched), STAGE, self.fail_fast)
        keyed = docs | "ExactDigest" >> beam.ParDo(digest).with_outputs(KEYS, ERRORS, main="docs")
        verdicts = (
            keyed[KEYS]
            | "ExactGroup" >> beam.GroupByKey()
            | "ExactVerdicts" >> beam.FlatMap(exact_verdicts)
        )
        return apply_verdicts(keyed.docs, verdicts, REASON, "Exact", self.joins, self.shared_ids, batched,
                              self.kept_lists)._replace(errors=keyed[ERRORS])
