"""ScrubRemoved / ScrubRejected in a TestPipeline: what earlier stages removed is scrubbed, nothing else changes."""
from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.document import Document, Rejected, Removed
from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.fields import FieldScrubber
from corpusforge.pipeline.pii.removed import ScrubRejected, ScrubRemoved
from corpusforge.pipeline.pii.scrubber import Scrubber

pytest.importorskip("presidio_analyzer")

SALT = "a-salt-of-sixteen-chars"
SURVIVOR = "web/jane.doe@example.org"
REMOVED = [
    Removed(Document("web/1", "Too short. Mail jane.doe@example.org", "web", metadata={"tel": "+1-202-555-0173"}),
            "quality", "gopher_short_doc"),
    Removed(Document("web/bob.roe@example.org", "Call +1-202-555-0173 now, a copy.", "web"), "dedup",
            "near_duplicate", {"survivor_id": SURVIVOR, "similarity": 0.9}),
    Removed(Document("web/3", "Nothing personal here.", "web"), "dedup", "exact_duplicate", {"survivor_id": "web/4"}),
    # the PII stage's own removals are scrubbed already: they pass through as they are
    Removed(Document("web/5", "<EMAIL> <EMAIL> <EMAIL>", "web"), "pii", "pii_density", {"density": 0.9}),
]


def _hashed(value):
    return FieldScrubber(Scrubber(PIIConfig(hash_salt=SALT))).id(value)


def test_removed_records_are_scrubbed_and_keep_stage_and_reason():
    survivor, bob = _hashed(SURVIVOR), _hashed("web/bob.roe@example.org")
    with TestPipeline() as p:
        out = p | beam.Create(REMOVED) | ScrubRemoved(PIIConfig(hash_salt=SALT, batch_size=2), SALT)
        assert_that(out, equal_to([
            Removed(Document("web/1", "Too short. Mail <EMAIL>", "web", metadata={"tel": "<PHONE>"}),
                    "quality", "gopher_short_doc"),
            Removed(Document(bob, "Call <PHONE> now, a copy.", "web"), "dedup", "near_duplicate",
                    {"survivor_id": survivor, "similarity": 0.9}),
            REMOVED[2], REMOVED[3],
        ]))


def test_scrub_removed_false_keeps_text_but_not_ids():
    with TestPipeline() as p:
        out = (p | beam.Create(REMOVED[:2])
               | ScrubRemoved(PIIConfig(hash_salt=SALT, scrub_removed=False), SALT)
               | beam.Map(lambda r: (r.doc.id, r.doc.text, r.details.get("survivor_id"))))
        assert_that(out, equal_to([
            ("web/1", REMOVED[0].doc.text, None),
            (_hashed("web/bob.roe@example.org"), REMOVED[1].doc.text, _hashed(SURVIVOR)),
        ]))


def test_a_spilled_removed_text_is_read_scrubbed_and_loses_its_reference(tmp_path):
    from corpusforge.pipeline.spill import SpillText

    def texts(record):
        return record.doc.text, record.doc.text_ref is None

    with TestPipeline() as p:
        out = (p | beam.Create(REMOVED[:1]) | SpillText(str(tmp_path)) | beam.Reshuffle()
               | ScrubRemoved(PIIConfig(hash_salt=SALT), SALT) | beam.Map(texts))
        assert_that(out, equal_to([("Too short. Mail <EMAIL>", True)]))


def test_rejected_previews_and_details_are_scrubbed():
    bad = Rejected("web", "a.jsonl", 3, "malformed_json", "Expecting value", '{"text": "jane.doe@example.org')
    with TestPipeline() as p:
        out = p | beam.Create([bad]) | ScrubRejected(PIIConfig(), SALT)
        assert_that(out, equal_to([Rejected("web", "a.jsonl", 3, "malformed_json", "Expecting value",
                                            '{"text": "<EMAIL>')]))


def test_the_id_a_stage_error_names_is_hashed_like_the_ids_of_clean_and_removed():
    # a stage_error's path is the id of the document the stage raised on (pipeline/stage.py: stage_error)
    error = Rejected("web", "web/mary@example.org", -1, "stage_error", "quality: ValueError: boom", "Hi mary@example.org")
    parsed = Rejected("web", "mary@example.org.jsonl", 3, "malformed_json", "Expecting value", "{")
    with TestPipeline() as p:
        out = p | beam.Create([error, parsed]) | ScrubRejected(PIIConfig(hash_salt=SALT), SALT)
        assert_that(out, equal_to([
            Rejected("web", _hashed("web/mary@example.org"), -1, "stage_error", "quality: ValueError: boom", "Hi <EMAIL>"),
            parsed,  # a reader's path is the input file's own name, which the user chose
        ]))


