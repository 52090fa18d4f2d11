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
import threading
import urllib.parse
from typing import Iterable

from corpusforge.pipeline.pii import presidio  # noqa: F401  (first: Presidio without transformers and torch)
from presidio_analyzer import EntityRecognizer, LocalRecognizer, Pattern, PatternRecognizer, RecognizerResult
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    CryptoRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    UsSsnRecognizer,
)

# The phone rules are plain functions in their own module (the Scrubber checks phone candidates without
# Presidio); imported here, where they were defined before, for the recognizers and their callers.
from corpusforge.pipeline.pii.phones import (  # noqa: F401
    PHONE_CUE,
    PHONE_EXT,
    PHONE_RUN,
    cue_pattern,
    has_context,
    isbn10_ok,
    isbn13_ok,
    phone_number_ok,
    phone_spans,
)
from corpusforge.pipeline.pii.screen import SCREENS


class StdlibPatterns:
    """``PatternRecognizer.analyze`` with the stdlib ``re`` module: the same patterns, ``validate_result`` /
    ``invalidate_result`` and scores, without Presidio's per-call timing, logging and per-match explanation
    objects, which cost more than the matching on short texts. Patterns are compiled once, case-sensitive
    (ours spell out case where it matters: base58, IBAN)."""

    REGEX_FLAGS = re.DOTALL | re.MULTILINE

    def compiled(self) -> list[tuple[Pattern, re.Pattern]]:
        """Each pattern with its ``re`` compilation, made once per recognizer."""
        compiled = self.__dict__.get("_stdlib_compiled")
        if compiled is None:
            compiled = self._stdlib_compiled = [(p, re.compile(p.regex, self.REGEX_FLAGS)) for p in self.patterns]
        return compiled

    def analyze(self, text, entities, nlp_artifacts=None, regex_flags=None):
        results = []
        for pattern, regex in self.compiled():
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
        self._local = threading.local()  # .known: the calling thread's remembered (text, spans)
        super().__init__(supported_entities=[self.ENTITY], supported_language=supported_language,
                         name="CorpusforgePhoneRecognizer", context=["phone", "tel", "mobile", "fax", "call"])

    def load(self) -> None:
        pass

    def remember(self, text: str, spans: list[tuple[int, int]]) -> None:
        """``phone_spans(text, self.regions)``, worked out by the caller (the Scrubber's phone check): the next
        ``analyze`` of an equal text in the same thread uses it rather than finding the numbers again."""
        self._local.known = (text, spans)

    def analyze(self, text, entities, nlp_artifacts=None):
        known = getattr(self._local, "known", None)
        spans = known[1] if known is not None and known[0] == text else phone_spans(text, self.regions)
        return [_result(self, start, end, self.SCORE) for start, end in spans]


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
# A group separator of a card number: a space (a no-break space too: typeset text, ``&nbsp;`` in a page), ``.``, ``-``
_SEP = "[ \u00a0\u2007.\\-]"
_NUM_AFTER = r"(?![\w]|[.\-/:]\d)"


