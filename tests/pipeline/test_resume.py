"""Stage checkpoints: a build killed in a stage resumes from the last completed stage, same output."""
import json

import apache_beam as beam
import pytest

from corpusforge.core import rundir
from corpusforge.pipeline import build
from corpusforge.config import load_config
from corpusforge.pipeline.normalize.stage import Normalize
from corpusforge.pipeline.stage import REMOVED, Stage, split_outputs


class _Explode(beam.DoFn):
    def process(self, doc):
        raise RuntimeError("simulated worker crash")


class ExplodingStage(Stage):
    """Takes the PII section's slot without registering (no ``section=`` keyword): the test swaps it in."""

    section, order = "pii", 40

    def expand(self, docs):
        return split_outputs(docs | beam.ParDo(_Explode()).with_outputs(REMOVED, main="kept"))


def _config(tmp_path, run, checkpoints):
    data = tmp_path / "in.jsonl"
    if not data.exists():
        rows = [{"id": str(i), "text": f"Paragraph {i}: the cat sat on the mat and looked at the {i % 9} birds."}
                for i in range(60)] + [{"id": "blank", "text": "\u200b\u200b"}]
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return load_config(overrides=[f"inputs=[{{path: {data}}}]", f"output.run_dir={tmp_path / run}",
                                  f"output.stage_checkpoints={str(checkpoints).lower()}", "output.shard_target_mb=0.002",
                                  "quality.enabled=false", "pii.enabled=false", "dedup.enabled=false"])


def _files(run_dir):
    return {p.relative_to(run_dir).as_posix(): p.read_bytes()
            for sub in ("clean", "removed", "rejected") for p in sorted((run_dir / sub).glob("part-*"))}


def test_resume_after_a_failed_stage_gives_the_uninterrupted_output(tmp_path, monkeypatch, capsys):
    reference = build.run_build(_config(tmp_path, "plain", checkpoints=False))
    config = _config(tmp_path, "resumed", checkpoints=True)
    # A second stage (the PII section's slot) that crashes: normalize completes and is checkpointed.
    config.pii.enabled = True
    monkeypatch.setattr(build, "registered_stages", lambda: [Normalize, ExplodingStage])
    with pytest.raises(Exception, match="simulated worker crash"):
        build.run_build(config)
    run_dir = tmp_path / "resumed"
    marker = run_dir / ".checkpoints" / "00-normalize" / "_SUCCESS.json"
    assert marker.exists() and not (run_dir / "clean").exists()
    assert "rerun with --resume" in capsys.readouterr().out

    # The crash is fixed (here: the stage switched off would change the plan, so swap in a pass-through).
    monkeypatch.setattr(build, "registered_stages", lambda: [Normalize, PassThrough])
    result = build.run_build(config, resume=True)
    printed = capsys.readouterr().out
    assert "normalize already complete" in printed and "stage normalize done" not in printed
    assert "stage pii done" in printed
    assert not (run_dir / ".checkpoints").exists()  # cleaned up after success
    assert result.stats["accounting"] == reference.stats["accounting"]
    assert _files(run_dir) == _files(tmp_path / "plain")


class _Pass(beam.DoFn):
    def process(self, doc):
        yield doc


class PassThrough(Stage):
    section, order = "pii", 40

    def expand(self, docs):
        return split_outputs(docs | beam.ParDo(_Pass()).with_outputs(REMOVED, main="kept"))


def test_changed_config_invalidates_checkpoints(tmp_path):
    config = _config(tmp_path, "r", checkpoints=True)
    segments = build.plan_segments(config, "w", checkpoint=True)
    config.normalize.unicode_form = "NFKC"
    assert build.plan_segments(config, "w", checkpoint=True)[0].fingerprint != segments[0].fingerprint


def test_a_checkpoint_made_by_other_code_is_not_reused(tmp_path, monkeypatch):
    # The fingerprint held only __version__, which stayed "0.1.0" while the readers' rules changed: a --resume
    # (or an ablation's shared segment) reused segments read by the old rules beside stages run by the new.
    config = _config(tmp_path, "r", checkpoints=True)
    before = [s.fingerprint for s in build.plan_segments(config, "w", checkpoint=True)]
    assert [s.fingerprint for s in build.plan_segments(config, "w", checkpoint=True)] == before
    monkeypatch.setattr(build, "code_revision", lambda: build.__version__ + "+another")
    after = [s.fingerprint for s in build.plan_segments(config, "w", checkpoint=True)]
    assert all(a != b for a, b in zip(after, before))
    # the revision is the source's: a module's bytes changed (not its cache) change it
    package = tmp_path / "package"
    (package / "sub" / "__pycache__").mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "b.py").write_text("y = 2\n")
    first = build.source_digest([str(package)])
    (package / "sub" / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"cache")
    assert build.source_digest([str(package)]) == first
    (package / "sub" / "b.py").write_text("y = 3\n")
    assert build.source_digest([str(package)]) != first
    assert build.code_revision().startswith(build.__version__ + "+")


