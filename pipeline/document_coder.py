"""A Beam coder that moves ``Document`` records without pickling them.

A build's PCollections are untyped, so Beam codes their elements with ``FastPrimitivesCoder``: strings, numbers,
lists, tuples and dicts in compiled code, anything else through its fallback, ``PickleCoder``. A ``Document``
was such an "anything else": every time one crossed a fused-stage boundary, was held in a batch, or was
sampled by Beam's size counters (``OperationCounters`` encodes the first elements of every output in full)
it was pickled, its class looked up by name and ``__getstate__``/``__setstate__`` run, ~15 us a round trip,
~17 encodings and ~10 decodings of every document in a normalize + dedup build.

``DocumentCoder`` is ``FastPrimitivesCoder`` with a fallback that writes a ``Document`` as the tuple of its
fields (coded by ``FastPrimitivesCoder`` itself: the compiled path) and anything else as ``PickleCoder`` did,
behind a one-byte tag. A document decodes to the same fields as by unpickling: a spilled document
(``text_ref`` set) leaves its text out, as ``Document.__getstate__`` does. A document whose fields that coder
cannot write (a lone surrogate in its text, an attribute a ``Document`` does not declare) is pickled as before.
Keys of a ``GroupByKey`` are never documents: the deterministic coder asked for them is Beam's own.

A batch of documents held as a ``Documents`` (a ``list``; ``FastPrimitivesCoder`` writes only exact lists itself,
so it reaches the fallback whole) is written as the tuple of its columns: ids, texts, sources, metadata,
annotations, references, origins, coded by ``FastPrimitivesCoder`` in one call, not one Python call and one
tagged fields tuple per document. That is what moves lists of documents between fused steps (the shard writer's
``RECORD_BATCH`` lists): 5.8 us per ~2.2 KB document with three annotations to encode and decode, against 6.6
as a plain list and 7.4 one by one, and 11.2 as an Arrow IPC record batch, whose metadata and annotations (values
of any shape) must first be written as JSON strings and parsed back (``bench/coder.py`` then, batches of 256).
With three annotations what is left is mostly the text's UTF-8 encoding and decoding, which any coding of ``str``
texts pays; with an every-stage build's ~60 it was the annotations' keys (below). A batch holding anything its
columns cannot hold (a document ``_fields_of`` refuses, another value) is written as a list would be. Dedup's
side-input joins hold their waiting documents the same way (``dedup.common.HeldDocs``, near dedup's batches, the
joins' kept lists), and line + sentence dedup's ``(document, sentence table)`` pairs as a ``DocumentPairs``: the
documents' columns and the tuple of the values (a plain list of them made one fallback call per document).

A document's annotations are written as a typed row of the build's declared fields (``annotation_rows``: the
values without their keys, ~60 after the quality and PII stages) when the coder holds the build's ``Rows`` and
their keys are those fields in their order; any other annotations are written as a dict, as before. A ``Removed``
is written as its document's fields, its stage, reason and details (a row of the declared detail fields), not
pickled, and sized from its document's text. Per ~2.2 KB document with an every-stage build's annotations, one
by one (``python bench/coder.py``, a shared machine: compare within a run): 25.4 -> 18.2 us a round trip and
1,297 -> 398 bytes beyond the text; a near-dedup ``Removed`` 31.9 us and 1,611 bytes pickled -> 20.1 us and 463.

Beam samples the size of ~7 elements a document (``OperationCounters``, for a metric the build never reads):
a ``Document``, ``Removed`` or batch of them is estimated from its text's length by ``DocumentCoder``'s own
``get_estimated_size_and_observables``, never encoded, nor passed to the fallback on a counting stream (~6x the
time of the estimate).

``document_coders(rows)`` makes it the coder of every untyped PCollection (Beam's registry fallback) while a
build constructs and runs its pipeline; ``Document`` is registered with it for PCollections typed as documents.
"""
from __future__ import annotations

import contextlib
import pickle
import threading
from typing import Any, Iterator

from apache_beam import coders
from apache_beam.coders import coder_impl, typecoders
from apache_beam.coders.coder_impl import ByteCountingOutputStream

from corpusforge.pipeline.annotation_rows import Rows
from corpusforge.pipeline.document import Document, Removed

_PICKLED, _FIELDS, _COLUMNS, _LIST, _REMOVED = b"\x00", b"\x01", b"\x02", b"\x03", b"\x04"
_PAIR_COLUMNS, _PAIR_LIST = b"\x05", b"\x06"
# A document's attributes, in the order the fields tuple holds them (text None when it travels by reference;
# text_chars, its length in characters, None unless it does).
_NAMES = ("id", "text", "source", "metadata", "annotations", "text_ref", "origin", "text_chars")
_SPILLED_NAMES = frozenset(_NAMES) - {"text"}
_ALL_NAMES = frozenset(_NAMES)
_REMOVED_NAMES = ("doc", "stage", "reason", "details")
_NO_ROWS = Rows()


