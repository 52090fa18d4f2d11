"""Whole builds in which a planted bug raises on some records in every stage.

The records still end somewhere (rejected, reason stage_error), the identity holds, the error-fraction
limit and --fail-fast behave as documented, and nothing outside rejected/ repeats a failing record's text:
not a log line, stdout/stderr, a stage_error detail, stats.json, the manifest or the report.
"""
from __future__ import annotations

import dataclasses
import io
import json
import logging
import pathlib
import tempfile

import pyarrow as pa
import pytest

from corpusforge.core.shard_files import open_shard
from corpusforge.pipeline.build import NothingKept, run_build
from corpusforge.config import load_config
from corpusforge.cli.main import main

STAGES = ("read", "normalize", "quality", "dedup", "pii")
TOPICS = ["river", "library", "railway", "bakery", "museum", "harbour", "mountain", "orchard", "theatre", "market",
          "garden", "school", "bridge", "forest", "island", "castle"]


def _paragraph(topic: str, n: int) -> str:
    return (f"The {topic} in the old town has been looked after by the same family for {n + 3} generations. "
            f"Visitors who come to see the {topic} in spring are told how it survived the flood of {1900 + n}, "
            f"and why the council still argues about who should pay for its upkeep. Local children learn its "
            f"history at school, and every autumn a small festival about the {topic} fills the square with music.")


def _secret(stage: str) -> dict[str, str]:
    """What a failing record holds that must never leave rejected/: an e-mail, a phone number, a sentence."""
    return {"email": f"jane.roe.{stage}@example.org", "phone": "+1 202 555 0147",
            "sentence": f"The zebracorn ledger of {stage} opens at midnight for the night clerk only."}


def _failing_text(stage: str, n: int) -> str:
    s = _secret(stage)
    return f"{_paragraph(TOPICS[n], n)} {s['sentence']} Write to {s['email']} or call {s['phone']} after six."


def _corpus(tmp_path, stages=STAGES):
    rows = [{"id": f"g{i:02d}", "text": _paragraph(TOPICS[i], i)} for i in range(10)]
    rows += [{"id": f"bad-{stage}", "text": _failing_text(stage, 10 + k)} for k, stage in enumerate(stages)]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, len(rows)


def _raises_on(stage: str, original):
    """``original``, but raising, with the record's whole text in the message, on the record planted for ``stage``."""
    marker = f"zebracorn ledger of {stage} "

    def patched(*args, **kwargs):
        texts = [a for a in args if isinstance(a, str)]
        texts += [t for a in args if isinstance(a, (list, dict)) for t in (a if isinstance(a, list) else a.values())
                  if isinstance(t, str)]
        for text in texts:
            if marker in text:
                raise ValueError(f"planted bug in {stage} on {text!r}")
        return original(*args, **kwargs)
    return patched


def _plant_bugs(monkeypatch, stages=STAGES):
    from corpusforge.pipeline import readers
    from corpusforge.pipeline.dedup import exact
    from corpusforge.pipeline.normalize import stage as normalize
    from corpusforge.pipeline.pii.scrubber import Scrubber
    from corpusforge.pipeline.quality.rules import HeuristicRules

    targets = {"read": (readers._Context, "repair_unicode"), "normalize": (normalize, "normalize_and_count"),
               "quality": (HeuristicRules, "apply_batch"), "dedup": (exact, "text_digest"), "pii": (Scrubber, "scrub_batch")}
    for stage in stages:
        owner, name = targets[stage]
        monkeypatch.setattr(owner, name, _raises_on(stage, getattr(owner, name)))


def _rows(directory):
    files = sorted(directory.glob("part-*"))
    return pa.concat_tables([open_shard(str(f)).read_all() for f in files]).to_pylist() if files else []


