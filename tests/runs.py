"""Each package's entry point run as the CLI runs it: from a whole ``Config`` (tests build them with ``load_config``)
or, for training, a ``Training`` pair; the entry points take their own typed sections."""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from corpusforge.core.rundir import RunPaths

if TYPE_CHECKING:
    from corpusforge.trainers.config import TrainConfig


class Training(NamedTuple):
    """What ``train_model`` takes, as tests.trainers.test_train.config makes it."""

    train: "TrainConfig"
    run: RunPaths


def train_on(training: Training, **kwargs):
    from corpusforge.trainers.train import train_model

    return train_model(training.train, training.run, **kwargs)


def tokenize_on(config, *args, **kwargs):
    from corpusforge.tokenizer.tokenize import run_tokenize

    return run_tokenize(config.tokenize, config.tokenize_run(), *args, **kwargs)


def train_tokenizer_on(config, **kwargs):
    from corpusforge.tokenizer.train import train_tokenizer

    return train_tokenizer(config.tokenizer, config.run_paths(), seq_len=config.train.seq_len, **kwargs)
