"""CI slice of the ``checkpoint_damage`` fuzz family (``tests/fuzz/checkpoint_damage.py``): a fixed list of seeds,
each a small build with stage checkpoints kept, one checkpoint file damaged, then ``--resume`` (or the damage
between two segments of one build, then ``--resume``)."""
from __future__ import annotations

import random

import pytest

from tests.fuzz.checkpoint_damage import fuzz_one

# What each seed damages: 3 and 27 a _SUCCESS.json given bytes at its end, 31 one replaced by other JSON (these
# three raised JSONDecodeError / AttributeError on --resume before a damaged marker counted as a checkpoint not
# whole); 6 a bit of facts.json flipped, 11 removed.json cut, 23 facts.json given bytes at its end, 13 docs.json
# given bytes between segments, 47 a bit of facts.json flipped between segments (these five raised, or stopped
# with no line saying to run the build again, before the lists were checked); 5 a bit flipped in a rejected shard,
# 1 a docs shard replaced by another stage's, 4 a stray docs shard added, 2 a docs shard deleted (jsonl), 14 a bit
# flipped in a docs shard between segments, 46 a docs shard replaced by a removed one between segments (parquet).
SEEDS = [3, 27, 31, 6, 11, 23, 13, 47, 5, 1, 4, 2, 14, 46]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", SEEDS)
def test_a_damaged_checkpoint_is_rebuilt_or_stops_the_build_with_one_line(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
