"""Phone numbers in text: the plain functions behind ``TunedPhoneRecognizer`` (``corpusforge.pipeline.pii.recognizers``).

No Presidio here: the ``Scrubber`` runs ``phone_spans`` on the windows of a text's phone candidates (the screen's
digit runs, which every numeric document id has) to decide whether that text needs Presidio at all.
"""
from __future__ import annotations

import functools
import re
from typing import Iterable

import phonenumbers

# A space between the groups of a number (a no-break one too: typeset text, ``&nbsp;``; a URL's ``%20``, read as U+2007); not a tab,
# which separates columns (``'01\t012\t0123\t01234'.expandtabs()`` in Python's own documentation is no phone number,
# nor is a row of a TSV file).
_SPACE = "[ \u00a0\u2007]"


def _context_re(words: Iterable[str]) -> re.Pattern:
    return re.compile(r"(?<!\w)(?:" + "|".join(words) + r")", re.IGNORECASE)


def has_context(text: str, start: int, context: re.Pattern, window: int = 40) -> bool:
    """Whether a context word occurs in the ``window`` characters before ``start``."""
    return context.search(text, max(0, start - window), start) is not None


def cue_pattern(words: Iterable[str]) -> re.Pattern:
    """A whole cue word, then at most three short words in the same sentence and line, then the end:
    "Call", "Tel.: ", "reach the office at"."""
    gap = r"[^\w.!?\n]"
    return re.compile(r"(?<!\w)(?:" + "|".join(words) + rf")(?!\w)(?:{gap}{{1,3}}\w{{0,12}}){{0,3}}{gap}{{0,3}}$",
                      re.IGNORECASE)


# --------------------------------------------------------------------------------------------- phone
# Words that announce a phone number (English, German, French, Italian, Spanish, Dutch, Portuguese,
# Polish, Japanese). A number not written like one (a bare digit run, "555-1234", "609 141 777") needs
# one of them right before it. Deliberately absent: "number", "no.", "text" (they precede IDs and counts).
PHONE_CUE = cue_pattern([
    "phones?", "telephones?", r"tel\.?", "mobiles?", "mobil", "mob", r"cell(?:phone)?", "fax", "call(?:s|ed|ing)?",
    "sms", "whatsapp", "contact", "reach", "dial", "hotline", "helpline", "telefon(?:nummer)?", "handy",
    "rufnummer", "anrufen", "rufen", r"t[ée]l[ée]phone", r"t[ée]l\.?", "portable", "appel(?:ez|er)?", "joindre",
    "telefono", "cellulare", "chiama(?:re)?", r"tel[ée]fono", r"m[óo]vil", "llame", "llamar", "telefoon", "bel",
    "bellen", "telefone", "celular", "ligue", "ligar", "contato", "kontakt", r"zadzwo[ńn]", "telefonu", "電話",
    "電話番号", "携帯", "お問い合わせ", "問い合わせ", "連絡先",
])
_GROUP = r"(?:\(\+?\d{1,5}\)|\d+)"
# A run of digit groups: "+44(0)115 496 0914", "(591)341-7776", "+33 (0)1 41 63 60 83", "780.563.6083".
PHONE_RUN = re.compile(
    rf"(?:\+{_SPACE}?)?{_GROUP}"
    rf"(?:(?:{_SPACE}?[.\-/]{_SPACE}?|{_SPACE}){_GROUP}|{_SPACE}?\(\d{{1,5}}\)|(?<=\)){_SPACE}?\d+)*"
)
PHONE_EXT = re.compile(rf",?{_SPACE}?(?:ext\.?|extension|x|\#|poste|durchwahl|dw\.?){_SPACE}?\d{{1,6}}", re.IGNORECASE)
_GROUP_TOKEN = re.compile(r"\(\+?\d+\)|\d+")


