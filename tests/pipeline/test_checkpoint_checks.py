"""Stage checkpoints are read back only as they were written: a shard changed, cut short or gone since its stage
wrote it makes a resumed build rebuild that stage, and stops the build that wrote it with one line."""
import os

import pytest

from corpusforge.core.errors import ScratchError
from corpusforge.pipeline import build
from corpusforge.pipeline.normalize.stage import Normalize
from tests.pipeline.test_resume import PassThrough, _config, _files


def _flip(path):
    data = bytearray(path.read_bytes())
    at = data.index(b"the cat sat")  # inside a text: an unchecked Arrow IPC shard reads back "the cbt sat"
    data[at + 5] ^= 0x03
    path.write_bytes(bytes(data))


def _truncate(path):
    os.truncate(path, path.stat().st_size // 2)


def _delete(path):
    path.unlink()


def _two_stages(tmp_path, run, monkeypatch, checkpoints=True):
    """Normalize, then a pass-through stage, in Arrow IPC shards: uncompressed, a changed byte reads back as text."""
    monkeypatch.setattr(build, "registered_stages", lambda: [Normalize, PassThrough])
    config = _config(tmp_path, run, checkpoints)
    config.pii.enabled, config.output.overwrite, config.output.format = True, True, "arrow"
    return config


def _normalize_shards(run_dir):
    shards = sorted((run_dir / ".checkpoints" / "00-normalize" / "docs").glob("part-*"))
    assert len(shards) > 1  # output.shard_target_mb=0.002: several
    return shards


@pytest.mark.parametrize("damage", [_flip, _truncate, _delete])
def test_a_damaged_checkpoint_is_rebuilt_on_resume(tmp_path, monkeypatch, capsys, damage):
    build.run_build(_two_stages(tmp_path, "plain", monkeypatch, checkpoints=False))
    config = _two_stages(tmp_path, "kept", monkeypatch)
    build.run_build(config, keep_checkpoints=True)
    shard = _normalize_shards(tmp_path / "kept")[1]
    damage(shard)
    capsys.readouterr()
    build.run_build(config, resume=True)
    printed = capsys.readouterr().out
    assert "the checkpoint of stage normalize is not whole" in printed and str(shard) in printed
    assert "already complete" not in printed and "stage normalize done" in printed  # re-run, not skipped
    assert _files(tmp_path / "kept") == _files(tmp_path / "plain")


@pytest.mark.parametrize("damage", [_flip, _truncate, _delete])
def test_the_next_stage_refuses_a_checkpoint_damaged_under_it(tmp_path, monkeypatch, capsys, damage):
    build.run_build(_two_stages(tmp_path, "plain", monkeypatch, checkpoints=False))
    config = _two_stages(tmp_path, "run", monkeypatch)
    finish = build._finish_segment

    def finish_then_damage(segment, seconds, **kwargs):
        finish(segment, seconds, **kwargs)
        if segment.index == 0:  # between the segments: the next one is about to read these shards
            damage(_normalize_shards(tmp_path / "run")[0])

    monkeypatch.setattr(build, "_finish_segment", finish_then_damage)
    with pytest.raises(ScratchError) as caught:
        build.run_build(config)
    message = str(caught.value)
    assert "\n" not in message and str(_normalize_shards(tmp_path / "run")[0].parent) in message
    assert "run the build again" in message and not (tmp_path / "run" / "clean").exists()
    # run again with --resume: the damaged stage is rebuilt, and the output is the undamaged build's
    monkeypatch.setattr(build, "_finish_segment", finish)
    build.run_build(config, resume=True)
    assert "stage normalize done" in capsys.readouterr().out
    assert _files(tmp_path / "run") == _files(tmp_path / "plain")


def test_a_published_shard_damaged_before_it_is_gathered_stops_the_build(tmp_path, monkeypatch):
    """The last stage's docs and every stage's removed and rejected shards are checked before they are published."""
    config = _two_stages(tmp_path, "run", monkeypatch)
    finish = build._finish_segment

    def finish_then_damage(segment, seconds, **kwargs):
        finish(segment, seconds, **kwargs)
        if segment.index == 1:
            _flip(sorted((tmp_path / "run" / ".checkpoints" / "01-pii" / "docs").glob("part-*"))[0])

    monkeypatch.setattr(build, "_finish_segment", finish_then_damage)
    with pytest.raises(ScratchError, match="01-pii/docs/part-.*CRC-32 differs.*run the build again"):
        build.run_build(config)
    assert not (tmp_path / "run" / "clean").exists()


def test_a_marker_without_checksums_is_not_whole(tmp_path, monkeypatch, capsys):
    """A checkpoint made before shards were checked (its marker records no checksums) is rebuilt, not trusted."""
    import json

    config = _two_stages(tmp_path, "kept", monkeypatch)
    build.run_build(config, keep_checkpoints=True)
    marker = tmp_path / "kept" / ".checkpoints" / "00-normalize" / "_SUCCESS.json"
    recorded = json.loads(marker.read_text())
    assert set(recorded["shards"]) == {"docs", "removed", "rejected"}
    del recorded["shards"]
    marker.write_text(json.dumps(recorded))
    capsys.readouterr()
    build.run_build(config, resume=True)
    assert "records no checksums" in capsys.readouterr().out


@pytest.mark.parametrize("damage", [lambda b: b[:-1] + b"\xc5\xff", lambda b: b + b"}", lambda b: b"[]",
                                    lambda b: b"null", lambda b: b[:len(b) // 2]])
def test_a_marker_that_is_not_its_json_is_not_whole(tmp_path, monkeypatch, capsys, damage):
    """A marker damaged into bytes that are not UTF-8, not JSON or not the object written (found by the fuzz
    family checkpoint_damage): the resumed build rebuilds that stage, it does not stop with a traceback."""
    build.run_build(_two_stages(tmp_path, "plain", monkeypatch, checkpoints=False))
    config = _two_stages(tmp_path, "kept", monkeypatch)
    build.run_build(config, keep_checkpoints=True)
    marker = tmp_path / "kept" / ".checkpoints" / "00-normalize" / "_SUCCESS.json"
    marker.write_bytes(damage(marker.read_bytes()))
    capsys.readouterr()
    build.run_build(config, resume=True)
    printed = capsys.readouterr().out
    assert "the checkpoint of stage normalize is not whole" in printed and "stage normalize done" in printed
    assert _files(tmp_path / "kept") == _files(tmp_path / "plain")


def _count_more(path):
    import json

    facts = json.loads(path.read_text())
    facts[0][1] += 5  # a count the stats add up
    path.write_text(json.dumps(facts))


@pytest.mark.parametrize("name, damage", [("facts.json", _count_more), ("docs.json", _delete),
                                          ("removed.json", _truncate)])
def test_a_damaged_list_of_a_checkpoint_is_rebuilt_on_resume(tmp_path, monkeypatch, capsys, name, damage):
    """facts.json (the stats) and the listings (what is gathered) are checked as the shards are: found by the fuzz
    family checkpoint_damage (a count changed in facts.json stopped the resumed build as a stage's bug)."""
    import json

    plain = build.run_build(_two_stages(tmp_path, "plain", monkeypatch, checkpoints=False))
    config = _two_stages(tmp_path, "kept", monkeypatch)
    build.run_build(config, keep_checkpoints=True)
    damage(tmp_path / "kept" / ".checkpoints" / "00-normalize" / name)
    capsys.readouterr()
    resumed = build.run_build(config, resume=True)
    printed = capsys.readouterr().out
    assert f"00-normalize/{name} " in printed and "stage normalize done" in printed
    assert _files(tmp_path / "kept") == _files(tmp_path / "plain")
    counted = [{k: v for k, v in r.stats.items() if k not in ("timing", "metrics")} for r in (resumed, plain)]
    assert json.dumps(counted[0], sort_keys=True) == json.dumps(counted[1], sort_keys=True)
