"""CI slice of the ``superlinear`` fuzz family (``tests/fuzz/superlinear.py``): a fixed list of seeds."""
from __future__ import annotations

import random

import pytest

pytest.importorskip("presidio_analyzer")
pytest.importorskip("resiliparse")

from tests.fuzz.superlinear import fuzz_one  # noqa: E402


@pytest.mark.parametrize("seed", [1, 2, 4, 6, 8, 9, 12, 13])
def test_no_shape_costs_much_more_per_byte_than_prose(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
