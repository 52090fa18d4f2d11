"""Source mixtures: how many times each document of a source goes into the train split's token shards.

With a token budget (``tokenize.target_tokens``) each source ``s`` gets ``target_tokens * w_s / sum(w)`` train
tokens, where ``w_s`` is ``inputs[].weight`` of the input named ``s`` (1 for a source no input names). A
source with ``T_s`` tokens after cleaning is taken ``e_s = target_s / T_s`` times (its *epochs*): every
document ``floor(e_s)`` times, and once more when a keyed hash of its id falls below ``e_s - floor(e_s)``.
So up-sampling repeats whole documents, down-sampling (``e_s < 1``) drops whole documents, and both depend
only on the id, the seed and the figures, never on the order of work. The tokens per source match the
targets in expectation; the manifest reports what was written. Pure functions, no Beam.
"""
from __future__ import annotations

import hashlib
import math
from typing import Mapping

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


def copies(doc_id: str, epochs: float, seed: int) -> int:
    """How many times a document of a source taken ``epochs`` times goes into the shards."""
    whole = math.floor(epochs)
    fraction = epochs - whole
    if not fraction:
        return whole
    digest = hashlib.blake2b(doc_id.encode("utf-8"), digest_size=8, key=seed.to_bytes(8, "little", signed=True),
                             person=_MIX_PURPOSE).digest()
    return whole + (int.from_bytes(digest, "little") / 2.0**64 < fraction)


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
