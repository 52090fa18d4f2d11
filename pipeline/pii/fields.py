"""PII in what surrounds a document's text: its id, its metadata, and the ids a removal's details name.

Ids (``pii.id_action: hash``): each entity found in an id becomes the hash action's placeholder with
``ID_HASH_CHARS`` hex digits, whatever the text's action, because a typed placeholder would turn
``jane@example.org#1`` and ``bob@example.org#1`` into the same id. Hashing keeps ids unique and
deterministic for a salt, and maps an id the same way wherever it appears, so a duplicate's
``survivor_id`` in removed/ still names its survivor in clean/. An id without PII is left as it is.

Metadata (``pii.metadata_action``, per top-level key ``pii.metadata_fields``): ``scrub`` replaces the
entities in every string value (nested ones too) as in the text, ``hash`` replaces every scalar value by its
salted hash (for fields such as a user name, which no pattern recognizer finds), ``keep`` leaves it.

Every value, whatever its type, goes through one walk (``FieldScrubber._walk``): containers of every kind
(dict, list, tuple, set, frozenset) rebuilt with their strings scrubbed at any depth, numbers, booleans and None
as they are (metadata numbers aside: ``_number``), and nothing raises on what a stage or a reader can hold.
"""
from __future__ import annotations

from typing import Any, Callable

from corpusforge.pipeline.document import Document
from corpusforge.pipeline.pii.scrubber import Scrubber, resolve_overlaps, value_of

_STR_LIKE = (str, bytes, bytearray)
# 10**64: integers this large or larger hold no pattern entity (``FieldScrubber._number``).
MAX_ENTITY_DIGITS = 64
_BIG = 10 ** MAX_ENTITY_DIGITS
# 128 bits: two different values never share a hash in any corpus, so hashed ids stay unique.
ID_HASH_CHARS = 32
# Details of a removal that hold a document id (dedup's survivor), mapped like the ids themselves.
ID_DETAILS = ("survivor_id", "survivor", "duplicate_of", "kept_id")


def _scrub_str(value: str | bytes | bytearray, scrub: Callable[[str], str]) -> Any:
    """``scrub`` of a string, of a str subclass's plain text, or of bytes read as UTF-8 (bytes that are not stay
    as they were, through ``surrogateescape``); the value itself when nothing changed, so its type stays."""
    if type(value) is str:
        return scrub(value)
    if isinstance(value, str):
        plain = str.__str__(value)
        out = scrub(plain)
        return value if out == plain else out
    plain = bytes(value).decode("utf-8", "surrogateescape")
    out = scrub(plain)
    if out == plain:
        return value
    encoded = out.encode("utf-8", "surrogateescape")
    return bytearray(encoded) if isinstance(value, bytearray) else encoded


def _decimal(value: int) -> str:
    """``str(value)`` for any int, also past ``sys.get_int_max_str_digits()`` digits (where ``str`` raises)."""
    try:
        return int.__repr__(value)
    except ValueError:
        sign, value = ("-", -value) if value < 0 else ("", value)
        chunks = []
        while value:
            value, chunk = divmod(value, 10 ** 1000)
            chunks.append(chunk)
        return sign + int.__repr__(chunks[-1]) + "".join(f"{c:01000d}" for c in reversed(chunks[:-1]))


