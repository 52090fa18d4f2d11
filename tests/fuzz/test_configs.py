"""CI slice of the ``configs`` fuzz family (tests/fuzz/configs.py): a fixed list of seeds; bench/fuzz.py runs it long."""
import random

import pytest

from tests.fuzz import configs

# 52: alias bomb of 10**10 strings, 7: alias in itself, 9: bomb via --set, 10: huge int, 26: deep nesting,
# 38: 100000 workers,
# 8: a model directory with its weights truncated,
# 149: bytes changed in a model's weights (export used them before config.json recorded their SHA-256),
# 367: bits flipped in a training checkpoint's tensor (torch.load does not check the zip's CRC-32: it loaded)
SEEDS = [7, 8, 9, 10, 26, 38, 52, 149, 367]


@pytest.mark.parametrize("seed", SEEDS)
def test_any_config_or_model_directory_is_bounded_and_one_line(seed, tmp_path):
    configs.fuzz_one(random.Random(seed), tmp_path)
