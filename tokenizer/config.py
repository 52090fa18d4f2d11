"""Configuration of tokenizer training and of the tokenize stage."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class TokenizerConfig:
    enabled: bool = dataclasses.field(default=True, metadata={"help": "Train a tokenizer in `demo`/full runs."})


@dataclasses.dataclass
class TokenizeConfig:
    enabled: bool = dataclasses.field(default=True, metadata={"help": "Write token shards in `demo`/full runs."})
