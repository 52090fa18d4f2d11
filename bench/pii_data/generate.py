"""A labelled PII benchmark set: real prose (Python's own documentation) with PII injected by faker.

Every document is ``{"id", "text", "pii": [(type, start, end)], "lookalikes": [(kind, start, end)]}``:
- about half the documents get 1-3 PII items in sentences written in several languages (faker locales:
  en_US, en_GB, de_DE, fr_FR, it_IT, es_ES, nl_NL, pt_BR, en_IN, ja_JP, pl_PL), most with a cue word
  ("Call", "IBAN:", "Rufen Sie ... an") and some without ("Jane Doe (0711 123456) confirmed");
- about a third get 2-4 PII-looking tokens that are not PII (versions, dates, ISBNs, hashes, UUIDs, OIDs,
  CVE ids, code, prices, RFC numbers, timestamps, coordinates);
- the rest stay as they are.
Prose paragraphs holding an email address of their own are left out (they would be unlabelled PII).
"""
from __future__ import annotations

import hashlib
import inspect
import importlib
import random
import re
import uuid

LOCALES = ["en_US", "en_GB", "de_DE", "fr_FR", "it_IT", "es_ES", "nl_NL", "pt_BR", "en_IN", "ja_JP", "pl_PL"]
PII_TYPES = ["EMAIL", "PHONE", "CARD", "IPV4", "IPV6", "IBAN", "SSN", "CRYPTO"]
# Presidio entity type expected for each label (for per-type precision of the found spans, informational).
ENTITY_OF = {"EMAIL": "EMAIL_ADDRESS", "PHONE": "PHONE_NUMBER", "CARD": "CREDIT_CARD", "IPV4": "IP_ADDRESS",
             "IPV6": "IP_ADDRESS", "IBAN": "IBAN_CODE", "SSN": "US_SSN", "CRYPTO": "CRYPTO"}

DOC_MODULES = [
    "abc", "argparse", "array", "ast", "asyncio", "base64", "bisect", "calendar", "collections", "concurrent.futures",
    "configparser", "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "email.message",
    "enum", "fractions", "functools", "gzip", "hashlib", "heapq", "hmac", "html.parser", "http.client",
    "http.server", "inspect", "io", "ipaddress", "itertools", "json", "logging", "mailbox", "math", "multiprocessing",
    "numbers", "operator", "os", "pathlib", "pickle", "pprint", "queue", "random", "re", "secrets", "selectors",
    "shlex", "shutil", "smtplib", "socket", "sqlite3", "statistics", "string", "struct", "subprocess", "tarfile",
    "tempfile", "textwrap", "threading", "timeit", "tokenize", "traceback", "typing", "unittest", "urllib.parse",
    "uuid", "warnings", "weakref", "xml.etree.ElementTree", "zipfile", "zlib",
]
_EMAILISH = re.compile(r"\S@\S+\.[A-Za-z]{2,}")


def prose_paragraphs(min_chars: int = 500, max_chars: int = 2500) -> list[str]:
    """Paragraphs from ``pydoc_data.topics`` and stdlib docstrings, merged to ``min_chars``..``max_chars``."""
    from pydoc_data.topics import topics

    texts = [topics[k] for k in sorted(topics)]
    for name in DOC_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        texts.append(inspect.getdoc(module) or "")
        for attr in sorted(vars(module)):
            obj = getattr(module, attr)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and getattr(obj, "__module__", "") == module.__name__:
                texts.append(inspect.getdoc(obj) or "")
                if inspect.isclass(obj):
                    texts.append("\n\n".join(inspect.getdoc(m) or "" for _, m in sorted(vars(obj).items())
                                             if inspect.isfunction(m) and m.__doc__))
    paragraphs, seen = [], set()
    for text in texts:
        buffer = ""
        for block in re.split(r"\n\s*\n", text):
            block = block.strip()
            if not block or set(block) <= set("*=-~^ "):
                continue
            buffer = f"{buffer}\n\n{block}" if buffer else block
            if len(buffer) >= min_chars:
                if len(buffer) <= max_chars and buffer not in seen and not _EMAILISH.search(buffer):
                    paragraphs.append(buffer)
                    seen.add(buffer)
                buffer = ""
    return paragraphs


# ----------------------------------------------------------------------------------------- PII values
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _base58check(payload: bytes) -> str:
    data = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = _B58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def _bech32_polymod(values):
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if ((top >> i) & 1) else 0
    return chk


