"""Beam imported without the optional libraries that a local build cannot use.

``import apache_beam`` imports every integration Beam ships whose library happens to be installed, among them
the Google Cloud clients of its ``gcp`` extra (GCS, BigQuery, Pub/Sub; with google-auth, apitools,
oauth2client) and pymongo (MongoDB IO). Beam imports each of them under ``try: ... except ImportError`` and
works without it as if it were not installed (Beam without its ``gcp`` extra is a supported install, and
corpusforge's own ``gcp`` extra is optional too).

A build on the local DirectRunner whose configuration and Beam flags name no URL (no ``://`` anywhere: no
gs:// input, run directory, model or temp location) uses none of them. For such a build ``corpusforge build``
imports Beam inside ``hidden_while_importing(OPTIONAL_LIBRARIES)``: those names are ``None`` in
``sys.modules`` (so importing them raises ImportError) only while Beam's modules are first imported, and
are put back afterwards, so they import normally later in the process. What Beam set up meanwhile
stays as without those extras for the rest of the process: no gs:// filesystem, no BigQuery, Pub/Sub or
MongoDB transforms. Nothing else changes: the build reads and writes local files through
Beam's LocalFileSystem either way (tests/core/test_lean_beam.py checks the outputs are identical).

Only the ``corpusforge build`` command does this, run as a command (``corpusforge.cli.main.run``: one
build, then the process exits; its config is known before Beam is imported). ``main()`` called in a process
that goes on (tests, notebooks), ``run_build`` called as a library, and every other command import Beam whole.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import json
import sys
from typing import Any, Iterator, Mapping

from corpusforge.core.beam_options import BeamConfig

# Top-level names whose import Beam guards with ``except ImportError``: the ``gcp`` extra (the google.cloud
# namespace holds every google-cloud-* client) and MongoDB IO (pymongo and its bson). Not pandas (Beam's
# DataFrame batch converters, ~0.45 s): pyarrow imports it anyway at its first conversion of a Python list
# (pa.array's array-like check), when the first shard is written.
OPTIONAL_LIBRARIES = ("google.cloud", "google.auth", "google.api_core", "apitools", "oauth2client",
                      "pymongo", "bson")
# What a local build imports of Beam (the build module's imports, then what the DirectRunner and the in-process
# FnApiRunner import when the pipeline runs), so that it is all imported while the libraries are hidden.
BUILD_MODULES = ("apache_beam", "corpusforge.pipeline.build", "apache_beam.runners.direct.direct_runner",
                 "apache_beam.runners.portability.fn_api_runner.fn_runner", "apache_beam.io.gcp.pubsub",
                 "apache_beam.testing.test_stream")
LOCAL_RUNNERS = ("DirectRunner", "SwitchingDirectRunner", "corpusforge.core.direct_runner.DirectRunner")

_ABSENT = object()
_enabled = False  # set by enable(): this process runs one corpusforge command and exits
imported_lean = False  # set by import_for_local_build: Beam was imported here without OPTIONAL_LIBRARIES


def enable() -> None:
    """This process runs one ``corpusforge`` command and exits: a local build may import Beam lean."""
    global _enabled
    _enabled = True


def local_build(beam: BeamConfig, settings: Mapping[str, Any], beam_args: list[str] | None = None) -> bool:
    """Whether a build with the ``beam`` section, the whole config ``settings`` (as ``to_dict`` gives it) and Beam
    flags ``beam_args`` runs on the local DirectRunner and names no URL: then it needs none of
    ``OPTIONAL_LIBRARIES``."""
    args = list(beam_args or [])
    runner = beam.runner
    for i, arg in enumerate(args):  # the last --runner flag wins, as in Beam's parser
        if arg.startswith("--runner="):
            runner = arg.split("=", 1)[1]
        elif arg == "--runner" and i + 1 < len(args):
            runner = args[i + 1]
    if runner not in LOCAL_RUNNERS:
        return False
    return "://" not in json.dumps(settings, default=str) and not any("://" in a for a in args)


@contextlib.contextmanager
def hidden_while_importing(names: tuple[str, ...] = OPTIONAL_LIBRARIES) -> Iterator[None]:
    """While the block runs, ``import NAME`` (and of its submodules) raises ImportError for each of ``names``
    that is not imported yet; afterwards every name is as it was."""
    saved = {name: sys.modules.get(name, _ABSENT) for name in names}
    for name, module in saved.items():
        # A namespace package that a .pth file set up at start-up (google.cloud) hides its clients all the same.
        if module is _ABSENT or getattr(module, "__file__", None) is None:
            sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name, module in saved.items():
            if sys.modules.get(name, _ABSENT) is None:
                if module is _ABSENT:
                    del sys.modules[name]
                else:
                    sys.modules[name] = module


def import_for_local_build() -> bool:
    """Import Beam and the build's modules with ``OPTIONAL_LIBRARIES`` hidden; False (and nothing done) when
    Beam is already imported (it set itself up then) or ``enable()`` was not called.

    The garbage collector is paused meanwhile: these imports make ~200k objects that live as long as the
    process, and collecting while they pile up (~450 passes, three of them full) cost ~0.3 s of start-up to
    find ~1,800 unreachable objects. Afterwards everything alive is frozen (``gc.freeze``), so the build's own
    collections do not walk the modules again; those few cyclic leftovers (well under 1 MB) stay."""
    global imported_lean
    if not _enabled or "apache_beam" in sys.modules:
        return False
    imported_lean = True
    collecting = gc.isenabled()
    gc.disable()
    try:
        with hidden_while_importing():
            for module in BUILD_MODULES:
                importlib.import_module(module)
    finally:
        if collecting:
            gc.freeze()
            gc.enable()
    return True
