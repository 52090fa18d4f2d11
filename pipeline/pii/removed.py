"""PII scrubbing of what a build writes outside clean/: removed documents and previews of rejected records.

A document that the quality or dedup stage removes never reaches the PII stage, so without this step its
raw text, id and metadata would be written to removed/. ``ScrubRemoved`` scrubs them with the PII stage's
own ``Scrubber`` and salt (built once per worker, in ``setup()``), so a hash in removed/ matches the same
value's hash in clean/. It keeps each record's stage, reason and place in the accounting; only text, id,
metadata and the ids in its details change. The PII stage's own removals are scrubbed already and pass
through. ``ScrubRejected`` scrubs the raw preview and the parser's detail of rejected records.

With ``pii.scrub_removed: false`` the texts and previews stay raw (for an audit); ids and metadata follow
``pii.id_action`` / ``pii.metadata_action`` either way, so removed/ and clean/ name documents alike.
"""
from __future__ import annotations

import dataclasses

import apache_beam as beam
from apache_beam.metrics import Metrics

from corpusforge.pipeline.document import Rejected, Removed
from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.stage import STAGE


class _ScrubRemovedFn(beam.DoFn):
    def __init__(self, config: PIIConfig, salt: str):
        self._config, self._salt = config, salt
        self._scrubbed = Metrics.counter(STAGE, "removed_docs_scrubbed")
        self._entities = Metrics.counter(STAGE, "removed_entities_scrubbed")

    def setup(self) -> None:
        from corpusforge.pipeline.pii.fields import FieldScrubber
        from corpusforge.pipeline.pii.scrubber import Scrubber

        self._fields = FieldScrubber(Scrubber(self._config, salt=self._salt))

    def process(self, batch: list[Removed]):
        todo = [r for r in batch if r.stage != STAGE]  # the PII stage's removals are scrubbed already
        if self._config.scrub_removed:
            results = self._fields.scrubber.scrub_batch([r.doc.text for r in todo])
        else:
            results = [None] * len(todo)
        for record, result in zip(todo, results):
            doc = record.doc
            if result is not None and result.spans:
                doc = doc.with_text(result.text)  # drops a spill reference: the build spills the new text
                self._scrubbed.inc()
                self._entities.inc(len(result.spans))
            yield dataclasses.replace(record, doc=self._fields.document(doc), details=self._fields.details(record.details))
        yield from (r for r in batch if r.stage == STAGE)


class ScrubRemoved(beam.PTransform):
    """``Removed`` records -> the same records with text (when ``config.scrub_removed``), id, metadata and the
    ids in their details scrubbed, with the PII stage's configuration and ``salt``."""

    def __init__(self, config: PIIConfig, salt: str):
        super().__init__()
        self.config, self.salt = config, salt

    def expand(self, removed):
        return (removed
                | "BatchRemoved" >> beam.BatchElements(min_batch_size=1, max_batch_size=self.config.batch_size)
                | "ScrubRemovedBatch" >> beam.ParDo(_ScrubRemovedFn(self.config, self.salt)))


class _ScrubRejectedFn(beam.DoFn):
    def __init__(self, config: PIIConfig, salt: str):
        self._config, self._salt = config, salt

    def setup(self) -> None:
        from corpusforge.pipeline.pii.fields import FieldScrubber
        from corpusforge.pipeline.pii.scrubber import Scrubber

        self._fields = FieldScrubber(Scrubber(self._config, salt=self._salt))

    def process(self, record: Rejected):
        yield dataclasses.replace(record, raw=self._fields.text(record.raw), detail=self._fields.text(record.detail))


class ScrubRejected(beam.PTransform):
    """``Rejected`` records -> the same records with the raw preview and the detail scrubbed."""

    def __init__(self, config: PIIConfig, salt: str):
        super().__init__()
        self.config, self.salt = config, salt

    def expand(self, rejected):
        return rejected | "ScrubRejectedRecord" >> beam.ParDo(_ScrubRejectedFn(self.config, self.salt))
