"""Our DirectRunner runs a batch pipeline without Beam's runner-API round trip (as Beam's own does)."""
from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.core.direct_runner import DirectRunner, run_pipeline


def _pipeline() -> beam.Pipeline:
    pipeline = beam.Pipeline(runner=DirectRunner(), options=PipelineOptions([]))
    assert_that(pipeline | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * 2), equal_to([2, 4, 6]))
    return pipeline


def test_batch_pipeline_runs_without_rebuilding_the_graph(monkeypatch):
    def rebuilt(*args, **kwargs):
        raise AssertionError("the pipeline went through a runner-API round trip")

    monkeypatch.setattr(beam.Pipeline, "from_runner_api", staticmethod(rebuilt))
    run_pipeline(_pipeline()).wait_until_finish()


def test_plain_run_would_round_trip(monkeypatch):
    # The reason run_pipeline exists: Beam recognises its DirectRunner by class name, which ours does not have.
    calls = []
    original = beam.Pipeline.from_runner_api

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(beam.Pipeline, "from_runner_api", staticmethod(counted))
    _pipeline().run().wait_until_finish()
    assert calls


def test_bundles_sample_at_most_every_10_ms_and_counters_still_count(monkeypatch):
    from apache_beam.metrics import Metrics
    from apache_beam.metrics.metric import MetricsFilter
    from apache_beam.runners.worker import statesampler

    from corpusforge.core.state_sampler import SAMPLING_PERIOD_MS

    beams = statesampler.StateSampler
    periods = []
    original_init = beams.__init__

    def recorded(self, prefix, counter_factory, sampling_period_ms=statesampler.DEFAULT_SAMPLING_PERIOD_MS):
        periods.append(sampling_period_ms)
        original_init(self, prefix, counter_factory, sampling_period_ms)

    monkeypatch.setattr(beams, "__init__", recorded)
    counter = Metrics.counter("test", "seen")

    def count(x):
        counter.inc()
        return x

    pipeline = beam.Pipeline(runner=DirectRunner(), options=PipelineOptions([]))
    _ = pipeline | beam.Create(range(5)) | beam.Map(count)
    result = run_pipeline(pipeline)
    result.wait_until_finish()
    assert periods and max(periods) <= SAMPLING_PERIOD_MS < statesampler.DEFAULT_SAMPLING_PERIOD_MS
    assert statesampler.StateSampler is beams  # Beam's class is back once the run ends
    seen = result.metrics().query(MetricsFilter().with_name("seen"))["counters"]
    assert sum(c.committed for c in seen) == 5


def _worker_facts(_):
    import sys

    from apache_beam.runners.worker import statesampler
    from apache_beam.transforms import userstate

    from corpusforge.core import dofn_specs

    return (sys.modules["__main__"].__spec__.name, statesampler.StateSampler.__name__, "--lean" in sys.argv,
            userstate.get_dofn_specs is dofn_specs._memoized)


def test_worker_processes_run_corpusforge_harness():
    # Beam's own worker command imports Beam whole (~1.5 CPU s a worker), ends long bundles waiting up to
    # 200 ms on its state sampler and inspects every method of every DoFn twice per fused stage (making each
    # stage's bundle processor): ours runs the same harness from corpusforge.core.sdk_worker, with the DoFn
    # lookup memoized while it runs.
    options = PipelineOptions(["--direct_running_mode=multi_processing", "--direct_num_workers=1"])
    pipeline = beam.Pipeline(runner=DirectRunner(), options=options)
    # this process imported Beam whole (lean_beam.imported_lean is False): so does the worker
    assert_that(pipeline | beam.Create([0]) | beam.Map(_worker_facts),
                equal_to([("corpusforge.core.sdk_worker", "QuickStateSampler", False, True)]))
    run_pipeline(pipeline).wait_until_finish()


def test_worker_command_names_the_interpreter_and_the_lean_import():
    import shlex
    import sys

    from corpusforge.core import sdk_worker

    assert shlex.split(sdk_worker.command(True)) == [sys.executable, "-m", "corpusforge.core.sdk_worker", "--lean"]
    assert shlex.split(sdk_worker.command(False)) == [sys.executable, "-m", "corpusforge.core.sdk_worker"]


def test_a_lean_worker_imports_no_optional_library_and_says_nothing():
    import subprocess
    import sys

    from tests.core.test_lean_beam import CLIENTS  # the clients (google.cloud itself may be set up at start-up)

    probe = ("import json, logging, sys; from corpusforge.core import sdk_worker; sdk_worker.import_modules(True); "
             "import apache_beam.runners.worker.sdk_worker_main; "
             f"print(json.dumps([[n for n in {list(CLIENTS)!r} if sys.modules.get(n) is not None], "
             "len(logging.getLogger().handlers), logging.getLogger('apache_beam').level]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    # nothing optional imported; Beam's warnings about it not printed, and no logging handler left behind for
    # the harness's INFO lines (Beam's logging.warning calls would have set one up)
    assert done.stdout.strip() == "[[], 0, 0]" and done.stderr == ""


def test_a_worker_ended_by_ctrl_c_prints_no_traceback():
    # The terminal sends Ctrl-C to every process of a multi-process build; each worker printed its traceback
    # (~40 lines) beside the command's one line "corpusforge: interrupted".
    import subprocess
    import sys

    probe = ("import os, signal, time; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "from corpusforge.core import sdk_worker; "
             "sdk_worker.import_modules = lambda lean: (os.kill(os.getpid(), signal.SIGINT), time.sleep(5)); "
             "sdk_worker.run(['sdk_worker'])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (130, "")