def _is_date(groups: list[str], seps: list[str]) -> bool:
    if len(groups) == 2:  # a year range: 1990-2000, 2019/2020
        return all(len(g) == 4 and g[:2] in ("19", "20") for g in groups)
    if len(groups) != 3 or len(set(seps)) != 1:
        return False
    a, b, c = (int(g) for g in groups)
    la, lb, lc = (len(g) for g in groups)
    if la == 4 and lb <= 2 and lc <= 2:  # 2024-03-15
        return 1 <= b <= 12 and 1 <= c <= 31
    if la <= 2 and lb <= 2 and lc in (2, 4):  # 15.03.2024, 03/15/24
        return (1 <= a <= 31 and 1 <= b <= 12) or (1 <= a <= 12 and 1 <= b <= 31)
    return False


def isbn13_ok(digits: str) -> bool:
    if len(digits) != 13 or digits[:3] not in ("978", "979"):
        return False
    return sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits)) % 10 == 0


def isbn10_ok(digits: str) -> bool:
    if len(digits) != 10:
        return False
    return sum((10 - i) * int(d) for i, d in enumerate(digits)) % 11 == 0


_ISBN_CONTEXT = _context_re([r"isbn(?:-1[03])?:?", r"issn"])


def _sentence_after(text: str, end: int) -> bool:
    """Whether the number at ``end`` is glued to what follows by punctuation a sentence or a row goes on after,
    not by a part of a longer token: a full stop and a capitalised word (``202-555-0173.Then``: the space left out;
    not a file's or a domain's ``.txt``, ``.com``, nor ``.NET``), a comma and a letter (a CSV row:
    ``Jane Doe,202-555-0173,NY``; a comma and a digit is a thousands separator's or a list's)."""
    nxt, after = text[end], text[end + 1:end + 3]
    if nxt == ",":
        return after[:1].isalpha()
    return nxt == "." and len(after) == 2 and after[0].isupper() and after[1].islower()


def _boundary_ok(text: str, start: int, end: int) -> bool:
    """The span is a whole token: not glued to words, paths, versions, times, IPv6 or currency."""
    if start > 0:
        prev = text[start - 1]
        # "=" is no boundary: a query or a key=value pair holds numbers as written (?phone=202.555.0173); the
        # shape rules and cue words decide, as after a space ("timeout=86400000" is no phone there either)
        if prev.isalnum() or prev == "_" or prev in ".-/+@#$€£¥%&\\":
            return False
        if prev == ":" and start > 1 and (text[start - 2].isdigit() or text[start - 2] == ":"):
            return False
    if end < len(text):
        nxt = text[end]
        if nxt.isalnum() or nxt == "_" or nxt in "@%€$£¥":
            return False
        if nxt in ".-/:,'" and end + 1 < len(text) and text[end + 1].isalnum() and not _sentence_after(text, end):
            return False
    return True


@functools.lru_cache(maxsize=None)
def _regions(regions: tuple[str, ...]) -> tuple[str, ...]:
    """The supported regions, those accepting the most number lengths first (fewest parses per number)."""
    def breadth(region: str) -> int:
        metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
        return -len(metadata.general_desc.possible_length) if metadata else 0
    ordered = tuple(sorted((r for r in regions if r in phonenumbers.SUPPORTED_REGIONS), key=breadth))
    for region in ordered:  # load each region's metadata now rather than on a document
        _possible("0123456789", region)
    return ordered


def _possible(number: str, region: str | None) -> bool:
    try:  # the view's escaped space (U+2007, canonical.URL_SPACE): phonenumbers reads no figure space
        return phonenumbers.is_possible_number(phonenumbers.parse(number.replace("\u2007", " "), region))
    except phonenumbers.NumberParseException:
        return False


def _valid_somewhere(number: str, regions: tuple[str, ...]) -> bool:
    for region in _regions(regions):
        try:
            if phonenumbers.is_valid_number(phonenumbers.parse(number.replace("\u2007", " "), region)):
                return True
        except phonenumbers.NumberParseException:
            pass
    return False


