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
    """One document. ``annotations`` holds what stages add (language, scores, PII counts...).

    ``text_ref`` (set by ``corpusforge.pipeline.spill.SpillText``) says where the text also lies on disk; such a document
    pickles without its text, and reading ``text`` after unpickling loads it back (see ``corpusforge.pipeline.spill``).
    ``text_chars``, set with it, is the text's length in characters (the reference holds its UTF-8 bytes): what
    the build's facts count, known without reading the text back (``text_sizes``).
    """

    id: str
    text: str
    source: str
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    annotations: dict[str, Any] = dataclasses.field(default_factory=dict)
    text_ref: tuple | None = dataclasses.field(default=None, compare=False, repr=False)
    # (input index, file path relative to the input, position): where the reader found the document, until
    # ``corpusforge.pipeline.readers.ReadDocuments`` has made its id unique; None after that.
    origin: tuple | None = dataclasses.field(default=None, compare=False, repr=False)
    text_chars: int | None = dataclasses.field(default=None, compare=False, repr=False)

    def _evolve(self, **changes: Any) -> "Document":
        # Not dataclasses.replace: that reads every field, which would load a spilled text for nothing.
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def with_text(self, text: str) -> "Document":
        return self._evolve(text=text, text_ref=None, text_chars=None)

    def with_id_metadata(self, id: str, metadata: dict[str, Any]) -> "Document":
        """A copy with another id and metadata (PII scrubbed from them); the text and its reference stay."""
        return self._evolve(id=id, metadata=metadata)

    def with_ref(self, ref: tuple) -> "Document":
        """A copy whose text is also at ``ref``; it keeps the text in memory until it is pickled, its length in
        characters for good (``text_chars``)."""
        text = self.__dict__.get("text")
        return self._evolve(text_ref=ref, text_chars=len(text) if text is not None else None)

    def text_length(self) -> int:
        """The text's length in characters (``text_sizes``' first, without its UTF-8 bytes)."""
        text = self.__dict__.get("text")
        if text is None:
            chars = self.__dict__.get("text_chars")
            if chars is not None and self.__dict__.get("text_ref") is not None:
                return chars
            text = self.text
        return len(text)

    def text_sizes(self) -> tuple[int, int]:
        """The text's length in characters and in UTF-8 bytes; a spilled document's from ``text_chars`` and its
        reference (the length of the bytes spilled) when its text is not in memory, without reading it back."""
        text = self.__dict__.get("text")
        if text is None:
            chars, ref = self.__dict__.get("text_chars"), self.__dict__.get("text_ref")
            if chars is not None and ref is not None:
                return chars, ref[2]
            text = self.text
        chars = len(text)
        # A str knows whether it is ASCII (O(1)); only other text needs encoding to count its UTF-8 bytes.
        return chars, chars if text.isascii() else len(text.encode("utf-8", "surrogatepass"))

    def loaded(self) -> "Document":
        """This document with its text in memory: a spilled one's read back once, for steps that each read it
        (``text`` alone reads the spill file on every access). The reference stays, so the copy pickles
        without its text and is not spilled again."""
        if "text" in self.__dict__:
            return self
        return self._evolve(text=self.text)

    def annotate(self, **values: Any) -> "Document":
        """A copy with ``values`` merged into the annotations (records are never mutated in place)."""
        return self._evolve(annotations={**self.annotations, **values})

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if state.get("text_ref") is not None:
            state.pop("text", None)  # the text travels by reference
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __getattr__(self, name: str) -> Any:
        # Only reached when ``name`` is not in __dict__: a spilled document's text after unpickling.
        # Not cached, so a shuffled document never holds its text longer than the caller does.
        if name == "text":
            ref = self.__dict__.get("text_ref")
            if ref is not None:
                from corpusforge.pipeline.spill import read_text

                return read_text(ref)
        if name == "text_chars":  # a document unpickled from before the field: its length is not known
            return None
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


@dataclasses.dataclass
class Removed:
    """A document a stage removed, with the stage's name and a reason string such as ``gopher_short_doc``."""

    doc: Document
    stage: str
    reason: str
    details: dict[str, Any] = dataclasses.field(default_factory=dict)

    def with_doc(self, doc: Document) -> "Removed":
        return dataclasses.replace(self, doc=doc)


@dataclasses.dataclass
class Rejected:
    """An input record that could not become a document. ``position`` locates it in its file."""

    source: str
    path: str
    position: int
    reason: str
    detail: str = ""
    raw: str = ""  # a printable preview of the bad bytes: RAW_CARRIED chars until written, RAW_PREVIEW in the file


RAW_PREVIEW = 200
DETAIL_CHARS = 300
# What a rejected record carries until it is written: the preview and a margin longer than any entity the PII
# scrubber finds, so the scrubber sees whole what the written preview cuts (scrub first, cut after:
# ``corpusforge.pipeline.pii.removed.scrubbed_prefix``). ``rejected_row`` cuts what was not scrubbed.
RAW_CARRIED = RAW_PREVIEW + 800

# The columns ``annotations`` (clean and removed) and ``details`` (removed) are typed Arrow structs whose fields
# the build's stages declare for its config (``Stage.annotation_fields`` / ``detail_fields``), in a fixed order,
# plus ``other``: a JSON object of any value no stage declared (null when there is none). The same config gives
# the same schema whether or not a shard holds a document that reached a stage; absent values are null.
# ``metadata`` stays a JSON string: its shape is the user's. Older runs (and the plain schemas below, used by
# tools that write shards by hand) hold annotations and details as JSON strings; ``annotations_of`` reads both.
OTHER = "other"


