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
        self._namespaces: dict[str, str] = {}  # the source namespace of ids, scrubbed: one per source
        self._detail_keys: dict[Any, Any] = {}  # the keys of removal details, scrubbed

    def id(self, value: str) -> str:
        if self.config.id_action == "keep":
            return value
        # The source namespace (``web/``) is scrubbed apart: '/' is valid in an e-mail's local part, and
        # "web/jane@example.org" would otherwise lose its prefix to the placeholder. Every id of a source
        # has the same one: it is scrubbed once.
        namespace, slash, rest = value.partition("/")
        if not slash:
            return self._hash_entities(value)
        scrubbed = self._namespaces.get(namespace)
        if scrubbed is None:
            scrubbed = self._hash_entities(namespace)
            if len(self._namespaces) < 4096:
                self._namespaces[namespace] = scrubbed
        return scrubbed + slash + self._hash_entities(rest)

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
        return {self._key(key, self.config.metadata_action_for(key)):
                self._value(value, self.config.metadata_action_for(key), key)
                for key, value in metadata.items()}

    def _key(self, key: Any, action: str) -> Any:
        # A key can be personal data too ({"jane@example.org": 3}); hashed like an id, so keys stay distinct.
        return key if action == "keep" or not isinstance(key, str) else self._hash_entities(key)

    def _value(self, value: Any, action: str, key: Any = None) -> Any:
        if action == "keep" or value is None or isinstance(value, bool):
            return value
        if isinstance(value, dict):
            return {self._key(k, action): self._value(v, action, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self._value(v, action, key) for v in value]
        if action == "hash":
            return self.scrubber.digest(str(value), ID_HASH_CHARS)
        if isinstance(value, (int, float)):
            return self._number(value, key)
        return self.text(value) if isinstance(value, str) else value

    def _number(self, value: int | float, key: Any) -> Any:
        """A number (a phone or card stored as an integer) scrubbed as its decimal text, read after its key as
        a cue (``phone: 2025550173``: a bare digit run is a phone only after a cue word). It stays a number
        unless an entity is found in it; then it becomes the scrubbed text (``"<PHONE>"``)."""
        digits = repr(value) if isinstance(value, float) else str(value)
        cue = f"{key}: " if isinstance(key, str) and len(key) <= 64 else ""
        result = self.scrubber.scrub(cue + digits)
        spans = [s for s in result.spans if s.end > len(cue)]
        if not spans:
            return value
        pieces, at = [], 0
        for span in spans:
            start = max(span.start - len(cue), 0)
            pieces += [digits[at:start], span.replacement]
            at = span.end - len(cue)
        return "".join(pieces) + digits[at:]

    def details(self, details: dict[str, Any]) -> dict[str, Any]:
        """A removal's details: ids as ids, any other string scrubbed as text, nested ones too, and keys as
        metadata keys are. Numbers and booleans stay as they are: a stage puts in its details what it measured
        (a count, a fraction, a score, a similarity), never a document's data, and scrubbing each as text read
        after its key cost ~20 us a number: ~1 ms for the ~50 values of a quality removal."""
        return {key: self.id(value) if key in ID_DETAILS and isinstance(value, str) else self._detail(value)
                for key, value in details.items()}

    def _detail(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self._detail_key(k): self._detail(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._detail(v) for v in value]
        return value

    def _detail_key(self, key: Any) -> Any:
        """A key of a removal's details scrubbed as metadata keys are (``_key``); every removal of a stage has the
        same few dozen (the quality values' names), so each is scrubbed once. Only str keys are cached (``_key``
        leaves any other as it is): ``True``, ``1`` and ``1.0`` are one dict key, and would come back as each other."""
        if type(key) is not str:
            return self._key(key, "scrub")
        scrubbed = self._detail_keys.get(key)
        if scrubbed is None:
            scrubbed = self._key(key, "scrub")
            if len(self._detail_keys) < 4096:
                self._detail_keys[key] = scrubbed
        return scrubbed

    def document(self, doc: Document) -> Document:
        """``doc`` with its id and metadata scrubbed (the text is left to the caller)."""
        new_id, metadata = self.id(doc.id), self.metadata(doc.metadata)
        if new_id == doc.id and metadata == doc.metadata:
            return doc
        return doc.with_id_metadata(new_id, metadata)


_NAME_EXTENSIONS = (".gz", ".zst", ".bz2", ".xz", ".jsonl", ".json", ".ndjson", ".parquet", ".arrow", ".feather",
                    ".ipc", ".txt", ".text", ".md", ".rst", ".warc", ".html", ".htm", ".xhtml")


class NameScrubber:
    """Input file names as a build writes them (a document's ``source``, a rejected record's ``path``, and so
    stats.json, the dataset card and the report): each entity in a path component hashed as in ids
    (``<EMAIL:…>``, 32 hex digits of the run's salted hash), so ``jane@example.org.jsonl`` is never written in
    clear and two names stay two names. Detection reads each component without its file extensions and with
    ``_`` as a space (``export_jane@example.org_2024.jsonl``). Picklable: the scrubber is built on first use."""

    def __init__(self, config, salt: str):
        self.config, self.salt = config, salt
        self._fields: FieldScrubber | None = None
        self._seen: dict[str, str] = {}

    def __getstate__(self):
        return {"config": self.config, "salt": self.salt}

    def __setstate__(self, state):
        self.__init__(state["config"], state["salt"])

    def __call__(self, name: str) -> str:
        if not name:
            return name
        if name not in self._seen:
            self._seen[name] = "/".join(self._component(part) for part in name.split("/"))
        return self._seen[name]

    def _component(self, part: str) -> str:
        if self._fields is None:
            self._fields = FieldScrubber(Scrubber(self.config, salt=self.salt))
        stem = part
        while stem.lower().endswith(_NAME_EXTENSIONS) and "." in stem[1:]:
            stem = stem[:stem.rindex(".")]
        view = stem.replace("_", " ")
        results = self._fields.scrubber.find(view) if view.strip() else []
        if not results:
            return part
        pieces, at = [], 0
        for r in results:
            pieces += [stem[at:r.start], self._fields.scrubber.hashed(r.entity_type, value_of(r, view), ID_HASH_CHARS)]
            at = r.end
        return "".join(pieces) + part[at:]
