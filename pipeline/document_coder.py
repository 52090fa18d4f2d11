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
``RECORD_BATCH`` lists): 5.8 us per ~2.2 KB document to encode and decode, against 6.6 as a plain list and 7.4
one by one, and 11.2 as an Arrow IPC record batch, whose metadata and annotations (values of any shape) must first
be written as JSON strings and parsed back (``bench/coder.py``, batches of 256). What is left is mostly the text's
UTF-8 encoding and decoding, which any coding of ``str`` texts pays. A batch holding anything its
columns cannot hold (a document ``_fields_of`` refuses, another value) is written as a list would be.

``document_coders()`` makes it the coder of every untyped PCollection (Beam's registry fallback) while a build
constructs and runs its pipeline; ``Document`` is registered with it for PCollections typed as documents.
"""
from __future__ import annotations

import contextlib
import pickle
import threading
from typing import Any, Iterator

from apache_beam import coders
from apache_beam.coders import coder_impl, typecoders
from apache_beam.coders.coder_impl import ByteCountingOutputStream

from corpusforge.pipeline.document import Document

_PICKLED, _FIELDS, _COLUMNS, _LIST = b"\x00", b"\x01", b"\x02", b"\x03"
# A document's attributes, in the order the fields tuple holds them (text None when it travels by reference).
_NAMES = ("id", "text", "source", "metadata", "annotations", "text_ref", "origin")
_SPILLED_NAMES = frozenset(_NAMES) - {"text"}
_ALL_NAMES = frozenset(_NAMES)


class Documents(list):
    """A batch of documents that crosses fused steps as one element, coded as columns (see the module's
    docstring). Anything that takes a list takes it."""

    __slots__ = ()


def _columns_of(batch: Documents) -> tuple | None:
    """The batch as a tuple of columns (each a tuple, one value per document), or None when a member cannot be
    written as fields (``_fields_of``)."""
    rows = []
    for doc in batch:
        fields = _fields_of(doc)
        if fields is None:
            return None
        rows.append(fields)
    return tuple(zip(*rows)) if rows else ()


def _documents(columns: tuple) -> Documents:
    return Documents(map(_document, zip(*columns))) if columns else Documents()


class _DocumentOrPickle:
    """The reference encoder and decoder (bytes <-> value): documents as tagged field tuples, the rest pickled.
    ``_DocumentOrPickleImpl`` writes and reads the same bytes straight on Beam's streams."""

    def __init__(self):
        self.fields = coders.FastPrimitivesCoder().get_impl()  # its own fallback: PickleCoder

    def encode(self, value: Any) -> bytes:
        if type(value) is Documents:
            columns = _columns_of(value)
            try:
                return _COLUMNS + self.fields.encode(columns) if columns is not None else _LIST + self.fields.encode(list(value))
            except UnicodeEncodeError:
                pass
        else:
            fields = _fields_of(value)
            if fields is not None:
                try:
                    return _FIELDS + self.fields.encode(fields)
                except UnicodeEncodeError:  # a lone surrogate (str.encode refuses it): pickle keeps it
                    pass
        return _PICKLED + pickle.dumps(value, pickle.HIGHEST_PROTOCOL)

    def decode(self, encoded: bytes) -> Any:
        tag = encoded[:1]
        if tag == _FIELDS:
            return _document(self.fields.decode(encoded[1:]))
        if tag == _COLUMNS:
            return _documents(self.fields.decode(encoded[1:]))
        if tag == _LIST:
            return Documents(self.fields.decode(encoded[1:]))
        return pickle.loads(memoryview(encoded)[1:])


def _fields_of(value: Any) -> tuple | None:
    """A ``Document``'s fields tuple (text None when it travels by reference), or None: not a document, or one
    with an attribute a ``Document`` does not declare or a text that is not a str (pickled)."""
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
    return state["id"], text, state["source"], state["metadata"], state["annotations"], ref, state["origin"]


def _estimate(doc) -> int | None:
    """About the bytes of a document's fields (its text's length), or None: not one written as fields."""
    fields = _fields_of(doc)
    if fields is None:
        return None
    text = fields[1]
    return 64 + len(fields[0]) + (len(text) if text is not None else 0)


def _document(fields: tuple) -> Document:
    doc_id, text, source, metadata, annotations, ref, origin = fields
    doc = object.__new__(Document)
    if ref is None:
        doc.__dict__ = {"id": doc_id, "text": text, "source": source, "metadata": metadata,
                        "annotations": annotations, "text_ref": None, "origin": origin}
    else:
        doc.__dict__ = {"id": doc_id, "source": source, "metadata": metadata, "annotations": annotations,
                        "text_ref": ref, "origin": origin}
    return doc


# Zero bytes of each power of two, for ``_count``: a counting stream adds their length and copies nothing.
_ZEROS: dict[int, bytes] = {}


def _count(stream, size: int) -> None:
    """Add about ``size`` bytes (within 1/8) to a ``ByteCountingOutputStream``."""
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

    def __init__(self):
        self.fields = coders.FastPrimitivesCoder().get_impl()  # its own fallback: PickleCoder

    def encode_to_stream(self, value, stream, nested):
        if type(value) is Documents:
            if type(stream) is ByteCountingOutputStream:  # the first SAMPLE_HEAD documents' sizes, scaled
                head = value[:SAMPLE_HEAD]
                sizes = [_estimate(doc) for doc in head]
                if None not in sizes:
                    _count(stream, 8 + sum(sizes) * len(value) // max(1, len(head)))
                    return
            columns = _columns_of(value)
            tag = 2 if columns is not None else 3  # _COLUMNS, _LIST
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
            fields = _fields_of(value)
            if fields is not None:
                if type(stream) is ByteCountingOutputStream:
                    text = fields[1]
                    _count(stream, 64 + len(fields[0]) + (len(text) if text is not None else 0))
                    return
                try:
                    body = self.fields.encode(fields)
                except UnicodeEncodeError:  # a lone surrogate (str.encode refuses it): pickle keeps it
                    pass
                else:
                    if nested:
                        stream.write_var_int64(len(body) + 1)
                    stream.write_byte(1)  # _FIELDS
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
            return _document(self.fields.decode_from_stream(stream, False))
        if tag == 2:  # _COLUMNS: likewise the columns tuple
            return _documents(self.fields.decode_from_stream(stream, False))
        if tag == 3:  # _LIST
            return Documents(self.fields.decode_from_stream(stream, False))
        return pickle.loads(stream.read(size) if nested else stream.read_all(False))

    def encode(self, value):
        out = coder_impl.create_OutputStream()
        self.encode_to_stream(value, out, False)
        return out.get()

    def decode(self, encoded):
        return self.decode_from_stream(coder_impl.create_InputStream(encoded), False)


class _DocumentFallbackCoder(coders.PickleCoder):
    """``PickleCoder`` but for documents (``_DocumentOrPickleImpl``); the fallback of ``DocumentCoder``."""

    def _create_impl(self):
        return _DocumentOrPickleImpl()

    def as_deterministic_coder(self, step_label, error_message=None):
        return coders.PickleCoder().as_deterministic_coder(step_label, error_message)

    def to_type_hint(self):
        return Any


class _DocumentFallbackCoderReference(_DocumentFallbackCoder):
    """The same bytes through ``CallbackCoderImpl`` and ``_DocumentOrPickle`` (what ``DocumentCoder`` used
    before): tests hold the two equal."""

    def _create_impl(self):
        codec = _DocumentOrPickle()
        return coder_impl.CallbackCoderImpl(codec.encode, codec.decode)


# A sampled list longer than this is estimated from its first SAMPLE_HEAD elements.
SAMPLE_HEAD = 8


class _FastPrimitivesSampledImpl(coder_impl.FastPrimitivesCoderImpl):
    """``FastPrimitivesCoderImpl`` (compiled encoding and decoding, untouched) whose size estimate of a long
    list (Beam samples each step's outputs for a metric of its own: the lists of ``DOC_BATCH`` documents of
    the side-input joins and of ``WriteShards``) scales its first ``SAMPLE_HEAD`` elements' instead of
    visiting every element."""

    def get_estimated_size_and_observables(self, value, nested=False):
        if type(value) is list and len(value) > SAMPLE_HEAD:
            size, observables = super().get_estimated_size_and_observables(value[:SAMPLE_HEAD], nested)
            if not observables:
                return size * len(value) // SAMPLE_HEAD, observables
        return super().get_estimated_size_and_observables(value, nested)


class DocumentCoder(coders.FastPrimitivesCoder):
    """``FastPrimitivesCoder`` whose fallback writes documents as their fields (see the module's docstring)."""

    def __init__(self, fallback_coder=None):
        super().__init__(fallback_coder or _DocumentFallbackCoder())

    def _create_impl(self):
        return _FastPrimitivesSampledImpl(self._fallback_coder.get_impl())

    def as_deterministic_coder(self, step_label, error_message=None):
        # Keys: Beam's own deterministic coder, the same bytes (and so the same grouping) as without this coder.
        return coders.FastPrimitivesCoder().as_deterministic_coder(step_label, error_message)

    @classmethod
    def from_type_hint(cls, typehint, registry):
        return cls()


class _UntypedAsDocuments:
    """A registry fallback: ``DocumentCoder`` wherever Beam's default fallback would give ``FastPrimitivesCoder``
    (an untyped PCollection); any other coder it would give (protobuf messages) unchanged."""

    def __init__(self, default):
        self.default = default

    def from_type_hint(self, typehint, registry):
        coder = self.default.from_type_hint(typehint, registry)
        return DocumentCoder() if type(coder) is coders.FastPrimitivesCoder else coder


_lock = threading.Lock()
_active = 0
_saved = None


@contextlib.contextmanager
def document_coders() -> Iterator[None]:
    """Within the block, untyped PCollections of pipelines constructed and run get ``DocumentCoder``
    (builds may nest or run on threads: the registry is restored when the last block ends)."""
    global _active, _saved
    registry = typecoders.registry
    with _lock:
        if _active == 0 and hasattr(registry, "_fallback_coder"):  # a Beam without it: documents are pickled
            _saved = registry._fallback_coder
            registry._fallback_coder = _UntypedAsDocuments(_saved)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                registry._fallback_coder, _saved = _saved, None


typecoders.registry.register_coder(Document, DocumentCoder)
