"""The dead-letter helper every stage shares: details without the record's text, batches split to the record."""
import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.core.faults import ERRORS, Isolated, describe, error_parts, run_isolated


def test_describe_names_stage_and_type_and_cuts_what_the_message_quotes_from_the_text():
    text = "Call me at +1 415 555 0100 or write to jane.doe@example.com about the MARKER sentence here."
    exc = ValueError(f"cannot parse {text[8:40]!r} near jane.doe@example.com\nsecond line")
    detail = describe("quality", exc, text)
    assert detail.startswith("quality: ValueError: cannot parse ")
    assert "555" not in detail and "jane.doe" not in detail and "example.com" not in detail
    assert "second line" not in detail and "\n" not in detail
    assert error_parts(detail) == ("quality", "ValueError")


def test_describe_keeps_a_message_that_quotes_nothing_and_bounds_its_length():
    assert describe("pii", KeyError("entity_X")) == "pii: KeyError: 'entity_X'"
    assert describe("dedup", RuntimeError()) == "dedup: RuntimeError"
    assert len(describe("read", ValueError("x" * 10_000))) < 200
    # a key the exception quotes from the text goes, its quotes stay
    assert describe("read", KeyError("secret-token-123"), "x secret-token-123 x") == "read: KeyError: '…'"


def test_describe_cuts_text_that_the_message_quotes_as_a_repr_with_escapes():
    # repr() writes a tab or a newline as \t, \n: the quoted string is then not the text's own characters
    text = "mail jo@x.io\tnow\nbye"
    for exc in (ValueError(f"bad {text[5:17]!r}"), KeyError(text[5:])):
        detail = describe("read", exc, text)
        assert "jo@x.io" not in detail and "now" not in detail, detail


def _halve(batch):
    for n in batch:
        if n == 13:
            raise ZeroDivisionError(f"cannot halve {n}")
        yield n / 2


def test_run_isolated_splits_a_failing_batch_and_keeps_the_rest():
    out = run_isolated(_halve, [12, 13, 14], "demo", lambda record, detail: (record, detail),
                       records=list, split=lambda batch: [[n] for n in batch], text_of=str)
    values = [o for o in out if not isinstance(o, beam.pvalue.TaggedOutput)]
    dead = [o.value for o in out if isinstance(o, beam.pvalue.TaggedOutput)]
    assert values == [6.0, 7.0]
    assert [o.tag for o in out if isinstance(o, beam.pvalue.TaggedOutput)] == [ERRORS]
    assert dead == [(13, "demo: ZeroDivisionError: cannot halve 13")]


class _Double(beam.DoFn):
    def setup(self):
        self.factor = 2

    def process(self, n):
        if n < 0:
            raise ValueError("negative")
        yield beam.pvalue.TaggedOutput("odd", n) if n % 2 else n * self.factor


def test_isolated_dofn_routes_the_raising_element_to_errors_and_keeps_its_other_outputs():
    with TestPipeline() as p:
        out = (p | beam.Create([1, 2, -3, 4])
               | beam.ParDo(Isolated(_Double(), "demo", lambda r, d: (r, d))).with_outputs("odd", ERRORS, main="main"))
        assert_that(out.main, equal_to([4, 8]), label="main")
        assert_that(out.odd, equal_to([1]), label="odd")
        assert_that(out[ERRORS], equal_to([(-3, "demo: ValueError: negative")]), label="errors")