def struct_type(fields: list[pa.Field]) -> pa.StructType:
    """The struct of declared ``fields`` plus ``other`` (JSON of undeclared values)."""
    return pa.struct([*fields, pa.field(OTHER, pa.string())])


def document_schema(annotations: pa.DataType | None = None) -> pa.Schema:
    """Clean shards' schema; ``annotations``: the struct type of the build (None: a JSON string)."""
    return pa.schema([
        pa.field("id", pa.string(), nullable=False),
        pa.field("text", pa.large_string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("metadata", pa.string(), nullable=False),  # JSON object
        pa.field("annotations", annotations or pa.string(), nullable=False),
    ])


def removed_schema(annotations: pa.DataType | None = None, details: pa.DataType | None = None) -> pa.Schema:
    """Removed shards' schema; ``annotations`` and ``details``: struct types (None: JSON strings). A removed
    document keeps its ``metadata`` (the JSON object clean/ would have held, scrubbed as clean/'s is), so that
    ``build --input RUN/removed`` gives back the documents whole; runs written before it have no such column."""
    return pa.schema([
        pa.field("id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("stage", pa.string(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("details", details or pa.string(), nullable=False),
        pa.field("text", pa.large_string(), nullable=False),
        pa.field("metadata", pa.string(), nullable=False),  # JSON object, as in clean/
        pa.field("annotations", annotations or pa.string(), nullable=False),
    ])


DOCUMENT_SCHEMA = document_schema()
REMOVED_SCHEMA = removed_schema()

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


_DECLARED: dict[int, tuple[pa.StructType, frozenset[str]]] = {}


def _declared(kind: pa.StructType) -> frozenset[str]:
    """A struct type's field names, once per type object (``struct_value`` runs for every row written). Found by
    the object's identity, not its hash: hashing a pyarrow type formats it as text, ~50 us for a build's
    annotations struct, more than writing the row. The entry holds the type, so its id is never reused."""
    entry = _DECLARED.get(id(kind))
    if entry is None or entry[0] is not kind:
        if len(_DECLARED) >= 64:
            _DECLARED.clear()
        entry = _DECLARED[id(kind)] = (kind, frozenset(kind.field(i).name for i in range(kind.num_fields)))
    return entry[1]


def struct_value(values: dict[str, Any], kind: pa.DataType | None) -> Any:
    """``values`` as a row value of column type ``kind``: a JSON string, or the struct's declared fields with
    everything else in ``other``."""
    if kind is None or not pa.types.is_struct(kind):
        return _json(values)
    declared = _declared(kind)
    row = {key: value for key, value in values.items() if key in declared and key != OTHER}
    rest = {key: value for key, value in values.items() if key not in declared or key == OTHER}
    row[OTHER] = _json(rest) if rest else None
    return row


def annotations_of(value: dict[str, Any] | str | None) -> dict[str, Any]:
    """A row's ``annotations`` (or removed ``details``) as a dict, whether stored as a typed struct (a dict with
    nulls for values a document does not have, and ``other``) or as the JSON string of older runs."""
    if value is None:
        return {}
    if isinstance(value, (str, bytes)):
        return json.loads(value or "{}")
    out = {key: v for key, v in value.items() if v is not None and key != OTHER}
    if value.get(OTHER):
        out.update(json.loads(value[OTHER]))
    return out


def document_row(doc: Document, annotations: pa.DataType | None = None) -> dict[str, Any]:
    return {
        "id": doc.id,
        "text": doc.text,
        "source": doc.source,
        "metadata": _json(doc.metadata),
        "annotations": struct_value(doc.annotations, annotations),
    }


def document_from_row(row: dict[str, Any]) -> Document:
    return Document(
        id=row["id"],
        text=row["text"],
        source=row["source"],
        metadata=json.loads(row.get("metadata") or "{}"),
        annotations=annotations_of(row.get("annotations")),
    )


def removed_row(item: Removed, annotations: pa.DataType | None = None, details: pa.DataType | None = None) -> dict[str, Any]:
    return {
        "id": item.doc.id,
        "source": item.doc.source,
        "stage": item.stage,
        "reason": item.reason,
        "details": struct_value(item.details, details),
        "text": item.doc.text,
        "metadata": _json(item.doc.metadata),
        "annotations": struct_value(item.doc.annotations, annotations),
    }


def rejected_row(item: Rejected) -> dict[str, Any]:
    row = dataclasses.asdict(item)
    row["raw"], row["detail"] = item.raw[:RAW_PREVIEW], item.detail[:DETAIL_CHARS]
    return row


def _held_bytes(value) -> int:
    """About what ``value`` (a string, or JSON-like metadata: dicts, lists, scalars) holds: a string its length
    when ASCII (``str.isascii`` is O(1)), 4 a character otherwise (no encoding to measure it); a container the sum
    of its items plus 8 each; any other value 8. The reader bounds metadata's depth (``max_metadata_depth``)."""
    kind = type(value)
    if kind is str:
        return len(value) if value.isascii() else 4 * len(value)
    if kind is dict:
        return sum(_held_bytes(key) + _held_bytes(item) + 16 for key, item in value.items())
    if kind is list or kind is tuple:
        return sum(_held_bytes(item) + 8 for item in value)
    return 8


def held_bytes(doc) -> int:
    """What a document holds in memory, as a batch of them counts it (the reader's ``SPREAD_BATCH_BYTES``, dedup's
    ``DOC_BATCH_BYTES``): its text (0 when it is not in memory: a spilled one decoded) and its metadata (a record's other fields, kept whole: as large as its text can be), each as
    ``_held_bytes`` counts it."""
    fields = doc.__dict__
    text, metadata = fields.get("text"), fields.get("metadata")
    return (_held_bytes(text) if type(text) is str else 0) + (_held_bytes(metadata) if metadata else 0)
