"""Escapes of other encodings that real decoders read (docs/pii.md): quoted-printable, what a mail archive's bodies
hold (``jane=40example.org``, soft line breaks ``=⏎``, ``=C2=A0``: read as Python's ``quopri`` reads them), and a URL
escape of a Latin-1 byte (``jos%E9@example.org``, a no-break space ``%A0`` between a number's groups: read as
``urllib.parse.unquote(..., "latin-1")`` reads it). An address, a phone number and a card so written are masked; code
and query values that merely look like them stay as written."""
from __future__ import annotations

import quopri
import urllib.parse

import pytest

from corpusforge.pipeline.pii.canonical import canonical
from corpusforge.pipeline.pii.config import PIIConfig

pytest.importorskip("presidio_analyzer")

from corpusforge.pipeline.pii.scrubber import Scrubber  # noqa: E402


@pytest.fixture(scope="module")
def scrubber() -> Scrubber:
    return Scrubber(PIIConfig(), salt="s" * 16)


def _qp(text: str) -> str:
    return quopri.decodestring(text.encode()).decode()


# (as written, what must not survive the scrub); each text is what quopri or unquote(latin-1) decodes to an entity
QUOTED_PRINTABLE = [
    ("mail jane.doe=40example.org now", "jane"),
    ("mail jane=2Edoe=40post=2Eexample=2Eorg now", "jane"),  # header Q-encoding escapes "." too
    ("mail jane.d=\noe@example.org now", "jane"),  # a soft line break inside the address
    ("mail jane.doe@exa=\r\nmple.org now", "jane"),
    ("call 202-555-=\n0173 today", "555"),
    ("card 4111 1111 11=\n11 1111 ok", "4111"),
    ("call 202=C2=A0555=C2=A00173 today", "555"),  # a no-break space, as UTF-8
    ("mail jos=C3=A9.doe=40example.org now", "doe"),  # an accented local part
    ("link <a href=3D\"https://example.org/c?phone=3D202+555+0173\">x</a> ok", "555"),  # "=" escaped in a page
    ("call 202=C2=\n=A0555=C2=A00173 today", "555"),  # wrapped at 76 columns between a character's bytes
    ("mail jos=C3=\r\n=A9.doe@example.org now", "doe"),
]
# A body in iso-8859-1 (the most common legacy mail charset: EmailMessage.set_content(..., charset="iso-8859-1")):
# each byte from 0xA0 up is a character of its own, read so right after a letter or digit (what quopri then latin-1
# decodes: the text of the reviewer's reproducer, with "=E9crivez" after a space left as written)
QP_LATIN1 = [
    ("call 202=A0555=A00173 today", "555"),
    ("card 4111=A01111=A01111=A01111 ok", "4111"),
    ("mail jos=E9.doe@example.org now", "doe"),
    ("mail jos=E9.doe=40example=2Eorg now", "doe"),
]
LATIN1 = [
    ("mail jos%E9.doe@example.org now", "doe"),
    ("mail jos%e9.doe%40example.org now", "doe"),
    ("call 202%A0555%A00173 today", "555"),
    ("card 4111%A01111%A01111%A01111 ok", "4111"),
    ("url ?to=ren%E9e%2540example.org now", "example"),  # the "@" encoded twice, the byte once
]


@pytest.mark.parametrize(("text", "secret"), QUOTED_PRINTABLE + QP_LATIN1 + LATIN1)
def test_an_entity_so_written_is_masked(scrubber, text, secret):
    out = scrubber.scrub(text).text
    assert secret not in out, (text, out)
    assert out.split()[0] == text.split()[0] and out.split()[-1] == text.split()[-1]  # the words around stay


@pytest.mark.parametrize(("text", "_"), QUOTED_PRINTABLE)
def test_the_view_reads_quoted_printable_as_quopri(text, _):
    if "href" in text:
        text = text.replace("+", "_")  # the view reads a form value's "+" as a space besides
    assert canonical(text).text.replace("\u2007", " ") == _qp(text).replace("\r\n", "\n").replace("\r", "")


@pytest.mark.parametrize(("text", "_"), QP_LATIN1)
def test_the_view_reads_a_latin1_body_as_quopri_then_latin1(text, _):
    assert canonical(text).text == quopri.decodestring(text.encode()).decode("latin-1")


