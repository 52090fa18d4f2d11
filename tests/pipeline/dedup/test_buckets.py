"""Compact band records: node digests, packing by shard, and buckets found by sorting."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from corpusforge.pipeline.dedup.buckets import band_records, buckets, node_digest
from corpusforge.pipeline.dedup.near import LARGE, listed_pairs, shard_pairs


def test_node_digest_is_a_stable_signed_64_bit_hash_of_the_rank():
    rank = (0, -0.5, "doc1")
    assert node_digest(rank) == node_digest((0, -0.5, "doc1"))
    assert -2**63 <= node_digest(rank) < 2**63
    assert len({node_digest(r) for r in [rank, (0, -0.25, "doc1"), (1, 0.0, "doc1"), (0, -0.5, "doc2")]}) == 4


def reference_buckets(keys: np.ndarray, digests: list[int]) -> dict[int, list[int]]:
    found = defaultdict(set)
    for row, d in zip(keys.tolist(), digests):
        for key in row:
            found[int(np.uint64(key).view(np.int64))].add(d)
    return {k: sorted(v) for k, v in found.items() if len(v) > 1}


@pytest.mark.parametrize("shards", [1, 7, 1024])
def test_buckets_by_shard_equal_buckets_by_key(shards):
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 40, size=(300, 6), dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # many shared
    digests = [node_digest((1, 0.0, f"d{i}")) for i in range(300)]
    by_shard = defaultdict(list)
    for lo in range(0, 300, 64):  # batches, as the signature step emits them
        for shard, packed in band_records(keys[lo:lo + 64], np.array(digests[lo:lo + 64]), shards):
            assert 0 <= shard < shards
            by_shard[shard].append(packed)
    found = {key: members for packed in by_shard.values() for key, members in buckets(packed)}
    assert found == reference_buckets(keys, digests)
    assert len(found) == 40  # 40 distinct keys, each shared by several documents


def test_a_document_twice_in_a_bucket_counts_once():
    keys = np.array([[5, 6], [5, 7], [5, 6]], dtype=np.uint64)
    packed = [p for _, p in band_records(keys, np.array([10, 11, 10]), 1)]
    assert list(buckets(packed)) == [(5, [10, 11])]
    assert list(band_records(np.empty((0, 2), dtype=np.uint64), np.array([], dtype=np.int64), 4)) == []


def test_shard_pairs_all_pairs_or_large_bucket_members():
    keys = np.array([[1], [1], [1], [2], [2]], dtype=np.uint64)
    packed = [p for _, p in band_records(keys, np.array([30, 10, 20, 40, 50]), 1)]
    out = list(shard_pairs(3)((0, packed)))
    assert sorted(out) == [(10, 20), (10, 30), (20, 30), (40, 50)]
    large = [o.value for o in shard_pairs(2)((0, packed)) if getattr(o, "tag", None) == LARGE]
    assert sorted(large) == [(10, 1), (20, 1), (30, 1)]


def test_listed_pairs_are_the_shards_pairs_in_bounded_lists(monkeypatch):
    """A shard of full buckets makes pairs quadratic in its records: they go on in lists of at most
    ``PAIRS_LISTED``, together the shard's pairs, large buckets' members as they are."""
    from corpusforge.pipeline.dedup import near

    monkeypatch.setattr(near, "PAIRS_LISTED", 7)
    keys = np.array([[k % 3] for k in range(40)], dtype=np.uint64)
    packed = [p for _, p in band_records(keys, np.arange(100, 140), 1)]
    expected = list(shard_pairs(20)((0, packed)))
    out = list(listed_pairs(20)((0, packed)))
    lists = [o for o in out if not hasattr(o, "tag")]
    assert len(expected) > 100 and all(0 < len(pairs) <= 7 for pairs in lists)
    assert [pair for pairs in lists for pair in pairs] == expected
    large = list(listed_pairs(5)((0, packed)))
    assert sorted(o.value for o in large if getattr(o, "tag", None) == LARGE) == sorted(
        o.value for o in shard_pairs(5)((0, packed)) if getattr(o, "tag", None) == LARGE)
