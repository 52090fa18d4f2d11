"""The canonical view PII detection runs on, and the map from its offsets back to the text's.

A disguise changes how an entity is written, not what it is: ``jane\u2060@example.org`` (a word joiner),
``ｊａｎｅ＠ｅｘａｍｐｌｅ．ｏｒｇ`` (full width), ``٤١١١ ١١١١ ١١١١ ١١١١`` (Arabic-Indic digits), a card number
broken over two lines. The recognizers (Presidio's, tuned in ``corpusforge.pipeline.pii.recognizers``) read ASCII
forms, so the ``Scrubber`` hands them the *canonical view* of a text and maps what they find back:

- every format character (Unicode category Cf: U+2060 word joiner, ZWJ/ZWNJ, soft hyphen, bidi controls,
  BOM...) is removed;
- every compatibility character (``NFKC_Quick_Check=No``: full-width letters and ``＠``, ideographic space,
  ligatures...) is replaced by its NFKC form, one character at a time (never a whole-text ``normalize``, which
  is quadratic on long runs of combining marks, and would move offsets across characters);
- every decimal digit of any script (category Nd) is read as its ASCII value;
- a line break (with the spaces around it) between two digits of a number is read as one space, or as
  nothing after a separator (``4111-1111-⏎1111-1111``);
- every escape is read as the character it stands for (then folded as above): a URL escape (a UTF-8 sequence as
  one character), an HTML character reference (``&#64;``, ``&#x40;``, ``&commat;``, ``&nbsp;``), a JSON string's
  ``\\uXXXX`` (a surrogate pair as one character) and short escapes (``\\n``, ``\\t``, ``\\/``...), escapes inside
  escapes (``%2540``) up to ``NESTED_LEVELS``: ``jane%40example.org`` in a query string and ``jane&#64;example.org``
  in a page are addresses. A URL's ``%20`` and a form value's ``+`` are read as a space of its own (``URL_SPACE``).
  Other languages' code-point escapes (``\\x40``, ``\\x{40}``, ``\\u{40}``, ``\\N{COMMERCIAL AT}``, octal
  ``\\100``, CSS's ``\\40 ``, Perl's ``\\@``...) too; quoted-printable and a mail header's MIME encoded-words first
  (a mail archive's ``jane=40example.org``, soft line breaks, ``=?iso-8859-1?q?Appelez_le_202-555-0173?=``), and a
  URL escape of a Latin-1 byte last (``jos%E9@...``, a no-break space ``%A0`` between a number's groups).

Two kinds of characters are left as they are, because the recognizers already read them or reading them as
digits would invent numbers: U+00A0 (no-break space, a separator of numbers already) and category No
(``²``, ``½``, ``①``: not decimal digits). A text that is ASCII and has no line break inside a number is its
own canonical view (``Canonical.identity``), so plain texts reach the recognizers as they did before.

``Canonical.span(start, end)`` maps a span of the view to the original span covering every character that
produced it, format characters inside included: masking that span masks the disguise too.
"""
from __future__ import annotations

import base64
import bisect
import codecs
import encodings
import encodings.aliases
import functools
import html
import html.entities
import pkgutil
import re
import unicodedata
from typing import NamedTuple

# Characters the view changes (besides line breaks): Cf, Nd, NFKC_QC=No, less ASCII digits, U+00A0 and No.
# Compiled on the first mostly non-ASCII text (``regex`` is Presidio's and Beam's dependency; a process that
# scrubs only without Beam need not import it).
SPECIAL_CLASS = r"[[\p{Cf}\p{Nd}\p{NFKC_QC=N}]--[0-9\u00a0\p{No}]]+"


@functools.lru_cache(maxsize=1)
def _special_run():
    import regex

    return regex.compile(SPECIAL_CLASS, regex.V1)
# A line break inside a number: a digit, maybe a separator, the break with the spaces around it, a digit
# (or the ``(``/``+`` a phone number starts with). Found from the breaks (a search for the whole shape tries
# it at every character: ~10x slower on prose). Not a tab: digits in tab-separated columns are columns.
_BREAK = re.compile(r"(?:\r\n?|\n)[ \t]*[0-9(+]")
# _BREAK in a text without "\r": its literal first character is found by a fast scan, where _BREAK's
# alternation tries a character class at every position (~4x the cost on prose).
_LF_BREAK = re.compile(r"\n[ \t]*[0-9(+]")
_SPACES = " \t"
_SEPARATORS = ".-/"
_DIGITS = frozenset("0123456789")


