import json
import re
import shutil

import pytest
import torch

from corpusforge.core.config_loader import apply_overrides, from_dict
from corpusforge.core.errors import UserError
from corpusforge.trainers.config import TrainConfig
from corpusforge.trainers.checkpoint import latest_checkpoint, load_checkpoint, load_pretrained
from corpusforge.trainers.train import TrainingDiverged
from corpusforge.core.rundir import RunPaths
from tests.runs import Training, train_on


def config(run_dir, *overrides, overwrite: bool = False) -> Training:
    """What train_model takes: the ``train`` section and the run directory. (Built without corpusforge.config,
    whose imports take seconds: this also runs in torchrun workers.)"""
    data = apply_overrides({}, [
        "train.model.size=debug", "train.seq_len=32", "train.micro_batch_size=8",
        "train.max_steps=6", "train.eval_every=0", "train.eval_batches=2", "train.log_every=2",
        "train.progress=false", "train.optim.warmup_steps=2", "train.optim.lr=0.003", "train.model.dropout=0.0",
        *[o for o in overrides if o.startswith("train.")]])
    return Training(from_dict(TrainConfig, data["train"], "train"), RunPaths(str(run_dir), overwrite))


def params(model_dir):
    model, _ = load_pretrained(model_dir)
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("objective", ["clm", "mlm", "span"])
def test_gradient_accumulation_equals_the_large_batch(run_dir, tmp_path, objective):
    results = []
    for i, (micro, accum) in enumerate([(8, 1), (2, 4)]):
        out = tmp_path / f"r{i}"
        shutil.copytree(run_dir, out)
        # Adam's first steps move every weight by about +-lr whatever the gradient's size, so a gradient that
        # is ~0 up to rounding could flip sign; a larger epsilon keeps those from dominating the comparison.
        train_on(config(out, f"train.objective={objective}", f"train.micro_batch_size={micro}",
                      f"train.grad_accum={accum}", "train.max_steps=3", "train.optim.eps=1.0e-6"))
        results.append(params(out / "model"))
    for key in results[0]:
        assert torch.allclose(results[0][key], results[1][key], atol=2e-6, rtol=1e-4), key


