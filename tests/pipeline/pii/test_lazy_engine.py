"""Presidio loads on the first text that needs it, once, and a load that fails fails the run.

A ``Scrubber`` screens texts without Presidio (``corpusforge.pipeline.pii.screen``, and ``phone_spans`` on the
windows of phone candidates) and builds the analyzer on the first text with a candidate. These tests hold the
lazy scrubber's results equal to a scrubber that asks the analyzer about every candidate, and check that a
Presidio that cannot load is never turned into per-record rejections.
"""
from __future__ import annotations

import random
import subprocess
import sys
import threading

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from hypothesis import given, settings
from hypothesis import strategies as st

from corpusforge.core.errors import WorkerError
from corpusforge.pipeline.document import Document, Rejected, Removed
from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.entities import PATTERN_ENTITIES
from tests.pipeline.pii.cases import NEAR_MISSES, TRUE_POSITIVES

pytest.importorskip("presidio_analyzer")

from corpusforge.pipeline.pii import engine as engine_module  # noqa: E402
from corpusforge.pipeline.pii.fields import FieldScrubber  # noqa: E402
from corpusforge.pipeline.pii.scrubber import Scrubber, _digest, _digest_reference  # noqa: E402

SALT = "a-salt-of-sixteen-chars"
CASES = [t for cs in TRUE_POSITIVES.values() for t, _ in cs] + [t for ts in NEAR_MISSES.values() for t in ts]
NUMERIC = ["d00000000", "web/0638967464", "20231002", "build 20231002 of 3.11.7", "call 202 555 0173",
           "ids 1234567 7654321 and 00000001", "Tel. 030 901820", "+44 20 7946 0958", "ISBN 978-3-16-148410-0",
           "order 12345678901234 shipped", "(0161) 4960066", "10 20 30 40 50 60 70"]


def _mixed(n: int = 80) -> list[str]:
    rng = random.Random(1)
    filler = ["The quick brown fox.", "Version 3.11 on 2024-01-02.", "Totals: 12 34 56 78 90 12 34.", "x" * 40, "\n"]
    parts = CASES + NUMERIC
    return [rng.choice([" ", "", "\n", ", "]).join(rng.sample(parts, 4) + rng.sample(filler, 2)) for _ in range(n)]


def _eager(config: PIIConfig) -> Scrubber:
    """The reference: the analyzer loaded up front and asked about every candidate (no phone pre-check, no
    recognizer asked before it)."""
    scrubber = Scrubber(config, salt=SALT)
    scrubber._phone_at = None
    scrubber._ask_first = False
    scrubber._load()
    return scrubber


@pytest.fixture(scope="module")
def pair():
    config = PIIConfig(entities=list(PATTERN_ENTITIES), max_density=1.0)
    return Scrubber(config, salt=SALT), _eager(config)


def test_each_entity_screen_is_its_recognizers():
    from corpusforge.pipeline.pii.recognizers import build_recognizers
    from corpusforge.pipeline.pii.screen import ENTITY_SCREENS

    recognizers = build_recognizers(PIIConfig(entities=list(PATTERN_ENTITIES)))
    assert {r.supported_entities[0]: r.SCREEN for r in recognizers} == ENTITY_SCREENS


def test_lazy_scrubber_equals_the_eager_one_on_cases_ids_and_mixed_texts(pair):
    lazy, eager = pair
    for text in CASES + NUMERIC + _mixed():
        assert lazy.scrub(text) == eager.scrub(text), text
        assert FieldScrubber(lazy).id(text) == FieldScrubber(eager).id(text), text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789 -+().x/,#@:abcdeflTtoO\n", max_size=60))
