"""The PII stage as a Beam composite transform: ``docs | PII(config)`` -> ``StageOutputs``.

Kept documents carry the scrubbed text, id and metadata (``corpusforge.pipeline.pii.fields``) and a
``pii_count`` annotation. Removed documents (PII density above ``max_density``, or an entity whose action is
``drop``) are scrubbed too; the documents earlier stages removed are scrubbed by ``ScrubRemoved``
(``corpusforge.pipeline.pii.removed``). Edits count entities found per type as ``("pii", "entity_<TYPE>", n)``, plus
``("pii", "docs_changed", n)``. No PII is logged; the span -> placeholder mapping is written only when
``config.audit_file`` is set.
"""
from __future__ import annotations

import json
import os
import secrets
from collections import Counter

import apache_beam as beam
from apache_beam.metrics import Metrics

from corpusforge.pipeline.document import Document
from corpusforge.pipeline.pii.config import STAGE, PIIConfig
from corpusforge.pipeline.stage import (EDITS, ERRORS, REMOVED, Stage, StageContext, StageOutputs, edit, guarded, removal,
                                        split_outputs)

AUDIT = "audit"


class _ScrubBatches(beam.DoFn):
    def __init__(self, config: PIIConfig, salt: str, audit: bool):
        self._config = config
        self._salt = salt
        self._audit = audit
        self._scrubber = None
        self._docs = Metrics.counter(STAGE, "docs_scanned")
        self._changed = Metrics.counter(STAGE, "docs_changed")
        self._entities = Metrics.counter(STAGE, "entities_found")

    def setup(self) -> None:
        from corpusforge.pipeline.pii.fields import FieldScrubber
        from corpusforge.pipeline.pii.scrubber import Scrubber

        self._scrubber = Scrubber(self._config, salt=self._salt)
        self._entities_of = list(dict.fromkeys(self._config.active_entities))
        self._fields = FieldScrubber(self._scrubber)

    def process(self, batch: list[Document]):
        results = self._scrubber.scrub_batch([doc.text for doc in batch])
        counts: Counter = Counter()
        changed = 0
        for doc, result in zip(batch, results):
            counts.update(result.counts)
            changed += bool(result.spans)
            by_entity = {entity: result.counts.get(entity, 0) for entity in self._entities_of}
            out = doc.with_text(result.text).annotate(pii_count=result.pii_count, pii_entities=by_entity) \
                if result.spans else doc.annotate(pii_count=0, pii_entities=by_entity)
            out = self._fields.document(out)
            if self._audit:
                for span in result.spans:
                    yield beam.pvalue.TaggedOutput(AUDIT, {
                        "id": doc.id, "entity": span.entity, "start": span.start, "end": span.end,
                        "original": doc.text[span.start:span.end], "replacement": span.replacement,
                    })
            if result.removal:
                reason, details = result.removal
                yield removal(out, STAGE, reason, **details)
            else:
                yield out
        self._docs.inc(len(batch))
        self._changed.inc(changed)
        self._entities.inc(sum(counts.values()))
        for entity, n in sorted(counts.items()):
            yield edit(STAGE, f"entity_{entity}", n)
        if changed:
            yield edit(STAGE, "docs_changed", changed)


class PII(Stage, section="pii", order=40):
    """Find PII with Presidio and replace, mask or hash it, or remove the document (see ``PIIConfig``).

    ``context.run_dir`` anchors a relative ``config.audit_file``. The hash salt is ``config.hash_salt``, else
    the run's ``context.run_secret`` (drawn once per build, so every stage and worker of one run hashes alike),
    else drawn here (set ``config.hash_salt`` to link hashes across runs).
    """

    def __init__(self, config: PIIConfig | None = None, context: StageContext | None = None,
                 label: str | None = None):
        super().__init__(config or PIIConfig(), context, label)
        config, run_dir = self.config, self.context.run_dir
        self.salt = config.hash_salt or self.context.run_secret or secrets.token_hex(16)
        audit = config.audit_file
        if audit and run_dir and not os.path.isabs(audit) and "://" not in audit:
            audit = os.path.join(run_dir, audit)
        self.audit_path = audit or None
        if config.ner_model:  # fail at construction, not on a worker
            from corpusforge.pipeline.pii.scrubber import check_ner_model

            check_ner_model(config.ner_model)

    @classmethod
    def before_writing(cls, config: PIIConfig, kind: str, run_secret: str) -> beam.PTransform | None:
        """Removed and rejected records are scrubbed with this configuration and the stage's salt, so a value
        hashes alike in removed/, rejected/ and clean/ (pipeline/pii/removed.py)."""
        from corpusforge.pipeline.pii.removed import ScrubRejected, ScrubRemoved

        return {"removed": ScrubRemoved, "rejected": ScrubRejected}[kind](config, config.hash_salt or run_secret)

    @classmethod
    def decides_value(cls, key: str) -> bool:
        return key == "pii_count" or super().decides_value(key)

    @classmethod
    def display_filter(cls, manifest_section: dict | None):
        """The run's PII configuration with every entity replaced by its placeholder (the salt is never written,
        so the page could not reproduce the run's hashes anyway); built on first use: Presidio takes a second
        or two to load."""
        from corpusforge.pipeline.pii.display import display_scrubber

        return display_scrubber(manifest_section)

    @classmethod
    def summary_note(cls, config: PIIConfig) -> str | None:
        from corpusforge.pipeline.pii.entities import coverage

        return coverage(config).summary()

    @classmethod
    def annotation_fields(cls, config: PIIConfig) -> list:
        import pyarrow as pa

        # Counts by entity type, one int64 field per type this configuration looks for.
        entities = pa.struct([pa.field(e, pa.int64()) for e in dict.fromkeys(config.active_entities)])
        return [pa.field("pii_count", pa.int64()), pa.field("pii_entities", entities)]

    def expand(self, docs) -> StageOutputs:
        tags = [REMOVED, EDITS, ERRORS] + ([AUDIT] if self.audit_path else [])
        # A batch that raises is scrubbed again one document at a time, so only the document that raises is
        # rejected (stage_error).
        scrub = guarded(_ScrubBatches(self.config, self.salt, bool(self.audit_path)), STAGE, self.context.fail_fast,
                        batched=True)
        tagged = (
            docs
            | "BatchDocs" >> beam.BatchElements(min_batch_size=1, max_batch_size=self.config.batch_size)
            | "ScrubDocs" >> beam.ParDo(scrub).with_outputs(*tags, main="kept")
        )
        if self.audit_path:
            _ = (
                tagged[AUDIT]
                | "AuditJson" >> beam.Map(lambda row: json.dumps(row, ensure_ascii=False, sort_keys=True))
                | "WriteAudit" >> beam.io.WriteToText(self.audit_path, file_name_suffix=".jsonl")
            )
        return split_outputs(tagged, with_edits=True, with_errors=True)
