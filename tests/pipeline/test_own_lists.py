"""The lists a build writes and reads back within itself (``<kind>-shards.json``: the shards a stage wrote;
``facts.json``: its counts) are read only as they were written (``build.read_list``): cut, edited or gone between
the stage's end and their reading, they stop the build with one line naming them, never a traceback, shards
named or counted wrong, nor an empty clean/."""
import json
import os
from pathlib import Path

import pytest

from corpusforge.core.errors import UserError
from corpusforge.pipeline import build
from tests.pipeline.test_resume import _config, _files


def _edit_rows(path):  # a plausible edit: the JSON stays valid, one count changes
    entries = json.loads(path.read_text())
    if isinstance(entries[0], dict):  # a shard: {"index", "path", "rows", "bytes"}
        entries[0]["rows"] += 1
    else:  # a fact: [[category, key], count]
        entries[0][1] += 1
    path.write_text(json.dumps(entries))


def _point_elsewhere(path):  # a shard path outside the work directory: it would be moved into clean/
    entries = json.loads(path.read_text())
    entries[0]["path"] = str(path.parent.parent / "elsewhere.arrow")
    path.write_text(json.dumps(entries))


def _cut(path):
    os.truncate(path, path.stat().st_size // 2)


def _delete(path):
    path.unlink()


# facts.json names no path (no _point_elsewhere), and a checkpointed build compares it with the stage's marker
# (test_checkpoint_checks.py): those pairs are not drawn
_CASES = [(name, damage, checkpoints) for name in ("docs-shards.json", "facts.json")
          for damage in (_edit_rows, _point_elsewhere, _cut, _delete) for checkpoints in (False, True)
          if name == "docs-shards.json" or (damage is not _point_elsewhere and not checkpoints)]


@pytest.mark.parametrize("name, damage, checkpoints", _CASES,
                         ids=[f"{n}-{d.__name__.strip('_')}-{'checkpoints' if c else 'plain'}" for n, d, c in _CASES])
def test_a_list_damaged_between_its_writing_and_its_reading_is_one_line(tmp_path, monkeypatch, name, damage,
                                                                        checkpoints):
    (tmp_path / "elsewhere.arrow").write_bytes(b"not the build's")
    real_write, marks = build.write_json_lists, tmp_path / "damaged"

    def write_json_lists(tagged, out, files):  # the lists as SaveLists wrote them, then changed by someone else
        real_write(tagged, out, files)
        damage(Path(out) / name)
        marks.write_text(name)

    monkeypatch.setattr(build, "write_json_lists", write_json_lists)
    config = _config(tmp_path, "run", checkpoints)
    config.output.format = "arrow"
    with pytest.raises(UserError) as info:  # before: a JSONDecodeError or KeyError traceback, or a build that
        build.run_build(config)             # published an empty clean/, wrong counts or a file from elsewhere
    message = str(info.value)
    assert marks.exists() and "\n" not in message and name in message and "run the build again" in message
    assert (tmp_path / "elsewhere.arrow").read_bytes() == b"not the build's"  # not moved into the run
    assert not (tmp_path / "run" / "clean").exists() or not _files(tmp_path / "run")
    if not checkpoints:  # its work directory (private, texts from before the PII stage) went with the stop
        assert not list((tmp_path / "run").glob(".tmp-build-*")), list((tmp_path / "run").iterdir())


def test_the_lists_read_as_written_give_the_same_run(tmp_path):
    """No damage: the check changes nothing (the lists' check is beside them, in the work directory only)."""
    result = build.run_build(_config(tmp_path, "run", False))
    assert result.stats["accounting"]["input"] == 61 and _files(tmp_path / "run")