def _written_like_a_phone(span: str, tokens: list[str], seps: list[str], stripped: list[str], digits: str,
                          regions: tuple[str, ...]) -> bool:
    """The national-format shape rules, for a number without a cue word before it."""
    nd = len(digits)
    lengths = [len(t) for t in tokens]
    trunk = digits[0] == "0"
    if len(tokens) == 1:
        # A bare digit run: only with a trunk prefix and valid (assigned range): 0638967464, 07500787177.
        return trunk and 10 <= nd <= 11 and not isbn10_ok(digits) and _valid_somewhere(span, regions)
    spaced_list = len(tokens) >= 3 and all(s == " " for s in seps) and len(set(lengths)) == 1
    thousands = (len(set(stripped)) == 1 and stripped[0] in ("", ".") and seps[0] in (" ", ".", "\u00a0", "\u2007")
                 and lengths[0] <= 3 and all(n == 3 for n in lengths[1:]))
    if spaced_list or thousands:  # "10 20 30 40", "609 141 777" (or 609 million): French "04 15 39 15 00" only
        return trunk and all(n >= 2 for n in lengths)
    if span.startswith("("):  # (591)341-7776, (0161) 4960066; not "(2019) 123456"
        return not (lengths[0] == 4 and tokens[0][:2] in ("19", "20")) and lengths[-1] >= 3
    if trunk:  # 0711 123456, 020 7946 0958; not "012 0123"
        return nd >= 9 and all(n >= 2 for n in lengths)
    if len(tokens) >= 3:  # 780-563-6083, 1-800-555-0199, 12 3915-0008
        first_ok = tokens[0] == "1" or 2 <= lengths[0] <= 4
        return first_ok and all(2 <= n <= 4 for n in lengths[1:-1]) and 3 <= lengths[-1] <= 4
    return False  # two groups without a trunk prefix: 555-1234 needs a cue word


_CALLING_CODES = frozenset(str(code) for code in phonenumbers.COUNTRY_CODE_TO_REGION_CODE)


def dotted_with_calling_code(tokens: list[str]) -> bool:
    """Whether digit groups written with dots only are an international number whose "+" was left out:
    ``1.202.555.0173`` (NANP), ``33.1.42.68.53.00``, ``44.20.7946.0958``.

    Dotted groups are mostly versions and object identifiers (``10.0.19041.1234``, ``1.3.6.1.4.1``,
    ``120.0.6099.109``), so the shape is narrow and the number must be *valid*, not just possible: the first
    group is a country calling code; at least three groups; each later group has 2-4 digits, except a
    one-digit group right after the code that is not ``0`` (the French area digit, ``33.1.…``), and after
    ``1`` (NANP) the groups are 3-3-4; 10 to 15
    digits in all; and ``phonenumbers`` says ``+`` and those digits are a number in an assigned range of that
    country. A version would have to hit an assigned area and exchange code by chance: ``1.2.3.4`` has too few
    digits, ``10.0.19041.1234`` no calling code, ``7.10.100.1000`` too few digits for Russia and
    ``1.101.200.3000`` no valid area code (measured in docs/pii.md)."""
    if len(tokens) < 3 or tokens[0] not in _CALLING_CODES:
        return False
    if tokens[0] == "1" and [len(t) for t in tokens[1:]] != [3, 3, 4]:
        return False  # a NANP number is written 3-3-4, always; "1.84.396.48304" is a version
    for i, group in enumerate(tokens[1:], 1):
        if not (2 <= len(group) <= 4 or (i == 1 and len(group) == 1 and group != "0")):
            return False
    digits = "".join(tokens)
    if not 10 <= len(digits) <= 15:
        return False
    try:
        return phonenumbers.is_valid_number(phonenumbers.parse("+" + digits, None))
    except phonenumbers.NumberParseException:
        return False


