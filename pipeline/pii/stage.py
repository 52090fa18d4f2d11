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
import posixpath
import secrets
from collections import Counter

import apache_beam as beam
from apache_beam.metrics import Metrics

from corpusforge.core.errors import UserError
from corpusforge.pipeline.document import Document
from corpusforge.pipeline.pii.config import STAGE, PIIConfig
from corpusforge.pipeline.stage import (EDITS, ERRORS, REMOVED, Stage, StageContext, StageOutputs, edit, fixed_batches,
                                        guarded, removal, split_outputs)

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


def audit_path(audit: str, run_dir: str | None) -> str | None:
    """Where ``pii.audit_file`` is written: inside the run directory (a relative path is relative to it), or a
    ``UserError``. The audit file holds the personal data itself; it never lands beside other people's files."""
    if not audit:
        return None
    if not run_dir:  # the stage used on its own (a library call, a test): the caller's path
        return audit
    remote = "://" in audit or "://" in run_dir
    full = audit if os.path.isabs(audit) or "://" in audit else posixpath.join(run_dir, audit)
    norm = posixpath.normpath if remote else os.path.realpath
    root, target = norm(run_dir).rstrip("/"), norm(full)
    if not target.startswith(root + "/"):
        raise UserError(f"pii.audit_file={audit!r} is outside the run directory {run_dir}: it holds the personal "
                        f"data itself, so give a path inside the run directory (relative to it, e.g. pii_audit/part)")
    return full


def _private(path: str) -> str:
    """A written audit file (and its folder) readable by its owner only: 0600 (0700)."""
    if "://" not in path and os.path.exists(path):
        os.chmod(path, 0o600)
        os.chmod(os.path.dirname(os.path.abspath(path)), 0o700)
    return path


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
        self.audit_path = audit_path(config.audit_file, run_dir)
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
    def name_filter(cls, config: PIIConfig, run_secret: str):
        """File names holding PII are hashed as ids are, with the same salt (pipeline/pii/fields.py)."""
        from corpusforge.pipeline.pii.fields import NameScrubber

        return NameScrubber(config, config.hash_salt or run_secret)

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
    def scrubbed_previews(cls, manifest_section: dict | None) -> bool:
        section = manifest_section or {}
        return manifest_section is not None and section.get("enabled", True) and section.get("scrub_removed", True)

    @classmethod
    def report_sections(cls) -> list:
        from corpusforge.pipeline.pii.report import pii_section

        return [pii_section]

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
            | "BatchDocs" >> fixed_batches(self.config.batch_size)
            | "ScrubDocs" >> beam.ParDo(scrub).with_outputs(*tags, main="kept")
        )
        if self.audit_path:
            _ = (
                tagged[AUDIT]
                | "AuditJson" >> beam.Map(lambda row: json.dumps(row, ensure_ascii=False, sort_keys=True))
                | "WriteAudit" >> beam.io.WriteToText(self.audit_path, file_name_suffix=".jsonl")
                | "AuditPrivate" >> beam.Map(_private)
            )
        return split_outputs(tagged, with_edits=True, with_errors=True)
