"""CI slice of the ``trees`` fuzz family (tests/fuzz/trees.py): a fixed list of seeds; bench/fuzz.py runs it long."""
import random

import pytest

from tests.fuzz import trees

# user .tmp-* and .checkpoints folders around builds with and without stage checkpoints, --resume, --overwrite,
# the leftover clean-up; 1: train then train --overwrite
SEEDS = [1, 2, 4, 6, 9, 20, 21, 24]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_file_corpusforge_did_not_write_survives(seed, tmp_path):
    trees.fuzz_one(random.Random(seed), tmp_path)