class TunedCardRecognizer(StdlibPatterns, CreditCardRecognizer):
    """Presidio's credit-card recognizer with every network's prefixes (incl. Mastercard 2221-2720),
    contiguous or grouped (4-4-4-4, 4-4-4-4-3, 4-6-5) numbers only, Luhn + issuer prefix + length. A group
    separator is a space, ``-`` or ``.``, and they need not agree (``4111 1111-1111.1111`` is typed too): the
    checks, not the separators, tell a card."""

    SCREEN = SCREENS["card"]
    PATTERNS = [
        Pattern("card (contiguous)", _NUM_BEFORE + r"\d{12,19}" + _NUM_AFTER, 0.3),
        Pattern("card (4-4-4-4)", _NUM_BEFORE + rf"\d{{4}}{_SEP}\d{{4}}{_SEP}\d{{4}}{_SEP}\d{{1,4}}(?:{_SEP}\d{{1,3}})?"
                + _NUM_AFTER, 0.3),
        Pattern("card (4-6-5)", _NUM_BEFORE + rf"\d{{4}}{_SEP}\d{{6}}{_SEP}\d{{4,5}}" + _NUM_AFTER, 0.3),
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


def ip_host_ok(host: str) -> bool:
    """Whether the labels after an address glued into a host name (``compute.example.com``) end in a registered
    domain and a public suffix (tldextract's bundled list, never fetched): ``tar.gz`` or ``el8.x86_64`` do not."""
    if not any(c.isalpha() for c in host.rpartition(".")[2]):
        return False
    parts = _tld_extract()(host)
    return bool(parts.suffix) and bool(parts.domain)


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
    # Not inside a dotted number or a word; but a URL's host (``http://81.2.69.160/``), a segment of a path or a
    # URL's path (``/x/81.2.69.160/y``: a log's or an API's URL names the client), a query value (``?ip=``) and a
    # value after a label (``IP:81.2.69.160``, ``host:``) are addresses. After ``:`` only when the word before
    # is no IPv6 address (``::ffff:81.2.69.160`` is the IPv6 recognizer's): ``_after_ipv6``.
    IPV4 = re.compile(rf"(?:(?<![\w.\-:])|(?<=[A-Za-z]:)){_OCTET}(?:\.{_OCTET}){{3}}(?:/(?:3[0-2]|[12]?\d))?"
                      r"(?![\w]|\.\d|-\d)")
    # Written with dashes as a host name's first label or its end (reverse DNS: ``81-2-69-160.dyn.example.net``,
    # ``ec2-81-2-69-160.compute.example.com``): four octets, then a "." and a letter.
    DASHED_IPV4 = re.compile(rf"(?:(?<![\w.\-])|(?<=[A-Za-z0-9]-)){_OCTET}(?:-{_OCTET}){{3}}(?=\.[A-Za-z])")
    # Dotted after a dash, as a host name's label (``ec2-81.2.69.160.compute.example.com``): only when a host name
    # with a public suffix follows (``ip_host_ok``): "-" before a dotted quad is mostly a version's
    # (``foo-10.2.3.4.tar.gz``, ``libfoo-12.0.1.3``). At most ``_HOST_LABELS`` labels after the quad: an unbounded
    # ``+`` read every following label to the end of the text once per quad (``'a-1.2.3.4.' * n`` was quadratic:
    # 10 s on 50 KB); a host name has at most 253 characters (RFC 1035), and this one's labels after an address
    # are a provider's few (``compute.example.com``).
    _HOST_LABELS = 8
    DOTTED_AFTER_DASH = re.compile(rf"(?<=[A-Za-z0-9]-){_OCTET}(?:\.{_OCTET}){{3}}"
                                   rf"(?=((?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?){{1,{_HOST_LABELS}}})"
                                   r"(?![\w-]|\.[A-Za-z0-9]))")
    _V6_HEAD = re.compile(r"[0-9A-Za-z:]*:\Z")
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
                if ipv4_ok(m.group(), self.keep_private) and ipv4_context_ok(text, m.start()) \
                        and not self._after_ipv6(text, m.start()):
                    results.append(_result(self, m.start(), m.end(), self.SCORE))
            if "-" in text:
                for m in self.DOTTED_AFTER_DASH.finditer(text):
                    if ipv4_ok(m.group(), self.keep_private) and len(m.group(1)) <= 254 \
                            and ip_host_ok(m.group(1)[1:]):
                        results.append(_result(self, m.start(), m.end(), self.SCORE))
                for m in self.DASHED_IPV4.finditer(text):
                    if ipv4_ok(m.group().replace("-", "."), self.keep_private):
                        results.append(_result(self, m.start(), m.end(), self.SCORE))
        if ":" in text:
            for m in self.IPV6.finditer(text):
                if ip_ok(m.group(), self.keep_private):
                    results.append(_result(self, m.start(), m.end(), self.SCORE))
        return results

    def _after_ipv6(self, text: str, start: int) -> bool:
        """Whether the quad at ``start`` ends an IPv6 word (two or more colons before it: ``::ffff:``)."""
        if not start or text[start - 1] != ":":
            return False
        head = self._V6_HEAD.search(text, max(0, start - 40), start)
        return head is not None and head.group().count(":") > 1


# ---------------------------------------------------------------------------------------------- email
@functools.lru_cache(maxsize=1)
def _tld_extract():
    import tldextract

    # No suffix_list_urls: use the copy bundled with tldextract, never the network.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def email_domain_ok(address: str) -> bool:
    """The domain ends in a real public suffix (rejects ``a@b.T``, ``lodash@4.17.21``, ``x@self.weights``), or
    is an address literal holding an IP address (``jane@[192.0.2.1]``, ``jane@[IPv6:2001:db8::1]``: the
    mailbox names a person whatever the host; RFC 5321 section 4.1.3)."""
    domain = address.rpartition("@")[2]
    if domain.startswith("["):
        literal = domain[1:-1]
        tagged = literal[:5].lower() == "ipv6:"  # an IPv6 literal is tagged, an IPv4 one is not
        try:
            address = ipaddress.ip_address(literal[5:] if tagged else literal)
        except ValueError:
            return False
        return address.version == (6 if tagged else 4)
    parts = _tld_extract()(domain)
    return bool(parts.suffix) and bool(parts.domain)


class TunedEmailRecognizer(StdlibPatterns, EmailRecognizer):
    """Presidio's email recognizer, validated against tldextract's bundled suffix list (never fetched),
    skipping SSH/SCP remotes such as ``git@github.com:org/repo.git``."""

    SCREEN = SCREENS["email"]
    _LOCAL = r"[\w!#$%&'*+/=?^`{|}~-]"
    # Presidio's pattern with the local part bounded to 64 characters (RFC 5321), so a long token without
    # "@" costs linear time, and without its leading \b (an address may start with "+" or "'").
    _DOT_ATOM = rf"(?<![\w.!#$%&'*+/=?^`{{|}}~-]){_LOCAL}(?:[\w.!#$%&'*+/=?^`{{|}}~-]{{0,62}}{_LOCAL})?"
    # The two other forms RFC 5321 gives a mailbox (section 4.1.2): a quoted local part (``"jane doe"@…``,
    # quoted pairs such as ``\"`` inside, 64 characters with its quotes, on one line) and an address literal
    # for the domain (``@[192.0.2.1]``, ``@[IPv6:2001:db8::1]``; ``email_domain_ok`` checks the address).
    # After anything but a backslash: ``""jane doe"@…`` in quotes is still the address. In a JSON string (a
    # rejected record's raw preview) the quotes are escaped: ``\"jane doe\"@…``, the second alternative; and one
    # of them only where the other was written as an escape the view reads (``%22jane.doe\"@…``, ``\"jane
    # doe&quot;@…``: the JSON writer escaped the quote it saw, not the one ``%22`` stands for), the last two (pii
    # fuzz seed 6: a raw preview's ``%\u00322bgyodzfs.dzaqf\"@…`` left ``"bgyodzf`` in rejected/).
    _QUOTED = (r'(?:(?<!\\)"(?:[^"\\\r\n]|\\[^\r\n]){1,62}"'
               r'|\\"(?:[^"\\\r\n]|\\\\[^"\r\n]){1,62}\\"'
               r'|(?<!\\)"(?:[^"\\\r\n]|\\\\[^"\r\n]){1,62}\\"'
               r'|\\"(?:[^"\\\r\n]|\\\\[^"\r\n]){1,62}")')
    _DOMAIN = r"\w+(?:-+\w+)*(?:\.\w+(?:-+\w+)*)+\b"
    _LITERAL = r"\[(?:\d{1,3}(?:\.\d{1,3}){3}|[Ii][Pp][Vv]6:[0-9A-Fa-f:.]{2,45})\]"
    # An address as a query value or a path's segment (``?utm_source=news&email=jane@example.org``, or an address
    # literal: ``&email=jane@[192.0.2.1]``, which fuzz pii seed 1160 case 6 found leaking its local part): its local part
    # starts after "=", "/", "?" or "&" (atext, so the dot-atom pattern runs back over the whole URL, and past 64
    # characters finds nothing).
    _AFTER_QUERY = r"(?<=[=/?&])[\w.!#$%'*+^`{|}~-]{1,64}"
    PATTERNS = [Pattern("Email (bounded)", rf"{_DOT_ATOM}@{_DOMAIN}", 0.5),
                Pattern("Email (query value)", rf"{_AFTER_QUERY}@(?:{_DOMAIN}|{_LITERAL})", 0.5),
                Pattern("Email (quoted local part)", rf"{_QUOTED}@(?:{_DOMAIN}|{_LITERAL})", 0.5),
                Pattern("Email (address literal)", rf"{_DOT_ATOM}@{_LITERAL}", 0.5)]

    def __init__(self, supported_language: str = "en"):
        super().__init__(patterns=self.PATTERNS, supported_language=supported_language,
                         name="CorpusforgeEmailRecognizer")

    # Where an address glued to what follows it may end (``jane@example.org-3``, ``…org_3``, ``…org.Then``): the
    # domain pattern runs on over "-", "_" and "." and their word, which is no public suffix.
    _DOMAIN_CUT = re.compile(r"[-_.]")

    def validate_result(self, pattern_text: str) -> bool:
        return email_domain_ok(pattern_text)

    def analyze(self, text, entities, nlp_artifacts=None, regex_flags=None):
        """``StdlibPatterns.analyze`` (one pass over each pattern's matches, validated), where a match whose domain is
        no public suffix may still end earlier (``address_length``)."""
        results = []
        for _, regex in self.compiled():
            for match in regex.finditer(text):
                start, end = match.span()
                length = self.address_length(text[start:end]) if start < end else 0
                if length:
                    start, length = self._after_query(text, start, length)
                    results.append(_result(self, start, start + length, EntityRecognizer.MAX_SCORE))
        results = EntityRecognizer.remove_duplicates(results) if len(results) > 1 else results
        return [r for r in results if not re.match(r":[\w~/]", text[r.end:r.end + 2])]

    def _after_query(self, text: str, start: int, length: int) -> tuple[int, int]:
        """``(start, length)`` of a dot-atom match started after the last "=", "?", "&" or "/" in its local part
        when that part looks like a URL's (``GET /u?to=jane@example.org`` reports ``jane@example.org``), so the URL
        before it is not masked; a quoted local part (``"a=b"@…``) as it is."""
        # "=", "?", "&", "/": atext, so the dot-atom runs back over what a URL puts before a query value or a
        # path's segment, which is no part of the address. A local part with "/" alone and not first is one
        # (``jane/doe@…``, JSON's ``jane\/doe@…``).
        local = text[start:text.rfind("@", start, start + length)]
        urlish = '"' not in local and (local[:1] == "/" or any(mark in local for mark in "=?&"))
        cut = max(local.rfind(mark) for mark in "=?&/") + 1 if urlish else 0
        if not 0 < cut < len(local):
            return start, length
        return start + cut, length - cut

    def address_length(self, value: str) -> int:
        """How much of a match is an address: all of it when its domain ends in a public suffix; else, glued to
        the characters after it (``jane@example.org-3``, ``…org_3``, ``…org.Then``: the domain pattern runs on over
        "-", "_", "." and their word), the longest head cut at one of the domain's last 8 "-", "_" or "." that is
        a valid address with a dotted domain, as it would be with a space there; 0 for none (``x@self.weights``)."""
        if email_domain_ok(value):
            return len(value)
        at = value.rfind("@")
        if value[at + 1:at + 2] == "[":
            return 0
        cuts = [m.start() for m in self._DOMAIN_CUT.finditer(value, at + 1)]
        for cut in reversed(cuts[-8:]):
            if "." in value[at + 1:cut] and email_domain_ok(value[:cut]):
                return cut
        return 0


# ----------------------------------------------------------------------------------------------- IBAN
# In either case: banks read an IBAN case-insensitively, and people write them lower case too.
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}[0-9]{2}")
_IBAN_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