def _bech32_address(rng: random.Random) -> str:
    program = bytes(rng.randrange(256) for _ in range(20))
    acc, bits, data = 0, 0, [0]  # witness version 0
    for b in program:
        acc = (acc << 8) | b
        bits += 8
        while bits >= 5:
            bits -= 5
            data.append((acc >> bits) & 31)
    if bits:
        data.append((acc << (5 - bits)) & 31)
    hrp = "bc"
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    polymod = _bech32_polymod(expanded + data + [0] * 6) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(_BECH32[d] for d in data + checksum)


def crypto_address(rng: random.Random) -> str:
    kind = rng.choice(["p2pkh", "p2sh", "bech32", "eth"])
    if kind == "eth":
        return "0x" + "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(40))
    if kind == "bech32":
        return _bech32_address(rng)
    version = b"\x00" if kind == "p2pkh" else b"\x05"
    return _base58check(version + bytes(rng.randrange(256) for _ in range(20)))


def card_number(fake, rng: random.Random) -> str:
    kind = rng.choice(["visa", "mastercard", "mastercard", "amex", "discover", "jcb", "diners", "maestro"])
    digits = fake.credit_card_number(card_type=kind)
    style = rng.random()
    if style < 0.4 or len(digits) not in (15, 16):
        return digits
    sep = rng.choice([" ", "-"])
    if len(digits) == 15:
        return sep.join([digits[:4], digits[4:10], digits[10:]])
    return sep.join(digits[i:i + 4] for i in range(0, 16, 4))


def iban(fake, rng: random.Random) -> str:
    value = fake.iban()
    if rng.random() < 0.5:
        return " ".join(value[i:i + 4] for i in range(0, len(value), 4))
    return value


def pii_value(kind: str, fakes: dict, locale: str, rng: random.Random) -> str:
    fake = fakes[locale]
    if kind == "EMAIL":
        return rng.choice([fake.email, fake.free_email, fake.company_email])()
    if kind == "PHONE":
        return fake.phone_number()
    if kind == "CARD":
        return card_number(fakes["en_US"], rng)
    if kind == "IPV4":
        return fake.ipv4_public()
    if kind == "IPV6":
        return fake.ipv6()
    if kind == "IBAN":
        iban_locale = locale if locale in ("de_DE", "fr_FR", "it_IT", "es_ES", "nl_NL", "en_GB", "pl_PL") else "de_DE"
        return iban(fakes[iban_locale], rng)
    if kind == "SSN":
        return fakes["en_US"].ssn()
    if kind == "CRYPTO":
        return crypto_address(rng)
    raise ValueError(kind)


TEMPLATES = {
    "EMAIL": ["Contact {name} at {v} for details.", "Email: {v}", "Send your application to {v} by Friday.",
              "Schreiben Sie an {v}.", "Écrivez-nous à {v}.", "{name} <{v}> wrote:", "(questions: {v})",
              "Reply to {v}.", "Scrivi a {v} per informazioni."],
    "PHONE": ["Call {v} for details.", "You can reach the office at {v}.", "Tel.: {v}", "Phone: {v}",
              "Rufen Sie uns unter {v} an.", "Appelez le {v}.", "Llame al {v}.", "Chiama il {v}.",
              "Bel {v} voor informatie.", "Ligue para {v}.", "お問い合わせ: {v}", "Zadzwoń pod {v}.",
              "Mobile: {v}", "{name} ({v}) confirmed the booking.", "— {name}, {v}"],
    "CARD": ["Card number: {v}", "It was paid with {v}.", "Kartennummer {v}", "numéro de carte {v}",
             "{name} used card {v} on {date}.", "Charged to {v}."],
    "IPV4": ["Login from {v} was blocked.", "client {v} connected", "IP: {v}", "[{v}] GET /index.html 200",
             "The request came from {v}."],
    "IPV6": ["Login from {v} was blocked.", "client {v} connected", "IPv6: {v}", "[{v}] GET /index.html 200",
             "The request came from {v}."],
    "IBAN": ["IBAN: {v}", "Please transfer the amount to {v}.", "Bankverbindung: {v}", "RIB / IBAN {v}",
             "Account {v} ({name})."],
    "SSN": ["SSN: {v}", "Social Security number {v}", "{name}'s SSN is {v}.", "ssn={v}", "{name}, {v}, {city}."],
    "CRYPTO": ["Send BTC to {v}.", "wallet {v}", "Donations: {v}", "Pay to address {v}."],
}


