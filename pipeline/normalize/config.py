"""The ``normalize`` section: Unicode form, control characters, whitespace."""
from __future__ import annotations

import dataclasses
from typing import Literal


@dataclasses.dataclass
class NormalizeConfig:
    enabled: bool = dataclasses.field(default=True, metadata={"help": "Normalise text before every other stage."})
    unicode_form: Literal["NFC", "NFKC", "none"] = dataclasses.field(default="NFC", metadata={"help": "Unicode normal form."})
    strip_control: bool = dataclasses.field(default=True, metadata={"help": "Drop control and zero-width characters except newline and tab (U+2028 always becomes a newline, U+2029 a blank line)."})
    collapse_whitespace: bool = dataclasses.field(
        default=True, metadata={"help": "Collapse runs of spaces, trim lines, keep at most one blank line."}
    )
