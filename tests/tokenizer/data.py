"""Small generated corpora written as clean Arrow shards (corpusforge.pipeline.document.DOCUMENT_SCHEMA), as a build writes them."""
from __future__ import annotations

import json
import pathlib
import random

import pyarrow as pa
import pyarrow.ipc as ipc

from corpusforge.pipeline.document import DOCUMENT_SCHEMA

WORDS = (
    "the of and to in is was for on that with as by at from his her an which be this are or had not but "
    "river mountain city garden window morning evening library language history science music theatre "
    "tokenizer pipeline shard corpus quality filter document sentence paragraph chapter volume "
    "walked talked running jumped reading writing thinking spoke wrote carried remembered "
    "quickly slowly gently happily carefully nearly always never sometimes often "
    "café naïve résumé façade über straße niño jalapeño smörgåsbord déjà"
).split()
EXTRAS = ["3.14", "2024", "42", "(see above)", "e-mail", "don't", "it's", "C++", "x = y + 1;", "日本語", "🙂", "<tag>"]


def make_text(rng: random.Random) -> str:
    paragraphs = []
    for _ in range(rng.randint(1, 3)):
        sentences = []
        for _ in range(rng.randint(2, 6)):
            words = [rng.choice(WORDS) for _ in range(rng.randint(4, 14))]
            if rng.random() < 0.3:
                words.insert(rng.randrange(len(words)), rng.choice(EXTRAS))
            sentence = " ".join(words)
            sentences.append(sentence[0].upper() + sentence[1:] + rng.choice([".", ".", "!", "?", ";"]))
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def make_documents(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    return [
        {"id": f"doc-{i:06d}", "text": make_text(rng), "source": "generated",
         "metadata": json.dumps({"i": i}), "annotations": "{}"}
        for i in range(n)
    ]


def write_clean_shards(directory: pathlib.Path, docs: list[dict], num_shards: int = 2,
                       batch_rows: int = 50) -> list[pathlib.Path]:
    """Write ``docs`` as ``part-0000i-of-0000n.arrow`` files sorted by id, in record batches of ``batch_rows``."""
    directory.mkdir(parents=True, exist_ok=True)
    docs = sorted(docs, key=lambda d: d["id"])
    paths = []
    for shard in range(num_shards):
        rows = docs[shard::num_shards]
        path = directory / f"part-{shard:05d}-of-{num_shards:05d}.arrow"
        with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, DOCUMENT_SCHEMA) as writer:
            for start in range(0, max(len(rows), 1), batch_rows):
                part = rows[start:start + batch_rows]
                writer.write_batch(pa.RecordBatch.from_pylist(part, schema=DOCUMENT_SCHEMA))
        paths.append(path)
    return paths


