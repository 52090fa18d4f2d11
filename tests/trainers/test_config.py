"""The trainer's settings (train, finetune): every float one refuses what no training means, up front."""
import dataclasses
import typing

import pytest

from corpusforge.config import load_config
from corpusforge.core.config_loader import ConfigError
from corpusforge.trainers.config import TrainConfig
from corpusforge.trainers.finetune.config import FinetuneConfig


def float_settings(cls: type, prefix: str) -> list[str]:
    """Every float setting of a section, nested sections included (``train.optim.lr``, ...)."""
    out = []
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        kind = hints[field.name]
        if dataclasses.is_dataclass(kind):
            out += float_settings(kind, f"{prefix}.{field.name}")
        elif kind is float:
            out.append(f"{prefix}.{field.name}")
    return out


FLOATS = float_settings(TrainConfig, "train") + float_settings(FinetuneConfig, "finetune")


def test_every_float_setting_is_found():
    assert {"train.optim.lr", "train.optim.eps", "train.rtd.discriminator_weight", "finetune.lr",
            "finetune.warmup_ratio"} <= set(FLOATS) and len(FLOATS) > 25


@pytest.mark.parametrize("key", FLOATS)
@pytest.mark.parametrize("value", [".inf", "-.inf"])
def test_an_infinite_training_setting_is_refused_up_front_in_one_line(key, value):
    # Before: train.optim.lr=inf (and weight_decay, eps, clip, rtd.discriminator_weight, span.mean_span_length,
    # bart.poisson_lambda, finetune.lr, finetune.weight_decay) passed the range checks (inf > 0), and training
    # diverged to NaN and stopped (or ran forever drawing spans of infinite mean length).
    section, _, name = key.rpartition(".")
    with pytest.raises(ConfigError) as info:
        load_config(overrides=[f"{key}={value}"])
    said = str(info.value)  # its own message, or a range check naming it with another setting ("beta1 and beta2")
    assert said.startswith(section + ".") and name in said and " must be " in said and "\n" not in said, said


@pytest.mark.parametrize("setting,value", [("train.optim.lr", "0"), ("train.optim.lr", "-1e-3"),
                                           ("train.optim.eps", "0"), ("train.optim.eps", "-1e-8"),
                                           ("finetune.lr", "-1"), ("finetune.warmup_ratio", "1"),
                                           ("finetune.warmup_ratio", "-0.1"), ("train.optim.min_lr_ratio", "1.5")])
def test_a_finite_training_setting_outside_its_range_is_refused(setting, value):
    # eps 0: AdamW divides a zero gradient's zero moment by sqrt(0) + 0, NaN in the first step
    with pytest.raises(ConfigError, match=rf"^{setting} must be"):
        load_config(overrides=[f"{setting}={value}"])
