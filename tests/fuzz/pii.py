"""Fuzz family ``pii``: planted personal data, pushed through random disguises, never leaves the scrubber.

One case plants values of every entity type the default configuration scrubs (e-mail, phone, card, IBAN, SSN,
IP, crypto wallet) in random places: a document's text, a metadata string, a metadata number (a card or phone
stored as an integer), an input file's name, and a malformed line whose preview cut (200 characters) falls inside the
value. Each value goes through random disguises first: format characters inside it (word joiner, ZWJ,
ZWNJ, soft hyphen, bidi controls, BOM), full width, its digits in another script (full-width, Arabic-Indic,
Devanagari, Bengali, Thai, mathematical bold), a line break inside a number, and escapes: any character as
a URL escape (upper or lower case hex; a space as ``%20`` anywhere; UTF-8 sequences of the format characters and
full-width letters), an HTML reference, encoded twice (``%2540``), an escape of one scheme inside another's
(``&#%36%34;``, ``%&#52;0``, ``\\u00%34%30``; in a rejected line ``&#\\u0036\\u0034;``), a form value's ``+`` for a
space in a query (``?phone=202+555+0173``; in a page's href, ``&amp;phone=202&#43;555``, a JSON string before ``\u0026``, or a lone
pair, ``curl -d "phone=202+555+0173"``), a rejected line's JSON escapes (``\n``, ``\u0040``). It is glued to what surrounds
it (``jane@example.org-3``, ``202-555-0173.Then``, ``ec2-81.2.69.160.compute.example.com``). Then it builds the inputs
(``corpusforge build`` and ``corpusforge report``) and searches every file of the run directory, read the
canonical way (shards and JSON decoded to their strings, HTML unescaped, then ``corpusforge.pipeline.pii.canonical``;
and again read by the decoders round after round, ``_decoded``, not by the view under test), for
each value and for its start (a value cut in half leaks too). And values as written beside escapes of every kind the
view reads (``beside_escapes``, a file of their own), where the text as written shows them to the recognizers: the
view only adds to what the text as written shows (outputs are searched as written too). And values glued to the escapes the view's
ambiguous readings read (``glued_to_newer``, a file of their own), where the view without them masks them: no newer
reading unmasks what the older ones masked. Any hit is a failure: no file a build writes
may hold a planted value (no ``pii.audit_file`` is configured, the one file allowed to).
"""
from __future__ import annotations

import codecs
import collections
import contextlib
import functools
import html
import io
import json
import os
import pathlib
import random
import re
import string
import sys
import unicodedata

FAMILY = "pii"
TRIED: collections.Counter = collections.Counter()

FORMAT_CHARS = ["\u2060", "\u200b", "\u200c", "\u200d", "\u00ad", "\u202e", "\u202a", "\u2066", "\u2069", "\ufeff"]
DIGIT_ZEROS = [0xFF10, 0x0660, 0x06F0, 0x0966, 0x09E6, 0x0E50, 0x1D7CE]
PROSE = ("The river runs through the old town and past the mill, where the miller kept his accounts in a heavy "
         "ledger bound in leather. Every spring the water rose over the lower fields and the farmers moved their "
         "sheep to the hills, waiting for the flood to pass before they sowed barley again in the dark soil.")
DOMAINS = ["example.org", "mail.example.com", "post.example.de", "example.co.uk", "web.example.net"]


def _luhn_card(rng: random.Random) -> str:
    digits = [4] + [rng.randrange(10) for _ in range(14)]
    total = 0
    for i, d in enumerate(reversed(digits)):
        d = d * 2 if i % 2 == 0 else d
        total += d - 9 if d > 9 else d
    digits.append((10 - total % 10) % 10)
    s = "".join(map(str, digits))
    groups = [s[0:4], s[4:8], s[8:12], s[12:16]]
    if rng.random() < 0.2:  # separators mixed, or dots: "4111 1111-1111.1111"
        return groups[0] + "".join(rng.choice([" ", "-", "."]) + g for g in groups[1:])
    return rng.choice([" ", "-", "", "."]).join(groups)


def _iban(rng: random.Random) -> str:
    bban = "".join(rng.choice(string.digits) for _ in range(18))
    check = 98 - int(bban + "131400") % 97  # DE = 13 14
    value = f"DE{check:02d}{bban}"
    value = " ".join(value[i:i + 4] for i in range(0, len(value), 4)) if rng.random() < 0.5 else value
    return value.lower() if rng.random() < 0.25 else value  # banks read IBANs in any case


def _global_ipv4(rng: random.Random) -> str:
    return f"{rng.choice([8, 23, 45, 81, 151])}.{rng.randint(1, 254)}.{rng.randint(1, 254)}.{rng.randint(1, 254)}"


def _email(rng: random.Random, first: str, last: str) -> str:
    """An address in one of the mailbox forms of RFC 5321: a dot-atom, a quoted local part (with a space or a
    dot inside), an address literal (IPv4, or a tagged IPv6: private or not, the mailbox is someone's)."""
    local = first + rng.choice([".", "_", ""]) + last
    form = rng.choice(["atom", "atom", "atom", "quoted", "literal"])
    if form == "quoted":
        return f'"{first}{rng.choice([" ", "."])}{last}"@{rng.choice(DOMAINS)}'
    if form == "literal":
        host = rng.choice([_global_ipv4(rng), f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                           f"IPv6:2001:db8::{rng.randint(1, 0xffff):x}", f"IPv6:2a00:1450:4001:82a::{rng.randint(1, 0xffff):x}"])
        return f"{local}@[{host}]"
    return f"{local}@{rng.choice(DOMAINS)}"


def values(rng: random.Random) -> dict[str, tuple[str, str]]:
    """kind -> (the cue written before it, the plain value)."""
    first = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(6, 10)))
    last = "".join(rng.choice(string.ascii_lowercase) for _ in range(5))
    area = rng.choice([201, 202, 212, 312, 415, 617, 718])
    line = f"{rng.randint(100, 199):04d}"
    return {
        "email": ("write to", _email(rng, first, last)),
        # dotted: with the calling code and no "+" too (1.202.555.0173, 33.1.42.68.53.00), which look like versions
        "phone": ("call", rng.choice([f"+1-{area}-555-{line}", f"+1 {area} 555 {line}",
                                     f"+44 20 7946 {rng.randint(1000, 9999)}", f"+1.{area}.555.{line}",
                                     f"1.{area}.555.{line}", f"{area}.555.{line}",
                                     f"33.1.{rng.randint(42, 49)}.{rng.randint(10, 99)}.{rng.randint(10, 99)}.{rng.randint(10, 99)}",
                                     f"03-{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}"])),
        "card": ("paid with card", _luhn_card(rng)),
        "iban": ("IBAN", _iban(rng)),
        "ssn": ("SSN", f"{rng.randint(100, 665)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}"),
        "ip": ("from IP address", _global_ipv4(rng)),
        "crypto": ("send to wallet", "0x" + "".join(rng.choice("0123456789abcdef") for _ in range(40))),
    }


def disguise(rng: random.Random, kind: str, value: str, line_breaks: bool = True) -> str:
    """``value`` through a random subset of the disguises (maybe none)."""
    if rng.random() < 0.4 and kind != "ip":
        value = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and not c.isdigit() else c for c in value)
    if rng.random() < 0.5:
        zero = rng.choice(DIGIT_ZEROS)
        value = "".join(chr(zero + int(c)) if "0" <= c <= "9" else c for c in value)
    if line_breaks and rng.random() < 0.3 and kind in ("phone", "card", "iban", "ssn"):
        seps = [i for i, c in enumerate(value) if c in " -" and i and _digitlike(value[i - 1])]
        if seps:
            i = rng.choice(seps)
            value = value[:i] + (" \n" if value[i] == " " else "-\n") + value[i + 1:]
    if rng.random() < 0.6:
        chars = list(value)
        for _ in range(rng.randint(1, 3)):
            chars.insert(rng.randint(1, len(chars) - 1), rng.choice(FORMAT_CHARS))
        value = "".join(chars)
    return value


# Where a value sits in a text: inside a URL (an IP as its host, an address in its query), in markup, after a
# label with no space. What surrounds it is no part of the value: the needles are the value's.
CONTEXTS = {
    "ip": [("http://", "/index.html"), ("https://", ":8443/login"), ("IP:", ""), ("host=", ""),
           ("ssh admin@", ""), ("", ":8080"), ("[", "]"), ("http://example.org/x/", "/y"),
           ("https://example.org/log?ip=", "&lang=en"), ("GET /api/clients/", " 200"),
           ("ec2-", ".compute.example.com"), ("", ".dyn.example.net"),  # a host name's label: dashed (build_case)
           ("host-", ".compute-1.example.com"), ("", ".Then")],  # dotted after a dash (build_case); a full stop
    "email": [("https://example.com/reset?user=", "&lang=en"), ("mailto:", ""), ("<", ">"), ("(", ")"),
              ("email=", ";"), ("", "-3"), ("", "_2024"), ("", ".Then"),  # glued to what follows
              ("https://www.example.com/some/long/path/to/the/form/handler?utm_source=newsletter&email=", "&x=1")],
    "phone": [("tel:", ""), ("https://example.com/contact?n=", "&lang=en"), ("phone=", ";"), ("tel=", ""),
              ("", ".Then"), ("Jane Doe,", ",NY")],  # glued: a full stop and a word, a CSV row
    "any": [("(", ")"), ("<b>", "</b>"), ("[", "]"), ('"', '"')],
}
# "@" as a URL or HTML escape writes it: ``jane%40example.org`` in a query, ``jane&#64;example.org`` in a page.
AT_ESCAPES = ["%40", "&#64;", "&#x40;", "&commat;", "&#0064;", "%40"]
# The other characters values are written with, as URL escapes, numeric and named HTML references (each named
# one stands for that very character: ``&hyphen;`` is U+2010, not "-", so it is not here). ``%20`` only between
# the groups of a number (the view reads it there only: ``%20`` in "100%20 off" or a URL's path stays as written).
ESCAPES = {
    "@": AT_ESCAPES, ".": ["%2E", "&#46;", "&#x2e;", "&period;"], "-": ["%2D", "&#45;", "&#x2D;"],
    "+": ["%2B", "&#43;", "&plus;"], ":": ["%3A", "&#58;", "&colon;"], "[": ["%5B", "&#91;", "&lsqb;"],
    "]": ["%5D", "&#93;", "&rsqb;"], '"': ["%22", "&#34;", "&quot;"], "/": ["%2F", "&#47;", "&sol;"],
    "(": ["%28", "&#40;", "&lpar;"], ")": ["%29", "&#41;", "&rpar;"], " ": ["&#32;", "&nbsp;", "%20"],
}
# Characters of no value written as UTF-8 URL escapes (upper or lower case): format characters and full-width forms,
# which the view reads as it reads the characters themselves.
UTF8_ESCAPES = {"@": ["%EF%BC%A0", "%ef%bc%a0"], ".": ["%EF%BC%8E"], "-": ["%EF%BC%8D"]}
UTF8_INSERTS = ["%E2%81%A0", "%e2%80%8b", "%E2%80%8D", "%C2%AD"]  # word joiner, ZWSP, ZWJ, soft hyphen


