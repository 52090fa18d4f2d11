"""finetune --method elmo: a frozen ELMo biLM, a learned scalar mix of its layers, mean-pooled, under a classifier."""
import shutil

import pytest
import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.checkpoint import load_pretrained
from corpusforge.trainers.finetune import train as finetune_module
from corpusforge.trainers.finetune.config import FinetuneConfig
from corpusforge.trainers.finetune.train import finetune
from tests.runs import train_on
from tests.trainers.finetune.conftest import interrupt_at_epoch
from tests.trainers.finetune.test_train import check_reload
from tests.trainers.test_elmo import make_elmo_run
from tests.trainers.test_train import config as train_config


@pytest.fixture(scope="module")
def elmo_model(tmp_path_factory):
    """A run's model/ trained for a few steps with objective bilm (debug size: d_model 32, 2 LSTM layers)."""
    run = make_elmo_run(tmp_path_factory.mktemp("elmo-run"))
    return train_on(train_config(run, "train.objective=bilm", "train.max_steps=8", "train.eval_batches=1")).model_dir


def settings(model, task_files, tmp_path, **options):
    train, val = task_files["classify"]
    return FinetuneConfig(**{**dict(model=str(model), task="classify", method="elmo", train=str(train),
                                    validation=str(val), out=str(tmp_path / "out"), epochs=6, batch_size=8, lr=5e-2,
                                    progress=False), **options})


def test_elmo_classifier_learns_with_the_bilm_frozen_and_reloads(elmo_model, task_files, tmp_path, monkeypatch):
    trained = {}
    real_save = finetune_module.save_result

    def keep(model, *args, **kwargs):  # the model as training left it
        trained["model"] = model
        return real_save(model, *args, **kwargs)

    monkeypatch.setattr(finetune_module, "save_result", keep)
    config = settings(elmo_model, task_files, tmp_path)
    metrics = finetune(config)
    assert metrics["epochs"][-1]["val_accuracy"] == 1.0
    # Trained: the scalar mix (3 layers: tokens + 2 biLSTM) and gamma, and the classifier over 2 x d_model.
    assert metrics["trainable_params"] == 3 + 1 + 2 * 32 * 2 + 2
    model = trained["model"]
    before, _ = load_pretrained(elmo_model)
    after = model.bilm.state_dict()
    assert all(torch.equal(value, after[name]) for name, value in before.state_dict().items())
    assert not model.mix.scalars.detach().eq(0).all() and model.mix.gamma.item() != 1.0  # the mix learned
    tuned, rows = check_reload(config, metrics)
    assert rows[0]["label"] in ("cat", "dog") and not any(p.requires_grad for p in tuned.model.bilm.parameters())


def test_elmo_method_and_model_must_match(elmo_model, bases, task_files, tmp_path):
    with pytest.raises(UserError, match="--method elmo"):
        finetune(settings(elmo_model, task_files, tmp_path, method="full"))
    with pytest.raises(UserError, match="needs an ELMo biLM"):
        finetune(settings(bases["bert"], task_files, tmp_path / "b"))
    train, val = task_files["tag"]
    with pytest.raises(UserError, match="--task classify only"):
        finetune(settings(elmo_model, task_files, tmp_path / "c", task="tag", train=str(train), validation=str(val)))


def test_an_interrupted_elmo_fine_tuning_resumes_to_the_uninterrupted_result(elmo_model, task_files, tmp_path,
                                                                              monkeypatch):
    straight = finetune(settings(elmo_model, task_files, tmp_path / "a", epochs=3))
    restore = interrupt_at_epoch(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        finetune(settings(elmo_model, task_files, tmp_path / "b", epochs=3))
    restore()
    resumed = finetune(settings(elmo_model, task_files, tmp_path / "b", epochs=3, resume=True))
    assert resumed["epochs"] == [{**e, "seconds": r["seconds"]} for e, r in zip(straight["epochs"], resumed["epochs"])]
