"""A build killed with SIGKILL in the middle of a stage leaves nothing a later run takes for finished output,
and the next build, resumed or not, with or without stage checkpoints, writes the same clean/ bytes as a
build that was never interrupted.

The build runs in a subprocess whose quality rules stop on one planted document (they write a flag file and
sleep), so the kill lands inside the quality stage every time, after normalize has finished.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from corpusforge.pipeline.build import OUTPUTS, run_build
from corpusforge.config import load_config

STALL = "the stall marker document"

_CHILD = textwrap.dedent("""
    import os, sys, time
    from corpusforge.pipeline.quality.rules import HeuristicRules

    original = HeuristicRules.apply_batch

    def stalling(self, texts, *args, **kwargs):
        if any(%r in text for text in texts):
            open(os.environ["STALL_FLAG"], "w").close()
            time.sleep(600)
        return original(self, texts, *args, **kwargs)

    HeuristicRules.apply_batch = stalling
    from corpusforge.cli.main import main
    sys.exit(main(sys.argv[1:]))
""" % STALL)


def _corpus(tmp_path):
    rows = [{"id": f"d{i:03d}", "text": f"Record {i} of the kill test tells how the {i % 7} ferries cross the bay "
                                         f"each morning, and why the harbour master counts {i} gulls at noon."}
            for i in range(80)]
    rows.append({"id": "stall", "text": f"This is {STALL}, a long enough English sentence for the quality rules."})
    rows += [dict(rows[3], id="copy")]  # dedup has something to do
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def _overrides(data, run_dir, checkpoints: bool):
    return [f"inputs=[{{path: '{data}'}}]", f"output.run_dir={run_dir}", "output.shard_target_mb=0.002",
            f"output.stage_checkpoints={str(checkpoints).lower()}", "pii.enabled=false"]


def _clean(run_dir):
    return {p.name: p.read_bytes() for p in sorted((run_dir / "clean").glob("part-*"))}


def _killed_build(tmp_path, data, run_dir, checkpoints: bool):
    flag = tmp_path / f"stalled-{run_dir.name}"
    args = [sys.executable, "-c", _CHILD, "build", "--no-progress"]
    for item in _overrides(data, run_dir, checkpoints):
        args += ["--set", item]
    child = subprocess.Popen(args, env={**os.environ, "STALL_FLAG": str(flag)}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 300
        while not flag.exists():
            assert child.poll() is None, f"the build ended ({child.returncode}) before reaching the quality stage"
            assert time.time() < deadline, "the build never reached the quality stage"
            time.sleep(0.1)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL


def _run(data, run_dir, checkpoints: bool, resume: bool = False):
    return run_build(load_config(overrides=_overrides(data, run_dir, checkpoints)), resume=resume, progress=False,
                     out=io.StringIO())


@pytest.mark.timeout(900)
def test_a_build_killed_mid_stage_leaves_no_finished_output_and_the_next_build_is_identical(tmp_path):
    data = _corpus(tmp_path)
    _run(data, tmp_path / "reference", checkpoints=False)
    reference = _clean(tmp_path / "reference")
    assert reference

    # Killed without checkpoints: only the work directory is left, and it is not a build.
    plain = tmp_path / "plain"
    _killed_build(tmp_path, data, plain, checkpoints=False)
    assert not [name for name in OUTPUTS if (plain / name).exists()]
    assert [p.name for p in plain.iterdir() if p.name.startswith(".tmp-build-")]
    _run(data, plain, checkpoints=False)
    assert _clean(plain) == reference

    # Killed with checkpoints, inside quality: normalize is complete, quality is not marked complete.
    killed = tmp_path / "killed"
    _killed_build(tmp_path, data, killed, checkpoints=True)
    assert not [name for name in OUTPUTS if (killed / name).exists()]
    segments = sorted(p.name for p in (killed / ".checkpoints").iterdir())
    assert segments[:2] == ["00-normalize", "01-quality"]
    assert (killed / ".checkpoints" / "00-normalize" / "_SUCCESS.json").exists()
    assert not (killed / ".checkpoints" / "01-quality" / "_SUCCESS.json").exists()
    shutil.copytree(killed, tmp_path / "killed-again")

    result = _run(data, killed, checkpoints=True, resume=True)  # from the normalize checkpoint
    assert result.stats["accounting"]["balanced"]
    assert _clean(killed) == reference
    _run(data, tmp_path / "killed-again", checkpoints=True)  # the same leftovers, without --resume: from scratch
    assert _clean(tmp_path / "killed-again") == reference
