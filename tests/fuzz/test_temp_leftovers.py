"""CI slice of the ``temp_leftovers`` fuzz family (tests/fuzz/temp_leftovers.py): a fixed list of seeds; bench/fuzz.py
runs it long."""
import os
import random

import pytest

from tests.fuzz import temp_leftovers

# On rundir before the pid and nesting checks, 3, 7 and 11 (a pid past pid_t: OverflowError) and 8 (a marker nested
# 5,000 deep: RecursionError) raised out of the reclaim, so out of every command's start.
SEEDS = list(range(12))


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="process start times from /proc")
@pytest.mark.parametrize("seed", SEEDS)
def test_only_killed_commands_temporary_folders_are_reclaimed(seed, tmp_path):
    temp_leftovers.fuzz_one(random.Random(seed), tmp_path)
