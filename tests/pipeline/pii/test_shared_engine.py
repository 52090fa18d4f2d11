"""One Presidio engine per worker process and recognizer settings, shared by the PII stage, ``ScrubRemoved``,
``ScrubRejected`` and every thread of the worker (``corpusforge.pipeline.pii.engine.shared_engine``)."""
from __future__ import annotations

import dataclasses
import random
import sys
import threading

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline

from corpusforge.pipeline.document import Document, Rejected, Removed
from corpusforge.pipeline.pii.config import PIIConfig
from tests.pipeline.pii.cases import NEAR_MISSES, TRUE_POSITIVES

pytest.importorskip("presidio_analyzer")

from corpusforge.pipeline.pii import engine as engine_module  # noqa: E402
from corpusforge.pipeline.pii.fields import FieldScrubber  # noqa: E402
from corpusforge.pipeline.pii.scrubber import Scrubber  # noqa: E402

SALT = "a-salt-of-sixteen-chars"


@pytest.fixture
def builds(monkeypatch):
    """The engines built from here on (the process's cache emptied first)."""
    built = []
    real = engine_module.build_engine

    def counting(config):
        built.append(engine_module.engine_key(config))
        return real(config)

    monkeypatch.setattr(engine_module, "build_engine", counting)
    monkeypatch.setattr(engine_module, "_ENGINES", {})
    return built


def test_the_stage_scrub_removed_and_scrub_rejected_build_one_engine(builds):
    # Before: each of the three DoFns built its own analyzer in setup's Scrubber (three builds in one worker).
    from corpusforge.pipeline.pii import PII
    from corpusforge.pipeline.pii.removed import ScrubRejected, ScrubRemoved

    config = PIIConfig(hash_salt=SALT)
    doc = Document("web/1", "Mail jane.doe@example.org", "web")
    with TestPipeline() as p:
        _ = p | "Docs" >> beam.Create([doc]) | "PII" >> PII(config)
        _ = p | "Removed" >> beam.Create([Removed(doc, "quality", "gopher_short_doc")]) | ScrubRemoved(config, SALT)
        _ = (p | "Rejected" >> beam.Create([Rejected("web", "a.jsonl", 3, "bad_json", "", "call +1 202 555 0173")])
             | ScrubRejected(config, SALT))
    assert builds == [engine_module.engine_key(config)]


def test_build_engine_reads_only_the_fields_of_the_engine_key(monkeypatch):
    # The key must hold everything the engine depends on, or two configurations would share a wrong engine.
    read = set()

    class Recording:
        def __init__(self, config):
            self._config = config

        def __getattr__(self, name):
            read.add(name)
            return getattr(self._config, name)

    engine_module.build_engine(Recording(PIIConfig(entities=["EMAIL_ADDRESS", "PHONE_NUMBER", "IP_ADDRESS", "URL"])))
    assert read and read <= set(engine_module.ENGINE_FIELDS)
    assert set(engine_module.ENGINE_FIELDS) <= {f.name for f in dataclasses.fields(PIIConfig)}


def test_scrubbers_share_the_engine_but_keep_their_own_salt_actions_and_allow_list(builds):
    hashing = Scrubber(PIIConfig(default_action="hash"), salt=SALT)
    other = Scrubber(PIIConfig(default_action="hash"), salt="another-salt-of-16-chars")
    allowing = Scrubber(PIIConfig(allow_list=["jane@example.org"], placeholders={"EMAIL_ADDRESS": "[e]"}), salt=SALT)
    texts = [s.scrub("mail jane@example.org or bob@example.org").text for s in (hashing, other, allowing)]
    assert len(builds) == 1 and hashing._engine is other._engine is allowing._engine
    assert texts[0] != texts[1] and texts[0].startswith("mail <EMAIL:")
    assert texts[2] == "mail jane@example.org or [e]"


def test_other_recognizer_settings_get_their_own_engine(builds):
    base = Scrubber(PIIConfig(), salt=SALT)
    regions = Scrubber(PIIConfig(phone_regions=["US"]), salt=SALT)
    private = Scrubber(PIIConfig(keep_private_ips=False), salt=SALT)
    for scrubber in (base, regions, private):
        scrubber._load()
    assert len(builds) == 3 and len({id(s._engine) for s in (base, regions, private)}) == 3
    assert private.scrub("from 10.0.0.1").text == "from <IP_ADDRESS>"
    assert base.scrub("from 10.0.0.1").text == "from 10.0.0.1"


def test_a_warm_up_that_fails_withdraws_the_engine_from_the_process(builds, monkeypatch):
    def broken_operator(self, entity):
        raise RuntimeError("no operator")

    with monkeypatch.context() as patch:
        patch.setattr(Scrubber, "_operator", broken_operator)
        with pytest.raises(Exception, match="could not load Presidio's analyzer"):
            Scrubber(PIIConfig(), salt=SALT).scrub("mail jane@example.org")
    assert engine_module._ENGINES == {}
    assert Scrubber(PIIConfig(), salt=SALT).scrub("mail jane@example.org").text == "mail <EMAIL>"
    assert len(builds) == 2


def test_threads_sharing_one_engine_get_what_each_would_get_alone(builds, monkeypatch):
    # The screens hand each recognizer the windows of the text the analyzer is asked about next; with one engine
    # for every thread of a worker that hand-over is per thread, or a thread scrubs with another's windows.
    texts = [t for cs in TRUE_POSITIVES.values() for t, _ in cs] + [t for ts in NEAR_MISSES.values() for t in ts]
    config = PIIConfig(max_density=1.0)
    alone = Scrubber(config, salt=SALT)
    expected = {text: (alone.scrub(text), FieldScrubber(alone).id(text)) for text in texts}
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    wrong = []

    def work(seed):
        scrubber = Scrubber(config, salt=SALT)
        fields = FieldScrubber(scrubber)
        order = random.Random(seed).sample(texts, len(texts))
        for _ in range(3):
            for text in order:
                if (scrubber.scrub(text), fields.id(text)) != expected[text]:
                    wrong.append(text)

    try:
        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(old)
    assert len(builds) == 1
    assert not wrong, wrong[:5]


def test_what_a_screen_prepared_for_the_next_analyze_is_the_calling_threads(builds):
    # Deterministic form of the race above: another thread prepares other windows of the very same text (or
    # remembers other phone spans of an equal one) between this thread's prepare and its analyze.
    engine = Scrubber(PIIConfig(), salt=SALT)._load()
    by_entity = {r.supported_entities[0]: r for r in engine.screened}
    email, phone = by_entity["EMAIL_ADDRESS"], by_entity["PHONE_NUMBER"]
    text = "mail jane@example.org or call +1 202 555 0173"
    email.prepared(text, [])  # this thread: no window, nothing to find
    phone.inner.remember(text, [])

    def other_thread():
        email.prepared(text, [(0, len(text))])
        phone.inner.remember(text, [(0, 4)])

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert email.analyze(text, ["EMAIL_ADDRESS"]) == []
    assert phone.inner.analyze(text, ["PHONE_NUMBER"]) == []
