"""A saved ``tokenizer.json`` as transformers' ``PreTrainedTokenizerFast``, and the files that let
``AutoTokenizer.from_pretrained(DIR)`` load it with every special token in its role.

    hf = as_transformers("runs/x/tokenizer/tokenizer.json", model_max_length=512)
    save_transformers("runs/x/tokenizer/tokenizer.json", "exports/x", model_max_length=512)

transformers writes the files itself (``save_pretrained``); nothing here spells their JSON by hand.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

from corpusforge.core import files
from corpusforge.tokenizer.special_tokens import family_tokens, read_special_tokens


def transformers_kwargs(family: str) -> dict[str, Any]:
    """Which token plays which role, as ``PreTrainedTokenizerFast`` keyword arguments."""
    kwargs = family_tokens(family).transformers_kwargs()
    if family == "decoder":  # GPT-2's convention for batches: pad with the end-of-text token (masked out anyway)
        kwargs["pad_token"] = kwargs["eos_token"]
    if family == "encoder":  # BERT-style pairs carry segment ids
        kwargs["model_input_names"] = ["input_ids", "token_type_ids", "attention_mask"]
    return kwargs


def as_transformers(tokenizer_json: str, model_max_length: int | None = None):
    """``transformers.PreTrainedTokenizerFast`` for a saved ``tokenizer.json`` (local or any Beam filesystem)."""
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:
        from corpusforge.core.errors import missing_dependency

        raise missing_dependency("transformers", "transformers", "Loading the tokenizer in transformers") from None
    from tokenizers import Tokenizer

    text = files.read_bytes(tokenizer_json).decode("utf-8")
    family = read_special_tokens(text).family
    extra = {"model_max_length": model_max_length} if model_max_length else {}
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(text), clean_up_tokenization_spaces=False,
                                   **transformers_kwargs(family), **extra)


def save_transformers(tokenizer_json: str, output_dir: str, model_max_length: int | None = None, *,
                      keep_tokenizer_json: bool = False) -> list[str]:
    """Write what ``AutoTokenizer`` reads into ``output_dir`` (each file atomically; any Beam filesystem).

    ``keep_tokenizer_json``: leave an existing ``tokenizer.json`` byte for byte (its hash is recorded in the
    token shards' manifest) and add only transformers' configuration beside it."""
    hf = as_transformers(tokenizer_json, model_max_length)
    written = []
    with tempfile.TemporaryDirectory(prefix="corpusforge-tokenizer-") as tmp:
        for path in hf.save_pretrained(tmp):
            name = os.path.basename(path)
            if not os.path.isfile(path) or (keep_tokenizer_json and name == "tokenizer.json"):
                continue
            with open(path, "rb") as handle:
                target = files.join(output_dir, name)
                files.write_bytes_atomic(target, handle.read())
            written.append(name)
    return written
