"""Presidio recognizers tuned for pretraining text.

Presidio's defaults, run without an NLP model, miss phone numbers written ``+1-…`` or with ``ext.``, miss
2-series Mastercards, and fire on UUIDs, object identifiers, dates, versions and ISBNs. The recognizers
here are Presidio recognizers (subclasses of its own, or ``LocalRecognizer``s, registered through its
``RecognizerRegistry``) with whole-token boundaries, shape rules, cue words and checksums. Their decisions
are plain functions (``phone_spans``, ``card_number_ok``, ``ip_ok``, ``ssn_ok``...) tested on their own.

Every recognizer declares a ``SCREEN`` (``corpusforge.pipeline.pii.screen``): the cheap scans that find where it could
match, and how much context it reads. The recognizers themselves have plain full-text semantics; the
``Scrubber`` wraps them so they only ever see the windows their screen selects.
"""
from __future__ import annotations

import functools
import ipaddress
import re
import urllib.parse
from typing import Iterable

from corpusforge.pipeline.pii import presidio  # noqa: F401  (first: Presidio without transformers and torch)
import phonenumbers
from presidio_analyzer import EntityRecognizer, LocalRecognizer, Pattern, PatternRecognizer, RecognizerResult
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    CryptoRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    UsSsnRecognizer,
)

from corpusforge.pipeline.pii.screen import SCREENS

_SPACE = "[ \t\u00a0]"


class StdlibPatterns:
    """``PatternRecognizer.analyze`` with the stdlib ``re`` module: the same patterns, ``validate_result`` /
    ``invalidate_result`` and scores, without Presidio's per-call timing, logging and per-match explanation
    objects, which cost more than the matching on short texts. Patterns are compiled once, case-sensitive
    (ours spell out case where it matters: base58, IBAN)."""

    REGEX_FLAGS = re.DOTALL | re.MULTILINE

    def analyze(self, text, entities, nlp_artifacts=None, regex_flags=None):
        compiled = self.__dict__.get("_stdlib_compiled")
        if compiled is None:
            compiled = self._stdlib_compiled = [(p, re.compile(p.regex, self.REGEX_FLAGS)) for p in self.patterns]
        results = []
        for pattern, regex in compiled:
            for match in regex.finditer(text):
                start, end = match.span()
                if start == end:
                    continue
                matched = text[start:end]
                score = pattern.score
                valid = self.validate_result(matched)
                if valid is not None:
                    score = EntityRecognizer.MAX_SCORE if valid else EntityRecognizer.MIN_SCORE
                if score > EntityRecognizer.MIN_SCORE and self.invalidate_result(matched):
                    score = EntityRecognizer.MIN_SCORE
                if score > EntityRecognizer.MIN_SCORE:
                    results.append(_result(self, start, end, score))
        return EntityRecognizer.remove_duplicates(results) if len(results) > 1 else results


def _context_re(words: Iterable[str]) -> re.Pattern:
    return re.compile(r"(?<!\w)(?:" + "|".join(words) + r")", re.IGNORECASE)


def has_context(text: str, start: int, context: re.Pattern, window: int = 40) -> bool:
    """Whether a context word occurs in the ``window`` characters before ``start``."""
    return context.search(text, max(0, start - window), start) is not None


def _cue_re(words: Iterable[str]) -> re.Pattern:
    """A whole cue word, then at most three short words in the same sentence and line, then the end:
    "Call", "Tel.: ", "reach the office at"."""
    gap = r"[^\w.!?\n]"
    return re.compile(r"(?<!\w)(?:" + "|".join(words) + rf")(?!\w)(?:{gap}{{1,3}}\w{{0,12}}){{0,3}}{gap}{{0,3}}$",
                      re.IGNORECASE)


