"""Escapes that real decoders read and the view did not (docs/pii.md, "every escape is read"): HTML5's numeric
reference without ``;`` (``&#64``: a browser and ``html.unescape`` end it at the first non-digit) and with leading
zeros (``&#00000064;``, ``&#x0000040;``: any count), a legacy named reference without ``;`` (``&nbsp``: the 106
names ``html.entities.html5`` keys without it), the hex escape of Python, JavaScript and C (``\\x40``), the
code-point escapes of JavaScript, Rust and Swift (``\\u{40}``) and Python/C's eight-digit one (``\\U00000040``), and
JavaScript's old ``escape()``'s ``%u0040``. Each is read as the character it stands for; an e-mail address, a phone
number, an IP and a card so written are masked."""
from __future__ import annotations

import pytest

from corpusforge.pipeline.pii.canonical import canonical
from corpusforge.pipeline.pii.config import PIIConfig

pytest.importorskip("presidio_analyzer")

from corpusforge.pipeline.pii.scrubber import Scrubber  # noqa: E402

# "@", "-", "." and a space written in each scheme the view now reads (leading zeros: more digits than the 7 and 6
# the view read before) (as the text holds them: "\\x40" is a
# backslash, "x", "40").
SCHEMES = {
    "html decimal leading zeros": {"@": "&#00000064;", "-": "&#000000045;", ".": "&#0000000046;", " ": "&#00000000000032;"},
    "html hex leading zeros": {"@": "&#x0000040;", "-": "&#x000002d;", ".": "&#X000002E;", " ": "&#x000000000020;"},
    "python/js/c hex": {"@": "\\x40", "-": "\\x2d", ".": "\\x2E", " ": "\\x20"},
    "js/rust/swift code point": {"@": "\\u{40}", "-": "\\u{2d}", ".": "\\u{00002E}", " ": "\\u{20}"},
    "python/c eight digits": {"@": "\\U00000040", "-": "\\U0000002d", ".": "\\U0000002E", " ": "\\U00000020"},
    "js escape()": {"@": "%u0040", "-": "%u002D", ".": "%u002e", " ": "%u0020"},
}
# A numeric reference without ";" ends at the first non-digit (HTML5): before a digit it reads the digit too
# (``&#451`` is U+01C3), so only an address's "@" (before a letter that is no hex digit, for hex) is so written.
NO_SEMICOLON = {
    "html decimal without ;": "&#64",
    "html decimal, zeros, no ;": "&#0000000064",
    "html hex without ;": "&#x40",
    "html hex, zeros, no ;": "&#x0040",
}
# (text with "{@}", "{-}", "{.}", "{ }" where a scheme's escape goes, what must not survive the scrub)
CONTEXTS = {
    "email": ("mail jane.doe{@}example.org now", "jane"),
    "phone": ("call 202{-}555{-}0173 today", "555"),
    "ip": ("from 81{.}2{.}69{.}160 today", "69"),
    "card": ("card 4111{ }1111{ }1111{ }1111 ok", "4111"),
}


def _written(template: str, escapes: dict[str, str]) -> str:
    for char, code in escapes.items():
        template = template.replace("{" + char + "}", code)
    return template


@pytest.fixture(scope="module")
def scrubber() -> Scrubber:
    return Scrubber(PIIConfig(), salt="s" * 16)


@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES.keys())
@pytest.mark.parametrize("kind", CONTEXTS, ids=CONTEXTS.keys())
def test_an_entity_written_with_the_schemes_escapes_is_masked(scrubber, scheme, kind):
    template, secret = CONTEXTS[kind]
    text = _written(template, SCHEMES[scheme])
    out = scrubber.scrub(text).text
    assert secret not in out, (text, out)
    assert out.split()[0] == text.split()[0] and out.split()[-1] == text.split()[-1]  # the words around stay


@pytest.mark.parametrize("at", NO_SEMICOLON.values(), ids=NO_SEMICOLON.keys())
def test_an_address_with_a_reference_without_semicolon_is_masked(scrubber, at):
    text = f"mail jane.doe{at}post.example.org now"
    assert scrubber.scrub(text).text == "mail <EMAIL> now"
    view = canonical(text)
    assert view.text == "mail jane.doe@post.example.org now"
    assert view.span(13, 14) == (13, 13 + len(at))


@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES.keys())
def test_the_view_reads_the_escape_and_maps_it_back_whole(scheme):
    at = SCHEMES[scheme]["@"]
    view = canonical(f"mail jane{at}example.org now")
    assert view.text == "mail jane@example.org now"
    assert view.span(9, 10) == (9, 9 + len(at))


@pytest.mark.parametrize(("text", "view"), [
    ("4111&nbsp1111&nbsp1111&nbsp1111", "4111\u00a01111\u00a01111\u00a01111"),  # legacy name without ";"
    ("&#64abc", "@abc"),  # ends at the first non-digit, as html.unescape's
    ("\\u{1F600}", "\U0001F600"),
    ("%uD83D%uDE00", "\U0001F600"),  # a surrogate pair as one, as JSON's
    # a text's \x40 in a JSON record's raw line (a rejected preview): written \\x40, as \\u0040 is read
    ("jane\\\\x40post.org \\\\u{40} \\\\U00000040", "jane@post.org @ @"),
])
def test_other_forms_read_as_html_unescape_and_the_languages_read_them(text, view):
    assert canonical(text).text == view


@pytest.mark.parametrize("text", [
    "?a=1&copy=2&not=3&para=x",  # a legacy name before "=" or a letter in a URL: HTML5 leaves it in an attribute
    "&notit; &copyright &commat",  # a legacy name before a letter; &commat has no form without ";"
    "&#" + "0" * 40 + "64;",  # more leading zeros than any real writer: the look-back's bound (docs/pii.md)
    "%uD83D alone, \\U00110000, \\u{110000}",  # a lone surrogate; past U+10FFFF
    "printf(\"%u items\", n)",  # C's %u: no four hex digits
])
def test_what_is_no_escape_or_not_read_stays(text):
    assert canonical(text).text == text


def test_a_reference_without_semicolon_before_an_escaped_digit_reads_the_digit_first():
    # "&#6%34" is a reference whose "4" a URL layer wrote: read as "&#64" (the outer layer's decoder's reading),
    # not as U+0006 and "4"
    assert canonical("jane&#6%34example.org").text == "jane@example.org"
    assert canonical("jane&#x4\\u0030post.org").text == "jane@post.org"
    assert canonical("jane&#64%65xample.org").text == "jane@example.org"  # %65 is "e": no digit of a decimal