class Documents(list):
    """A batch of documents that crosses fused steps as one element, coded as columns (see the module's
    docstring). Anything that takes a list takes it."""

    __slots__ = ()


class DocumentPairs(list):
    """A batch of ``(document, value)`` pairs (line + sentence dedup's documents with their sentence tables)
    that crosses fused steps as one element, coded as the documents' columns and the tuple of the values (see
    the module's docstring). Anything that takes a list takes it."""

    __slots__ = ()


def _pair_columns_of(batch: DocumentPairs, rows: Rows) -> tuple | None:
    """The pairs as ``(the documents' columns, the values)``, or None when a member is no ``(document, value)``
    pair whose document ``_columns_of`` can write."""
    docs, values = [], []
    for pair in batch:
        if type(pair) is not tuple or len(pair) != 2:
            return None
        docs.append(pair[0])
        values.append(pair[1])
    columns = _columns_of(docs, rows)
    return None if columns is None else (columns, tuple(values))


def _pairs(columns: tuple, rows: Rows) -> DocumentPairs:
    docs, values = columns
    return DocumentPairs(zip(_documents(docs, rows), values))


def _columns_of(batch: Documents, rows: Rows) -> tuple | None:
    """The batch as a tuple of columns (each a tuple, one value per document), or None when a member cannot be
    written as fields (``_fields_of``)."""
    records = []
    for doc in batch:
        fields = _fields_of(doc, rows)
        if fields is None:
            return None
        records.append(fields)
    return tuple(zip(*records)) if records else ()


def _documents(columns: tuple, rows: Rows) -> Documents:
    return Documents(_document(fields, rows) for fields in zip(*columns)) if columns else Documents()


class _DocumentOrPickle:
    """The reference encoder and decoder (bytes <-> value): documents as tagged field tuples, the rest pickled.
    ``_DocumentOrPickleImpl`` writes and reads the same bytes straight on Beam's streams."""

    def __init__(self, rows: Rows = _NO_ROWS):
        self.fields = coders.FastPrimitivesCoder().get_impl()  # its own fallback: PickleCoder
        self.rows = rows

    def encode(self, value: Any) -> bytes:
        if type(value) is Documents:
            columns = _columns_of(value, self.rows)
            try:
                return _COLUMNS + self.fields.encode(columns) if columns is not None else _LIST + self.fields.encode(list(value))
            except UnicodeEncodeError:
                pass
        elif type(value) is DocumentPairs:
            columns = _pair_columns_of(value, self.rows)
            try:
                return (_PAIR_COLUMNS + self.fields.encode(columns) if columns is not None
                        else _PAIR_LIST + self.fields.encode(list(value)))
            except UnicodeEncodeError:
                pass
        else:
            fields, tag = _fields_of(value, self.rows), _FIELDS
            if fields is None:
                fields, tag = _removed_fields_of(value, self.rows), _REMOVED
            if fields is not None:
                try:
                    return tag + self.fields.encode(fields)
                except UnicodeEncodeError:  # a lone surrogate (str.encode refuses it): pickle keeps it
                    pass
        return _PICKLED + pickle.dumps(value, pickle.HIGHEST_PROTOCOL)

    def decode(self, encoded: bytes) -> Any:
        tag = encoded[:1]
        if tag == _FIELDS:
            return _document(self.fields.decode(encoded[1:]), self.rows)
        if tag == _REMOVED:
            return _removed(self.fields.decode(encoded[1:]), self.rows)
        if tag == _COLUMNS:
            return _documents(self.fields.decode(encoded[1:]), self.rows)
        if tag == _LIST:
            return Documents(self.fields.decode(encoded[1:]))
        if tag == _PAIR_COLUMNS:
            return _pairs(self.fields.decode(encoded[1:]), self.rows)
        if tag == _PAIR_LIST:
            return DocumentPairs(self.fields.decode(encoded[1:]))
        return pickle.loads(memoryview(encoded)[1:])


