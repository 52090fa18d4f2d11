"""PII in ids, metadata and removal details: hashed ids stay unique and linked, metadata per field."""
from __future__ import annotations

import re

import pytest

from corpusforge.pipeline.document import Document
from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.fields import ID_HASH_CHARS, FieldScrubber
from corpusforge.pipeline.pii.scrubber import Scrubber

pytest.importorskip("presidio_analyzer")

SALT = "a-salt-of-sixteen-chars"


@pytest.fixture(scope="module")
def fields():
    return FieldScrubber(Scrubber(PIIConfig(hash_salt=SALT)))


def test_pii_in_an_id_is_hashed_and_ids_stay_unique(fields):
    ids = ["mail/jane.doe@example.org#1", "mail/bob.roe@example.org#1", "mail/jane.doe@example.org#2", "doc-17"]
    out = [fields.id(i) for i in ids]
    assert out[3] == "doc-17"  # no PII: untouched
    assert len(set(out)) == len(ids)
    for value in out[:3]:
        assert "@" not in value and re.fullmatch(rf"mail/<EMAIL:[0-9a-f]{{{ID_HASH_CHARS}}}>#\d", value)
    assert out[0].split("#")[0] == out[2].split("#")[0]  # the same address hashes alike
    again = FieldScrubber(Scrubber(PIIConfig(hash_salt=SALT)))
    assert [again.id(i) for i in ids] == out  # deterministic for a salt
    other = FieldScrubber(Scrubber(PIIConfig(hash_salt="another-salt-of-16-chars")))
    assert other.id(ids[0]) != out[0]


def test_id_action_keep_leaves_ids(fields):
    keep = FieldScrubber(Scrubber(PIIConfig(id_action="keep")))
    assert keep.id("jane.doe@example.org") == "jane.doe@example.org"


def test_metadata_scrub_hash_keep_per_field(fields):
    config = PIIConfig(hash_salt=SALT, metadata_fields={"author": "hash", "url": "keep"})
    scrub = FieldScrubber(Scrubber(config))
    metadata = {"contact": "write to jane.doe@example.org", "nested": {"tel": ["call +1-202-555-0173"], "n": 3},
                "author": "Jane Doe", "url": "https://example.org/~jdoe", "flag": True, "none": None}
    out = scrub.metadata(metadata)
    assert out["contact"] == "write to <EMAIL>"
    assert out["nested"] == {"tel": ["call <PHONE>"], "n": 3}
    assert re.fullmatch(rf"[0-9a-f]{{{ID_HASH_CHARS}}}", out["author"]) and out["author"] == scrub.metadata(metadata)["author"]
    assert out["url"] == metadata["url"] and out["flag"] is True and out["none"] is None
    keep = FieldScrubber(Scrubber(PIIConfig(metadata_action="keep")))
    assert keep.metadata(metadata) == metadata


def test_a_duplicates_survivor_id_maps_like_the_survivors_id(fields):
    survivor = Document("web/jane.doe@example.org", "text", "web", metadata={"phone": "+1-202-555-0173"})
    details = fields.details({"survivor_id": survivor.id, "cluster_size": 2, "similarity": 0.9, "lang": "en"})
    scrubbed = fields.document(survivor)
    assert details["survivor_id"] == scrubbed.id != survivor.id
    assert details["cluster_size"] == 2 and details["lang"] == "en"
    assert scrubbed.metadata == {"phone": "<PHONE>"} and scrubbed.text == "text"


def test_removal_details_keep_what_the_stage_measured_and_scrub_strings(fields):
    # Numbers in details are a stage's measurements (quality values, similarity), never a document's data: kept as
    # they are, also where one read after its key looks like a phone ("phone: 2025550173" in metadata would be).
    details = {"cluster_size": 2, "quality": {"phone": 2025550173, "ratio": 0.4935064935064935, "ok": True,
                                              "note": "call +1-202-555-0173", "jane.doe@example.org": 1},
               "counts": [4111111111111111, 0.5]}
    out = fields.details(details)
    assert out["cluster_size"] == 2 and out["counts"] == [4111111111111111, 0.5]
    quality = out["quality"]
    assert quality["phone"] == 2025550173 and quality["ratio"] == 0.4935064935064935 and quality["ok"] is True
    assert quality["note"] == "call <PHONE>"  # strings are scrubbed as text
    hashed_key = next(k for k in quality if k.startswith("<EMAIL:"))  # a key holding PII hashed as metadata keys
    assert quality[hashed_key] == 1 and fields.details(details)["quality"] == quality  # the same every time
    assert fields.metadata({"phone": 2025550173}) == {"phone": "<PHONE>"}  # metadata numbers are still scrubbed


