"""Configuration of the quality stage (language ID, heuristic rules, classifiers)."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class QualityConfig:
    enabled: bool = dataclasses.field(default=True, metadata={"help": "Run the quality stage."})