def _url_escape(rng: random.Random, code: str) -> str:
    """A URL escape as people write it: either case of hex, now and then encoded again (``%2540``: a redirect's
    URL inside a query)."""
    if rng.random() < 0.3:
        code = code.lower()
    if rng.random() < 0.2:
        code = "%25" + code[1:]
    return code


def form_value(rng: random.Random, value: str) -> str:
    """``value`` as a form-encoded query value (application/x-www-form-urlencoded): a space as ``+``, a ``+`` as
    ``%2B`` or left as written at the start (``phone=+1+202…``), an "@" as ``%40`` or not."""
    out = []
    for i, c in enumerate(value):
        if c == " ":
            out.append("+")
        elif c == "+":
            out.append("+" if i == 0 and rng.random() < 0.5 else "%2B")
        elif c in "@\"" and rng.random() < 0.5:
            out.append(f"%{ord(c):02X}")
        else:
            out.append(c)
    return "".join(out)


def context(rng: random.Random, kind: str) -> tuple[str, str]:
    """A random ``(before, after)`` for a value of ``kind`` (often none)."""
    if rng.random() < 0.5:
        return "", ""
    return rng.choice(CONTEXTS.get(kind, []) + CONTEXTS["any"])


def escape(rng: random.Random, kind: str, value: str) -> str:
    """Some of a value's characters as URL or HTML escapes, before any other disguise: an address's ``@``
    (and now and then its dots), and for a value of any kind its separators and punctuation (``.``, ``-``,
    ``+``, ``:``, ``[``, quotes, spaces...), now and then a digit (``&#52;``). Each character of the value is
    escaped once at most (an escape inside an escape, ``&#&#52;8;``, is no escape of anything: the view reads
    one pass, as a browser does; only an escape whose "%" or "&" is itself escaped is read again: ``%2540``)."""
    at = kind == "email" and rng.random() < 0.4
    dots = at and rng.random() < 0.2
    share = rng.choice([0.3, 1.0]) if rng.random() < 0.3 else 0.0
    out = []
    for c in value:
        if c == "@" and at:
            code = rng.choice(AT_ESCAPES + UTF8_ESCAPES["@"])
            out.append(_url_escape(rng, code) if code.startswith("%") else code)
        elif c == "." and dots:
            out.append(_url_escape(rng, "%2E"))
        elif c in ESCAPES and rng.random() < share:
            code = rng.choice(ESCAPES[c] + UTF8_ESCAPES.get(c, []))
            out.append(_url_escape(rng, code) if code.startswith("%") else code)
        elif c.isdigit() and rng.random() < share / 10:
            out.append(f"&#{ord(c)};" if rng.random() < 0.5 else _url_escape(rng, f"%{ord(c):02X}"))
        else:
            out.append(c)
        if share and c != "@" and rng.random() < share / 10:
            out.append(rng.choice(UTF8_INSERTS))  # an escaped format character inside the value
    return "".join(out)


# Escapes of a character that real decoders read besides a URL escape, a reference with ";" and JSON's \uXXXX
# (docs/pii.md): HTML5's numeric references with leading zeros (any count: up to the view's bound of 31 digits) or
# without ";", JavaScript/Python/C's ``\x40``, JavaScript/Rust/Swift's ``\u{40}``, Python/C's ``\U00000040``,
# JavaScript's old ``escape()``'s ``%u0040``.
DECODED_CHARS = "@.-: "


def decoder_escape(rng: random.Random, c: str, after: str) -> str:
    """``c`` (ASCII) as one of those escapes; without ";" only where HTML5 ends the reference before ``after`` (the
    next character: no digit, for hex no hex digit, no introducer of an escape that may be a digit of it)."""
    zeros = "0" * rng.choice([0, 1, 3, 8, 20])
    forms = [f"&#{zeros}{ord(c)};", f"&#{rng.choice('xX')}{zeros}{ord(c):x};", f"\\x{ord(c):02x}",
             f"\\x{ord(c):02X}", f"\\u{{{zeros[:6]}{ord(c):x}}}", f"\\U{ord(c):08x}", f"%u{ord(c):04X}",
             f"%u{ord(c):04x}"]
    if after and not after.isdigit() and after not in "%&\\":
        forms.append(f"&#{zeros}{ord(c)}")
        if after not in "0123456789ABCDEFabcdef":
            forms.append(f"&#x{zeros}{ord(c):x}")
    return rng.choice(forms)


def decoder_escapes(rng: random.Random, value: str) -> str:
    """Some of ``value``'s ``DECODED_CHARS`` as ``decoder_escape``s (at least one where it holds any)."""
    at = [i for i, c in enumerate(value) if c in DECODED_CHARS]
    if not at:
        return value
    picked = {i for i in at if rng.random() < 0.5} | {rng.choice(at)}
    return "".join(decoder_escape(rng, c, value[i + 1:i + 2]) if i in picked else c for i, c in enumerate(value))


# Escapes of other encodings real decoders read (docs/pii.md): quoted-printable, a mail archive's bodies and headers
# (``jane=40example.org`` as header Q-encoding escapes "@" and "." before a letter, a no-break space ``=C2=A0`` between
# a number's groups, soft line breaks ``=⏎`` anywhere), and a URL escape of a Latin-1 byte (``jos%E9@…``, a no-break
# space ``%A0`` between a number's groups). Each written form is checked with the real decoder (``quopri``,
# ``urllib.parse.unquote(..., "latin-1")``): the plant is what that decoder reads.
def quoted_printable(rng: random.Random, kind: str, value: str, soft_breaks: bool = True) -> str:
    """``value`` (plain ASCII) quoted-printable: some "@" and "." before a letter escaped, spaces between digits as
    ``=C2=A0``, a non-ASCII letter in an address's local part as its UTF-8 bytes, and maybe soft line breaks. One
    body in three is iso-8859-1 (the most common legacy mail charset): a no-break space ``=A0``, a letter one byte
    (``jos=E9``, after a letter or digit); in UTF-8 a soft break may fall between a character's bytes
    (``=C2=⏎=A0``, as an encoder wrapping at 76 columns writes it)."""
    import quopri

    charset = "latin-1" if rng.random() < 1 / 3 else "utf-8"
    units = []
    for i, c in enumerate(value):
        after = value[i + 1:i + 2]
        if c in "@." and after.isalpha() and rng.random() < 0.7:
            units.append(f"={ord(c):02X}")
        elif c == " " and kind != "email" and rng.random() < 0.6:
            units.append("=A0" if charset == "latin-1" else rng.choice(["=C2=A0", "=C2=A0", "=C2=\n=A0"]))
        elif c == "=":
            units.append("=3D")
        else:
            units.append(c)
    if kind == "email" and not value.startswith('"') and value[:1].isalnum() and rng.random() < 0.5:
        escapes = [f"={b:02X}" for b in rng.choice("éüñß").encode(charset)]  # an accented local part
        cut = len(escapes) > 1 and rng.random() < 0.3  # a soft break between its bytes
        units.insert(1, escapes[0] + ("=\n" if cut else "") + "".join(escapes[1:]))
    if soft_breaks:
        for _ in range(rng.randint(0, 2)):
            units.insert(rng.randint(1, len(units) - 1), "=\n")
    written = "".join(units)
    decoded = quopri.decodestring(written.encode()).decode(charset)
    assert decoded.replace("\u00a0", " ").replace("\n", "") == "".join(
        u if not u.startswith("=") or u == "=\n" else quopri.decodestring(u.encode()).decode(charset) for u in units
    ).replace("\u00a0", " ").replace("\n", ""), (written, decoded)
    return written


def latin1_escapes(rng: random.Random, kind: str, value: str) -> str:
    """``value`` with URL escapes of Latin-1 bytes: a space between digits as ``%A0``, a Latin-1 letter after a
    letter of an address's local part (``jos%E9``)."""
    import urllib.parse

    out = []
    for i, c in enumerate(value):
        out.append("%A0" if c == " " and kind != "email" and rng.random() < 0.7 else c)
    written = "".join(out)
    if kind == "email" and value[:1].isalpha() and rng.random() < 0.8:
        written = written[0] + rng.choice(["%E9", "%e9", "%FC", "%F1", "%DF"]) + written[1:]
    assert "%" not in urllib.parse.unquote(written, "latin-1")
    return written


# Other languages' escapes of a character (docs/pii.md): Perl's ``\x{40}``, C's long ``\x040`` (before no hex digit:
# C reads every hex digit), Python's ``\N{COMMERCIAL AT}`` (checked with Python's own ``unicode_escape`` codec).
def code_escapes(rng: random.Random, value: str) -> str:
    """Some of ``value``'s ``DECODED_CHARS`` (at least one where it holds any) as one of those escapes."""
    import codecs
    import unicodedata

    from corpusforge.pipeline.pii.canonical import fold

    at = [i for i, c in enumerate(value) if c in DECODED_CHARS]
    if not at:
        return value
    picked = {i for i in at if rng.random() < 0.5} | {rng.choice(at)}
    out = []
    for i, c in enumerate(value):
        if i not in picked:
            out.append(c)
            continue
        # the next character the view reads (format characters removed, digits of any script and full-width
        # letters folded): C's long escape only before no hex digit as the view reads it (docs/pii.md)
        after = next((fold(d) for d in value[i + 1:] if fold(d)), "")[:1]
        forms = [f"\\x{{{ord(c):x}}}", f"\\x{{{ord(c):04X}}}", f"\\N{{{unicodedata.name(c)}}}",
                 f"\\N{{{unicodedata.name(c).lower()}}}"]
        if (after not in "0123456789ABCDEFabcdef" or not after) and ord(c) >= 0x20:
            forms.append(f"\\x0{ord(c):02x}")
        code = rng.choice(forms)
        if code.startswith("\\N"):
            assert codecs.decode(code, "unicode_escape") == c
        out.append(code)
    return "".join(out)


