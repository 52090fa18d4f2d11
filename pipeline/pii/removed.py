"""PII scrubbing of what a build writes outside clean/: removed documents and previews of rejected records.

A document that the quality or dedup stage removes never reaches the PII stage, so without this step its
raw text, id and metadata would be written to removed/. ``ScrubRemoved`` scrubs them with the PII stage's
own ``Scrubber`` and salt (built once per worker, in ``setup()``), so a hash in removed/ matches the same
value's hash in clean/. It keeps each record's stage, reason and place in the accounting; only text, id,
metadata and the ids in its details change. The PII stage's own removals are scrubbed already and pass
through. ``ScrubRejected`` scrubs the raw preview and the parser's detail of rejected records, and the document id
that a ``stage_error`` record holds in its ``path`` (as an id).

With ``pii.scrub_removed: false`` the texts and previews stay raw (for an audit); ids and metadata follow
``pii.id_action`` / ``pii.metadata_action`` either way, so removed/ and clean/ name documents alike.

A record the scrubber raises on (the very record the PII stage may have rejected as ``stage_error``) must
neither sink the build nor be written in clear: its text, metadata and details are withheld (``WITHHELD``)
and its id hashed whole, counted as ``pii.removed_scrub_failed``. A batch that raises is retried one record
at a time, so only the record that raises is withheld. An error of the environment (``errors.environment_error``:
a ``WorkerError``, Presidio loaded on the first text with a candidate failing to load; a full disk, a denied
permission...) is no record's fault: it fails the run, as it would in ``setup()``.
"""
from __future__ import annotations

import dataclasses

import apache_beam as beam
from apache_beam.metrics import Metrics

from corpusforge.core.errors import environment_error
from corpusforge.core.faults import STAGE_ERROR
from corpusforge.pipeline.document import DETAIL_CHARS, RAW_PREVIEW, Rejected, Removed
from corpusforge.pipeline.pii.config import STAGE, PIIConfig
from corpusforge.pipeline.stage import fixed_batches

WITHHELD = "[withheld: PII scrubbing raised {}]"


class _ScrubRemovedFn(beam.DoFn):
    def __init__(self, config: PIIConfig, salt: str):
        self._config, self._salt = config, salt
        self._scrubbed_docs = Metrics.counter(STAGE, "removed_docs_scrubbed")
        self._entities = Metrics.counter(STAGE, "removed_entities_scrubbed")
        self._failed = Metrics.counter(STAGE, "removed_scrub_failed")

    def setup(self) -> None:
        from corpusforge.pipeline.pii.fields import FieldScrubber
        from corpusforge.pipeline.pii.scrubber import Scrubber

        self._fields = FieldScrubber(Scrubber(self._config, salt=self._salt))

    def process(self, batch: list[Removed]):
        todo = [r for r in batch if r.stage != STAGE]  # the PII stage's removals are scrubbed already
        # a spilled text is read back only to be scrubbed: with scrub_removed off it stays on disk for the writer
        texts = [r.doc.text for r in todo] if self._config.scrub_removed else [None] * len(todo)
        for record, result in zip(todo, self._scrub_texts(texts)):
            try:
                if isinstance(result, Exception):
                    raise result
                yield self._scrubbed(record, result)
            except Exception as exc:  # never in clear, never a failed build (but the machine's trouble fails it)
                if environment_error(exc):
                    raise
                yield self._withheld(record, exc)
        yield from (r for r in batch if r.stage == STAGE)

    def _scrub_texts(self, texts: list[str]) -> list:
        """Each text's ``Scrubbed`` (``None`` with ``scrub_removed`` off), or the exception scrubbing it raised."""
        if not self._config.scrub_removed:
            return [None] * len(texts)
        try:
            return self._fields.scrubber.scrub_batch(texts)
        except Exception as exc:
            if environment_error(exc):
                raise
            return [self._scrub_one(text) for text in texts]

    def _scrub_one(self, text: str):
        try:
            return self._fields.scrubber.scrub(text)
        except Exception as exc:
            if environment_error(exc):
                raise
            return exc

    def _scrubbed(self, record: Removed, result) -> Removed:
        doc = record.doc
        if result is not None and result.spans:
            doc = doc.with_text(result.text)  # drops a spill reference: the build spills the new text
            self._scrubbed_docs.inc()
            self._entities.inc(len(result.spans))
        return dataclasses.replace(record, doc=self._fields.document(doc), details=self._fields.details(record.details))

    def _withheld(self, record: Removed, exc: Exception) -> Removed:
        self._failed.inc()
        doc = record.doc.with_text(WITHHELD.format(type(exc).__name__))
        doc = doc.with_id_metadata(_hashed_whole(self._fields, doc.id), {})
        return dataclasses.replace(record, doc=doc, details={})


