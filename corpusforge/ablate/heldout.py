"""The held-out set: one or more files (or directories of them), each document with its source and language,
and the check that none of it is training data: every held-out document is compared with every training
document, exactly after case and whitespace folding, by hash (no text is kept or logged)."""
from __future__ import annotations

import hashlib
import os
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


def load_heldout(paths: list[str], text_field: str = "text", skipped: dict[str, int] | None = None) -> list:
    """The documents of every held-out path (a JSONL, Parquet or Arrow file, or a directory of them), in order.
    A document's source is its record's ``source`` field, else its file's stem, as the build's readers name
    sources (``heldout-de.jsonl`` -> ``heldout-de``). Records the readers reject are counted in ``skipped`` by
    reason (``read_documents``)."""
    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.readers import source_name
    from corpusforge.trainers.evaluate import Document, read_documents

    documents = []
    for path in paths:
        is_run = os.path.isdir(os.path.join(path, "clean"))
        names = [path] if is_run or not os.path.isdir(path) else sorted(
            os.path.join(path, n) for n in os.listdir(path) if os.path.isfile(os.path.join(path, n)))
        for name in names:
            stem = source_name(InputConfig(path=name), name)
            documents += [d if d.source is not None else Document(d.text, stem)
                          for d in read_documents(name, text_field, skipped)]
    return documents


def languages(texts: list[str], model: str = "") -> list[str]:
    """Each document's language as the quality stage's language ID labels it (the same fastText model)."""
    from corpusforge.pipeline.quality.langid import LanguageIdentifier

    return [label for label, _ in LanguageIdentifier(model).predict(texts)]
