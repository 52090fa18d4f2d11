"""Labelled examples shared by the PII tests: true positives per entity type and near misses."""

# entity -> list of (text, the exact span that must be found)
TRUE_POSITIVES = {
    "EMAIL_ADDRESS": [
        ("Write to jane.doe@example.org for details.", "jane.doe@example.org"),
        # a short URL before a query value: the address starts after the last "=", "?", "&" or "/"
        ("GET /u?to=jane@example.org-3 ok", "jane@example.org"),
        ("GET /u?to=jane@example.org ok", "jane@example.org"),
        ("see /users/jane.doe@example.org/x", "jane.doe@example.org"),
        ("cc: first+tag@mail.example.co.uk", "first+tag@mail.example.co.uk"),
        ("Kontakt: jürgen.müller@beispiel.de.", "jürgen.müller@beispiel.de"),
        ("<a href=\"mailto:o'brien@example.ie\">me</a>", "o'brien@example.ie"),
        # "@" as a URL escape or an HTML character reference (the canonical view reads it as "@")
        ("Write to jane.doe%40example.org today.", "jane.doe%40example.org"),
        ("Write to jane.doe&#64;example.org today.", "jane.doe&#64;example.org"),
        ("Write to jane.doe&commat;example.org today.", "jane.doe&commat;example.org"),
        # the mailbox forms besides a dot-atom (RFC 5321 4.1.2): a quoted local part, an address literal
        ('Write to "jane doe"@example.org today.', '"jane doe"@example.org'),
        ('cc: "jane.doe"@example.org', '"jane.doe"@example.org'),
        ('Write to "j\\"d"@example.org today.', '"j\\"d"@example.org'),
        ("mail jane@[81.2.69.160] now", "jane@[81.2.69.160]"),
        ("mail jane@[192.168.1.1] now", "jane@[192.168.1.1]"),  # a private host: the mailbox is still someone's
        ("mail jane@[IPv6:2001:db8::1] now", "jane@[IPv6:2001:db8::1]"),
        ('mail "jane doe"@[IPv6:2001:db8::1].', '"jane doe"@[IPv6:2001:db8::1]'),
        ('say ""jane doe"@example.org" twice', '"jane doe"@example.org'),  # in quotes of its own
        ('{"text": "mail \\"jane doe\\"@example.org', '\\"jane doe\\"@example.org'),  # in a raw JSON line
        ("mail %22jane doe%22@example.org", "%22jane doe%22@example.org"),
        ('{"text": "mail jane\\u0040example.org', "jane\\u0040example.org"),  # a JSON line's \uXXXX
        ("mail %22jane%20doe%22@example.org", "%22jane%20doe%22@example.org"),  # %20 outside a number
        ('{"text": "mail jane\\/doe@example.org', "jane\\/doe@example.org"),  # JSON's short escapes
        ("mail jane%2540example.org today", "jane%2540example.org"),  # encoded twice (a redirect URL)
        # a query value after a long URL (the dot-atom runs back over the URL, past 64 characters)
        ("GET /some/long/path/to/the/form/handler.php?utm_source=newsletter&email=jane@example.org 200",
         "jane@example.org"),
        # ... and its domain an address literal (fuzz pii seed 1160 case 6: only the IP was masked)
        ("GET /some/long/path/to/the/form/handler.php?utm_source=newsletter&email=jane@[192.0.2.1]&x=1 200",
         "jane@[192.0.2.1]"),
        # glued to what follows: the domain cut where a public suffix ends
        ("id jane@example.org-3 ok", "jane@example.org"), ("id jane@example.org_3 ok", "jane@example.org"),
        ("mail jane@example.org.Then we met", "jane@example.org"),
    ],
    "PHONE_NUMBER": [
        ("Call +1-202-555-0173 today.", "+1-202-555-0173"),
        ("Call +1 202 555 0173 today.", "+1 202 555 0173"),
        ("Office: (202) 555-0173.", "(202) 555-0173"),
        ("Reach me on 202.555.0173 ext. 42 after 5.", "202.555.0173 ext. 42"),
        ("Reach me on +1.202.555.0173 after 5.", "+1.202.555.0173"),  # dots after a country code
        ("Paris : +33.1.42.68.53.00", "+33.1.42.68.53.00"),
        # dots, the calling code written without "+" (dotted_with_calling_code)
        ("Call 1.202.555.0173 today.", "1.202.555.0173"),
        ("Free: 1.800.555.0199", "1.800.555.0199"),
        ("Paris : 33.1.42.68.53.00", "33.1.42.68.53.00"),
        # after "=": a query value, a key=value pair
        ("https://example.org/contact?n=202.555.0173&lang=en", "202.555.0173"),
        ("tel=+1-202-555-0173;", "+1-202-555-0173"),
        ('<a href="tel:+1%20202%20555%200173">', "+1%20202%20555%200173"),  # a link's escaped spaces
        ("go to /c?phone=202+555+0173&lang=en", "202+555+0173"),  # a form value's "+"
        ("name=Jane+Doe&phone=%2B1+202+555+0173", "%2B1+202+555+0173"),
        ('{"text": "call 202-555-\\n0173 now', "202-555-\\n0173"),  # a JSON line's \n
        ("Call 202-555-0173.Then we met.", "202-555-0173"),  # glued: a full stop, no space
        ("Jane Doe,202-555-0173,NY", "202-555-0173"),  # a CSV row
        ("Support line 202-555-0173x1234, weekdays.", "202-555-0173x1234"),
        ("Ring +1-780-563-6083x7783 now", "+1-780-563-6083x7783"),
        ("London office +44 20 7946 0958.", "+44 20 7946 0958"),
        ("Nottingham: +44(0)115 4960914", "+44(0)115 4960914"),
        ("or locally 020 7946 0958, ask for Sam", "020 7946 0958"),
        ("Berlin +49 (0) 30 901820 (Zentrale)", "+49 (0) 30 901820"),
        ("Stuttgart 0711 123456", "0711 123456"),
        ("Paris : +33 1 42 68 53 00", "+33 1 42 68 53 00"),
        ("à Paris 01 42 68 53 00.", "01 42 68 53 00"),
        ("Tokyo 080-9141-7776", "080-9141-7776"),
        ("India +91 98765 43210", "+91 98765 43210"),
        ("São Paulo +55 11 91234-5678", "+55 11 91234-5678"),
        ("my phone: 2025550173", "2025550173"),
        ("Telefon: 0049 30 901820", "0049 30 901820"),
        ("tel. 609 141 777", "609 141 777"),
        ("Meet me, 1-800-555-0199 is the hotline", "1-800-555-0199"),
        ("— Christiane Poirier, 0638967464", "0638967464"),
        ("You can reach the office at 0711123456.", "0711123456"),
        ("お問い合わせ: 32 502 99 29", "32 502 99 29"),
    ],
    "CREDIT_CARD": [
        ("Visa 4111 1111 1111 1111 exp 12/29", "4111 1111 1111 1111"),
        ("card 4111-1111-1111-1111.", "4111-1111-1111-1111"),
        ("MC 5555555555554444", "5555555555554444"),
        ("MC 2-series 2223 0031 2200 3222", "2223 0031 2200 3222"),
        ("new MC 2221-0000-0000-0009", "2221-0000-0000-0009"),
        ("Amex 3782 822463 10005", "3782 822463 10005"),
        ("Discover 6011 1111 1111 1117", "6011 1111 1111 1117"),
        ("JCB 3530111333300000", "3530111333300000"),
        ("Diners 30569309025904", "30569309025904"),
        ("card 4111.1111.1111.1111 on file", "4111.1111.1111.1111"),  # dots, and separators mixed
        ("card 4111 1111-1111.1111 on file", "4111 1111-1111.1111"),
        ("card 4111\u00a01111\u00a01111\u00a01111 on file", "4111\u00a01111\u00a01111\u00a01111"),  # no-break spaces
        ("card 4111&nbsp;1111&nbsp;1111&nbsp;1111.", "4111&nbsp;1111&nbsp;1111&nbsp;1111"),
        ("card%3A%204111%25201111%25201111%25201111", "4111%25201111%25201111%25201111"),  # %20 encoded again
    ],
    "IP_ADDRESS": [
        ("client 81.2.69.160 connected", "81.2.69.160"),
        ("from 81.2.69.160:8080 again", "81.2.69.160"),
        ("see http://81.2.69.160/index.html", "81.2.69.160"),  # a URL's host
        ("blocked IP:81.2.69.160 twice", "81.2.69.160"),  # after a label, no space
        ("see http://example.org/x/81.2.69.160/y", "81.2.69.160"),  # a segment of a URL's path
        ("GET /api/clients/81.2.69.160 200", "81.2.69.160"),
        ("see http://example.org/x?ip=81.2.69.160&y=1", "81.2.69.160"),  # a query value
        ("rDNS ec2-81-2-69-160.compute-1.amazonaws.com", "81-2-69-160"),  # dashes, in a host name
        ("from 81-2-69-160.dyn.example.net today", "81-2-69-160"),
        ("host ec2-81.2.69.160.compute.example.com up", "81.2.69.160"),  # dotted after a dash, in a host name
        ("rDNS ec2-81.2.69.160.compute-1.amazonaws.com.", "81.2.69.160"),
        ("resolver 2001:4860:4860::8888", "2001:4860:4860::8888"),
        ("v6 2a00:1450:4001:82a::200e.", "2a00:1450:4001:82a::200e"),
        ("full 32c9:c69b:4e50:ed89:1ae2:5cc9:19e5:bea1 here", "32c9:c69b:4e50:ed89:1ae2:5cc9:19e5:bea1"),
        ("EUI-64 fe80::21a:2bff:fe3c:4d5e%eth0 up", "fe80::21a:2bff:fe3c:4d5e%eth0"),
    ],
    "IBAN_CODE": [
        ("IBAN DE89 3704 0044 0532 0130 00, BIC", "DE89 3704 0044 0532 0130 00"),
        ("pay GB82WEST12345698765432 now", "GB82WEST12345698765432"),
        ("FR1420041010050500013M02606 (Paris)", "FR1420041010050500013M02606"),
        ("rekening NL91ABNA0417164300.", "NL91ABNA0417164300"),
        ("Bankverbindung: ES18 9217 6435 5682 0639 9946 ISBN follows", "ES18 9217 6435 5682 0639 9946"),
        ("IBAN ES8037033651156680828340 SMTPAuthenticationError", "ES8037033651156680828340"),
        ("iban de89 3704 0044 0532 0130 00, bic", "de89 3704 0044 0532 0130 00"),  # lower case
        ("pay gb82west12345698765432 now", "gb82west12345698765432"),
        ("IBAN FR76\u00a03000\u00a06000\u00a00112\u00a03456\u00a07890\u00a0189 (RIB)",
         "FR76\u00a03000\u00a06000\u00a00112\u00a03456\u00a07890\u00a0189"),  # French typography
        ("IBAN DE89&nbsp;3704&nbsp;0044&nbsp;0532&nbsp;0130&nbsp;00.", "DE89&nbsp;3704&nbsp;0044&nbsp;0532&nbsp;0130&nbsp;00"),
        ("IBAN GB82%20WEST%201234%205698%207654%2032 ok", "GB82%20WEST%201234%205698%207654%2032"),  # %20
        ("pay?iban=GB82+WEST+1234+5698+7654+32&x=1", "GB82+WEST+1234+5698+7654+32"),  # a form value's "+"
    ],
    "US_SSN": [
        ("SSN 536-22-1234 on file", "536-22-1234"),
        ("her number is 536-22-1234.", "536-22-1234"),
        ("SSN: 536 22 1234", "536 22 1234"),
        ("SSN: 536\u00a022\u00a01234", "536\u00a022\u00a01234"),
        ("social security number 536221234", "536221234"),
        ("SSN: 267-08-8990 e.g. struct.pack('>I', 178080156)", "267-08-8990"),
    ],
    "CRYPTO": [
        ("send to 1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2 please", "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2"),
        ("P2SH 3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy.", "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy"),
        ("bech32 bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"),
        ("ETH 0x52908400098527886E0F7030069857D2E4169EE7", "0x52908400098527886E0F7030069857D2E4169EE7"),
    ],
    "URL": [
        ("see https://example.com/~jdoe/cv.html.", "https://example.com/~jdoe/cv.html"),
        ("profile: http://www.example.org/users/jdoe", "http://www.example.org/users/jdoe"),
        ("(https://example.com/profile?email=jane%40example.org)",
         "https://example.com/profile?email=jane%40example.org"),
        ("see https://example.org/my%20files/~jdoe/cv.html ok", "https://example.org/my%20files/~jdoe/cv.html"),
        ("see https://example.org/search?q=foo+bar&user=jdoe ok", "https://example.org/search?q=foo+bar&user=jdoe"),
        # a no-break space after a URL ends it (only an escaped space, %20 or a form's "+", is read across)
        ("Profile https://example.org/users/jdoe&nbsp;and the rest.", "https://example.org/users/jdoe"),
        ("Profile https://example.org/users/jdoe\u00a0and the rest.", "https://example.org/users/jdoe"),
    ],
}

