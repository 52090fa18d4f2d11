"""Compile, activation checkpointing and FSDP, applied from outside the model (trainers/parallel.py)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from corpusforge.trainers.model import Transformer, model_config
from corpusforge.trainers.registry import build_objective, prepare_vocabulary
from corpusforge.trainers.parallel import Distributed, parallelize
from tests.runs import train_on
from tests.trainers.test_ddp import SCRIPT as TORCHRUN_SCRIPT  # uninterrupted, stopped halfway, resumed
from tests.trainers.test_train import config, params

REPO = pathlib.Path(__file__).resolve().parents[2]
FAMILY = {"mlm": "bert", "span": "t5", "bart": "bart", "clm": "gpt2", "prefixlm": "gpt2"}
SEQ = 32


def batches(vocab, name, count=2):
    """``count`` collated batches of the objective from different windows (different numbers of targets)."""
    v = prepare_vocabulary(vocab, name, SEQ)
    objective = build_objective(name, v, SEQ)
    rng = np.random.default_rng(0)
    stream = rng.integers(5, v.size, size=4096)
    stream[rng.random(4096) < 0.1] = v.eos
    out = []
    for b in range(count):
        examples = [objective.example(stream[(b * 4 + i) * 100:][: objective.raw_length].copy(), rng)
                    for i in range(4)]
        out.append(objective.collate(examples))
    return v, objective, out


@pytest.mark.parametrize("name", list(FAMILY))
def test_every_family_compiles_to_one_graph_without_recompiling(vocab, name):
    from torch._dynamo.testing import CompileCounterWithBackend

    v, objective, (first, second) = batches(vocab, name)
    torch.manual_seed(0)
    model = Transformer(model_config(FAMILY[name], "debug", vocab_size=v.size, max_len=max(SEQ, objective.decoder_length),
                                     dropout=0.0))
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")  # dynamo's graph capture with AOTAutograd (the backward too)
    compiled = torch.compile(model, fullgraph=True, backend=counter)  # a graph break is an error
    for batch in (first, second):
        _, eager = model(**batch)
        _, loss = compiled(**batch)
        loss.backward()
        assert torch.allclose(loss, eager, atol=1e-5)
    assert counter.frame_count == 1  # one graph for both batches: no shape depends on the data


@pytest.mark.parametrize("name", ["rtd", "sop"])
def test_electra_and_sentence_order_compile_to_one_graph(vocab, name):
    """ELECTRA's generator sampling (Gumbel-max, no host sync) and SOP's padded pairs: one graph, no recompile."""
    from torch._dynamo.testing import CompileCounterWithBackend

    from corpusforge.trainers.config import MLMConfig, TrainConfig
    from corpusforge.trainers.electra import ReplacedTokenDetection, discriminator_config, generator_config

    tc = TrainConfig(objective="rtd" if name == "rtd" else "mlm", mlm=MLMConfig(sop=name == "sop"))
    objective = build_objective(tc.objective, vocab, SEQ, tc)
    rng = np.random.default_rng(0)
    stream = rng.integers(5, vocab.size, size=4096)
    stream[rng.random(4096) < 0.1] = vocab.eos
    first, second = (objective.collate([objective.example(stream[(b * 4 + i) * 100:][: objective.raw_length].copy(), rng)
                                        for i in range(4)]) for b in range(2))
    torch.manual_seed(0)
    if name == "rtd":
        d = discriminator_config(model_config("bert", "debug", vocab_size=vocab.size, max_len=SEQ, dropout=0.0))
        model = ReplacedTokenDetection(d, generator_config(d, 0.25), sample_vocab_size=vocab.size)
    else:
        assert "attention_mask" in first and first["next_sentence_labels"].shape == (4,)
        model = Transformer(model_config("bert", "debug", vocab_size=vocab.size, max_len=SEQ, dropout=0.0,
                                         num_segments=2, sentence_head=True))
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(model, fullgraph=True, backend=counter)
    for batch in (first, second):
        torch.manual_seed(1)  # the same generator samples in both runs
        _, eager = model(**batch)
        torch.manual_seed(1)
        _, loss = compiled(**batch)
        loss.backward()
        assert torch.allclose(loss, eager, atol=1e-4)
    assert counter.frame_count == 1


def test_checkpointed_blocks_compile_to_one_graph(vocab):
    from torch._dynamo.testing import CompileCounterWithBackend

    v, objective, (batch, _) = batches(vocab, "span")
    torch.manual_seed(0)
    model = Transformer(model_config("t5", "debug", vocab_size=v.size, max_len=SEQ, dropout=0.0))
    _, eager = model(**batch)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    parallelize(model, Distributed(), checkpoint_activations=True)
    _, loss = torch.compile(model, fullgraph=True, backend=counter)(**batch)
    loss.backward()
    assert counter.frame_count == 1 and torch.allclose(loss, eager, atol=1e-5)


def test_ddp_wraps_before_compile_and_the_model_is_one_graph(monkeypatch):
    """compile(DDP(model)): Dynamo compiles the model's forward inside DDP's (one process group of one)."""
    import torch.distributed as dist
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("aot_eager")
    real_compile = torch.compile
    monkeypatch.setattr(torch, "compile", lambda model, **kw: real_compile(model, backend=counter, **kw))
    torch._dynamo.reset()
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = Transformer(model_config("gpt2", "debug", vocab_size=64, dropout=0.0))
        trained = parallelize(model, Distributed(world_size=2), compile=True)
        assert isinstance(trained._orig_mod, torch.nn.parallel.DistributedDataParallel)
        assert trained._orig_mod.module is model
        ids = torch.randint(0, 64, (2, 8))
        for _ in range(2):
            _, loss = trained(ids, labels=ids)
            loss.backward()
        assert counter.frame_count == 1 and torch.allclose(loss, model(ids, labels=ids)[1])
    finally:
        dist.destroy_process_group()


def test_fsdp_gathers_parameters_in_the_autocast_dtype():
    """fully_shard with a bfloat16 MixedPrecisionPolicy (one process group of one): blocks compute with bfloat16
    weights, the sharded parameters and their gradients stay float32."""
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = Transformer(model_config("gpt2", "debug", vocab_size=64, dropout=0.0))
        trained = parallelize(model, Distributed(world_size=2), data_parallel="fsdp", param_dtype=torch.bfloat16)
        seen = []
        model.decoder.blocks[0].mlp.up.register_forward_hook(lambda m, i, o: seen.append(m.weight.dtype))
        ids = torch.randint(0, 64, (2, 8))
        _, loss = trained(ids, labels=ids)
        loss.backward()
        assert seen == [torch.bfloat16] and torch.isfinite(loss)
        up = model.decoder.blocks[0].mlp.up.weight
        assert up.dtype == torch.float32 and up.grad.dtype == torch.float32
    finally:
        dist.destroy_process_group()


def test_activation_checkpointing_gives_the_same_training_with_plain_names(run_dir, tmp_path):
    plain = tmp_path / "plain"
    shutil.copytree(run_dir, plain)
    overrides = ["train.objective=span", "train.model.dropout=0.1", "train.max_steps=3"]  # dropout: RNG replayed
    train_on(config(plain, *overrides))
    checkpointed = [*overrides, "train.checkpoint_activations=true"]
    train_on(config(run_dir, *checkpointed), stop_at_step=2)
    train_on(config(run_dir, *checkpointed), resume=True)  # checkpoints load into the wrapped blocks
    a, b = params(plain / "model"), params(run_dir / "model")
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_checkpointed_blocks_keep_the_state_dict_names():
    model = Transformer(model_config("t5", "debug", vocab_size=64))
    names = set(model.state_dict())
    parallelize(model, Distributed(), checkpoint_activations=True)
    assert set(model.state_dict()) == names
    assert type(model.encoder.blocks[0]).__name__ == "CheckpointWrapper"


def test_compiled_training_matches_eager(run_dir, tmp_path, monkeypatch):
    """train.compile=true end to end (inductor's code generation is exercised by the CUDA test: on this CPU it
    takes minutes, so the graphs run through AOTAutograd's eager backend here)."""
    compile_calls = []

    def compile_eagerly(model, **kwargs):
        compile_calls.append(kwargs)
        return real_compile(model, **{**kwargs, "backend": "aot_eager"})

    real_compile = torch.compile
    monkeypatch.setattr(torch, "compile", compile_eagerly)
    eager = tmp_path / "eager"
    shutil.copytree(run_dir, eager)
    overrides = ["train.objective=mlm", "train.max_steps=3", "train.log_every=1", "train.model.dropout=0.0"]
    train_on(config(eager, *overrides))
    torch._dynamo.reset()
    train_on(config(run_dir, *overrides, "train.compile=true"))
    assert compile_calls == [{"fullgraph": True}]

    def losses(run):
        records = [json.loads(line) for line in (run / "model" / "metrics.jsonl").read_text().splitlines()]
        return [r["loss"] for r in records if r["split"] == "train"]

    assert losses(run_dir) == pytest.approx(losses(eager), rel=1e-5)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_process_fsdp_with_checkpointing_and_compile_matches_one_process_and_resumes(tiny_run, tmp_path):
    runs = {}
    for name in ("single", "fsdp", "fsdp_resumed"):
        runs[name] = tmp_path / name
        shutil.copytree(tiny_run / "tokenizer", runs[name] / "tokenizer")
        shutil.copytree(tiny_run / "tokens", runs[name] / "tokens")
    common = ["train.objective=span", "train.max_steps=4", "train.optim.eps=1.0e-6", "train.eval_batches=1"]
    script = tmp_path / "fsdp_train.py"
    script.write_text(TORCHRUN_SCRIPT)  # FSDP, checkpointing and compile come as overrides
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script),
           str(runs["fsdp"]), str(runs["fsdp_resumed"]), *common, "train.micro_batch_size=2", "train.grad_accum=2",
           "train.data_parallel=fsdp", "train.checkpoint_activations=true", "train.compile=true"]
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "compiled, FSDP, activation checkpointing" in done.stdout and "resuming at step 2" in done.stdout
    train_on(config(runs["single"], *common, "train.micro_batch_size=8"))
    single, fsdp = params(runs["single"] / "model"), params(runs["fsdp"] / "model")
    assert single.keys() == fsdp.keys()
    for key in single:
        assert torch.allclose(single[key], fsdp[key], atol=5e-6, rtol=1e-4), key
    resumed = params(runs["fsdp_resumed"] / "model")
    assert all(torch.equal(fsdp[k], resumed[k]) for k in fsdp)
