"""Source mixtures: how many times each document of a source goes into the train split's token shards.

With a token budget (``tokenize.target_tokens``) each source ``s`` gets ``target_tokens * w_s / sum(w)`` train
tokens, where ``w_s`` is ``inputs[].weight`` of the input named ``s`` (1 for a source no input names). A
source with ``T_s`` tokens after cleaning is taken ``e_s = target_s / T_s`` times (its *epochs*): every
document ``floor(e_s)`` times, and the fractional epoch's quota of ``(e_s - floor(e_s)) * T_s`` tokens is filled
once more with whole documents taken in the order of a keyed hash of their ids until the quota is met (the last
one may overshoot by one document): ``fraction_cutoff`` finds, per source, the largest hash taken (in two passes
that never hold a hash per document: ``quota_bucket``), and ``copies`` compares a document's hash with it. So up-sampling repeats whole documents, down-sampling (``e_s < 1``) drops
whole documents, each source's tokens hit its target to within one document, and all of it depends only on the
ids, the lengths, the seed and the figures, never on the order of work. (Comparing the hash with the fraction
instead would hit the target only in expectation: with documents of different sizes a source's share drifts by
the luck of which documents pass.) Pure functions, no Beam.
"""
from __future__ import annotations

import hashlib
import math
from typing import Mapping

import numpy as np

from corpusforge.core.errors import UserError

_MIX_PURPOSE = b"cf-tok-mix"  # a hash independent of the train/val split's


def source_weights(inputs) -> dict[str, float]:
    """``{source name: weight}`` from the build's ``inputs`` (only named inputs can carry a weight; inputs
    sharing a name are one source and must agree on it)."""
    weights: dict[str, float] = {}
    for item in inputs:
        if not item.name:
            continue
        if weights.get(item.name, item.weight) != item.weight:
            raise UserError(f"inputs named {item.name!r} have different weights ({weights[item.name]:g} and "
                            f"{item.weight:g}); inputs sharing a name are one source: give them one weight")
        weights[item.name] = item.weight
    return weights


def mixture_epochs(tokens_by_source: Mapping[str, int], weights: Mapping[str, float],
                   target_tokens: int) -> dict[str, float]:
    """Epochs per source: 1.0 for every source without a budget; else each source's share of the budget
    over its tokens (0.0 for a source of weight 0 or without tokens)."""
    if not target_tokens:
        return {source: 1.0 for source in tokens_by_source}
    present = {s: weights.get(s, 1.0) for s, tokens in tokens_by_source.items() if tokens > 0}
    total = sum(present.values())
    epochs = {}
    for source, tokens in tokens_by_source.items():
        if source not in present or not total:
            epochs[source] = 0.0
        else:
            epochs[source] = target_tokens * present[source] / total / tokens
    return epochs


def mix_key(doc_id: str, seed: int) -> int:
    """A document's place in its source's fractional epoch: a keyed BLAKE2b hash of its id (64 bits)."""
    digest = hashlib.blake2b(doc_id.encode("utf-8"), digest_size=8, key=seed.to_bytes(8, "little", signed=True),
                             person=_MIX_PURPOSE).digest()
    return int.from_bytes(digest, "little")


NONE_TAKEN = -1  # the cutoff of a fractional epoch that takes no document


# The quota's documents are found in two passes, so that no step holds a key per document of the corpus: a
# histogram of the tokens by the top KEY_BUCKET_BITS bits of their keys (``key_histogram``, summed over the
# corpus) says in which bucket the quota is met (``quota_bucket``), and only that bucket's keys (a 4,096th of
# the source's documents) are gathered and ordered (``bucket_cutoff``). Every key of a bucket is above every key
# of the buckets before it, so the answer is the one ordering all the keys would give.
KEY_BUCKET_BITS = 12
KEY_BUCKETS = 1 << KEY_BUCKET_BITS


def key_buckets(keys: np.ndarray) -> np.ndarray:
    """The bucket of each ``mix_key``: its top ``KEY_BUCKET_BITS`` bits (buckets ascend as the keys do)."""
    return (np.asarray(keys, np.uint64) >> np.uint64(64 - KEY_BUCKET_BITS)).astype(np.int64)