# ----------------------------------------------------------------------------------------- look-alikes
def _isbn13(rng: random.Random) -> str:
    body = "978" + "".join(str(rng.randrange(10)) for _ in range(9))
    check = (10 - sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(body)) % 10) % 10
    d = body + str(check)
    return f"{d[:3]}-{d[3]}-{d[4:7]}-{d[7:12]}-{d[12]}"


def _isbn10(rng: random.Random) -> str:
    body = "".join(str(rng.randrange(10)) for _ in range(9))
    check = (11 - sum((10 - i) * int(x) for i, x in enumerate(body)) % 11) % 11
    d = body + ("X" if check == 10 else str(check))
    return f"{d[0]}-{d[1:4]}-{d[4:9]}-{d[9]}"


def lookalike(kind: str, rng: random.Random) -> tuple[str, str]:
    """``(sentence with {v}, token)`` for one PII-looking non-PII token of ``kind``."""
    r = rng.randrange
    if kind == "version":
        v = rng.choice([f"{r(1, 4)}.{r(0, 13)}.{r(0, 20)}", f"v{r(0, 9)}.{r(0, 30)}.{r(0, 99)}",
                        f"10.0.{r(10000, 22631)}.{r(1, 3000)}", f"{r(3, 6)}.{r(0, 19)}.0-{r(1, 40)}-amd64",
                        f"{r(1, 9)}.{r(0, 9)}.{r(0, 9)}.{r(0, 9)}"])
        return rng.choice(["Requires version {v} or later.", "Tested with {v}.", "(since {v})"]), v
    if kind == "date":
        y, m, d = r(1970, 2031), r(1, 13), r(1, 29)
        v = rng.choice([f"{y}-{m:02d}-{d:02d}", f"{d:02d}.{m:02d}.{y}", f"{m:02d}/{d:02d}/{y}",
                        f"{y}-{m:02d}-{d:02d}T{r(24):02d}:{r(60):02d}:00Z", f"{y}-{y + r(1, 30)}"])
        return rng.choice(["This changed on {v}.", "(released {v})", "Valid until {v}."]), v
    if kind == "isbn":
        v = rng.choice([_isbn13(rng), _isbn10(rng), _isbn13(rng).replace("-", "")])
        return rng.choice(["ISBN {v}", "See the book (ISBN {v}).", "({v})"]), v
    if kind == "hash":
        data = bytes(r(256) for _ in range(16))
        v = rng.choice([hashlib.sha1(data).hexdigest(), hashlib.sha256(data).hexdigest(), hashlib.md5(data).hexdigest(),
                        hashlib.sha1(data).hexdigest()[:7]])
        return rng.choice(["commit {v}", "checksum {v}", "sha: {v}"]), v
    if kind == "uuid":
        v = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        return rng.choice(["request id {v}", "({v})", "uuid={v}"]), rng.choice([v, v.upper()])
    if kind == "oid":
        v = rng.choice([f"1.3.6.1.4.1.{r(1, 60000)}.{r(1, 30)}", f"2.5.4.{r(3, 50)}", f"1.2.840.113549.1.1.{r(1, 14)}",
                        "1.3.6.1.4.1"])
        return rng.choice(["OID {v}", "the object identifier {v}", "arc {v}"]), v
    if kind == "cve":
        v = f"CVE-{r(1999, 2026)}-{r(1000, 60000)}"
        return rng.choice(["fixes {v}", "({v})", "See {v}."]), v
    if kind == "code":
        v = rng.choice([f"x = a[{r(1, 9)}::{r(1, 9)}]", f"0x{r(16 ** 8):08x}", f"sleep({r(1000, 100000)})",
                        f"port={r(1024, 65535)}", "std::map<int, int>", f"arr[{r(100000, 9999999)}]",
                        f"return {r(10 ** 6, 10 ** 9)};", f"time.time() - {r(1600000000, 1800000000)}",
                        f"struct.pack('>I', {r(2 ** 31)})", f"range({r(1000000, 99999999)})"])
        return rng.choice(["Use `{v}` here.", "e.g. {v}", "{v}"]), v
    if kind == "price":
        v = rng.choice([f"${r(1, 99):d},{r(1000):03d}.{r(100):02d}", f"€{r(1, 9)}.{r(1000):03d},{r(100):02d}",
                        f"{r(1, 99)} {r(1000):03d} {r(1000):03d} €", f"USD {r(1, 999)},{r(1000):03d},{r(1000):03d}",
                        f"£{r(1, 999)}.{r(100):02d}"])
        return rng.choice(["It costs {v}.", "(price: {v})", "for {v}"]), v
    if kind == "rfc":
        v = f"RFC {r(700, 9500)}"
        return rng.choice(["as defined in {v}.", "({v})", "See {v}, section 3."]), v
    if kind == "timestamp":
        v = str(r(1_000_000_000, 1_900_000_000))
        return rng.choice(["mtime {v}", "(epoch {v})", "ts={v}"]), v
    if kind == "coordinates":
        v = f"{r(-89, 89)}.{r(10 ** 4):04d}, {r(-179, 179)}.{r(10 ** 4):04d}"
        return rng.choice(["located at {v}", "({v})"]), v
    raise ValueError(kind)


