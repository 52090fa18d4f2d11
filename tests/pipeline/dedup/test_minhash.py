"""Signatures identical to datasketch's, their estimates, hashing helpers and banding parameters."""
from __future__ import annotations

import numpy as np
import pytest
from datasketch import MinHash, MinHashLSH
from hypothesis import given, settings
from hypothesis import strategies as st

from corpusforge.pipeline.dedup.minhash import (
    EMPTY, MinHasher, Shingler, band_hashes, candidate_probability, chain_hash64, estimated_jaccard,
    ngram_hashes, short_signatures, unit_hash64, word_hashes, lsh_params,
)
from corpusforge.pipeline.dedup.text import jaccard
from tests.pipeline.dedup.corpus import edit_words, paragraphs

TEXTS = paragraphs(40) + ["", "one", "two words", "a b c d", "Ünïcödé “quotes” and ٣ digits — here"]


@pytest.mark.parametrize("unit,ngram", [("word", 5), ("char", 9)])
@pytest.mark.parametrize("hash_name", ["fast", "sha1"])
def test_signatures_identical_to_datasketch(unit, ngram, hash_name):
    shingler = Shingler(ngram, unit, hash_name)
    hasher = MinHasher(num_perm=64, seed=7, shingler=shingler)
    sigs = hasher.signatures(TEXTS)
    assert sigs.shape == (len(TEXTS), 64) and sigs.dtype == np.uint32
    for text, sig in zip(TEXTS, sigs):
        if hash_name == "sha1":  # datasketch's own default hash function
            reference = MinHash(num_perm=64, seed=7)
        else:
            reference = MinHash(num_perm=64, seed=7, hashfunc=shingler.hashfunc)
        reference.update_batch(shingler.shingle_bytes(text))
        np.testing.assert_array_equal(sig, reference.hashvalues)


def test_signatures_across_block_boundaries_match_one_by_one():
    long_text = " ".join(paragraphs(60))  # one document bigger than a permutation block
    texts = [long_text, "", TEXTS[0], long_text[:5000]]
    hasher = MinHasher(128, 1)
    together = hasher.signatures(texts)
    alone = np.stack([hasher.signatures([t])[0] for t in texts])
    np.testing.assert_array_equal(together, alone)
    assert (together[1] == EMPTY).all()


def test_from_hashes_equals_its_reference_on_a_batch():
    """The permutation-at-a-time signatures equal the block-wise definition, with empty documents anywhere and
    documents across the reference's block boundaries."""
    hasher = MinHasher(256, 1)
    texts = ["", *paragraphs(30), " ".join(paragraphs(60)), "", "one", "", TEXTS[-1], ""]
    hashes, counts = hasher.shingler.hashes(texts)
    np.testing.assert_array_equal(hasher.from_hashes(hashes, counts), hasher.from_hashes_reference(hashes, counts))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=30), max_size=12), st.integers(1, 40))
def test_from_hashes_equals_its_reference_on_any_hashes(docs, num_perm):
    hasher = MinHasher(num_perm, 3)
    hashes = np.array([h for doc in docs for h in doc], dtype=np.uint32)
    counts = np.array([len(doc) for doc in docs], dtype=np.int64)
    np.testing.assert_array_equal(hasher.from_hashes(hashes, counts), hasher.from_hashes_reference(hashes, counts))



@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=30), max_size=12), st.integers(1, 40),
       st.integers(1, 25))
def test_from_hashes_in_chunks_equals_its_reference(docs, num_perm, chunk):
    """A batch (or one document) with more shingles than a chunk is permuted chunk by chunk: documents cut by a
    chunk's edge, starting or ending on one, empty ones at the edges, all get the reference's signatures."""
    import corpusforge.pipeline.dedup.minhash as minhash

    hasher = MinHasher(num_perm, 3)
    hashes = np.array([h for doc in docs for h in doc], dtype=np.uint32)
    counts = np.array([len(doc) for doc in docs], dtype=np.int64)
    default = minhash._CHUNK_SHINGLES
    minhash._CHUNK_SHINGLES = chunk
    try:
        chunked = hasher.from_hashes(hashes, counts)
    finally:
        minhash._CHUNK_SHINGLES = default
    np.testing.assert_array_equal(chunked, hasher.from_hashes_reference(hashes, counts))