def test_a_record_that_raises_in_any_stage_is_rejected_alone_and_nothing_repeats_its_text(
        tmp_path, monkeypatch, caplog, capfd):
    pytest.importorskip("presidio_analyzer")
    data, records = _corpus(tmp_path)
    _plant_bugs(monkeypatch)
    run = tmp_path / "run"
    caplog.set_level(logging.DEBUG)
    assert main(["build", "--input", str(data), "--run-dir", str(run), "--no-progress",
                 "--set", "build.max_error_fraction=0.5", "--set", "dedup.near.enabled=false"]) == 0

    stats = json.loads((run / "stats.json").read_text())
    a = stats["accounting"]
    assert a["balanced"] and a["input"] == records == a["kept"] + a["removed"] + a["rejected"]
    assert stats["rejected"]["stage_errors"] == {stage: {"ValueError": 1} for stage in STAGES}
    assert stats["rejected"]["reasons"] == {"stage_error": len(STAGES)}
    rejected = {row["detail"].split(":")[0]: row for row in _rows(run / "rejected")}
    assert sorted(rejected) == sorted(STAGES) and all(r["reason"] == "stage_error" for r in rejected.values())
    # a stage's failure is located by the document's id; the reader's by file and line
    assert {s: rejected[s]["path"] for s in STAGES if s != "read"} == {s: f"in/bad-{s}" for s in STAGES if s != "read"}
    assert rejected["read"]["position"] == 10
    assert rejected["read"]["detail"] == "read: ValueError: planted bug in read on '…"  # the rest was cut at 160
    clean_ids = {row["id"] for row in _rows(run / "clean")}
    assert not any(i.startswith("in/bad-") for i in clean_ids)

    main(["report", str(run)])
    out, err = capfd.readouterr()
    details = " ".join(row["detail"] for row in rejected.values())
    exposed = {"log": caplog.text, "stdout": out, "stderr": err, "details": details,
               "stats.json": (run / "stats.json").read_text(), "manifest.json": (run / "manifest.json").read_text(),
               "report.html": (run / "report.html").read_text()}
    for stage in STAGES:
        for kind, secret in _secret(stage).items():
            for where, content in exposed.items():
                assert secret not in content, f"{kind} of the record failing in {stage} is in {where}"
    assert all(row["raw"] for row in rejected.values())  # rejected/ keeps the record, for whoever fixes the bug
    report = exposed["report.html"]  # the rejected table shows the stage errors, by detail and by stage and type
    assert "stage_error" in report and "in/bad-" in report and "ValueError: planted bug in " in report
    assert report.count('<td class="">ValueError</td>') == len(STAGES)
    assert report.count("rejected as stage_error 1") == len(STAGES)  # in the funnel row of each stage


