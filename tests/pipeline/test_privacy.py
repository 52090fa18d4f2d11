"""End to end: personal data planted in documents every stage removes, in rejected records, ids and metadata,
with a hash salt set. No file the run writes (clean/, removed/, rejected/, report.html, stats.json,
manifest.json) and nothing it logs holds any of it, or the salt, in clear."""
from __future__ import annotations

import json
import logging
import re

import pyarrow as pa
import pytest

from corpusforge.core.shard_files import open_shard
from corpusforge.cli.main import main
from corpusforge.pipeline.document import annotations_of

pytest.importorskip("presidio_analyzer")

SALT = "correct-horse-battery-staple-9137"
PROSE = [
    "The river runs through the old town and past the mill, where the miller kept his accounts in a heavy "
    "ledger bound in leather. Every spring the water rose over the lower fields and the farmers moved their "
    "sheep to the hills, waiting for the flood to pass before they sowed barley again in the dark soil.",
    "A library is a collection of books kept for reading and study. The first public libraries in the town "
    "were founded by guilds and churches, and readers paid a small fee each year to borrow a volume for a "
    "week at a time, returning it to a clerk who wrote their names in a long register behind the desk.",
    "Bridges over the wide estuary were built of timber at first and later of stone, and the tolls paid for "
    "their upkeep. Merchants crossed them with carts of wool and salt, and in the evening the keepers lit "
    "lamps at both ends so that travellers arriving late could find the road into the market square.",
    "The orchard behind the school had apple trees that were older than anyone in the village could "
    "remember. In autumn the children picked the fruit and carried it in baskets to the cellar, where it was "
    "stored on wooden racks and eaten through the winter, one apple each at the end of every lesson day.",
    "Weather records from the lighthouse show that storms in the north sea grew stronger in the late "
    "autumn, when the keepers noted wind speed, rain and the height of the waves in a notebook three times "
    "a day. Those notebooks, kept for more than a century, are now read by scientists who study the climate.",
]
EVAL_LINE = "the quick brown fox jumps over the lazy dog while seven wizards quietly judge boxing matches at dawn"
BOILERPLATE = ("The town council posts its opening hours at the main entrance and answers letters sent to "
               "news.letter@example.org within days.")

# Every planted value, as written in the input: none may appear in any output.
PLANTED = {
    "kept": "kept.owner@example.org", "kept_phone": "+1-202-555-0173", 
    "id": "id.person@example.org", "meta": "meta.person@example.org", "meta_phone": "+1-202-555-0199",
    "normalize": "normalize.person@example.org", "quality": "quality.person@example.org",
    "quality_phone": "+1-202-555-0148", "exact": "exact.dup@example.org", "near": "near.dup@example.org",
    "lines": "news.letter@example.org", "lines_unique": "lines.person@example.org",
    "decon": "decon.person@example.org", "decon_card": "5555 5555 5555 4444", "iban": "DE89370400440532013000", "drop_card": "4000 0566 5566 5556",
    "rejected": "rejected.person@example.org", "rejected_phone": "+1-202-555-0111",
}


