"""The worker process of a multi-process DirectRunner build: Beam's SDK harness, started the way
``corpusforge build`` starts.

With ``--direct_running_mode=multi_processing`` Beam's FnApiRunner starts each worker as
``python -m apache_beam.runners.worker.sdk_worker_main``: a fresh interpreter that imports all of Beam (every
integration whose library is installed: ~1.5 CPU seconds) and times its bundles with Beam's default state
sampler, whose thread a bundle waits on for up to 200 ms when it ends (``state_sampler.quick_sampler``), once
per fused stage and worker: ~55 stages in a normalize + dedup build. ``direct_runner.DirectRunner`` starts
``python -m corpusforge.core.sdk_worker`` instead, which runs the same harness (``sdk_worker_main.main``) after

- importing Beam as the driver did: with ``--lean`` (the driver imported Beam without its optional cloud
  clients, ``lean_beam``) without them too, the collector paused while the imports pile up and everything
  they made frozen afterwards (``lean_beam.import_for_local_build``): ~0.65 CPU seconds, not ~1.5;
- with bundles that sample at most every ``state_sampler.SAMPLING_PERIOD_MS``, as in the driver;
- with Beam's DoFn state and timer lookup worked out once per DoFn object and once per method
  (``dofn_specs.memoized_dofn_specs``), as in the driver: a worker makes a bundle processor for every fused
  stage it runs, and each unpickles its DoFns and asks Beam twice per DoFn whether it is stateful, which built
  ``inspect.signature`` of its ~30 methods each time: making the bundle processors cost 3.6 ms a fused stage on
  the bundle thread, 2.1 ms with the lookup memoized (``bench/worker_setup.py``).

What the harness does with bundles, and so every output, is unchanged.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import os
import sys

LEAN = "--lean"
# What every worker of a build imports: the harness, and the build's modules (its DoFns unpickle into them).
WORKER_MODULES = ("apache_beam", "apache_beam.runners.worker.sdk_worker_main", "corpusforge.pipeline.build")


def command(lean: bool) -> str:
    """The shell command line that starts one worker (Beam runs it with ``shell=True``)."""
    import shlex

    return " ".join([shlex.quote(sys.executable), "-m", "corpusforge.core.sdk_worker", *([LEAN] if lean else [])])


def import_modules(lean: bool) -> None:
    """Import ``WORKER_MODULES``, with ``lean_beam.OPTIONAL_LIBRARIES`` hidden if ``lean``. Beam logs a warning
    for each of them it misses (as the driver, which quiets them in ``cli.main``): not at the worker's start."""
    from corpusforge.core import lean_beam

    loggers = [logging.getLogger(), logging.getLogger("apache_beam")]
    levels = [logger.level for logger in loggers]
    # a handler on the root logger, so that Beam's module-level ``logging.warning`` calls set up none of their own
    # (``logging.basicConfig``), which would print the harness's INFO lines later
    quiet = logging.NullHandler()
    collecting = gc.isenabled()
    gc.disable()
    try:
        loggers[0].addHandler(quiet)
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with lean_beam.hidden_while_importing() if lean else contextlib.nullcontext():
            for module in WORKER_MODULES:
                importlib.import_module(module)
    finally:
        loggers[0].removeHandler(quiet)
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
        if collecting:
            gc.freeze()
            gc.enable()


class _QuietReportedFailures:
    """The worker's standard error, less the traceback of a failed bundle that the ``corpusforge`` command reports
    in one line (Beam's harness prints every failed instruction's traceback there, then sends it to the runner): a
    broken pipe (or nothing at all when the command's own output's reader left), a full disk, a denied permission
    (``errors.said_in_one_line``, ``cli.main``)."""

    def __init__(self, stream):
        self._stream = stream
        self._dropped = False

    def write(self, text: str) -> int:
        from corpusforge.core.errors import said_in_one_line

        if text.startswith("Traceback (most recent call last):") and said_in_one_line(text):
            self._dropped = True
            return len(text)
        if self._dropped and text == "\n":  # print()'s end after the dropped traceback
            self._dropped = False
            return len(text)
        self._dropped = False
        return self._stream.write(text)

    def __getattr__(self, name):  # flush, fileno, isatty, encoding...: the stream's own
        return getattr(self._stream, name)


def main(argv: list[str]) -> None:
    if sys.stderr is not None:
        sys.stderr = _QuietReportedFailures(sys.stderr)
    import_modules(LEAN in argv)
    from apache_beam.runners.worker import sdk_worker_main

    from corpusforge.core.collector import fewer_collections
    from corpusforge.core.dofn_specs import memoized_dofn_specs
    from corpusforge.core.state_sampler import quick_sampler

    with quick_sampler(), memoized_dofn_specs(), fewer_collections():
        sdk_worker_main.main(argv)


def run(argv: list[str]) -> None:
    """``main``, ended by Ctrl-C without a traceback: the terminal sends it to every process of the build, and
    the ``corpusforge`` command reports it, once ("corpusforge: interrupted")."""
    try:
        main(argv)
    except KeyboardInterrupt:
        os._exit(130)  # the harness's threads would keep a normal exit waiting


if __name__ == "__main__":
    run(sys.argv)
