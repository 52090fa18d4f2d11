"""``memoized_dofn_specs``: Beam's state/timer lookup answered once per DoFn object, the same answer, only in scope."""
from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.coders import VarIntCoder
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import userstate
from apache_beam.transforms.timeutil import TimeDomain

from corpusforge.core import dofn_specs
from corpusforge.core.dofn_specs import fast_dofn_specs, memoized_dofn_specs
from corpusforge.core.faults import Isolated

BEAMS_OWN = userstate.get_dofn_specs


class _Stateful(beam.DoFn):
    COUNT = userstate.ReadModifyWriteStateSpec("count", VarIntCoder())
    TIMER = userstate.TimerSpec("flush", TimeDomain.WATERMARK)

    def process(self, element, count=beam.DoFn.StateParam(COUNT), timer=beam.DoFn.TimerParam(TIMER)):
        seen = (count.read() or 0) + 1
        count.write(seen)
        yield element[0], seen

    @userstate.on_timer(TIMER)
    def flush(self):
        return []


class _Plain(beam.DoFn):
    def process(self, element):
        yield element


def _dofns():
    return [_Stateful(), _Plain(), beam.Map(lambda x: x).fn, beam.Map(str.upper).fn,
            Isolated(_Plain(), "s", lambda record, detail: detail)]


def test_same_answer_as_beams_own_and_computed_once_per_object(monkeypatch):
    dofns = _dofns()
    expected = [BEAMS_OWN(d) for d in dofns]
    assert [fast_dofn_specs(d) for d in dofns] == expected
    calls = []
    monkeypatch.setattr(dofn_specs, "fast_dofn_specs", lambda dofn: calls.append(dofn) or BEAMS_OWN(dofn))
    with memoized_dofn_specs() as on:
        assert on
        for _ in range(3):
            assert [userstate.get_dofn_specs(d) for d in dofns] == expected
            assert [userstate.is_stateful_dofn(d) for d in dofns] == [True, False, False, False, False]
    assert len(calls) == len(dofns)
    assert expected[0] == ({_Stateful.COUNT}, {_Stateful.TIMER})


class _Hooked(beam.DoFn):
    """A DoFn whose ``_inspect_process`` hook answers per object (as Beam's CallableWrapperDoFn does)."""

    def __init__(self, stateful: bool):
        self.stateful = stateful

    def process(self, element):
        yield element

    def _inspect_process(self):
        return (["element", "count"], [beam.DoFn.StateParam(_Stateful.COUNT)]) if self.stateful else (["element"], [])


def test_copies_share_their_methods_parameters_but_not_a_hooks(monkeypatch):
    from apache_beam.runners import common

    wrapped = []
    original = common.MethodWrapper

    def counted(dofn, name):
        wrapped.append((type(dofn).__name__, name))
        return original(dofn, name)

    monkeypatch.setattr(common, "MethodWrapper", counted)
    hooked = [_Hooked(True), _Hooked(False), _Hooked(True)]
    with memoized_dofn_specs():
        assert [userstate.get_dofn_specs(d) for d in hooked] == [BEAMS_OWN(d) for d in hooked] == [
            ({_Stateful.COUNT}, set()), (set(), set()), ({_Stateful.COUNT}, set())]
        first = len(wrapped)
        assert userstate.get_dofn_specs(_Stateful()) == ({_Stateful.COUNT}, {_Stateful.TIMER})
        once = len(wrapped) - first
        assert userstate.get_dofn_specs(_Stateful()) == ({_Stateful.COUNT}, {_Stateful.TIMER})  # another copy
        assert once and len(wrapped) - first == once
    assert [n for t, n in wrapped if t == "_Hooked"].count("process") == 3 + 3  # ours, then Beam's own, each
    assert not dofn_specs._params_by_function


def test_the_answer_is_a_copy():
    dofn = _Stateful()
    with memoized_dofn_specs():
        userstate.get_dofn_specs(dofn)[0].clear()
        assert userstate.get_dofn_specs(dofn) == ({_Stateful.COUNT}, {_Stateful.TIMER})


def test_beams_function_is_back_after_the_block_even_nested_and_on_error():
    assert userstate.get_dofn_specs is BEAMS_OWN
    try:
        with memoized_dofn_specs():
            with memoized_dofn_specs():
                assert userstate.get_dofn_specs is not BEAMS_OWN
            assert userstate.get_dofn_specs is not BEAMS_OWN
            raise KeyError("boom")
    except KeyError:
        pass
    assert userstate.get_dofn_specs is BEAMS_OWN and not dofn_specs._memo


def test_a_new_object_at_a_reused_address_is_looked_up_afresh():
    with memoized_dofn_specs():
        stateful = _Stateful()
        userstate.get_dofn_specs(stateful)
        key = id(stateful)
        del stateful  # its entry stays, with a dead weak reference
        plain = _Plain()
        dofn_specs._memo[id(plain)] = dofn_specs._memo.pop(key)  # as if plain took the freed address
        assert userstate.get_dofn_specs(plain) == (set(), set())


def test_an_unchecked_beam_version_is_left_alone(monkeypatch):
    monkeypatch.setattr(dofn_specs, "CHECKED_BEAM", ("0.0.",))
    with memoized_dofn_specs() as on:
        assert not on and userstate.get_dofn_specs is BEAMS_OWN
    assert dofn_specs.supported("2.77.0") is False
    monkeypatch.undo()
    assert dofn_specs.supported("2.77.0") and not dofn_specs.supported("2.78.0")


def test_a_stateful_pipeline_runs_alike_in_the_block():
    with memoized_dofn_specs():
        with TestPipeline() as p:
            out = p | beam.Create([("a", 1), ("a", 2), ("b", 3)]) | beam.ParDo(_Stateful())
            assert_that(out, equal_to([("a", 1), ("a", 2), ("b", 1)]))


def test_the_fast_lookup_equals_beams_on_every_dofn_of_a_build(tmp_path, monkeypatch):
    """An all-stage build of a few documents: each DoFn Beam asks about (built, visited, unpickled by a bundle
    processor) gets from ``fast_dofn_specs`` what Beam's own function says."""
    import json

    from corpusforge.cli.main import main

    checked = []

    def checking(dofn):
        fast = fast_dofn_specs(dofn)
        assert fast == BEAMS_OWN(dofn), dofn
        checked.append(type(dofn).__name__)
        return fast

    monkeypatch.setattr(dofn_specs, "fast_dofn_specs", checking)
    rows = [{"id": f"d{i:08d}", "text": f"Document {i} is about the river and the bridge. Mail jane{i}@example.org. "
             f"It has a second sentence, and a third one that is long enough to keep."} for i in range(6)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["build", "--input", str(tmp_path / "in.jsonl"), "--run-dir", str(tmp_path / "run"),
                 "--no-progress"]) == 0
    assert len(checked) > 100 and {"CallableWrapperDoFn", "Isolated"} <= set(checked)
    assert userstate.get_dofn_specs is BEAMS_OWN


def test_the_fast_lookup_raises_as_beam_does_on_duplicate_parameters():
    class Twice(beam.DoFn):
        def process(self, element, a=beam.DoFn.TimestampParam, b=beam.DoFn.TimestampParam):
            yield element

    for lookup in (BEAMS_OWN, fast_dofn_specs):
        with pytest.raises(ValueError, match="duplicate process method parameters"):
            lookup(Twice())
