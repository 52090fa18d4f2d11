"""The records that flow through the build pipeline, and their Arrow schemas.

Every input record ends as exactly one of:
- a ``Document`` that reaches the clean shards (kept),
- a ``Removed`` record: a stage decided the document should go, with a named reason,
- a ``Rejected`` record: the input itself was bad (malformed JSON, invalid UTF-8, ...).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

import pyarrow as pa


@dataclasses.dataclass
class Document:
    """One document. ``annotations`` holds what stages add (language, scores, PII counts...)."""

    id: str
    text: str
    source: str
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    annotations: dict[str, Any] = dataclasses.field(default_factory=dict)

    def with_text(self, text: str) -> "Document":
        return dataclasses.replace(self, text=text)

    def annotate(self, **values: Any) -> "Document":
        """A copy with ``values`` merged into the annotations (records are never mutated in place)."""
        return dataclasses.replace(self, annotations={**self.annotations, **values})


@dataclasses.dataclass
class Removed:
    """A document a stage removed, with the stage's name and a reason string such as ``gopher_short_doc``."""

    doc: Document
    stage: str
    reason: str
    details: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Rejected:
    """An input record that could not become a document. ``position`` locates it in its file."""

    source: str
    path: str
    position: int
    reason: str
    detail: str = ""
    raw: str = ""  # a short, printable preview of the bad bytes (never more than RAW_PREVIEW chars)


RAW_PREVIEW = 200

DOCUMENT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("text", pa.large_string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("metadata", pa.string(), nullable=False),  # JSON object
        pa.field("annotations", pa.string(), nullable=False),  # JSON object
    ]
)

REMOVED_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("stage", pa.string(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("details", pa.string(), nullable=False),  # JSON object
        pa.field("text", pa.large_string(), nullable=False),
        pa.field("annotations", pa.string(), nullable=False),
    ]
)

REJECTED_SCHEMA = pa.schema(
    [
        pa.field("source", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("position", pa.int64(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("detail", pa.string(), nullable=False),
        pa.field("raw", pa.string(), nullable=False),
    ]
)


def _json(value: dict[str, Any]) -> str:
    # sort_keys makes the bytes of a shard independent of the order in which stages annotated.
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def document_row(doc: Document) -> dict[str, Any]:
    return {
        "id": doc.id,
        "text": doc.text,
        "source": doc.source,
        "metadata": _json(doc.metadata),
        "annotations": _json(doc.annotations),
    }


def document_from_row(row: dict[str, Any]) -> Document:
    return Document(
        id=row["id"],
        text=row["text"],
        source=row["source"],
        metadata=json.loads(row.get("metadata") or "{}"),
        annotations=json.loads(row.get("annotations") or "{}"),
    )


def removed_row(item: Removed) -> dict[str, Any]:
    return {
        "id": item.doc.id,
        "source": item.doc.source,
        "stage": item.stage,
        "reason": item.reason,
        "details": _json(item.details),
        "text": item.doc.text,
        "annotations": _json(item.doc.annotations),
    }


def rejected_row(item: Rejected) -> dict[str, Any]:
    return dataclasses.asdict(item)
