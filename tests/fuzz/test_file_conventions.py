"""CI slice of the ``file_conventions`` fuzz family (tests/fuzz/file_conventions.py): a fixed list of seeds, < 60 s on
one core. The long mode is ``python bench/fuzz.py --family file_conventions --seconds 300`` (docs/fuzz.md)."""
import random

import pytest

from tests.fuzz.file_conventions import fuzz_one

SEEDS = list(range(40))


@pytest.mark.parametrize("seed", SEEDS)
def test_file_conventions_promises_hold(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
