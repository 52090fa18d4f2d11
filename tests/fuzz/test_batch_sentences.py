"""CI slice of the ``batch_sentences`` fuzz family (tests/fuzz/batch_sentences.py): a fixed list of seeds, ~15 s on
one core. The long mode is ``python bench/fuzz.py --family batch_sentences --seconds 300`` (docs/fuzz.md)."""
import random

import pytest

from tests.fuzz.batch_sentences import fuzz_one

# Each fails on keyed_lines_many before its sub-batches were bounded by sentences (15 of seeds 0-23 did), on memory:
# 2 (empty lines and a mixed chain, 59.4 MB against the loop's 10.1), 4 ("a. b. c." and mixed), 7 (colons), 8 and
# 11 (one-word lines: a large text, small ones), 14 (colons and stops), 18 (105 small texts of stops: 36.5 against
# 5.6 MB), 21 (empty lines and mixed, 93 KB); 3 (CJK stops, the definition's path) and 19 ("a. b. c.") held.
SEEDS = [2, 4, 7, 8, 11, 14, 18, 21, 3, 19]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_batch_costs_what_its_texts_cost_one_by_one(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
