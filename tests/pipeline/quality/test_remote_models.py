"""The quality stage reads its models and lists from any Beam filesystem, in DoFn.setup() on the worker.

``cftest://`` (tests/beamfs.py) stands in for gs:// or s3://: nothing under it exists as a local path, so
a stage that opened the file by name (fastText's ``load_model``, ``pathlib``) would fail here as on a remote
worker.
"""
from __future__ import annotations

import shutil
import tempfile

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.document import Document
from corpusforge.core.errors import UserError
from corpusforge.pipeline.quality import ClassifierConfig, LangIdConfig, Quality, QualityConfig
from corpusforge.pipeline.quality.config import BlocklistConfig
from corpusforge.pipeline.quality.langid import LanguageIdentifier, bundled_lid_path
from tests.beamfs import use_cftest

EN = ("The library opens at nine in the morning and closes at six in the evening. Visitors can borrow up to "
      "ten books at a time, and the reading room on the first floor is quiet and bright.")
DE = ("Die Bibliothek öffnet um neun Uhr morgens und schließt um sechs Uhr abends. Besucher können bis zu "
      "zehn Bücher auf einmal ausleihen, und der Lesesaal im ersten Stock ist ruhig und hell.")
BLOCKED = EN.replace("reading room", "casino room")


@pytest.fixture
def remote(tmp_path, monkeypatch):
    root = use_cftest(tmp_path / "bucket")
    (root / "models").mkdir()
    shutil.copy(bundled_lid_path(), root / "models" / "lid.176.ftz")
    (root / "lists").mkdir()
    (root / "lists" / "patterns.txt").write_text("# blocked words\ncasino\n", encoding="utf-8")
    # Local copies of remote models go to the temporary directory; watch it to see they are removed.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


def test_quality_stage_loads_models_and_lists_from_a_beam_filesystem(remote):
    config = QualityConfig(
        langid=LangIdConfig(model="cftest://models/lid.176.ftz"),
        blocklist=BlocklistConfig(patterns_file="cftest://lists/patterns.txt"),
        # lid.176 as a "classifier": the probability of English, which a German document fails.
        classifiers=[ClassifierConfig(name="english", model="cftest://models/lid.176.ftz", label="en")],
    )
    docs = [Document(id=i, text=t, source="test") for i, t in (("en", EN), ("de", DE), ("blocked", BLOCKED))]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | Quality(config)
        assert_that(out.kept | "Kept" >> beam.Map(lambda d: (d.id, d.annotations["lang"], d.annotations["english_score"] > 0.9)),
                    equal_to([("en", "en", True)]), label="kept")
        assert_that(out.removed | "Removed" >> beam.Map(lambda r: (r.doc.id, r.reason)),
                    equal_to([("de", "classifier_english_low_score"), ("blocked", "blocklist_pattern")]), label="removed")
    assert list(remote.glob("corpusforge-model-*")) == []  # the local model copies were deleted once loaded


def test_remote_model_gives_the_same_predictions_as_the_local_file(remote):
    texts = [EN, DE, "line one\nline two of English text here"]
    assert LanguageIdentifier("cftest://models/lid.176.ftz").predict(texts) == LanguageIdentifier().predict(texts)


def test_unreadable_remote_model_is_a_user_error(remote):
    with pytest.raises(UserError, match="cftest://models/missing.bin cannot be read"):
        LanguageIdentifier("cftest://models/missing.bin")
    assert list(remote.glob("corpusforge-model-*")) == []
