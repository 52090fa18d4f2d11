"""CI slice of the ``trees`` fuzz family (tests/fuzz/trees.py): a fixed list of seeds; bench/fuzz.py runs it long."""
import random

import pytest

from tests.fuzz import trees

SEEDS = [17, 21, 28, 30, 37, 38]  # user .checkpoints + build, .tmp-* leftovers, train --overwrite, tokenize into a user folder


@pytest.mark.parametrize("seed", SEEDS)
def test_every_file_corpusforge_did_not_write_survives(seed, tmp_path):
    trees.fuzz_one(random.Random(seed), tmp_path)
