"""A MIME encoded-word (RFC 2047) a mask covers part of keeps its markers: ``=?charset?Q?`` and ``?=`` are the word's,
not the value's. The view reads a Q word's characters each back to what wrote them and its markers as nothing, and a
mask grows over what the view read as nothing beside a value (a format character goes with it): a value at a Q word's
end took the word's ``?=`` (``=?utf-8?Q?Call_<PHONE> ok``), one at its start the ``=?utf-8?Q?`` (``<PHONE>_now?=``),
and the scrub was no encoded-word any more (a reader shows ``=?utf-8?Q?Call_`` as written). A value that is a word's
whole text still takes the whole word (markers and all), as a B word's value does (base64 maps every character to the
whole word). And a Q word's ``_`` is a space (RFC 2047 4.2: a literal "_" is written ``=5F``), as ``decode_header``
reads it: a value beside it or across it (``212_555_0173``) is masked."""
from __future__ import annotations

import base64
import email.header
import itertools
import re

import pytest

from corpusforge.pipeline.pii.canonical import canonical
from corpusforge.pipeline.pii.config import PIIConfig

pytest.importorskip("presidio_analyzer")

from corpusforge.pipeline.pii.scrubber import Scrubber  # noqa: E402

SCRUBBER = Scrubber(PIIConfig(), salt="s" * 16)
CHARSETS = ["utf-8", "UTF-8", "iso-8859-1", "ISO-8859-15", "windows-1252", "iso-8859-2", "koi8-r", "us-ascii"]
VALUES = {"email": "jane.doe@example.org", "phone": "212-555-0173", "card": "4111 1111 1111 1111",
          "ip": "81.2.69.160", "iban": "DE89 3704 0044 0532 0130 00", "ssn": "398-55-5589"}
_WORD = re.compile(r"=\?[^?\s]+\?[QqBb]\?[^?\s]*\?=")


def q_word(charset: str, text: str, q: str = "Q") -> str:
    """``text`` Q-encoded as an encoder writes it: a space "_", letters and digits themselves, the rest ``=XX``."""
    data = text.encode(charset)
    body = "".join("_" if b == 0x20 else chr(b) if chr(b).isalnum() else f"={b:02X}" for b in data)
    return f"=?{charset}?{q}?{body}?="


def _decoded(text: str) -> str:
    return "".join(p if isinstance(p, str) else p.decode((c or "ascii").split("*")[0])
                   for p, c in email.header.decode_header(text))


def _words_whole(out: str) -> bool:
    """Whether every encoded-word marker left in ``out`` belongs to a whole word."""
    rest = _WORD.sub("", out)
    return "=?" not in rest and "?=" not in rest


def _check(text: str, value: str) -> None:
    out = SCRUBBER.scrub(text).text
    assert _words_whole(out), (text, out)
    shown = _decoded(out)
    assert value not in shown and value[:6] not in shown, (text, out, shown)


# a value in a Q word, every charset, either case of "q", every kind, at the word's start, middle, end
@pytest.mark.parametrize("charset, q", itertools.product(CHARSETS, "Qq"))
def test_a_value_in_part_of_a_q_word_leaves_the_word_whole(charset, q):
    for kind, value in VALUES.items():
        for before, after in (("Call ", ""), ("", " now"), ("Call ", " now"), ("", "")):
            text = f"Subject: {q_word(charset, before + value + after, q)} ok"
            _check(text, value)


def test_a_value_over_two_words_leaves_both_words_whole():
    for charset, (kind, value) in itertools.product(CHARSETS, VALUES.items()):
        cut = len(value) // 2
        for before, after in (("Call ", ""), ("", " now"), ("Call ", " now")):
            text = (f"Subject: {q_word(charset, before + value[:cut])} {q_word(charset, value[cut:] + after)} ok")
            _check(text, value)


@pytest.mark.parametrize("charset", CHARSETS)
def test_a_value_in_a_b_word_takes_the_word(charset):
    for value in VALUES.values():
        for before, after in (("Call ", ""), ("", " now"), ("", "")):
            data = (before + value + after).encode(charset)
            text = f"Subject: =?{charset}?B?{base64.b64encode(data).decode()}?= ok"
            out = SCRUBBER.scrub(text).text
            assert _words_whole(out) and out.startswith("Subject: ") and out.endswith(" ok"), (text, out)
            assert value not in _decoded(out)


