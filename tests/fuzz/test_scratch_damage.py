"""CI slice of the ``scratch_damage`` fuzz family (``tests/fuzz/scratch_damage.py``): a fixed list of seeds, two
small builds each (undamaged, then with one scratch read's file damaged just before the read)."""
from __future__ import annotations

import random

import pytest

from tests.fuzz.scratch_damage import fuzz_one

# What each seed damages (scratch file, damage, shuffles, the record read): 18 .near flip in the record read
# (stored, in memory), 29 .txt flip in the record read (a zstd frame, on disk), 47 .sentences flip in the record
# read, 32 .run flip in the block read (a frame), 25 .txt flip elsewhere in the file (in memory), 19 .run cut,
# 20 .txt bytes inserted (on disk), 30 .txt flip never read again (same output).
SEEDS = [18, 29, 47, 32, 25, 19, 20, 30]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", SEEDS)
def test_damaged_scratch_stops_the_build_with_one_line_or_changes_nothing(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
