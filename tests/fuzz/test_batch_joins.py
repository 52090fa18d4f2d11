"""CI slice of the ``batch_joins`` fuzz family (tests/fuzz/batch_joins.py): a fixed list of seeds. The long mode is
``python bench/fuzz.py --family batch_joins --seconds 300`` (docs/fuzz.md)."""
import random

import pytest

from tests.fuzz.batch_joins import fuzz_one

SEEDS = [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("seed", SEEDS)
def test_the_batch_joins_decide_as_the_shuffle_join(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