# Escapes a mail archive, a web page, source code or a log carries (docs/pii.md), each checked with its real decoder:
# a header's MIME encoded-word (``email.header.decode_header``: Q with "_" for a space and any byte as ``=XX``, or B,
# base64, in a charset mail is written in), a body quoted-printable by an encoder that escapes every space
# (``quotetabs=True``: ``=20``) or every punctuation character (``=2B1=20202=2D555=2D0173``, ``zhang=2Ewei=40163``), a
# soft line break with spaces after its "=", a Latin-1 URL byte after ")" or "@", C's octal, CSS's hex escape
# (``\40 ``, ``\000040``), Perl's ``\@``, and a form value's address whose local part holds escapes between its
# "+" and its escaped "@".
MAIL_CHARSETS = ["utf-8", "UTF-8", "iso-8859-1", "ISO-8859-15", "windows-1252", "iso-8859-2", "koi8-r", "us-ascii"]


def encoded_word(rng: random.Random, value: str) -> str:
    """``value`` as one MIME encoded-word (or two, split anywhere, a space between: read as one)."""
    import base64
    import email.header

    charset = rng.choice(MAIL_CHARSETS)
    data = value.encode(charset)
    if rng.random() < 0.5:
        cut = rng.randint(1, len(data) - 1) if len(data) > 1 and rng.random() < 0.3 else len(data)
        parts = [data[:cut], data[cut:]] if cut < len(data) else [data]
        words = []
        for part in parts:
            body = "".join("_" if b == 0x20 else chr(b) if chr(b).isalnum() and rng.random() < 0.8 else f"={b:02X}"
                           for b in part)
            words.append(f"=?{charset}?{rng.choice('qQ')}?{body}?=")
        written = rng.choice([" ", "\n "]).join(words)
    else:
        written = f"=?{charset}?{rng.choice('bB')}?{base64.b64encode(data).decode()}?="
    decoded = "".join(p if isinstance(p, str) else p.decode(c or "ascii")
                      for p, c in email.header.decode_header(written))
    assert decoded == value, (written, decoded)
    return written


def mixed_words(rng: random.Random, value: str) -> str:
    """``value`` as a run of one to three MIME encoded-words, each Q or B (mixed), cut at characters: read as one."""
    import base64
    import email.header

    charset = rng.choice(MAIL_CHARSETS)
    cuts = sorted(rng.sample(range(1, len(value)), min(len(value) - 1, rng.choice([0, 1, 2]))))
    words = []
    for part in (value[a:b] for a, b in zip([0] + cuts, cuts + [len(value)])):
        data = part.encode(charset)
        if rng.random() < 0.5:
            words.append(f"=?{charset}?{rng.choice('bB')}?{base64.b64encode(data).decode()}?=")
        else:
            body = "".join("_" if b == 0x20 else chr(b) if chr(b).isalnum() and rng.random() < 0.8 else f"={b:02X}"
                           for b in data)
            words.append(f"=?{charset}?{rng.choice('qQ')}?{body}?=")
    written = "".join(rng.choice([" ", "\n "]) + w for w in words)[1:].lstrip()
    decoded = "".join(p if isinstance(p, str) else p.decode(c or "ascii")
                      for p, c in email.header.decode_header(written))
    assert decoded == value, (written, decoded)
    return written


def qp_every(rng: random.Random, value: str) -> str:
    """``value`` quoted-printable by an encoder that escapes every space (``quopri``'s ``quotetabs``) or every
    character but letters and digits, and maybe a soft line break with spaces or a tab after its "="."""
    import quopri

    if rng.random() < 0.5:
        written = quopri.encodestring(value.encode(), quotetabs=True).decode()
    else:
        written = "".join(c if c.isalnum() else f"={ord(c):02X}" for c in value)
    if rng.random() < 0.4 and len(written) > 2:
        cut = rng.randint(1, len(written) - 1)
        if "=" not in written[max(0, cut - 2):cut]:
            written = written[:cut] + "=" + rng.choice([" ", "\t", "  ", " \t"]) + "\n" + written[cut:]
    return written


def code_and_style(rng: random.Random, kind: str, value: str) -> str:
    r"""Some of ``value``'s "@", ".", "-", "+", ":" and spaces as C's octal (``\100``), CSS's hex escape (``\40 ``,
    ``\000040``) or, an "@", Perl's ``\@``; a Latin-1 URL byte after ")" or "@" (``(202)%A0555``)."""
    import codecs

    out = []
    for i, c in enumerate(value):
        after = value[i + 1:i + 2]
        if c in "@.-+: " and rng.random() < 0.6:
            forms = [f"\\{ord(c):03o}", f"\\{ord(c):06x}", f"\\{ord(c):x} "]
            if after and after not in "0123456789ABCDEFabcdef":
                forms.append(f"\\{ord(c):X}\n")
            if c == "@":
                forms.append("\\@")
            code = rng.choice(forms)
            if len(code) == 4 and code[1:].isdigit():  # octal: as Python reads it
                assert codecs.decode(code, "unicode_escape") == c
            out.append(code)
        elif c == " " and i and value[i - 1] == ")" and rng.random() < 0.7:
            out.append("%A0")
        else:
            out.append(c)
    if kind == "email" and value[:1].isalpha() and rng.random() < 0.4:  # an accented letter as its UTF-8 bytes
        data = rng.choice("éüñßœ").encode("utf-8")
        octal = rng.random() < 0.5
        out.insert(1, "".join(f"\\{b:03o}" if octal else f"\\x{b:02x}" for b in data))
    return "".join(out)


# Escapes of style sheets and code the view reads since 1b5dd09 (docs/pii.md), each checked with a decoder of its own
# (``_css_reference``: CSS Syntax 3's; Python's ``unicode_escape`` for bytes; ``re.escape`` for identity escapes): CSS's
# hex escape not ended by a whitespace (``\40g``), of a full-width form (``\FF20 ``); an escaped punctuation
# character (``\.``, ``\-``, ``\ ``: re.escape, Markdown, a shell); a Latin-1 letter in a local part as a byte escape
# of no UTF-8 sequence (``\351``, ``\xe9``) or CSS's (``\fc ``, ``m\fcller``).
def _css_reference(text: str) -> str:
    def one(m: re.Match) -> str:
        return chr(int(m.group(1), 16)) if m.group(1) else m.group(2)
    return re.sub(r"\\(?:([0-9A-Fa-f]{1,6})(?:\r\n|[ \t\n\r\f])?|(.))", one, text)


def styles_and_bytes(rng: random.Random, kind: str, value: str) -> tuple[str, str]:
    """``(written, what it stands for)``: some of ``value``'s punctuation and spaces as those escapes, and for an
    address maybe a Latin-1 letter added to its local part as one."""
    import codecs
    import unicodedata

    out, meant = [], []
    for i, c in enumerate(value):
        after = value[i + 1:i + 2]
        if c in "@.-+_() " and rng.random() < 0.6:
            forms = ["\\" + c]
            if c != " ":
                forms.append("\\" + unicodedata.lookup("FULLWIDTH " + unicodedata.name(c)).encode(
                    "unicode_escape").decode()[2:].lstrip("0").upper() + " ")
            if after and after not in "0123456789ABCDEFabcdef \t\n\r\f":  # CSS reads every hex digit, one space
                forms += [f"\\{ord(c):x}", f"\\{ord(c):04X}"]
            code = rng.choice(forms)
            if code[1:2] in ("", c):
                assert re.escape(c) in (code, c), (c, code)
            else:
                assert unicodedata.normalize("NFKC", _css_reference(code)) == c, (c, code)
            out.append(code)
        else:
            out.append(c)
        meant.append(c)
    if kind == "email" and value[:1].isalpha() and rng.random() < 0.5:
        letter = rng.choice("éüñàø")
        after = value[1:2]
        forms = [f"\\{ord(letter):03o}", f"\\x{ord(letter):02x}", f"\\{ord(letter):x} "]
        if after and after not in "0123456789ABCDEFabcdef":
            forms.append(f"\\{ord(letter):x}")
        code = rng.choice(forms)
        assert (codecs.decode(code, "unicode_escape") if code[1] in "x3" and " " not in code
                else _css_reference(code)) == letter, code
        out.insert(1, code)
        meant.insert(1, letter)
    return "".join(out), "".join(meant)


# An escape whose characters after its introducer another scheme may write (docs/pii.md): a numeric HTML reference's
# digits, a URL escape's hex digits, a JSON ``\\uXXXX``'s hex digits.
_NESTABLE = re.compile(r"&#[xX]?[0-9A-Fa-f]{1,7};|%[0-9A-Fa-f]{2}|\\\\u[0-9A-Fa-f]{4}")


def _inner_escape(rng: random.Random, c: str, outer: str) -> str:
    """``c`` as an escape of another scheme than ``outer`` ("%", "&" or "\\")."""
    scheme = rng.choice([s for s in "%&\\" if s != outer])
    if scheme == "%":
        return _url_escape(rng, f"%{ord(c):02X}")
    if scheme == "&":
        return rng.choice([f"&#{ord(c)};", f"&#x{ord(c):x};"])
    return f"\\u{ord(c):04x}"


