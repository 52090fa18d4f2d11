"""train --init-from: continue pretraining a transformers checkpoint (here an export of ours)."""
import shutil

import pytest
import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.checkpoint import load_pretrained, save_pretrained
from corpusforge.trainers.export import export_model
from corpusforge.trainers.model import Transformer, model_config
from tests.runs import train_on
from corpusforge.trainers.vocab import Vocabulary
from tests.trainers.exports import randomise
from tests.trainers.test_train import config

pytest.importorskip("transformers")


@pytest.fixture
def exported(tiny_run, tmp_path):
    """An export of a gpt2-layout model (Llama-style: RoPE, RMSNorm, SwiGLU) over the run's own tokenizer."""
    tokenizer = tiny_run / "tokenizer" / "tokenizer.json"
    vocab = Vocabulary.from_file(tokenizer)
    model = randomise(Transformer(model_config("gpt2", "debug", vocab_size=512, max_len=64, dropout=0.0,
                                               position="rope", norm="rmsnorm", activation="swiglu", bias=False)))
    save_pretrained(model, tmp_path / "source", tokenizer=tokenizer,
                    info={"objective": "clm", "family": "gpt2", "special_tokens": vocab.special_ids(),
                          "tokenizer_vocab_size": vocab.size, "step": 0})
    return model, export_model(tmp_path / "source", tmp_path / "export")


def fresh_run(tiny_run, target):
    shutil.copytree(tiny_run / "tokenizer", target / "tokenizer")
    shutil.copytree(tiny_run / "tokens", target / "tokens")
    return target


def test_training_starts_from_the_checkpoint_weights_and_architecture(tiny_run, tmp_path, exported):
    model, export_dir = exported
    run = fresh_run(tiny_run, tmp_path / "run")
    train_on(config(run, "train.objective=clm", f"train.init_from={export_dir}"), stop_at_step=0)
    start, _ = load_pretrained(run / "model")
    assert start.cfg.position == "rope" and start.cfg.activation == "swiglu" and start.cfg.max_len == 64
    assert all(torch.equal(v, start.state_dict()[k]) for k, v in model.state_dict().items())
    other = fresh_run(tiny_run, tmp_path / "run2")
    result = train_on(config(other, "train.objective=clm", f"train.init_from={export_dir}", "train.max_steps=3"))
    assert result.step == 3 and result.train_loss is not None
    trained, _ = load_pretrained(other / "model")
    assert not torch.equal(trained.tok_emb.weight, model.tok_emb.weight)


def test_a_checkpoint_that_does_not_fit_the_run_is_refused(tiny_run, tmp_path, exported):
    _, export_dir = exported
    run = fresh_run(tiny_run, tmp_path / "run")
    with pytest.raises(UserError, match="trains an encoder model"):
        train_on(config(run, "train.objective=mlm", f"train.init_from={export_dir}"), stop_at_step=0)
    with pytest.raises(UserError, match="64 positions, the run needs 127"):
        train_on(config(run, "train.objective=clm", "train.seq_len=127", f"train.init_from={export_dir}"),
                 stop_at_step=0)
    with pytest.raises(UserError, match="not a transformers checkpoint"):
        train_on(config(run, "train.objective=clm", f"train.init_from={tmp_path / 'source'}"), stop_at_step=0)
