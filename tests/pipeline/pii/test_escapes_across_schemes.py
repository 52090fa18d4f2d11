"""Escapes of one scheme inside another scheme's escape (docs/pii.md, "Known misses" before): a raw JSON line's
``\\uXXXX`` inside a page's ``&#...;`` whose ``&#`` is literal, a URL escape's hex digits written as HTML references,
a reference's digits as URL escapes... The view reads the outer level once the inner one made it, in either order,
as the outer layer's decoder would; the same scheme met by chance (``&#&#52;8;``) stays one pass (a browser's).
Found by fuzz ``pii --seed 1161 --case 18``: a quoted local part before ``&#\\u096c\\u096a;`` in a rejected line's
raw preview reached rejected/ and report.html."""
from __future__ import annotations

import json

import pytest

from corpusforge.pipeline.document import RAW_PREVIEW
from corpusforge.pipeline.pii.canonical import canonical
from corpusforge.pipeline.pii.config import PIIConfig

pytest.importorskip("presidio_analyzer")

from corpusforge.pipeline.pii.removed import scrubbed_prefix  # noqa: E402
from corpusforge.pipeline.pii.scrubber import Scrubber  # noqa: E402

# "@" written as an escape (outer) whose characters after its introducer are escapes of another scheme (inner).
# Written as the text holds them: "\\u0036" is a backslash, "u", "0036".
AT_ACROSS_SCHEMES = {
    "json in html decimal": "&#\\u0036\\u0034;",
    "json in html hex": "&#x\\u0034\\u0030;",
    "json makes the reference's #": "&\\u002364;",
    "devanagari json digits in html": "&#\\u096c\\u096a;",  # the fuzz case: ६४ as a JSON writer writes them
    "percent in html decimal": "&#%36%34;",
    "percent in html hex": "&#x%34%30;",
    "twice-encoded percent in html": "&#%2536%2534;",  # three levels
    "html in percent": "%&#52;0",
    "html hex in percent": "%&#x34;&#x30;",
    "html in a utf-8 percent sequence": "%EF%BC%A&#48;",  # a full-width "@", one hex digit a reference
    "json in percent": "%\\u0034\\u0030",
    "percent in json": "\\u00%34%30",
    "html in json": "\\u&#48;&#48;40",
    # a format character (read as nothing) written as another scheme's escape inside one: as the view removes a
    # written one before any escape is read (``%4\u20600`` in a text), so when a raw JSON line writes it \u2060
    "json word joiner in percent": "%4\\u20600",
    "json zero-width space in html": "&#\\u200b64;",
    "html word joiner in a utf-8 percent sequence": "%EF%BC&#8288;%A0",
}


@pytest.fixture(scope="module")
def scrubber() -> Scrubber:
    return Scrubber(PIIConfig(), salt="s" * 16)


@pytest.mark.parametrize("at", AT_ACROSS_SCHEMES.values(), ids=AT_ACROSS_SCHEMES.keys())
def test_an_escape_written_with_another_schemes_escapes_is_read(at):
    text = f"mail jane{at}example.org now"
    view = canonical(text)
    assert view.text == "mail jane@example.org now"
    assert view.span(9, 10) == (9, 9 + len(at))  # the "@" maps back to the whole nest


@pytest.mark.parametrize("at", AT_ACROSS_SCHEMES.values(), ids=AT_ACROSS_SCHEMES.keys())
def test_an_address_so_written_is_masked_whole_in_a_text(scrubber, at):
    out = scrubber.scrub(f"mail jane.doe{at}example.org now").text
    assert out == "mail <EMAIL> now", out


@pytest.mark.parametrize("at", AT_ACROSS_SCHEMES.values(), ids=AT_ACROSS_SCHEMES.keys())
@pytest.mark.parametrize("cut", ["local part", "at", "domain"])
def test_a_quoted_local_part_so_written_is_masked_in_a_raw_preview_cut_inside_it(scrubber, at, cut):
    # A malformed JSON line as a JSON writer wrote it (quotes as \", a BOM and bidi control as \uXXXX), cut at the
    # preview's length inside the address: scrubbed whole, then cut (pii.scrub_removed: true).
    local = json.dumps("\"\ufeffzxcqthehn atqax\"")[1:-1]
    value = local + at + json.dumps("post.examp\u202ele.d\u200ce")[1:-1]
    into = {"local part": 14, "at": len(local) + 2, "domain": len(local) + len(at) + 5}[cut]
    head = '{"id": "p1email", "text": "write to '
    line = head + "x" * (RAW_PREVIEW - len(head) - into - 1) + " " + value + " and more text"
    assert line.index(value) + into == RAW_PREVIEW
    preview = scrubbed_prefix(scrubber, line, RAW_PREVIEW)
    assert "zxcq" not in preview, preview
    assert preview.startswith(head + "xxx")


@pytest.mark.parametrize("text,view", [
    ("&#&#52;8;", "&#48;"),  # HTML made by HTML: one pass, as a browser shows it
    ("%%34%30", "%40"),  # percent made by percent: one pass, as a URL decoder reads it
    ("\\u00\\u0034\\u0030", "\\u0040"),  # JSON made by JSON
])
def test_an_escape_its_own_scheme_made_by_chance_is_not_read_again(text, view):
    assert canonical(text).text == view


def test_two_escapes_a_level_made_that_overlap_are_read_as_one():
    # %5C%5Cu0040 is "\\u0040" (a JSON string's \u0040 inside a JSON string) once the URL level is read: an escape at
    # each backslash; the first, whole, is read (the view held "@@" for it: one "@" too many, offsets of both)
    view = canonical("a%5C%5Cu0040b")
    assert view.text == "a@b"
    assert view.span(1, 2) == (1, 12)


# A quoted local part's two quotes written differently in a raw JSON line: one as an escape the view reads (%22,
# &quot;, &#34;, \u0022, a nested %\u00322), the other as the JSON writer escaped the quote it saw (\"). The view reads
# both as '"', the e-mail recognizer took \" for JSON's quote only where the other was \" too (pii fuzz seed 6 left
# '"bgyodzf' of '%\u00322bgyodzfs.dzaqf\"@…' in rejected/).
QUOTE_ESCAPES = ["%22", "&quot;", "&#34;", "\\u0022", "%\\u00322", '"']


@pytest.mark.parametrize("quote", QUOTE_ESCAPES)
@pytest.mark.parametrize("escaped_first", [False, True])
@pytest.mark.parametrize("local", ["bgyodzfs.dzaqf", "jane doe"])
def test_a_quoted_local_part_with_one_quote_json_escaped_and_one_an_escape_is_masked(scrubber, quote, escaped_first,
                                                                                      local):
    first, last = ('\\"', quote) if escaped_first else (quote, '\\"')
    text = f'"text": "write to {first}{local}{last}@example.co.uk and more'
    out = scrubber.scrub(text).text
    # (a quoted local part may run back to the JSON string's own quote: '"write to \\"…"' is one in RFC 5321)
    assert "<EMAIL> and more" in out and local[:5] not in out, out
    head = '{"id": "p1email", "text": "write to '
    line = head + "x" * (RAW_PREVIEW - len(head) - 9) + " " + text.partition("to ")[2]
    assert local[:5] not in scrubbed_prefix(scrubber, line, RAW_PREVIEW)  # cut inside the local part
