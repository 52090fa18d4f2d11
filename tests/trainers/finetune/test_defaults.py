"""Fine-tuning defaults that learn at corpusforge's own sizes: a size-aware learning rate, the best epoch kept,
early stopping, and classify's bag-of-words baseline."""
import json
import random

import pytest
import torch

from corpusforge.trainers.finetune.config import FinetuneConfig
from corpusforge.trainers.finetune.defaults import default_learning_rate, model_width
from corpusforge.trainers.finetune.train import finetune

TOPICS = {  # four classes, each with its own words, among words every class uses
    "animals": "cat dog horse sheep goat mouse rabbit tiger".split(),
    "weather": "rain snow storm cloud wind sunny thunder frost".split(),
    "food": "bread cheese apple soup pasta rice butter honey".split(),
    "music": "guitar piano drum violin song melody chord rhythm".split(),
}
FILLER = "the a of and to in is was for on that with as by at from it this".split()


def topic_records(n: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        label = sorted(TOPICS)[i % 4]
        words = [rnd.choice(TOPICS[label]) for _ in range(4)] + [rnd.choice(FILLER) for _ in range(8)]
        rnd.shuffle(words)
        out.append({"id": f"r{i}", "text": " ".join(words), "label": label})
    return out


def pretrain_debug_encoder(run, texts: list[str], steps: int):
    """A debug-size BERT pretrained with corpusforge's trainer (masked LM) on ``texts``: RUN/model."""
    from corpusforge.core.config_loader import apply_overrides, from_dict
    from corpusforge.trainers.config import TrainConfig
    from corpusforge.trainers.train import train_model
    from tests.trainers.token_runs import write_wordpiece_token_run

    write_wordpiece_token_run(run, texts, vocab_size=300, val_docs=16)
    data = apply_overrides({}, [
        "train.objective=mlm", "train.model.size=debug", "train.seq_len=32", "train.micro_batch_size=16",
        f"train.max_steps={steps}", "train.eval_every=0", "train.eval_batches=1", "train.progress=false",
        "train.optim.lr=0.002", "train.optim.warmup_steps=20", "train.device=cpu"])
    from corpusforge.core.rundir import RunPaths

    train_model(from_dict(TrainConfig, data["train"], "train"), RunPaths(str(run), overwrite=True))
    return run / "model"


@pytest.fixture(scope="module")
def topic_task(tmp_path_factory):
    root = tmp_path_factory.mktemp("topics")
    train, val = topic_records(640, seed=1), topic_records(80, seed=2)  # the size
    paths = []
    for name, rows in (("train", train), ("val", val)):
        path = root / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        paths.append(path)
    torch.manual_seed(0)
    model = pretrain_debug_encoder(root / "run", [r["text"] for r in train], steps=150)
    return model, paths[0], paths[1]


def test_the_default_learning_rate_scales_with_the_width():
    assert default_learning_rate("full", 768) == pytest.approx(5e-5)  # BERT-base's recipe at its own width
    assert default_learning_rate("full", 64) == pytest.approx(2e-3)  # debug: 41.6x, capped
    assert default_learning_rate("full", 128) == pytest.approx(5e-5 * 6 ** 1.5)
    assert default_learning_rate("full", 512) == pytest.approx(5e-5 * 1.5 ** 1.5)  # small: 9.2e-5
    assert default_learning_rate("lora", 1024) < 5e-4  # a wider checkpoint: lower
    assert default_learning_rate("lora", 64) == pytest.approx(1e-2)
    assert default_learning_rate("prompt", 64) == default_learning_rate("prompt", 768) == 3e-2
    assert FinetuneConfig(method="full", lr=1e-3).learning_rate(64) == 1e-3  # an explicit rate wins


def test_a_small_set_trains_for_min_steps_optimizer_steps_unless_epochs_are_given():
    # 90 records at batch 16 are 6 steps an epoch: 3 epochs were 18 steps, and LoRA stayed near chance
    assert FinetuneConfig().planned_epochs(6) == 50  # 300 steps
    assert FinetuneConfig().planned_epochs(40) == 8  # 640 records: 320 steps
    assert FinetuneConfig().planned_epochs(625) == 3  # 10,000 records: the 3 epochs, 1,875 steps
    assert FinetuneConfig(epochs=10).planned_epochs(6) == 10  # an explicit number is run as given
    assert FinetuneConfig(min_steps=0).planned_epochs(6) == 3


def test_the_default_plan_validates_at_most_as_long_as_it_trains_and_checkpoints_about_20_times():
    # (epochs between validations, epochs between checkpoints) for (planned epochs, train records, val records)
    assert FinetuneConfig().schedule(300, 4, 400) == (30, 30)  # validating 400 costs 34 epochs of 4: 10 a run
    assert FinetuneConfig().schedule(300, 4, 40) == (4, 16)  # 75 validations as long as the training, 19 checkpoints
    assert FinetuneConfig().schedule(50, 90, 150) == (1, 3)  # the benchmark's small set: validated every epoch
    assert FinetuneConfig().schedule(8, 640, 80) == (1, 1)
    assert FinetuneConfig().schedule(300, 4, 0) == (1, 15)  # no validation records: the training loss each epoch
    assert FinetuneConfig(epochs=300).schedule(300, 4, 400) == (1, 1)  # an explicit --epochs: every epoch


def test_the_width_comes_from_any_transformers_config(tmp_path):
    for key, width in (("hidden_size", 1024), ("n_embd", 768), ("d_model", 512)):  # BERT, GPT-2, T5 / BART
        (tmp_path / key).mkdir()
        (tmp_path / key / "config.json").write_text(json.dumps({key: width}))
        assert model_width(tmp_path / key) == width
    assert model_width(tmp_path) is None  # no config.json (an ELMo biLM): the reference rate


def test_early_stopping_without_validation_is_a_one_line_error(tmp_path):
    from corpusforge.core.errors import UserError

    with pytest.raises(UserError, match="--early-stopping needs --validation"):
        finetune(FinetuneConfig(model="m", train="t.jsonl", out=str(tmp_path / "out"), early_stopping=2))


@pytest.mark.timeout(300)
def test_a_pretrained_debug_encoder_learns_a_separable_topic_task_with_every_default(topic_task, tmp_path):
    model, train, val = topic_task
    config = FinetuneConfig(model=str(model), task="classify", method="full", train=str(train),
                            validation=str(val), out=str(tmp_path / "out"), progress=False, device="cpu")
    metrics = finetune(config)
    assert model_width(tmp_path / "out" / "base") == 64  # a run's model/: the width of its export in OUT/base
    assert metrics["learning_rate"] == pytest.approx(2e-3)
    assert metrics["planned_epochs"] == len(metrics["epochs"]) == 8 and metrics["optimizer_steps"] == 320  # min_steps
    accuracy = metrics["kept"]["val_accuracy"]
    assert accuracy >= 0.45, metrics["epochs"]  # chance is 0.25; at the old default (5e-5) 0.25, one class
    best = max(metrics["epochs"], key=lambda e: (e["val_accuracy"], -e["val_loss"]))
    assert metrics["kept_epoch"] == best["epoch"] and accuracy == best["val_accuracy"]
    baseline = metrics["baseline"]
    assert baseline["name"] == "tfidf_logistic_regression" and baseline["val_accuracy"] > 0.9
    assert metrics["beats_baseline"] == (accuracy > baseline["val_accuracy"])
    assert bool(metrics["warnings"]) != metrics["beats_baseline"]
    assert all("after 320 optimizer steps (8 epochs): train longer" in w for w in metrics["warnings"])
    saved = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert saved["kept_epoch"] == metrics["kept_epoch"] and saved["baseline"] == baseline