def test_lazy_scrubber_equals_the_eager_one_on_digit_soup(pair, text):
    lazy, eager = pair
    assert lazy.scrub(text) == eager.scrub(text)
    assert FieldScrubber(lazy).id(text) == FieldScrubber(eager).id(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_digest_is_presidios_hash(text):
    for chars in (8, 32, 64):
        assert _digest(SALT, chars, text) == _digest_reference(SALT, chars, text)


def test_digest_refuses_a_short_salt_as_presidio_does():
    with pytest.raises(Exception):
        _digest_reference("short", 8, "x")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        _digest("short", 8, "x")


_PROBE = """
import sys
from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.fields import FieldScrubber
from corpusforge.pipeline.pii.scrubber import Scrubber
fields = FieldScrubber(Scrubber(PIIConfig(metadata_action="hash"), salt="a-salt-of-sixteen-chars"))
print(fields.text("Plain prose: 12 apples, 2024-01-02."), fields.id("d00000000"), len(fields.metadata({"u": "x"})["u"]))
print("presidio_analyzer" in sys.modules, "spacy" in sys.modules)
print(fields.text("mail jane@example.org"))
print("presidio_analyzer" in sys.modules)
"""


def test_texts_without_candidates_never_import_presidio():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["Plain prose: 12 apples, 2024-01-02. d00000000 32", "False False", "mail <EMAIL>", "True"]


def test_the_engine_is_built_once_across_threads(monkeypatch):
    built = []
    real = engine_module.build_engine
    gate = threading.Event()

    def slow_build(config):
        gate.wait(5)
        built.append(config)
        return real(config)

    monkeypatch.setattr(engine_module, "build_engine", slow_build)
    monkeypatch.setattr(engine_module, "_ENGINES", {})  # none built yet in this process
    scrubber = Scrubber(PIIConfig(), salt=SALT)
    results = []
    threads = [threading.Thread(target=lambda: results.append(scrubber.scrub("mail jane@example.org").text))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and results == ["mail <EMAIL>"] * 4


def _broken_presidio(monkeypatch):
    def fail(config):
        raise ImportError("presidio is broken here")

    monkeypatch.setattr(engine_module, "build_engine", fail)
    monkeypatch.setattr(engine_module, "_ENGINES", {})  # none built yet in this process


def test_a_presidio_that_cannot_load_raises_worker_error(monkeypatch):
    _broken_presidio(monkeypatch)
    scrubber = Scrubber(PIIConfig(), salt=SALT)
    assert scrubber.scrub("no candidate here").text == "no candidate here"
    with pytest.raises(WorkerError, match="could not load Presidio's analyzer: ImportError: presidio is broken here"):
        scrubber.scrub("mail jane@example.org")


def test_an_engine_that_loads_but_cannot_scrub_its_warm_up_raises_worker_error_every_time(monkeypatch):
    # The analyzer built, then its operators or warm-up failed: the worker's failure too, and the half-built
    # engine is not kept for the next text to use.
    def broken_operator(self, entity):
        raise RuntimeError("no operator")

    monkeypatch.setattr(Scrubber, "_operator", broken_operator)
    scrubber = Scrubber(PIIConfig(), salt=SALT)
    for _ in range(2):
        with pytest.raises(WorkerError, match="could not load Presidio's analyzer: RuntimeError: no operator"):
            scrubber.scrub("mail jane@example.org")
    assert scrubber._engine is None


def test_run_isolated_never_turns_a_worker_error_into_dead_letters():
    from corpusforge.core.faults import run_isolated

    def process(batch):
        raise WorkerError("model did not load")

    with pytest.raises(WorkerError):
        run_isolated(process, [1, 2], "pii", lambda record, detail: detail, records=list,
                     split=lambda batch: [[x] for x in batch])
    # any other exception is still the record's
    out = run_isolated(lambda batch: 1 / 0, [1], "pii", lambda record, detail: detail, records=list)
    assert [o.value for o in out] == ["pii: ZeroDivisionError: division by zero"]


@pytest.mark.parametrize("stage", ["pii", "removed", "rejected"])
def test_a_presidio_that_cannot_load_fails_the_pipeline_not_the_records(monkeypatch, stage):
    from corpusforge.pipeline.pii import PII
    from corpusforge.pipeline.pii.removed import ScrubRejected, ScrubRemoved

    _broken_presidio(monkeypatch)
    doc = Document("web/1", "Mail jane.doe@example.org", "web")
    transforms = {
        "pii": ([doc], lambda: PII(PIIConfig(hash_salt=SALT))),
        "removed": ([Removed(doc, "quality", "gopher_short_doc")], lambda: ScrubRemoved(PIIConfig(), SALT)),
        "rejected": ([Rejected("web", "web/1", -1, "stage_error", "pii: x", "mail jane@example.org")],
                     lambda: ScrubRejected(PIIConfig(), SALT)),
    }
    records, make = transforms[stage]
    with pytest.raises(Exception, match="could not load Presidio's analyzer"):
        with TestPipeline() as p:
            out = p | beam.Create(records) | make()
            _ = out.kept if stage == "pii" else out