# --------------------------------------------------------------------------------------------- phone
# Words that announce a phone number (English, German, French, Italian, Spanish, Dutch, Portuguese,
# Polish, Japanese). A number not written like one (a bare digit run, "555-1234", "609 141 777") needs
# one of them right before it. Deliberately absent: "number", "no.", "text" (they precede IDs and counts).
PHONE_CUE = _cue_re([
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


def _boundary_ok(text: str, start: int, end: int) -> bool:
    """The span is a whole token: not glued to words, paths, versions, times, IPv6 or currency."""
    if start > 0:
        prev = text[start - 1]
        if prev.isalnum() or prev == "_" or prev in ".-/+@#$€£¥%&=\\":
            return False
        if prev == ":" and start > 1 and (text[start - 2].isdigit() or text[start - 2] == ":"):
            return False
    if end < len(text):
        nxt = text[end]
        if nxt.isalnum() or nxt == "_" or nxt in "@%€$£¥":
            return False
        if nxt in ".-/:,'" and end + 1 < len(text) and text[end + 1].isalnum():
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
    try:
        return phonenumbers.is_possible_number(phonenumbers.parse(number, region))
    except phonenumbers.NumberParseException:
        return False


def _valid_somewhere(number: str, regions: tuple[str, ...]) -> bool:
    for region in _regions(regions):
        try:
            if phonenumbers.is_valid_number(phonenumbers.parse(number, region)):
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
    thousands = (len(set(stripped)) == 1 and stripped[0] in ("", ".") and seps[0] in (" ", ".", "\u00a0")
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
    only_dots = all(s == "." for s in stripped) and len(tokens) > 1
    if only_dots and (any(len(t) == 1 for t in tokens) or len(tokens) == 2 or
                      (len(tokens) == 4 and all(len(t) <= 3 for t in tokens))):
        return False  # versions (10.0.19041.1), object identifiers, IPv4-shaped, decimals
    if isbn13_ok(digits) or (isbn10_ok(digits) and len(tokens) == 4 and set(stripped) == {"-"}):
        return False
    if has_context(text, start, _ISBN_CONTEXT, window=12):
        return False
    if len(tokens) > 1 and len(tokens[-1]) == 1:
        return False  # a trailing one-digit group is glued on ("call 555-123-4567 2 times"): try the sub-runs
    context = PHONE_CUE.search(text, max(0, start - 48), start) is not None
    international = span.startswith("+") or span.startswith("(+")
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
        cuts = [i for i in range(1, len(bounds)) if text[bounds[i - 1][1]:bounds[i][0]] in (" ", "\t", "\u00a0")]
        subs = ([(bounds[0][0], bounds[c - 1][1]) for c in reversed(cuts)]
                + [(bounds[c][0], bounds[-1][1]) for c in cuts])
        for s, e in sorted(subs, key=lambda span: span[0] - span[1]):  # longest first
            if phone_number_ok(text, s, e, regions):
                found.append((s, e))
                break
    return found


class TunedPhoneRecognizer(LocalRecognizer):
    """Phone numbers in international and national formats, with extensions, validated by ``phonenumbers``.

    Presidio's own ``PhoneRecognizer`` runs ``phonenumbers.PhoneNumberMatcher`` once per region over the
    whole text and keeps only numbers that are *valid* (assigned ranges), so it misses numbers written
    ``+1-…``, ``(555) …`` or with ``ext.`` and is the slowest recognizer. This one finds digit runs with one
    regex, then checks shape (trunk prefix, grouping, context words), date/version/ISBN look-alikes, and
    that the number is *possible* in one of the configured regions.
    """

    ENTITY = "PHONE_NUMBER"
    SCREEN = SCREENS["phone"]
    SCORE = 0.7

    def __init__(self, regions: Iterable[str], supported_language: str = "en"):
        self.regions = tuple(regions)
        super().__init__(supported_entities=[self.ENTITY], supported_language=supported_language,
                         name="CorpusforgePhoneRecognizer", context=["phone", "tel", "mobile", "fax", "call"])

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):
        return [_result(self, start, end, self.SCORE) for start, end in phone_spans(text, self.regions)]


def _result(recognizer, start: int, end: int, score: float) -> RecognizerResult:
    return RecognizerResult(
        entity_type=recognizer.supported_entities[0], start=start, end=end, score=score,
        recognition_metadata={RecognizerResult.RECOGNIZER_NAME_KEY: recognizer.name,
                              RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: recognizer.id},
    )


# ---------------------------------------------------------------------------------------- credit card
def luhn_ok(digits: str) -> bool:
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d)
        if i % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def card_brand(digits: str) -> str | None:
    """The card network a number's issuer prefix and length belong to, or None."""
    n, p2, p3, p4, p6 = len(digits), int(digits[:2]), int(digits[:3]), int(digits[:4]), int(digits[:6])
    if digits[0] == "4" and n in (13, 16, 19):
        return "visa"
    if (51 <= p2 <= 55 or 2221 <= p4 <= 2720) and n == 16:
        return "mastercard"
    if p2 in (34, 37) and n == 15:
        return "amex"
    if (p4 == 6011 or 644 <= p3 <= 649 or p2 == 65 or 622126 <= p6 <= 622925) and 16 <= n <= 19:
        return "discover"
    if p2 == 35 and 16 <= n <= 19:  # JCB issues 3528-3589; the rest of 35 is unassigned, still card-shaped
        return "jcb"
    if (300 <= p3 <= 305 or p4 == 3095 or p2 in (36, 38, 39)) and 14 <= n <= 19:
        return "diners"
    if 2200 <= p4 <= 2204 and 16 <= n <= 19:
        return "mir"
    if p2 == 62 and 16 <= n <= 19:
        return "unionpay"
    if (p2 == 50 or 56 <= p2 <= 69) and 12 <= n <= 19:
        return "maestro"
    return None


def card_number_ok(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    return 12 <= len(digits) <= 19 and len(set(digits)) > 1 and luhn_ok(digits) and card_brand(digits) is not None


_NUM_BEFORE = r"(?<![\w.\-/+:])"
_NUM_AFTER = r"(?![\w]|[.\-/:]\d)"


class TunedCardRecognizer(StdlibPatterns, CreditCardRecognizer):
    """Presidio's credit-card recognizer with every network's prefixes (incl. Mastercard 2221-2720),
    contiguous or grouped (4-4-4-4, 4-4-4-4-3, 4-6-5) numbers only, Luhn + issuer prefix + length."""

    SCREEN = SCREENS["card"]
    PATTERNS = [
        Pattern("card (contiguous)", _NUM_BEFORE + r"\d{12,19}" + _NUM_AFTER, 0.3),
        Pattern("card (4-4-4-4)", _NUM_BEFORE + r"\d{4}([ \-])\d{4}\1\d{4}\1\d{1,4}(?:\1\d{1,3})?" + _NUM_AFTER, 0.3),
        Pattern("card (4-6-5)", _NUM_BEFORE + r"\d{4}([ \-])\d{6}\1\d{4,5}" + _NUM_AFTER, 0.3),
    ]

    def __init__(self, supported_language: str = "en"):
        super().__init__(patterns=self.PATTERNS, supported_language=supported_language,
                         name="CorpusforgeCardRecognizer")

    def validate_result(self, pattern_text: str) -> bool:
        return card_number_ok(pattern_text)


# ------------------------------------------------------------------------------------------------- IP
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IP_NOT_AFTER = re.compile(
    r"(?<![^\W\d_])(?:version|release|build|ver\.?|v|oid|arc|object identifier|rfc|firmware|kernel|python|"
    r"section|§)[\s:#]*$", re.IGNORECASE)


# Non-global IPv4 blocks (ipaddress's private networks plus 100.64.0.0/10), as integer ranges.
_IPV4_NOT_GLOBAL = sorted(
    (int(net.network_address), int(net.broadcast_address))
    for net in [*ipaddress._IPv4Constants._private_networks, ipaddress.ip_network("100.64.0.0/10")]
)
_IPV6_DOCUMENTATION = ipaddress.ip_network("2001:db8::/32")


def ipv4_ok(text: str, keep_private: bool) -> bool:
    """For a dotted quad already matched by the IPv4 pattern (octets 0-255, optional /prefix)."""
    octets = text.split("/")[0].split(".")
    if all(len(octet) == 1 for octet in octets):
        return False  # "1.2.3.4", "3.5.6.0": versions (and 1.1.1.1, 8.8.8.8 are public resolvers, no one's)
    if not keep_private:
        return True
    value = int(octets[0]) << 24 | int(octets[1]) << 16 | int(octets[2]) << 8 | int(octets[3])
    return not any(lo <= value <= hi for lo, hi in _IPV4_NOT_GLOBAL)  # 10/8, 192.168/16...: no one's


def ip_ok(text: str, keep_private: bool) -> bool:
    """Whether ``text`` is an IP address that identifies someone (see ``PIIConfig.keep_private_ips``)."""
    try:
        iface = ipaddress.ip_interface(text.split("%")[0])
    except ValueError:
        return False
    address = iface.ip
    if address.version == 4:
        return ipv4_ok(text, keep_private)
    if "." not in text and len([g for g in text.split("/")[0].split(":") if g]) < 3:
        return False  # "1::2", "a::b": slices and C++ scopes, not addresses anyone writes
    if not keep_private:
        return True
    # IPv6: only loopback, unspecified and the documentation range identify no one. Link-local and other
    # non-global addresses written in full can embed a MAC address (EUI-64 interface ids), and unique-local
    # ones a random site id; short forms such as fe80::1 or ff02::1 are already left alone (fewer than 3 groups).
    return not (address.is_loopback or address.is_unspecified or address in _IPV6_DOCUMENTATION)


def ipv4_context_ok(text: str, start: int) -> bool:
    """False when the dotted quad follows "version", "OID", "RFC"... (1.2.3.4 as a version, 2.5.4.3 as an OID)."""
    return _IP_NOT_AFTER.search(text, max(0, start - 24), start) is None


class TunedIpRecognizer(LocalRecognizer):
    """IPv4 and IPv6 addresses as whole tokens, validated by ``ipaddress``: not the head of an object
    identifier (1.3.6.1.4.1) or a version ("version 1.2.3.4", all-single-digit quads), no bare ``::`` or
    two-group forms (``a[1::2]``), and by default only global addresses. Replaces Presidio's
    ``IpRecognizer``, whose IPv6 expressions dominate its cost and match ``::`` alone."""

    SCREEN = SCREENS["ip"]
    SCORE = 0.8
    IPV4 = re.compile(rf"(?<![\w.\-/:]){_OCTET}(?:\.{_OCTET}){{3}}(?:/(?:3[0-2]|[12]?\d))?(?![\w]|\.\d|-\d)")
    IPV6 = re.compile(r"(?<![\w:.%])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})"
                      r"(?:%[0-9A-Za-z]+)?(?:/\d{1,3})?(?![\w:]|\.\d)")

    def __init__(self, keep_private: bool = True, supported_language: str = "en"):
        self.keep_private = keep_private
        super().__init__(supported_entities=["IP_ADDRESS"], supported_language=supported_language,
                         name="CorpusforgeIPRecognizer", context=["ip", "ipv4", "ipv6"])

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):
        results = []
        if "." in text:
            for m in self.IPV4.finditer(text):
                if ipv4_ok(m.group(), self.keep_private) and ipv4_context_ok(text, m.start()):
                    results.append(_result(self, m.start(), m.end(), self.SCORE))
        if ":" in text:
            for m in self.IPV6.finditer(text):
                if ip_ok(m.group(), self.keep_private):
                    results.append(_result(self, m.start(), m.end(), self.SCORE))
        return results


# ---------------------------------------------------------------------------------------------- email
@functools.lru_cache(maxsize=1)
def _tld_extract():
    import tldextract

    # No suffix_list_urls: use the copy bundled with tldextract, never the network.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def email_domain_ok(address: str) -> bool:
    """The domain ends in a real public suffix (rejects ``a@b.T``, ``lodash@4.17.21``, ``x@self.weights``)."""
    domain = address.rpartition("@")[2]
    parts = _tld_extract()(domain)
    return bool(parts.suffix) and bool(parts.domain)


class TunedEmailRecognizer(StdlibPatterns, EmailRecognizer):
    """Presidio's email recognizer, validated against tldextract's bundled suffix list (never fetched),
    skipping SSH/SCP remotes such as ``git@github.com:org/repo.git``."""

    SCREEN = SCREENS["email"]
    _LOCAL = r"[\w!#$%&'*+/=?^`{|}~-]"
    # Presidio's pattern with the local part bounded to 64 characters (RFC 5321), so a long token without
    # "@" costs linear time, and without its leading \b (an address may start with "+" or "'").
    PATTERNS = [Pattern("Email (bounded)",
                        rf"(?<![\w.!#$%&'*+/=?^`{{|}}~-]){_LOCAL}(?:[\w.!#$%&'*+/=?^`{{|}}~-]{{0,62}}{_LOCAL})?"
                        r"@\w+(?:-+\w+)*(?:\.\w+(?:-+\w+)*)+\b", 0.5)]

    def __init__(self, supported_language: str = "en"):
        super().__init__(patterns=self.PATTERNS, supported_language=supported_language,
                         name="CorpusforgeEmailRecognizer")

    def validate_result(self, pattern_text: str) -> bool:
        return email_domain_ok(pattern_text)

    def analyze(self, text, entities, nlp_artifacts=None, regex_flags=None):
        results = super().analyze(text, entities, nlp_artifacts, regex_flags)
        return [r for r in results if not re.match(r":[\w~/]", text[r.end:r.end + 2])]


# ----------------------------------------------------------------------------------------------- IBAN
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}")
_IBAN_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")


