"""Checkpoints: plain-data loading (no code runs), atomic writes that clean up after a full disk, shareable
model files, and a training killed with SIGKILL that resumes to the uninterrupted result."""
import errno
import os
import pathlib
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers import checkpoint as ckpt
from corpusforge.trainers.model import Transformer, model_config
from tests.fuzz.configs import member_data_offset
from tests.runs import train_on
from tests.trainers.test_train import config, params

REPO = pathlib.Path(__file__).resolve().parents[2]


class Payload:
    """Unpickling this runs code: what a hostile "checkpoint" would do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.write_text, (pathlib.Path(self.marker), "pwned"))


def test_a_checkpoint_with_a_pickle_payload_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "step-00000001.pt"
    torch.save({"model": {}, "step": 1, "extra": Payload(str(marker))}, path)
    with pytest.raises(UserError, match="refusing to load"):
        ckpt.load_checkpoint(path)
    assert not marker.exists()


def _owned(tmp_path):
    """A model directory the run directory's marker records (checkpoints are deleted only there)."""
    from corpusforge.core import rundir

    rundir.record_output(str(tmp_path), "model")
    return tmp_path / "model"


def test_old_checkpoints_go_only_where_the_marker_records_them(tmp_path):
    ckpt.save_checkpoint(tmp_path, 1, {"step": 1}, keep=1)
    with pytest.raises(UserError, match="no .corpusforge-run.json above it"):
        ckpt.save_checkpoint(tmp_path, 2, {"step": 2}, keep=1)  # step-1 is not recorded as corpusforge's
    assert (tmp_path / "step-00000001.pt").exists()
    model_dir = _owned(tmp_path)
    for step in (1, 2, 3):
        ckpt.save_checkpoint(model_dir / "checkpoints", step, {"step": step}, keep=1)
    assert [p.name for p in ckpt.list_checkpoints(model_dir / "checkpoints")] == ["step-00000003.pt"]


def test_rng_states_round_trip_through_weights_only_loading(tmp_path):
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    np.random.standard_normal()  # a cached gaussian in numpy's state
    state = ckpt.capture_rng()
    path = ckpt.save_checkpoint(tmp_path, 1, {"rng": [state], "step": 1})
    expected = (random.random(), np.random.standard_normal(), torch.rand(1))
    ckpt.restore_rng(ckpt.load_checkpoint(path)["rng"][0])
    assert (random.random(), np.random.standard_normal(), torch.rand(1)) == expected


def test_a_truncated_checkpoint_is_a_clear_error(tmp_path):
    path = ckpt.save_checkpoint(tmp_path, 1, {"model": {"w": torch.ones(1000)}, "step": 1})
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(UserError, match="not a readable checkpoint"):
        ckpt.load_checkpoint(path)


