"""Errors of the environment are not errors of a record (``corpusforge/core/faults.py``, ``errors.environment_error``).

A full disk, a denied permission, a read-only filesystem, too many open files, an I/O error or a broken pipe met in
a stage's per-record step stops the build at once with the one-line resource error naming the path. Before, the
dead-letter rule filed each record that met it as a rejected ``stage_error``: one such record was rejected and the
build published without it, and on every record the build stopped with "N of N records were rejected because a
stage raised on them". A record whose content makes a step raise is still rejected."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

import corpusforge.pipeline.normalize.stage as normalize_stage
from corpusforge.cli.main import main

PATH = "/data/o'brien out.bin"
# errno -> what the one line says after the path
SAID = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
        errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
        errno.EROFS: "read-only filesystem", errno.EMFILE: "too many open files in this process",
        errno.ENFILE: "too many open files on this machine", errno.EIO: "input/output error"}
FLAGS = ["--no-progress", "--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]


def _corpus(tmp_path):
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps({"text": f"document {i} about rivers and hills"}) + "\n" for i in range(20)))
    return data


def _raising_on(monkeypatch, exc, which="document 3 "):
    real = normalize_stage.normalize_and_count

    def normalize_and_count(text, config):
        if which and which not in text:
            return real(text, config)
        raise exc

    monkeypatch.setattr(normalize_stage, "normalize_and_count", normalize_and_count)


def _build(tmp_path, capsys, *flags):
    code = main(["build", "--input", str(_corpus(tmp_path)), "--run-dir", str(tmp_path / "run"), *FLAGS, *flags])
    return code, capsys.readouterr().err


@pytest.mark.timeout(120)
@pytest.mark.parametrize("code", sorted(SAID), ids=errno.errorcode.get)
def test_an_environment_error_on_one_record_stops_the_build_with_its_one_line(code, tmp_path, capsys, monkeypatch):
    _raising_on(monkeypatch, OSError(code, os.strerror(code), PATH))
    exit_code, err = _build(tmp_path, capsys)
    assert exit_code == 2 and err == f"corpusforge: error: {PATH}: {SAID[code]}" + err.split(SAID[code], 1)[1], err
    assert err.count("\n") == 1 and "(--debug shows the traceback)" in err
    assert not (tmp_path / "run" / "clean").exists()  # nothing published without the record


@pytest.mark.timeout(120)
def test_a_full_disk_on_every_record_is_its_one_line_not_too_many_failed_records(tmp_path, capsys, monkeypatch):
    _raising_on(monkeypatch, OSError(errno.ENOSPC, "No space left on device", PATH), which="")
    exit_code, err = _build(tmp_path, capsys)
    assert exit_code == 2 and err.startswith(f"corpusforge: error: {PATH}: no space left on the device"), err
    assert "rejected" not in err and err.count("\n") == 1


@pytest.mark.timeout(120)
def test_a_broken_pipe_on_one_record_is_the_broken_pipe_line(tmp_path, capsys, monkeypatch):
    _raising_on(monkeypatch, BrokenPipeError(errno.EPIPE, "Broken pipe"))
    exit_code, err = _build(tmp_path, capsys)
    assert exit_code == 2 and err.startswith("corpusforge: error: [Errno 32] Broken pipe in step Normalize/"), err


@pytest.mark.timeout(120)
def test_an_environment_error_wrapped_by_a_library_stops_the_build(tmp_path, capsys, monkeypatch):
    try:
        raise PermissionError(errno.EACCES, "Permission denied", PATH)
    except OSError as cause:
        wrapped = RuntimeError("could not open the cache")
        wrapped.__cause__ = cause
    _raising_on(monkeypatch, wrapped)
    exit_code, err = _build(tmp_path, capsys)
    assert exit_code == 2 and err.startswith(f"corpusforge: error: {PATH}: permission denied"), err


@pytest.mark.timeout(120)
@pytest.mark.parametrize("exc", [ValueError("the text says [Errno 28] No space left on device"),
                                 OSError("Not a gzipped file"), MemoryError()], ids=lambda e: type(e).__name__)
def test_a_content_error_on_one_record_is_still_that_records_rejection(exc, tmp_path, capsys, monkeypatch):
    _raising_on(monkeypatch, exc)
    exit_code, err = _build(tmp_path, capsys)
    assert exit_code == 0, err
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    assert stats["rejected"]["reasons"] == {"stage_error": 1}, stats["rejected"]


@pytest.mark.timeout(120)
def test_an_environment_error_in_a_batched_stage_stops_the_build(tmp_path, capsys, monkeypatch):
    # quality's heuristic rules run on batches: a batch that raised was retried record by record, each rejected
    from corpusforge.pipeline.quality.rules import HeuristicRules

    def apply_batch(self, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", PATH)

    monkeypatch.setattr(HeuristicRules, "apply_batch", apply_batch)
    code = main(["build", "--input", str(_corpus(tmp_path)), "--run-dir", str(tmp_path / "run"), "--no-progress",
                 "--set", "dedup.enabled=false", "--set", "pii.enabled=false"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"corpusforge: error: {PATH}: read-only filesystem"), err


@pytest.mark.timeout(300)
def test_an_environment_error_in_a_multi_process_worker_stops_the_build_with_its_one_line(tmp_path):
    # the worker is another interpreter (the error reaches the driver as text): it raises through sitecustomize
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import errno\n"
        "import corpusforge.pipeline.normalize.stage as stage\n"
        "real = stage.normalize_and_count\n"
        "def raising(text, config):\n"
        "    if 'document 3 ' not in text:\n"
        "        return real(text, config)\n"
        f"    raise OSError(errno.ENOSPC, 'No space left on device', {PATH!r})\n"
        "stage.normalize_and_count = raising\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path]), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "corpusforge", "build", "--input", str(_corpus(tmp_path)),
                           "--run-dir", str(tmp_path / "run"), *FLAGS, "--direct_running_mode=multi_processing",
                           "--direct_num_workers=2"], capture_output=True, text=True, timeout=280, cwd=tmp_path, env=env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-3000:]
    assert done.stderr.startswith(f"corpusforge: error: {PATH}: no space left on the device"), done.stderr[-3000:]