@pytest.mark.parametrize("objective", ["clm", "bart"])
def test_resume_is_exact(run_dir, tmp_path, objective):
    # Dropout on, so the RNG state has to come back too.
    overrides = [f"train.objective={objective}", "train.model.dropout=0.1", "train.checkpoint_every=100"]
    straight = tmp_path / "straight"
    shutil.copytree(run_dir, straight)
    train_on(config(straight, *overrides))
    train_on(config(run_dir, *overrides), stop_at_step=3)
    state = load_checkpoint(latest_checkpoint(run_dir / "model" / "checkpoints"))
    assert state["step"] == 3 and state["data_position"] == 24
    assert not any(k.startswith(("module.", "_orig_mod.")) for k in state["model"])
    with pytest.raises(UserError, match="--resume"):
        train_on(config(run_dir, *overrides))  # refuses to start over on top of a checkpoint
    result = train_on(config(run_dir, *overrides), resume=True)
    assert result.step == 6
    a, b = params(straight / "model"), params(run_dir / "model")
    assert all(torch.equal(a[k], b[k]) for k in a)
    records = [json.loads(line) for line in (run_dir / "model" / "metrics.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in records if r["split"] == "train"]
    assert steps == [2, 3, 4, 6]  # the log continues where the checkpoint left off


def test_outputs_and_reloading(run_dir):
    result = train_on(config(run_dir, "train.objective=mlm", "train.eval_every=3"))
    model_dir = run_dir / "model"
    for name in ("model.safetensors", "config.json", "tokenizer.json", "metrics.jsonl", "loss_curve.png"):
        assert (model_dir / name).exists(), name
    records = [json.loads(line) for line in (model_dir / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in records if r["split"] == "val"]
    assert [r["step"] for r in val] == [3, 6]
    assert val[-1]["ppl"] == pytest.approx(2.718281828 ** val[-1]["loss"], rel=1e-6) and 0 <= val[-1]["accuracy"] <= 1
    train = [r for r in records if r["split"] == "train"]
    assert [r["step"] for r in train] == [2, 4, 6] and all(r["tokens_per_s"] > 0 for r in train)
    model, info = load_pretrained(model_dir)
    assert info["objective"] == "mlm" and info["special_tokens"]["mask"] == 4
    assert model.cfg.arch == "encoder" and result.parameters == model.num_params()
    assert result.eval["loss"] == val[-1]["loss"]


def test_divergence_stops_with_a_clear_error(run_dir):
    with pytest.raises(TrainingDiverged, match="diverged"):
        train_on(config(run_dir, "train.optim.lr=1.0e+30", "train.optim.clip=0", "train.optim.warmup_steps=0",
                      "train.max_steps=20"))


def test_a_non_finite_gradient_is_caught_before_the_next_log_or_checkpoint(run_dir, monkeypatch):
    real_clip, calls = torch.nn.utils.clip_grad_norm_, []

    def nan_at_step_3(parameters, max_norm, *args, **kwargs):
        norm = real_clip(parameters, max_norm, *args, **kwargs)
        calls.append(1)
        return norm * float("nan") if len(calls) == 3 else norm

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", nan_at_step_3)
    with pytest.raises(TrainingDiverged, match="gradient norm is nan at step 3: training diverged.*step-00000002.pt"):
        train_on(config(run_dir, "train.log_every=4", "train.checkpoint_every=1", "train.keep_checkpoints=5"))
    saved = sorted(p.name for p in (run_dir / "model" / "checkpoints").iterdir())
    assert saved == ["step-00000001.pt", "step-00000002.pt"]  # none with the weights the bad step touched


def test_configuration_errors(run_dir):
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="no CUDA device"):
            train_on(config(run_dir, "train.device=cuda"))
    with pytest.raises(UserError, match="needs an encoder_decoder"):
        train_on(config(run_dir, "train.objective=span", "train.model.family=gpt2"))
    with pytest.raises(UserError, match="tokenize the corpus first"):
        train_on(config(run_dir / "missing"))


def test_training_lowers_the_loss(run_dir):
    train_on(config(run_dir, "train.objective=clm", "train.max_steps=40", "train.log_every=5",
                    "train.optim.warmup_steps=5", "train.optim.lr=0.01"))
    records = [json.loads(line) for line in (run_dir / "model" / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records if r["split"] == "train"]
    assert len(losses) == 8 and losses[-1] < losses[0] - 1.0, losses  # from ~ln(448) = 6.1 down


def test_the_logged_learning_rate_is_the_one_the_step_used(run_dir):
    train_on(config(run_dir, "train.max_steps=4", "train.log_every=1", "train.optim.warmup_steps=2",
                    "train.optim.schedule=linear", "train.optim.min_lr_ratio=0.0"))
    records = [json.loads(line) for line in (run_dir / "model" / "metrics.jsonl").read_text().splitlines()]
    # Warmup 0.0015, 0.003; then linear decay from the peak over the last two steps.
    assert [r["lr"] for r in records if r["split"] == "train"] == pytest.approx([0.0015, 0.003, 0.003, 0.0015])


def test_warmup_longer_than_the_run_is_said_at_start(run_dir, capsys):
    train_on(config(run_dir, "train.max_steps=2", "train.optim.warmup_steps=10"))
    assert "warmup is shortened to 1 steps" in capsys.readouterr().out


def test_token_ids_beyond_the_vocabulary_are_refused_before_training(run_dir):
    from corpusforge.tokenizer.token_shards import write_token_shards

    manifest_path = run_dir / "tokens" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    vocab_size = manifest["vocab_size"]
    manifest["vocab_size"] = vocab_size + 100
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(UserError, match=f"vocab_size {vocab_size + 100} but .*tokenizer.json has {vocab_size}"):
        train_on(config(run_dir))
    manifest["vocab_size"] = vocab_size
    manifest_path.write_text(json.dumps(manifest))
    # A shard written with a larger vocabulary (the manifest carries no tokenizer hash to catch it).
    for old in (run_dir / "tokens" / "val").glob("part-*.arrow"):
        old.unlink()
    write_token_shards(run_dir / "tokens" / "val", [[5, 6, vocab_size + 3]] * 50, docs_per_shard=128)
    with pytest.raises(UserError, match=f"val token shards of .*manifest.json hold token id {vocab_size + 3}, "
                                        f"beyond the vocabulary of {vocab_size} tokens"):
        train_on(config(run_dir))
    assert not (run_dir / "model").exists()


@pytest.mark.parametrize("pair", ["nsp", "sop"])
def test_sentence_pair_objectives_train_the_pair_classifier(run_dir, pair):
    result = train_on(config(run_dir, "train.objective=mlm", f"train.mlm.{pair}=true", "train.max_steps=4"))
    model, info = load_pretrained(result.model_dir)
    assert model.cfg.sentence_head and model.cfg.num_segments == 2 and info["train"]["mlm"][pair] is True
    assert result.train_loss is not None and result.train_loss == result.train_loss  # finite, not NaN


def test_nsp_and_sop_together_are_refused(run_dir):
    from corpusforge.core.config_loader import ConfigError

    with pytest.raises(ConfigError, match="turn one of them off"):
        config(run_dir, "train.objective=mlm", "train.mlm.nsp=true", "train.mlm.sop=true")


def test_progress_off_a_terminal_is_plain_lines(run_dir, capsys):
    """Under a pipe or in CI, no tqdm frames joined by carriage returns: a line per report and one at the end."""
    train_on(config(run_dir, "train.max_steps=4", "train.log_every=2", "train.eval_every=2"), progress=True)
    err = capsys.readouterr().err
    assert "\r" not in err
    assert re.search(r"^train: done in \d+:\d\d: step 4 of 4, loss \d", err, re.M), err


def test_tokens_made_from_another_clean_are_refused_naming_the_command(run_dir):
    """Tokenized (with --input RUN/clean or not) from a clean/ that a rebuild has since replaced: refused."""
    from corpusforge.core import rundir

    rundir.write_marker(str(run_dir), {"outputs": {"clean": [], "tokens": None}, "corpus_fingerprint": "rebuilt",
                                       "derived": {"tokens": "the clean/ before"}})
    with pytest.raises(UserError, match="earlier build.*corpusforge tokenize --overwrite"):
        train_on(config(run_dir, "train.max_steps=1"))
    assert not (run_dir / "model").exists()


def test_a_shard_cut_under_a_data_loader_worker_is_its_own_one_line(run_dir, monkeypatch, capsys):
    """A UserError raised in a DataLoader worker process (here a train shard cut after the trainer read its offsets,
    before a worker reads its tokens) is the user's one line, exit 2: torch re-raises it in the main process with
    the worker's whole traceback as its message."""
    import corpusforge.trainers.train as train_module
    from corpusforge.cli.main import main

    shards = sorted((run_dir / "tokens" / "train").glob("part-*.arrow"))
    real = train_module.make_loader

    def cut_then_load(dataset, plan, num_workers=0, **kwargs):
        if num_workers:  # the training loader, after TokenShards opened the files
            for shard in shards:
                with open(shard, "r+b") as f:
                    f.truncate(100)
        return real(dataset, plan, num_workers, **kwargs)

    monkeypatch.setattr(train_module, "make_loader", cut_then_load)
    capsys.readouterr()
    code = main(["train", "--run-dir", str(run_dir), "--size", "debug", "--seq-len", "32", "--batch-size", "8",
                 "--max-steps", "2", "--no-progress", "--set", "train.num_workers=1", "--set", "train.eval_every=0"])
    lines = capsys.readouterr().err.splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert re.fullmatch(r"corpusforge: error: \S+part-0000\d-of-00003\.arrow was cut to 100 bytes while it was read: "
                        r"something else writes to the token shards; run `corpusforge tokenize` again once nothing "
                        r"does", lines[0]), lines[0]