def test_identical_texts_identical_signatures_and_normalisation_invariance():
    hasher = MinHasher(128, 1)
    text = TEXTS[0]
    sigs = hasher.signatures([text, text, text.upper().replace(" ", "  ")])
    np.testing.assert_array_equal(sigs[0], sigs[1])
    np.testing.assert_array_equal(sigs[0], sigs[2])
    assert estimated_jaccard(sigs[0], sigs[1]) == 1.0


def test_estimated_jaccard_close_to_true_jaccard():
    shingler = Shingler(5)
    hasher = MinHasher(256, 1, shingler)
    errors = []
    for i, base in enumerate(paragraphs(20, min_chars=800)):
        for fraction in (0.02, 0.05, 0.1, 0.2):
            other = edit_words(base, fraction, seed=i)
            a, b = set(shingler.shingle_bytes(base)), set(shingler.shingle_bytes(other))
            sigs = hasher.signatures([base, other])
            errors.append(estimated_jaccard(sigs[0], sigs[1]) - jaccard(a, b))
    errors = np.abs(errors)
    # standard error of the estimate is at most 0.5/sqrt(256) = 0.031
    assert errors.mean() < 0.03 and errors.max() < 0.12


def test_short_signatures_estimate_what_full_ones_do():
    """The low 16 bits keep every agreement and add one only where two different minima share them."""
    hasher = MinHasher(256, 1, Shingler(5))
    base = paragraphs(30, min_chars=400)
    texts = base + [edit_words(t, 0.1, seed=i) for i, t in enumerate(base)]
    full = hasher.signatures(texts)
    short = short_signatures(full)
    assert short.dtype == np.uint16 and short.nbytes * 2 == full.nbytes
    assert np.array_equal(short, (full & 0xFFFF).astype(np.uint16))
    spurious = 0
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            agree_full, agree_short = full[i] == full[j], short[i] == short[j]
            assert not np.any(agree_full & ~agree_short)  # an agreement is never lost
            spurious += int(np.count_nonzero(agree_short & ~agree_full))
    pairs = len(texts) * (len(texts) - 1) // 2
    # expected: (256 - agreements) / 65,536 per pair, under 0.004; allow ten times that
    assert spurious / pairs < 0.04


def test_word_hashes_match_unit_hash():
    stream = b"  hello world  caf\xc3\xa9 x "
    hashes, starts = word_hashes(stream)
    assert starts.tolist() == [2, 8, 15, 21]
    assert hashes.tolist() == [unit_hash64(w) for w in stream.split()]
    assert word_hashes(b"")[0].size == 0


def test_ngram_hashes_match_chain_hash():
    rng = np.random.default_rng(0)
    lengths = np.array([7, 0, 2, 3, 5])
    values = rng.integers(0, 2**63, lengths.sum(), dtype=np.uint64)
    hashes, counts = ngram_hashes(values, lengths, 3)
    assert counts.tolist() == [5, 0, 1, 1, 3]
    expected, offset = [], 0
    for length in lengths:
        seq = [int(v) for v in values[offset:offset + length]]
        offset += length
        if 0 < length < 3:
            expected.append(chain_hash64(seq))
        expected += [chain_hash64(seq[i:i + 3]) for i in range(length - 2)]
    assert hashes.tolist() == expected


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.8])
def test_lsh_params_are_datasketchs(threshold):
    lsh = MinHashLSH(threshold=threshold, num_perm=128)
    assert lsh_params(threshold, 128) == (lsh.b, lsh.r)


def test_lsh_params_known_values_and_candidate_probability():
    assert lsh_params(0.5, 128) == (25, 5)
    assert lsh_params(0.8, 128) == (9, 13)
    assert candidate_probability(0.5, 32, 4) == pytest.approx(1 - (1 - 0.5**4) ** 32)
    bands, rows = lsh_params(0.3, 128)
    assert candidate_probability(0.5, bands, rows) > 0.99
    assert candidate_probability(0.1, bands, rows) < 0.05


def test_band_hashes_equal_exactly_where_bands_equal():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2**32, 40, dtype=np.uint32)
    b = a.copy()
    b[7] ^= 1  # differs in band 1 only (rows 5..9)
    keys = band_hashes(np.stack([a, b]), bands=8, rows=5)
    assert keys.shape == (2, 8)
    assert (keys[0] == keys[1]).tolist() == [True, False] + [True] * 6
    assert len(set(keys[0].tolist())) == 8  # the band index is mixed in


def test_shingler_rejects_bad_arguments():
    with pytest.raises(ValueError):
        Shingler(5, unit="line")
    with pytest.raises(ValueError):
        Shingler(5, hash="md5")
    with pytest.raises(ValueError):
        Shingler(0)
