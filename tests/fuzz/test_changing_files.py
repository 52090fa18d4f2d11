"""CI slice of the ``changing_files`` fuzz family (tests/fuzz/changing_files.py): a fixed list of seeds, < 60 s
on one core (38 CPU s: ``OMP_NUM_THREADS=1 /usr/bin/time .venv/bin/python -m pytest -q tests/fuzz/test_changing_files.py``). The long mode is ``python bench/fuzz.py --family changing_files --seconds 600`` (docs/fuzz.md)."""
import random

import pytest

from tests.fuzz.changing_files import fuzz_one, fuzz_own

SEEDS = [0, 1, 2, 3, 4, 5, 6, 11, "0:changing_files:6"]  # 11: an Arrow file rewritten while read (SIGBUS before);
# "0:changing_files:6" (bench/fuzz.py --case 6): a build whose input became a folder while it read it (it failed: "matches no files")


@pytest.mark.parametrize("seed", SEEDS)
def test_changing_files_promises_hold(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)


OWN_SEEDS = [1, 2, 4]  # on the memory-mapped readers: 1 token shards and 4 an Arrow stream shard cut while read
# (SIGBUS); 2 an Arrow stream shard rewritten in place under the batch in hand (its texts changed)


@pytest.mark.parametrize("seed", OWN_SEEDS)
def test_own_outputs_changed_while_read_back_keep_their_promises(seed, tmp_path):
    fuzz_own(random.Random(seed), tmp_path)
