"""CI slice of the ``trees`` fuzz family (tests/fuzz/trees.py): a fixed list of seeds; bench/fuzz.py runs it long."""
import random

import pytest

from tests.fuzz import trees

# user .tmp-* and .checkpoints folders around builds with and without stage checkpoints, --resume, --overwrite,
# the leftover clean-up; 1: train then train --overwrite
# 27, 47: a build whose input folder holds the run directory, refused before the code refused it by name (it failed
# on a file of the run's of unknown format, or, where all were readable, read the run's outputs: tests/cli/test_build.py)
SEEDS = [1, 2, 4, 6, 9, 20, 21, 24, 27, 47]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_file_corpusforge_did_not_write_survives(seed, tmp_path):
    trees.fuzz_one(random.Random(seed), tmp_path)
