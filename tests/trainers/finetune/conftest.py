"""Debug-size model directories with the model's own initialisation (a random base whose features still tell
words apart, as a pretrained one's do), and trivially learnable task files."""
from __future__ import annotations

import json
import pathlib
import random

import pytest
import torch

from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.train import train_from_texts
from corpusforge.trainers.checkpoint import save_pretrained
from corpusforge.trainers.model import Transformer, model_config
from corpusforge.trainers.vocab import Vocabulary
from tests.trainers.conftest import make_text
from tests.trainers.exports import FAMILIES

WORDS = ("cat", "dog", "the", "river")


def make_base(directory: pathlib.Path, family: str) -> pathlib.Path:
    """A run's model/ directory as ``corpusforge train`` writes it, untrained, seeded."""
    tok_family, kind, objective = FAMILIES[family]
    tokenizer = train_from_texts([make_text(300, seed=1)], TokenizerConfig(family=tok_family, kind=kind, vocab_size=500))
    directory.mkdir(parents=True, exist_ok=True)
    tok_path = directory / "source-tokenizer.json"
    tokenizer.save(str(tok_path))
    vocab = Vocabulary.from_file(tok_path)
    torch.manual_seed(0)
    model = Transformer(model_config(family, "debug", vocab_size=-(-vocab.size // 64) * 64, max_len=64, dropout=0.0))
    info = {"objective": objective, "family": family, "special_tokens": vocab.special_ids(),
            "tokenizer_vocab_size": vocab.size, "step": 0, "train": {"seq_len": 64}}
    save_pretrained(model, directory, tokenizer=tok_path, info=info)
    tok_path.unlink()
    return directory


def task_records(task: str, n: int, seed: int) -> list[dict]:
    """classify: the repeated word is the label (pair: the second text's word); tag: animals are A, other words
    O; generate: the animal's sound."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        word = rnd.choice(WORDS[:2])
        if task == "classify":
            out.append({"id": f"r{i}", "text": f"{word} {word} {word}", "label": word})
        elif task == "pair":  # the label is in the second text only
            first = rnd.choice(WORDS)
            out.append({"id": f"r{i}", "text": f"{first} {first} {first}", "text2": f"{word} {word} {word}",
                        "label": word})
        elif task == "tag":
            words = [rnd.choice(WORDS) for _ in range(4)]
            out.append({"id": f"r{i}", "tokens": words, "tags": ["A" if w in WORDS[:2] else "O" for w in words]})
        else:
            out.append({"id": f"r{i}", "prompt": f"the {word}", "response": " sings" if word == "cat" else " runs"})
    return out


def write_jsonl(path: pathlib.Path, records: list[dict]) -> pathlib.Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def bases(tmp_path_factory):
    """family -> a run's model/ directory (built on first use)."""
    root = tmp_path_factory.mktemp("bases")
    cache: dict[str, pathlib.Path] = {}

    class Bases(dict):
        def __missing__(self, family):
            cache[family] = make_base(root / family, family)
            self[family] = cache[family]
            return cache[family]

    return Bases()


@pytest.fixture(scope="session")
def task_files(tmp_path_factory):
    """task -> (train.jsonl, validation.jsonl)"""
    root = tmp_path_factory.mktemp("tasks")
    return {task: (write_jsonl(root / f"{task}-train.jsonl", task_records(task, 48, 0)),
                   write_jsonl(root / f"{task}-val.jsonl", task_records(task, 16, 1)))
            for task in ("classify", "pair", "tag", "generate")}


def interrupt_at_epoch(monkeypatch, epoch: int):
    """Make fine-tuning raise KeyboardInterrupt as epoch ``epoch`` starts (a run killed mid-run); returns the
    function that puts the real epoch loop back."""
    import corpusforge.trainers.finetune.train as train_module

    real = train_module._train_epoch

    def interrupted(*args, **kwargs):
        if args[-1] == epoch:  # (..., epochs, epoch)
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "_train_epoch", interrupted)
    return lambda: monkeypatch.setattr(train_module, "_train_epoch", real)
