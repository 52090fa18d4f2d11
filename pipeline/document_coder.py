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

from corpusforge.pipeline.document import Document

_PICKLED, _FIELDS = b"\x00", b"\x01"
# A document's attributes, in the order the fields tuple holds them (text None when it travels by reference).
_NAMES = ("id", "text", "source", "metadata", "annotations", "text_ref", "origin")
_SPILLED_NAMES = frozenset(_NAMES) - {"text"}
_ALL_NAMES = frozenset(_NAMES)


class _DocumentOrPickle:
    """The fallback's encoder and decoder (bytes <-> value): documents as tagged field tuples, the rest pickled.
    (One method each, the fields read and set inline: they run ~25 times per document in a build.)"""

    def __init__(self):
        self.fields = coders.FastPrimitivesCoder().get_impl()  # its own fallback: PickleCoder

    def encode(self, value: Any) -> bytes:
        if type(value) is Document:
            state = value.__dict__
            ref = state.get("text_ref")
            if ref is None:
                text = state.get("text")
                plain = type(text) is str and state.keys() == _ALL_NAMES
            else:
                text = None  # travels by reference, as Document.__getstate__ leaves it out
                plain = _SPILLED_NAMES <= state.keys() <= _ALL_NAMES
            if plain:  # else an attribute a Document does not declare, or a text that is not a str: pickled
                try:
                    return _FIELDS + self.fields.encode((state["id"], text, state["source"], state["metadata"],
                                                         state["annotations"], ref, state["origin"]))
                except UnicodeEncodeError:  # a lone surrogate (str.encode refuses it): pickle keeps it
                    pass
        return _PICKLED + pickle.dumps(value, pickle.HIGHEST_PROTOCOL)

    def decode(self, encoded: bytes) -> Any:
        if encoded[:1] != _FIELDS:
            return pickle.loads(memoryview(encoded)[1:])
        doc_id, text, source, metadata, annotations, ref, origin = self.fields.decode(encoded[1:])
        doc = object.__new__(Document)
        if ref is None:
            doc.__dict__ = {"id": doc_id, "text": text, "source": source, "metadata": metadata,
                            "annotations": annotations, "text_ref": None, "origin": origin}
        else:
            doc.__dict__ = {"id": doc_id, "source": source, "metadata": metadata, "annotations": annotations,
                            "text_ref": ref, "origin": origin}
        return doc


class _DocumentFallbackCoder(coders.PickleCoder):
    """``PickleCoder`` but for documents (``_DocumentOrPickle``); the fallback of ``DocumentCoder``."""

    def _create_impl(self):
        codec = _DocumentOrPickle()
        return coder_impl.CallbackCoderImpl(codec.encode, codec.decode)

    def as_deterministic_coder(self, step_label, error_message=None):
        return coders.PickleCoder().as_deterministic_coder(step_label, error_message)

    def to_type_hint(self):
        return Any


class DocumentCoder(coders.FastPrimitivesCoder):
    """``FastPrimitivesCoder`` whose fallback writes documents as their fields (see the module's docstring)."""

    def __init__(self, fallback_coder=None):
        super().__init__(fallback_coder or _DocumentFallbackCoder())

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