def test_an_input_changed_under_the_same_path_is_rebuilt_on_resume(tmp_path, monkeypatch, capsys):
    config = _config(tmp_path, "resumed", checkpoints=True)
    config.pii.enabled = True
    monkeypatch.setattr(build, "registered_stages", lambda: [Normalize, ExplodingStage])
    with pytest.raises(Exception, match="simulated worker crash"):
        build.run_build(config)
    # The same path, the same size, other content: a path- or size-based fingerprint would reuse the checkpoint.
    data = tmp_path / "in.jsonl"
    data.write_text(data.read_text().replace("the cat sat", "the dog sat"))
    monkeypatch.setattr(build, "registered_stages", lambda: [Normalize, PassThrough])
    build.run_build(config, resume=True)
    printed = capsys.readouterr().out
    assert f"{data} changed since stage normalize was checkpointed; rebuilding from there" in printed
    assert "already complete" not in printed
    reference = _config(tmp_path, "fresh", checkpoints=False)
    reference.pii.enabled = True
    build.run_build(reference)
    assert _files(tmp_path / "resumed") == _files(tmp_path / "fresh")
    from corpusforge.core.shard_files import open_shard

    texts = [t for f in sorted((tmp_path / "resumed" / "clean").glob("part-*"))
             for t in open_shard(str(f)).read_all().column("text").to_pylist()]
    assert any("the dog sat" in t for t in texts)


def test_a_changed_word_list_or_eval_set_changes_the_fingerprint_of_its_stage_only(tmp_path):
    words, evals = tmp_path / "bad.txt", tmp_path / "eval.jsonl"
    words.write_text("ugly\n")
    evals.write_text('{"text": "what is two plus two"}\n')
    config = _config(tmp_path, "r", checkpoints=True)
    config.quality.enabled, config.dedup.enabled = True, True
    config.quality.langid.enabled = False
    config.quality.c4.bad_words_file = str(words)
    config.dedup.decontaminate.eval_sets = [str(evals)]
    before = [s.fingerprint for s in build.plan_segments(config, "w", checkpoint=True)]
    words.write_text("nasty\n")
    after_words = [s.fingerprint for s in build.plan_segments(config, "w", checkpoint=True)]
    evals.write_text('{"text": "what is three plus two"}\n')
    after_evals = [s.fingerprint for s in build.plan_segments(config, "w", checkpoint=True)]
    # segments: normalize, quality, dedup
    assert after_words[0] == before[0] and after_words[1] != before[1] and after_words[2] != before[2]
    assert after_evals[:2] == after_words[:2] and after_evals[2] != after_words[2]


def test_the_run_secret_is_kept_with_the_checkpoints_for_a_resume(tmp_path):
    """Without pii.hash_salt the PII salt is this random secret: a resumed build must hash like the stages it
    skips, so it lives beside the checkpoints (owner-only) and goes with them; without checkpoints, nowhere."""
    import os

    work = str(tmp_path / ".checkpoints")
    first = build._run_secret(work, checkpoint=True)
    assert build._run_secret(work, checkpoint=True) == first
    assert os.stat(os.path.join(work, rundir.RUN_SECRET)).st_mode & 0o777 == 0o600
    assert os.stat(work).st_mode & 0o777 == 0o700
    plain = str(tmp_path / ".tmp-build-x")
    assert build._run_secret(plain, checkpoint=False) != first and not os.path.exists(plain)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_checkpointed_stages_read_each_other_in_every_output_format(tmp_path, monkeypatch, fmt):
    """Each stage's checkpoint is written in output.format and read back by the next stage."""
    monkeypatch.setattr(build, "registered_stages", lambda: [Normalize, PassThrough])
    outputs = {}
    for checkpoints in (False, True):
        config = _config(tmp_path, f"{fmt}-{checkpoints}", checkpoints)
        config.pii.enabled, config.output.format = True, fmt
        build.run_build(config)
        run_dir = tmp_path / f"{fmt}-{checkpoints}"
        outputs[checkpoints] = {p.relative_to(run_dir).as_posix(): p.read_bytes()
                                for sub in ("clean", "removed", "rejected") for p in sorted((run_dir / sub).glob("part-*"))}
    assert outputs[True] == outputs[False] and any(name.startswith("clean/part-") for name in outputs[True])
    assert all(name.endswith(".parquet" if fmt == "parquet" else ".jsonl.zst") for name in outputs[True])


def test_settings_that_only_choose_how_dedup_computes_keep_its_checkpoints(tmp_path):
    """dedup.joins, near.components and near.batch_size give the same output: changing them must not
    rebuild checkpointed stages; a setting that changes the output (near.ngram) must."""
    config = _config(tmp_path, "r", checkpoints=True)
    config.dedup.enabled = True
    before = [s.fingerprint for s in build.plan_segments(config, "w", checkpoint=True)]
    config.dedup.joins, config.dedup.near.components, config.dedup.near.batch_size = "shuffle", "distributed", 7
    assert [s.fingerprint for s in build.plan_segments(config, "w", checkpoint=True)] == before
    config.dedup.near.ngram = 3
    after = [s.fingerprint for s in build.plan_segments(config, "w", checkpoint=True)]
    assert after[0] == before[0] and after[-1] != before[-1]
