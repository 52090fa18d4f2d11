"""CI slice of the ``own_shards`` fuzz family (tests/fuzz/own_shards.py): a fixed list of seeds, < 60 s on one
core. The long mode is ``python bench/fuzz.py --family own_shards --seconds 600`` (docs/fuzz.md)."""
import random

import pytest

from tests.fuzz.own_shards import fuzz_one

SEEDS = list(range(24)) + [39, 42, 75]  # named through a link to a folder above, LINK/.. (75) (failed before)


@pytest.mark.parametrize("seed", SEEDS)
def test_own_shards_promises_hold(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_path_to_a_runs_outputs_is_read_or_refused_in_one_line(seed, tmp_path):
    from tests.fuzz.own_shards import paths_case

    paths_case(random.Random(seed), tmp_path)
