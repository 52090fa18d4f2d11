"""A build tells at its start when its run directory's disk has less free space than it may need
(pipeline/disk_need.py), and says nothing when there is enough."""
from __future__ import annotations

import collections
import json

import pytest

from corpusforge.cli.main import main
from corpusforge.config import load_config
from corpusforge.pipeline import disk_need
from corpusforge.pipeline.disk_need import (OUTPUT_COMPRESSED, OUTPUT_PLAIN, SCRATCH_SHUFFLED, SCRATCH_SPILLED,
                                            disk_need as need_of, free_disk)

Usage = collections.namedtuple("Usage", "total used free")


def _corpus(tmp_path):
    text = "A line of ordinary prose about the harbour and the boats that leave it at dawn."
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": f"{text} Number {i}."}) + "\n" for i in range(20)))
    return path


def _build(tmp_path, capsys, *flags):
    code = main(["build", "--input", str(_corpus(tmp_path)), "--run-dir", str(tmp_path / "run"), "--no-progress",
                 "--set", "quality.enabled=false", "--set", "pii.enabled=false", *flags])
    return code, capsys.readouterr().out


def test_a_build_on_a_nearly_full_disk_warns_before_it_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(disk_need.shutil, "disk_usage", lambda path: Usage(10**9, 10**9 - 100, 100))
    code, out = _build(tmp_path, capsys)
    assert code == 0  # only a warning: the estimate is an upper bound
    lines = out.splitlines()
    warning = [line for line in lines if line.startswith("warning: this build may need up to")]
    assert len(warning) == 1 and "100 B are free there" in warning[0] and str(tmp_path / "run") in warning[0]
    assert lines.index(warning[0]) < next(i for i, line in enumerate(lines) if line.startswith("building "))


def test_a_build_with_room_to_spare_says_nothing_of_disk(tmp_path, capsys):
    code, out = _build(tmp_path, capsys)
    assert code == 0 and "free disk" not in out


def test_the_estimate_grows_with_what_the_build_keeps_on_disk(tmp_path):
    config = load_config(None, [f"output.run_dir={tmp_path / 'run'}"])
    text = 10**9
    bare = need_of(config, text, spills=False, shuffles_on_disk=False, segments=1)
    spilled = need_of(config, text, spills=True, shuffles_on_disk=False, segments=1)
    shuffled = need_of(config, text, spills=True, shuffles_on_disk=True, segments=1)
    assert bare == int(text * OUTPUT_COMPRESSED)  # Parquet with zstd, the default
    assert spilled == int(text * (SCRATCH_SPILLED + OUTPUT_COMPRESSED))
    assert shuffled == int(text * (SCRATCH_SHUFFLED + OUTPUT_COMPRESSED))
    # stage checkpoints keep every stage's shards until the build ends
    assert need_of(config, text, spills=True, shuffles_on_disk=True, segments=4) == int(
        text * SCRATCH_SHUFFLED + text * OUTPUT_COMPRESSED * 4)
    arrow = load_config(None, [f"output.run_dir={tmp_path / 'run'}", "output.format=arrow"])
    assert need_of(arrow, text, spills=False, shuffles_on_disk=False, segments=1) == int(text * OUTPUT_PLAIN)


@pytest.mark.parametrize("where", ["gs://bucket/run", "s3://bucket/run"])
def test_remote_run_directories_are_not_asked(where):
    assert free_disk(where) is None


def test_a_run_directory_not_made_yet_is_asked_of_the_folder_above_it(tmp_path, monkeypatch):
    # which folder is asked, not two readings of the free space compared: another process writing between them
    # moved the free bytes (a CI run beside another failed so)
    asked = []
    usage = collections.namedtuple("usage", "total used free")

    def disk_usage(path):
        asked.append(path)
        return usage(100, 40, 60)

    monkeypatch.setattr(disk_need.shutil, "disk_usage", disk_usage)
    assert free_disk(str(tmp_path / "not" / "made" / "yet")) == 60
    assert asked == [str(tmp_path)]
    monkeypatch.undo()
    assert free_disk(str(tmp_path / "not" / "made" / "yet")) > 0  # a real disk answers