@pytest.mark.parametrize(("text", "_"), LATIN1)
def test_the_view_reads_latin1_bytes_as_unquote(text, _):
    once = urllib.parse.unquote(text, "latin-1")
    assert canonical(text).text == urllib.parse.unquote(once, "latin-1")


def test_the_escape_maps_back_whole():
    view = canonical("mail jane=40example.org, jos%E9@example.org")
    assert view.span(9, 10) == (9, 12)
    assert view.text == "mail jane@example.org, josé@example.org"
    assert view.span(26, 27) == (28, 31)


def test_a_byte_sequence_split_across_levels_is_one_character():
    # "%C3%25A9": read per level as Latin-1, the first byte would be "Ã" before the next level makes "%A9"
    assert canonical("ren%C3%25A9e").text == "renée"
    assert canonical("x%C3x t%E9t%E9 a%C0%AF %C3%25A9").text == "xÃx tété aÀ\u0020\u0304 é"
    assert canonical("a%80%9f").text == "a%80%9f"  # C1 controls: left


@pytest.mark.parametrize("text", ["'%action' \"%default\" '%dd' .%f000Z %E9"])
def test_a_latin1_byte_after_no_letter_or_digit_stays(text):
    # format strings' directives: a URL escape of a Latin-1 character follows a character of its own word
    assert canonical(text).text == text


@pytest.mark.parametrize("text", [
    "phone=2125550173", "n=4015550173&x=20&y=4F",  # a value starting with hex digits: no escape before a digit
    "timeout=30 id=2D5 n=2E5 m=407",  # a digit after: a value
    "Title\n=====\n202-555-0173",  # a heading's rule ends its line with "=", after another "="
    "x=ab y=cd",  # letters: no encoder escapes them (nor a Latin-1 byte in lower case: RFC 2045 writes upper case)
    "color=ff0000 mask=fe iban=DE38+4733+9619 lang=DE country=BE.",  # a value: a country code stays an IBAN's
    "max_size=40), atol=2e-6, n=60,",  # before punctuation: a value
])
def test_what_quoted_printable_does_not_write_stays(text):
    assert canonical(text).text == text


def test_a_phone_number_as_a_query_value_is_still_read(scrubber):
    # "=21" is "!" in quoted-printable: before a digit it is a value (a New York number), not an escape
    assert scrubber.scrub("https://example.com/c?phone=2125550173&lang=en").text.count("5550173") == 0


# Other languages' escapes (as Perl, C and Python read them) and an address's "+" before an "@" so written
CODE_ESCAPES = [
    ("mail jane.doe\\x{40}example.org now", "jane"),  # Perl
    ("call 202\\x{2d}555\\x{2D}0173 today", "555"),
    ("mail jane.doe\\x040gmail.com now", "jane"),  # C's long hex escape, before no hex digit
    ("mail jane.doe\\N{COMMERCIAL AT}example.org now", "jane"),  # Python
    ("call 202\\N{HYPHEN-MINUS}555\\N{hyphen-minus}0173 today", "555"),
    ("url ?email=jane+tag\\x40example.org&x=1 now", "jane"),  # a form value's "+" in a local part: the address's
    ("url ?email=jane+tag\\u0040example.org&x=1 now", "jane"),
    ("url ?email=jane+tag%EF%BC%A0example.org&x=1 now", "jane"),
    ("url ?email=jane+tag&#64example.org&x=1 now", "jane"),
    ("url ?email=jane+tag=40example.org&x=1 now", "jane"),
]


@pytest.mark.parametrize(("text", "secret"), CODE_ESCAPES)
def test_an_entity_written_with_code_escapes_is_masked(scrubber, text, secret):
    out = scrubber.scrub(text).text
    assert secret not in out, (text, out)
    assert out.split()[0] == text.split()[0] and out.split()[-1] == text.split()[-1]


def test_code_escapes_are_read_as_their_languages_read_them():
    assert canonical("a\\x{40}b \\x{e9} \\N{commercial at} \\x040g").text == "a@b é @ @g"
    assert canonical('b"a\\x00b\\x00c" b"ustar\\x0000"').text == 'b"abc" b"ustar00"'  # Python's NUL, no C \x00b
    no_char = "\\x{110000} \\N{NO SUCH NAME} \\N{3} \\N{KEYCAP NUMBER SIGN}"  # the last: a named sequence
    assert canonical(no_char).text == no_char
    assert canonical("?email=jane+tag\\x40example.org&q=a+b").text == "?email=jane+tag@example.org&q=a\u2007b"