def _records():
    p = PLANTED
    recs = [
        {"id": f"kept/{p['id']}", "text": f"{PROSE[0]} Write to {p['kept']} or call {p['kept_phone']}; IBAN {p['iban']}.",
         "meta": {"contact": f"phone {p['meta_phone']}", "author": p["meta"], "nested": [{"mail": p["meta"]}]}},
        {"id": "kept-2", "text": PROSE[1]},
        {"id": f"norm/{p['id']}", "text": "\u200b\u200b\u200b", "meta": {"author": p["normalize"]}},
        {"id": "quality-1", "text": f"Hi {p['quality']} {p['quality_phone']}", "meta": {"x": p["quality"]}},
        {"id": f"exact-a/{p['id']}", "text": f"{PROSE[2]} Contact {p['exact']}."},
        {"id": f"exact-b/{p['id']}", "text": f"{PROSE[2]} Contact {p['exact']}."},
        {"id": "near-a", "text": f"{PROSE[3]} Contact {p['near']} for apples."},
        {"id": "near-b", "text": f"{PROSE[3].replace('children', 'pupils')} Contact {p['near']} for apples."},
        {"id": "decon", "text": f"{PROSE[4]} {EVAL_LINE}. Mail {p['decon']}, card {p['decon_card']}."},
        {"id": "drop", "text": "The ferry to the island leaves twice a day in summer and once in winter, and the "
                               "crossing takes about an hour when the sea is calm. Tickets are sold at the harbour "
                               f"office; I paid for mine with the card {p['drop_card']} and kept the receipt."},
    ]
    # Boilerplate repeated in five documents: line dedup removes it from four, which are then too short.
    uniques = ["Our garden club meets on Tuesdays near the station hall.",
               "The bakery sells rye bread and small cakes every morning.",
               "Fishing boats return to the harbour before the evening tide.",
               "Local choirs sing carols in the square each winter evening.",
               f"The tram museum opens at noon, ask {p['lines_unique']} about tickets."]
    recs += [{"id": f"lines-{i}", "text": f"{BOILERPLATE}\n{u}"} for i, u in enumerate(uniques)]
    lines = [json.dumps(r) for r in recs]
    lines += ['{"id": "broken", "text": "mail ' + p["rejected"] + ' or call ' + p["rejected_phone"],  # malformed
              json.dumps([f"not an object {p['rejected']}"])]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("privacy")
    (tmp / "corpus.jsonl").write_text(_records())
    (tmp / "eval.txt").write_text(EVAL_LINE + "\n")
    (tmp / "corpus.yaml").write_text(
        f"inputs:\n  - {{path: '{tmp}/corpus.jsonl', name: web}}\n"
        f"dedup:\n  decontaminate: {{eval_sets: ['{tmp}/eval.txt']}}\n"
        f"pii:\n  hash_salt: {SALT}\n  actions: {{PHONE_NUMBER: hash, CREDIT_CARD: drop}}\n")
    return tmp


