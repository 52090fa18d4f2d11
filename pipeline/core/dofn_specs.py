"""Beam's DoFn state and timer lookup, worked out once per DoFn object for the length of a build.

Beam asks ``userstate.get_dofn_specs(dofn)`` whether a DoFn is stateful about nine times per ParDo (building
the ParDo, validating it, the DirectRunner's graph visit, the runner API, the bundle processor), and each
call builds ``inspect.signature`` of every method the DoFn has (~30, most of them ``DoFn``'s own): ~1.1 s of
the start-up of a build of ~130 ParDos on the 2-core bench machine, whatever the corpus size. The answer
depends only on the DoFn's methods, which do not change while a build runs, so ``memoized_dofn_specs()``
keeps it per DoFn object (by identity, through a weak reference, so a new object at a reused address is
looked up afresh) while the block runs, and puts Beam's own function back on exit.

Only Beam versions whose ``get_dofn_specs`` was checked to be a pure function of the DoFn are patched
(``CHECKED_BEAM``); on any other the block runs with Beam's function untouched. Beam's callers all reach it
as ``userstate.get_dofn_specs`` (the module attribute), which is what is replaced.
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Iterator

CHECKED_BEAM = ("2.77.",)  # apache_beam.__version__ prefixes whose get_dofn_specs this was checked against

_lock = threading.Lock()
_active = 0  # open memoized_dofn_specs() blocks (builds may nest or run on threads)
_original = None
_memo: dict[int, tuple[weakref.ref, frozenset, frozenset]] = {}


def supported(version: str | None = None) -> bool:
    if version is None:
        import apache_beam

        version = apache_beam.__version__
    return version.startswith(CHECKED_BEAM)


def _memoized(dofn):
    entry = _memo.get(id(dofn))
    if entry is not None and entry[0]() is dofn:
        return set(entry[1]), set(entry[2])
    state, timers = _original(dofn)
    try:
        _memo[id(dofn)] = (weakref.ref(dofn), frozenset(state), frozenset(timers))
    except TypeError:  # not weak-referenceable: not memoized
        pass
    return state, timers


@contextlib.contextmanager
def memoized_dofn_specs() -> Iterator[bool]:
    """While the block runs, ``userstate.get_dofn_specs`` answers once per DoFn object; yields whether it
    does (False on a Beam version not in ``CHECKED_BEAM``)."""
    global _active, _original
    from apache_beam.transforms import userstate

    if not supported():
        yield False
        return
    with _lock:
        if _active == 0:
            _original = userstate.get_dofn_specs
            userstate.get_dofn_specs = _memoized
        _active += 1
    try:
        yield True
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                userstate.get_dofn_specs = _original
                _memo.clear()
