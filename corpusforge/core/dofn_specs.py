"""Beam's DoFn state and timer lookup, worked out once per DoFn object for the length of a build.

Beam asks ``userstate.get_dofn_specs(dofn)`` whether a DoFn is stateful about nine times per ParDo (building
the ParDo, validating it, the DirectRunner's graph visit, the runner API, the bundle processor), and each
call builds ``inspect.signature`` of every method the DoFn has (~30, most of them ``DoFn``'s own): ~1.1 s of
the start-up of a build of ~130 ParDos on the 2-core bench machine, whatever the corpus size. The answer
depends only on the DoFn's methods, which do not change while a build runs, so ``memoized_dofn_specs()``
keeps it per DoFn object (by identity, through a weak reference, so a new object at a reused address is
looked up afresh) while the block runs, and puts Beam's own function back on exit. A DoFn seen for the first
time (each bundle processor unpickles its own copies) is looked up by ``fast_dofn_specs``: Beam's loop, less
the methods the DoFn has unchanged from ``beam.DoFn`` itself (~25 of ~30), which declare no DoFn parameters
(checked once per process, method by method) and so add nothing; and, while the block runs, each other method's
DoFn parameters are kept by its function (the copies share their class's functions), so a copy's lookup
builds no ``inspect.signature`` (not for a method with an ``_inspect_`` hook, which may answer per object).
``tests/pipeline/test_dofn_specs.py`` holds it equal to Beam's function on every DoFn of a build.

Only Beam versions whose ``get_dofn_specs`` was checked to be a pure function of the DoFn are patched
(``CHECKED_BEAM``); on any other the block runs with Beam's function untouched. Beam's callers all reach it
as ``userstate.get_dofn_specs`` (the module attribute), which is what is replaced, except the old bundle-based
DirectRunner's evaluator, which imported the function by name and so keeps asking Beam's own (same answers).
"""
from __future__ import annotations

import contextlib
import threading
import types
import weakref
from typing import Iterator

CHECKED_BEAM = ("2.77.",)  # apache_beam.__version__ prefixes whose get_dofn_specs this was checked against

_lock = threading.Lock()
_active = 0  # open memoized_dofn_specs() blocks (builds may nest or run on threads)
_original = None
_memo: dict[int, tuple[weakref.ref, frozenset, frozenset]] = {}
# A method's DoFn parameters, by its function (a class attribute: every copy of a DoFn that a bundle processor
# unpickles has the same one), while a block runs: ``MethodWrapper`` builds an ``inspect.signature`` each time.
_params_by_function: dict[types.FunctionType, tuple] = {}
_plain_base_methods: dict[str, types.FunctionType] | None = None  # DoFn's own methods without DoFn parameters


def supported(version: str | None = None) -> bool:
    if version is None:
        import apache_beam

        version = apache_beam.__version__
    return version.startswith(CHECKED_BEAM)


def _base_methods() -> dict[str, types.FunctionType]:
    """``{name: function}`` of ``beam.DoFn``'s own methods whose defaults hold no DoFn parameter."""
    global _plain_base_methods
    if _plain_base_methods is None:
        from apache_beam.transforms.core import DoFn, _DoFnParam, get_function_args_defaults

        plain = {}
        for name in dir(DoFn):
            function = getattr(DoFn, name, None)
            if isinstance(function, types.FunctionType):
                _, defaults = get_function_args_defaults(function)
                if not any(isinstance(d, _DoFnParam) for d in defaults):
                    plain[name] = function
        _plain_base_methods = plain
    return _plain_base_methods


def fast_dofn_specs(dofn) -> tuple[set, set]:
    """``userstate.get_dofn_specs(dofn)`` (Beam 2.77's loop, the same checks and errors), skipping the methods
    that are ``beam.DoFn``'s own, unchanged, without DoFn parameters: they add no spec and no duplicate."""
    from apache_beam.runners.common import MethodWrapper
    from apache_beam.transforms.core import _DoFnParam, _StateDoFnParam, _TimerDoFnParam

    base = _base_methods()
    all_state_specs, all_timer_specs = set(), set()
    for method_name in dir(dofn):
        method = getattr(dofn, method_name, None)
        if not isinstance(method, types.MethodType):
            continue
        if (base.get(method_name) is method.__func__ and method.__self__ is dofn
                and not hasattr(dofn, "_inspect_" + method_name)):  # Beam would inspect that hook instead
            continue
        # Without an _inspect_ hook (which may answer per object), the parameters are the function's own.
        keyed = _active and not hasattr(dofn, "_inspect_" + method_name)
        params = _params_by_function.get(method.__func__) if keyed else None
        if params is None:
            wrapper = MethodWrapper(dofn, method_name)
            params = tuple(d for d in wrapper.defaults if isinstance(d, _DoFnParam))
            if keyed:
                _params_by_function[method.__func__] = params
        param_ids = [d.param_id for d in params]
        if len(param_ids) != len(set(param_ids)):
            raise ValueError("DoFn %r has duplicate %s method parameters: %s." % (dofn, method_name, param_ids))
        for d in params:
            if isinstance(d, _StateDoFnParam):
                all_state_specs.add(d.state_spec)
            elif isinstance(d, _TimerDoFnParam):
                all_timer_specs.add(d.timer_spec)
    return all_state_specs, all_timer_specs


def _memoized(dofn):
    entry = _memo.get(id(dofn))
    if entry is not None and entry[0]() is dofn:
        return set(entry[1]), set(entry[2])
    state, timers = fast_dofn_specs(dofn)
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
                _params_by_function.clear()