def test_config_checks_field_actions():
    from corpusforge.core.config_loader import ConfigError

    with pytest.raises(ConfigError, match="pii.metadata_fields.author must be one of scrub, hash, keep"):
        PIIConfig(metadata_fields={"author": "drop"})
    # a record's own metadata object is merged (readers.merged_metadata): an action named for "metadata" would
    # reach none of its values, and {metadata: hash} left an author's name in clean/ (found by review)
    for action in ("hash", "keep", "scrub"):
        with pytest.raises(ConfigError, match=r"pii.metadata_fields.metadata: a record's own metadata object is "
                                              r"merged .* name those keys instead"):
            PIIConfig(metadata_fields={"metadata": action})
    with pytest.raises(ConfigError, match="pii.id_action must be hash or keep"):
        PIIConfig(id_action="scrub")


def test_metadata_keys_holding_pii_are_hashed_and_stay_distinct(fields):
    out = fields.metadata({"jane.doe@example.org": 3, "bob.roe@example.org": 4, "nested": {"+1-202-555-0173": "x"},
                           "plain": "no pii"})
    assert "jane.doe@example.org" not in str(out) and "202-555-0173" not in str(out)
    assert len(out) == 4 and sorted(out.values(), key=str)[:2] == [3, 4]
    assert out["plain"] == "no pii"


def test_the_source_namespace_of_ids_is_scrubbed_once_per_source(monkeypatch):
    fields = FieldScrubber(Scrubber(PIIConfig(), salt="a-salt-of-sixteen-chars"))
    asked = []
    find = fields.scrubber.find
    monkeypatch.setattr(fields.scrubber, "find", lambda value, *a, **k: asked.append(value) or find(value, *a, **k))
    ids = [fields.id(f"jane@example.org/{i}") for i in range(3)]
    assert asked.count("jane@example.org") == 1
    assert all(i.startswith("<EMAIL:") and i.endswith(f"/{n}") for n, i in enumerate(ids))
    assert fields.id("jane@example.org") == ids[0].split("/")[0]  # an id without a namespace: scrubbed whole


def test_removal_detail_keys_keep_their_type_whatever_came_before():
    # The scrubbed detail keys are cached per worker; True, 1 and 1.0 are equal dict keys, and a cache by key gave
    # the first one met back for the others ({True: ...} came out {1: ...} after a {1: ...}).
    scrubber = FieldScrubber(Scrubber(PIIConfig(hash_salt=SALT)))
    for key in (1, True, 1.0, "1"):
        out = scrubber.details({"counts": {key: 2}})["counts"]
        assert [(type(k), k) for k in out] == [(type(key), key)]


# --------------------------------------------------------------------------- values of any type (one walk)
class Tag(str):
    """A str subclass (an enum's value, numpy.str_)."""


def test_strings_in_tuples_and_sets_are_scrubbed_in_metadata_and_details(fields):
    # A Parquet map column reads as a list of (key, value) tuples: the walk stopped at tuples, and their strings
    # went out as they came in.
    metadata = {"headers": [("from", "jane.doe@example.org"), ("n", 3)], "tags": {"call +1-202-555-0173", "x"},
                "frozen": frozenset({("bob.roe@example.org", 1.5)})}
    out = fields.metadata(metadata)
    assert out["headers"] == [("from", "<EMAIL>"), ("n", 3)] and type(out["headers"][0]) is tuple
    assert out["tags"] == {"call <PHONE>", "x"}
    assert out["frozen"] == frozenset({("<EMAIL>", 1.5)})
    details = fields.details({"pairs": ("jane.doe@example.org", (1, "call +1-202-555-0173")),
                              "survivor_id": ("web/jane.doe@example.org",)})
    assert details["pairs"] == ("<EMAIL>", (1, "call <PHONE>"))
    assert details["survivor_id"] == (fields.id("web/jane.doe@example.org"),)  # ids in a container still ids
    hashed = FieldScrubber(Scrubber(PIIConfig(hash_salt=SALT, metadata_action="hash"))).metadata(
        {"pair": ("Jane Doe", 7, None, True)})["pair"]
    assert type(hashed) is tuple and [len(v) for v in hashed[:2]] == [ID_HASH_CHARS] * 2 and hashed[2:] == (None, True)


