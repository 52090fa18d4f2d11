"""Bundles that end without waiting on Beam's state sampler: the driver's (``direct_runner.DirectRunner``) and
its worker processes' (``sdk_worker``)."""
from __future__ import annotations

import contextlib

# Beam's state sampler (the thread that times each step for its msec counters) sleeps in periods growing from
# 2 to 200 ms, and a bundle ends only when the sampler has woken up and stopped: up to 200 ms of idle wall time
# per fused stage, ~0.9 s of a 3,000-document build's ~50 bundles. A 10 ms cap keeps the wait under 10 ms; the
# thread waking 100 times a second takes a lock, not the GIL. Counters and metrics are unchanged.
SAMPLING_PERIOD_MS = 10


@contextlib.contextmanager
def quick_sampler():
    """While it is open, the bundles Beam starts in this process (the in-process runner's, a worker's) sample every
    ``SAMPLING_PERIOD_MS`` at most (Beam's bundle processor looks ``statesampler.StateSampler`` up per bundle
    processor it makes)."""
    from apache_beam.runners.worker import statesampler

    beams = statesampler.StateSampler

    class QuickStateSampler(beams):
        def __init__(self, prefix, counter_factory, sampling_period_ms=SAMPLING_PERIOD_MS):
            super().__init__(prefix, counter_factory, min(sampling_period_ms, SAMPLING_PERIOD_MS))

    statesampler.StateSampler = QuickStateSampler
    try:
        yield
    finally:
        statesampler.StateSampler = beams