def _number_breaks(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, replacement)`` of each line break inside a number, with the spaces around it."""
    out = []
    for m in (_BREAK if "\r" in text else _LF_BREAK).finditer(text):
        start, end = m.start(), m.end() - 1
        while start > 0 and text[start - 1] in _SPACES:
            start -= 1
        separator = start > 0 and text[start - 1] in _SEPARATORS
        digit_at = start - 2 if separator else start - 1
        if digit_at < 0 or text[digit_at] not in _DIGITS:
            continue
        if out and out[-1][1] > start:  # a blank line's two breaks: the first one's span reached this one
            continue
        out.append((start, end, "" if separator else " "))
    return out


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# An escape that stands for one character: a URL escape (a UTF-8 sequence of two to four bytes as one, then any single
# byte; JavaScript's old ``escape()``'s ``%uXXXX``), an HTML character reference (numeric or named, as HTML5 reads
# them, below; ``html.unescape`` says what it stands for), the code-point escapes of Python, JavaScript, C, Rust and
# Swift (``\x40`` of ASCII only: above 0x7F it is a UTF-8 byte in C and bytes, a Latin-1 character in a JS string;
# ``\U00000040``, ``\u{40}``; written ``\\x40`` in a JSON string, as ``\\u0040`` below), a JSON (Python,
# JavaScript) string's ``\uXXXX`` (a surrogate pair as one) or short escape (``\n``, ``\r``, ``\t``, ``\f``, ``\b``,
# ``\/``): what a raw line of JSON Lines holds (a rejected record's preview is such a line: ``jane\u0040example.org``, a
# number across ``\n``). ``\"`` is left to the e-mail recognizer, which reads it both as JSON's quote and as RFC 5321's
# quoted pair (``"j\"d"@example.org``), and ``\\`` as written: ``\\n`` then reads a backslash and a line break (a
# JSON string inside a JSON string writes its line break so), except before a ``\uXXXX``: ``\\u0040`` is how a JSON
# string inside a JSON string writes ``\u0040`` (``{"payload": "{\"mail\": \"jane\\u0040example.org\"}"}``), read
# as its character whole (else the backslash left would end the address's local part).
# Other languages' escapes of a code point: Perl's ``\x{40}`` (any code point, as ``\u{40}``), C's hex escape of any
# length where it ends before no hex digit and stands for a printable character (``jane\x040gmail.com``: C reads
# every hex digit, so ``\x040e`` is no "@" in C; Python reads ``\x04`` then "0", as the view does there, and
# ``b"\x00b"``, NUL and "b" in Python's bytes, is common in code, a vertical tab in C rare), Python's ``\N{COMMERCIAL AT}`` (a name or alias,
# any case: ``unicodedata.lookup``; up to 88 characters, longer than the next level's look-back, so one made inside
# another scheme's escape is not read).
# HTML5's legacy named references, which it (and ``html.unescape``) reads without ";" too (``&nbsp``, ``&copy``: the
# keys of ``html.entities.html5`` without it). Read so only before neither a letter nor "=": a browser leaves
# ``?a=1&copy=2`` and ``&copyright`` as written in an attribute, and the view reads no text there as a sign.
_LEGACY_NAMES = "|".join(sorted((k for k in html.entities.html5 if not k.endswith(";")), key=len, reverse=True))
# A numeric reference's digits: any count of leading zeros (HTML5 reads any), bounded so the longest match stays
# _LONGEST_ESCAPE ("&#", 31 digits, ";": more than 24 zeros is no writer's, and is left as written). Without ";" it
# ends at the first character that is no digit, as HTML5's, but not before an escape of a digit of another scheme
# (``&#6%34``, ``&#x4\u0030``: that layer's decoder runs first, the next level reads the reference it made).
_DECIMAL_REFERENCE = r"#[0-9]{1,31}(?:;|(?![0-9]|%3[0-9]|\\\\?u003[0-9]))"
_HEX_REFERENCE = r"#[xX][0-9A-Fa-f]{1,30}(?:;|(?![0-9A-Fa-f]|%[346][0-9A-Fa-f]|\\\\?u00[346][0-9A-Fa-f]))"
# A UTF-8 sequence written as code's escapes of its bytes, hex (``b'jos\\xc3\\xa9'``: Python's repr of bytes, C) or
# octal (``"jos\\303\\251"``: C, and git's quoting of a path), read as its one character, as the URL escapes of one
# are (``%C3%A9``): else the address recognizer reads ``\\251.doe@…`` from the last escape on and the start stays.
_BYTE_LEAD2, _BYTE_LEAD3, _BYTE_LEAD4 = r"(?:x[cdCD][0-9A-Fa-f]|3[0-3][0-7])", r"(?:x[eE][0-9A-Fa-f]|3[45][0-7])", \
    r"(?:x[fF][0-4]|36[0-4])"
_BYTE_NEXT = r"(?:x[89abAB][0-9A-Fa-f]|2[0-7][0-7])"


def _code_utf8(slash: str) -> str:
    """The UTF-8 sequences of byte escapes each introduced by ``slash`` (one backslash, or two: a JSON string holding
    Python's repr of bytes, ``b'jos\\\\xc3\\\\xa9'``)."""
    nxt = slash + _BYTE_NEXT
    return rf"{slash}{_BYTE_LEAD2}{nxt}|{slash}{_BYTE_LEAD3}(?:{nxt}){{2}}|{slash}{_BYTE_LEAD4}(?:{nxt}){{3}}"


_CODE_UTF8 = _code_utf8(r"\\\\") + "|" + _code_utf8(r"\\")
# An escape that means the punctuation after it (``jane\.doe\@example\.com``, ``\+1\ \(202\)\ 555\-0173``): what
# ``re.escape`` writes, CommonMark's escape of any ASCII punctuation (``jane\_doe``), Perl's and a shell's of any
# character, CSS's identity escape. The punctuation an e-mail address, a phone number, an IP or a card holds, and a
# space: not ``\"`` (the e-mail recognizer reads it), ``\/`` (JSON's, above), ``\\``, ``\%``, ``\&`` (the view's
# introducers: read, they would start an escape at the next level), nor ``\,`` ``\;`` ``\:`` ``\!`` (LaTeX's spaces,
# in no entity) and ``\<`` ``\>`` (a regular expression's word boundaries in GNU and vim, in no entity).
_IDENTITY = ".-+_@()[]{}'#$*=?^|~` "
# A line continuation (a shell's, C's, Python's, a Makefile's, a CSS string's: a backslash, then a line break, read as
# nothing) between two characters of a token: ``EMAIL="jane\\⏎doe@example.com"``, ``PHONE=212-555-\\⏎0173``. Not after
# an escaped backslash (``\\\\⏎``: a backslash, then a line break) nor beside a space (a command's next line). Ambiguous:
# Markdown's hard line break is the same two characters (``202-555-0173\\⏎Thanks``, read as nothing, glues the number
# to the next line's word).
_CONTINUATION = r"(?<![\\\s])\\(?:\r\n?|\n)(?=\S)"
_CODE_BYTE = re.compile(r"\\(x[0-9A-Fa-f]{2}|[0-7]{3})")
# URL escapes, character references and \\u escapes: the readings both views make, first in both patterns
_ESCAPE_SHARED = (r"%[CDcd][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ee][0-9A-Fa-f](?:%[89ABab][0-9A-Fa-f]){2}"
                  r"|%[Ff][0-7](?:%[89ABab][0-9A-Fa-f]){3}|%[0-9A-Fa-f]{2}"
                  r"|%[uU][dD][89abAB][0-9A-Fa-f]{2}%[uU][dD][c-fC-F][0-9A-Fa-f]{2}|%[uU][0-9A-Fa-f]{4}"
                  rf"|&(?:{_DECIMAL_REFERENCE}|{_HEX_REFERENCE}|[A-Za-z][A-Za-z0-9]{{1,31}};"
                  rf"|(?:{_LEGACY_NAMES})(?![A-Za-z=]))"
                  r"|\\\\?u[dD][89abAB][0-9A-Fa-f]{2}\\\\?u[dD][c-fC-F][0-9A-Fa-f]{2}"
                  r"|\\\\?u[0-9A-Fa-f]{4}")
_ESCAPE_AMBIGUOUS = re.compile(_ESCAPE_SHARED +
                               rf"|{_CODE_UTF8}"
                               r"|\\\\?u\{[0-9A-Fa-f]{1,29}\}|\\\\?U[0-9A-Fa-f]{8}|\\\\?x\{[0-9A-Fa-f]{1,29}\}"
                               r"|\\\\?x0{1,28}[2-7][0-9A-Fa-f](?![0-9A-Fa-f])|\\\\?x[0-7a-fA-F][0-9A-Fa-f]"
                               r"|\\\\?N\{[A-Za-z][A-Za-z0-9 -]{1,87}\}"
                               r"|\\\\?(?:0[4-7][0-7]|1[0-7][0-7]|2[4-7][0-7]|3[0-7][0-7])"
                               r"|\\\\?(?![bB])[0-9A-Fa-f]{1,6}(?:\r\n|[ \t\n\r\f])?"
                               r"|\\[/bnrt]"
                               r"|\\\\?[" + re.escape(_IDENTITY) + "]")
_ESCAPE = re.compile(_ESCAPE_AMBIGUOUS.pattern + rf"|{_CONTINUATION}")
# The view without its ambiguous readings (``canonical(text, ambiguous=False)``): each reading added after the view was
# first held to "the view only adds" (docs/pii.md) is *ambiguous*: it can read a character out of what an older
# reading left as written, and so glue a value to a neighbour (``a%a0+1-212...`` read ``a\xa0+1...``: no word boundary
# before the number), eat a value's first digit (``\f1.202...`` as CSS's ``\f1``) or read a value's digits as a
# character (``\398-55-5589`` as ``Θ-55-5589``). The ``Scrubber`` also runs the recognizers on this restricted view
# wherever it differs from the full view (either of them not the text as written), and masks the union: what the older readings
# found stays found, whatever a newer one reads. A reading added later goes behind the ``ambiguous`` flag too.
# ``_ESCAPE_OLDER`` is the escapes' pattern before the ambiguous ones (CSS's hex escapes not ended by a whitespace, a
# byte's escapes of no UTF-8 sequence read as Latin-1, escaped punctuation, a JSON string's doubled backslashes
# before UTF-8 byte escapes).
# The view's readings in tiers, oldest first: ``OLDER`` (before the ambiguous readings: ``_ESCAPE_OLDER``),
# ``AMBIGUOUS`` (``_ESCAPE_AMBIGUOUS``), ``CONTINUATIONS`` (and a line continuation read as nothing: ``_ESCAPE``). Each
# reading added later is its own tier, above the others (``TOP_TIER``): a newer reading can glue a value that a lower
# tier's view found to its neighbour (``Call me\\⏎212\\-555\\-0173``: ``\\-`` read, the continuation glues the number to
# "me"), so the ``Scrubber`` masks the union of what every tier's view shows (``Scrubber.find``), each computed where
# the text holds an escape's introducer (``ESCAPE_INTRODUCERS``) or its view is not the text as written (a look-alike
# folds to an introducer), and asked where it differs from the full view, and
# ``tests/fuzz/pii.py``'s ``lower_tiers_kept`` holds every draw to "the masks hold each lower tier's".
# ``canonical(text, tier=t)`` is tier ``t``'s view.
OLDER, AMBIGUOUS, CONTINUATIONS = 0, 1, 2
TOP_TIER = CONTINUATIONS
_REMOVED_CONTINUATION = re.compile(r"\\(?:\r\n?|\n)")  # a continuation among characters the view read as nothing


# Every reading of an escape starts at one of these (a form's "+" needs an "=" too): a text without any is its own
# view, with or without the ambiguous readings, once its characters are folded.
ESCAPE_INTRODUCERS = ("=", "%", "&", "\\")
_ONE_BACKSLASH = r"\\"
_ESCAPE_OLDER = re.compile(_ESCAPE_SHARED +
                           rf"|{_code_utf8(_ONE_BACKSLASH)}"
                           r"|\\\\?u\{[0-9A-Fa-f]{1,29}\}|\\\\?U[0-9A-Fa-f]{8}|\\\\?x\{[0-9A-Fa-f]{1,29}\}"
                           r"|\\\\?x0{1,28}[2-7][0-9A-Fa-f](?![0-9A-Fa-f])|\\\\?x[0-7][0-9A-Fa-f]"
                           r"|\\\\?N\{[A-Za-z][A-Za-z0-9 -]{1,87}\}"
                           r"|\\\\?(?:0[4-7][0-7]|1[0-7][0-7])|\\\\?@"
                           r"|\\[/bfnrt]"
                           r"|\\\\?[0-9A-Fa-f]{1,6}(?:\r\n|[ \t\n\r\f])|\\\\?[0-9A-Fa-f]{6}")
_ESCAPES = (_ESCAPE_OLDER, _ESCAPE_AMBIGUOUS, _ESCAPE)  # by tier
# JSON's form feed: CSS's hex escape is tried first (``m\fc ller``, CSS's "ü"), and where it stands for no character
# (``\f101``: a private-use icon), JSON's. Not before ``\b``, which is JSON's backspace and a regular expression's word
# boundary (``\bfoo@example\.com``: read as CSS's ``\bf``, "¿", it took the address's first letter), and whose CSS
# code points (U+00B0 to U+00BF, U+0B00 on) are no entity's characters.
_JSON_BF = re.compile(r"\\f")
_HEX_DIGITS = frozenset("0123456789ABCDEFabcdef")
_OCTAL = frozenset("01234567")
_JSON_SHORT = {"/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# The whitespace control characters an escape may stand for (kept: a line break inside a number is read below);
# an escape of any other control character (``\b``, ``%00``, ``\u0008``) is read as nothing, as a format character is.
_WHITESPACE_CONTROLS = "\t\n\v\f\r"
# A URL's escaped space (``%20``, and ``+`` in a form value) is read as U+2007 (figure space): a space that separates
# the groups of a number, an IBAN or the words of a quoted local part (every recognizer reads it, as U+00A0, as it
# reads a space) and does not end the URL or query it sits in (the URL recognizer reads a URL across it, and across
# nothing else: not across a no-break space, ``&nbsp;`` after a URL is no part of it). Its own character: the view
# never holds it otherwise (NFKC folds a written U+2007 to a space).
URL_SPACE = "\u2007"
# Escapes inside escapes are read up to this many levels deep. An escape is read again where an earlier level made
# its first character (``%2540``: ``%25`` is "%", then ``%40`` is "@"; ``&amp;#64;``; ``\\u0040`` in a JSON string
# inside a JSON string: a redirect URL's double encoding), or any other of its characters with an escape of another
# scheme (``&#\\u0036\\u0034;``: a raw JSON line's escapes inside a page's reference, its "&#" literal; ``&#%36%34;``,
# ``%&#52;0``, ``%\\u0034\\u0030``: one layer of encoding written inside another's escape, the outer layer read first
# as its decoder would). Never where text and an escape of its own scheme meet by chance (``&#&#52;8;`` reads
# ``&#48;``, as a browser shows it: one HTML pass). Bounded: each level is a pass over the text.
NESTED_LEVELS = 4
_INTRODUCERS = "%&\\"
_INTRODUCER = re.compile(r"[%&\\]")
# An escape's characters after its introducer (a reference's "#", hex digits, a name, ";", "u", a UTF-8 sequence's
# "%"s, a surrogate pair's "\\"): a character made inside an escape of another scheme is one of these (most escapes
# make a letter with an accent, a space or punctuation: no search around those).
_ESCAPE_BODY = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#;" + _INTRODUCERS)
# The longest escape _ESCAPE matches: a named reference, "&", 32 characters and ";", and as long a numeric one ("&#",
# 31 digits, ";"; ``\\u{...}``: 29 hex digits). The escape a made character is inside starts at most this many
# characters before it (a window of fixed size: linear).
_LONGEST_ESCAPE = 34


def _utf16(code: str) -> str | None:
    """The character of ``\\uXXXX`` or ``%uXXXX`` (a surrogate pair, twelve characters, as one), None for a lone
    surrogate (no character)."""
    units = [int(code[i + 2:i + 6], 16) for i in range(0, len(code), 6)]
    char = chr(0x10000 + (units[0] - 0xD800) * 0x400 + units[1] - 0xDC00) if len(units) == 2 else chr(units[0])
    return None if 0xD800 <= ord(char) <= 0xDFFF else char


def _escape_char(code: str, tier: int = TOP_TIER) -> str | None:
    """What one escape stands for, as the view reads it (``""``: nothing), or None when it is no character; without
    the ambiguous readings (``_ESCAPE_OLDER``), as the view read it before them."""
    if code[0] == "\\":
        if code[1] in "\r\n":  # a line continuation (``_CONTINUATION``)
            return ""
        code = code.replace("\\\\", "\\")  # a JSON string's \uXXXX written inside another one: \\uXXXX
        if code.count("\\") > 1 and code[1] != "u":  # a UTF-8 sequence in code's byte escapes (_CODE_UTF8)
            data = bytes(int(b[1:], 16) if b[0] == "x" else int(b, 8) for b in _CODE_BYTE.findall(code))
            try:
                char = data.decode("utf-8")
            except UnicodeDecodeError:
                return None
        elif code[1] == "N":  # Python's \N{COMMERCIAL AT}: a character's name (or alias), any case
            try:
                char = unicodedata.lookup(code[3:-1])
            except KeyError:
                return None
            if len(char) != 1:  # a named sequence (``KEYCAP NUMBER SIGN``): lookup reads it, Python's \N{} does not
                return None
        elif code[1] in _IDENTITY and (tier >= AMBIGUOUS or code[1] == "@"):
            # an escaped punctuation character (Perl's "jane\@example.org", \., \-): itself
            return code[1]
        elif len(code) == 4 and _OCTAL.issuperset(code[1:]):  # octal: \100 is "@" (``\181``: CSS's, below)
            # a printable ASCII character, or a byte 0xA0 to 0xFF of no UTF-8 sequence (``jos\351@``) as Latin-1, as a
            # string's ``\351`` is in Python and Perl (a byte of a Latin-1 text in C); a control character's (``\033``,
            # ``\012``) and C1's (``'Andr\202 x'``) are left
            char = chr(int(code[1:], 8))
            if not char.isprintable() and not (tier >= AMBIGUOUS and 0xA0 <= ord(char) <= 0xFF):
                return None
        elif tier < AMBIGUOUS and code[1] in _HEX_DIGITS and len(code) > 2:  # CSS's, ended by a whitespace or 6 digits
            digits = code[1:].rstrip()
            if len(digits) == 3 and digits.isdigit() and "8" not in digits and "9" not in digits:
                return None
            value = int(digits, 16)
            if not (0x20 <= value <= 0x7E or 0xA0 <= value <= 0x24F) or not chr(value).isprintable():
                return None
            char = chr(value)
        elif tier >= AMBIGUOUS and code[1] in _HEX_DIGITS and code[1] != "b":
            # CSS's hex escape (1-6 hex digits, a whitespace): \40 is "@"
            digits = code[1:].rstrip()
            if len(digits) == 3 and digits.isdigit() and "8" not in digits and "9" not in digits:
                return None  # three octal digits: C's octal escape, of a byte (``'Andr\\202 x'``), not CSS's
            value = int(digits, 16)
            # a control character's code (regular expressions' \d, \1, \b), a surrogate, no code point, an unassigned or
            # private-use one (an icon font's ``"\f101"``): left; any other is read as CSS reads it, then folded
            # (``\FF20 `` is a full-width "@", read "@")
            if value > 0x10FFFF or unicodedata.category(chr(value)) in ("Cc", "Cs", "Cn", "Co"):
                return None
            char = chr(value)
        elif code[1] in "xU" or code[1:3] == "u{":  # \x40, \x{40}, \x040, \U00000040, \u{40}: a code point in hex
            value = int(code.strip("\\xUu{}"), 16)
            if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                return None
            char = chr(value)
        elif code[1] != "u":
            char = _JSON_SHORT[code[1]]
        else:
            char = _utf16(code)
            if char is None:
                return None
    elif code[:2] in ("%u", "%U"):  # JavaScript's old escape(): %uXXXX, as JSON's \uXXXX
        char = _utf16(code)
        if char is None:
            return None
    elif code[0] == "%":
        try:
            char = bytes.fromhex(code.replace("%", "")).decode("utf-8")
        except UnicodeDecodeError:
            return None  # one byte of a multi-byte character (or Latin-1), an overlong or broken sequence
        if char == " ":
            return URL_SPACE
    else:
        char = html.unescape(code)
        # U+FFFD: what html.unescape makes of a reference to no character (&#xD800;, &#0;); "": to a control one
        if char == code or len(char) != 1 or char == "\ufffd":
            return None
    if unicodedata.category(char) == "Cc":
        return char if char in _WHITESPACE_CONTROLS else ""
    return fold(char) if _special(char) else char


def _escapes(text: str, starts: dict[int, int] | None = None, tier: int = TOP_TIER) -> list[tuple[int, int, str]]:
    """``(start, end, replacement)`` of each escape in ``text`` (``_escape_char``), or only of those that begin at a
    key of ``starts`` and reach past its value (``_next_level``). One level: ``%2540`` is ``%40`` here. Disjoint: of
    two escapes that overlap (``\\\\u0040`` made of ``%5C%5Cu0040``: one at each backslash), the first."""
    out = []
    pattern = _ESCAPES[tier]
    if starts is None:
        matches = pattern.finditer(text)
    else:
        matches, last = [], -1
        for start, covers in sorted(starts.items()):
            if start >= last:
                m = pattern.match(text, start)
                if m is not None and m.end() > covers:
                    matches.append(m)
                    last = m.end()
    for m in matches:
        char = _escape_char(m.group(), tier)
        if char is None and m.group().startswith("\\\\"):
            # an escaped backslash before what stands for nothing (``\\\\b `` is no CSS escape): the second
            # backslash's escape, where it ends inside this match (``\\b``: JSON's backspace, as before CSS's)
            end, m = m.end(), pattern.match(text, m.start() + 1)
            if m is not None and m.end() <= end:
                char = _escape_char(m.group(), tier)
        if tier >= AMBIGUOUS and char is None and m is not None and m.group()[:2] == "\\f":
            m = _JSON_BF.match(text, m.start())  # CSS's escape of no character: JSON's form feed
            char = _as_read(_JSON_SHORT[m.group()[1]])
        if char is not None:
            out.append((m.start(), m.end(), char))
    return out


def _next_level(text: str, escapes: list[tuple[int, int, str]], before: str) -> dict[int, int]:
    """Where the escapes the next level may read in ``text`` start, ``text`` made from ``before`` by reading
    ``escapes`` (each start to the first position this level changed that the escape must reach past): at a "%", "&"
    or "\\" this level made, and at an introducer of another scheme than an escape this level read inside it: one
    that made one of its characters (``_ESCAPE_BODY``), or was read as nothing between two of them (``%E\\u20602%81%A0``
    in a raw JSON line: a word joiner inside a URL escape, as ``%E\u20602%81%A0`` is in a text, where the view removes
    it before any escape is read). One entry per start: each is matched once however many changes it is near."""
    out: dict[int, int] = {}
    shift, size = 0, len(text)
    for start, end, new in escapes:
        at = start - shift  # where what it was read as starts in ``text``
        shift += end - start - len(new)
        if new:
            if new[0] in _INTRODUCERS:
                out.setdefault(at, at)
            if len(new) == 1 and new not in _ESCAPE_BODY:  # most escapes: "é", a space, "@", "."
                continue
            changed = range(at, at + len(new))
        else:  # read as nothing: the character after it may be inside an escape around it
            changed = (at,)
        scheme = before[start]
        for position in changed:
            if position < size and text[position] in _ESCAPE_BODY:
                for m in _INTRODUCER.finditer(text, max(0, position - _LONGEST_ESCAPE + 1), position):
                    if m.group() != scheme:
                        out.setdefault(m.start(), position)  # escapes in order: the first change is the nearest
    return out


# A form value's ``+`` (application/x-www-form-urlencoded: a space): in a query (``?phone=202+555+0173``,
# ``&name=jane+doe``), or in a body of pairs (``name=jane+doe&phone=...``), read before the escapes are (a ``%2B``
# is a plus).
_FORM_KEY_CHAR = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-[]%")
_FORM_VALUE_END = frozenset("&#; \t\r\n\"'<>")
# A ``+`` inside an address's dot-atom local part is the address's own (``email=jane+tag@example.org``, written
# unencoded): it stays. The "@" after the local part may be any escape the view reads as "@" (``_plus_in_address``:
# ``\x40``, ``\u0040``, ``&#64``, ``%EF%BC%A0``...), or one encoded twice (``%2540``, ``&amp;#64;``).
_LOCAL_PART = re.compile(r"[\w.!#$'*+/=?^`{|}~-]{0,64}")
_TWICE_ENCODED = re.compile(r"%25[0-9A-Fa-f]{2}")
_TWICE_ENCODED_AT = re.compile(r"%2540|%26%2364%3B|&amp;#0*64;|&amp;#x0*40;|&amp;commat;", re.IGNORECASE)


def _plus_in_address(text: str, at: int, tier: int = TOP_TIER) -> bool:
    """Whether the ``+`` before ``at`` is inside an address's local part: the local part's characters from ``at`` on,
    as written or as escapes the view reads as them (``jane+tag%2Edoe%40…``, ``jane+x&#46;y\x40…``: one level, or
    encoded twice, ``%252E``), then an "@" as written or as such an escape. At most 64 of them (RFC 5321's bound),
    192 characters as written (each "+" looks that far ahead at most: linear)."""
    count, written, n = 0, 0, len(text)
    while True:
        end = _LOCAL_PART.match(text, at).end()
        count += end - at
        written += end - at
        if count > 64 or written > 192:
            return False
        if text.startswith("@", end) or _TWICE_ENCODED_AT.match(text, end):
            return True
        # ``%252E`` is "%2E" encoded again: "." (one level down); a plain ``%25`` is "%" (``?q=save+50%25``: the
        # prefix taken off it left a bare "%", which no escape reads, and raised)
        twice = _TWICE_ENCODED.match(text, end)
        m = twice if twice is not None else _ESCAPES[tier].match(text, end)
        if m is None:
            return False
        code = m.group()
        char = _escape_char("%" + code[3:] if twice is not None else code, tier)
        if char == "@":
            return True
        if char is None or len(char) != 1 or not _LOCAL_PART.fullmatch(char) or m.end() >= n:
            return False
        at, count, written = m.end(), count + 1, written + m.end() - end


# A lone pair's value that is a form's (``curl -d "phone=202+555+0173"``, ``tel=%2B1+202+555+0173``): a number's
# characters only, seven digits or more (a phone number's), so ``x=a+b`` and ``y=1+2`` in code stay sums.
_NUMBER_VALUE = re.compile(r"(?=(?:[^0-9]*[0-9]){7})(?:[0-9()+\-]|%2[Bb])+")


def _form_pluses(text: str, literal: frozenset[int] = frozenset(), tier: int = TOP_TIER) -> list[tuple[int, int, str]]:
    """``(i, i + 1, URL_SPACE)`` for each ``+`` that stands for a space in a form value: a value of a ``key=``
    after ``?`` or ``&`` (``&amp;`` too), or at a token's start when ``&`` ends the value or the value is a number's
    characters alone (``_NUMBER_VALUE``); not a value's first character (``phone=+1+202+555+0173``: a plus left
    unencoded), nor one inside an address's local part, nor one at an offset in ``literal`` (a ``%2B``'s)."""
    out, n, i = [], len(text), text.find("=")
    while i >= 0:
        k = i
        while k > 0 and i - k < 64 and text[k - 1] in _FORM_KEY_CHAR:
            k -= 1
        end = i + 1
        while end < n and text[end] not in _FORM_VALUE_END:
            end += 1
        if k < i and "+" in text[i + 2:end]:
            before = text[k - 1] if k else " "
            form = (before in "?&" or text.endswith("&amp;", 0, k)
                    or (before in " \t\r\n\"'(<[" and ((end < n and text[end] == "&")
                                                         or _NUMBER_VALUE.fullmatch(text, i + 1, end))))
            if form:
                j = text.find("+", i + 2, end)
                while j >= 0:
                    if j not in literal and not _plus_in_address(text, j + 1, tier):
                        out.append((j, j + 1, URL_SPACE))
                    j = text.find("+", j + 1, end)
        i = text.find("=", max(end, i + 1))
    return out


# Quoted-printable (RFC 2045: what a mail archive's bodies hold, read as Python's ``quopri`` reads them): a soft line
# break (``=`` ending a line, read as nothing: ``jane.d=⏎oe@example.org``, ``4111 1111 11=⏎11 1111``; with the spaces
# or tabs an editor or a transport left after the "=", which RFC 2045 has decoders drop: ``= ⏎``), a UTF-8
# sequence of two to four bytes as one character (``=C3=A9``, a no-break space ``=C2=A0`` between a number's groups),
# and an escape of ASCII punctuation, a space or a tab (``jane=40example.org``, ``=2E``, ``=3D``; ``=20``, ``=09`` as
# ``quopri.encodestring(..., quotetabs=True)`` writes every space): not of a letter or a digit, which no encoder
# escapes and which ``phone=2125550173``, ``n=4F`` write as a value, and only before a letter or another escape
# (``jane=2Edoe=40example=2Eorg``, ``Call=20me``), but ``=3D`` (the "=" every encoder escapes: ``?n=3D202...``,
# ``href=3D"...``). Before punctuation it is a value (``max_size=40)``, ``atol=2e-6``: not ``@)``, ``.-6``). Before a
# digit it is a value (``phone=4015550173``, ``timeout=30``, ``id=2D5``: a key before the "=") unless its run of
# non-space characters (a word: an encoder escapes inside words, a value is one) is written in quoted-printable: it
# holds an escape read by the rules above (an "@" before "[" too, an address literal's: ``jane=40[81.2.69.160]``;
# ``zhang.wei=40163=2Ecom``, ``Call=20me=20at=20202-555-0173``), or one
# before a digit after no key: after nothing but a number's digits, dots and dashes back to another escape, a space,
# ``(``, ``)``, ``:``... (no letter, ``_``, ``[]`` or ``%``: ``=2B1202=2D555=2D0173``, ``tel:=2B1...``,
# ``202=20555=200173``, ``4111-1111=201111``); then
# every escape of the word before a digit is read too. Not after a "=" (``====⏎``: a heading's rule, no encoder
# writes "=" unescaped). One level, read before the other escapes: a mail body holds the URLs and pages the levels
# below read.
# A continuation byte may follow a soft line break: an encoder wrapping at 76 columns cuts between a character's bytes
# (``202=C2=⏎=A0555``, Python's own ``email`` does). A byte of no sequence is a Latin-1 character (a body in
# iso-8859-1, the most common legacy charset) where it can only be one: a no-break space ``=A0`` between digits
# (``202=A0555=A00173``), a letter ``=C0``-``=FF`` after a letter, "@", "." or "-" (as written or escaped) and
# before a letter, ``-``, ``.``, ``@`` or another escape (``jos=E9.doe``, ``ren=E9e``, ``jane=40=C9cole.fr``); in
# upper case only, as RFC 2045 has encoders write it. A value is left as written (``iban=DE89...``, ``lang=DE``,
# ``x=ab``, ``color=ff0000``: a country code before digits stays an IBAN's).
_QP_SOFT_BREAK = r"[ \t]*\r?\n"
_QP_NEXT = rf"(?:={_QP_SOFT_BREAK})?=[89ABab][0-9A-Fa-f]"
_QP_UTF8 = rf"(?:[Cc][2-9A-Fa-f]|[Dd][0-9A-Fa-f]){_QP_NEXT}|[Ee][0-9A-Fa-f](?:{_QP_NEXT}){{2}}" \
           rf"|[Ff][0-4](?:{_QP_NEXT}){{3}}|(?<=[0-9]=)A0(?=[0-9])" \
           r"|(?:(?<=[^\W\d_]=)|(?<=[@.-]=)|(?<==40=)|(?<==2[EDed]=))[C-F][0-9A-F](?=[^\W\d_]|[-.@=])"
_QP_PUNCTUATION = r"(?:2[0-9A-Fa-f]|3[ABCEFabcef]|40|5[B-Fb-f]|60|7[B-Eb-e]|09)"
# (The look-behind after the "=": a pattern that starts with a literal is found by a fast scan, ~5x cheaper.)
# An "@" before a digit where a domain follows it (``jane=40123mail.example``, ``li=40163.com``: a host name's labels, the
# last of letters) marks its word as any escape before a letter does; ``a[0]=40123``, ``x=40.5`` stay values. Any
# other escape of punctuation (before punctuation, a space or the word's end: ``'jane=2E'``, ``=20'202...``,
# ``b'foo=20bar=20'``) is read only in a word written in quoted-printable, as one before a digit is, and marks none
# (``max_size=40)``, ``atol=2e-6`` stay).
# Not where the "host" is a file's name (``see file=402.md``, ``cp build=4012.py``, ``x=401.pl``: a key, a value of
# digits, an extension): its last label is no common file extension. The extensions that are also country codes
# (``.md``, ``.py``, ``.pl``, ``.sh``, ``.rs``...) lose only an address at a host of digits under them written with
# no other escape in its word (``jan=40123.pl``; ``jan=40123=2Epl`` is read, its word written in quoted-printable):
# a file name of digits after a "=" is far more common in code and logs than such an address.
_FILE_EXTENSIONS = ("md|py|pl|pm|sh|rs|rb|js|ts|go|cc|cs|hs|ml|so|ps|el|txt|log|csv|tsv|json|jsonl|yml|yaml|toml|ini"
                    "|cfg|conf|xml|html|htm|css|php|java|jar|class|cpp|hpp|png|jpg|jpeg|gif|svg|pdf|zip|gz|tgz|tar|bz2"
                    "|xz|zst|bin|dat|out|err|tmp|bak|lock|exe|dll|img|iso|mp3|mp4|wav|doc|docx|xls|xlsx|ppt|pptx|rst"
                    "|tex|ipynb|parquet|arrow|npy|npz|pkl|pt|ckpt|db|sql|patch|diff|c|h|o|a")
_QP_DOMAIN_AT = (r"40(?=[0-9][0-9A-Za-z-]*(?:\.[0-9A-Za-z-]+)*\.(?!(?i:" + _FILE_EXTENSIONS
                 + r")(?![0-9A-Za-z-]|\.[0-9A-Za-z]))[A-Za-z]{2})")
_QUOTED_PRINTABLE = re.compile(rf"=(?<!==)(?:{_QP_SOFT_BREAK}|{_QP_UTF8}|3[Dd]|{_QP_PUNCTUATION}(?=[A-Za-z=])|40(?=\[)"
                               rf"|{_QP_DOMAIN_AT}|(?P<digit>{_QP_PUNCTUATION})(?=[0-9])|(?P<later>{_QP_PUNCTUATION}))")
# Without the ambiguous readings (``_ESCAPE_OLDER``): no "@" before a host of digits, no escape of punctuation before
# punctuation or a word's end (the ``later`` group never matches).
_QUOTED_PRINTABLE_OLDER = re.compile(rf"=(?<!==)(?:{_QP_SOFT_BREAK}|{_QP_UTF8}|3[Dd]|{_QP_PUNCTUATION}(?=[A-Za-z=])"
                                     rf"|40(?=\[)|(?P<digit>{_QP_PUNCTUATION})(?=[0-9])|(?P<later>(?!x)x))")


def _overlaps(change: tuple[int, int, str], spans: list[tuple[int, int]]) -> bool:
    """Whether ``change`` overlaps one of ``spans`` (sorted, disjoint)."""
    k = bisect.bisect_right(spans, (change[0], len(spans) and 1 << 62)) - 1
    return any(0 <= i < len(spans) and spans[i][0] < change[1] and change[0] < spans[i][1] for i in (k, k + 1))


_QP_NOT_HEX = re.compile(r"[=\r\n \t]")
# Where a word ends for the escapes before digits: a space, or a query's or a form's separator (``?h=5ec1...&phone=
# 2125550173``: the "=5e" before a letter marks no other pair's value as quoted-printable, ``&phone=21`` is a key's).
_QP_SPACE = re.compile(r"[\s&?;]")
# A key's characters before a "=" (``id=2D5``, ``a[0]=40``): an escape before a digit after one is a value's "="; not
# "[", which no key ends with (``[4827=207611...``: a number in brackets). An operator's ``<=``, ``>=``, ``!=``,
# ``+=`` is code's too (``n<=400``, ``y>=2015``: not ``<@0``, ``> 15``).
_QP_KEY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_.-]%<>!+*/^|&~")


def _quoted_printable(text: str, tier: int = TOP_TIER) -> list[tuple[int, int, str]]:
    """``(start, end, replacement)`` of each quoted-printable escape and soft line break (``_QUOTED_PRINTABLE``; an
    escape before a digit only in a word written in quoted-printable)."""
    out: list[tuple[int, int, str]] = []
    word: list[tuple[int, int, str, bool]] = []  # this word's escapes: (start, end, replacement, read if written)
    written = False  # whether this word is written in quoted-printable
    last = 0  # where the last escape ended
    searched = 0  # how far past ``last`` the text is known to hold no whitespace (each character searched once)

    def flush():
        out.extend((start, end, char) for start, end, char, later in word if written or not later)
        word.clear()

    for m in (_QUOTED_PRINTABLE if tier >= AMBIGUOUS else _QUOTED_PRINTABLE_OLDER).finditer(text):
        start, code = m.start(), m.group()
        if word and _QP_SPACE.search(text, max(last, searched), start):  # a new word (``written`` holds only with
            flush()                                                           # escapes in ``word``)
            written = False
        searched = start  # an escape that is no character (below) leaves ``last``: never search its stretch again
        if code[1] in " \t\r\n":
            word.append((start, m.end(), "", False))
            last = m.end()
            continue
        data = bytes.fromhex(_QP_NOT_HEX.sub("", code))
        try:
            char = data.decode("utf-8")
        except UnicodeDecodeError:
            if len(data) > 1 or data[0] < 0xA0:
                continue  # an overlong or broken sequence: no character
            char = data.decode("latin-1")  # one byte after a letter or digit, of no UTF-8 sequence
        digit = m.group("digit") is not None
        later = digit or m.group("later") is not None  # read only in a word written in quoted-printable
        if not later:
            written = True
        elif digit:
            j = start
            while j > last and text[j - 1] in "0123456789.-":
                j -= 1
            # a number's characters back to an escape, a word's start or no key (``4309-5293=205959``); a tag's ">"
            # before the number is no key's end, only an operator's before the "=" (``<b>4580=201842...``, pii fuzz
            # seed 46; ``y>=2015``)
            if (j == last or text[j - 1] not in _QP_KEY or (j < start and text[j - 1] == ">")) \
                    and (j == start or _DIGITS.intersection(text[j:start])):
                written = True
        word.append((start, m.end(), _as_read(char), later))
        last = m.end()
    flush()
    return out


# A MIME encoded-word (RFC 2047: a mail header's non-ASCII text, ``Subject: =?iso-8859-1?q?Appelez_le_202-555-0173?=``,
# ``=?utf-8?b?...?=``), read as ``email.header.decode_header`` reads it: Q encoding (``_`` a space, ``=XX`` any byte,
# every other character itself) or B encoding (base64), the bytes in the word's charset (any text codec Python
# knows: utf-8, iso-8859-x, windows-125x, koi8-r...; an unknown one as Latin-1, whose ASCII is every mail charset's;
# a byte that is no text in it as U+FFFD, as ``errors="replace"``), and the whitespace between two adjacent encoded-words read as nothing. A Q word's characters each map
# back to what wrote them; a B word's all map to the whole word (base64 has no boundary between characters).
# (Linear: the charset is bounded, the encoded text holds no "?", which every word's start holds.)
# Not glued to a letter or digit before it (RFC 2047 has whitespace, "(" or a header's ":" before an encoded-word;
# ``a=?b?q?202-555-0173?=`` is no word, and read as one it glued the number to the "a"; the look-behind after the
# "=": a literal first is found by a fast scan).
_ENCODED_WORD = re.compile(r"=(?<![A-Za-z0-9]=)\?([A-Za-z0-9!#$%&'+^_`{}~-]{1,40})(?:\*[A-Za-z0-9-]{1,20})?"
                           r"\?([QqBb])\?([^?\s]*)\?=")
_Q_UNIT = re.compile(r"=[0-9A-Fa-f]{2}|[^=]|=")
_NOT_CHARSETS = frozenset({"unicode-escape", "raw-unicode-escape", "idna", "punycode", "undefined"})
# Whitespace between two encoded-words, as written or as a JSON string's escapes (a folded header in a JSON line:
# ``?=\\n =?``).
_WHITESPACE_ONLY = re.compile(r"(?:\s|\\[nrt])+")
# The charset names looked up: the codecs' aliases and modules Python ships (a fixed set, ~450), as
# ``encodings.normalize_encoding`` writes them. ``codecs.lookup`` caches every name it is asked for (and
# ``encodings._cache`` every unknown one, forever): asked for each name hostile headers write, it grows without bound.
_KNOWN_CHARSETS = frozenset(encodings.aliases.aliases) | frozenset(encodings.aliases.aliases.values()) \
    | frozenset(m.name for m in pkgutil.iter_modules(encodings.__path__))
# Codecs whose incremental decoder holds a bounded buffer: a Q word is decoded a unit at a time in these (and in every
# codec whose decoder is no ``BufferedIncrementalDecoder``: charmaps, the CJK codecs). Another buffered one re-decodes
# all it holds per unit (UTF-7's base64 run: quadratic), so its word is decoded whole, as a B word is.
_STREAMED = frozenset({"utf-8", "utf-8-sig", "utf-16", "utf-16-be", "utf-16-le", "utf-32", "utf-32-be", "utf-32-le"})


@functools.lru_cache(maxsize=64)
def _charset(name: str) -> tuple[str, bool]:
    """The codec of an encoded-word's charset (Latin-1 where Python knows none that decodes text), and whether a Q
    word in it is decoded a unit at a time (``_STREAMED``)."""
    name = encodings.normalize_encoding(name.lower())
    if name not in _KNOWN_CHARSETS:
        return "latin-1", True
    try:
        info = codecs.lookup(name)
    except LookupError:
        return "latin-1", True
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_CHARSETS:
        return "latin-1", True
    decoder = info.incrementaldecoder
    return info.name, decoder is not None and (info.name in _STREAMED or not issubclass(
        decoder, codecs.BufferedIncrementalDecoder))


def _decoded(data: bytes, charset: str) -> str | None:
    """``data`` in ``charset`` (a byte that is no text in it as U+FFFD), None where the codec fails whatever its errors
    (any exception: a codec is code, and no input may crash the view)."""
    try:
        return data.decode(charset, "replace")
    except Exception:  # noqa: BLE001 - UnicodeError, LookupError, ValueError, TypeError... of any codec
        return None


def _encoded_words(text: str, markers: list[tuple[str, int, int]] | None = None) -> list[tuple[int, int, str]]:
    """``(start, end, replacement)`` of what the encoded-words of ``text`` are read as (``_ENCODED_WORD``); adds to
    ``markers`` ``("head", start, end)`` and ``("tail", ...)`` of the ``=?charset?Q?`` and ``?=`` of each word read a
    character at a time (a Q word's), ``("gap", ...)`` of the whitespace between two words and ``("word", ...)`` of
    each word read, B or Q (``Canonical.span``)."""
    out: list[tuple[int, int, str]] = []
    last = -1  # where the last encoded-word read ended
    for m in _ENCODED_WORD.finditer(text):
        charset, streamed = _charset(m.group(1))
        payload, at = m.group(3), m.start(3)
        changes: list[tuple[int, int, str]] = []
        if m.group(2) in "Bb" or not streamed:
            if m.group(2) in "Bb":
                try:
                    # padding as written or not, or too much of it (``...Lm9yZw===``): as email.header reads it
                    payload = payload.rstrip("=")
                    data = base64.b64decode(payload + "=" * (-len(payload) % 4), validate=True)
                except ValueError:
                    continue  # no base64
            else:
                data = b"".join(bytes.fromhex(u[1:]) if len(u) == 3 else b" " if u == "_" else u.encode()
                                for u in _Q_UNIT.findall(payload))
            decoded = _decoded(data, charset)
            if decoded is None:
                continue
            changes.append((m.start(), m.end(), "".join(_as_read(c) for c in decoded)))
        else:
            pending = at  # where the bytes the decoder holds began
            try:
                decoder = codecs.getincrementaldecoder(charset)("replace")
                for unit in _Q_UNIT.finditer(payload):
                    code = unit.group()
                    data = bytes.fromhex(code[1:]) if len(code) == 3 else b" " if code == "_" else code.encode()
                    got = decoder.decode(data)
                    end = at + unit.end()
                    if got != code or end - pending != len(code):
                        changes.append((pending, end, "".join(_as_read(c) for c in got)))
                    if got or not data:
                        pending = end
                rest = decoder.decode(b"", final=True)  # a sequence cut short at the word's end
            except Exception:  # noqa: BLE001 - a codec that fails whatever its errors (a stateful one's state)
                continue
            if rest:
                changes.append((pending, m.end(3), "".join(_as_read(c) for c in rest)))
            changes = [(m.start(), at, "")] + changes + [(m.end() - 2, m.end(), "")]
            if markers is not None:
                markers += [("head", m.start(), at), ("tail", m.end() - 2, m.end())]
        if markers is not None:
            markers.append(("word", m.start(), m.end()))
        if last >= 0 and _WHITESPACE_ONLY.fullmatch(text, last, m.start()):
            out.append((last, m.start(), ""))  # between two encoded-words: nothing
            if markers is not None:
                markers.append(("gap", last, m.start()))
        out.extend(changes)
        last = m.end()
    return out


# What a URL escape of a byte above 0x7F that no level read stands for (``_latin1_bytes``): a UTF-8 sequence a nested
# level split (``%C3%25A9``, read ``%C3%A9`` by the last level), else a Latin-1 character (``jos%E9@example.org``,
# ``202%A0555%A00173``: ``unquote(..., "latin-1")``, a form posted from a Latin-1 page). Read once, after the levels:
# read per level, a lone byte would break a sequence the next level completes (``%C3%25A9`` as ``Ã©``).
_HIGH_BYTES = re.compile(r"%[89A-Fa-f][0-9A-Fa-f](?:%[89A-Fa-f][0-9A-Fa-f])*")  # a literal first: a fast scan
_LATIN1_AFTER = frozenset(")@.-_+=/:")
_LATIN1_AFTER_OLDER = frozenset(")@.-_+")  # without the ambiguous readings: after these, in upper case only


def _latin1_here(text: str, start: int, lead: int) -> bool:
    """Whether the URL escape of byte ``lead`` at ``start``, after a character of ``_LATIN1_AFTER`` (an address's, a
    number's or a URL's punctuation, a value's "=", a path's "/", a scheme's ":"), is a Latin-1 character: in upper
    case, as encoders write it (``?to=%C9mile@``, ``(202)%A0555``); in lower case only where a directive cannot be, a
    letter's before a letter (``jane.%e9mile``) or a no-break space's before a digit (``(202)%a0555``): format
    strings' directives, ``.%f000Z``, ``-%e9 ``, are lower case."""
    code, after = text[start + 1:start + 3], text[start + 3:start + 4]
    if code.isupper():
        return True
    return after.isalpha() if lead >= 0xC0 else lead == 0xA0 and after.isdigit()


def _latin1_bytes(text: str, tier: int = TOP_TIER) -> list[tuple[int, int, str]]:
    """``(start, end, replacement)`` of each UTF-8 sequence of URL escapes in ``text`` (a character), and of each byte
    of no sequence that is one of Latin-1's characters (0xA0 to 0xFF; 0x80 to 0x9F are C1 controls: left) right
    after a letter or digit."""
    out = []
    for m in _HIGH_BYTES.finditer(text):
        run, at = bytes.fromhex(m.group().replace("%", "")), m.start()
        i = 0
        while i < len(run):
            lead = run[i]
            size = 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if 0xF0 <= lead <= 0xF4 else 1
            try:
                char = run[i:i + size].decode("utf-8") if size > 1 else None
            except UnicodeDecodeError:
                char = None
            if char is None:
                size = 1
                start = at + 3 * i
                # a Latin-1 character inside a word or number only: ``%default``, ``'%action'``, ``"%dd"``, ``.%f000Z``
                # are format strings' directives (a URL's escape follows a character of its own word), or in upper
                # case (as encoders write it; directives are lower case) after a character an address, a number or
                # a URL holds (``(202)%A0555``, ``jane@%C9cole.fr``, ``jane.%E9mile``)
                if lead >= 0xA0 and start and (text[start - 1].isalnum() or ((
                        text[start - 1] in _LATIN1_AFTER and _latin1_here(text, start, lead))
                        if tier >= AMBIGUOUS else (
                        text[start - 1] in _LATIN1_AFTER_OLDER and text[start + 1:start + 3].isupper()))):
                    char = chr(lead)
            if char is not None:
                out.append((at + 3 * i, at + 3 * (i + size), _as_read(char)))
            i += size
    return out


def _as_read(char: str) -> str:
    """One decoded character as the view holds it: a control character as itself when whitespace, else as
    nothing; a character the view folds, folded (as ``_escape_char``'s)."""
    if unicodedata.category(char) == "Cc":
        return char if char in _WHITESPACE_CONTROLS else ""
    return fold(char) if _special(char) else char


@functools.lru_cache(maxsize=4096)
def _special(char: str) -> bool:
    """Whether the view changes ``char`` (``SPECIAL_CLASS``, one character, without ``regex``; a test holds the
    two equal over every code point)."""
    if char in "0123456789\u00a0":
        return False
    category = unicodedata.category(char)
    if category == "No":
        return False
    return category in ("Cf", "Nd") or not unicodedata.is_normalized("NFKC", char)


@functools.lru_cache(maxsize=4096)
def fold(char: str) -> str:
    """What one character of the view is: ``""`` for a format character, the ASCII digit of a decimal
    digit, else its NFKC form (a single character: linear, whatever surrounds it)."""
    if unicodedata.category(char) == "Cf":
        return ""
    value = unicodedata.decimal(char, None)
    if value is not None:
        return str(value)
    return unicodedata.normalize("NFKC", char)


# A numeric reference without ";" ends at the first character that is no digit (HTML5), a format character too: a
# browser shows ``&#46\u200c25`` as "." and "25", not U+1211. The view removes format characters before it reads
# references, so one right after such a reference's digits is read as the ";" that ends it, unless the digits after
# it end in ";" (``&#6\u20604;``: a format character inside a reference, read through as inside any escape).
_OPEN_REFERENCE = re.compile(r"&#(?:[0-9]{1,31}|[xX][0-9A-Fa-f]{1,30})\Z")


def _folded_at(text: str, at: int, char: str) -> str:
    """``fold(char)`` of ``text[at]``, but ";" for a format character that ends a numeric reference."""
    new = fold(char)
    if new == "" and at and text[at - 1] in _HEX_DIGITS and _OPEN_REFERENCE.search(text, max(0, at - 34), at):
        j, n = at + 1, len(text)
        while j < n and j - at < _LONGEST_ESCAPE and (text[j] in _HEX_DIGITS or text[j].isdecimal()
                                                       or unicodedata.category(text[j]) == "Cf"):
            j += 1
        return new if j < n and text[j] == ";" else ";"
    return new


class _Piece(NamedTuple):
    view: int  # where the piece starts in the view
    start: int  # where what it came from starts in the original
    end: int  # and ends
    same: bool  # copied unchanged (view offset i <-> original start + i - view); else all of it maps to start..end


class Canonical:
    """The canonical view of ``original``: ``text``, and ``span`` mapping its offsets back."""

    __slots__ = ("original", "text", "_pieces", "_views", "_heads", "_tails", "_gaps", "_words")

    def strict_span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the view's ``[start, end)``, not grown (``span``)."""
        first, last = self._pieces[bisect.bisect_right(self._views, start) - 1], \
            self._pieces[bisect.bisect_right(self._views, end - 1) - 1]
        return (first.start + start - first.view if first.same else first.start,
                last.start + end - last.view if last.same else last.end)

    def __init__(self, original: str, text: str, pieces: list[_Piece] | None):
        self.original, self.text, self._pieces = original, text, pieces
        self._views = [p.view for p in pieces] if pieces else None
        self._heads = self._tails = self._gaps = self._words = None  # encoded-words' in ``original``: ``_word_markers``

    @property
    def identity(self) -> bool:
        return self._pieces is None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of view span ``[start, end)`` (non-empty), grown over the removed characters
        (format characters) next to it: a word joiner after an address goes with it. Not over one end's encoded-word
        marker alone (``_word_markers``)."""
        if self._pieces is None:
            return start, end
        pieces, views = self._pieces, self._views
        k = bisect.bisect_right(views, start) - 1
        p = pieces[k]
        if p.same and start > p.view:
            first = inner_first = p.start + start - p.view
        else:  # the piece's first character (or a replacement): grown back to the previous piece's end; never past
            # its own start (a replacement a later level split into one piece per character: each maps to the whole
            # source, and the previous piece's end is the source's end)
            first = min(p.start, pieces[k - 1].end) if k else 0
            inner_first = p.start
        k = bisect.bisect_right(views, end - 1) - 1
        p = pieces[k]
        view_end = views[k + 1] if k + 1 < len(pieces) else len(self.text)
        if p.same and end < view_end:
            last = inner_last = p.start + end - p.view
        else:  # the piece's last character: grown up to the next piece's start, never short of its own end
            last = max(p.end, pieces[k + 1].start) if k + 1 < len(pieces) else len(self.original)
            inner_last = p.end
        if first < inner_first or inner_last < last:
            first, last = self._not_over_continuations(first, inner_first, inner_last, last)
        if self._words is not None:
            return self._word_markers(first, inner_first, inner_last, last)
        return first, last

    def _not_over_continuations(self, first: int, inner_first: int, inner_last: int, last: int) -> tuple[int, int]:
        """``(first, last)`` grown over what the view read as nothing beside the value, but not over a line
        continuation there (``_CONTINUATION``): it is the line's end, not the value's (``See 212-555-0173\\⏎.`` took the
        ``\\⏎`` and the scrub joined the lines; ``Regards,\\⏎jane@example.org`` the same before the address)."""
        original = self.original
        if first < inner_first and "\\" in original[first:inner_first]:
            for m in _REMOVED_CONTINUATION.finditer(original, first, inner_first):
                first = m.end()
        if inner_last < last and "\\" in original[inner_last:last]:
            m = _REMOVED_CONTINUATION.search(original, inner_last, last)
            if m is not None:
                last = m.start()
        return first, last

    def _word_markers(self, first: int, inner_first: int, inner_last: int, last: int) -> tuple[int, int]:
        """``(first, last)``, grown over ``[first, inner_first)`` and ``[inner_last, last)``, not out of the encoded-word
        (or run of adjacent words) the value is in, nor over one of its Q words' markers alone. A Q word's characters
        map back one by one and its ``=?charset?Q?`` and ``?=`` are read as nothing, as the whitespace between two
        words is: grown over, a value at a Q word's end took its ``?=`` (``=?utf-8?Q?Call_<PHONE> ok``), one at its
        start its ``=?utf-8?Q?``, one at a word's end the next word's whitespace and ``=?utf-8?q?``, and the text held
        no encoded-word any more. A value that is a run of words' whole text takes both (the run is gone whole, as a B
        word a value is in). Binary searches among the markers: linear in the values."""
        heads, tails, gaps = self._heads, self._tails, self._gaps
        # the grown end stops at the next word's gap or marker, the grown start at the last word's
        stops = [marks[i][0] for marks in (heads, gaps) for i in (bisect.bisect_left(marks, (inner_last,)),)
                 if i < len(marks) and marks[i][0] < last]
        last = min(stops, default=last)
        starts = [marks[i][1] for marks in (tails, gaps) for i in (bisect.bisect_right(marks, (inner_first,)) - 1,)
                  if i >= 0 and first < marks[i][1] <= inner_first]
        first = max(starts, default=first)
        # a value across two words or more (B or Q, mixed: ``=?utf-8?b?MjEyLTU1NS0=?= =?utf-8?q?0173?=``) takes every
        # word it touches whole: cut, a word's marker stays without its word (``<PHONE>?=``), and a B word, one piece
        # of the view, is taken whole whatever part of it the value is
        words = self._words
        w = bisect.bisect_right(words, (inner_first, len(self.original))) - 1  # the last word starting at or before
        if w < 0 or words[w][1] <= inner_first:
            w += 1
        v = bisect.bisect_left(words, (inner_last,)) - 1  # the last word starting before the value's end
        if w < v:
            return min(first, words[w][0]), max(last, words[v][1])
        h = bisect.bisect_left(heads, (first,))  # the value's own word's head, grown over
        head = h < len(heads) and heads[h][1] <= inner_first
        t = bisect.bisect_left(tails, (inner_last,))  # and its tail
        tail = t < len(tails) and tails[t][1] <= last
        if head and not tail:
            first = heads[h][1]
        elif tail and not head:
            last = tails[t][0]
        return first, last


def _pieces_of(text: str, changes: list[tuple[int, int, str]]) -> tuple[str, list[_Piece]]:
    """The text with each ``(start, end, replacement)`` (sorted, disjoint) applied, and its pieces."""
    out, pieces, at, view = [], [], 0, 0
    for start, end, new in changes:
        if start > at:
            out.append(text[at:start])
            pieces.append(_Piece(view, at, start, True))
            view += start - at
        if new:
            out.append(new)
            pieces.append(_Piece(view, start, end, False))
            view += len(new)
        at = end
    if at < len(text):
        out.append(text[at:])
        pieces.append(_Piece(view, at, len(text), True))
    return "".join(out), pieces


def _compose(outer: list[_Piece], inner: Canonical) -> list[_Piece]:
    """Pieces mapping the outer view straight to ``inner.original`` (outer was made from ``inner.text``)."""
    if inner.identity:
        return outer
    composed = []
    for p in outer:
        if p.same:  # copied: split it wherever the inner map changes kind
            i = p.start
            while i < p.end:
                k = bisect.bisect_right(inner._views, i) - 1
                q = inner._pieces[k]
                stop = min(p.end, inner._pieces[k + 1].view if k + 1 < len(inner._pieces) else p.end)
                if q.same:
                    start = q.start + i - q.view
                    composed.append(_Piece(p.view + i - p.start, start, start + stop - i, True))
                else:
                    composed.append(_Piece(p.view + i - p.start, q.start, q.end, False))
                    # every character of a replacement maps to its whole source: one piece per character
                    for j in range(i + 1, stop):
                        composed.append(_Piece(p.view + j - p.start, q.start, q.end, False))
                i = stop
        else:
            composed.append(_Piece(p.view, *inner.strict_span(p.start, p.end), False))
    return composed


def canonical(text: str, ambiguous: bool = True, *, tier: int | None = None) -> Canonical:
    """The canonical view of ``text`` (see the module's docstring); with ``ambiguous=False``, without the readings
    marked ambiguous (``_ESCAPE_OLDER``): the view the ``Scrubber`` also reads, so that no reading can unmask what the
    older ones masked. ``tier``: the view with the readings up to that tier's (``TOP_TIER``, or ``OLDER`` with
    ``ambiguous=False``)."""
    if tier is None:
        tier = TOP_TIER if ambiguous else OLDER
    view = Canonical(text, text, None)
    if not text.isascii():
        changes = []
        non_ascii = _NON_ASCII.findall(text)
        if len(non_ascii) * 8 > len(text):  # mostly non-ASCII (CJK, Cyrillic...): one scan in C
            for m in _special_run().finditer(text):
                at = m.start()
                for offset, char in enumerate(m.group()):
                    changes.append((at + offset, at + offset + 1, _folded_at(text, at + offset, char)))
        elif any(_special(char) for char in set(non_ascii)):  # a few accents: ~6x cheaper than the scan above
            for m in _NON_ASCII.finditer(text):
                if _special(m.group()):
                    changes.append((m.start(), m.end(), _folded_at(text, m.start(), m.group())))
        if changes:
            folded, pieces = _pieces_of(text, changes)
            view = Canonical(text, folded, pieces)
    markers: list[tuple[str, int, int]] = []  # encoded-words' "=?charset?Q?", "?=" and gaps (``Canonical.span``)
    if "=" in view.text:
        quoted = _quoted_printable(view.text, tier)
        if "=?" in view.text:  # a mail header's encoded-words: read whole, no quoted-printable escape inside
            words = _encoded_words(view.text, markers)
            if markers and not view.identity:  # in the text's offsets
                markers = [(kind, *view.strict_span(a, b)) for kind, a, b in markers]
            if words:
                inside = [(start, end) for start, end, _ in words]
                quoted = sorted(words + [q for q in quoted if not _overlaps(q, inside)])
        if quoted:
            decoded, pieces = _pieces_of(view.text, quoted)
            view = Canonical(text, decoded, _compose(pieces, view))
    if "+" in view.text and "=" in view.text:
        pluses = _form_pluses(view.text, tier=tier)
        if pluses:
            spaced, pieces = _pieces_of(view.text, pluses)
            view = Canonical(text, spaced, _compose(pieces, view))
    if "%" in view.text or "&" in view.text or "\\" in view.text:
        starts, before_escapes = None, view.text
        for _ in range(NESTED_LEVELS):
            escapes = _escapes(view.text, starts, tier)
            if not escapes:
                break
            before = view.text
            decoded, pieces = _pieces_of(before, escapes)
            view = Canonical(text, decoded, _compose(pieces, view))
            starts = _next_level(decoded, escapes, before)
            if not starts:
                break
        if "%" in view.text:
            latin1 = _latin1_bytes(view.text, tier)
            if latin1:
                decoded, pieces = _pieces_of(view.text, latin1)
                view = Canonical(text, decoded, _compose(pieces, view))
        if view.text is not before_escapes and "+" in view.text and "=" in view.text:
            # Again once the escapes are read: a "+", "&" or "=" an escape made may make a form value
            # (``href="/c?a=1&amp;phone=202&#43;555&#43;0173"``, JSON's ``"phone=202+555+0173\u0026x=1"``). A "+" a
            # URL escape made (``%2B``, ``%252B``) is a plus, not a space.
            literal = frozenset(p.view for p in view._pieces
                                if not p.same and view.text[p.view] == "+" and "%" in text[p.start:p.end])
            pluses = _form_pluses(view.text, literal, tier)
            if pluses:
                spaced, pieces = _pieces_of(view.text, pluses)
                view = Canonical(text, spaced, _compose(pieces, view))
    if "\n" in view.text or "\r" in view.text:
        breaks = _number_breaks(view.text)
        if breaks:
            joined, pieces = _pieces_of(view.text, breaks)
            view = Canonical(text, joined, _compose(pieces, view))
    if markers:
        view._heads, view._tails, view._gaps, view._words = ([(a, b) for kind, a, b in markers if kind == name]
                                                             for name in ("head", "tail", "gap", "word"))
    return view