def test_numbers_booleans_and_none_keep_value_and_type_in_details_at_any_depth(fields):
    values = [0, -1, 2025550173, 4111111111111111, 10 ** 5000, -(10 ** 70), 0.5, float("inf"), float("-inf"),
              1e300, True, False, None]
    out = fields.details({"v": values, "t": tuple(values), "d": {"x": {"y": values}}})
    for got in (out["v"], list(out["t"]), out["d"]["x"]["y"]):
        assert [(type(v), v) for v in got] == [(type(v), v) for v in values]
    nan = fields.details({"nan": float("nan")})["nan"]
    assert type(nan) is float and nan != nan


def test_a_huge_integer_in_metadata_neither_raises_nor_changes(fields):
    # str() of an int past 4,300 digits raises ValueError: the record was withheld (removed/) or rejected as a
    # stage_error (clean/); past 64 digits no recognizer finds anything in one digit run.
    for number in (10 ** 5000, -(10 ** 5000) + 7, 10 ** 64, 4111111111111111 * 10 ** 80):
        assert fields.metadata({"phone": number, "n": [number]}) == {"phone": number, "n": [number]}
    hashing = FieldScrubber(Scrubber(PIIConfig(hash_salt=SALT, metadata_action="hash")))
    assert hashing.metadata({"n": 10 ** 5000})["n"] == hashing.scrubber.digest("1" + "0" * 5000, ID_HASH_CHARS)
    assert fields.metadata({"phone": 2025550173}) == {"phone": "<PHONE>"}  # a phone stored as a number: scrubbed


def test_str_subclasses_bytes_and_keys_of_any_type_are_scrubbed_or_kept(fields):
    out = fields.metadata({"a": Tag("write to jane.doe@example.org"), "b": Tag("plain"),
                           "c": b"mail jane.doe@example.org", "d": bytearray(b"\xff\xfe raw"),
                           "e": {True: "x", 1.5: "call +1-202-555-0173", None: 0, b"bob.roe@example.org": 1,
                                 ("t", 1): 2}})
    assert out["a"] == "write to <EMAIL>" and type(out["b"]) is Tag and out["b"] == "plain"
    assert out["c"] == b"mail <EMAIL>" and type(out["d"]) is bytearray and out["d"] == bytearray(b"\xff\xfe raw")
    inner = out["e"]
    assert inner[True] == "x" and inner[1.5] == "call <PHONE>" and inner[None] == 0 and inner[("t", 1)] == 2
    assert [type(k) for k in inner] == [bool, float, type(None), bytes, tuple]
    assert not any(b"bob.roe" in k for k in inner if isinstance(k, bytes))
    assert fields.details({"note": Tag("call +1-202-555-0173"), "raw": b"jane.doe@example.org"}) == {
        "note": "call <PHONE>", "raw": b"<EMAIL>"}
    assert fields.id(Tag("web/jane.doe@example.org")) == fields.id("web/jane.doe@example.org")
    assert fields.id(17) == 17
    assert fields.id(("web/jane.doe@example.org", 2)) == (fields.id("web/jane.doe@example.org"), 2)


def test_a_rejected_record_whose_detail_is_no_string_is_scrubbed_not_withheld():
    import apache_beam as beam
    from apache_beam.testing.test_pipeline import TestPipeline
    from apache_beam.testing.util import assert_that, equal_to

    from corpusforge.pipeline.document import Rejected
    from corpusforge.pipeline.pii.removed import ScrubRejected

    records = [Rejected("web", "a.jsonl", 1, "bad_json", ("mail", "jane.doe@example.org", 3), "x"),
               Rejected("web", 42, 2, "stage_error", {"n": 7}, "call +1-202-555-0173")]
    with TestPipeline() as p:
        out = p | beam.Create(records) | ScrubRejected(PIIConfig(hash_salt=SALT), SALT)
        assert_that(out, equal_to([Rejected("web", "a.jsonl", 1, "bad_json", ("mail", "<EMAIL>", 3), "x"),
                                   Rejected("web", 42, 2, "stage_error", {"n": 7}, "call <PHONE>")]))
