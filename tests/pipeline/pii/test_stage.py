"""PII in a TestPipeline: kept/removed/edits contents, and the opt-in audit file."""
from __future__ import annotations

import glob
import json

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.document import Document, Removed
from corpusforge.pipeline.pii import PII
from corpusforge.pipeline.stage import StageContext
from corpusforge.pipeline.pii.config import PIIConfig

pytest.importorskip("presidio_analyzer")

DOCS = [
    Document("a", "Mail jane.doe@example.org or call +1-202-555-0173.", "s"),
    Document("b", "Python 3.11.7, released 2023-10-02, ISBN 978-3-16-148410-0.", "s"),
    Document("c", "a@example.org b@example.org c@example.org 202-555-0173", "s", metadata={"k": 1}),
    Document("d", "The order was paid with card 4111 1111 1111 1111 from IP 81.2.69.160 and refunded a week "
                  "later to the account IBAN GB82WEST12345698765432, as the customer had asked.", "s"),
]


def _summed(edits):
    return edits | beam.Map(lambda e: ((e[0], e[1]), e[2])) | beam.CombinePerKey(sum)


def _by_entity(**found):
    """pii_entities as the stage annotates it: a count for every entity type the config looks for."""
    return {entity: found.get(entity, 0) for entity in dict.fromkeys(PIIConfig().active_entities)}


def test_scrub_pii_outputs():
    with TestPipeline() as p:
        out = p | beam.Create(DOCS) | PII(PIIConfig(batch_size=2))
        assert_that(out.kept, equal_to([
            Document("a", "Mail <EMAIL> or call <PHONE>.", "s", annotations={"pii_count": 2, "pii_entities": _by_entity(EMAIL_ADDRESS=1, PHONE_NUMBER=1)}),
            Document("b", DOCS[1].text, "s", annotations={"pii_count": 0, "pii_entities": _by_entity()}),
            Document("d", "The order was paid with card <CREDIT_CARD> from IP <IP_ADDRESS> and refunded a week later "
                          "to the account IBAN <IBAN>, as the customer had asked.", "s",
                     annotations={"pii_count": 3, "pii_entities": _by_entity(CREDIT_CARD=1, IP_ADDRESS=1, IBAN_CODE=1)}),
        ]), label="kept")
        assert_that(out.removed, equal_to([
            Removed(Document("c", "<EMAIL> <EMAIL> <EMAIL> <PHONE>", "s", metadata={"k": 1},
                             annotations={"pii_count": 4, "pii_entities": _by_entity(EMAIL_ADDRESS=3, PHONE_NUMBER=1)}),
                    stage="pii", reason="pii_density", details={"density": 0.9444, "entities": 4}),
        ]), label="removed")
        assert_that(_summed(out.edits), equal_to([
            (("pii", "entity_EMAIL_ADDRESS"), 4), (("pii", "entity_PHONE_NUMBER"), 2),
            (("pii", "entity_CREDIT_CARD"), 1), (("pii", "entity_IP_ADDRESS"), 1),
            (("pii", "entity_IBAN_CODE"), 1), (("pii", "docs_changed"), 3),
        ]), label="edits")


def test_audit_file_only_when_asked(tmp_path):
    with TestPipeline() as p:
        _ = p | beam.Create(DOCS[:2]) | PII(PIIConfig(audit_file="audit/pii"), StageContext(run_dir=str(tmp_path)))
    rows = [json.loads(line) for path in glob.glob(str(tmp_path / "audit" / "pii*.jsonl")) for line in open(path)]
    assert sorted(rows, key=lambda r: r["start"]) == [
        {"id": "a", "entity": "EMAIL_ADDRESS", "start": 5, "end": 25, "original": "jane.doe@example.org",
         "replacement": "<EMAIL>"},
        {"id": "a", "entity": "PHONE_NUMBER", "start": 34, "end": 49, "original": "+1-202-555-0173",
         "replacement": "<PHONE>"},
    ]

    with TestPipeline() as p:
        _ = p | beam.Create(DOCS[:2]) | PII(PIIConfig(), StageContext(run_dir=str(tmp_path / "none")))
    assert not (tmp_path / "none").exists()
