"""Generate the built-in sample corpus, deterministically, from the documentation Python ships.

The good text is the prose of ``pydoc_data.topics`` (the Python reference) and standard-library module
docstrings: real, varied English that every machine with Python has. Onto it the generator adds what a
corpus builder meets in the wild, each kind labelled in the document's metadata (``sample_kind``) so a
person can check what each stage did:

- exact duplicates (the same page in a second source) and near-duplicates (typos, word substitutions,
  boilerplate added, a paragraph dropped);
- personal data (synthetic emails, phone numbers, card numbers, IP addresses, IBANs, SSNs);
- junk pages (navigation menus, keyword stuffing, lorem ipsum, symbol art, mojibake, cookie banners);
- good paragraphs in German, French and Spanish, and short good paragraphs;
- bad records: malformed JSON, invalid UTF-8, missing or non-string text, empty text, an oversize record,
  and a truncated compressed file.
"""
from __future__ import annotations

import dataclasses
import gzip
import importlib
import inspect
import json
import pathlib
import random
import re

import pyarrow as pa
import pyarrow.parquet as pq

from corpusforge.pipeline.sample import texts

STDLIB_MODULES = [
    "argparse", "asyncio", "collections", "contextlib", "csv", "dataclasses", "datetime", "decimal", "difflib",
    "email", "enum", "fractions", "functools", "heapq", "http", "inspect", "itertools", "json", "logging",
    "pathlib", "pickle", "queue", "random", "re", "sched", "secrets", "shutil", "socket", "sqlite3",
    "statistics", "string", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "timeit",
    "typing", "unittest", "urllib", "uuid", "warnings", "weakref", "zipfile", "zlib",
]


@dataclasses.dataclass
class SampleSummary:
    directory: pathlib.Path
    records: int  # every record written, bad ones included
    kinds: dict[str, int]
    inputs: list[dict[str, str]]  # the config's `inputs` section for this sample


def _paragraphs() -> list[str]:
    """Real English paragraphs from Python's own documentation, in a fixed order."""
    import pydoc_data.topics as topics

    paragraphs = []
    for name in sorted(topics.topics):
        for block in re.split(r"\n\s*\n", topics.topics[name]):
            lines = [ln.strip() for ln in block.splitlines()]
            text = " ".join(ln for ln in lines if ln)
            # Prose only: code samples and tables are indented or full of symbols.
            if len(text) >= 200 and not block.startswith((" ", "\t")) and text.count("|") < 3 and ">>>" not in text:
                paragraphs.append(text)
    for name in STDLIB_MODULES:
        try:
            module = importlib.import_module(name)
        except Exception:  # a module missing on some platform: skip it
            continue
        docs = [inspect.getdoc(module) or ""]
        for attr in sorted(dir(module)):
            member = getattr(module, attr, None)
            if not attr.startswith("_") and (inspect.isclass(member) or inspect.isfunction(member)):
                docs.append(inspect.getdoc(member) or "")
        for doc in docs:
            for block in re.split(r"\n\s*\n", doc):
                text = " ".join(block.split())
                if len(text) >= 200 and ">>>" not in text and text.count("(") < 8:
                    paragraphs.append(text)
    return list(dict.fromkeys(paragraphs))  # each paragraph once, first occurrence order


