"""Configuration of the PII stage."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class PIIConfig:
    enabled: bool = dataclasses.field(default=True, metadata={"help": "Run the PII stage."})
