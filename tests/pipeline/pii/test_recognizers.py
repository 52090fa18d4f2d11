"""The recognizers' decision functions on their own."""
from __future__ import annotations

import pytest

pytest.importorskip("presidio_analyzer")

from corpusforge.pipeline.pii.config import DEFAULT_PHONE_REGIONS  # noqa: E402
from corpusforge.pipeline.pii.recognizers import (  # noqa: E402
    card_brand,
    card_number_ok,
    email_domain_ok,
    ip_ok,
    ipv4_context_ok,
    isbn10_ok,
    isbn13_ok,
    luhn_ok,
    phone_spans,
    ssn_ok,
)

REGIONS = tuple(DEFAULT_PHONE_REGIONS)


@pytest.mark.parametrize("digits,brand", [
    ("4111111111111111", "visa"), ("5555555555554444", "mastercard"), ("2223003122003222", "mastercard"),
    ("378282246310005", "amex"), ("6011111111111117", "discover"), ("3530111333300000", "jcb"),
    ("30569309025904", "diners"), ("6759649826438453", "maestro"), ("6200000000000005", "unionpay"),
])
def test_card_brands(digits, brand):
    assert luhn_ok(digits) and card_brand(digits) == brand and card_number_ok(digits)


@pytest.mark.parametrize("text", ["4111111111111112", "1700000000000", "9780306406157", "0000000000000000",
                                  "1234567812345670"])
def test_not_cards(text):
    assert not card_number_ok(text)


def test_ssn_ranges():
    assert ssn_ok("536-22-1234")
    for bad in ["000-22-1234", "666-22-1234", "900-22-1234", "536-00-1234", "536-22-0000", "078-05-1120",
                "111-11-1111"]:
        assert not ssn_ok(bad), bad


def test_isbn_checksums():
    assert isbn13_ok("9780306406157") and not isbn13_ok("9780306406158")
    assert isbn10_ok("0306406152") and not isbn10_ok("0306406153")


def test_ip_policy():
    assert ip_ok("81.2.69.160", keep_private=True)
    assert not ip_ok("192.168.1.1", keep_private=True) and ip_ok("192.168.1.1", keep_private=False)
    assert not ip_ok("1.2.3.4", keep_private=False)  # all single-digit octets: a version
    assert not ip_ok("1::2", keep_private=False)  # a slice, not an address
    assert ip_ok("2001:4860:4860::8888", keep_private=True)
    assert not ip_ok("2001:db8::1", keep_private=True) and not ip_ok("::1", keep_private=True)
    assert ip_ok("fe80::21a:2bff:fe3c:4d5e", keep_private=True)  # EUI-64: embeds a MAC address
    assert not ip_ok("999.1.1.1", keep_private=False)
    assert not ipv4_context_ok("version 81.2.69.160", 8) and ipv4_context_ok("from 81.2.69.160", 5)


def test_email_domains_from_the_bundled_suffix_list():
    assert email_domain_ok("a@example.co.uk") and email_domain_ok("a@beispiel.de")
    assert not email_domain_ok("lodash@4.17.21") and not email_domain_ok("x@self.weights")


def test_email_address_literals_hold_an_ip_address():
    assert email_domain_ok("jane@[81.2.69.160]") and email_domain_ok("jane@[192.168.1.1]")
    assert email_domain_ok("jane@[IPv6:2001:db8::1]") and email_domain_ok('"jane doe"@[ipv6:::1]')
    assert not email_domain_ok("jane@[999.1.1.1]") and not email_domain_ok("jane@[IPv6:81.2.69.160]")
    assert not email_domain_ok("jane@[2001:db8::1]") and not email_domain_ok("jane@[example.org]")


def test_dotted_numbers_with_a_calling_code():
    from corpusforge.pipeline.pii.phones import dotted_with_calling_code

    def groups(text):
        return text.split(".")

    for number in ["1.202.555.0173", "1.800.555.0199", "33.1.42.68.53.00", "44.20.7946.0958"]:
        assert dotted_with_calling_code(groups(number)), number
    # versions, builds, object identifiers; a NANP number one digit short
    for version in ["10.0.19041.1234", "120.0.6099.109", "6.1.7601.17514", "5.1.2600.5512", "7.10.100.1000",
                    "1.101.200.3000", "1.3.6.1.4.1.311", "1.2.840.113549.1.1.11", "2024.03.15.1", "1.202.555.017",
                    "33.0.42.68.53.00"]:
        assert not dotted_with_calling_code(groups(version)), version


@pytest.mark.parametrize("text,expected", [
    ("call 555-123-4567 2 times", ["555-123-4567"]),  # a sub-run at a space
    ("fax: (0406)-812415", ["(0406)-812415"]),
    ("Ring +1-780-563-6083x7783 now", ["+1-780-563-6083x7783"]),
    ("dates 2024-03-15 and 15.03.2024", []),
    ("values 10 20 30 40 50 60", []),
    ("see 1-800-555-0199, 202.555.0173", ["1-800-555-0199", "202.555.0173"]),
    ("call 1.202.555.0173 or 33.1.42.68.53.00", ["1.202.555.0173", "33.1.42.68.53.00"]),
    ("?phone=202.555.0173&x=1 n=+1-202-555-0174", ["202.555.0173", "+1-202-555-0174"]),
    ("Chrome 120.0.6099.109, Windows 10.0.19041.1234, timeout=86400000", []),
])
def test_phone_spans(text, expected):
    assert [text[s:e] for s, e in phone_spans(text, REGIONS)] == expected
