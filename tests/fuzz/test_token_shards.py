"""CI slice of the ``token_shards`` fuzz family (tests/fuzz/token_shards.py): a fixed list of seeds, < 60 s on one
core (``OMP_NUM_THREADS=1 /usr/bin/time .venv/bin/python -m pytest -q tests/fuzz/test_token_shards.py``). The long
mode is ``python bench/fuzz.py --family token_shards --seconds 600`` (docs/fuzz.md)."""
import random

import pytest

from tests.fuzz.token_shards import fuzz_one

# On the reader before (every batch read and validated on open): 33 and 41, a shard cut at every point, raised
# RuntimeError (StopIteration) tracebacks; 37, null token ids inside documents, read as other tokens silently; 44,
# list<uint16> (32-bit offsets, as Hugging Face datasets writes) refused as "not stored as corpusforge writes
# them". 14: through `corpusforge train`. With TokenShard and TokenCorpus read too, on their reader before (no check of
# the layout): 136, float32 tokens, read as other numbers; 180 and 194, null documents, a ValueError traceback.
SEEDS = list(range(13)) + [14, 33, 37, 41, 44, 136, 180, 194]


@pytest.mark.parametrize("seed", SEEDS)
def test_token_shards_are_read_right_or_refused_in_one_line(seed, tmp_path):
    fuzz_one(random.Random(seed), tmp_path)
