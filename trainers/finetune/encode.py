"""Examples as the task model's inputs: token ids, attention mask and labels, and batches of them.

- classify: the tokenizer's own single or pair template; the label id.
- tag: words through ``is_split_into_words``; each word's label on its first sub-word token, -100 (no loss) on
  the rest and on special tokens, as transformers' token-classification examples align them.
- generate: a decoder reads ``start + prompt + response + end`` with the loss on ``response + end`` only; a
  seq2seq model reads the prompt and predicts the response (its tokenizer's template, as in pretraining).
"""
from __future__ import annotations

from typing import Any

import torch

from corpusforge.trainers.finetune.data import Example

IGNORE = -100  # transformers' "no loss here"
# Record text is data, as it was in pretraining (tokenizer/tokenize.py): a literal "[SEP]" or "<|endoftext|>" in it
# is encoded as text, not read as a control token the model would take for a real separator or end of text.
AS_TEXT = {"split_special_tokens": True}


def encode(examples: list[Example], tokenizer, task: str, arch: str, labels: dict[str, int] | None,
           max_length: int, segments: bool = False, virtual_tokens: int = 0) -> list[dict[str, list[int]]]:
    """``segments``: keep token_type_ids of pairs (a model with two segment embeddings); ``virtual_tokens``: the
    soft prompt peft prepends for prompt tuning, which a tagger's labels and word ids must skip too."""
    out = []
    for example in examples:
        if task == "classify":
            row = dict(tokenizer(example.text, example.pair, truncation=True, max_length=max_length, **AS_TEXT))
            if labels is not None and example.target is not None:
                row["labels"] = labels[example.target]
        elif task == "tag":
            encoded = tokenizer(example.text, is_split_into_words=True, truncation=True, max_length=max_length,
                                **AS_TEXT)
            row = dict(encoded)
            row["word_ids"] = [IGNORE if w is None else w for w in encoded.word_ids()]
            if labels is not None and example.target is not None:
                row["labels"] = _first_piece_labels(encoded.word_ids(), [labels[t] for t in example.target])
            for key in ("word_ids", "labels"):
                if key in row:
                    row[key] = [IGNORE] * virtual_tokens + row[key]
        else:
            row = _generation_row(example, tokenizer, arch, max_length)
        if not (segments and example.pair is not None):
            row.pop("token_type_ids", None)
        out.append(row)
    return out


def _first_piece_labels(word_ids: list[int | None], word_labels: list[int]) -> list[int]:
    out, previous = [], None
    for word in word_ids:
        out.append(IGNORE if word is None or word == previous else word_labels[word])
        previous = word
    return out


def _generation_row(example: Example, tokenizer, arch: str, max_length: int) -> dict[str, list[int]]:
    if arch == "decoder":
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        prompt = [start] + tokenizer(example.text, add_special_tokens=False, **AS_TEXT)["input_ids"]
        if example.target is None:
            return {"input_ids": prompt[-max_length:], "attention_mask": [1] * min(len(prompt), max_length)}
        response = tokenizer(example.target, add_special_tokens=False, **AS_TEXT)["input_ids"] + [tokenizer.eos_token_id]
        ids = (prompt + response)[:max_length]
        labels = ([IGNORE] * len(prompt) + response)[:max_length]
        return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels}
    row = dict(tokenizer(example.text, truncation=True, max_length=max_length, **AS_TEXT))
    row.pop("token_type_ids", None)
    if example.target is not None:
        row["labels"] = tokenizer(example.target, truncation=True, max_length=max_length, **AS_TEXT)["input_ids"]
    return row


def pad_id(tokenizer) -> int:
    for token in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if token is not None:
            return token
    return 0


def collate(rows: list[dict[str, Any]], pad: int) -> dict[str, torch.Tensor]:
    """Right-padded tensors: ids with ``pad``, masks with 0, labels and word ids with -100."""
    batch = {}
    for key in rows[0]:
        values = [row[key] for row in rows]
        if not isinstance(values[0], list):
            batch[key] = torch.tensor(values)
            continue
        width = max(map(len, values))
        fill = pad if key == "input_ids" else (IGNORE if key in ("labels", "word_ids") else 0)
        batch[key] = torch.tensor([v + [fill] * (width - len(v)) for v in values])
    return batch
