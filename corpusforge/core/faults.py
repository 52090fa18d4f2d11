"""Fault isolation: one record that makes a step raise becomes a dead letter, not a failed run.

Beam's dead-letter pattern, shared by every stage and by the tokenize step. ``Isolated(fn, ...)`` wraps a
DoFn: an element whose ``process`` raises yields nothing on the wrapped DoFn's outputs (its partial outputs
are dropped) and, on the ``ERRORS`` tagged output, one ``to_error(record, detail)`` per record it held. An
element that is a batch is split and its records run one at a time, so only the record that raises is set
aside. ``run_isolated`` is the same for code that is not a DoFn of its own (a batch inside a unit of work).

The detail is ``"<stage>: <ExceptionType>: <short message>"``. An exception message may quote its input
(``KeyError('...')``, a decoder's excerpt): every part of it that repeats the record's text is cut out
(``describe``), so a detail can go to stats, logs and reports. With ``fail_fast`` the DoFn is not wrapped
and the first exception fails the run, with its traceback.

An error of the environment is not a record's fault (``errors.environment_error``): a ``WorkerError`` (a model
that loads on first use and fails to; a spilled text or shuffle run that cannot be read back, ``ScratchError``), or
an ``OSError`` saying the machine is in trouble (a full disk, a denied permission, a read-only filesystem, a broken
pipe, too many open files, an I/O error). It is never a dead letter: it fails the run at once, as an exception in
``DoFn.setup`` does, and the command says it in one line naming the path (``errors.resource_error``), where a dead
letter per record would have filed good records as rejected until the error fraction stopped the build with "too
many records failed". A batch that raises one is not retried record by record. Every other exception, a
``MemoryError`` on one huge record included, is the record's (docs/inputs.md).
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable

import apache_beam as beam
from apache_beam.metrics import Metrics

from corpusforge.core.errors import environment_error

ERRORS = "stage_errors"
STAGE_ERROR = "stage_error"  # the reason of a record rejected because a stage raised on it
MESSAGE_CHARS = 160
# A run of this many characters of the message that also occurs in the record's text is cut out: long
# enough that ordinary words of an error message ("position", "encode") rarely match, short enough that an
# e-mail address or a phone number quoted by an exception never survives.
QUOTE_CHARS = 8
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"")  # what an exception's repr() of a string puts in quotes


def describe(stage: str, exc: BaseException, text: str = "") -> str:
    """``"<stage>: <ExceptionType>: <message>"``: the message's first line, at most ``MESSAGE_CHARS``
    characters, with every quoted string that ``text`` holds and every stretch that repeats ``text``
    (``QUOTE_CHARS`` characters or more), as it is or as ``repr()`` escapes it, replaced by ``…``."""
    lines = str(exc).strip().splitlines()
    message = " ".join(lines[0].split())[:MESSAGE_CHARS] if lines else ""
    if text and message:
        message = _without_quotes(message, text)
    name = type(exc).__name__
    return f"{stage}: {name}: {message}" if message else f"{stage}: {name}"


def _without_quotes(message: str, text: str) -> str:
    # a quoted string of the text, however short (KeyError('no id')), and every longer stretch of it; each
    # also as repr() writes it (a tab as \t), the form an exception's message quotes
    escaped = repr(text)[1:-1]
    message = _QUOTED.sub(lambda m: m.group(0) if (m.group(1) or m.group(2)) not in text + "\0" + escaped
                          else m.group(0)[0] + "…" + m.group(0)[-1], message)
    quoted = [False] * len(message)
    for start in range(len(message) - QUOTE_CHARS + 1):
        window = message[start:start + QUOTE_CHARS]
        if window in text or window in escaped:
            quoted[start:start + QUOTE_CHARS] = [True] * QUOTE_CHARS
    out, previous = [], False
    for char, hidden in zip(message, quoted):
        if not hidden:
            out.append(char)
        elif not previous:
            out.append("…")
        previous = hidden
    return "".join(out)


def error_parts(detail: str) -> tuple[str, str]:
    """``(stage, exception type)`` of a ``describe`` detail."""
    stage, _, rest = detail.partition(": ")
    return stage, rest.partition(": ")[0]


def run_isolated(process: Callable[[Any], Iterable], element: Any, stage: str, to_error: Callable[[Any, str], Any],
                 records: Callable[[Any], list] = lambda element: [element],
                 split: Callable[[Any], list] | None = None, text_of: Callable[[Any], str] = lambda record: "",
                 errors=None, counts=None) -> list:
    """Everything ``process(element)`` yields, or, when it raises, the dead letters: with ``split`` (a batch),
    each part of ``split(element)`` is run alone and only the parts that raise are set aside. A dead letter
    is ``TaggedOutput(ERRORS, to_error(record, detail))`` for each of ``records(part)``.

    ``counts`` (a ``CountingDoFn``): what ``process`` counts is held during each attempt and reaches Beam's
    metrics only when the attempt succeeds, so a batch that raises and is run again record by record counts
    each record once, and a rejected record's decisions are not counted."""
    if counts is not None:
        counts.hold_counts()
    try:
        out = list(process(element) or ())
    except Exception as exc:  # noqa: BLE001 - any exception of one record is that record's, not the run's
        if counts is not None:
            counts.release_counts(keep=False)
        if environment_error(exc):  # the machine's, not the record's: the next record would meet it too
            raise
        return _after_failure(exc, process, element, stage, to_error, records, split, text_of, errors, counts)
    if counts is not None:
        counts.release_counts(keep=True)
    return out