def _near_duplicate(text: str, rng: random.Random) -> str:
    """A realistic near-copy: a few typos and substitutions, and boilerplate added or a paragraph dropped."""
    words = text.split(" ")
    for _ in range(max(1, len(words) // 60)):
        i = rng.randrange(len(words))
        w = words[i]
        if len(w) > 3:
            j = rng.randrange(len(w) - 1)
            words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    for _ in range(max(1, len(words) // 80)):
        i = rng.randrange(len(words))
        words[i] = rng.choice(["the", "a", "this", "that", "its", "their"])
    out = " ".join(words)
    paragraphs = out.split("\n\n")
    if len(paragraphs) > 2 and rng.random() < 0.5:
        del paragraphs[rng.randrange(len(paragraphs))]
    else:
        paragraphs.append(rng.choice(texts.BOILERPLATE))
    return "\n\n".join(paragraphs)


def _with_pii(text: str, rng: random.Random) -> str:
    sentences = rng.sample(texts.PII_SENTENCES, 2)
    paragraphs = text.split("\n\n")
    paragraphs.insert(rng.randrange(len(paragraphs) + 1), " ".join(sentences))
    return "\n\n".join(paragraphs)


def _record(rid: str, text: str, kind: str, **extra) -> dict:
    return {"id": rid, "text": text, "sample_kind": kind, **extra}


def write_sample(directory: str | pathlib.Path, documents: int = 1000, seed: int = 0) -> SampleSummary:
    """Write the sample corpus into ``directory`` (created) and return what it holds."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    paragraphs = _paragraphs()
    if len(paragraphs) < 100:
        raise RuntimeError("this Python ships too little documentation to build the sample (pydoc_data missing?)")

    # Good English documents of 1-4 paragraphs, each paragraph used once (short single paragraphs are good
    # text too); the last 12 paragraphs become the plain-text notes.
    notes_paragraphs, paragraphs = paragraphs[-12:], paragraphs[:-12]
    good: list[dict] = []
    cursor = 0
    while len(good) < documents and cursor < len(paragraphs):
        size = rng.choice([1, 1, 2, 2, 3, 4])
        chunk = paragraphs[cursor: cursor + size]
        cursor += size
        good.append(_record(f"doc-{len(good):05d}", "\n\n".join(chunk), "good"))
    documents = len(good)

    kinds: dict[str, int] = {}
    web, mirror, parquet_rows, arrow_rows = [], [], [], []
    for i, rec in enumerate(good):
        roll = rng.random()
        if roll < 0.05:
            rec = _record(rec["id"], _with_pii(rec["text"], rng), "pii")
        (web if i % 4 else parquet_rows if i % 8 else arrow_rows).append(rec)
        kinds[rec["sample_kind"]] = kinds.get(rec["sample_kind"], 0) + 1
    # Exact duplicates: the same page in a second source, under another id.
    for k, rec in enumerate(rng.sample(good, max(1, documents // 30))):
        mirror.append(_record(f"mirror-{k:04d}", rec["text"], "exact_duplicate", duplicate_of=rec["id"]))
    # Near duplicates of multi-paragraph documents.
    longer = [r for r in good if r["text"].count("\n\n") >= 2]
    for k, rec in enumerate(rng.sample(longer, min(len(longer), max(1, documents // 30)))):
        mirror.append(_record(f"near-{k:04d}", _near_duplicate(rec["text"], rng), "near_duplicate", duplicate_of=rec["id"]))
    for k, text in enumerate(texts.junk_pages(rng)):
        web.append(_record(f"junk-{k:04d}", text, "junk"))
    for k, (lang, text) in enumerate(texts.FOREIGN):
        web.append(_record(f"foreign-{k:04d}", text, f"good_{lang}", lang=lang))
    for name, count in (("exact_duplicate", sum(1 for r in mirror if r["sample_kind"] == "exact_duplicate")),
                        ("near_duplicate", sum(1 for r in mirror if r["sample_kind"] == "near_duplicate")),
                        ("junk", sum(1 for r in web if r["sample_kind"] == "junk")),
                        ("foreign", len(texts.FOREIGN))):
        kinds[name] = count
    rng.shuffle(web)

    # Bad records, mixed into the main file.
    bad_lines = [
        b'{"id": "bad-json", "text": "an unterminated record\n',
        b'{"id": "bad-utf8", "text": "caf\xe9 latin-1 bytes"}\n',
        b'{"id": "bad-missing", "body": "the text is in the wrong field"}\n',
        b'{"id": "bad-type", "text": ["not", "a", "string"]}\n',
        b'{"id": "bad-empty", "text": "   "}\n',
        json.dumps(_record("bad-oversize", "word " * 60_000, "oversize")).encode() + b"\n",
        b'[1, 2, 3]\n',
    ]
    kinds["bad_record"] = len(bad_lines) + 1  # + the truncated file below
    lines = [json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in web]
    for k, bad in enumerate(bad_lines):
        lines.insert((k * 97) % len(lines), bad)
    (directory / "web.jsonl.gz").write_bytes(gzip.compress(b"".join(lines), mtime=0))

    import zstandard

    payload = b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in mirror)
    (directory / "mirror.jsonl.zst").write_bytes(zstandard.ZstdCompressor(level=3).compress(payload))
    pq.write_table(pa.Table.from_pylist(parquet_rows), directory / "reference.parquet")
    with pa.ipc.new_file(directory / "archive.arrow", pa.Table.from_pylist(arrow_rows).schema) as w:
        w.write_table(pa.Table.from_pylist(arrow_rows))
    notes = directory / "notes"
    notes.mkdir(exist_ok=True)
    for k, para in enumerate(notes_paragraphs):
        (notes / f"note-{k:02d}.txt").write_text(para + "\n", encoding="utf-8")
    kinds["good"] += 12
    # A compressed file cut short, as an interrupted download leaves it.
    tail = gzip.compress(b"".join(json.dumps(r).encode() + b"\n" for r in good[:50]), mtime=0)
    (directory / "truncated.jsonl.gz").write_bytes(tail[: len(tail) // 2])

    records = len(web) + len(bad_lines) + len(mirror) + len(parquet_rows) + len(arrow_rows) + 12
    inputs = [
        {"path": str(directory / "web.jsonl.gz"), "name": "web"},
        {"path": str(directory / "mirror.jsonl.zst"), "name": "mirror"},
        {"path": str(directory / "reference.parquet"), "name": "reference"},
        {"path": str(directory / "archive.arrow"), "name": "archive"},
        {"path": str(directory / "notes" / "*.txt"), "name": "notes", "text_unit": "file"},
        {"path": str(directory / "truncated.jsonl.gz"), "name": "partial"},
    ]
    return SampleSummary(directory, records, kinds, inputs)