@pytest.fixture(scope="module")
def built(run, tmp_path_factory):
    """Build and report, capturing everything written to stdout/stderr and the log."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(io.StringIO())
    logging.getLogger().addHandler(handler)
    level = logging.getLogger().level
    logging.getLogger().setLevel(logging.DEBUG)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert main(["build", "-c", str(run / "corpus.yaml"), "--run-dir", str(run / "out")]) == 0
            assert main(["report", str(run / "out")]) == 0
            assert main(["config", "-c", str(run / "corpus.yaml")]) == 0
    finally:
        logging.getLogger().removeHandler(handler)
        logging.getLogger().setLevel(level)
    return run / "out", out.getvalue() + err.getvalue() + handler.stream.getvalue()


def _rows(directory):
    tables = [open_shard(str(f)).read_all() for f in sorted(directory.glob("part-*"))]
    return pa.concat_tables(tables).to_pylist() if tables else []


def test_every_stage_removed_something_and_the_accounting_holds(built):
    out, _ = built
    stats = json.loads((out / "stats.json").read_text())
    assert stats["accounting"]["balanced"] and stats["accounting"]["rejected"] == 2
    reasons = {(stage, reason) for stage, entry in stats["removed"]["by_stage"].items() for reason in entry["reasons"]}
    assert {("normalize", "empty_after_normalize"), ("dedup", "exact_duplicate"), ("dedup", "eval_contamination"),
            ("dedup", "line_dedup_too_short"), ("pii", "pii_drop_entity")} <= reasons
    assert any(stage == "quality" for stage, _ in reasons)
    assert any(stage == "dedup" and "near" in reason for stage, reason in reasons)
    removed = _rows(out / "removed")
    assert len(removed) == stats["accounting"]["removed"]
    assert {(r["stage"], r["reason"]) for r in removed} == reasons  # each record keeps its stage and reason


def test_no_planted_value_and_no_salt_in_any_output_or_log(built):
    out, logs = built
    outputs = {name: json.dumps(_rows(out / name), ensure_ascii=False) for name in ("clean", "removed", "rejected")}
    outputs.update({name: (out / name).read_text() for name in ("report.html", "stats.json", "manifest.json")})
    outputs["logs"] = logs
    assert all(outputs.values())
    for where, text in outputs.items():
        for what, value in PLANTED.items():
            assert value not in text, f"{what} ({value}) in clear in {where}"
        assert SALT not in text, f"the salt in clear in {where}"
    # Placeholders took their place, in the text of removed documents too.
    assert "<EMAIL>" in outputs["removed"] and "<PHONE:" in outputs["removed"] and "<EMAIL>" in outputs["rejected"]


def test_ids_are_hashed_unique_and_survivors_still_link(built):
    out, _ = built
    clean, removed = _rows(out / "clean"), _rows(out / "removed")
    ids = [r["id"] for r in clean + removed]
    assert len(set(ids)) == len(ids)
    hashed = [i for i in ids if "<EMAIL:" in i]
    assert len(hashed) == 4 and all(re.search(r"<EMAIL:[0-9a-f]{32}>", i) for i in hashed)
    clean_ids = {r["id"] for r in clean}
    survivors = [annotations_of(r["details"]).get("survivor_id") for r in removed if r["stage"] == "dedup"]
    assert [s for s in survivors if s] and all(s in clean_ids for s in survivors if s)
    kept = next(r for r in clean if r["text"].startswith(PROSE[0][:40]))
    meta = json.loads(kept["metadata"])["meta"]
    assert meta["contact"].startswith("phone <PHONE:") and meta["author"] == "<EMAIL>"


def test_the_manifest_and_config_record_only_that_a_salt_was_set(built):
    out, logs = built
    salt = json.loads((out / "manifest.json").read_text())["config"]["pii"]["hash_salt"]
    assert re.fullmatch(r"<secret set, fingerprint hmac-sha256:[0-9a-f]{16}>", salt)
    assert salt in logs  # `corpusforge config` printed the same marker


def test_names_of_files_refused_before_they_open_are_filtered_too(tmp_path):
    """Every path by which a file's or a source's name reaches an output: a source named with an e-mail, holding a
    FIFO and a broken link (rejected by name, before they open), a readable file and one whose name holds an
    e-mail; the config's ``inputs[].name`` and ``path`` in manifest.json; the I/O error's detail."""
    import contextlib
    import io
    import os

    source, owner = "dave.owner@example.com", "jane.file@example.org"
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.jsonl").write_text(json.dumps({"id": "a", "text": PROSE[0]}) + "\n")
    (data / f"{owner}.jsonl").write_text(json.dumps({"id": "b", "text": PROSE[1]}) + "\n")
    os.mkfifo(data / "pipe.jsonl")
    (data / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (tmp_path / "corpus.yaml").write_text(f"inputs:\n  - {{path: '{data}', name: '{source}'}}\n")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["build", "-c", str(tmp_path / "corpus.yaml"), "--run-dir", str(tmp_path / "out"),
                     "--set", "dedup.enabled=false"]) == 0
        assert main(["report", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    rejected = _rows(out / "rejected")
    assert sorted(r["reason"] for r in rejected) == ["not_a_regular_file", "not_a_regular_file"]
    texts = {name: json.dumps(_rows(out / name), ensure_ascii=False) for name in ("clean", "rejected")}
    texts.update({name: (out / name).read_text() for name in ("report.html", "stats.json", "manifest.json", "README.md")})
    for where, text in texts.items():
        for value in (source, owner, "dave.owner", "jane.file"):
            assert value not in text, f"{value} in clear in {where}"
    assert all(r["source"].startswith("<EMAIL:") for r in rejected)


def test_an_io_error_detail_keeps_its_reason_not_the_path():
    from corpusforge.core.input_files import classify

    reason, detail = classify(PermissionError(13, "Permission denied", "/data/jane@example.org.jsonl"))
    assert reason == "unreadable_file" and "Permission denied" in detail and "jane" not in detail


def test_names_as_written_is_the_one_filter_every_writer_uses():
    """Build (documents' source, rejected paths, manifest) and ablate (held-out sources in ablation.json) both
    take file names through ``names_as_written``: a name holding an address is hashed, one without is not; with
    the PII stage off nothing changes."""
    from corpusforge.config import Config
    from corpusforge.pipeline.stage import names_as_written

    config = Config()
    names = names_as_written(config, "a-run-secret-of-sixteen+")
    assert names("team/jane.doe@example.org.jsonl").startswith("team/<EMAIL:")
    assert names("team/notes.jsonl") == "team/notes.jsonl"
    config.pii.enabled = False
    assert names_as_written(config, "a-run-secret-of-sixteen+") is None
