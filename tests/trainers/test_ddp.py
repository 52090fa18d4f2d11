"""Two-process DDP on CPU (gloo) through torchrun, compiled around DDP, against one eager process with the same
global batch."""
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch

from tests.trainers.test_train import config, params
from tests.runs import train_on

REPO = pathlib.Path(__file__).resolve().parents[2]  # the workers import tests.*, from any working directory
# One torchrun launch (process start-up dominates) runs three trainings in the same process group:
# uninterrupted, stopped halfway, resumed.
SCRIPT = textwrap.dedent("""
    import sys, torch, torch.distributed as dist
    torch.set_num_threads(1)
    from tests.trainers.test_train import config
    from tests.runs import train_on
    real_compile = torch.compile  # AOTAutograd's eager backend (inductor's code generation takes minutes here)
    torch.compile = lambda model, **kw: real_compile(model, **{**kw, "backend": "aot_eager"})
    dist.init_process_group("gloo")
    full, halves, *overrides = sys.argv[1:]
    train_on(config(full, *overrides))
    train_on(config(halves, *overrides), stop_at_step=2)
    train_on(config(halves, *overrides), resume=True)
    dist.destroy_process_group()
""")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_process_ddp_matches_one_process_and_resumes(tiny_run, tmp_path):
    runs = {}
    for name in ("single", "ddp", "ddp_resumed"):
        runs[name] = tmp_path / name
        shutil.copytree(tiny_run / "tokenizer", runs[name] / "tokenizer")
        shutil.copytree(tiny_run / "tokens", runs[name] / "tokens")
    common = ["train.objective=mlm", "train.max_steps=4", "train.optim.eps=1.0e-6", "train.eval_batches=1"]
    # Global batch 8: two processes x 2 examples x 2 accumulation micro-steps (no_sync), or one process x 8.
    script = tmp_path / "ddp_train.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script),
           str(runs["ddp"]), str(runs["ddp_resumed"]), *common, "train.micro_batch_size=2", "train.grad_accum=2",
           "train.compile=true"]
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("model: encoder") == 3  # rank 0 only reports, once per training
    assert "2 processes" in done.stdout and "compiled, DDP" in done.stdout and "resuming at step 2" in done.stdout
    train_on(config(runs["single"], *common, "train.micro_batch_size=8"))
    single, ddp = params(runs["single"] / "model"), params(runs["ddp"] / "model")
    for key in single:
        assert torch.allclose(single[key], ddp[key], atol=2e-6, rtol=1e-4), key
    resumed = params(runs["ddp_resumed"] / "model")
    assert all(torch.equal(ddp[k], resumed[k]) for k in ddp)
