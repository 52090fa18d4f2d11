"""CI slice of the ``columnar_cells`` fuzz family (tests/fuzz/columnar_cells.py): a fixed list of seeds, < 60 s
on one core. The long mode is ``python bench/fuzz.py --family columnar_cells --seconds 600`` (docs/fuzz.md)."""
import random

import pytest

from tests.fuzz.columnar_cells import fuzz_one

SEEDS = list(range(6))


@pytest.mark.parametrize("seed", SEEDS)
def test_columnar_cells_promises_hold(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
