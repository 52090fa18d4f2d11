"""CI slice of the ``field_names`` fuzz family (tests/fuzz/field_names.py): a fixed list of seeds, < 60 s on one core
(``OMP_NUM_THREADS=1 /usr/bin/time .venv/bin/python -m pytest -q tests/fuzz/test_field_names.py``). The long mode is
``python bench/fuzz.py --family field_names --seconds 600`` (docs/fuzz.md)."""
import random

import pytest

from tests.fuzz.field_names import fuzz_one

SEEDS = list(range(40))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_missing_field_is_named_with_the_fields_there_are(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