def key_histogram(keys: np.ndarray, lengths: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``(2, KEY_BUCKETS)`` int64: per bucket of keys, its documents and their tokens (histograms add; ``out``:
    added to that histogram in place)."""
    histogram = np.zeros((2, KEY_BUCKETS), np.int64) if out is None else out
    buckets = key_buckets(keys)
    np.add.at(histogram[0], buckets, 1)
    np.add.at(histogram[1], buckets, np.asarray(lengths, np.int64))
    return histogram


def quota_bucket(histogram: np.ndarray, fraction: float) -> tuple[int, int, float] | None:
    """Where a source's fractional epoch (``fraction`` of its tokens, taken in ascending key order) is met:
    ``(bucket, tokens of the buckets before it, quota)``; None when it takes no document."""
    documents, tokens = histogram
    quota = fraction * float(np.sum(tokens))
    if quota <= 0 or not documents.any():
        return None
    total = np.cumsum(tokens)
    reached = total >= quota
    bucket = int(np.argmax(reached)) if reached.any() else int(np.flatnonzero(documents)[-1])
    return bucket, int(total[bucket - 1]) if bucket else 0, quota


def bucket_cutoff(keys: np.ndarray, lengths: np.ndarray, before: int, quota: float) -> int:
    """The largest key taken from one bucket's documents (``keys``, token ``lengths``), in ascending key order
    after ``before`` tokens of the buckets below, until the tokens reach ``quota``. Ties of keys are ordered by
    length, so the answer does not depend on the documents' order."""
    keys, lengths = np.asarray(keys, np.uint64), np.asarray(lengths, np.int64)
    order = np.lexsort((lengths, keys))
    reached = before + np.cumsum(lengths[order]) >= quota
    last = int(np.argmax(reached)) if reached.any() else len(order) - 1
    return int(keys[order[last]])


def fraction_cutoff(keys: np.ndarray, lengths: np.ndarray, fraction: float) -> int:
    """The largest key taken when the documents (``keys`` from ``mix_key``, token ``lengths``), in ascending key
    order, are taken until their tokens reach ``fraction`` of all the source's tokens (``NONE_TAKEN`` for a
    quota of 0). Ties of keys are ordered by length, so the answer does not depend on the documents' order."""
    keys, lengths = np.asarray(keys, np.uint64), np.asarray(lengths, np.int64)
    target = quota_bucket(key_histogram(keys, lengths), fraction)
    if target is None:
        return NONE_TAKEN
    bucket, before, quota = target
    inside = key_buckets(keys) == bucket
    return bucket_cutoff(keys[inside], lengths[inside], before, quota)


def copies(doc_id: str, epochs: float, seed: int, cutoff: int) -> int:
    """How many times a document of a source taken ``epochs`` times goes into the shards: ``floor(epochs)``, plus
    one when its ``mix_key`` is at most its source's ``cutoff`` (``fraction_cutoff``)."""
    whole = math.floor(epochs)
    if epochs == whole or cutoff == NONE_TAKEN:
        return whole
    return whole + (mix_key(doc_id, seed) <= cutoff)


def sources_summary(before: Mapping[str, tuple[int, int]], after: Mapping[str, tuple[int, int]],
                    weights: Mapping[str, float], epochs: Mapping[str, float]) -> dict[str, dict]:
    """The manifest's ``sources``: per source, the train split's documents and tokens before and after
    weighting, its weight, planned epochs and the share of tokens before and after."""
    total_before = sum(t for _, t in before.values()) or 1
    total_after = sum(t for _, t in after.values()) or 1
    out = {}
    for source in sorted(set(before) | set(after)):
        docs_before, tokens_before = before.get(source, (0, 0))
        docs, tokens = after.get(source, (0, 0))
        out[source] = {
            "weight": weights.get(source, 1.0),
            "epochs": round(epochs.get(source, 1.0), 6),
            "documents_before": docs_before, "tokens_before": tokens_before,
            "share_before": round(tokens_before / total_before, 6),
            "documents": docs, "tokens": tokens, "share": round(tokens / total_after, 6),
            "epochs_written": round(tokens / tokens_before, 6) if tokens_before else 0.0,
        }
    return out
