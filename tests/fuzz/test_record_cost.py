"""CI slice of the ``record_cost`` fuzz family (tests/fuzz/record_cost.py): a fixed list of seeds, < 60 s on one
core. The long mode is ``python bench/fuzz.py --family record_cost --seconds 600`` (docs/fuzz.md)."""
import random

import pytest

from tests.fuzz.record_cost import fuzz_one

# 20 (a 300k-letter word, WordPiece) and 22 (100k letters and 300k digits, BPE) took 52 and 194 CPU s before
# text_guards.bounded_pieces (0.4 and 0.3 s after); the others: builds and every tokenizer kind on marks, URLs,
# emoji ZWJ sequences, bidi controls, long NFKC forms, rows without a space.
SEEDS = [20, 22, 0, 2, 3, 17, 21, 23]


@pytest.mark.parametrize("seed", SEEDS)
def test_no_record_costs_more_than_its_length(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