class TunedIbanRecognizer(IbanRecognizer):
    """Presidio's IBAN validation (country format, exact length, mod-97 checksum) on the longest valid
    prefix of each ``XX99...`` token. Presidio's own pattern swallows a following upper-case word ("...9946
    ISBN 978..." or "... SMTP") into the last group and then rejects the whole IBAN."""

    SCREEN = SCREENS["iban"]
    SCORE = 1.0

    def __init__(self, supported_language: str = "en"):
        super().__init__(supported_language=supported_language, exact_match=True, name="CorpusforgeIbanRecognizer")

    def analyze(self, text, entities, nlp_artifacts=None, regex_flags=None):
        results, n = [], len(text)
        for m in _IBAN_START.finditer(text):
            chars, ends, i = [], [], m.start()
            while i < n and len(chars) < 34:
                if text[i] in _IBAN_CHARS:
                    chars.append(text[i])
                    ends.append(i + 1)
                    i += 1
                elif text[i] in " -" and i + 1 < n and text[i + 1] in _IBAN_CHARS and len(chars) % 4 == 0:
                    i += 1  # one separator between groups of four
                else:
                    break
            compact = "".join(chars)
            for length in range(len(compact), 14, -1):
                end = ends[length - 1]
                if (end == n or not text[end].isalnum()) and self.validate_result(compact[:length]):
                    results.append(_result(self, m.start(), end, self.SCORE))
                    break
        return results


