"""The ``normalize`` section: mojibake repair, Unicode form, control characters, whitespace."""
from __future__ import annotations

import dataclasses
from typing import Literal


@dataclasses.dataclass
class NormalizeConfig:
    enabled: bool = dataclasses.field(default=True, metadata={"help": "Normalise text before every other stage."})
    fix_mojibake: bool = dataclasses.field(
        default=True,
        metadata={"help": "Repair mojibake (UTF-8 read as cp1252/latin-1, even twice: 'doesnÃ¢â‚¬â„¢t' -> 'doesn’t') line by line with ftfy's encoding fixes only (quotes, ligatures, widths untouched); counted as the edit normalize.mojibake_repaired (docs/quality.md)."},
    )
    unicode_form: Literal["NFC", "NFKC", "none"] = dataclasses.field(default="NFC", metadata={"help": "Unicode normal form."})
    strip_control: bool = dataclasses.field(default=True, metadata={"help": "Drop control and zero-width characters except newline and tab (U+2028 always becomes a newline, U+2029 a blank line)."})
    collapse_whitespace: bool = dataclasses.field(
        default=True, metadata={"help": "Collapse runs of spaces, trim lines, keep at most one blank line."}
    )
