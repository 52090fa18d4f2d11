"""CI slice of the ``configs`` fuzz family (tests/fuzz/configs.py): a fixed list of seeds; bench/fuzz.py runs it long."""
import random

import pytest

from tests.fuzz import configs

SEEDS = [0, 1, 2, 3, 4, 6, 7, 9]


@pytest.mark.parametrize("seed", SEEDS)
def test_any_config_or_model_directory_is_bounded_and_one_line(seed, tmp_path):
    configs.fuzz_one(random.Random(seed), tmp_path)
