"""A Flatten of Flattens runs as one Flatten on our DirectRunner: same elements, fewer fused stages."""
from __future__ import annotations


import contextlib
import re

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import fn_runner
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.core import flattens
from corpusforge.core.direct_runner import DirectRunner, run_pipeline
from corpusforge.core.flattens import FLATTEN_URN, merge_nested_flattens
from tests.pipeline.sample_corpus import sample_corpus
from tests.core.build_outputs import build_outputs


def _graph(p: beam.Pipeline, also_read_inner: bool = False, side_input: bool = False):
    src = p | "Src" >> beam.Create([1, 2, 3]) | "Spread" >> beam.Reshuffle()
    parts = src | "Split" >> beam.FlatMap(
        lambda x: [x, beam.pvalue.TaggedOutput("a", x), beam.pvalue.TaggedOutput("b", 100 * x)]).with_outputs(
        "a", "b", main="m")
    inner = (parts.a, parts.b, parts.a) | "Inner" >> beam.Flatten()  # a twice: its elements twice
    deeper = (inner, src | "Tens" >> beam.Map(lambda x: x * 10)) | "Middle" >> beam.Flatten()
    outer = (deeper, parts.m) | "Outer" >> beam.Flatten()
    if also_read_inner:
        assert_that(inner | "Neg" >> beam.Map(lambda x: -x), equal_to([-1, -2, -3] * 2 + [-100, -200, -300]),
                    label="CheckInner")
    if side_input:
        assert_that(src | "WithSide" >> beam.Map(lambda x, s: x + len(s), beam.pvalue.AsList(inner)),
                    equal_to([10, 11, 12]), label="CheckSide")  # 9 elements in inner
    return outer


def _expected():
    return [1, 2, 3] * 2 + [100, 200, 300] + [10, 20, 30] + [1, 2, 3]  # a twice, b, tens, main


def _flattens(proto) -> list[str]:
    return sorted(t.unique_name for t in proto.components.transforms.values()
                  if t.spec.urn == FLATTEN_URN and t.unique_name in ("Inner", "Middle", "Outer"))


@pytest.mark.parametrize("also_read_inner, side_input, left", [
    (False, False, ["Outer"]),
    (True, False, ["Inner", "Outer"]),  # Inner's output is read elsewhere too: kept
    (False, True, ["Inner", "Outer"]),  # ... or as a side input
])
def test_the_graph(also_read_inner, side_input, left):
    p = beam.Pipeline(runner=DirectRunner(), options=PipelineOptions([]))
    _graph(p, also_read_inner, side_input)
    proto = p.to_runner_api()
    before = len(proto.components.transforms)
    proto, merged = merge_nested_flattens(proto)
    assert _flattens(proto) == left
    assert merged == 3 - len(left) and len(proto.components.transforms) == before - merged
    subtransforms = {s for t in proto.components.transforms.values() for s in t.subtransforms}
    assert subtransforms | set(proto.root_transform_ids) <= set(proto.components.transforms)


@pytest.mark.parametrize("also_read_inner, side_input", [(False, False), (True, False), (False, True)])
def test_same_elements_fewer_stages(monkeypatch, also_read_inner, side_input):
    stages = []
    run_stages = fn_runner.FnApiRunner.run_stages
    monkeypatch.setattr(fn_runner.FnApiRunner, "run_stages",
                        lambda self, context, s: stages.append(len(s)) or run_stages(self, context, s))
    for merge in (True, False):
        if not merge:
            monkeypatch.setattr(flattens, "merge_nested_flattens", lambda proto: (proto, 0))
        p = beam.Pipeline(runner=DirectRunner(), options=PipelineOptions([]))
        assert_that(_graph(p, also_read_inner, side_input), equal_to(_expected()))
        run_pipeline(p).wait_until_finish()
        assert "to_runner_api" not in vars(p)  # the pipeline's own method is back
    merged, plain = stages
    assert merged == plain - (2 if not (also_read_inner or side_input) else 1)


def test_a_build_is_the_same(tmp_path, monkeypatch):
    from corpusforge.cli.main import main

    root, config = sample_corpus(tmp_path, documents=40)
    counts = []
    original = flattens.merge_nested_flattens

    def counted(proto):
        proto, merged = original(proto)
        counts.append(merged)
        return proto, merged

    monkeypatch.setattr(flattens, "merge_nested_flattens", counted)
    args = ["build", "-c", str(config), "--no-progress", "--set", "pii.hash_salt=a-fixed-test-salt-0123"]
    assert main([*args, "--run-dir", str(tmp_path / "merged")]) == 0
    monkeypatch.setattr(flattens, "merge_nested_flattens", lambda proto: (proto, 0))
    assert main([*args, "--run-dir", str(tmp_path / "plain")]) == 0
    # removals and errors gathered by steps, stages and the build (4 since dedup's steps join a build's unique ids
    # alone: no Flatten with a shared-id branch per step)
    assert counts and counts[0] >= 4
    assert build_outputs(tmp_path / "merged") == build_outputs(tmp_path / "plain")


class _OnlyAFlatten(beam.PTransform):
    """A composite whose one step is a Flatten (as disk_grouping's Flatten of one input)."""

    def expand(self, inputs):
        return inputs | "Flatten" >> beam.Flatten()