def test_more_stage_errors_than_max_error_fraction_fail_the_run_and_publish_nothing(tmp_path, monkeypatch, capsys):
    data, records = _corpus(tmp_path, stages=("normalize",))
    _plant_bugs(monkeypatch, stages=("normalize",))
    run = tmp_path / "run"
    fast = ["--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]
    strict = ["--set", "build.error_allowance=0"]
    assert main(["build", "--input", str(data), "--run-dir", str(run), "--no-progress", *fast, *strict]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert (f"1 of {records} records (9.09%) were rejected because a stage raised on them (normalize ValueError 1), "
            "more than build.max_error_fraction=0.001 (and build.error_allowance=0)") in err and "--fail-fast" in err
    # nothing published, no work directory left behind (a run directory the build created goes too)
    assert not run.exists() or sorted(p.name for p in run.iterdir()) == []
    # at a limit above 1 in 11 the same build passes
    assert main(["build", "--input", str(data), "--run-dir", str(run), "--no-progress", *fast, *strict,
                 "--set", "build.max_error_fraction=0.1"]) == 0


def test_one_odd_record_does_not_fail_a_small_build_within_the_error_allowance(tmp_path, monkeypatch):
    data, records = _corpus(tmp_path, stages=("normalize",))
    _plant_bugs(monkeypatch, stages=("normalize",))
    run = tmp_path / "run"
    fast = ["--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]
    # 1 of 11 is far above max_error_fraction, but within the default allowance of 5: published, the record
    # rejected with its reason and the counts adding up
    assert main(["build", "--input", str(data), "--run-dir", str(run), "--no-progress", *fast]) == 0
    stats = json.loads((run / "stats.json").read_text())
    assert stats["rejected"]["stage_errors"] == {"normalize": {"ValueError": 1}}
    a = stats["accounting"]
    assert a["balanced"] and a["input"] == records == a["kept"] + a["removed"] + a["rejected"] and a["rejected"] == 1


def test_fail_fast_fails_on_the_first_error_with_its_traceback(tmp_path, monkeypatch):
    data, _ = _corpus(tmp_path, stages=("normalize",))
    _plant_bugs(monkeypatch, stages=("normalize",))
    with pytest.raises(Exception, match="planted bug in normalize"):
        main(["build", "--input", str(data), "--run-dir", str(tmp_path / "run"), "--no-progress", "--fail-fast",
              "--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"])


@pytest.mark.parametrize("runner,gathered", [
    ("DirectRunner", True), ("BundleBasedDirectRunner", True), ("DaskRunner", False), ("PortableRunner", False),
])
def test_near_dedup_components_are_gathered_on_the_direct_runner_only(tmp_path, runner, gathered):
    """``dedup.near.components: auto`` follows the runner the build's options name (the config's or a
    ``--runner`` flag's): union-find on one worker on Beam's DirectRunner, distributed rounds on Dask (separate
    worker processes, possibly on other machines) and every other runner."""
    import apache_beam as beam

    from corpusforge.pipeline import build
    from corpusforge.core.beam_options import pipeline_options

    data, _ = _corpus(tmp_path, stages=())
    config = load_config(overrides=[f"inputs=[{{path: '{data}'}}]", f"output.run_dir={tmp_path / 'run'}",
                                    "quality.enabled=false", "pii.enabled=false"])
    labels = []

    class Labels(beam.pipeline.PipelineVisitor):
        def enter_composite_transform(self, node):
            labels.append(node.full_label)

        def visit_transform(self, node):
            labels.append(node.full_label)

    for options in (pipeline_options(dataclasses.replace(config.beam, runner=runner)),
                    pipeline_options(config.beam, [f"--runner={runner}"])):
        labels.clear()
        pipeline = beam.Pipeline(options=options)
        segment = build.plan_segments(config, str(tmp_path / "work"), checkpoint=False)[0]
        build.segment_pipeline(pipeline, config, segment, None, is_last=True)
        pipeline.visit(Labels())
        groups = sorted({label.split("/NearComponents/")[1].split("/")[0] for label in labels
                         if "/NearComponents/" in label and ("Group" in label or "Gather" in label)})
        assert groups == (["NearCCGather"] if gathered else sorted(
            [f"NearCC{kind}Group{r}" for kind in ("Large", "Small") for r in range(10)] + ["NearCCGroupRoles"]))


# --- property: any records, every stage on -----------------------------------------------------------------------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_ANY_CHAR = st.characters(codec=None, categories=None)  # lone surrogates, controls and NUL included
_HOSTILE = st.sampled_from(list("\x00\x07\x1b\x7f\x85\r\n\t \u200f\u202e\u2066\u0301\u0336\u05d0\u0627\ufeff"
                                "\u2028\u2029\ud800\udfff\U0001F600.@[]") + ["jane@example.org", "+1 202 555 0147"])
_TEXT = st.one_of(
    st.lists(st.one_of(_ANY_CHAR, _HOSTILE, st.sampled_from(TOPICS)), max_size=40).map("".join),
    st.builds(_paragraph, st.sampled_from(TOPICS), st.integers(0, 99)),
    st.builds(lambda c, n: c * n, st.one_of(_ANY_CHAR, _HOSTILE), st.sampled_from([0, 1, 5000, 30_000])))
_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | _TEXT,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                      max_leaves=6)
_RECORD = st.one_of(st.fixed_dictionaries({"text": _TEXT}, optional={"id": _VALUE, "url": _VALUE, "meta": _VALUE}),
                    _VALUE)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(records=st.lists(_RECORD, min_size=1, max_size=12))
def test_any_records_build_with_every_stage_and_add_up(records):
    """With fail_fast on, so that a stage raising on any of these records fails the property instead of
    hiding as a stage_error."""
    with tempfile.TemporaryDirectory() as tmp:
        data = f"{tmp}/in.jsonl"
        with open(data, "wb") as f:
            f.write(b"".join(json.dumps(r).encode() + b"\n" for r in records))
        config = load_config(overrides=[f"inputs=[{{path: '{data}'}}]", f"output.run_dir={tmp}/run",
                                        "output.max_doc_chars=20000", "build.fail_fast=true"])
        try:
            result = run_build(config, progress=False, out=io.StringIO())
        except NothingKept as refused:  # every record rejected: refused, nothing published, the counts still add up
            a = refused.stats["accounting"]
            assert a["balanced"] and a["input"] == len(records) == a["rejected"] and not a["kept"] + a["removed"]
            assert not (pathlib.Path(tmp) / "run" / "clean").exists()
            return
        a = result.stats["accounting"]
        assert a["balanced"] and a["input"] == len(records) == a["kept"] + a["removed"] + a["rejected"]
        assert a["kept"] + a["removed"], "published a build that read no usable record"
        for row in _rows(pathlib.Path(tmp) / "run" / "clean"):
            row["text"].encode("utf-8")  # valid UTF-8 (Arrow would not have stored it otherwise; checked anyway)
            assert row["text"].strip()


@pytest.mark.parametrize("ending", ["published", "graph_raises", "too_many_errors"])
def test_a_build_leaves_nothing_in_the_temporary_folder_however_it_ends(tmp_path, monkeypatch, ending):
    """Beam makes a directory in the temporary folder for every Pipeline object and removes it only when the
    pipeline runs: a build whose graph construction raised left one behind per failed build."""
    import corpusforge.pipeline.build as build

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    data, _ = _corpus(tmp_path, stages=("normalize",))
    fast = ["--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]
    expected = 0
    if ending == "graph_raises":
        def raising(*args, **kwargs):
            raise build.UserError("a stage could not be built: fix the config")
        monkeypatch.setattr(build, "segment_pipeline", raising)
        expected = 2
    elif ending == "too_many_errors":
        _plant_bugs(monkeypatch, stages=("normalize",))
        fast += ["--set", "build.error_allowance=0"]
        expected = 2
    assert main(["build", "--input", str(data), "--run-dir", str(tmp_path / "run"), "--no-progress", *fast]) == expected
    assert sorted(p.name for p in scratch.iterdir()) == []
