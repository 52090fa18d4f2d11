"""The ``build`` section: what a run does with a record that makes a stage raise. The build and tokenize read it
(both isolate a raising record with the dead-letter pattern of faults.py), so it lives below both."""
from __future__ import annotations

import dataclasses

from corpusforge.core.config_loader import check, setting


@dataclasses.dataclass
class FaultConfig:
    """What a build does with a record that makes a stage raise (a bug, or input no rule foresaw)."""

    fail_fast: bool = setting(False, "Fail the run on the first record that makes a stage raise, with its traceback (for "
                          "debugging; CLI --fail-fast). Off: such a record is rejected with reason stage_error and "
                          "detail '<stage>: <ExceptionType>: <message>', and the build goes on.")
    max_error_fraction: float = setting(0.001, "Fail the run after the pipeline when more than this fraction of the input records, and "
                          "more than error_allowance records, were rejected as stage_error (a systematic bug, not "
                          "one odd record); nothing is published. 1 never fails; 0 fails on any only with "
                          "error_allowance 0.")
    error_allowance: int = setting(5, "This many stage_error rejections never fail a run, whatever its size, so one odd record "
                          "does not fail a small build (0.001 of 200 records is less than one); "
                          "max_error_fraction applies above it. 0: the fraction alone decides.")

    def __post_init__(self) -> None:
        check(0.0 <= self.max_error_fraction <= 1.0,
              f"build.max_error_fraction must be between 0 and 1, got {self.max_error_fraction}")
        check(self.error_allowance >= 0, f"build.error_allowance must be 0 or more, got {self.error_allowance}")

    def tolerates(self, failed: int, records: int) -> bool:
        """Whether ``failed`` stage_error rejections among ``records`` input records leave the run publishable."""
        return failed <= max(self.error_allowance, self.max_error_fraction * records)
