"""CI slice of the ``graphs`` fuzz family (tests/fuzz/graphs.py): a fixed list of seeds; bench/fuzz.py runs it long."""
import random

import pytest

from tests.fuzz import graphs

SEEDS = [0, 1, 2, 3]


@pytest.mark.parametrize("seed", SEEDS)
def test_any_build_graph_runs_and_shuffles_alike_on_disk_and_in_memory(seed, tmp_path):
    graphs.fuzz_one(random.Random(seed), tmp_path)
