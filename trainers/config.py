"""Configuration of model training."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class TrainConfig:
    enabled: bool = dataclasses.field(default=True, metadata={"help": "Train a model in `demo`/full runs."})