def phone_number_ok(text: str, start: int, end: int, regions: tuple[str, ...], token_end: int | None = None) -> bool:
    """Whether ``text[start:end]`` (digits and separators, no extension) is written like a phone number.

    ``token_end`` is where the whole token ends (after an extension such as ``x123``), for the boundary check.
    """
    span = text[start:end]
    groups = list(_GROUP_TOKEN.finditer(span))
    tokens = [g.group().strip("()+") for g in groups]
    nd = sum(map(len, tokens))
    if not 7 <= nd <= 15 or not _boundary_ok(text, start, end if token_end is None else token_end):
        return False
    digits = "".join(tokens)
    seps = [span[a.end():b.start()] for a, b in zip(groups, groups[1:])]
    stripped = [s.strip() for s in seps]
    if _is_date(tokens, stripped) or _is_date(tokens, seps):
        return False
    international = span.startswith("+") or span.startswith("(+")
    only_dots = all(s == "." for s in stripped) and len(tokens) > 1
    # no version or OID starts with "+": "+1.202.555.0173" and "+33.1.42.68.53.00" are numbers written with dots
    if only_dots and not international:
        if dotted_with_calling_code(tokens):
            return True  # 1.202.555.0173, 33.1.42.68.53.00: the "+" left out
        if any(len(t) == 1 for t in tokens) or len(tokens) == 2 or \
                (len(tokens) == 4 and all(len(t) <= 3 for t in tokens)):
            return False  # versions (10.0.19041.1), object identifiers, IPv4-shaped, decimals
    if isbn13_ok(digits) or (isbn10_ok(digits) and len(tokens) == 4 and set(stripped) == {"-"}):
        return False
    if has_context(text, start, _ISBN_CONTEXT, window=12):
        return False
    if len(tokens) > 1 and len(tokens[-1]) == 1:
        return False  # a trailing one-digit group is glued on ("call 555-123-4567 2 times"): try the sub-runs
    context = PHONE_CUE.search(text, max(0, start - 48), start) is not None
    if not international and span.startswith("00") and nd >= 10 and _possible("+" + digits[2:], None):
        return True
    if international:
        cleaned = re.sub(r"\(0\)", "", span)
        return 8 <= len(re.sub(r"\D", "", cleaned)) <= 15 and _possible(cleaned, None)
    if nd > 12:
        return False
    if not (context or _written_like_a_phone(span, tokens, seps, stripped, digits, regions)):
        return False
    return any(_possible(span, region) for region in _regions(regions))


def phone_spans(text: str, regions: tuple[str, ...]) -> list[tuple[int, int]]:
    """Spans of phone numbers (with any extension) in ``text``."""
    found = []
    for run in PHONE_RUN.finditer(text):
        start, end = run.span()
        if sum(map(str.isdigit, run.group())) < 7:
            continue
        ext = PHONE_EXT.match(text, end)
        if ext and phone_number_ok(text, start, end, regions, token_end=ext.end()):
            found.append((start, ext.end()))
            continue
        if phone_number_ok(text, start, end, regions):
            found.append((start, end))
            continue
        # A run can glue a number to its neighbours ("call 555-123-4567 2 times"): try its sub-runs that
        # start and end at a space (elsewhere the boundary check rejects them anyway).
        bounds = [m.span() for m in _GROUP_TOKEN.finditer(text, start, end)]
        if len(bounds) > 8:
            continue
        cuts = [i for i in range(1, len(bounds)) if text[bounds[i - 1][1]:bounds[i][0]] in (" ", "\u00a0", "\u2007")]
        subs = ([(bounds[0][0], bounds[c - 1][1]) for c in reversed(cuts)]
                + [(bounds[c][0], bounds[-1][1]) for c in cuts])
        for s, e in sorted(subs, key=lambda span: span[0] - span[1]):  # longest first
            if phone_number_ok(text, s, e, regions):
                found.append((s, e))
                break
    return found
