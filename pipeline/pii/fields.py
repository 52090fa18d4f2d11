"""PII in what surrounds a document's text: its id, its metadata, and the ids a removal's details name.

Ids (``pii.id_action: hash``): each entity found in an id becomes the hash action's placeholder with
``ID_HASH_CHARS`` hex digits, whatever the text's action, because a typed placeholder would turn
``jane@example.org#1`` and ``bob@example.org#1`` into the same id. Hashing keeps ids unique and
deterministic for a salt, and maps an id the same way wherever it appears, so a duplicate's
``survivor_id`` in removed/ still names its survivor in clean/. An id without PII is left as it is.

Metadata (``pii.metadata_action``, per top-level key ``pii.metadata_fields``): ``scrub`` replaces the
entities in every string value (nested ones too) as in the text, ``hash`` replaces every scalar value by its
salted hash (for fields such as a user name, which no pattern recognizer finds), ``keep`` leaves it.
"""
from __future__ import annotations

from typing import Any

from corpusforge.pipeline.document import Document
from corpusforge.pipeline.pii.scrubber import Scrubber, value_of

# 128 bits: two different values never share a hash in any corpus, so hashed ids stay unique.
ID_HASH_CHARS = 32
# Details of a removal that hold a document id (dedup's survivor), mapped like the ids themselves.
ID_DETAILS = ("survivor_id", "survivor", "duplicate_of", "kept_id")


class FieldScrubber:
    """Scrubs ids, metadata and removal details with a ``Scrubber`` (and its salt); build it in ``setup()``."""

    def __init__(self, scrubber: Scrubber):
        self.scrubber = scrubber
        self.config = scrubber.config

    def id(self, value: str) -> str:
        if self.config.id_action == "keep":
            return value
        # The source namespace (``web/``) is scrubbed apart: '/' is valid in an e-mail's local part, and
        # "web/jane@example.org" would otherwise lose its prefix to the placeholder.
        namespace, slash, rest = value.partition("/")
        return self._hash_entities(namespace) + slash + self._hash_entities(rest)

    def _hash_entities(self, value: str) -> str:
        results = self.scrubber.find(value) if value else []
        if not results:
            return value
        pieces, at = [], 0
        for r in results:
            pieces += [value[at:r.start], self.scrubber.hashed(r.entity_type, value_of(r, value), ID_HASH_CHARS)]
            at = r.end
        return "".join(pieces) + value[at:]

    def text(self, value: str) -> str:
        """``value`` with its entities replaced as the configuration says (a drop entity gets its placeholder)."""
        return self.scrubber.scrub(value).text

    def metadata(self, metadata: dict[str, Any]) -> dict[str, Any]:
        return {self._key(key, self.config.metadata_action_for(key)): self._value(value, self.config.metadata_action_for(key))
                for key, value in metadata.items()}

    def _key(self, key: Any, action: str) -> Any:
        # A key can be personal data too ({"jane@example.org": 3}); hashed like an id, so keys stay distinct.
        return key if action == "keep" or not isinstance(key, str) else self._hash_entities(key)

    def _value(self, value: Any, action: str) -> Any:
        if action == "keep" or value is None or isinstance(value, bool):
            return value
        if isinstance(value, dict):
            return {self._key(k, action): self._value(v, action) for k, v in value.items()}
        if isinstance(value, list):
            return [self._value(v, action) for v in value]
        if action == "hash":
            return self.scrubber.digest(str(value), ID_HASH_CHARS)
        return self.text(value) if isinstance(value, str) else value

    def details(self, details: dict[str, Any]) -> dict[str, Any]:
        """A removal's details: ids as ids, any other string scrubbed as text."""
        return {key: self.id(value) if key in ID_DETAILS and isinstance(value, str) else self._value(value, "scrub")
                for key, value in details.items()}

    def document(self, doc: Document) -> Document:
        """``doc`` with its id and metadata scrubbed (the text is left to the caller)."""
        new_id, metadata = self.id(doc.id), self.metadata(doc.metadata)
        if new_id == doc.id and metadata == doc.metadata:
            return doc
        return doc.with_id_metadata(new_id, metadata)
