"""The fast implementations change no output: a build of the sample corpus with every stage on writes the
same bytes (clean, removed, rejected shards) and the same counts when each fast path is swapped for the
reference implementation it replaced, in the same test; when near-dedup's connected components are
gathered on one worker instead of found in distributed rounds; and when dedup's verdicts are joined to the
documents as side inputs instead of by a shuffle.

Each pair is also held equal on generated text by its own unit test; this one checks that the build as a whole
uses them where the reference was used, and that no decision moves.
"""
from __future__ import annotations

import hashlib
import json
import pathlib

import pytest

from corpusforge.cli.main import main
from tests.pipeline.sample_corpus import sample_corpus


def _digests(run: pathlib.Path) -> dict[str, str]:
    out = {p.relative_to(run).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
           for sub in ("clean", "removed", "rejected") for p in sorted((run / sub).glob("part-*"))}
    stats = json.loads((run / "stats.json").read_text())
    for volatile in ("timing", "metrics"):  # wall time; the runner's own observations (batch timings)
        stats.pop(volatile, None)
    out["stats.json"] = hashlib.sha256(json.dumps(stats, sort_keys=True).encode()).hexdigest()
    return out


def _build(root: pathlib.Path, config: pathlib.Path, name: str, *args: str) -> dict[str, str]:
    run = root / name
    assert main(["build", "-c", str(config), "--run-dir", str(run), "--no-progress", *args]) == 0
    return _digests(run)


def _use_reference_paths(monkeypatch) -> None:
    from corpusforge.pipeline.dedup import boilerplate, sentence_split, sentences
    from corpusforge.pipeline.normalize import stage as normalize

    monkeypatch.setattr(normalize, "collapse_whitespace", normalize.collapse_whitespace_reference)
    monkeypatch.setattr(normalize, "repair_mojibake", normalize.repair_mojibake_reference)  # no may_be_bad screen
    monkeypatch.setattr(sentence_split, "_BOUNDARY", sentence_split._BOUNDARY_REFERENCE)
    for module in (sentences, boilerplate):  # the build's line + sentence dedup calls them from boilerplate
        monkeypatch.setattr(module, "split_sentences", sentence_split.split_sentences_reference)
    monkeypatch.setattr(sentences, "sentence_keys", sentences.sentence_keys_reference)
    monkeypatch.setattr(boilerplate, "line_records", boilerplate.line_records_reference)
    # the keys step's records by the reference, and no sentence table: the removal splits the text again
    monkeypatch.setattr(boilerplate, "keyed_lines_many", lambda texts, line_chars, sentence_chars: [
        (boilerplate.line_records_reference(text, lang, line_chars, sentence_chars), None) for text, lang in texts])
    monkeypatch.setattr(sentences, "remove_sentences", sentences.remove_sentences_reference)
    monkeypatch.setattr(sentences, "without_sentences", sentences.without_sentences_reference)  # drop_sentences' call


@pytest.mark.slow
def test_fast_paths_write_the_same_bytes_as_the_reference_paths(tmp_path, monkeypatch):
    root, config = sample_corpus(tmp_path, documents=150)
    fast = _build(root, config, "fast")
    _use_reference_paths(monkeypatch)
    reference = _build(root, config, "reference")
    assert len([name for name in fast if name.startswith("clean/")]) >= 1
    assert fast == reference


@pytest.mark.slow
def test_near_dedup_components_gathered_write_the_same_bytes_as_the_rounds(tmp_path):
    """``dedup.near.components``: auto (on the DirectRunner: union-find on one worker) and distributed (the
    large-star / small-star rounds) give the same near-duplicate decisions and bytes in a whole build."""
    root, config = sample_corpus(tmp_path, documents=150)
    gathered = _build(root, config, "gathered")
    rounds = _build(root, config, "rounds", "--set", "dedup.near.components=distributed")
    stats = json.loads((root / "gathered" / "stats.json").read_text())
    assert stats["removed"]["by_stage"]["dedup"]["reasons"]["near_duplicate"] >= 1
    assert gathered == rounds


@pytest.mark.slow
def test_dedup_joins_by_side_input_write_the_same_bytes_as_the_shuffle(tmp_path):
    """``dedup.joins``: side_input (the verdicts read as side inputs) and shuffle (a
    CoGroupByKey of every document) give the same decisions, bytes and dedup counters in a whole build."""
    root, config = sample_corpus(tmp_path, documents=150)
    side = _build(root, config, "side_input", "--set", "dedup.joins=side_input")  # auto: shuffle when spilling
    shuffle = _build(root, config, "shuffle", "--set", "dedup.joins=shuffle")
    stats = {name: json.loads((root / name / "stats.json").read_text()) for name in ("side_input", "shuffle")}
    reasons = stats["side_input"]["removed"]["by_stage"]["dedup"]["reasons"]
    assert reasons.get("exact_duplicate", 0) >= 1 and reasons.get("near_duplicate", 0) >= 1
    assert side == shuffle
    counters = {name: s["metrics"]["counters"]["dedup"] for name, s in stats.items()}
    assert counters["side_input"] == counters["shuffle"]
