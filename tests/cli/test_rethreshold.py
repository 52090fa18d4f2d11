"""Typed annotations in a built run, and `corpusforge rethreshold` against real rebuilds of the sample corpus."""
import json

import pyarrow as pa
import pytest

from corpusforge.cli.main import main
from corpusforge.core.shard_files import open_shard
from corpusforge.pipeline.document import annotations_of
from corpusforge.pipeline.quality.config import QualityConfig
from corpusforge.pipeline.quality.decide import decide_heuristics
from tests.pipeline.sample_corpus import sample_corpus

# Dedup and PII off: rethreshold does not redo them, so only then must it equal a rebuild.
BASE = ["--no-progress", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]
STRICT = "quality.gopher.min_words=80"


def _table(directory):
    files = sorted(directory.glob("part-*"))
    return pa.concat_tables([open_shard(str(f)).read_all() for f in files])


def _outcome(run):
    clean, removed = _table(run / "clean"), _table(run / "removed")
    # metadata too: a revived document keeps what it had (before, removed/ held none and it came back as {})
    kept = {r["id"]: (r["text"], r["metadata"]) for r in clean.select(["id", "text", "metadata"]).to_pylist()}
    gone = {r["id"]: (r["stage"], r["reason"], r["metadata"])
            for r in removed.select(["id", "stage", "reason", "metadata"]).to_pylist()}
    assert any(metadata != "{}" for _, metadata in kept.values())
    return kept, gone


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("rethreshold")
    _, config = sample_corpus(root, 300)
    default, strict = root / "default", root / "strict"
    assert main(["build", "-c", str(config), "--run-dir", str(default), *BASE]) == 0
    assert main(["build", "-c", str(config), "--run-dir", str(strict), *BASE, "--set", STRICT]) == 0
    return root, default, strict


def test_annotations_and_details_are_typed_structs_with_one_schema(runs):
    _, default, _ = runs
    clean_files = sorted((default / "clean").glob("part-*"))
    schemas = {open_shard(str(f)).schema for f in clean_files}
    assert len(schemas) == 1
    annotations = schemas.pop().field("annotations").type
    assert annotations.field("lang").type == pa.string() and annotations.field("lang_score").type == pa.float64()
    gopher = annotations.field("quality").type.field("gopher").type
    assert gopher.field("n_words").type == pa.int64() and gopher.field("mean_word_length").type == pa.float64()
    removed = _table(default / "removed")
    details = removed.schema.field("details").type
    assert details.field("quality").type == annotations.field("quality").type
    # the values are queryable as columns, and a removed document's values explain its reason
    by_rules = [r for r in removed.to_pylist() if annotations_of(r["details"]).get("quality")]
    assert len({r["reason"] for r in by_rules}) >= 3
    for r in by_rules:
        assert decide_heuristics(annotations_of(r["details"])["quality"], QualityConfig()) == r["reason"]
    values = _table(default / "clean").column("annotations").combine_chunks().field("quality").field("gopher")
    assert min(values.field("n_words").to_pylist()) >= 5


def test_annotations_of_reads_structs_and_json_strings():
    assert annotations_of('{"lang": "en", "x": 1}') == {"lang": "en", "x": 1}
    assert annotations_of({"lang": "en", "lang_score": None, "other": '{"x": 1}'}) == {"lang": "en", "x": 1}
    assert annotations_of(None) == {}


def test_rethreshold_tighter_equals_a_rebuild(runs, capsys):
    root, default, strict = runs
    out = root / "tightened"
    assert main(["rethreshold", str(default), "--set", STRICT, "--out", str(out)]) == 0
    assert "not redone" in capsys.readouterr().out
    assert _outcome(out) == _outcome(strict)
    stats = json.loads((out / "stats.json").read_text())
    a = stats["accounting"]
    assert a["balanced"] and a["input"] == json.loads((default / "stats.json").read_text())["accounting"]["input"]
    assert stats["rethreshold"]["newly_removed"] > 0
    assert stats["removed"]["by_stage"]["quality"] == json.loads((strict / "stats.json").read_text())["removed"]["by_stage"]["quality"] | {"chars": stats["removed"]["by_stage"]["quality"]["chars"]}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["quality"]["gopher"]["min_words"] == 80 and manifest["rethreshold"]["set"] == [STRICT]


def test_rethreshold_looser_revives_what_a_rebuild_keeps(runs):
    root, default, strict = runs
    out = root / "loosened"
    assert main(["rethreshold", str(strict), "--set", "quality.gopher.min_words=5", "--out", str(out)]) == 0
    assert _outcome(out) == _outcome(default)  # texts too: C4's line edits applied again to the revived


@pytest.mark.parametrize("item,message", [
    ("quality.langid.min_score=0.9", "is not a threshold of the heuristic rules"),
    ("quality.c4.min_words_per_line=3", "allowed: quality.c4.drop_curly_bracket"),
    ("quality.repetition.top_ngram_char_frac.7=0.1", "is not a threshold"),
    ("quality.length.min_words=3", "did not measure quality.length.n_words"),
    ("quality.gopher.min_words=-1", "must be >= 0"),
    # a misspelt threshold: its nearest, not the ~50 allowed keys (a 2,000-character line)
    ("quality.fineweb.line_punct_ratio=0.1", "re-decide; did you mean quality.fineweb.min_line_punct_ratio?"),
])
def test_rethreshold_refuses_what_it_cannot_decide_in_one_line(runs, capsys, item, message):
    root, default, _ = runs
    assert main(["rethreshold", str(default), "--set", item, "--out", str(root / "refused")]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and not (root / "refused" / "clean").exists()