def test_a_value_that_is_a_whole_word_takes_the_word():
    assert SCRUBBER.scrub("From: =?utf-8?Q?jane=40example.com?= wrote").text == "From: <EMAIL> wrote"
    assert SCRUBBER.scrub("S: =?utf-8?q?212-555?= =?utf-8?q?-0173?= ok").text == "S: <PHONE> ok"


def test_the_end_marker_stays_with_its_word():
    assert SCRUBBER.scrub("S: =?utf-8?Q?Call_212-555-0173?= ok").text == "S: =?utf-8?Q?Call_<PHONE>?= ok"
    assert SCRUBBER.scrub("S: =?utf-8?Q?212-555-0173_now?= ok").text == "S: =?utf-8?Q?<PHONE>_now?= ok"
    assert SCRUBBER.scrub("From: =?utf-8?Q?jane_doe=40example.com?= wrote").text \
        == "From: =?utf-8?Q?jane_<EMAIL>?= wrote"


@pytest.mark.parametrize("charset", CHARSETS)
def test_a_q_words_underscore_is_a_space_as_decode_header_reads_it(charset):
    for text in (f"=?{charset}?Q?jane_doe=40example.com?=", f"=?{charset}?q?Call_212_555_0173_now?=",
                 f"=?{charset}?Q?jane=5Fdoe=40example.com?="):
        assert canonical(text).text == _decoded(text), text
    # beside "_" (a space) and across it (the groups of a number): masked
    _check(f"S: =?{charset}?q?Call_212_555_0173_now?= ok", "212 555 0173")
    _check(f"S: =?{charset}?Q?jane=5Fdoe=40example.com?= ok", "jane_doe@example.com")


def test_a_value_stops_at_the_gap_between_two_words():
    # the whitespace between adjacent words is read as nothing, as the markers are: a value's mask took it and the next
    # word's "=?utf-8?q?" (``<EMAIL>_ok?=``), or the last word's "?=" and the gap before it
    b = base64.b64encode(b"jane@example.org").decode()
    cases = {f"S: =?utf-8?b?{b}?= =?utf-8?q?_ok?= x": "S: <EMAIL> =?utf-8?q?_ok?= x",
             "S: =?utf-8?q?212-555-0173?= =?utf-8?q?_ok?= x": "S: <PHONE> =?utf-8?q?_ok?= x",
             "S: =?utf-8?q?ok_?= =?utf-8?q?212-555-0173?= x": "S: =?utf-8?q?ok_?= <PHONE> x",
             f"S: =?utf-8?q?ok_?= =?utf-8?b?{b}?= x": "S: =?utf-8?q?ok_?= <EMAIL> x",
             "S: =?utf-8?q?ok_?=\n =?utf-8?q?212-555-0173_now?= x": "S: =?utf-8?q?ok_?=\n =?utf-8?q?<PHONE>_now?= x"}
    for text, scrubbed in cases.items():
        assert SCRUBBER.scrub(text).text == scrubbed, text


# A value across a run of words, B and Q mixed, takes every word it touches whole: the "whole run" rule saw only Q
# words' markers, and a B word (one piece of the view, taken whole) beside a Q word left the Q word's "?=" or
# "=?charset?q?" alone (``S: <PHONE>?= ok``); a word of its own before the value is kept.
@pytest.mark.parametrize("text, scrubbed", [
    ("S: =?utf-8?b?MjEyLTU1NS0=?= =?utf-8?q?0173?= ok", "S: <PHONE> ok"),
    ("S: =?utf-8?q?212-555-?= =?utf-8?b?MDE3Mw==?= ok", "S: <PHONE> ok"),
    ("S: =?utf-8?b?SGk=?= =?utf-8?q?jane=40example.org?= ok", "S: <EMAIL> ok"),
    ("S: =?utf-8?b?SGkg?= =?utf-8?q?jane=40example.org?= ok", "S: =?utf-8?b?SGkg?= <EMAIL> ok"),
    ("S: =?utf-8?b?MjEyLTU1NS0=?= =?utf-8?q?0173_ok?= x", "S: <PHONE> x"),
    ("S: =?utf-8?q?Call_212-?= =?utf-8?q?555-0173_ok?= x", "S: <PHONE> x"),
    ("S: =?utf-8?q?Call_212-555-0173?= ok", "S: =?utf-8?q?Call_<PHONE>?= ok"),
])
def test_a_value_across_mixed_words_takes_them_whole(text, scrubbed):
    assert SCRUBBER.scrub(text).text == scrubbed
