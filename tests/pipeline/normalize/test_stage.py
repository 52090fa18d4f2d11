import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.normalize.config import NormalizeConfig
from corpusforge.pipeline.document import Document
from corpusforge.pipeline.normalize.stage import Normalize, normalize_text, repair_mojibake


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


MOJIBAKE = "The Mona Lisa doesnÃ¢â‚¬â„¢t have eyebrows."  # UTF-8 read as cp1252, twice


def test_mojibake_is_repaired_and_clean_text_left_alone():
    config = NormalizeConfig()
    assert normalize_text(MOJIBAKE, config) == "The Mona Lisa doesn’t have eyebrows."
    assert normalize_text("Le cafÃ© est prÃªt.", config) == "Le café est prêt."
    # one garbled line beside good non-ASCII lines: only that line changes
    assert normalize_text("Grüße aus Köln — “bis bald”\nSeÃ±or GarcÃ­a", config) == "Grüße aus Köln — “bis bald”\nSeñor García"
    clean = "“Curly quotes”, the ﬁ ligature, ＦＵＬＬ width, &amp; entities, ½, SÃO PAULO and IRMÃ DULCE."
    assert repair_mojibake(clean) == clean  # only encoding repairs, nothing cosmetic
    off = NormalizeConfig(fix_mojibake=False)
    assert normalize_text(MOJIBAKE, off) == MOJIBAKE


def test_repaired_mojibake_is_counted_as_an_edit():
    docs = [Document("a", MOJIBAKE, "s"), Document("b", "Nothing to repair here.", "s"),
            Document("c", "naÃ¯ve cafÃ©", "s")]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | Normalize(NormalizeConfig())
        assert_that(out.kept | "KeptText" >> beam.Map(lambda d: (d.id, d.text)),
                    equal_to([("a", "The Mona Lisa doesn’t have eyebrows."), ("b", "Nothing to repair here."),
                              ("c", "naïve café")]), label="Kept")
        assert_that(out.edits, equal_to([("normalize", "mojibake_repaired", 1)] * 2), label="Edits")


def test_line_and_paragraph_separators_break_lines():
    config = NormalizeConfig()
    assert normalize_text("It ends here.\u2029The second paragraph.", config) == "It ends here.\n\nThe second paragraph."
    assert normalize_text("one line\u2028the next", config) == "one line\nthe next"
    raw = NormalizeConfig(unicode_form="none", strip_control=False, collapse_whitespace=False)
    assert normalize_text("a\u2028b\u2029c", raw) == "a\nb\n\nc"


def test_control_characters_between_a_letter_and_its_mark_normalise_in_one_pass():
    # Stripping the control character after NFC would leave "e" + U+0301 for the next pass to compose.
    assert normalize_text("e\x00\u0301 \u1100\u200b\u1161", NormalizeConfig()) == "\u00e9 \uac00"


from hypothesis import given, settings, strategies as st  # noqa: E402

_UNICODE = st.characters(codec=None, categories=None)  # every code point, surrogates and controls included
_TRICKY = st.sampled_from(list("\r\n\t \u00a0\u3000\u2028\u2029\u0085\x00\x0b\x0c\x1c\u200b\ufeff\u0301\u0316"
                               "\u0327e\u1100\u1161\u11a8\u00b4\ufb01\u2126\u212b\u0130\u0345\u03b9\u0661"
                               # mojibake material: UTF-8 lead and continuation bytes read as cp1252/latin-1
                               "\u00c3\u00c2\u00e2\u20ac\u2122\u0153\u00a9\u00a7\u00b1\u00a0\x80\x9d\u00c5\u00cf"))


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(st.text(_TRICKY, max_size=12), st.text(st.one_of(_UNICODE, _TRICKY), max_size=40)),
       form=st.sampled_from(["NFC", "NFKC", "none"]), strip_control=st.booleans(), collapse=st.booleans(),
       mojibake=st.booleans())
def test_normalize_is_idempotent_for_all_text(text, form, strip_control, collapse, mojibake):
    config = NormalizeConfig(unicode_form=form, strip_control=strip_control, collapse_whitespace=collapse,
                             fix_mojibake=mojibake)
    once = normalize_text(text, config)
    assert normalize_text(once, config) == once


@settings(max_examples=1500, deadline=None)
@given(text=st.one_of(st.text(_TRICKY, max_size=30), st.text(st.one_of(_UNICODE, _TRICKY), max_size=60),
                      st.text(st.sampled_from(list(" \n\t\u00a0\u3000\u2009a")), max_size=30)))
def test_fast_whitespace_collapse_equals_the_line_by_line_reference(text):
    from corpusforge.pipeline.normalize.stage import collapse_whitespace, collapse_whitespace_reference

    text = text.replace("\r", "\n")  # _canonical turns line ends into \n before collapsing
    assert collapse_whitespace(text) == collapse_whitespace_reference(text)


def test_the_ascii_whitespace_collapse_knows_every_ascii_space():
    # In ASCII text collapse_whitespace tests these characters with substring searches instead of _OTHER_SPACE's
    # scan: they must be exactly the ASCII characters it matches. And ASCII texts of spaces, tabs, controls
    # and breaks collapse as the line-by-line reference does.
    import random

    from corpusforge.pipeline.normalize.stage import (_OTHER_ASCII_SPACE, _OTHER_SPACE, collapse_whitespace,
                                                      collapse_whitespace_reference)

    assert sorted(_OTHER_ASCII_SPACE) == [chr(c) for c in range(128) if _OTHER_SPACE.match(chr(c))]
    rng = random.Random(11)
    pieces = [" ", "  ", "\n", "\n\n\n", "\t", "\x0b", "\x1f", "a", "bc", " \n ", "\u00a0", "\u3000"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 25)))
        assert collapse_whitespace(text) == collapse_whitespace_reference(text), ascii(text)


def test_control_characters_are_stripped_as_the_regex_strips_them():
    # ASCII text goes through bytes.translate with _ASCII_CONTROL: exactly the ASCII characters _CONTROL matches,
    # and every text comes out as _CONTROL.sub makes it.
    import random

    from corpusforge.pipeline.normalize.stage import _ASCII_CONTROL, _CONTROL, strip_control

    assert [chr(c) for c in _ASCII_CONTROL] == [chr(c) for c in range(128) if _CONTROL.match(chr(c))]
    rng = random.Random(5)
    pieces = [chr(c) for c in range(160)] + ["ab", "\u200b", "\ufeff", "\u00e9", "\n\n", "\x00\x00"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30)))
        assert strip_control(text) == _CONTROL.sub("", text), ascii(text)