def test_a_composite_emptied_by_the_merge_goes_too():
    """The class: a composite whose only leaf is merged away was left empty, which the runner reads as a leaf it
    cannot run (KeyError 'beam:transform:generic_composite:v1': a build with every stage off, shuffles on
    disk). Nested twice here, so the rewrite walks up."""
    class _Twice(beam.PTransform):
        def expand(self, inputs):
            return inputs | "Once" >> _OnlyAFlatten()

    p = beam.Pipeline(runner=DirectRunner(), options=PipelineOptions([]))
    src = p | "Src" >> beam.Create([1, 2])
    inner = (src,) | "Wrapped" >> _Twice()
    outer = (inner, src | "Tens" >> beam.Map(lambda x: 10 * x)) | "Outer" >> beam.Flatten()
    assert_that(outer, equal_to([1, 2, 10, 20]))
    proto, merged = merge_nested_flattens(p.to_runner_api())
    assert merged == 1
    names = {t.unique_name for t in proto.components.transforms.values()}
    assert "Wrapped" not in names and "Wrapped/Once" not in names
    assert all(t.subtransforms or t.spec.urn != "beam:transform:generic_composite:v1"
               for t in proto.components.transforms.values())
    run_pipeline(p).wait_until_finish()


def test_a_build_with_every_stage_off_and_shuffles_on_disk(tmp_path):
    from corpusforge.cli.main import main

    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "text": "hello world, a short text."}\n')
    off = [f"--set={stage}.enabled=false" for stage in ("normalize", "quality", "dedup", "pii")]
    assert main(["build", "--input", str(source), "--run-dir", str(tmp_path / "run"), "--no-progress", *off,
                 "--set", "output.disk_shuffle_mb=0"]) == 0
    assert (tmp_path / "run" / "manifest.json").exists()


def _grouped_graph(p: beam.Pipeline, also_read_flattened: bool):
    """A Flatten feeding a GroupByKey, and a CoGroupByKey (Beam's: a Flatten of tagged inputs, then a GroupByKey)."""
    a = p | "A" >> beam.Create([(i % 3, i) for i in range(10)])
    b = p | "B" >> beam.Create([(i % 4, -i) for i in range(8)]) | "Same" >> beam.Map(lambda kv: kv)
    flat = (a, b) | "Both" >> beam.Flatten()
    grouped = flat | "Group" >> beam.GroupByKey() | "Sorted" >> beam.MapTuple(lambda k, vs: (k, sorted(vs)))
    assert_that(grouped, equal_to([(0, [-4, 0, 0, 3, 6, 9]), (1, [-5, -1, 1, 4, 7]), (2, [-6, -2, 2, 5, 8]), (3, [-7, -3])]))
    joined = {"x": a, "y": b} | "Join" >> beam.CoGroupByKey() | "Lists" >> beam.MapTuple(
        lambda k, d: (k, sorted(d["x"]), sorted(d["y"])))
    assert_that(joined, equal_to([(0, [0, 3, 6, 9], [-4, 0]), (1, [1, 4, 7], [-5, -1]), (2, [2, 5, 8], [-6, -2]),
                                  (3, [], [-7, -3])]), label="CheckJoin")
    if also_read_flattened:  # the Flatten's output read by a ParDo too: its stage stays
        assert_that(flat | "Keys" >> beam.Keys() | beam.combiners.Count.Globally(), equal_to([18]), label="CheckCount")


@pytest.mark.parametrize("also_read_flattened", [False, True])
def test_a_flatten_that_only_feeds_a_grouping_writes_into_it(monkeypatch, also_read_flattened):
    """Each input of a Flatten whose only consumer is a GroupByKey writes straight into the grouping: the same
    groups, and the fused stage that read the Flatten's buffer to write the grouping's is gone (every
    CoGroupByKey's too, assert_that's among them); a Flatten whose output is read elsewhere too keeps it."""
    stages = []
    run_stages = fn_runner.FnApiRunner.run_stages
    monkeypatch.setattr(fn_runner.FnApiRunner, "run_stages",
                        lambda self, context, s: stages.append([t.name for t in s]) or run_stages(self, context, s))
    for into in (True, False):
        if not into:
            monkeypatch.setattr(flattens, "into_groupings", contextlib.nullcontext)
        p = beam.Pipeline(runner=DirectRunner(), options=PipelineOptions([]))
        _grouped_graph(p, also_read_flattened)
        run_pipeline(p).wait_until_finish()
    into, plain = stages
    def flatten_reads(names):  # the stages that read a Flatten's buffer, by the Flatten's outer label
        return sorted(m.group(1) or m.group(2) for name in names
                      for m in re.finditer(r"\((\w+)/[\w/]*Flatten/Read\)|\((Both)/Read\)", name))

    # the Flatten, the Join's, and each assert_that's (CheckCount's too when it is there)
    assert flatten_reads(plain) == sorted(["Both", "Join", "assert_that", "CheckJoin"]
                                          + (["CheckCount"] if also_read_flattened else []))
    assert flatten_reads(into) == (["Both"] if also_read_flattened else [])  # read elsewhere too: kept
    assert len(into) == len(plain) - len(flatten_reads(plain)) + len(flatten_reads(into))


@pytest.mark.timeout(300)
def test_a_flatten_into_a_grouping_on_two_worker_processes():
    options = PipelineOptions(["--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    p = beam.Pipeline(runner=DirectRunner(), options=options)
    _grouped_graph(p, also_read_flattened=False)
    run_pipeline(p).wait_until_finish()
