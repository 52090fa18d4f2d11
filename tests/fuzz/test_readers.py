"""CI slice of the ``readers`` fuzz family (tests/fuzz/readers.py): a fixed list of seeds, < 60 s on one core.
The long mode is ``python bench/fuzz.py --family readers --seconds 600`` (docs/fuzz.md)."""
import random

import pytest

from tests.fuzz.readers import fuzz_one

# 19, 96 and 262: a Parquet or Arrow table naming a column twice, read before as one of the two columns (the other's
# values lost without a word); duplicate_key since. 11 and 24: a JSON "\ud800" that evaluate's reader handed on
# as a lone surrogate (evaluate, finetune and predict raised on it: UnicodeEncodeError, TypeError); U+FFFD since.
# 30 and 71: a list (Parquet) and an object (JSONL) as the text, which finetune's examples took as Python's str of
# it ("['xx', 'xx']", "{'a': 1}"); one line naming the record and field since. 71 and 96 again: a null id and a
# null word or tag, which finetune took for the text "None"; the position (id) and one line (word, tag) since.
SEEDS = list(range(8)) + [11, 19, 24, 30, 71, 96, 262]


@pytest.mark.parametrize("seed", SEEDS)
def test_readers_promises_hold(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
