"""Nothing is written before it is scrubbed (issue 35, class 5): rejected previews are scrubbed whole, then cut;
numbers in metadata are scrubbed; input file names are hashed; the audit file stays in the run directory, 0600."""
from __future__ import annotations

import glob
import json
import os
import stat

import pytest

from corpusforge.core.errors import UserError
from corpusforge.pipeline.document import RAW_PREVIEW, Rejected, rejected_row
from corpusforge.pipeline.pii.config import PIIConfig

pytest.importorskip("presidio_analyzer")

from corpusforge.pipeline.pii.fields import FieldScrubber, NameScrubber  # noqa: E402
from corpusforge.pipeline.pii.removed import scrubbed_prefix  # noqa: E402
from corpusforge.pipeline.pii.scrubber import Scrubber  # noqa: E402
from corpusforge.pipeline.pii.stage import PII, audit_path  # noqa: E402
from corpusforge.pipeline.readers import records_from_file  # noqa: E402


@pytest.fixture(scope="module")
def scrubber() -> Scrubber:
    return Scrubber(PIIConfig(), salt="s" * 16)


@pytest.mark.parametrize("secret,part", [("jane.doe@example-mail.com", "jane.doe@"),
                                         ("4111 1111 1111 1111", "4111 1111 1111 1")])
@pytest.mark.parametrize("shift", [2, 5, 9, 13])
def test_a_secret_across_the_preview_cut_is_scrubbed_whole(scrubber, secret, part, shift):
    line = '{"id": "x", "text": "pay ' + "a" * (RAW_PREVIEW - 25 - shift) + " " + secret + ' and more'
    at = line.index(secret)
    assert at < RAW_PREVIEW < at + len(secret)
    preview = scrubbed_prefix(scrubber, line, RAW_PREVIEW)
    assert part not in preview and len(preview) <= RAW_PREVIEW
    assert preview.startswith(line[:at])


def test_a_reader_carries_the_whole_secret_to_the_scrubber_and_the_row_is_cut(tmp_path):
    from corpusforge.pipeline.config import InputConfig

    line = '{"id": "x", "text": "' + "a" * 180 + ' jane.doe@example-mail.com tail'  # malformed: no closing
    records = list(records_from_file(__import__("io").BytesIO(line.encode()), InputConfig(path="x.jsonl"),
                                     "x.jsonl", "x.jsonl", 10_000))
    rejected = [r for r in records if isinstance(r, Rejected)]
    assert rejected and "jane.doe@example-mail.com" in rejected[0].raw
    assert len(rejected_row(rejected[0])["raw"]) == RAW_PREVIEW


def test_numbers_in_metadata_are_scrubbed_with_their_key_as_cue(scrubber):
    fields = FieldScrubber(scrubber)
    out = fields.metadata({"phone": 2025550173, "card": 4111111111111111, "views": 2025550173, "n": 12,
                           "nested": {"mobile": 12025550173}, "cards": [4111111111111111], "ok": True, "f": 1.5})
    assert out == {"phone": "<PHONE>", "card": "<CREDIT_CARD>", "views": 2025550173, "n": 12,
                   "nested": {"mobile": "<PHONE>"}, "cards": ["<CREDIT_CARD>"], "ok": True, "f": 1.5}


def test_file_names_are_hashed_as_ids_and_stay_distinct():
    names = NameScrubber(PIIConfig(), "s" * 16)
    a, b = names("team/jane.doe@example.org.jsonl.gz"), names("team/bob@example.org.jsonl.gz")
    assert a.startswith("team/<EMAIL:") and a.endswith(">.jsonl.gz") and a != b
    assert "jane" not in a and names("ｊａｎｅ.ｄｏｅ＠example.org.txt").startswith("<EMAIL:")
    assert names("export_+1-202-555-0173.txt").startswith("export_<PHONE:")
    assert names("plain/data-2024.jsonl") == "plain/data-2024.jsonl"


def test_an_address_with_an_underscore_in_a_file_name_is_hashed_whole():
    # "_" is read as a space to find "export_jane@…", and is a character of an address too: "jane_doe@…" was
    # hashed from "doe" on, "team/jane_<EMAIL:…>.jsonl" (found by the pii fuzz family, seed 34)
    names = NameScrubber(PIIConfig(), "s" * 16)
    assert names("team/jane_doe@example.org.jsonl").startswith("team/<EMAIL:")
    # as written, "export_jane@example.org" is an address too (glued to "_2024", cut where the suffix ends): the
    # longer find is hashed whole, "_2024" kept
    out = names("export_jane@example.org_2024.jsonl")
    assert out.startswith("<EMAIL:") and out.endswith(">_2024.jsonl") and "jane" not in out


def test_the_audit_file_must_be_inside_the_run_directory(tmp_path):
    run = tmp_path / "run"
    assert audit_path("pii_audit/part", str(run)) == str(run / "pii_audit/part")
    assert audit_path(str(run / "a/b"), str(run)) == str(run / "a/b")
    for outside in ("../elsewhere/part", str(tmp_path / "other/part"), "/tmp/audit", "pii/../../x"):
        with pytest.raises(UserError, match="outside the run directory"):
            audit_path(outside, str(run))
    with pytest.raises(UserError):
        PII(PIIConfig(audit_file="/tmp/audit"), __import__("corpusforge.pipeline.stage", fromlist=["x"])
            .StageContext(run_dir=str(run)))


def test_the_audit_file_is_written_0600(tmp_path):
    import apache_beam as beam
    from apache_beam.testing.test_pipeline import TestPipeline

    from corpusforge.pipeline.document import Document
    from corpusforge.pipeline.stage import StageContext

    with TestPipeline() as p:
        _ = (p | beam.Create([Document(id="a", text="mail jane@example.org", source="s")])
             | PII(PIIConfig(audit_file="audit/pii"), StageContext(run_dir=str(tmp_path))))
    files = glob.glob(str(tmp_path / "audit" / "pii*.jsonl"))
    assert files and all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in files)
    assert stat.S_IMODE(os.stat(tmp_path / "audit").st_mode) == 0o700
    assert json.loads(open(files[0]).readline())["entity"] == "EMAIL_ADDRESS"


@pytest.mark.parametrize("secret", ["jane.doe@example-mail.com", "4111 1111 1111 1111"])
def test_the_report_never_shows_part_of_a_secret_cut_in_a_raw_preview(secret):
    """With ``pii.scrub_removed: false`` rejected/ holds raw previews cut at 200 characters; the report scrubs
    what it shows, but a cut entity is no longer an entity: its tail is dropped."""
    from corpusforge.pipeline.report.collect import Shown

    line = '{"id": "x", "text": "pay ' + "a" * 160 + ", and " + secret + ' more"}'
    raw = line[:RAW_PREVIEW]
    part = raw[line.index(secret):]
    assert len(part) >= 8 and secret not in raw
    shown = Shown({"config": {"pii": {"enabled": True, "scrub_removed": False}}}).preview(raw)
    assert part[:6] not in shown and shown.startswith('{"id": "x", "text": "pay aaa')
    assert Shown({"config": {"pii": {"scrub_removed": True}}}).preview(raw) == raw  # scrubbed whole by the build
