"""MinHash signatures computed for many documents at once, identical to datasketch's.

datasketch's ``MinHash`` (scheme ``affine32``, the default since 2.0) hashes each shingle to 32 bits, mixes
it with the MurmurHash3 finaliser and applies ``num_perm`` permutations ``a * h + b mod 2**32`` whose
parameters come from ``numpy.random.RandomState(seed)``. ``MinHasher`` takes those very parameters from a
datasketch ``MinHash`` (stored in ``datasketch_tables`` for common configurations) and applies them to every shingle of a batch of documents in a few numpy operations,
with a segmented minimum per document, instead of one Python call per document.

Two shingle hashes:

- ``sha1`` is datasketch's default (the first 4 bytes of SHA-1 of the shingle's UTF-8 bytes): signatures
  equal ``MinHash(num_perm, seed)`` fed with ``Shingler.shingle_bytes(text)``.
- ``fast`` hashes every word with a polynomial hash computed by prefix sums in numpy and combines the n words of a shingle with a
  64-bit MurmurHash3 finaliser chain in numpy; the low 32 bits are the shingle hash. Signatures equal
  ``MinHash(num_perm, seed, hashfunc=shingler.hashfunc)`` fed with the same shingle bytes.

Pure functions and classes, no Beam.
"""
from __future__ import annotations

import base64
import functools
import hashlib
from operator import methodcaller

import numpy as np

from corpusforge.pipeline.dedup.datasketch_tables import LSH_PARAMS, PERMUTATIONS
from corpusforge.pipeline.dedup.text import char_shingles, normalize_for_hash, segmented_bytes, word_shingles, words

MASK64 = (1 << 64) - 1
SEED64 = 0x9E3779B97F4A7C15  # start value of the n-gram hash chain (the golden ratio's 64 bits)
EMPTY = np.uint32(0xFFFFFFFF)  # datasketch's hash value of an empty MinHash
_CHUNK_SHINGLES = 1 << 18  # shingles permuted at a time: 1 MB of uint32, cache-sized
_BLOCK_ROWS = 2048  # shingles per permutation block: a 128 x 2048 uint32 block is 1 MB, cache-sized

# ---------------------------------------------------------------------------------------------- hashing


def fmix64_int(h: int) -> int:
    """MurmurHash3's 64-bit finaliser on a Python int (a bijection on [0, 2**64))."""
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK64
    return h ^ (h >> 33)


_SHIFT33 = np.uint64(33)


def fmix64(h: np.ndarray) -> np.ndarray:
    """``fmix64_int`` on a uint64 array (modified in place and returned; one scratch array for the shifts)."""
    shifted = np.right_shift(h, _SHIFT33)
    h ^= shifted
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= np.right_shift(h, _SHIFT33, out=shifted)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= np.right_shift(h, _SHIFT33, out=shifted)
    return h


def fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finaliser on a uint32 array (what datasketch's affine32 scheme applies first)."""
    h = h ^ (h >> np.uint32(16))
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


_P = 0x100000001B3  # multiplier of the polynomial word hash (FNV's 64-bit prime; odd, so invertible)
_P_INV = pow(_P, -1, 1 << 64)


def unit_hash64(word: bytes) -> int:
    """The 64-bit hash of one word's UTF-8 bytes: ``fmix64`` of the polynomial ``sum(c_i * P**(L-1-i))``
    mod 2**64. ``word_hashes`` computes the same for every word of a batch with two prefix sums."""
    h = 0
    for c in word:
        h = (h * _P + c) & MASK64
    return fmix64_int(h)


def chain_hash64(values) -> int:
    """The n-gram hash of a sequence of 64-bit unit hashes: ``h = fmix64(h ^ v)`` from ``SEED64``."""
    h = SEED64
    for v in values:
        h = fmix64_int(h ^ v)
    return h


def fast_word_hash32(shingle: bytes) -> int:
    """The ``fast`` hash of a word shingle (words joined by single spaces), as a datasketch ``hashfunc``."""
    return chain_hash64(unit_hash64(w) for w in shingle.split(b" ")) & 0xFFFFFFFF


def fast_char_hash32(shingle: bytes) -> int:
    """The ``fast`` hash of a character shingle (the code points are the unit hashes)."""
    return chain_hash64(ord(c) for c in shingle.decode("utf-8")) & 0xFFFFFFFF


def sha1_hash32(shingle: bytes) -> int:
    """datasketch's default hash (``datasketch.hashfunc.sha1_hash32``)."""
    return int.from_bytes(hashlib.sha1(shingle).digest()[:4], "little")


class _Powers:
    """``P**i`` and ``P**-i`` mod 2**64 for i < n, grown on demand."""

    def __init__(self):
        self.up = np.ones(1, dtype=np.uint64)
        self.down = np.ones(1, dtype=np.uint64)

    def get(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self.up) < n:
            size = max(n, 2 * len(self.up))
            one = np.ones(1, dtype=np.uint64)
            self.up = np.concatenate([one, np.cumprod(np.full(size - 1, _P, dtype=np.uint64))])
            self.down = np.concatenate([one, np.cumprod(np.full(size - 1, _P_INV, dtype=np.uint64))])
        return self.up[:n], self.down[:n]


def word_hashes(stream: bytes, powers: _Powers | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(hashes, starts)``: ``unit_hash64`` of every space-separated word of ``stream`` and the byte offset
    where each word starts, computed without a Python call per word.

    The polynomial hash of bytes s..e is ``P**e * (S[e+1] - S[s])`` where ``S`` is the prefix sum of
    ``c_j * P**-j``: everything wraps mod 2**64, and ``P`` is odd, so ``P**-1`` exists.
    """
    data = np.frombuffer(stream, dtype=np.uint8)
    if data.size == 0:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    up, down = (powers or _Powers()).get(len(data))
    # Word bytes between two non-word guards: the changes alternate, a word's start then its (exclusive) end.
    is_char = np.zeros(len(data) + 2, dtype=bool)
    np.not_equal(data, 0x20, out=is_char[1:-1])
    changes = np.flatnonzero(is_char[1:] != is_char[:-1])
    starts, ends = changes[0::2], changes[1::2]
    prefix = np.empty(len(data) + 1, dtype=np.uint64)
    prefix[0] = 0
    np.multiply(data, down, out=prefix[1:])
    np.cumsum(prefix[1:], out=prefix[1:])
    hashes = up[ends - 1] * (prefix[ends] - prefix[starts])
    return fmix64(hashes), starts


def ngram_hashes(values: np.ndarray, lengths: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """64-bit n-gram hashes of many sequences at once.

    ``values`` holds the unit hashes (uint64) of all sequences back to back, ``lengths`` their lengths.
    Returns ``(hashes, counts)``: per sequence its ``length - n + 1`` n-gram hashes in order
    (``chain_hash64`` of each window), one hash of the whole sequence if it is shorter than ``n``, none if
    it is empty; ``counts`` says how many each sequence got.
    """
    values = np.asarray(values, dtype=np.uint64)
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    full = lengths >= n
    counts = np.where(full, lengths - n + 1, np.minimum(lengths, 1))
    out_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(counts, out=out_offsets[1:])
    out = np.empty(out_offsets[-1], dtype=np.uint64)
    total = len(values)
    if full.any() and total >= n:
        windows = np.full(total - n + 1, SEED64, dtype=np.uint64)
        for j in range(n):
            windows ^= values[j:j + total - n + 1]
            fmix64(windows)
        full_counts = counts[full]
        # positions of the valid windows: for each full sequence, offset .. offset + count - 1
        starts = np.repeat(offsets[:-1][full], full_counts)
        within = np.arange(full_counts.sum()) - np.repeat(np.cumsum(full_counts) - full_counts, full_counts)
        targets = np.repeat(out_offsets[:-1][full], full_counts) + within
        out[targets] = windows[starts + within]
    for i in np.flatnonzero(~full & (lengths > 0)):
        out[out_offsets[i]] = chain_hash64(int(v) for v in values[offsets[i]:offsets[i + 1]])
    return out, counts


# --------------------------------------------------------------------------------------------- shingles


class Shingler:
    """Turns texts into the 32-bit shingle hashes MinHash permutes (see the module docstring)."""

    def __init__(self, ngram: int = 5, unit: str = "word", hash: str = "fast"):
        if unit not in ("word", "char"):
            raise ValueError(f"unit must be 'word' or 'char', got {unit!r}")
        if hash not in ("fast", "sha1"):
            raise ValueError(f"hash must be 'fast' or 'sha1', got {hash!r}")
        if ngram < 1:
            raise ValueError(f"ngram must be >= 1, got {ngram}")
        self.ngram, self.unit, self.hash = ngram, unit, hash
        self._powers = _Powers()

    @property
    def hashfunc(self):
        """The datasketch ``hashfunc`` that gives the same shingle hashes as ``hashes``."""
        if self.hash == "sha1":
            return sha1_hash32
        return fast_word_hash32 if self.unit == "word" else fast_char_hash32

    def shingle_bytes(self, text: str) -> list[bytes]:
        """The shingles of ``text`` as UTF-8 bytes: what to feed ``datasketch.MinHash.update_batch``."""
        if self.unit == "word":
            return [s.encode("utf-8") for s in word_shingles(words(text), self.ngram)]
        return [s.encode("utf-8") for s in char_shingles(normalize_for_hash(text), self.ngram)]

    def hashes(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(hashes, counts)``: the uint32 hashes of every shingle of every text, back to back, and how
        many each text has (0 for a text without words)."""
        if self.hash == "sha1":
            return self._sha1_hashes(texts)
        if self.unit == "word":
            streams = [segmented_bytes(t) for t in texts]  # a Han, kana or Thai character is one word
            units, starts = word_hashes(b" ".join(streams), self._powers)
            doc_ends = np.cumsum(np.fromiter(map(len, streams), dtype=np.int64, count=len(streams)) + 1)
            lengths = np.diff(np.searchsorted(starts, doc_ends), prepend=0)
        else:
            encoded = [normalize_for_hash(t).encode("utf-32-le") for t in texts]
            lengths = np.fromiter((len(e) // 4 for e in encoded), dtype=np.int64, count=len(encoded))
            units = np.frombuffer(b"".join(encoded), dtype="<u4").astype(np.uint64)
        hashes, counts = ngram_hashes(units, lengths, self.ngram)
        return (hashes & np.uint64(0xFFFFFFFF)).astype(np.uint32), counts

    def _sha1_hashes(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        per_text = [self.shingle_bytes(t) for t in texts]
        counts = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
        flat = [s for shingles in per_text for s in shingles]
        digests = b"".join(map(methodcaller("digest"), map(hashlib.sha1, flat)))
        return np.frombuffer(digests, dtype="<u4")[::5].copy(), counts


# ---------------------------------------------------------------------------------------------- MinHash


def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)``, uint32: the permutations of ``datasketch.MinHash(num_perm, seed, scheme="affine32")``, from the
    table of common ones (``datasketch_tables``) or else from datasketch itself."""
    stored = PERMUTATIONS.get((num_perm, seed))
    if stored is not None:
        a, b = np.frombuffer(base64.b64decode(stored), dtype="<u4").reshape(2, num_perm).astype(np.uint32)
        return a, b
    from datasketch import MinHash

    a, b = MinHash(num_perm=num_perm, seed=seed, scheme="affine32").permutations
    return np.ascontiguousarray(a, dtype=np.uint32), np.ascontiguousarray(b, dtype=np.uint32)


class MinHasher:
    """Vectorised MinHash with datasketch's permutations (scheme ``affine32``, ``seed``)."""

    def __init__(self, num_perm: int = 128, seed: int = 1, shingler: Shingler | None = None):
        self.a, self.b = permutations(num_perm, seed)
        self.num_perm, self.seed = num_perm, seed
        self.shingler = shingler or Shingler()

    def signatures(self, texts: list[str]) -> np.ndarray:
        """A ``(len(texts), num_perm)`` uint32 array: row i is the signature of ``texts[i]``
        (all ``0xFFFFFFFF``, like an empty datasketch MinHash, for a text without words)."""
        hashes, counts = self.shingler.hashes(texts)
        return self.from_hashes(hashes, counts)

    def from_hashes(self, hashes: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Signatures from 32-bit shingle hashes laid out as ``Shingler.hashes`` returns them.

        One permutation at a time over a chunk of at most ``_CHUNK_SHINGLES`` shingles: ``a * h + b`` into one
        cache-sized buffer (1 MB) and its segmented minimum per document. ~2x the speed of permuting blocks of
        shingles by every permutation at once (``from_hashes_reference``), whose (permutations x shingles)
        blocks were several MB, each pass over them from memory. A batch or a document with more shingles is
        taken chunk by chunk, a document cut by a chunk's edge getting the minimum of its parts: one 4M-character
        document in one buffer cost 0.028 s/MB at 256 permutations against 0.014 at 1M; chunked 0.015 and 0.014
        (``python bench/minhash_chunks.py``). The signatures are the same."""
        counts = np.asarray(counts, dtype=np.int64)
        sigs = np.full((len(counts), self.num_perm), EMPTY, dtype=np.uint32)
        nonempty = np.flatnonzero(counts)
        if not len(nonempty):
            return sigs
        mixed = fmix32(np.asarray(hashes, dtype=np.uint32))
        # Where each document's shingles start and end; empty documents in between hold none, so consecutive
        # starts within a chunk bound exactly one document's shingles (what reduceat takes).
        starts = (np.cumsum(counts) - counts)[nonempty]
        ends = starts + counts[nonempty]
        permuted = np.empty(min(len(mixed), _CHUNK_SHINGLES), dtype=np.uint32)
        mins = np.full((self.num_perm, len(nonempty)), EMPTY, dtype=np.uint32)
        for lo in range(0, len(mixed), _CHUNK_SHINGLES):
            hi = min(lo + _CHUNK_SHINGLES, len(mixed))
            first = np.searchsorted(ends, lo, side="right")  # the documents with shingles in lo..hi-1
            last = np.searchsorted(starts, hi, side="left")
            segments = np.maximum(starts[first:last], lo) - lo
            chunk, buffer = mixed[lo:hi], permuted[: hi - lo]
            whole = hi - lo == len(mixed)  # one chunk (most batches): the minima are the signatures
            part = mins[0] if whole else np.empty(last - first, dtype=np.uint32)
            for i, (a, b) in enumerate(zip(self.a, self.b)):
                np.multiply(chunk, a, out=buffer)
                buffer += b
                if whole:
                    np.minimum.reduceat(buffer, segments, out=mins[i])
                else:
                    np.minimum.reduceat(buffer, segments, out=part)
                    np.minimum(mins[i, first:last], part, out=mins[i, first:last])
        sigs[nonempty] = mins.T
        return sigs

    def from_hashes_reference(self, hashes: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The definition of ``from_hashes``: blocks of shingles permuted by every permutation at once."""
        counts = np.asarray(counts, dtype=np.int64)
        sigs = np.full((len(counts), self.num_perm), EMPTY, dtype=np.uint32)
        mixed = fmix32(np.asarray(hashes, dtype=np.uint32))
        nonempty = np.flatnonzero(counts)
        starts = np.zeros(len(counts), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        starts, ends = starts[nonempty], starts[nonempty] + counts[nonempty]
        # Layout (num_perm, rows): segmented minima along the last axis are much faster in numpy than
        # along the first (np.minimum.reduceat over axis 0 is strided).
        block = np.empty((self.num_perm, min(_BLOCK_ROWS, len(mixed))), dtype=np.uint32)
        for lo in range(0, len(mixed), _BLOCK_ROWS):
            hi = min(lo + _BLOCK_ROWS, len(mixed))
            part = block[:, : hi - lo]
            np.multiply(self.a[:, None], mixed[None, lo:hi], out=part)
            part += self.b[:, None]
            first = np.searchsorted(ends, lo, side="right")  # documents overlapping rows lo..hi-1
            last = np.searchsorted(starts, hi, side="left")
            segments = np.maximum(starts[first:last], lo) - lo
            mins = np.minimum.reduceat(part, segments, axis=1).T
            rows = nonempty[first:last]
            sigs[rows] = np.minimum(sigs[rows], mins)
        return sigs


SHORT_DTYPE = np.uint16


def short_signatures(sigs: np.ndarray) -> np.ndarray:
    """The low 16 bits of each minimum (b-bit minwise hashing, Li & Koenig 2010), for verification.

    Half the bytes of a full signature wherever signatures are shipped or held. Two different 32-bit minima
    agree on their low 16 bits with probability 2^-16, so the estimated Jaccard gains (1 - J) / 65,536 on
    average: at 256 permutations one pair in ~500 moves up by one step of 1/256, never down. Banding uses the
    full signatures.
    """
    return sigs.astype(SHORT_DTYPE)


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """The Jaccard similarity two signatures estimate (datasketch's ``MinHash.jaccard``)."""
    if a.shape != b.shape:
        raise ValueError(f"signatures of different lengths: {a.shape} and {b.shape}")
    return float(np.count_nonzero(a == b)) / a.shape[-1]


# --------------------------------------------------------------------------------------------- banding


@functools.lru_cache(maxsize=64)
def lsh_params(threshold: float, num_perm: int, false_positive_weight: float = 0.5) -> tuple[int, int]:
    """``(bands, rows)`` for a candidate threshold, chosen as datasketch's ``MinHashLSH`` chooses them
    (minimising the weighted false positive and false negative probability mass): from the table of common
    configurations (``datasketch_tables``), else from datasketch's optimiser."""
    stored = LSH_PARAMS.get((threshold, num_perm, false_positive_weight))
    if stored is not None:
        return stored
    from datasketch.lsh import _optimal_param

    return tuple(_optimal_param(threshold, num_perm, false_positive_weight, 1.0 - false_positive_weight))


def candidate_probability(similarity: float, bands: int, rows: int) -> float:
    """The probability that two documents of this Jaccard similarity share at least one band."""
    return 1.0 - (1.0 - similarity ** rows) ** bands


def band_hashes(sigs: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """A ``(n, bands)`` uint64 array: the hash of each band of each signature (band index mixed in)."""
    n = sigs.shape[0]
    parts = sigs[:, : bands * rows].reshape(n, bands, rows).astype(np.uint64)
    h = np.full((n, bands), SEED64, dtype=np.uint64) ^ np.arange(bands, dtype=np.uint64)
    for j in range(rows):
        h ^= parts[:, :, j]
        fmix64(h)
    return h
