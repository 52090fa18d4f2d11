"""Python's cyclic garbage collector while a pipeline runs: collections over more allocations at a time.

CPython (3.11) collects its youngest generation every 700 net allocations of container objects and, every tenth
of those, the next one; a build allocates several such objects per word of every text (records, tuples, Beam's
own per-element objects), so a normalize + dedup build of 5,000 documents ran ~565 young and ~51 middle
collections and 3 full ones, ~0.21 CPU s or ~3.5 % of its per-document CPU (``gc.callbacks``, timed). Almost
nothing they find is garbage (~3 objects a document: reference counting frees the rest), and what they cost is
the live objects they walk: each collection walks the young objects still alive, and a middle or full one walks
again what earlier ones promoted. Collecting the youngest generation every ``YOUNG_THRESHOLD`` allocations
instead walks each live object fewer times: 11 young collections and no other, ~0.07 CPU s on the same build.
What this holds longer is cyclic garbage only (memory reference counting cannot free), at most what that many
allocations make, a few MB. The thresholds are set while the pipeline runs (``fewer_collections``, the in-process
runner's threads included) and for a worker process's life (``corpusforge/core/sdk_worker.py``), then put back.
"""
from __future__ import annotations

import contextlib
import gc

YOUNG_THRESHOLD = 20_000


@contextlib.contextmanager
def fewer_collections():
    """While open, the youngest generation is collected every ``YOUNG_THRESHOLD`` net allocations (never
    more often than the process had it; a threshold of 0, collection off, stays off); the older generations'
    thresholds stay. Then the process's own thresholds come back."""
    before = gc.get_threshold()
    if before[0]:
        gc.set_threshold(max(before[0], YOUNG_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