# ------------------------------------------------------------------------------------------------ SSN
# "123 45 6789" and "123456789" count as SSNs only right after one of these (same sentence, <= 3 words).
SSN_CUE = _cue_re(["ssns?", r"social security(?: number| no\.?| #)?", r"social sec\.?", r"ss#", r"ss no\.?",
                   "taxpayer", "tin"])


def ssn_ok(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    if len(digits) != 9 or len(set(digits)) == 1:
        return False
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    if area in ("000", "666") or area >= "900" or group == "00" or serial == "0000":
        return False
    return digits not in ("123456789", "078051120", "219099999")


class TunedSsnRecognizer(StdlibPatterns, UsSsnRecognizer):
    """US SSNs: ``123-45-6789`` on its own; ``123 45 6789`` or ``123456789`` only after a word such as "SSN"."""

    SCREEN = SCREENS["ssn"]
    PATTERNS = [
        Pattern("SSN (dashed)", _NUM_BEFORE + r"\d{3}-\d{2}-\d{4}" + _NUM_AFTER, 0.85),
        Pattern("SSN (spaced, needs context)", _NUM_BEFORE + r"\d{3} \d{2} \d{4}(?![\w]| \d)" , 0.3),
        Pattern("SSN (bare, needs context)", _NUM_BEFORE + r"\d{9}" + _NUM_AFTER, 0.3),
    ]

    def __init__(self, supported_language: str = "en"):
        super().__init__(patterns=self.PATTERNS, supported_language=supported_language, name="CorpusforgeSsnRecognizer")

    def invalidate_result(self, pattern_text: str) -> bool:
        return not ssn_ok(pattern_text)

    def analyze(self, text, entities, nlp_artifacts=None, regex_flags=None):
        kept = []
        for r in super().analyze(text, entities, nlp_artifacts, regex_flags):
            if r.score < 0.85:
                if SSN_CUE.search(text, max(0, r.start - 48), r.start) is None:
                    continue
                r.score = 0.85
            kept.append(r)
        return kept


# --------------------------------------------------------------------------------------------- crypto
class TunedCryptoRecognizer(StdlibPatterns, CryptoRecognizer):
    """Bitcoin (base58check P2PKH/P2SH, bech32/bech32m) and Ethereum (0x + 40 hex) addresses as whole tokens."""

    SCREEN = SCREENS["crypto"]
    PATTERNS = [
        Pattern("BTC base58", r"(?<![\w])[13][a-km-zA-HJ-NP-Z1-9]{25,34}(?![\w])", 0.5),
        Pattern("BTC bech32", r"(?<![\w])(?:bc1[ac-hj-np-z02-9]{8,87}|BC1[AC-HJ-NP-Z02-9]{8,87})(?![\w])", 0.5),
        Pattern("ETH", r"(?<![\w])0x[0-9a-fA-F]{40}(?![\w])", 0.5),
    ]

    def __init__(self, supported_language: str = "en"):
        super().__init__(patterns=self.PATTERNS, supported_language=supported_language,
                         name="CorpusforgeWalletRecognizer")

    def validate_result(self, pattern_text: str) -> bool:
        if pattern_text.startswith("0x"):
            return len(set(pattern_text[2:].lower())) > 4  # not 0x000...0 or a repeated filler
        return super().validate_result(pattern_text)


# ------------------------------------------------------------------------------------------------ URL
class PersonalUrlRecognizer(StdlibPatterns, PatternRecognizer):
    """URLs (``http(s)://`` or ``www.``) whose path or query matches one of ``url_patterns`` (``/~jdoe``,
    ``/users/jdoe``, ``?email=``). Never fires on the domain of an email address."""

    ENTITY = "URL"
    SCREEN = SCREENS["url"]
    PATTERNS = [Pattern("URL", r"(?<![\w@.])(?:https?://|www\.)[^\s<>\"'`)\]}]*[^\s<>\"'`)\]}.,;:!?]", 0.5)]

    def __init__(self, url_patterns: Iterable[str], supported_language: str = "en"):
        self.url_patterns = [re.compile(p, re.IGNORECASE) for p in url_patterns]
        super().__init__(supported_entity=self.ENTITY, patterns=self.PATTERNS, supported_language=supported_language,
                         name="CorpusforgePersonalUrlRecognizer")

    def validate_result(self, pattern_text: str) -> bool:
        url = pattern_text if "://" in pattern_text else "http://" + pattern_text
        parts = urllib.parse.urlsplit(url)
        tail = parts.path + ("?" + parts.query if parts.query else "")
        return any(p.search(tail) for p in self.url_patterns)


def build_recognizers(config) -> list:
    """The pattern recognizers for ``config.entities`` (a ``PIIConfig``)."""
    factories = {
        "EMAIL_ADDRESS": lambda: TunedEmailRecognizer(),
        "PHONE_NUMBER": lambda: TunedPhoneRecognizer(config.phone_regions),
        "CREDIT_CARD": lambda: TunedCardRecognizer(),
        "IP_ADDRESS": lambda: TunedIpRecognizer(keep_private=config.keep_private_ips),
        "IBAN_CODE": lambda: TunedIbanRecognizer(),
        "US_SSN": lambda: TunedSsnRecognizer(),
        "CRYPTO": lambda: TunedCryptoRecognizer(),
        "URL": lambda: PersonalUrlRecognizer(config.url_patterns),
    }
    return [factories[entity]() for entity in config.entities]
