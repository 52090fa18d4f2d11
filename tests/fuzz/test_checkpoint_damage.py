"""CI slice of the ``checkpoint_damage`` fuzz family (``tests/fuzz/checkpoint_damage.py``): a fixed list of seeds,
each a small build with stage checkpoints kept, one checkpoint file damaged, then ``--resume`` (or the damage
between two segments of one build, then ``--resume``)."""
from __future__ import annotations

import random

import pytest

from tests.fuzz.checkpoint_damage import fuzz_one

# What each seed damages: 23 dedup's _SUCCESS.json given bytes at its end (jsonl), 37 normalize's _SUCCESS.json
# cut short (arrow) (these two raised UnicodeDecodeError / JSONDecodeError before a damaged marker counted as a
# checkpoint not whole), 42 normalize's _SUCCESS.json made other JSON between segments, 51 a recorded
# CRC-32 changed, 41 a bit flipped in a rejected shard (arrow), 17 a rejected shard cut (parquet), 44 a docs shard
# cut (jsonl), 49 a stray docs shard added, 53 a docs shard deleted, 57 a rejected shard replaced by a docs shard
# between segments (parquet).
SEEDS = [23, 37, 42, 51, 41, 17, 44, 49, 53, 57]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", SEEDS)
def test_a_damaged_checkpoint_is_rebuilt_or_stops_the_build_with_one_line(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