def scrubbed_prefix(scrubber, text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text`` scrubbed, scrubbing first and cutting after: ``text`` is
    scrubbed whole (a reader carries ``RAW_CARRIED`` characters, more than the preview), then cut at original
    position ``chars``, moved past an entity that crosses it, so no entity is ever cut in half before it is
    seen (``…name@example-mail``, 13 of 15 card digits)."""
    if not text:
        return text
    result = scrubber.scrub(text)
    pieces, at, cut = [], 0, chars
    for span in result.spans:
        if span.start >= cut:
            break
        pieces += [text[at:span.start], span.replacement]
        at = span.end
        cut = max(cut, span.end)
    pieces.append(text[at:cut])
    return "".join(pieces)[:chars]


def _hashed_whole(fields, doc_id: str) -> str:
    """An id whose scrubbing raised: its source namespace kept, the rest replaced by its salted hash."""
    namespace, slash, rest = doc_id.partition("/")
    return namespace + slash + fields.scrubber.digest(rest or namespace, 32)


class ScrubRemoved(beam.PTransform):
    """``Removed`` records -> the same records with text (when ``config.scrub_removed``), id, metadata and the
    ids in their details scrubbed, with the PII stage's configuration and ``salt``."""

    def __init__(self, config: PIIConfig, salt: str):
        super().__init__()
        self.config, self.salt = config, salt

    def expand(self, removed):
        return (removed
                | "BatchRemoved" >> fixed_batches(self.config.batch_size)
                | "ScrubRemovedBatch" >> beam.ParDo(_ScrubRemovedFn(self.config, self.salt)))


class _ScrubRejectedFn(beam.DoFn):
    def __init__(self, config: PIIConfig, salt: str):
        self._config, self._salt = config, salt
        self._failed = Metrics.counter(STAGE, "rejected_scrub_failed")

    def setup(self) -> None:
        from corpusforge.pipeline.pii.fields import FieldScrubber
        from corpusforge.pipeline.pii.scrubber import Scrubber

        self._fields = FieldScrubber(Scrubber(self._config, salt=self._salt))

    def process(self, record: Rejected):
        if record.reason == STAGE_ERROR:  # its path is the id of a document a stage raised on: an id like any other
            record = dataclasses.replace(record, path=self._id(record.path))
        if not self._config.scrub_removed:  # raw previews kept for an audit; the id above follows id_action
            yield record
            return
        try:
            yield dataclasses.replace(record, raw=self._preview(record.raw, RAW_PREVIEW),
                                      detail=self._preview(record.detail, DETAIL_CHARS))
        except Exception as exc:  # never in clear, never a failed build (but the machine's trouble fails it)
            if environment_error(exc):
                raise
            self._failed.inc()
            # a stage_error's detail holds no text of the record (faults.describe cut it out); a parser's may
            detail = record.detail if record.reason == STAGE_ERROR else WITHHELD.format(type(exc).__name__)
            yield dataclasses.replace(record, raw=WITHHELD.format(type(exc).__name__), detail=detail)

    def _preview(self, value, chars: int):
        """A preview or detail scrubbed before it is cut; one that is not a string walked as removal details are
        (``FieldScrubber.value``: strings in it scrubbed, numbers as they are)."""
        if isinstance(value, str):
            return scrubbed_prefix(self._fields.scrubber, value, chars)
        return self._fields.value(value)

    def _id(self, doc_id: str) -> str:
        try:
            return self._fields.id(doc_id)
        except Exception as exc:  # noqa: BLE001 - hashed whole rather than written in clear, as ScrubRemoved does
            if environment_error(exc):
                raise
            return _hashed_whole(self._fields, doc_id)


class ScrubRejected(beam.PTransform):
    """``Rejected`` records -> the same records with the raw preview and the detail scrubbed (when
    ``config.scrub_removed``) and a ``stage_error``'s document id scrubbed as ids are (always)."""

    def __init__(self, config: PIIConfig, salt: str):
        super().__init__()
        self.config, self.salt = config, salt

    def expand(self, rejected):
        return rejected | "ScrubRejectedRecord" >> beam.ParDo(_ScrubRejectedFn(self.config, self.salt))
