"""What only a GPU can show: bf16 autocast + torch.compile (inductor) + fused AdamW, NCCL under torchrun, and
an MFU figure. Skipped without CUDA, so the first `make test` on a GPU machine measures them."""
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest
import torch

from corpusforge.trainers.train import build_optimizer
from tests.runs import train_on
from tests.trainers.test_train import config

REPO = pathlib.Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_bf16_compiled_fused_adamw_training_on_cuda(run_dir, capsys):
    result = train_on(config(run_dir, "train.device=cuda", "train.dtype=auto", "train.compile=true",
                             "train.objective=span", "train.max_steps=4", "train.log_every=1"))
    out = capsys.readouterr().out
    native = torch.cuda.is_bf16_supported(including_emulation=False)
    assert ("precision bfloat16" if native else "precision float16 with a loss scaler") in out
    assert "cuda" in out and "compiled" in out
    assert result.train_loss is not None and result.train_loss == result.train_loss  # finite, not NaN
    from corpusforge.trainers.model import Transformer, model_config

    optimizer = build_optimizer(Transformer(model_config("gpt2", "debug", vocab_size=64)).cuda(),
                                config(run_dir).train, torch.device("cuda"))
    assert optimizer.param_groups[0]["fused"]


TORCHRUN = textwrap.dedent("""
    import sys
    from tests.trainers.test_train import config
    from tests.runs import train_on
    run, *overrides = sys.argv[1:]
    train_on(config(run, *overrides))
""")


@pytest.mark.slow
@pytest.mark.parametrize("data_parallel", ["ddp", "fsdp"])
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_two_process_torchrun_on_cuda(tiny_run, tmp_path, data_parallel):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(tiny_run / "tokenizer", run / "tokenizer")
    shutil.copytree(tiny_run / "tokens", run / "tokens")
    script = tmp_path / "cuda_train.py"
    script.write_text(TORCHRUN)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script), str(run),
           "train.device=cuda", "train.compile=true", "train.max_steps=4", f"train.data_parallel={data_parallel}",
           "train.checkpoint_activations=true"]
    done = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 processes" in done.stdout and (run / "model" / "model.safetensors").exists()


@pytest.mark.slow
def test_bench_reports_an_mfu_figure():
    done = subprocess.run([sys.executable, str(REPO / "bench" / "train.py"), "--mfu", "--mfu-batch", "4"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    print(done.stdout)  # the figure, in the test log (pytest -s) for the README
    line = done.stdout.strip().splitlines()[-1]
    assert re.search(r"[\d,]+ tokens/s, [\d.]+ TFLOP/s", line), line
    if "MFU" in line:
        assert 0 < float(re.search(r"MFU ([\d.]+)%", line).group(1)) < 100
