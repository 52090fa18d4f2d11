"""The stored datasketch choices (pipeline/dedup/datasketch_tables.py) are datasketch's, and a default build
uses them without importing datasketch or scipy."""
from __future__ import annotations

import base64
import subprocess
import sys

import numpy as np
import pytest
from datasketch import MinHash, MinHashLSH

from corpusforge.pipeline.dedup.datasketch_tables import LSH_PARAMS, PERMUTATIONS
from corpusforge.pipeline.dedup.minhash import lsh_params, permutations


def test_every_stored_banding_is_datasketchs():
    wrong = {}
    for (threshold, num_perm, weight), stored in LSH_PARAMS.items():
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=(weight, 1.0 - weight))
        if stored != (lsh.b, lsh.r):
            wrong[(threshold, num_perm, weight)] = (lsh.b, lsh.r)
    assert not wrong, f"datasketch chooses {wrong}"
    assert (0.3, 256, 0.5) in LSH_PARAMS  # the default configuration


@pytest.mark.parametrize("num_perm,seed", sorted(PERMUTATIONS))
def test_every_stored_permutation_is_datasketchs(num_perm, seed):
    a, b = MinHash(num_perm=num_perm, seed=seed, scheme="affine32").permutations
    stored = np.frombuffer(base64.b64decode(PERMUTATIONS[num_perm, seed]), dtype="<u4").reshape(2, num_perm)
    np.testing.assert_array_equal(stored[0], a)
    np.testing.assert_array_equal(stored[1], b)
    got_a, got_b = permutations(num_perm, seed)
    assert got_a.dtype == got_b.dtype == np.uint32 and got_a.flags.c_contiguous and got_b.flags.c_contiguous
    np.testing.assert_array_equal(got_a, a)
    np.testing.assert_array_equal(got_b, b)


def test_configurations_not_stored_ask_datasketch():
    assert (0.33, 128, 0.5) not in LSH_PARAMS and (96, 3) not in PERMUTATIONS
    lsh = MinHashLSH(threshold=0.33, num_perm=128)
    assert lsh_params(0.33, 128) == (lsh.b, lsh.r)
    a, b = MinHash(num_perm=96, seed=3, scheme="affine32").permutations
    got_a, got_b = permutations(96, 3)
    np.testing.assert_array_equal(got_a, a)
    np.testing.assert_array_equal(got_b, b)


def test_the_default_near_dedup_setup_imports_neither_datasketch_nor_scipy():
    code = """
import sys
from corpusforge.pipeline.dedup.config import NearDedupConfig
from corpusforge.pipeline.dedup.minhash import MinHasher
from corpusforge.pipeline.dedup.near import banding
config = NearDedupConfig()
assert banding(config) == (64, 4), banding(config)
MinHasher(config.num_perm, config.seed).signatures(["a b c d e f g"])
print(sorted(m for m in ("datasketch", "scipy") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
