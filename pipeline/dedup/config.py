"""Configuration of the deduplication stage."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class DedupConfig:
    enabled: bool = dataclasses.field(default=True, metadata={"help": "Run the dedup stage."})
