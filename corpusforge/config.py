"""The one configuration of a corpusforge run, loaded from one file and the CLI.

    config = load_config("corpus.yaml", overrides=["dedup.enabled=false"])

It is the build's configuration plus the tokenizer, tokenize, train and finetune sections. It sits above pipeline,
tokenizer and trainers because it is the only place that knows all three; each package's entry point takes only
its own typed sections (``train_model(config.train, config.run_paths())``).
"""
from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

from corpusforge.pipeline.config import BuildConfig, InputConfig
from corpusforge.core.config_loader import ConfigError, apply_overrides, from_dict, load_file, to_dict, setting
from corpusforge.core.rundir import RunPaths
from corpusforge.tokenizer.config import TokenizeConfig, TokenizerConfig, TokenizeRun
from corpusforge.tokenizer.mixture import source_weights
from corpusforge.trainers.config import TrainConfig
from corpusforge.trainers.finetune.config import FinetuneConfig


@dataclasses.dataclass
class Config(BuildConfig):
    tokenizer: TokenizerConfig = setting(factory=TokenizerConfig)
    tokenize: TokenizeConfig = setting(factory=TokenizeConfig)
    train: TrainConfig = setting(factory=TrainConfig)
    finetune: FinetuneConfig = setting(factory=FinetuneConfig)

    def run_paths(self) -> RunPaths:
        """The run directory every command of this run writes into, and whether it may replace earlier outputs."""
        return RunPaths(self.output.run_dir, self.output.overwrite)

    def tokenize_run(self) -> TokenizeRun:
        """What tokenize takes besides its section: the run directory, the runner, the build's fault tolerance,
        the sources' mixture weights, the size from which its shuffles wait on disk."""
        return TokenizeRun(self.run_paths(), self.beam, self.build, source_weights(self.inputs),
                           self.output.disk_shuffle_mb)


def load_config(path: str | pathlib.Path | None = None, overrides: list[str] | None = None,
                base: dict[str, Any] | None = None) -> Config:
    """Load ``path`` (YAML/TOML) over ``base``, apply ``--set`` overrides, validate, return a ``Config``."""
    data: dict[str, Any] = dict(base or {})
    if path:
        data = _merge(data, load_file(path))
    data = apply_overrides(data, overrides or [])
    return from_dict(Config, data)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


__all__ = ["Config", "ConfigError", "InputConfig", "load_config", "to_dict"]