@pytest.mark.parametrize("seed", range(12))
def test_a_checkpoint_with_one_changed_bit_is_refused(tmp_path, seed):
    """torch.load does not check the CRC-32 of its zip members: a bit changed in a tensor loaded as other weights
    and the run resumed from them. Any bit of any member's data, the pickle included, is now one line."""
    import zipfile

    path = ckpt.save_checkpoint(tmp_path, 1, {"model": {"w": torch.arange(4000, dtype=torch.float32)}, "step": 1,
                                              "rng": [ckpt.capture_rng()]})
    rng = random.Random(seed)
    with zipfile.ZipFile(path) as archive:
        member = rng.choice([i for i in archive.infolist() if i.file_size])
    data = bytearray(path.read_bytes())
    data[member_data_offset(data, member) + rng.randrange(member.file_size)] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match="is damaged|not a readable checkpoint") as info:
        ckpt.load_checkpoint(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


class FullDisk:
    """A file that takes 64 KiB, then fails every write as a full disk does."""

    def __init__(self, path, mode):
        self.file, self.written = open(path, mode), 0

    def write(self, data):
        if self.written + len(data) > 65536:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.written += len(data)
        return self.file.write(data)

    def __getattr__(self, name):
        return getattr(self.file, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


def test_a_full_disk_gives_one_line_naming_the_path_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    directory = _owned(tmp_path) / "checkpoints"
    ckpt.save_checkpoint(directory, 1, {"step": 1})
    monkeypatch.setattr(ckpt, "open", FullDisk, raising=False)  # the real torch.save meets the full disk
    with pytest.raises(UserError) as info:
        ckpt.save_checkpoint(directory, 2, {"step": 2, "model": {"w": torch.ones(100_000)}})
    message = str(info.value)
    assert "\n" not in message and str(directory / "step-00000002.pt") in message
    assert "No space left on device" in message and "free space" in message and "--resume" in message
    assert sorted(p.name for p in directory.iterdir()) == ["step-00000001.pt"]  # no .step-*.pt.tmp-* left


def test_the_model_file_is_readable_by_others_as_the_umask_allows(tmp_path):
    model = Transformer(model_config("gpt2", "debug", vocab_size=64))
    old = os.umask(0o022)
    try:
        path = ckpt.save_pretrained(model, tmp_path, tokenizer=None, info={})
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "config.json").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_starting_over_is_transactional_the_earlier_run_stays_until_the_new_one_finishes(run_dir, monkeypatch):
    from corpusforge.core import rundir
    from corpusforge.trainers import train

    train_on(config(run_dir, "train.max_steps=2"))
    model_dir = run_dir / "model"
    earlier = {str(p.relative_to(model_dir)): p.read_bytes() for p in sorted(model_dir.rglob("*")) if p.is_file()}
    again = config(run_dir, "train.max_steps=4", "train.checkpoint_every=1", overwrite=True)
    real_step, calls = train._step, []

    def crash(session):
        if len(calls) == 2:
            raise RuntimeError("killed")  # the new run dies after it wrote checkpoints of its own
        calls.append(1)
        real_step(session)

    monkeypatch.setattr(train, "_step", crash)
    with pytest.raises(RuntimeError, match="killed"):
        train_on(again)
    now = {str(p.relative_to(model_dir)): p.read_bytes() for p in sorted(model_dir.rglob("*")) if p.is_file()}
    assert now == earlier  # the earlier run, byte for byte
    assert not list(run_dir.glob(".tmp-*")) and rundir.read_marker(str(run_dir))["scratch"] == []
    monkeypatch.setattr(train, "_step", real_step)
    result = train_on(again)
    assert result.step == 4 and result.model_dir == model_dir
    assert [p.name for p in ckpt.list_checkpoints(model_dir / "checkpoints")][-1] == "step-00000004.pt"
    assert (model_dir / "config.json").exists() and not list(run_dir.glob(".tmp-*"))


def test_a_run_started_over_names_the_model_where_it_ends_up(run_dir, capsys):
    # `train --overwrite` ended "step 2: train loss ..., val loss ...; model in RUN/.tmp-swap-train/model", the
    # staging folder swapped in as RUN/model right after: the path printed was gone when the user looked
    train_on(config(run_dir, "train.max_steps=1"))
    capsys.readouterr()
    result = train_on(config(run_dir, "train.max_steps=2", overwrite=True))
    out = capsys.readouterr().out
    assert ".tmp-swap-train" not in out and f"; model in {run_dir / 'model'}\n" in out, out
    assert result.model_dir == run_dir / "model" and (result.model_dir / "config.json").exists()


def test_ctrl_c_in_a_run_started_over_says_what_is_kept(run_dir, monkeypatch, capsys):
    # Ctrl-C while a run started over (output.overwrite) trained printed "interrupted: checkpoint at step 2 in
    # RUN/.tmp-swap-train/model/checkpoints/...; continue with --resume": that folder is deleted on the way out
    # (the earlier run stays), and --resume continues the earlier run, not this one.
    from corpusforge.trainers import train

    train_on(config(run_dir, "train.max_steps=2"))
    again = config(run_dir, "train.max_steps=4", "train.checkpoint_every=1", overwrite=True)
    real_step, calls = train._step, []

    def interrupt(session):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(1)
        real_step(session)

    monkeypatch.setattr(train, "_step", interrupt)
    capsys.readouterr()
    with pytest.raises(KeyboardInterrupt):
        train_on(again)
    out = capsys.readouterr().out
    assert "continue with --resume" not in out and ".tmp-swap-train" not in out, out
    assert "interrupted at step 2: the run started over (output.overwrite) is not kept" in out, out
    assert not list(run_dir.glob(".tmp-*"))


def test_a_folder_of_the_users_named_model_is_never_replaced(run_dir):
    mine = run_dir / "model"
    (mine / "checkpoints").mkdir(parents=True)
    (mine / "checkpoints" / "step-00000009.pt").write_bytes(b"my own")
    (mine / "config.json").write_text("mine")
    again = config(run_dir, "train.max_steps=2", overwrite=True)
    with pytest.raises(UserError, match="not one of the outputs corpusforge recorded|no .corpusforge-run.json"):
        train_on(again)
    assert (mine / "checkpoints" / "step-00000009.pt").read_bytes() == b"my own"
    assert (mine / "config.json").read_text() == "mine"


def test_a_full_disk_while_writing_the_model_is_one_line(tmp_path, monkeypatch):
    from corpusforge.core import files

    monkeypatch.setattr(files, "open", FullDisk, raising=False)
    with pytest.raises(UserError, match=f"could not write the model to {tmp_path}: No space left on device; free"):
        ckpt.save_pretrained(Transformer(model_config("gpt2", "debug", vocab_size=64)), tmp_path, tokenizer=None,
                             info={})
    assert list(tmp_path.iterdir()) == []


# A training that checkpoints every step, slowed so the parent can kill it between two checkpoints.
KILLED = textwrap.dedent("""
    import sys, time, torch
    torch.set_num_threads(1)
    from corpusforge.trainers import checkpoint
    from tests.trainers.test_train import config
    from tests.runs import train_on
    save = checkpoint.save_checkpoint
    def slow_save(directory, step, state, keep=2):
        path = save(directory, step, state, keep)
        print(f"saved {step}", flush=True)
        time.sleep(0.3)
        return path
    checkpoint.save_checkpoint = slow_save
    train_on(config(*sys.argv[1:]))
""")


@pytest.mark.timeout(300)
def test_a_training_killed_with_sigkill_resumes_to_the_uninterrupted_result(run_dir, tmp_path):
    overrides = ["train.objective=clm", "train.model.dropout=0.1", "train.max_steps=8", "train.checkpoint_every=1",
                 "train.keep_checkpoints=2"]
    straight = tmp_path / "straight"
    import shutil

    shutil.copytree(run_dir, straight)
    train_on(config(straight, *overrides))
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, str(script), str(run_dir), *overrides], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith("saved 3"):
            break
    time.sleep(0.15)  # inside step 4's work, or its checkpoint write
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    model_dir = run_dir / "model"
    assert not (model_dir / "model.safetensors").exists()  # nothing that looks like a finished model
    checkpoints = ckpt.list_checkpoints(model_dir / "checkpoints")
    assert 3 <= [ckpt.load_checkpoint(p)["step"] for p in checkpoints][-1] < 8  # every one complete
    # What a kill in the middle of a checkpoint write leaves: a partial temporary file beside them.
    partial = model_dir / "checkpoints" / ".step-00000009.pt.tmp-12345"
    partial.write_bytes(b"PK\x03\x04 half a zip")
    over = tmp_path / "over"
    shutil.copytree(run_dir, over)
    with pytest.raises(UserError, match="--resume"):  # without --resume: refused, nothing mistaken for done
        train_on(config(over, *overrides))
    starting_over = config(over, *overrides, overwrite=True)
    train_on(starting_over)
    result = train_on(config(run_dir, *overrides), resume=True)
    assert result.step == 8
    a, b, c = params(straight / "model"), params(model_dir), params(over / "model")
    assert all(torch.equal(a[k], b[k]) and torch.equal(a[k], c[k]) for k in a)
    assert not [p for p in (model_dir / "checkpoints").iterdir() if ".tmp-" in p.name]