def nest(rng: random.Random, value: str) -> str:
    """Some of ``value``'s escapes written with escapes of another scheme inside (a layer of encoding written
    inside another's escape): a reference's digits as URL escapes or JSON's ``\\uXXXX`` (``&#%36%34;``,
    ``&#\\u0036\\u0034;``), a URL escape's hex digits as references or ``\\uXXXX`` (``%&#52;0``, ``%\\u0034\\u0030``,
    one byte of ``%EF%BC%A0``), a ``\\uXXXX``'s as URL escapes or references (``\\u00%34%30``). Never the same
    scheme (``&#&#52;8;`` is text and an escape met by chance: one pass reads ``&#48;``). Each escape's first
    character after its introducer (``#`` aside) on: at least one of them nested."""
    def one(m: re.Match) -> str:
        code = m.group()
        if rng.random() < 0.4:
            return code
        outer = code[0]
        at = {"%": 1, "\\": 2, "&": 3 if code[2] in "xX" else 2}[outer]
        body, tail = (code[at:-1], ";") if outer == "&" else (code[at:], "")
        picked = [rng.random() < 0.6 for _ in body]
        picked[rng.randrange(len(body))] = True
        return code[:at] + "".join(_inner_escape(rng, c, outer) if p else c for c, p in zip(body, picked)) + tail

    return _NESTABLE.sub(one, value)


def _json_inside_references(rng: random.Random, raw: str) -> str:
    """A raw JSON line's writer escaping characters inside a reference whose ``&#`` it wrote literally (any character
    may be written ``\\uXXXX``): ``&#\\u0036\\u0034;`` (``pii --seed 1161 --case 18``: ``&#\\u096c\\u096a;``, the
    Devanagari digits of ``&#६४;``), or inside a URL escape, ``%\\u0034\\u0030``."""
    def one(m: re.Match) -> str:
        code = m.group()
        at = 1 if code[0] == "%" else 3 if code[2] in "xX" else 2
        end = len(code) - (code[0] == "&")
        return code[:at] + "".join(f"\\u{ord(c):04x}" if rng.random() < 0.7 else c for c in code[at:end]) + code[end:]

    return re.sub(r"&#[xX]?(?:[0-9A-Fa-f]|\d){1,7};|%[0-9A-Fa-f]{2}", one, raw)  # \d: a digit of any script


def _digitlike(c: str) -> bool:
    return c.isdecimal()


def _plain(text: str) -> str:
    """``text`` read the canonical way, a no-break space and a URL's escaped space (``%20``, U+2007 in the view) as
    a space: needles and outputs meet whichever way a space was written."""
    from corpusforge.pipeline.pii.canonical import canonical

    return canonical(text).text.replace("\u00a0", " ").replace("\u2007", " ")  # URL_SPACE


def needles(kind: str, value: str, plain: str | None = None) -> list[str]:
    """What must not appear in an output, read the canonical way: the value, its digits run together (a
    number stored as an integer), and its start (a value cut in half: the local part and ``@``; 3 digits
    short of a whole number). ``plain``: the value as the view reads it where it was planted, when its context
    changes that (a form value's ``+`` is a space only in a query)."""
    plain = _plain(value) if plain is None else plain
    out = [plain]
    if kind == "email":
        local = plain.rpartition("@")[0]
        out.append(local + "@")
        if local.startswith('"'):  # a quoted local part: its content (a JSON file writes the quotes \")
            out.append(local.strip('"'))
        # the local part's first six letters (random, so found nowhere else): an address masked from its middle
        # on leaks its start ("jane\" of jane\u2060@… read without the escape)
        out.append(local.strip('"')[:6])
    else:
        digits = "".join(c for c in plain if c.isdigit())
        if len(digits) >= 9:
            out.append(digits)
        out.append(plain[:-3])
    # never a needle found in any text: a value the view cannot read as one (no "@" in it) would give "" and "@"
    return [needle for needle in out if len(needle) >= 4]


# Values beside escapes (docs/pii.md, "the view only adds"): a value written as it is, immediately before or after an
# escape of every kind the view reads, glued or behind a separator, maybe twice around one escape. The view's reading
# of an escape can glue the value to a neighbour or read its digits as a character (adjacent encoded-words joined put
# a number against the next word's letter, "\\151.155.246.51" read "\\i.155...", one quoted-printable escape in a
# word read "phone=2125550173" as "=21" and digits): the scrubber then masks what the recognizers find in the text as
# written (``written_additions``). Only a context where they do find it is planted: where the text as written hides
# the value from them too (``x/537-32-3080``, ``\101537-32-3080``: no word boundary, a recognizer's own limit in
# plain text, not the view's), the view's reading is all there is and no promise of this class holds.
BESIDE_ESCAPES = [
    # MIME encoded-words whole and in parts (RFC 2047: adjacent words are read as one), a Q word's "_" for a space
    "=?utf-8?q?x?=", "=?utf-8?b?eA==?=", "=?iso-8859-1?q?Caf=E9?=", "=?utf-8?q?", "=?utf-8?b?", "?=", "_",
    # quoted-printable: "=" escaped, a UTF-8 sequence, a space, punctuation, a Latin-1 byte, soft line breaks
    "=3D", "=C3=A9", "=20", "=2E", "=40", "=E9", "=\n", "= \n",
    # code: an escaped backslash, C's octal, a UTF-8 sequence as byte escapes, hex of any length, Perl's \x{40} and
    # \@, Rust's \u{40}, Python's \U and \N{...}, CSS's hex ended by a space or six digits long
    "\\\\", "\\101", "\\100", "\\303\\251", "\\xc3\\xa9", "\\x41", "\\x40", "\\x{40}", "\\x040", "\\u{40}",
    "\\U00000040", "\\N{COMMERCIAL AT}", "\\40 ", "\\000040", "\\@",
    # JSON strings: \uXXXX (in a JSON string inside one: \\u0040), a surrogate pair, short escapes
    "\\u0040", "\\\\u0040", "\\u00e9", "\\ud83d\\ude00", "\\n", "\\t", "\\/",
    # HTML references: named, numeric, with and without ";", legacy names without it
    "&amp;", "&#64;", "&#64", "&#x40;", "&#x40", "&nbsp;", "&nbsp", "&copy", "&#32;", "&#0000046", "&commat;",
    # URL escapes: a space, "@", ".", UTF-8 sequences (a format character), %uXXXX, Latin-1 bytes, encoded twice; a
    # form value's "+"
    "%20", "%40", "%2E", "%C3%A9", "%E2%81%A0", "%u0040", "%A0", "%E9", "%2540", "+",
    # escapes inside another scheme's
    "&#%36%34;", "%&#52;0",
]
# What stands between a value and an escape (tests/pipeline/pii/test_view_only_adds.py): nothing, a space, a CSV's
# comma, a key's "=", a path's separators, a folded header's line break, a query's "&", the next pair of a row.
BESIDE_SEPARATORS = ["", " ", ",", "=", "\\", "/", "\n ", "&", ",k="]


def _scrubbed_as_written(text: str) -> str:
    """``text`` scrubbed with no view (the default configuration, as the build's): what the recognizers find in it as
    written is masked, nothing else."""
    from unittest import mock

    from corpusforge.pipeline.pii import scrubber as scrubber_module
    from corpusforge.pipeline.pii.canonical import Canonical
    from corpusforge.pipeline.pii.config import PIIConfig

    global _AS_WRITTEN
    if _AS_WRITTEN is None:
        _AS_WRITTEN = scrubber_module.Scrubber(PIIConfig(), salt="s" * 16)
    with mock.patch.object(scrubber_module, "canonical", lambda t, ambiguous=True, tier=None: Canonical(t, t, None)):
        return _AS_WRITTEN.scrub(text).text


_AS_WRITTEN = None


def beside_fragment(rng: random.Random, value: str) -> str:
    """``value`` beside escapes: ``escape sep value sep escape``, either side maybe bare, an escape maybe two, and
    now and then the value again after the second escape."""
    def escapes() -> str:
        return "".join(rng.choice(BESIDE_ESCAPES) for _ in range(rng.choice([1, 1, 1, 2])))

    before = escapes() + rng.choice(BESIDE_SEPARATORS) if rng.random() < 0.85 else ""
    after = rng.choice(BESIDE_SEPARATORS) + escapes() if not before or rng.random() < 0.85 else ""
    if after and rng.random() < 0.3:
        after += rng.choice(BESIDE_SEPARATORS) + value
    return before + value + after