class TunedIbanRecognizer(IbanRecognizer):
    """Presidio's IBAN validation (country format, exact length, mod-97 checksum) on the longest valid
    prefix of each ``XX99...`` token, upper or lower case (validated upper case). Presidio's own pattern swallows a following upper-case word ("...9946
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
                elif text[i] in " \u00a0\u2007-" and i + 1 < n and text[i + 1] in _IBAN_CHARS and len(chars) % 4 == 0:
                    i += 1  # one separator between groups of four
                else:
                    break
            compact = "".join(chars).upper()
            for length in range(len(compact), 14, -1):
                end = ends[length - 1]
                if (end == n or not text[end].isalnum()) and self.validate_result(compact[:length]):
                    results.append(_result(self, m.start(), end, self.SCORE))
                    break
        return results


# ------------------------------------------------------------------------------------------------ SSN
# "123 45 6789" and "123456789" count as SSNs only right after one of these (same sentence, <= 3 words).
SSN_CUE = cue_pattern(["ssns?", r"social security(?: number| no\.?| #)?", r"social sec\.?", r"ss#", r"ss no\.?",
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
        Pattern("SSN (spaced, needs context)", _NUM_BEFORE + r"\d{3}[ \u00a0\u2007]\d{2}[ \u00a0\u2007]\d{4}(?![\w]|[ \u00a0\u2007]\d)", 0.3),
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
    # Across U+2007 (canonical.URL_SPACE): how the view reads a URL's escaped space (``%20``, a form value's ``+``),
    # which does not end the URL (``/my%20files/~jdoe``); a no-break space does (``…/jdoe&nbsp;and``).
    PATTERNS = [Pattern("URL", r"(?<![\w@.])(?:https?://|www\.)(?:[^\s<>\"'`)\]}]|\u2007)*[^\s<>\"'`)\]}.,;:!?]", 0.5)]

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
