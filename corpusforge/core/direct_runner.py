"""Beam's DirectRunner without its Prism download.

Since Beam 2.6x, ``DirectRunner`` first tries ``PrismRunner``: it downloads a Go binary from GitHub (or runs a
cached one) and falls back to the in-process runners when that fails, offline after a network timeout.
corpusforge fetches nothing at run time, so ``beam.runner: DirectRunner`` means this class: the same choice
between the FnApiRunner (batch; ``direct_num_workers`` and ``direct_running_mode`` apply) and the
BundleBasedDirectRunner, without the Prism step. ``PrismRunner`` stays available by name for whoever wants it.
"""
from __future__ import annotations

import contextlib

from apache_beam.runners.direct.direct_runner import SwitchingDirectRunner

from corpusforge.core.state_sampler import quick_sampler


class DirectRunner(SwitchingDirectRunner):
    # Beam skips Prism for interactive pipelines, and this flag is the only other thing it decides (Beam 2.6x-2.7x:
    # apache_beam/runners/direct/direct_runner.py reads it once, in the Prism check).
    _is_interactive = True

    def run_pipeline(self, pipeline, options):
        """Beam's, with the graph the in-process runner gets from ``pipeline.to_runner_api`` (which it calls once)
        free of Flattens of Flattens (``corpusforge/core/flattens.py``: a fused stage each), a Flatten that only
        feeds a GroupByKey written straight into the grouping (``flattens.into_groupings``), bundles that end
        without waiting on Beam's state sampler (``quick_sampler``), and worker processes
        (``direct_running_mode=multi_processing``) that start as ``corpusforge/core/sdk_worker.py`` says, and
        Python's garbage collector collecting less often meanwhile (``corpusforge/core/collector.py``)."""
        from corpusforge.core.collector import fewer_collections
        from corpusforge.core.flattens import into_groupings, merge_nested_flattens

        to_runner_api = pipeline.to_runner_api

        def merged_graph(*args, **kwargs):
            return merge_nested_flattens(to_runner_api(*args, **kwargs))[0]

        pipeline.to_runner_api = merged_graph  # this pipeline object only, while it runs
        try:
            # fewer_collections: the in-process runner runs the whole pipeline in this call, in this process
            with quick_sampler(), corpusforge_workers(), into_groupings(), fewer_collections():
                return super().run_pipeline(pipeline, options)
        finally:
            del pipeline.to_runner_api


@contextlib.contextmanager
def corpusforge_workers():
    """While it is open, the worker processes Beam's FnApiRunner starts in multi-processing mode run
    ``python -m corpusforge.core.sdk_worker`` (Beam's harness, lean imports, quick sampler) in place of Beam's
    ``python -m apache_beam.runners.worker.sdk_worker_main``; any other command is left as it is."""
    import sys

    from apache_beam.transforms import environments

    from corpusforge.core import lean_beam, sdk_worker

    beams = environments.SubprocessSDKEnvironment.__dict__["from_command_string"]
    beam_command = f"{sys.executable} -m apache_beam.runners.worker.sdk_worker_main"

    def from_command_string(cls, command_string, *args, **kwargs):
        if command_string == beam_command:
            command_string = sdk_worker.command(lean_beam.imported_lean)
        return beams.__func__(cls, command_string, *args, **kwargs)

    environments.SubprocessSDKEnvironment.from_command_string = classmethod(from_command_string)
    try:
        yield
    finally:
        environments.SubprocessSDKEnvironment.from_command_string = beams


@contextlib.contextmanager
def beam_pipeline(options):
    """A ``beam.Pipeline(options=options)`` built and run inside ``rundir.scoped_tempfiles``. Beam makes a
    directory in the temporary folder (``beam-pipeline-temp``, for cross-language expansion) in
    ``Pipeline.__init__`` and removes it only at the end of ``Pipeline.run()``: a build whose graph construction
    raised (a config error found while a stage is built, an interrupt) left one per failed build (1,350 on this
    project's CI machine in a day), and the PortableRunner's staging left three folders per run."""
    import apache_beam as beam

    from corpusforge.core import rundir

    with rundir.scoped_tempfiles("corpusforge-beam-"):
        yield beam.Pipeline(options=options)


def run_pipeline(pipeline):
    """``pipeline.run()``, without Beam's runner-API round trip where Beam itself skips it: on its DirectRunner in
    batch mode. Beam recognises that runner by the class name ``SwitchingDirectRunner``, which ours does not
    have, so it serialised and rebuilt every build's whole graph first (~1-2 s of a build's start-up, most of it
    inspecting each DoFn again); other runners keep Beam's choice."""
    from apache_beam.options.pipeline_options import StandardOptions

    batch_direct = isinstance(pipeline.runner, DirectRunner) and not pipeline.options.view_as(StandardOptions).streaming
    return pipeline.run(test_runner_api=False) if batch_direct else pipeline.run()
