import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.normalize.config import NormalizeConfig
from corpusforge.pipeline.document import Document
from corpusforge.pipeline.normalize.stage import Normalize, normalize_text


def test_nfc_control_characters_and_whitespace():
    config = NormalizeConfig()
    assert normalize_text("Cafe\u0301", config) == "Caf\u00e9"
    assert normalize_text("a\x00b\x1fc\ufeff", config) == "abc"
    assert normalize_text("a \t\u00a0 b\r\n\r\n\r\n\r\nc  ", config) == "a b\n\nc"


def test_normalize_is_idempotent_and_switchable():
    config = NormalizeConfig()
    text = "  x\u2028y\n\n\n\nz\u3000w "
    once = normalize_text(text, config)
    assert normalize_text(once, config) == once
    off = NormalizeConfig(unicode_form="none", strip_control=False, collapse_whitespace=False)
    assert normalize_text("e\u0301  x", off) == "e\u0301  x"


def test_normalize_transform_removes_documents_left_empty():
    docs = [Document("a", "Hello\u00a0 world", "s"), Document("b", "\x00\x01 \n", "s")]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | Normalize(NormalizeConfig())
        assert_that(out.kept | "KeptText" >> beam.Map(lambda d: (d.id, d.text)), equal_to([("a", "Hello world")]),
                    label="Kept")
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.stage, r.reason)),
                    equal_to([("b", "normalize", "empty_after_normalize")]), label="Removed")