def _as_text(value: Any) -> str:
    """The text the hash action hashes: a string's, a number's decimal text (``str`` of it), else ``str``."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return _decimal(value)
    if isinstance(value, float):
        return float.__repr__(value)
    return str(value)


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
        if type(value) is not str:  # a str subclass as its plain text; anything else walked as details are
            if isinstance(value, str):
                return _scrub_str(value, self.id)
            return self._walk(value, self._id_leaf, None, self._key)
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

    # ------------------------------------------------------------------------------------ values
    # One walk for every value around a text (metadata, removal details, a rejected record's detail): containers
    # are rebuilt as their base type (dict, list, tuple, set, frozenset), dict keys mapped by ``key_of``, and
    # every other value handed to a ``leaf``: strings (and str subclasses, bytes) scrubbed, numbers, booleans,
    # None and anything else passed as the leaf says. A container type the walk did not know used to be a leaf:
    # a tuple's strings (a Parquet map column reads as a list of (key, value) tuples) went out unscrubbed.
    def _walk(self, value: Any, leaf: Callable[[Any, Any], Any], key: Any, key_of: Callable[[Any], Any]) -> Any:
        if isinstance(value, dict):
            return {key_of(k): self._walk(v, leaf, k, key_of) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            items = [self._walk(v, leaf, key, key_of) for v in value]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, (set, frozenset)):
            items = [self._walk(v, leaf, key, key_of) for v in value]
            return frozenset(items) if isinstance(value, frozenset) else set(items)
        return leaf(value, key)

    def _text_leaf(self, value: Any, key: Any = None) -> Any:
        """A string (or bytes) scrubbed as text; any other value as it is."""
        return _scrub_str(value, self.text) if isinstance(value, _STR_LIKE) else value

    def _id_leaf(self, value: Any, key: Any = None) -> Any:
        return self.id(value) if isinstance(value, str) else self._text_leaf(value)

    def _metadata_leaf(self, value: Any, key: Any) -> Any:
        if isinstance(value, _STR_LIKE):
            return _scrub_str(value, self.text)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return self._number(value, key)
        return value  # None, booleans, what a reader never gives (a date): as it is

    def _hash_leaf(self, value: Any, key: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value
        return self.scrubber.digest(_as_text(value), ID_HASH_CHARS)

    def _key(self, key: Any) -> Any:
        # A key can be personal data too ({"jane@example.org": 3}); hashed like an id, so keys stay distinct. A
        # tuple (or frozenset) key is walked, its strings hashed alike; any other key stays as it is.
        if isinstance(key, _STR_LIKE):
            return _scrub_str(key, self._hash_entities)
        if isinstance(key, (tuple, frozenset)):
            return self._walk(key, lambda value, _: self._key(value), None, self._key)
        return key

    def metadata(self, metadata: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(metadata, dict):
            return self.metadata({None: metadata})[None]
        out = {}
        for key, value in metadata.items():
            action = self.config.metadata_action_for(key)
            if action == "keep":
                out[key] = value
            else:
                out[self._key(key)] = self._walk(value, self._hash_leaf if action == "hash" else self._metadata_leaf,
                                                 key, self._key)
        return out

    def _number(self, value: int | float, key: Any) -> Any:
        """A number (a phone or card stored as an integer) scrubbed as its decimal text, read after its key as
        a cue (``phone: 2025550173``: a bare digit run is a phone only after a cue word). It stays a number
        unless an entity is found in it; then it becomes the scrubbed text (``"<PHONE>"``).

        An integer of more than ``MAX_ENTITY_DIGITS`` digits stays as it is without a look (with no NER model):
        its digits are one run after ": " (or "-"), every pattern recognizer needs a digit run to end where its
        match ends (``_NUM_AFTER``, ``(?![\\w])``, the phone rules' boundary), and none matches more than 35
        digits in one run (phone 15, card 19, SSN 9, a base58 address 35). Its decimal text could not even be
        made past ``sys.get_int_max_str_digits()`` digits (4,300: ``str`` raises)."""
        if isinstance(value, int):
            if -_BIG < value < _BIG or self.scrubber.ner_entities:
                digits = _decimal(value)
            else:
                return value
        else:
            digits = float.__repr__(value)
        cue = f"{str.__str__(key)}: " if isinstance(key, str) and len(key) <= 64 else ""
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
        """A removal's details: ids as ids (strings at any depth under an ``ID_DETAILS`` key), any other string
        scrubbed as text, nested ones too, in any container, and nested keys as metadata keys are. Numbers,
        booleans and None stay as they are, with their type: a stage puts in its details what it measured (a
        count, a fraction, a score, a similarity), never a document's data, and scrubbing each as text read
        after its key cost ~20 us a number: ~1 ms for the ~50 values of a quality removal."""
        if not isinstance(details, dict):
            return self.value(details)
        return {key: self._walk(value, self._id_leaf if key in ID_DETAILS else self._text_leaf, key, self._detail_key)
                for key, value in details.items()}

    def value(self, value: Any) -> Any:
        """Any value as a removal's details hold it (``details``): strings scrubbed as text at any depth, keys
        as metadata keys, everything else as it is."""
        return self._walk(value, self._text_leaf, None, self._detail_key)

    def _detail_key(self, key: Any) -> Any:
        """A key of a removal's details scrubbed as metadata keys are (``_key``); every removal of a stage has the
        same few dozen (the quality values' names), so each is scrubbed once. Only str keys are cached (``_key``
        leaves any other as it is): ``True``, ``1`` and ``1.0`` are one dict key, and would come back as each other."""
        if type(key) is not str:
            return self._key(key)
        scrubbed = self._detail_keys.get(key)
        if scrubbed is None:
            scrubbed = self._key(key)
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
    clear and two names stay two names. Detection reads each component without its file extensions, as it is
    and with ``_`` as a space (``export_jane@example.org_2024.jsonl``), the longer of overlapping finds kept: ``_``
    is also a character of an address (``jane_doe@example.org.jsonl``, whose ``jane`` the second reading alone
    left in clear). Picklable: the scrubber is built on first use."""

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
        find = self._fields.scrubber.find
        results = resolve_overlaps(find(stem) + (find(view) if view != stem and view.strip() else [])) \
            if stem.strip() else []
        if not results:
            return part
        pieces, at = [], 0
        for r in results:
            pieces += [stem[at:r.start], self._fields.scrubber.hashed(r.entity_type, value_of(r, view), ID_HASH_CHARS)]
            at = r.end
        return "".join(pieces) + part[at:]