class _RaisesOn:
    """Makes the scrubber raise on texts holding ``marker`` (the record the PII stage itself could not scrub)."""

    def __init__(self, monkeypatch, marker):
        real_scrub = Scrubber.scrub

        def scrub(self, text, *args, **kwargs):
            if marker in text:
                raise ValueError(f"cannot scrub {text!r}")
            return real_scrub(self, text, *args, **kwargs)

        monkeypatch.setattr(Scrubber, "scrub", scrub)


def test_a_removed_record_the_scrubber_raises_on_is_withheld_not_written_in_clear(monkeypatch):
    from corpusforge.pipeline.pii.removed import WITHHELD

    _RaisesOn(monkeypatch, "POISON")
    poison = Removed(Document("web/mary@example.org", "POISON mary@example.org", "web", metadata={"m": "mary@example.org"}),
                     "quality", "gopher_short_doc", {"survivor_id": "web/mary@example.org"})
    with TestPipeline() as p:
        out = (p | beam.Create([REMOVED[0], poison]) | ScrubRemoved(PIIConfig(hash_salt=SALT, batch_size=2), SALT)
               | beam.Map(lambda r: (r.doc.text, r.doc.metadata, r.details, "mary" in r.doc.id, r.reason)))
        assert_that(out, equal_to([
            ("Too short. Mail <EMAIL>", {"tel": "<PHONE>"}, {}, False, "gopher_short_doc"),
            (WITHHELD.format("ValueError"), {}, {}, False, "gopher_short_doc"),
        ]))


def test_a_rejected_record_the_scrubber_raises_on_is_withheld():
    from corpusforge.pipeline.pii.removed import WITHHELD

    bad = Rejected("web", "web/9", -1, "stage_error", "pii: ValueError: cannot scrub '…'", "POISON mary@example.org")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _RaisesOn(monkeypatch, "POISON")
        with TestPipeline() as p:
            out = p | beam.Create([bad]) | ScrubRejected(PIIConfig(), SALT)
            assert_that(out, equal_to([Rejected("web", "web/9", -1, "stage_error", "pii: ValueError: cannot scrub '…'",
                                                WITHHELD.format("ValueError"))]))


def test_with_scrub_removed_false_a_stage_errors_id_is_still_scrubbed_and_the_preview_kept():
    bad = Rejected("web", "web/mary@example.org", -1, "stage_error", "quality: ValueError", "mary@example.org text")
    with TestPipeline() as p:
        out = (p | beam.Create([bad]) | ScrubRejected(PIIConfig(hash_salt=SALT, scrub_removed=False), SALT)
               | beam.Map(lambda r: (r.path == _hashed("web/mary@example.org"), r.raw)))
        assert_that(out, equal_to([(True, "mary@example.org text")]))


@pytest.mark.parametrize("rejected", [False, True], ids=["removed", "rejected"])
def test_a_full_disk_while_scrubbing_is_not_a_withheld_record_but_stops_the_build(monkeypatch, rejected):
    # errors of the environment are not errors of a record (corpusforge/core/faults.py): before, the record was
    # written withheld and the build went on
    import errno

    from corpusforge.core.errors import resource_error

    def scrub(self, text, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "/tmp/presidio-cache")

    monkeypatch.setattr(Scrubber, "scrub", scrub)
    monkeypatch.setattr(Scrubber, "scrub_batch", lambda self, texts: [scrub(self, t) for t in texts])
    record = (Rejected("web", "web/9", -1, "stage_error", "quality: ValueError", "mary@example.org") if rejected
              else REMOVED[0])
    with pytest.raises(Exception) as raised:
        with TestPipeline() as p:
            _ = (p | beam.Create([record])
                 | (ScrubRejected(PIIConfig(), SALT) if rejected else ScrubRemoved(PIIConfig(hash_salt=SALT), SALT)))
    assert str(resource_error(raised.value)).startswith("/tmp/presidio-cache: no space left on the device")


def test_with_scrub_removed_false_a_spilled_removed_text_is_not_read_back(tmp_path):
    """The text of a removed record is read back from its spill file only to be scrubbed: with ``scrub_removed``
    off it stays there (a reference whose file is gone would raise if it were read), the id is still scrubbed."""
    import pickle

    from corpusforge.pipeline.pii.removed import _ScrubRemovedFn

    gone = str(tmp_path / "gone.txt")  # never written: reading it back raises ScratchError
    doc = pickle.loads(pickle.dumps(Document("web/bob.roe@example.org", "Call me", "web").with_ref((gone, 0, 7))))
    fn = _ScrubRemovedFn(PIIConfig(hash_salt=SALT, scrub_removed=False), SALT)
    fn.setup()
    (out,) = list(fn.process([Removed(doc, "dedup", "exact_duplicate")]))
    assert out.doc.text_ref == (gone, 0, 7) and "text" not in out.doc.__dict__
    assert out.doc.id == _hashed("web/bob.roe@example.org")
