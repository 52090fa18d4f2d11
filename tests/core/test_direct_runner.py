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

    from corpusforge.core.direct_runner import SAMPLING_PERIOD_MS

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