def beside_escapes(rng: random.Random, data: pathlib.Path) -> list[tuple[str, str, str, str]]:
    """Plants values beside escapes (``BESIDE_ESCAPES``) in ``data/beside.jsonl``'s texts, metadata, ids, keys,
    removed duplicates and short texts, where the text as written shows them to the recognizers; ``(where, kind,
    written, value)`` of each."""
    planted, records = [], []
    for n in range(rng.randint(6, 10)):
        kind, (cue, plain) = rng.choice(sorted(values(rng).items()))
        where = rng.choice(["text", "text", "metadata", "id", "key", "duplicate", "short"])
        for _ in range(4):  # a few draws for a context the text as written shows the value in
            frag = beside_fragment(rng, plain)
            written = {"text": f"{PROSE} {cue} {frag}. {PROSE[:rng.randint(0, 80)]}", "metadata": f"{cue} {frag}",
                       "id": f"{frag}#b{n}", "key": frag, "duplicate": f"{PROSE} {cue} {frag}. duplicate b{n}",
                       "short": f"{cue} {frag}"}[where]
            if not any(needle in _scrubbed_as_written(written) for needle in needles(kind, plain)):
                break
            TRIED["beside an escape: hidden as written, not planted"] += 1
        else:
            continue
        TRIED["beside an escape: planted"] += 1
        if where == "text":
            records.append({"id": f"b{n}", "text": written})
        elif where == "metadata":
            records.append({"id": f"bm{n}", "text": f"{PROSE} beside meta {n}", "meta": {"contact": written}})
        elif where == "id":
            records.append({"id": written, "text": f"{PROSE} beside id {n}"})
        elif where == "key":
            records.append({"id": f"bk{n}", "text": f"{PROSE} beside key {n}", "meta": {written: "x"}})
        elif where == "duplicate":
            records += [{"id": f"bd{n}", "text": written}, {"id": f"be{n}", "text": written}]
        else:
            records.append({"id": f"bs{n}", "text": written})
        planted.append((f"{where} beside escapes", kind, written, plain))
    if records:
        (data / "beside.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return planted


# Values glued to the escapes the view's ambiguous readings read (``canonical(text, ambiguous=False)``, docs/pii.md,
# "the view only adds"): CSS's hex escapes not ended by a whitespace (``\\f1.202...``: "\\f1" is CSS's "ñ"), a
# backslash before a value's hex digits (``C:\\Users\\398-55...``), code's byte escapes of Latin-1 letters
# (``\\351``, ``\\xe9``), escaped punctuation (``\\_``), lower-case URL escapes of Latin-1 bytes (``a%a0+1-212...``),
# quoted-printable's "=40" and punctuation escapes, some of the value's own characters escaped so too; and CSS's
# upper-case hex escapes the full view leaves as written where ``\\b`` might be JSON's backspace (``\\BA ``, read by the
# older view: a text where it is the only escape is its own full view). A newer
# reading can glue the value to a letter, "_" or "@", eat its first digit or read its digits as a character, where the
# older readings left it and masked it; planted only where the view without the ambiguous readings masks it (on
# 01e75aa's scrubber, which reads the full view alone, such values leak: a review's fuzz, 69 of 2,000 texts).
GLUED_ESCAPES = ["", "", "\\", "\\b", "\\f", "\\d", "\\\\", "=", "=20", "=2E", "%", "%a0", "%A0", "\\40", "\\e9",
                 "x", "a", "1", "\\.", "C:\\Users\\", "\\n", "'", "=3D", "\\ ", "\\-", "\\_", "\\xe9", "\\351",
                 "\\fc", "\\b ", ":", "/", "=40", "\\201C", "\\0", "\\\\b", "\\BA ", "\\B", "\\B2 ", "\\BF"]


@functools.cache
def _folds_to() -> dict[str, list[str]]:
    """Every character of the BMP that NFKC folds to one ASCII letter or digit, by what it folds to."""
    folds: dict[str, list[str]] = {}
    for code in range(0x80, 0x10000):
        folded = unicodedata.normalize("NFKC", chr(code))
        if len(folded) == 1 and folded.isascii() and folded.isalnum():
            folds.setdefault(folded, []).append(chr(code))
    return folds


def _glued_escape(rng: random.Random, char: str) -> str:
    """One of the escapes of ``char`` that the view's readings, older and ambiguous, read (or nearly read)."""
    o = ord(char)
    options = [f"\\{o:x}", f"\\{o:04x}", f"\\{o:06X}", f"\\{o:x} ", f"\\\\{o:x}", f"\\{o:X} "]
    if o < 256:
        options += [f"\\x{o:02x}", f"\\{o:03o}", f"={o:02X}", f"%{o:02X}", f"%{o:02x}"]
    folds = _folds_to().get(char)
    if folds:  # CSS's escape of a character that folds to it (``\\BA `` is "º", folded "o"), hex of either case
        other = ord(rng.choice(folds))
        options += [f"\\{other:X} ", f"\\{other:x} ", f"\\{other:06X}"]
    if char in ".-+_@()[]{}'#$*=?^|~` ":
        options += ["\\" + char, "\\\\" + char]
    if char == " ":
        options += ["\\a0", "\\xa0", "\\240", "%A0", "%a0", "=A0", "=20", "\\20"]
    if char == "@":
        options += ["\\FF20 ", "=40", "\\40"]
    return rng.choice(options)


def _scrubbed_by_older_view(text: str) -> str:
    """``text`` scrubbed with the view without its ambiguous readings (the default configuration)."""
    return _views_scrubber().scrub(text, ambiguous=False).text


@functools.cache
def _views_scrubber():
    """One scrubber of the default configuration for the views' checks (built once: the engine is the process's)."""
    from corpusforge.pipeline.pii.config import PIIConfig
    from corpusforge.pipeline.pii.scrubber import Scrubber

    return Scrubber(PIIConfig(), salt="s" * 16)


def _every_way(text: str) -> str:
    """``text`` read as ``run_outputs`` reads an output file: the canonical way, decoded, and as written."""
    return (_plain(text) + "\n" + _plain(_decoded(text)) + "\n" + _plain(_other_decoded(text)) + "\n"
            + text.replace("\u00a0", " "))


def glued_to_newer(rng: random.Random, data: pathlib.Path) -> list[tuple[str, str, str, str]]:
    """Plants values glued to the ambiguous readings' escapes (``GLUED_ESCAPES``) in ``data/glued.jsonl``'s texts,
    metadata and ids, where the view without those readings masks them; ``(where, kind, written, value)`` of each."""
    planted, records = [], []
    for n in range(rng.randint(4, 8)):
        kind, (cue, plain) = rng.choice(sorted(values(rng).items()))
        where = rng.choice(["text", "text", "metadata", "id"])
        for _ in range(4):  # a few draws for a context the older view masks the value in
            share = rng.choice([0, 0.1, 0.3])
            value = "".join(_glued_escape(rng, c) if rng.random() < share else c for c in plain)
            frag = (rng.choice(GLUED_ESCAPES) + rng.choice(GLUED_ESCAPES) + value + rng.choice(GLUED_ESCAPES)
                    + rng.choice(GLUED_ESCAPES))
            written = {"text": f"{PROSE} {cue}{rng.choice([' ', '', ': ', '='])}{frag} thanks.",
                       "metadata": f"{cue} {frag}", "id": f"{frag}#g{n}"}[where]
            # read as ``run_outputs`` reads an output: the older view's scrub shows none of the value, the text shows it
            masked, shown = _every_way(_scrubbed_by_older_view(written)), _every_way(written)
            if not any(needle in masked for needle in needles(kind, plain)) \
                    and any(needle in shown for needle in needles(kind, plain)):
                break
            TRIED["glued to a newer reading: not masked by the older view, not planted"] += 1
        else:
            continue
        TRIED["glued to a newer reading: planted"] += 1
        if where == "text":
            records.append({"id": f"g{n}", "text": written})
        elif where == "metadata":
            records.append({"id": f"gm{n}", "text": f"{PROSE} glued meta {n}", "meta": {"contact": written}})
        else:
            records.append({"id": written, "text": f"{PROSE} glued id {n}"})
        planted.append((f"{where} glued to a newer reading", kind, written, plain))
    if records:
        (data / "glued.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return planted


# The older view's masks kept (docs/pii.md, "the view only adds"): every character a scrubber that knows only the view
# without the ambiguous readings masks (``Scrubber.find(text, ambiguous=False)``: that view and the pass over the text
# as written, the scrubber as it was before those readings, by the very code the default runs), the default scrubber
# masks too. Texts of values written with the readings the two views differ on: glued to the escapes either view alone
# reads (``GLUED_ESCAPES``; CSS's upper-case ``\\BA ``, which only the older view reads), some of their own characters
# so escaped, and split inside by a character a reading makes (``SPLITS``: "»" from ``%BB``, a no-break space from
# ``%a0``, "é" from ``\\xe9``, "." from ``\\.``, "@" from ``=40`` before digits), in prose or a key's value, now and
# then twice or beside a second value. Each text is checked whole, mask by mask: a newer reading that made the full
# view find a shorter value where the older view found none took the place of the whole one the pass over the text as
# written found (1e7963b's written pass: ``jane%BBdoe@fab.io\\BA `` left ``jane%BB``).
SPLITS = ["%BB", "%bb", "%a0", "%A0", "%e9", "%E9", "\\xe9", "\\351", "\\e9", "\\e9 ", "\\BA ", "\\B9 ", "\\bA ",
          "\\.", "\\_", "\\-", "\\ ", "=40", "=2E", "=3D", "=E9", "\\fc", "\\f", "\\40", "\\40 ", "\\FF20 ", "=20",
          "\\xc3\\xa9", "\\\\xc3\\\\xa9", "%C2%BB", "&#187;", "\\u00bb", "\\b", "\\\n"]

# What the older view reads and the full one does not, right after a value: CSS's upper-case hex escapes where ``\\b``
# might be JSON's backspace (of characters that fold to a value's: "º" is "o", "¹" "1": glued to the value's end), and
# ``\\f`` before hex digits (JSON's form feed there, CSS's "ñ" in the full view)
OLDER_ONLY = ["\\BA ", "\\B9 ", "\\B2 ", "\\B3 ", "\\bA ", "\\BAx", "\\f1 "]


def _letters_escape(rng: random.Random) -> str:
    """A URL or CSS escape written with no digit (``%BB``, ``\\fc``, ``\\Ac ``): what it is read as splits a value, and
    as written it holds no digit the pass over the text as written would keep a value for."""
    return rng.choice("%\\") + "".join(rng.choice("ABCDEFabcdef") for _ in range(2)) + rng.choice(["", "", " "])


LINE_ENDS = ["\\\n", "\\\r\n", "\\\r"]  # a backslash line continuation, every line end
# ... written with escapes, which the full view decodes and reads as a continuation: URL (doubly too), HTML references
# (escaped again too), code's, quoted-printable's, half escaped
ESCAPED_LINE_ENDS = ["%5C%0A", "%5c%0a", "%5C%0D%0A", "%5C%0D", "&#92;&#10;", "&#x5c;&#xa;", "&#92;&#13;&#10;",
                     "\\u005c\\u000a", "\\x5c\\x0a", "\\x5c\\x0d", "%255C%250A", "&amp;#92;&amp;#10;", "=5C=0A",
                     "&#92;\n", "%5C\n", "%5C\r\n", "&#92;\r"]


def views_text(rng: random.Random, lines: random.Random | None = None, ends: list[str] = LINE_ENDS,
               continued: float = 0.4) -> tuple[str, str]:
    """``(kind, text)``: a value written with the readings the views differ on, in a random surrounding; with
    ``lines``, beside a line continuation with chance ``continued``, written as one of ``ends``."""
    drawn = values(rng)
    # an address one text in two: its local part takes what the recognizers' word boundary would split elsewhere
    kind = "email" if rng.random() < 0.5 else rng.choice(sorted(drawn))
    cue, plain = drawn[kind]
    share = rng.choice([0, 0, 0.1, 0.3])
    value = escape(rng, kind, plain) if rng.random() < 0.2 else plain  # mixed: URL escapes and references too
    value = "".join(_glued_escape(rng, c) if rng.random() < share else c for c in value)
    for _ in range(rng.choice([0, 1, 1, 2])):  # split inside: a character a reading makes, between two of the value's
        at = rng.randint(1, len(value) - 1)
        value = value[:at] + (rng.choice(SPLITS) if rng.random() < 0.5 else _letters_escape(rng)) + value[at:]

    def glue() -> str:
        return "".join(rng.choice(GLUED_ESCAPES + SPLITS) for _ in range(rng.choice([0, 1, 1, 2])))

    # glued after it, maybe what only the older view reads first (a letter or digit it glues to the value's end)
    fragment = glue() + value + (rng.choice(OLDER_ONLY) if rng.random() < 0.3 else "") + glue()
    if rng.random() < 0.2:  # the value again, or another, beside it
        fragment += rng.choice(["", " ", "\\", "=", ","]) + glue() + rng.choice([value, plain])
    head = PROSE[:rng.randint(0, 60)] + cue + rng.choice([" ", "", ": ", "="])
    tail = rng.choice(["", " thanks.", ".", "\\n"])
    if lines is not None and lines.random() < continued:  # a line continuation (or Markdown's hard break) beside
        # it, every line end: read as nothing, it glues the value to the word before or after
        # (``Call me\\⏎212\\-555\\-0173``), where a lower tier masks the value (drawn from ``lines``: the texts of
        # ``rng`` stay those of the seeds named)
        for _ in range(lines.choice([1, 1, 2])):
            if lines.random() < 0.5:
                fragment = lines.choice(["me", "Call", "x", "0", ":", ","]) + lines.choice(ends) + fragment
            else:
                fragment += lines.choice(ends) + lines.choice(["Thanks", "1 more", ".", "x", "0", "-"])
    return kind, rng.choice([head + fragment + tail, fragment, f"k={fragment}&lang=en"])


@functools.lru_cache(maxsize=1)
def look_alike_introducers() -> dict[str, list[str]]:
    """Every character that NFKC folds to an escape's introducer (``canonical.ESCAPE_INTRODUCERS``): ``＼`` U+FF3C,
    ``﹨``, ``％``, ``﹪``, ``＆``, ``﹠``, ``＝``, ``﹦``, ``⁼``, ``₌``, ...: the view folds them before it reads escapes."""
    from corpusforge.pipeline.pii.canonical import ESCAPE_INTRODUCERS

    out: dict[str, list[str]] = {introducer: [] for introducer in ESCAPE_INTRODUCERS}
    for code in range(sys.maxunicode + 1):
        folded = unicodedata.normalize("NFKC", chr(code))
        if folded in out and folded != chr(code):
            out[folded].append(chr(code))
    return out


def with_look_alike_introducers(rng: random.Random, text: str) -> str:
    """``text`` with each escape introducer (``= % & \\``) written, with chance 1/2 each, as a character NFKC folds
    to it."""
    alikes = look_alike_introducers()
    return "".join(rng.choice(alikes[c]) if c in alikes and rng.random() < 0.5 else c for c in text)


def _masked(results) -> set[int]:
    return {i for r in results for i in range(r.start, r.end)}


def lower_tiers_kept(rng: random.Random, count: int = 60) -> None:
    """``count`` texts of ``views_text``: raises AssertionError naming each where a lower tier's scrub (``canonical``'s
    tiers: the older view, the view before the line continuations read) masks a character the default scrub leaves."""
    from corpusforge.pipeline.pii.canonical import TOP_TIER

    scrubber = _views_scrubber()
    broken = []
    lines = random.Random(repr(rng.getstate()) + " line ends")
    # and a quarter more, beside an escaped continuation, from a stream of their own (the seeds' texts stay theirs)
    escaped = random.Random(repr(rng.getstate()) + " escaped line ends")
    # ... and a quarter more, their introducers written as characters NFKC folds to them (``Call me＼⏎212＼-555＼-0173``:
    # the view folds before it reads, so a text need not hold an ASCII introducer for the views to differ)
    folded = random.Random(repr(rng.getstate()) + " look-alike introducers")
    for n in range(count + 2 * (count // 4)):
        if n < count:
            kind, text = views_text(rng, lines)
        elif n < count + count // 4:
            kind, text = views_text(escaped, escaped, ESCAPED_LINE_ENDS, 0.9)
        else:
            kind, text = views_text(folded, folded, LINE_ENDS + ESCAPED_LINE_ENDS, 0.9)
            text = with_look_alike_introducers(folded, text)
        TRIED["lower tiers' masks kept: texts"] += 1
        masked = None
        for tier in range(TOP_TIER):
            lower = _masked(scrubber.find(text, tier=tier))
            if not lower:
                continue
            TRIED[f"lower tiers' masks kept: texts tier {tier} masks"] += 1
            masked = _masked(scrubber.find(text)) if masked is None else masked
            left = lower - masked
            if left:
                broken.append(f"{kind} in {text!r}: tier {tier} masks {''.join(text[i] for i in sorted(left))!r} "
                              f"at {sorted(left)[:8]}, the scrub leaves it: {scrubber.scrub(text).text!r}")
    assert not broken, "a newer reading unmasked what a lower tier masked:\n" + "\n".join(broken)


# Values cut by a backslash line continuation (a shell's, C's, Python's, a Makefile's: ``\\`` then a line break, read as
# nothing): ``EMAIL="jane\\⏎doe@example.com"``, ``PHONE=212-555-\\⏎0173``, one or two of them between two of a value's
# characters, in a text, a metadata string, a removed duplicate or a short text (before the view read them, the address
# left its start, ``jane``, and a phone, a card, an IBAN or an IP was left whole). Outputs are read with the
# continuations read as a shell reads them too (``_other_decoded``).
CONTINUATIONS = ["\\\n", "\\\r\n", "\\\n", "\\\r"]


def continued_values(rng: random.Random, data: pathlib.Path) -> list[tuple[str, str, str, str]]:
    """Plants values cut by line continuations in ``data/continued.jsonl``; ``(where, kind, written, value)`` of
    each."""
    planted, records = [], []
    for n in range(rng.randint(3, 6)):
        kind, (cue, plain) = rng.choice(sorted(values(rng).items()))
        cuts = [i for i in range(1, len(plain)) if not plain[i - 1].isspace() and not plain[i].isspace()]
        value = plain
        for at in sorted(rng.sample(cuts, min(len(cuts), rng.choice([1, 1, 2]))), reverse=True):
            value = value[:at] + rng.choice(CONTINUATIONS) + value[at:]
        before, after = rng.choice([(f'{kind.upper()}="', '"\nexport X'), ("echo ", " >> out.txt"), (f"{cue} ", "."),
                                    ('#define CONTACT "', '"'), (f"{kind}=", " \\\n  --next")])
        written = before + value + after
        where = rng.choice(["text", "text", "metadata", "duplicate", "short"])
        TRIED["cut by a line continuation: planted"] += 1
        if where == "text":
            records.append({"id": f"c{n}", "text": f"{PROSE}\n{written}\n{PROSE[:rng.randint(0, 80)]}"})
        elif where == "metadata":
            records.append({"id": f"cm{n}", "text": f"{PROSE} continued meta {n}", "meta": {"script": written}})
        elif where == "duplicate":
            text = f"{PROSE}\n{written}\nduplicate c{n}"
            records += [{"id": f"cd{n}", "text": text}, {"id": f"ce{n}", "text": text}]
        else:
            records.append({"id": f"cs{n}", "text": written})
        planted.append((f"{where} cut by a line continuation", kind, written, plain))
    (data / "continued.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return planted


# Encoded-words a mask covers part of (RFC 2047): a value among words in one Q or B word (or two, split anywhere), in
# every mail charset, either case of the encoding's letter. The scrub keeps every word whole or takes it whole (a
# value at a Q word's end took its ``?=`` before ``Canonical.span`` kept a word's markers together) and shows none of
# the value, read with ``email.header`` (``_other_decoded``).
def encoded_words_kept(rng: random.Random, count: int = 20) -> None:
    """``count`` headers of a value in encoded-words, scrubbed: raises AssertionError naming each whose scrub left a
    word's marker without its word, or showed the value."""
    scrubber = _views_scrubber()
    broken = []
    mixed = random.Random(repr(rng.getstate()) + " mixed")  # its own stream: test_pii's seeds draw as before
    for _ in range(count):
        kind, (cue, plain) = rng.choice(sorted(values(rng).items()))
        if kind == "ip" or plain.startswith('"'):
            continue  # (an IP is no header's; a quoted local part's quotes are no Q word's)
        words = encoded_word(rng, rng.choice(["", "Call ", f"{cue} "]) + plain + rng.choice(["", " now", " ok"]))
        if mixed.random() < 0.5:  # a run of B and Q words mixed, cut anywhere, maybe a word of its own before it
            words = mixed_words(mixed, mixed.choice(["", "Call ", "Hi "]) + plain + mixed.choice(["", " now", " ok"]))
            if mixed.random() < 0.4:
                words = mixed.choice(["=?utf-8?b?SGkg?= ", "=?utf-8?q?Hi_?= ", "=?utf-8?q?Call_?=\n "]) + words
        after = rng.choice(["", " ok", " =?utf-8?q?_ok?=", " =?utf-8?b?IG9r?="])  # a word after it: " ok"
        text = f"{rng.choice(['Subject', 'From', 'Reply-To'])}: {words}{after}"
        TRIED["encoded-words: headers"] += 1
        out = scrubber.scrub(text).text
        if "=?" in _ENCODED_WORDS.sub("", out) or "?=" in _ENCODED_WORDS.sub("", out):
            broken.append(f"{kind} in {text!r}: a marker without its word in {out!r}")
        shown = _plain(_other_decoded(out)) + "\n" + _plain(out)
        if any(needle in shown for needle in needles(kind, plain)):
            broken.append(f"{kind} in {text!r}: shown in {out!r}")
    assert not broken, "an encoded-word's scrub broke it or showed its value:\n" + "\n".join(broken)


def build_case(rng: random.Random, workdir: pathlib.Path) -> list[tuple[str, str, str]]:
    """Writes the case's inputs under ``workdir/input``; returns ``(where, kind, value)`` of every plant."""
    data = workdir / "input"
    data.mkdir(parents=True, exist_ok=True)
    planted, records = [], []
    # the draws of what was added later (nested escapes) come from a stream of their own, seeded without a draw from
    # ``rng``: a pinned seed's values, places and disguises stay what they were
    later = random.Random(repr(rng.getstate()))
    decoders = random.Random(repr(rng.getstate()) + " decoders")  # and those added after them
    encodings = random.Random(repr(rng.getstate()) + " encodings")  # and other encodings' escapes, after those
    languages = random.Random(repr(rng.getstate()) + " languages")  # and other languages' escapes, after those
    mail = random.Random(repr(rng.getstate()) + " mail")  # and mail's, the web's and code's escapes, after those
    beside = random.Random(repr(rng.getstate()) + " beside")  # and values beside escapes, in a file of their own
    styles = random.Random(repr(rng.getstate()) + " styles")  # and style sheets' and code's, after those
    glued = random.Random(repr(rng.getstate()) + " glued")  # and values glued to newer readings, in a file of their own
    continued = random.Random(repr(rng.getstate()) + " continued")  # and values cut by line continuations, the same
    for n in range(rng.randint(2, 4)):
        for kind, (cue, plain) in values(rng).items():
            value = disguise(rng, kind, escape(rng, kind, plain))
            before, after = context(rng, kind)
            seen = None  # the value as the view reads it in its context, where that differs from alone
            if kind == "ip" and after.startswith(".") and after[1:2].islower() \
                    and not (before.endswith("-") and rng.random() < 0.5):
                # reverse DNS writes the address dashed: 81-2-69-160.dyn…, ec2-81-2-69-160.compute…
                value = disguise(rng, kind, escape(rng, kind, plain.replace(".", "-")))
            elif kind in ("phone", "iban", "card", "ssn", "email") and rng.random() < 0.15:
                # a form-encoded query value: spaces as "+" (?phone=202+555+0173, ?iban=GB82+WEST+…)
                key = {"phone": "phone", "iban": "iban", "card": "cc", "ssn": "ssn", "email": "email"}[kind]
                value = disguise(rng, kind, form_value(rng, plain), line_breaks=False)
                before, after = rng.choice([(f"https://example.com/f?x=1&{key}=", "&lang=en"),
                                            (f"/submit?{key}=", "&n=2"), (f"name=Jane+Doe&{key}=", "&ok=1"),
                                            # the "&" or "+" an escape makes: a page's href, a JSON string
                                            (f'<a href="/c?a=1&amp;{key}=', '">'),
                                            (f'{{"body": "{key}=', '\\u0026x=1"}')])
                if before.startswith("<a href") and rng.random() < 0.5:
                    value = value.replace("+", "&#43;")
                if kind == "phone" and rng.random() < 0.3:  # a lone pair: curl -d "phone=202+555+0173"
                    before, after = rng.choice([(f'curl -d "{key}=', '" https://api.example.org/x'),
                                                (f"POST body: {key}=", " ok")])
                full = _plain(before + value + after)
                seen = full[len(_plain(before)):len(full) - len(_plain(after))]
            if seen is None and encodings.random() < 0.15 and kind != "ip":
                # another encoding's escapes (quoted-printable, Latin-1 URL bytes), of the plain value; a soft line
                # break not in a rejected line's preview (written \n by JSON: docs/pii.md's known misses)
                value = (quoted_printable(encodings, kind, plain, soft_breaks=False) if encodings.random() < 0.6
                         else latin1_escapes(encodings, kind, plain))
                soft = encodings.random() < 0.5
                if soft and "=" in value:
                    cut = encodings.randint(1, len(value) - 1)
                    if value[cut - 1] != "=" and "=" not in value[max(0, cut - 2):cut + 1]:
                        value = value[:cut] + "=\n" + value[cut:]
                seen = _plain(_other_decoded(value))  # what the real decoders read, not the view under test
            if seen is None and languages.random() < 0.15 and kind != "email":
                seen, value = _plain(value), code_escapes(languages, value)
            elif seen is None and kind == "email" and languages.random() < 0.15 and "@" in plain \
                    and not plain.startswith('"'):
                # a form value whose address has a "+" in its local part and its "@" in any escape the view reads
                local, _, domain = plain.rpartition("@")
                at = languages.choice(["\\x40", "\\u0040", "&#64", "%EF%BC%A0", "\\N{COMMERCIAL AT}", "=40",
                                       "%2540", "\\x{40}", "%40"])
                value = f"{local}+tag{at}{domain}"
                before, after = "https://example.com/f?x=1&email=", "&lang=en"
                seen = f"{local}+tag@{domain}"
            if seen is None and mail.random() < 0.15 and kind != "ip" and not plain.startswith('"'):
                draw = mail.random()
                if draw < 0.3:
                    value = encoded_word(mail, plain)
                elif draw < 0.55 and kind != "email":
                    value = qp_every(mail, plain)
                    if before.endswith("="):  # an encoder escapes the "=" before the value too
                        before = before[:-1] + "=3D"
                elif draw < 0.8 or "@" not in plain:
                    value = code_and_style(mail, kind, plain)
                else:  # a form value's "+" in a local part, escapes between it and the escaped "@"
                    local, _, domain = plain.rpartition("@")
                    head, dot, tail = local.partition(".")
                    middle = mail.choice(["%2E", "&#46;", "%252E", "\\u002e", "=2E"]) if dot else ""
                    # (quoted-printable's "=40" before a letter only: before "[" it is left, docs/pii.md)
                    at = mail.choice(["%40", "&#64;", "%2540", "\\x40"] + ["=40"] * domain[:1].isalpha())
                    value = f"{head}+tag{middle}{tail}{at}{domain}"
                    before, after = "https://example.com/f?x=1&email=", "&lang=en"
                    seen = f"{head}+tag{dot}{tail}@{domain}"
                if seen is None:
                    seen = _plain(_other_decoded(value))  # what the real decoders read, not the view under test
            bare = value if seen is None else None  # (the styles' draw comes after every other stream's: theirs stay)
            if seen is None and decoders.random() < 0.25:  # escapes other decoders read: \x40, &#64, %u0040...
                value = decoder_escapes(decoders, value)
            if seen is None and later.random() < 0.25:
                # escapes of one scheme inside another's: the value as the view reads it unnested is what must not
                # leak (the view of the nested value is the one under test)
                nested = nest(later, value)
                if nested != value:
                    seen, value = _plain(value), nested
            if value == bare and seen is None and styles.random() < 0.15 and kind != "ip" and not plain.startswith('"'):
                value, seen = styles_and_bytes(styles, kind, plain)
                seen = _plain(seen)
            where = rng.choice(["text", "text", "metadata", "number", "preview", "id", "key", "duplicate", "short"])
            if where == "preview" and "\n" in value:
                # a soft line break JSON writes \n: not read (docs/pii.md); nor a line break between encoded-words
                value = re.sub(r"=[ \t]*\n", "", value).replace("?=\n =?", "?= =?")
            if where == "number" and kind in ("card", "phone"):
                digits = "".join(c for c in plain if c.isdigit())
                records.append({"id": f"n{n}{kind}", "text": f"{PROSE} number {n} {kind}",
                                "meta": {kind: int(digits)}})
                planted.append((where, kind, digits))
                continue
            if where == "metadata":
                records.append({"id": f"m{n}{kind}", "text": f"{PROSE} meta {n} {kind}",
                                "meta": {"contact": f"{cue} {before}{value}{after}"}})
            elif where == "id":  # the document's id: hashed where it holds an entity (pii.id_action)
                records.append({"id": f"{before}{value}{after}#{n}", "text": f"{PROSE} id {n} {kind}"})
            elif where == "key":  # a metadata key: hashed as ids are
                records.append({"id": f"k{n}{kind}", "text": f"{PROSE} key {n} {kind}",
                                "meta": {f"{before}{value}{after}": rng.choice(["x", 1, None])}})
            elif where == "duplicate":  # two copies: exact dedup removes one, and removed/ holds its text
                text = f"{PROSE} {cue} {before}{value}{after}. duplicate {n} {kind}"
                records += [{"id": f"d{n}{kind}", "text": text}, {"id": f"e{n}{kind}", "text": text}]
            elif where == "short":  # too short for quality: removed, its text in removed/ and the report
                records.append({"id": f"s{n}{kind}", "text": f"{cue} {before}{value}{after}"})
            elif where == "preview":  # a malformed line: its preview is cut at 200 chars, inside the value
                head = '{"id": "p' + str(n) + kind + '", "text": "' + cue + " "
                pad = max(0, 200 - len(head) - rng.randint(2, len(_plain(value)) - 1))
                # as a JSON writer wrote it: quotes and backslashes escaped ("jane doe"@… as \"jane doe\"@…), and
                # maybe every non-ASCII character as \uXXXX (ensure_ascii; a line break would be \n, not read)
                draw = rng.random()
                raw = (value.replace("\\", "\\\\").replace('"', '\\"') if draw < 0.3
                       else json.dumps(value)[1:-1] if draw < 0.6 else value)
                if raw is not value and rng.random() < 0.3:  # a JSON writer may escape any character: "\u0040"
                    raw = "".join(f"\\u{ord(c):04x}" if c in "@.-" and rng.random() < 0.5 else c for c in raw)
                if raw is value and "\n" in value:  # a raw line break would end the JSON line: written \n
                    raw = value.replace("\n", "\\n")
                if later.random() < 0.3:
                    raw = _json_inside_references(later, raw)
                records.append(head + "x" * pad + " " + raw + " and more text")
            else:
                records.append({"id": f"t{n}{kind}",
                                "text": f"{PROSE} {cue} {before}{value}{after}. {PROSE[:rng.randint(0, 120)]}"})
            planted.append((where, kind, value) if seen is None else (where, kind, value, seen))
    planted += beside_escapes(beside, data)
    planted += glued_to_newer(glued, data)
    planted += continued_values(continued, data)
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=rng.random() < 0.5) for r in records]
    rng.shuffle(lines)
    (data / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # A file named after an address (maybe disguised): its name is a document's source and a rejected path.
    cue, plain = values(rng)["email"]
    name = disguise(rng, "email", escape(rng, "email", plain), line_breaks=False)  # names saved from URLs: %40
    if len(name.encode("utf-8")) > 240:  # a file name holds 255 bytes: escapes of full-width characters are long
        name = plain.replace("@", "%40")
    nested = nest(later, name) if later.random() < 0.25 else name
    if nested != name and len(nested.encode("utf-8")) <= 240:
        planted.append(("file name", "email", nested, _plain(name)))
        name = nested
    else:
        planted.append(("file name", "email", name))
    (data / f"{name}.jsonl").write_text(json.dumps({"id": "named", "text": PROSE}) + "\n{broken\n", encoding="utf-8")
    # A second source, named after an address in the config (``inputs[].name``): every document and rejection
    # of it carries that name, also for files refused by name before they open (a FIFO, a broken link).
    named = workdir / "named"
    named.mkdir(parents=True, exist_ok=True)
    (named / "doc.jsonl").write_text(json.dumps({"id": "s", "text": PROSE}) + "\n", encoding="utf-8")
    refused = rng.choice(["fifo", "broken link", "both", "none"])
    if refused in ("fifo", "both") and hasattr(os, "mkfifo"):
        os.mkfifo(named / "pipe.jsonl")
    if refused in ("broken link", "both"):
        (named / "gone.jsonl").symlink_to(workdir / "nowhere.jsonl")
    cue, plain = values(rng)["email"]
    source = disguise(rng, "email", escape(rng, "email", plain), line_breaks=False)
    nested = nest(later, source) if later.random() < 0.25 else source
    planted.append(("source name", "email", source) if nested == source
                   else ("source name", "email", nested, _plain(source)))
    (workdir / "source-name.txt").write_text(nested, encoding="utf-8")
    return planted


def _json_or(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def _strings(value) -> list[str]:
    """Every string (and number, as written) in a decoded JSON value or shard rows, keys included."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    if value is None:
        return []
    return [value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)]


_JSON_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")
# The code-point escapes of other languages: Python/JavaScript/C's \x40, JavaScript/Rust/Swift's \u{40}, Python/C's
# \U00000040, JavaScript's old escape()'s %u0040 (urllib's unquote leaves it).
_CODE_POINT_ESCAPE = re.compile(r"\\x([0-9A-Fa-f]{2})|\\u\{([0-9A-Fa-f]+)\}|\\U([0-9A-Fa-f]{8})|%[uU]([0-9A-Fa-f]{4})")


def _code_point(m: re.Match) -> str:
    value = int(next(g for g in m.groups() if g is not None), 16)
    return chr(value) if value <= 0x10FFFF else m.group()


def _decoded(text: str) -> str:
    """``text`` with its URL escapes, HTML references (``html.unescape``: HTML5's, with or without ";"), JSON ``\\uXXXX``
    and other languages' code-point escapes (``\\x40``, ``\\u{40}``, ``\\U00000040``, ``%u0040``) read over and over,
    each scheme whole, until
    nothing changes (at most 6 rounds): a reading of outputs that owes nothing to the view under test, so an escape
    the view leaves unread is still found in what a build wrote (a card ``4111&#%34%35;1111…`` left as written)."""
    import urllib.parse

    for _ in range(6):
        before = text
        text = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
        text = _CODE_POINT_ESCAPE.sub(_code_point, text)
        text = html.unescape(urllib.parse.unquote(text, errors="replace"))
        if text == before:
            break
    return text


_LANGUAGE_ESCAPE = re.compile(r"\\x\{([0-9A-Fa-f]{1,8})\}|\\x0+([0-7][0-9A-Fa-f])(?![0-9A-Fa-f])|\\N\{([^}]{1,90})\}")


def _language_char(m: re.Match) -> str:
    import unicodedata

    if m.group(3) is not None:
        try:
            char = unicodedata.lookup(m.group(3))
        except KeyError:
            return m.group()
        return char if len(char) == 1 else m.group()
    value = int(m.group(1) or m.group(2), 16)
    return chr(value) if value <= 0x10FFFF else m.group()


def _latin1_byte(error: UnicodeDecodeError) -> tuple[str, int]:
    return error.object[error.start:error.end].decode("latin-1"), error.end


_LATIN1_BYTES = "corpusforge-fuzz-latin1"
codecs.register_error(_LATIN1_BYTES, _latin1_byte)


def _other_decoded(text: str) -> str:
    """``text`` read as quoted-printable (``quopri``), other languages' escapes (``\\x{40}``, ``\\x040``, ``\\N{...}``)
    read, then its URL escapes as Latin-1 where they are no UTF-8
    (``urllib.parse.unquote(..., "latin-1")`` of what UTF-8 leaves): the other encodings' reading of outputs."""
    import quopri
    import urllib.parse

    text = _ENCODED_WORDS.sub(_header_decoded, text)
    text = re.sub(r"\\(?:\r\n?|\n)", "", text)  # a line continuation, as a shell reads it
    text = re.sub(r"=[ \t]+(?=\r?\n)", "=", text)  # a soft line break's spaces after the "=": RFC 2045 drops them
    text = quopri.decodestring(text.encode("utf-8")).decode("utf-8", _LATIN1_BYTES)  # a byte of no sequence: Latin-1
    text = _LANGUAGE_ESCAPE.sub(_language_char, text)
    text = _CODE_BYTES.sub(_code_bytes, text)
    text = _STYLE_ESCAPE.sub(_style_char, text)
    return re.sub(r"(?:%[0-9A-Fa-f]{2})+", lambda m: urllib.parse.unquote(m.group(), "utf-8", "strict")
                  if _utf8_ok(m.group()) else urllib.parse.unquote(m.group(), "latin-1"), text)


# A run of MIME encoded-words (whitespace between them is no text: ``email.header.decode_header``), C's octal escape
# of printable ASCII, CSS's hex escape ended by a whitespace or six digits long, Perl's ``\@``.
_ENCODED_WORDS = re.compile(r"=\?[^?\s]{1,60}\?[QqBb]\?[^?\s]*\?=(?:\s+=\?[^?\s]{1,60}\?[QqBb]\?[^?\s]*\?=)*")
_CODE_BYTES = re.compile(r"(?:\\(?:x[89A-Fa-f][0-9A-Fa-f]|[23][0-7]{2})){2,4}")  # bytes above 0x7F
_STYLE_ESCAPE = re.compile(r"\\(?:([0-1][0-7]{2})|([0-9A-Fa-f]{1,6})[ \t\n]|([0-9A-Fa-f]{6})|(@))")


def _header_decoded(m: re.Match) -> str:
    import email.header

    try:
        parts = email.header.decode_header(m.group())
        return "".join(p if isinstance(p, str) else p.decode((c or "ascii").split("*")[0], "replace")
                       for p, c in parts)
    except (LookupError, ValueError):
        return m.group()


def _code_bytes(m: re.Match) -> str:
    """A run of code's byte escapes (``\\xc3\\xa9``, ``\\303\\251``) as the UTF-8 it is, else as written."""
    data = bytes(int(b[1:], 16) if b[0] == "x" else int(b, 8) for b in re.findall(r"\\(x..|...)", m.group()))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return m.group()


def _style_char(m: re.Match) -> str:
    octal, css, six, at = m.groups()
    if at:
        return "@"
    value = int(octal, 8) if octal else int(css or six, 16)
    return chr(value) if 0x20 <= value <= 0x7E else m.group()


def _utf8_ok(escapes: str) -> bool:
    try:
        bytes.fromhex(escapes.replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def run_outputs(out: pathlib.Path) -> dict[str, str]:
    """Every file under ``out``, as text read the canonical way."""
    from corpusforge.core.shard_files import open_shard

    texts = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        if path.suffix in (".arrow", ".parquet"):
            try:
                text = "\n".join(_strings(open_shard(str(path)).read_all().to_pylist()))
            except Exception:  # noqa: BLE001 - not a shard after all: read its bytes
                text = path.read_bytes().decode("utf-8", errors="replace")
        else:
            text = path.read_bytes().decode("utf-8", errors="replace")
            if path.suffix in (".json", ".jsonl"):
                # its strings as a reader gets them (a preview holding "\n" as written is read by the view, not
                # hidden behind the file's own "\\n"), and the text as written
                text = text + "\n" + "\n".join(_strings([_json_or(line) for line in text.splitlines()]
                                                        if path.suffix == ".jsonl" else [_json_or(text)]))
            if path.suffix in (".html", ".htm", ".md"):
                text = html.unescape(text)
        # and as written: a value the view reads glued to an escape beside it is still the value there
        texts[str(path.relative_to(out))] = (_plain(text) + "\n" + _plain(_decoded(text)) + "\n"
                                             + _plain(_other_decoded(text)) + "\n" + text.replace("\u00a0", " "))
        texts[str(path.relative_to(out)) + " (name)"] = _plain(str(path.relative_to(out)))
    return texts


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    from corpusforge.cli.main import main

    workdir = pathlib.Path(workdir)
    # texts for the views' masks from a stream of their own (no draw from ``rng``: a pinned seed builds what it did)
    lower_tiers_kept(random.Random(repr(rng.getstate()) + " views"))
    encoded_words_kept(random.Random(repr(rng.getstate()) + " words"))
    planted = build_case(rng, workdir)
    out = workdir / "out"
    (workdir / "corpus.yaml").write_text(
        f"inputs:\n  - {{path: '{workdir / 'input'}'}}\n"
        f"  - {{path: '{workdir / 'named'}', name: {json.dumps((workdir / 'source-name.txt').read_text(encoding='utf-8'))}}}\n"
        "dedup:\n  near: {enabled: false}\n", encoding="utf-8")
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        code = main(["build", "-c", str(workdir / "corpus.yaml"), "--run-dir", str(out)])
        assert code == 0, f"the build failed: {sink.getvalue()[-2000:]}"
        assert main(["report", str(out)]) == 0, f"the report failed: {sink.getvalue()[-2000:]}"
    outputs = run_outputs(out)
    outputs["console"] = _plain(sink.getvalue())
    leaks = []
    for where, kind, value, *seen in planted:
        for needle in needles(kind, value, *seen):
            for name, text in outputs.items():
                if needle in text:
                    leaks.append(f"{kind} planted in the {where} as {value!r}: {needle!r} in {name}")
    assert not leaks, "personal data left the scrubber:\n" + "\n".join(leaks)
