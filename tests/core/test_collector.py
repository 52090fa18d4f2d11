"""A pipeline on our DirectRunner runs with Python's youngest generation collected every YOUNG_THRESHOLD allocations
(corpusforge/core/collector.py), and the process's own thresholds come back after."""
from __future__ import annotations

import gc

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from corpusforge.core.collector import YOUNG_THRESHOLD, fewer_collections
from corpusforge.core.direct_runner import DirectRunner, run_pipeline

SEEN: list = []  # the thresholds a DoFn saw (the in-process runner runs it in this process)


def _threshold_seen(x):
    SEEN.append(gc.get_threshold())
    return x


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def test_a_pipeline_runs_with_fewer_young_collections_and_the_thresholds_come_back(thresholds):
    gc.set_threshold(700, 10, 10)
    SEEN.clear()
    pipeline = beam.Pipeline(runner=DirectRunner(), options=PipelineOptions([]))
    _ = pipeline | beam.Create([1, 2, 3]) | beam.Map(_threshold_seen)
    run_pipeline(pipeline).wait_until_finish()
    assert SEEN and all(seen == (YOUNG_THRESHOLD, 10, 10) for seen in SEEN)
    assert gc.get_threshold() == (700, 10, 10)


def test_fewer_collections_never_collects_more_often_nor_turns_collection_on(thresholds):
    for before, during in [((700, 10, 10), (YOUNG_THRESHOLD, 10, 10)), ((50_000, 5, 7), (50_000, 5, 7)),
                           ((0, 10, 10), (0, 10, 10))]:
        gc.set_threshold(*before)
        with fewer_collections():
            assert gc.get_threshold() == during
        assert gc.get_threshold() == before
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("a pipeline that fails")
    assert gc.get_threshold() == (700, 10, 10)
