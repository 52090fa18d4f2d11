"""The held-out set must not be training data: every held-out document is compared with every training
document, exactly after case and whitespace folding, by hash (no text is kept or logged)."""
from __future__ import annotations

import hashlib
from typing import Iterable

from corpusforge.core.errors import UserError
from corpusforge.tokenizer.corpus import clean_shards, iter_batches


def text_key(text: str) -> bytes:
    return hashlib.blake2b(" ".join(text.lower().split()).encode("utf-8"), digest_size=16).digest()


def heldout_keys(texts: Iterable[str]) -> dict[bytes, int]:
    """Hash of each held-out document -> its position (1-based), for the error message."""
    keys: dict[bytes, int] = {}
    for number, text in enumerate(texts, 1):
        keys.setdefault(text_key(text), number)
    return keys


def check_no_overlap(keys: dict[bytes, int], clean_dir: str, variant: str, heldout: str) -> None:
    """Raise if any document of ``clean_dir`` (a variant's training text) is also a held-out document."""
    found: list[int] = []
    paths = [p for p, _ in clean_shards(clean_dir)]
    for (texts,) in iter_batches(paths, 1024, ("text",)):
        found.extend(keys[k] for k in map(text_key, texts) if k in keys)
    if found:
        positions = ", ".join(str(n) for n in sorted(set(found))[:5])
        raise UserError(f"{len(set(found))} held-out document(s) of {heldout} (number {positions}) are also in the "
                        f"training data of variant {variant!r}; remove them from the held-out set or the input, "
                        "or the comparison measures memorisation")
