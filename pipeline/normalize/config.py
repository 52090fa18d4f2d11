"""The ``normalize`` section: mojibake repair, Unicode form, control characters, whitespace."""
from __future__ import annotations

import dataclasses
from typing import Literal

from corpusforge.core.config_loader import setting


@dataclasses.dataclass
class NormalizeConfig:
    enabled: bool = setting(True, "Normalise text before every other stage.")
    fix_mojibake: bool = setting(True, "Repair mojibake (UTF-8 read as cp1252/latin-1, even twice: 'doesnÃ¢â‚¬â„¢t' -> 'doesn’t') line by line with ftfy's encoding fixes only (quotes, ligatures, widths untouched); counted as the edit normalize.mojibake_repaired (docs/quality.md).")
    unicode_form: Literal["NFC", "NFKC", "none"] = setting("NFC", "Unicode normal form.")
    strip_control: bool = setting(True, "Drop control and zero-width characters except newline and tab (U+2028 always becomes a newline, U+2029 a blank line).")
    collapse_whitespace: bool = setting(True, "Collapse runs of spaces, trim lines, keep at most one blank line.")