def _fields_of(value: Any, rows: Rows = _NO_ROWS) -> tuple | None:
    """A ``Document``'s fields tuple (text None when it travels by reference; annotations a row when ``rows``
    declares their fields), or None: not a document, or one with an attribute a ``Document`` does not declare,
    a text that is not a str or annotations that are a tuple (pickled)."""
    if type(value) is not Document:
        return None
    state = value.__dict__
    ref = state.get("text_ref")
    if ref is None:
        text = state.get("text")
        if type(text) is not str or state.keys() != _ALL_NAMES:
            return None
    else:
        text = None  # travels by reference, as Document.__getstate__ leaves it out
        if not _SPILLED_NAMES <= state.keys() <= _ALL_NAMES:
            return None
    annotations = state["annotations"]
    if type(annotations) is dict:
        if rows.annotations is not None:
            annotations = rows.annotations.encode(annotations)
    elif type(annotations) is tuple:  # a row is a tuple: one it would be mistaken for is pickled
        return None
    return (state["id"], text, state["source"], state["metadata"], annotations, ref, state["origin"],
            state.get("text_chars"))


def _removed_fields_of(value: Any, rows: Rows) -> tuple | None:
    """A ``Removed``'s fields: its document's fields, stage, reason and details (a row where ``rows`` declares
    their fields); None when it is no ``Removed`` written so (``_fields_of``)."""
    if type(value) is not Removed:
        return None
    state = value.__dict__
    if tuple(state) != _REMOVED_NAMES:
        return None
    doc = _fields_of(state["doc"], rows)
    details = state["details"]
    if doc is None:
        return None
    if type(details) is dict:
        if rows.details is not None:
            details = rows.details.encode(details)
    elif type(details) is tuple:
        return None
    return doc, state["stage"], state["reason"], details


def _row_of(row, label: str):
    """The coder's ``Row`` for a row it is given; a coder that holds none did not write it."""
    if row is None:
        raise ValueError(f"a row of {label} reached a coder that holds no declared {label} fields: it was encoded "
                         "by another build's coder")
    return row


def _removed(fields: tuple, rows: Rows) -> Removed:
    doc, stage, reason, details = fields
    removed = object.__new__(Removed)
    removed.__dict__ = {"doc": _document(doc, rows), "stage": stage, "reason": reason,
                        "details": _row_of(rows.details, "details").decode(details) if type(details) is tuple else details}
    return removed


def _estimate(doc) -> int | None:
    """About the bytes of a document's fields (its id's and text's lengths), or None: not a ``Document``. Read
    from its attributes, not from ``_fields_of``'s tuple (a sampled size is a metric Beam keeps for itself: ~7
    samples a document in a normalize + dedup build); a spilled document's text is not in memory and not
    counted, as it is not written."""
    if type(doc) is not Document:
        return None
    state = doc.__dict__
    doc_id, text = state.get("id"), state.get("text") if state.get("text_ref") is None else None
    return 64 + (len(doc_id) if type(doc_id) is str else 0) + (len(text) if type(text) is str else 0)


def _document(fields: tuple, rows: Rows) -> Document:
    doc_id, text, source, metadata, annotations, ref, origin, chars = fields
    if type(annotations) is tuple:
        annotations = _row_of(rows.annotations, "annotations").decode(annotations)
    doc = object.__new__(Document)
    if ref is None:
        doc.__dict__ = {"id": doc_id, "text": text, "source": source, "metadata": metadata,
                        "annotations": annotations, "text_ref": None, "origin": origin, "text_chars": chars}
    else:
        doc.__dict__ = {"id": doc_id, "source": source, "metadata": metadata, "annotations": annotations,
                        "text_ref": ref, "origin": origin, "text_chars": chars}
    return doc


def _batch_estimate(batch: list) -> int | None:
    """About the bytes of a list of documents (or of ``(document, value)`` pairs: 16 bytes a value), from its
    first ``SAMPLE_HEAD`` members' ``_estimate``, scaled; None when one of those is neither."""
    head = batch[:SAMPLE_HEAD]
    sizes = []
    for member in head:
        pair = type(member) is tuple and len(member) == 2
        size = _estimate(member[0] if pair else member)
        if size is None:
            return None
        sizes.append(size + 16 if pair else size)
    return 8 + sum(sizes) * len(batch) // max(1, len(head))


# Zero bytes of each power of two, for ``_count``: a counting stream adds their length and copies nothing.
_ZEROS: dict[int, bytes] = {}


_ZEROS_HELD = 1 << 20  # the largest held: a batch's estimate (tens of MB) is counted in such pieces, not held whole


