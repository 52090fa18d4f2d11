"""The view only adds to what the text as written shows. Each of its readings of an escape can glue a value to a
neighbour or read a value's digits as a character: adjacent encoded-words joined (RFC 2047) put a number against
the next word's letter, an escaped backslash before octal-looking digits (a UNC path in JSON) read "\\\\151" as
"i", one quoted-printable escape in a word read every "=2x" of the word's other values. A review of the merged view
(ffe5e6b) found each leaking what 2e3a2d6 masked; the scrubber now also masks what the recognizers find in the text
as written. Each case below leaks on ffe5e6b."""
from __future__ import annotations

import random
import re

import pytest

from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.scrubber import Scrubber

SCRUBBER = Scrubber(PIIConfig(), salt="s" * 16)

CASES = [
    ("=?utf-8?q?537-32-3080?= =?utf-8?b?eA==?=", "537-32-3080"),
    ("=?iso-8859-1?Q?23.47.124.249?= =?utf-8?b?eA==?=", "23.47.124.249"),
    ("Subject: =?utf-8?q?537-32-3080?=\n =?utf-8?q?=C3=A9t=C3=A9?=", "537-32-3080"),
    ("\\\\151.155.246.51\\share", "151.155.246.51"),
    ("open \\\\172.217.3.110\\public\\x.doc", "172.217.3.110"),
    ('{"path": "\\\\\\\\151.155.246.51\\\\share"}', "151.155.246.51"),
    ("ssn \\\\171-61-2779", "171-61-2779"),
    ("name=Jos=C3=A9,phone=2125550173", "2125550173"),
    ("name=Jos=C3=A9,ssn=212-55-0173", "212-55-0173"),
    ("row,q=201.555.0128,x=C3=A9", "201.555.0128"),
    ("ssn=234-56-7890,b=3D", "234-56-7890"),
    ("phone=202.555.0151=3D", "202.555.0151"),
    ("phone=2025550151=3D", "2025550151"),
]


@pytest.mark.parametrize("text, value", CASES)
def test_a_value_the_text_shows_as_written_is_masked_whatever_the_view_reads(text, value):
    scrubbed = SCRUBBER.scrub(text).text
    assert value not in scrubbed, scrubbed
    assert not re.search(r"\d{3}", re.sub(r"=\?[\w-]+\?", "", scrubbed)), scrubbed


def _as_written(text: str, monkeypatch) -> str:
    """The scrub of ``text`` with no view: what the recognizers find in it as written."""
    from corpusforge.pipeline.pii import scrubber
    from corpusforge.pipeline.pii.canonical import Canonical

    with monkeypatch.context() as patched:
        patched.setattr(scrubber, "canonical", lambda t, ambiguous=True, tier=None: Canonical(t, t, None))
        return SCRUBBER.scrub(text).text


def test_values_next_to_escapes_of_every_kind_masked_as_written_stay_masked(monkeypatch):
    # a generator of the class: a value beside each kind of escape the view reads, before or after it, glued or
    # with a separator, maybe twice; whatever the view makes of the escapes, a value the recognizers find in the
    # text as written stays masked (on ffe5e6b: "=?utf-8?q?537-32-3080?= =?utf-8?b?eA==?=", "ssn \\\\171-61-2779")
    values = ["537-32-3080", "23.47.124.249", "2125550173", "202.555.0151", "jane.doe@example.org",
              "4111 1111 1111 1111", "151.155.246.51", "171-61-2779"]
    escapes = ["=?utf-8?q?x?=", "=?utf-8?b?eA==?=", "=?utf-8?q?", "?=", "=3D", "=C3=A9", "=20", "\\\\", "\\101",
               "\\40 ", "&amp;", "%20", "&#64;", "\\u0040", "=\n", "\\x41", "_"]
    separators = ["", " ", ",", "=", "\\", "/", "\n ", "&", ",k="]
    rng = random.Random(20261130)
    checked = 0
    for _ in range(400):
        value = rng.choice(values)
        parts = [rng.choice(escapes) + rng.choice(separators), value, rng.choice(separators) + rng.choice(escapes)]
        if rng.random() < 0.3:
            parts = [parts[0], value, rng.choice(separators), rng.choice(escapes), rng.choice(separators), value]
        text = "key " + "".join(parts) + " tail"
        if value in _as_written(text, monkeypatch):
            continue  # the text as written does not show it either: the view's reading is all there is
        checked += 1
        assert value not in SCRUBBER.scrub(text).text, text
    assert checked > 150, checked