def _after_failure(exc, process, element, stage, to_error, records, split, text_of, errors, counts) -> list:
    """What ``run_isolated`` returns once ``process(element)`` raised ``exc``: its dead letters, or, for a
    batch, what each of its parts gives alone."""
    if split is None:
        return _dead_letters(exc, records(element), stage, to_error, text_of, errors)
    parts = split(element)
    if len(parts) <= 1:
        return _dead_letters(exc, [r for part in parts for r in records(part)], stage, to_error, text_of, errors)
    out = []
    for part in parts:
        out += run_isolated(process, part, stage, to_error, records, None, text_of, errors, counts)
    return out


def _dead_letters(exc, failed: list, stage, to_error, text_of, errors) -> list:
    out = []
    for record in failed:
        try:
            text = text_of(record)
        except Exception:  # noqa: BLE001 - the text itself may be what cannot be read
            text = ""
        out.append(beam.pvalue.TaggedOutput(ERRORS, to_error(record, describe(stage, exc, text))))
    if errors is not None:
        errors.inc(len(out))
    return out


class Isolated(beam.DoFn):
    """``fn`` under the dead-letter pattern (see the module's docstring); ``setup``, bundles and ``teardown``
    are ``fn``'s. ``records``: the records an element holds (default: the element); ``split``: how to run a
    batch element's records one at a time; ``text_of``: a record's text, kept out of the detail."""

    def __init__(self, fn: beam.DoFn, stage: str, to_error: Callable[[Any, str], Any],
                 records: Callable[[Any], list] | None = None, split: Callable[[Any], list] | None = None,
                 text_of: Callable[[Any], str] | None = None):
        self.fn, self.stage, self.to_error = fn, stage, to_error
        self.records = records or (lambda element: [element])
        self.split, self.text_of = split, text_of or (lambda record: "")
        self.errors = Metrics.counter(stage, STAGE_ERROR)
        # a CountingDoFn's counts are committed per successful attempt (run_isolated)
        self.counts = fn if hasattr(fn, "hold_counts") else None

    def setup(self):
        self.fn.setup()

    def start_bundle(self):
        return self.fn.start_bundle()

    def process(self, element):
        return run_isolated(self.fn.process, element, self.stage, self.to_error, self.records, self.split,
                            self.text_of, self.errors, self.counts)

    def finish_bundle(self):
        if self.counts is not None:  # what the bundle's successful records counted, once per bundle
            self.counts.commit_counts()
        return self.fn.finish_bundle()

    def teardown(self):
        self.fn.teardown()
