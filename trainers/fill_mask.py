"""The most likely tokens for the mask in a text, from an encoder (masked LM).

    loaded = load_model("runs/x/model")               # or an export
    fill_mask(loaded, "The river <mask> quickly.", top_k=5)

transformers' own ``fill-mask`` pipeline does the work on the converted model; the text may spell the mask
as the tokenizer's mask token (``[MASK]`` for BERT-style tokenizers) or as ``<mask>``.
"""
from __future__ import annotations

from typing import Any

from corpusforge.core.errors import UserError
from corpusforge.trainers.export import LoadedModel, model_device
from corpusforge.trainers.generate import bytes_per_token, learned_positions, tokens_at_least

GENERIC_MASK = "<mask>"


def fill_mask(loaded: LoadedModel, text: str, top_k: int = 5) -> list[dict[str, Any]]:
    """``[{"token_str", "score", "token", "sequence"}, ...]``, best first."""
    from transformers import pipeline

    if loaded.arch != "encoder":
        raise UserError("fill-mask needs an encoder (masked LM) model; this one is a "
                        f"{loaded.arch.replace('_', '-')} model (try corpusforge generate)")
    if top_k < 1:
        raise UserError(f"--top-k must be at least 1, got {top_k}")
    mask = loaded.tokenizer.mask_token
    if mask is None:
        raise UserError("the model's tokenizer has no mask token")
    if mask != GENERIC_MASK:
        text = text.replace(GENERIC_MASK, mask)
    if text.count(mask) != 1:
        raise UserError(f"the text must hold exactly one mask ({mask} or {GENERIC_MASK}); it holds {text.count(mask)}")
    # the tokenizer's vocabulary, not the model's rows (rounded up to train.model.vocab_multiple: never tokens)
    vocab = len(loaded.tokenizer)
    if top_k > vocab:
        raise UserError(f"--top-k {top_k} is more than the model's {vocab} tokens; pass {vocab} or fewer")
    limit = learned_positions(loaded.model)
    seen = tokens_at_least(text, limit, loaded.tokenizer, most_bytes=lambda: bytes_per_token(loaded.tokenizer)) \
        if limit else None
    if seen is not None and seen[0] > limit:  # a huge text: refused from a prefix, before tokenising it whole
        raise UserError(f"the text is at least {seen[0]:,} tokens ({seen[1]}); the model reads {limit} at most: "
                        "shorten it")
    length = len(loaded.tokenizer(text)["input_ids"])
    if limit is not None and length > limit:
        raise UserError(f"the text is {length} tokens; the model reads {limit} at most: shorten it")
    fill = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, device=model_device(loaded.model))
    return [{"token_str": r["token_str"], "score": float(r["score"]), "token": int(r["token"]),
             "sequence": r["sequence"]} for r in fill(text, top_k=top_k)]
