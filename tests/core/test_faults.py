"""The dead-letter helper every stage shares: details without the record's text, batches split to the record."""
import errno
import os

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.core.errors import ScratchError
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


# Errors of the environment: before, each was a dead letter of the record that met it (then of every record after).
ENVIRONMENT_ERRNOS = [errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EPIPE, errno.EMFILE,
                      errno.ENFILE, errno.EIO]


@pytest.mark.parametrize("code", ENVIRONMENT_ERRNOS, ids=errno.errorcode.get)
def test_run_isolated_lets_an_environment_error_stop_the_run_and_tries_no_record_of_the_batch_alone(code):
    tried = []

    def process(batch):
        tried.append(list(batch))
        raise OSError(code, os.strerror(code), "/data/out.bin")

    with pytest.raises(OSError) as raised:
        run_isolated(process, [1, 2, 3], "s", lambda r, d: (r, d), records=list, split=lambda b: [[x] for x in b])
    assert raised.value.errno == code and tried == [[1, 2, 3]]


def test_run_isolated_stops_on_an_environment_error_wrapped_in_another_and_on_a_scratch_error():
    def wrapped(element):
        try:
            raise PermissionError(errno.EACCES, "Permission denied", "/data/model.bin")
        except OSError as exc:
            raise RuntimeError("could not load the model") from exc

    with pytest.raises(RuntimeError):
        run_isolated(wrapped, "doc", "s", lambda r, d: (r, d))

    def scratch(element):
        raise ScratchError("spilled text /tmp/x is gone: run the build again")

    with pytest.raises(ScratchError):
        run_isolated(scratch, "doc", "s", lambda r, d: (r, d))


@pytest.mark.parametrize("exc", [ValueError("bad [Errno 28] No space left on device in the text"),
                                 OSError("Not a gzipped file (b'xx')"), FileNotFoundError(errno.ENOENT, "gone", "a"),
                                 MemoryError(), UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")],
                         ids=lambda exc: type(exc).__name__)
def test_run_isolated_keeps_a_content_error_a_dead_letter_of_its_record(exc):
    # the content of a record (a parser's error, a text quoting an errno, one huge record's MemoryError) is that
    # record's: rejected, the run goes on
    def process(batch):
        if "bad" in batch:
            raise exc
        yield from batch

    out = run_isolated(process, ["ok", "bad"], "s", lambda r, d: (r, d), records=list, split=lambda b: [[x] for x in b])
    assert [o for o in out if not isinstance(o, beam.pvalue.TaggedOutput)] == ["ok"]
    errors = [o.value for o in out if isinstance(o, beam.pvalue.TaggedOutput)]
    assert [e[0] for e in errors] == ["bad"] and errors[0][1].startswith(f"s: {type(exc).__name__}")