LOOKALIKE_KINDS = ["version", "date", "isbn", "hash", "uuid", "oid", "cve", "code", "price", "rfc", "timestamp",
                   "coordinates"]


# ------------------------------------------------------------------------------------------- assemble
def _cuts(text: str) -> list[int]:
    """Sentence boundaries of ``text`` (after ". " or ": " before a capital), and its end."""
    return [m.end() for m in re.finditer(r"[.:]\s+(?=[A-Z])", text)] + [len(text)]


def assemble(text: str, inserts: list[tuple[int, str, str, str, str, str]]) -> tuple[str, list]:
    """Insert sentences ``(cut, head, value, tail, group, kind)`` into ``text``; return it and the labels
    ``(group, kind, start, end)`` of each value in the new text."""
    out, labels, pos, length = [], [], 0, 0
    for cut, head, value, tail, group, kind in sorted(inserts, key=lambda x: x[0]):
        piece = text[pos:cut]
        out.append(piece)
        length += len(piece)
        joiner = "" if length == 0 or text[cut - 1:cut] in (" ", "\n") else " "
        sentence = joiner + head + value + tail + (" " if cut < len(text) else "")
        start = length + len(joiner) + len(head)
        labels.append((group, kind, start, start + len(value)))
        out.append(sentence)
        length += len(sentence)
        pos = cut
    out.append(text[pos:])
    return "".join(out), labels


def build(n_docs: int, seed: int = 0, pii_share: float = 0.5, lookalike_share: float = 0.35,
          paragraphs_per_doc: int = 1) -> list[dict]:
    """``n_docs`` labelled documents: ``{"id", "text", "labels": [(group, kind, start, end)]}`` where group is
    ``pii`` (kind in PII_TYPES) or ``lookalike`` (kind in LOOKALIKE_KINDS). A document is
    ``paragraphs_per_doc`` consecutive paragraphs (1: a paragraph, ~700 characters; 4: a page, ~2.8 KB);
    the number of injected items per document does not depend on it."""
    from faker import Faker

    rng = random.Random(seed)
    fakes = {}
    for i, locale in enumerate(LOCALES):
        fakes[locale] = Faker(locale)
        fakes[locale].seed_instance(seed * 100 + i)
    paragraphs = prose_paragraphs()
    rng.shuffle(paragraphs)
    docs = []
    for i in range(n_docs):
        first = i * paragraphs_per_doc
        text = "\n\n".join(paragraphs[(first + k) % len(paragraphs)] for k in range(paragraphs_per_doc))
        cuts = _cuts(text)
        inserts = []
        roll = rng.random()
        with_pii = roll < pii_share
        with_lookalikes = pii_share <= roll < pii_share + lookalike_share or (with_pii and rng.random() < 0.2)
        if with_pii:
            for _ in range(rng.choice([1, 1, 2, 3])):
                kind = rng.choice(PII_TYPES)
                locale = rng.choice(LOCALES)
                fake = fakes[locale]
                value = pii_value(kind, fakes, locale, rng)
                head, _, tail = rng.choice(TEMPLATES[kind]).partition("{v}")
                extra = {"name": fake.name(), "city": fake.city(), "date": fake.date()}
                inserts.append((rng.choice(cuts), head.format(**extra), value, tail.format(**extra), "pii", kind))
        if with_lookalikes:
            for _ in range(rng.choice([2, 3, 4])):
                kind = rng.choice(LOOKALIKE_KINDS)
                template, value = lookalike(kind, rng)
                head, _, tail = template.partition("{v}")
                inserts.append((rng.choice(cuts), head, value, tail, "lookalike", kind))
        text, labels = assemble(text, inserts)
        for group, kind, start, end in labels:
            assert end <= len(text)
        docs.append({"id": f"doc{i:05d}", "text": text, "labels": labels})
    return docs