def _count(stream, size: int) -> None:
    """Add about ``size`` bytes (within 1/8) to a ``ByteCountingOutputStream``."""
    if size > _ZEROS_HELD:
        zeros = _ZEROS.get(_ZEROS_HELD) or _ZEROS.setdefault(_ZEROS_HELD, bytes(_ZEROS_HELD))
        for _ in range(size // _ZEROS_HELD):
            stream.write(zeros)
        size %= _ZEROS_HELD
    for _ in range(3):
        if size <= 0:
            return
        power = 1 << (size.bit_length() - 1)
        zeros = _ZEROS.get(power)
        if zeros is None:
            zeros = _ZEROS[power] = bytes(power)
        stream.write(zeros)
        size -= power


class _DocumentOrPickleImpl(coder_impl.StreamCoderImpl):
    """``_DocumentOrPickle``'s bytes, written and read on Beam's streams without the copies and the Python
    layer of ``CallbackCoderImpl`` (the fields are decoded in place, not sliced out first). On Beam's
    ``ByteCountingOutputStream`` (the size it samples from each step's first outputs, and then ~10/N of
    them, for a metric of its own that the build never reads) a document's size is estimated from its text's
    length instead of encoded: each sample of a list of ``DOC_BATCH`` documents encoded them all, ~7 encodings
    per document in a 3,000-document build."""

    def __init__(self, rows: Rows = _NO_ROWS):
        self.fields = coders.FastPrimitivesCoder().get_impl()  # its own fallback: PickleCoder
        self.rows = rows

    def encode_to_stream(self, value, stream, nested):
        kind = type(value)
        if kind is Documents or kind is DocumentPairs:
            if type(stream) is ByteCountingOutputStream:  # the first SAMPLE_HEAD documents' sizes, scaled
                size = _batch_estimate(value)
                if size is not None:
                    _count(stream, size)
                    return
            if kind is Documents:
                columns = _columns_of(value, self.rows)
                tag = 2 if columns is not None else 3  # _COLUMNS, _LIST
            else:
                columns = _pair_columns_of(value, self.rows)
                tag = 5 if columns is not None else 6  # _PAIR_COLUMNS, _PAIR_LIST
            try:
                body = self.fields.encode(columns if columns is not None else list(value))
            except UnicodeEncodeError:  # a lone surrogate: pickle keeps it
                pass
            else:
                if nested:
                    stream.write_var_int64(len(body) + 1)
                stream.write_byte(tag)
                stream.write(body)
                return
        else:
            if type(stream) is ByteCountingOutputStream:  # a sampled size: estimated from the text's length
                size = _estimate(value.doc if type(value) is Removed else value)
                if size is not None:
                    _count(stream, size)
                    return
            fields, tag = _fields_of(value, self.rows), 1  # _FIELDS
            if fields is None:
                fields, tag = _removed_fields_of(value, self.rows), 4  # _REMOVED
            if fields is not None:
                try:
                    body = self.fields.encode(fields)
                except UnicodeEncodeError:  # a lone surrogate (str.encode refuses it): pickle keeps it
                    pass
                else:
                    if nested:
                        stream.write_var_int64(len(body) + 1)
                    stream.write_byte(tag)
                    stream.write(body)
                    return
        body = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
        if nested:
            stream.write_var_int64(len(body) + 1)
        stream.write_byte(0)  # _PICKLED
        stream.write(body)

    def decode_from_stream(self, stream, nested):
        size = stream.read_var_int64() - 1 if nested else None
        tag = stream.read_byte()
        if tag == 1:  # the fields tuple delimits itself: read in place
            return _document(self.fields.decode_from_stream(stream, False), self.rows)
        if tag == 4:  # _REMOVED: likewise
            return _removed(self.fields.decode_from_stream(stream, False), self.rows)
        if tag == 2:  # _COLUMNS: likewise the columns tuple
            return _documents(self.fields.decode_from_stream(stream, False), self.rows)
        if tag == 3:  # _LIST
            return Documents(self.fields.decode_from_stream(stream, False))
        if tag == 5:  # _PAIR_COLUMNS: likewise
            return _pairs(self.fields.decode_from_stream(stream, False), self.rows)
        if tag == 6:  # _PAIR_LIST
            return DocumentPairs(self.fields.decode_from_stream(stream, False))
        return pickle.loads(stream.read(size) if nested else stream.read_all(False))

    def encode(self, value):
        out = coder_impl.create_OutputStream()
        self.encode_to_stream(value, out, False)
        return out.get()

    def decode(self, encoded):
        return self.decode_from_stream(coder_impl.create_InputStream(encoded), False)


class _DocumentFallbackCoder(coders.PickleCoder):
    """``PickleCoder`` but for documents (``_DocumentOrPickleImpl``); the fallback of ``DocumentCoder``."""

    def __init__(self, rows: Rows | None = None):
        self.rows = rows or _NO_ROWS

    def _create_impl(self):
        return _DocumentOrPickleImpl(self.rows)

    def as_deterministic_coder(self, step_label, error_message=None):
        return coders.PickleCoder().as_deterministic_coder(step_label, error_message)

    def to_type_hint(self):
        return Any


class _DocumentFallbackCoderReference(_DocumentFallbackCoder):
    """The same bytes through ``CallbackCoderImpl`` and ``_DocumentOrPickle`` (what ``DocumentCoder`` used
    before): tests hold the two equal."""

    def _create_impl(self):
        codec = _DocumentOrPickle(self.rows)
        return coder_impl.CallbackCoderImpl(codec.encode, codec.decode)


# A sampled list longer than this is estimated from its first SAMPLE_HEAD elements.
SAMPLE_HEAD = 8


class _FastPrimitivesSampledImpl(coder_impl.FastPrimitivesCoderImpl):
    """``FastPrimitivesCoderImpl`` (compiled encoding and decoding, untouched) whose size estimate of a long
    list (Beam samples each step's outputs for a metric of its own: the lists of ``DOC_BATCH`` documents of
    the side-input joins and of ``WriteShards``) scales its first ``SAMPLE_HEAD`` elements' instead of
    visiting every element."""

    def get_estimated_size_and_observables(self, value, nested=False):
        # A document, a removal or a batch of documents: estimated here (``_estimate``), not through the compiled
        # encoder's call of the fallback on a counting stream and ``_count``'s writes (~3x the time).
        kind = type(value)
        if kind is Document or kind is Removed:
            size = _estimate(value if kind is Document else value.doc)
            if size is not None:
                return size, []
        elif kind is Documents or kind is DocumentPairs or (kind is list and value and type(value[0]) is Document):
            size = _batch_estimate(value)
            if size is not None:
                return size, []
        if kind is list and len(value) > SAMPLE_HEAD:
            size, observables = super().get_estimated_size_and_observables(value[:SAMPLE_HEAD], nested)
            if not observables:
                return size * len(value) // SAMPLE_HEAD, observables
        return super().get_estimated_size_and_observables(value, nested)


class DocumentCoder(coders.FastPrimitivesCoder):
    """``FastPrimitivesCoder`` whose fallback writes documents as their fields (see the module's docstring);
    ``rows``: the build's declared annotation and detail fields (``annotation_rows.Rows``), written as rows."""

    def __init__(self, fallback_coder=None, rows: Rows | None = None):
        super().__init__(fallback_coder or _DocumentFallbackCoder(rows))

    def _create_impl(self):
        return _FastPrimitivesSampledImpl(self._fallback_coder.get_impl())

    def as_deterministic_coder(self, step_label, error_message=None):
        # Keys: Beam's own deterministic coder, the same bytes (and so the same grouping) as without this coder.
        return coders.FastPrimitivesCoder().as_deterministic_coder(step_label, error_message)

    @classmethod
    def from_type_hint(cls, typehint, registry):
        return cls(rows=_current_rows())


class _UntypedAsDocuments:
    """A registry fallback: ``DocumentCoder`` wherever Beam's default fallback would give ``FastPrimitivesCoder``
    (an untyped PCollection); any other coder it would give (protobuf messages) unchanged."""

    def __init__(self, default):
        self.default = default

    def from_type_hint(self, typehint, registry):
        coder = self.default.from_type_hint(typehint, registry)
        return DocumentCoder(rows=_current_rows()) if type(coder) is coders.FastPrimitivesCoder else coder


_lock = threading.Lock()
_active = 0
_saved = None
_local = threading.local()  # .rows: the stack of this thread's open blocks' Rows


def _current_rows() -> Rows:
    stack = getattr(_local, "rows", None)
    return stack[-1] if stack else _NO_ROWS


@contextlib.contextmanager
def document_coders(rows: Rows | None = None) -> Iterator[None]:
    """Within the block, untyped PCollections of pipelines constructed and run get ``DocumentCoder``
    (builds may nest or run on threads: the registry is restored when the last block ends). ``rows``: the
    build's declared fields (``Rows.of_schemas(build.shard_schemas(config))``), which the coders constructed on
    this thread inside the block write annotations and details as."""
    global _active, _saved
    registry = typecoders.registry
    with _lock:
        if _active == 0 and hasattr(registry, "_fallback_coder"):  # a Beam without it: documents are pickled
            _saved = registry._fallback_coder
            registry._fallback_coder = _UntypedAsDocuments(_saved)
        _active += 1
    stack = _local.__dict__.setdefault("rows", [])
    stack.append(rows or _NO_ROWS)
    try:
        yield
    finally:
        stack.pop()
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                registry._fallback_coder, _saved = _saved, None


typecoders.registry.register_coder(Document, DocumentCoder)
