"""LSH buckets from compact band records, as pure numpy functions (the Beam wiring is in ``near.py``).

A document enters banding as a 64-bit *node digest* (a hash of its survivor rank), not as the rank itself:
one band record is then two int64s, and the signature step packs the records of a whole batch into one
byte string per *band shard* (``band key mod shards``). Grouping by shard instead of by band key keeps the
number of groups small and every record 16 bytes, instead of one Python tuple, one dict entry and one list
per band key (~330 bytes per record on the in-process DirectRunner, which holds grouped values decoded).
``shard_buckets`` then finds the buckets of one shard by sorting.

Digests of different ranks collide with probability ~n^2 / 2^65 (3e-8 for a million documents). Colliding
documents share one digest in every bucket and are told apart again in the verification join, where each is
compared with every candidate of the digest and with each other (``corpusforge.pipeline.dedup.near``): a collision can
add a verified pair that banding alone would have missed, never lose one.
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Iterator

import numpy as np


def node_digest(node: tuple) -> int:
    """A signed 64-bit digest of a survivor rank ``(flag, -score, id)``: equal ranks, equal digests.

    Signed so that Beam's default coder writes it as one varint (it pickles ints of 2**63 and above).
    """
    flag, score, doc_id = node
    data = f"{flag}\x00{score!r}\x00{doc_id}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


def band_records(keys: np.ndarray, digests: np.ndarray, shards: int) -> Iterator[tuple[int, bytes]]:
    """``(shard, packed records)`` for a batch: ``keys`` is ``(n, bands)`` band hashes, ``digests`` the
    ``n`` node digests; each record is ``(band key, digest)`` as two little-endian int64s."""
    n, bands = keys.shape
    if n * bands == 0:
        return
    records = np.empty((n * bands, 2), dtype="<i8")
    records[:, 0] = keys.reshape(-1).view(np.int64)
    records[:, 1] = np.repeat(np.asarray(digests, dtype=np.int64), bands)
    shard_of = (keys.reshape(-1) % np.uint64(shards)).astype(np.int64)
    order = np.argsort(shard_of, kind="stable")
    records, shard_of = records[order], shard_of[order]
    bounds = np.flatnonzero(np.diff(shard_of)) + 1
    for part, shard in zip(np.split(records, bounds), shard_of[np.r_[0, bounds]].tolist()):
        yield shard, part.tobytes()


def buckets(packed: Iterable[bytes]) -> Iterator[tuple[int, list[int]]]:
    """The buckets of one shard with two or more documents: ``(band key, sorted distinct digests)``."""
    records = np.frombuffer(b"".join(packed), dtype="<i8").reshape(-1, 2)
    if len(records) < 2:
        return
    order = np.lexsort((records[:, 1], records[:, 0]))
    keys, digests = records[order, 0], records[order, 1]
    distinct = np.r_[True, (keys[1:] != keys[:-1]) | (digests[1:] != digests[:-1])]
    keys, digests = keys[distinct], digests[distinct]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    sizes = np.diff(np.r_[starts, len(keys)])
    for start, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist()):
        yield int(keys[start]), digests[start:start + size].tolist()