# Text that looks like PII but is not: must come out byte-identical.
NEAR_MISSES = {
    "version": ["Python 3.11.7 and v2.7.18", "version 1.2.3.4 was released", "Windows 10.0.19041.1234",
                "Chrome 120.0.6099.109", "Windows 7 SP1 6.1.7601.17514", "XP 5.1.2600.5512", "build 7.10.100.1000",
                "release 1.101.200.3000", "tag 2024.03.15.1", "/downloads/2.10.100.1000/", "lib/1.2.3.4/x",
                "v1-2-3-4.tar.gz", "2024-03-15-10.log", "host-10-1-2-3.example.org",
                "pip install foo==1.0.0-rc.1", "kernel 4.19.0-21-amd64", "build 20.04.123456",
                "get foo-10.2.3.44.tar.gz", "libfoo-12.0.1.3", "openssl-1.1.10.1.el8.x86_64.rpm",
                "spring 5.3.20.RELEASE", "hibernate 5.4.32.Final", "tag=v1+2.3.4.5"],
    "date": ["Released 2023-10-15.", "am 15.03.2024 um", "due 03/15/2024", "from 1990-2000 and 2019/2020",
             "at 2024-03-05T10:30:00Z", "15 March 2024", "1999 2000 2001 2002"],
    "isbn": ["ISBN 978-3-16-148410-0", "ISBN-10: 0-306-40615-2", "ISBN 9780306406157", "see 978-0-306-40615-7",
             "0-306-40615-2", "ISSN 0317-8471"],
    "hash": ["sha1 3f2a9b1c4d5e6f708192a3b4c5d6e7f8091a2b3c",
             "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
             "md5 d41d8cd98f00b204e9800998ecf8427e", "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
             "tx 0x88df016429689c079f3b2f6ad39fa052532c56795b733da78a91ebe6a713944b"],
    "uuid": ["id 123e4567-e89b-12d3-a456-426614174000", "nil 00000000-0000-0000-0000-000000000000",
             "12345678-1234-1234-1234-123456789012"],
    "oid": ["OID 1.3.6.1.4.1", "arc 1.3.6.1.4.1.311.21.8", "OID 2.5.4.3", "sha256WithRSA 1.2.840.113549.1.1.11"],
    "cve": ["CVE-2021-44228", "CVE-2014-0160 (Heartbleed)", "GHSA-jfh8-c2jp-5v3q"],
    "code": ["x = a[1::2]", "std::vector<int> v;", 'printf("%d\\n", 1234567);', "mask = 0xDEADBEEF",
             "arr[1000000] = 0", "ssh user@host", "npm i lodash@4.17.21", "@property\ndef x(self):",
             "git clone git@github.com:org/repo.git", "y = x@self.weights", 'y = "ab"@self.weights', 'He said "hi"@ noon',
             'a "quoted text"@example and', "x@[1::2]", "m@[999.1.1.1]", "http://localhost:8080/",
             "timeout=86400000", "if (n > 4294967295) return -1;", "struct sockaddr_in6 a = {::1};",
             "ts 1700000000", "int[] a = {1, 2, 3, 4, 5, 6, 7};", "INT_MAX is 2147483647",
             "during an emit() call.\n\n(epoch 1610704840)", "an emit() call. Use `arr[7314358]` here.",
             "'01  012 0123    01234'", "Order No. 12345678", "a number 1000000000 of times",
             "Sent on 2023-10-15 ISBN 0-306-40615-2 and call 1-2-3",
             'printf("%d\\t%d\\n", 1234, 5678);', "'01\\t012\\t0123\\t01234'.expandtabs()",
             "'01\t012\t0123\t01234'", "x = a+b; y=1+2 if c+d", "100%20 off, 5%2030%",
             "s = 'a\\\\n2024\\\\n555'", "GET /q?page=2+3&size=100+200 ok", '"%02d:%02d%08d" % (h, m, 20245550)'],
    "price": ["$1,299.99", "€ 1.234.567", "USD 12,345,678", "£9.99 or 1 000 000 €", "costs 1.234.567,89 EUR"],
    "rfc": ["RFC 5322", "RFC 2616, section 14.9", "see RFC 4291 section 2.5.2"],
    "private_ip": ["127.0.0.1", "192.168.1.1", "10.0.0.1", "::1", "fe80::1", "ff02::1", "2001:db8::1",
                   "2001:db8:85a3::8a2e:370:7334", "100.64.0.1", "198.51.100.7"],
    "number": ["population of 1,234,567", "1 000 000 inhabitants", "pi is 3.14159265358979",
               "at 40.7128, -74.0060", "12:30:45", "MAC 00:1A:2B:3C:4D:5E", "ratio 16:9:4",
               "values 10 20 30 40 50", "order 12345678", "1920x1080 pixels"],
}


def best_seconds(fn, text: str) -> float:
    """The shorter of two timed calls of ``fn(text)`` (one when the first is far over any bound: > 2 s)."""
    import time

    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - start)
        if best > 2.0:  # far over: no second run needed
            break
    return best
