"""Web archives and HTML pages into documents: WARC / WARC.gz records (read with FastWARC) and .html files,
each page's main text extracted with Resiliparse (default) or trafilatura.

The libraries were picked by measurement (``bench/web.py``, docs/web.md): FastWARC reads records 2.2-2.4x
faster than warcio, and Resiliparse's main-content extraction is 17-21x faster than trafilatura's at an F1
within 0.02 of it against the text of the pages' main elements.

Every WARC record is accounted for. A ``response`` record with HTTP status 200 and an HTML content type becomes
a document (metadata ``url``, ``date``, ``content_type``, ``warc_record_id``); other responses are rejected with
a named reason (``warc_http_status``, ``warc_not_html``, ``warc_truncated``, ``warc_bad_encoding``,
``no_main_text``, ``html_parse_error``); records of the
other types (``warcinfo``, ``request``, ``metadata``, ``revisit``, ``resource``, ...) carry no page to keep and
are skipped, counted by type as the read edit ``warc_skipped_<type>``.

The readers in ``corpusforge.pipeline.readers`` call ``read_warc`` / ``read_html`` with their per-file context
(``document``, ``reject``, ``counters``, ``spec``, ``max_chars``), so the accounting rules are the same as for
every other format.
"""
from __future__ import annotations

import codecs
import io
import re
import zlib
from typing import Any, BinaryIO, Callable, Iterator, Protocol

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Tables of contents and page navigation in the common generators' markup (MediaWiki #toc, DocBook .toc,
# .navheader/.navfooter, ARIA navigation, breadcrumbs), which Resiliparse's main-content heuristics keep
# when they sit inside the content (bench/web.py: precision 0.981 -> 0.993, recall 0.801 -> 0.796).
SKIP_ELEMENTS = [".toc", "#toc", ".navheader", ".navfooter", "[role=navigation]", ".breadcrumb", ".breadcrumbs"]


class _ReaderContext(Protocol):  # corpusforge.pipeline.readers._Context
    spec: Any
    relpath: str
    max_chars: int
    counters: dict[str, int]

    def reject(self, position: int, reason: str, detail: str = "", raw: bytes | str = b""): ...

    def stopped(self, position: int, exc: BaseException): ...

    def document(self, position: int, text: str, raw_id: Any, metadata: dict[str, Any], raw: bytes | str = b""): ...


# ------------------------------------------------------------------------------------------- extraction
def extractor(name: str) -> Callable[[bytes, str | None], str]:
    """``(html bytes, declared charset or None) -> main text`` for ``inputs[].html_extractor``."""
    if name == "trafilatura":
        return _trafilatura()
    from resiliparse.extract.html2text import extract_plain_text

    def resiliparse_main_text(html: bytes, charset: str | None) -> str:
        # Block structure kept (one paragraph per line), so line-based rules and dedup see real lines.
        page = decode_html(html, charset)
        if nested_deeper_than(page, MAX_HTML_DEPTH):  # main-content extraction grows ~depth^2.6
            return flat_text(page)
        return extract_plain_text(page, main_content=True, preserve_formatting=True,
                                  list_bullets=False, skip_elements=SKIP_ELEMENTS)

    return resiliparse_main_text


# Resiliparse's main-content extraction costs ~depth^2.6 in the page's element nesting depth (a 350 KB page of
# nested <div>s: ~50x prose per byte; 2.2 MB: no end in 300 s). Real pages nest 10-40 deep; at 128 a page of
# nothing but nesting costs ~4x prose per byte, and any deeper page is extracted whole (main_content=False),
# which is linear. bench/adversarial.py row ``nested_divs`` holds it to the 3x-prose-per-byte rule.
MAX_HTML_DEPTH = 128
# a tag's attributes stop at the next '<' too: an unclosed tag costs what it spans, never the rest of the page
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*)([^<>]*)|<!--")
# Elements that never hold others, and those whose start tag closes an open one of the same name (HTML's
# implied end tags), so ordinary pages are not counted deeper than a parser builds them.
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr keygen".split())
_SELF_CLOSING = frozenset("p li dt dd tr td th option thead tbody tfoot".split())
_CLOSES_P = frozenset("address article aside blockquote details div dl dd dt fieldset figure footer form h1 h2 h3 h4 "
                      "h5 h6 header hr li main nav ol p pre section table ul".split())
_RAW_TEXT = frozenset("script style textarea title xmp".split())


_RAW_START = re.compile(r"<(script|style|noscript|template)\b", re.IGNORECASE)
_ANY_TAG = re.compile(r"<[^<>]*>")  # not '<[^>]*>': '<<<<...' without a '>' would rescan to the end each time
_BLANKS = re.compile(r"\s*\n\s*")


def flat_text(page: str) -> str:
    """The text of a page nested past ``MAX_HTML_DEPTH``: tags and script/style blocks out, entities decoded,
    one line per run of text. A linear fallback (C regexes) for the pages Resiliparse's main-content
    extraction cannot take in bounded time; its own plain extraction (``main_content=False``) is linear too but
    costs ~4x prose per byte on such pages."""
    import html as html_lib

    pieces, pos, lower = [], 0, page.lower()
    while (m := _RAW_START.search(page, pos)) is not None:  # each search starts past the last: linear
        pieces.append(page[pos:m.start()])
        end = lower.find("</" + m.group(1).lower(), m.end())
        pos = len(page) if end < 0 else end
    pieces.append(page[pos:])
    text = _ANY_TAG.sub("\n", "\n".join(pieces))
    return _BLANKS.sub("\n", html_lib.unescape(text)).strip()


def nested_deeper_than(page: str, limit: int) -> bool:
    """Whether the elements of ``page`` nest more than ``limit`` deep, from one linear scan of its tags (start
    tags push, end tags pop back to their element; void elements, comments and script/style contents do not
    count; a start tag of ``p``/``li``/``td``... closes an open one of the same name, as a parser does)."""
    stack: list[str] = []
    pos, lower = 0, None
    while True:
        m = _TAG.search(page, pos)
        if m is None:
            return False
        if m.group() == "<!--":
            end = page.find("-->", m.end())
            if end < 0:
                return False
            pos = end + 3
            continue
        pos = m.end()
        name = m.group(2).lower()
        if m.group(1):  # an end tag: pop back to its element, if it is open
            if name in stack:
                while stack.pop() != name:
                    pass
            continue
        if name in _VOID:
            continue
        if name in _RAW_TEXT:  # its content is text: skip to its end tag
            lower = page.lower() if lower is None else lower
            end = lower.find("</" + name, pos)
            pos = len(page) if end < 0 else end + 2 + len(name)
            continue
        if name in _CLOSES_P and stack and stack[-1] == "p":  # a block start tag closes an open <p>
            stack.pop()
        if name in _SELF_CLOSING and name in stack[-3:]:  # <li> closes the open <li> (and what it holds)
            while stack.pop() != name:
                pass
        if m.group(3).endswith("/"):  # <div/>: no content
            continue
        stack.append(name)
        if len(stack) > limit:
            return True


def _trafilatura() -> Callable[[bytes, str | None], str]:
    try:
        import trafilatura
    except ImportError:
        from corpusforge.core.errors import missing_dependency

        raise missing_dependency("trafilatura", "'corpusforge[trafilatura]'",
                                 "inputs[].html_extractor: trafilatura") from None
    import logging

    logging.getLogger("trafilatura").setLevel(logging.ERROR)  # its warnings name pages; never log text

    def trafilatura_main_text(html: bytes, charset: str | None) -> str:
        return trafilatura.extract(decode_html(html, charset), include_comments=False, deduplicate=False) or ""

    return trafilatura_main_text


def decode_html(html: bytes, charset: str | None) -> str:
    """The page as text: the HTTP charset when Python knows it, else the encoding Resiliparse detects (meta
    tags, byte statistics); undecodable bytes become U+FFFD rather than losing the page."""
    if charset:
        try:
            return html.decode(codecs.lookup(charset).name, errors="replace")
        except LookupError:
            pass
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    return bytes_to_str(html, detect_encoding(html))


# ----------------------------------------------------------------------------------------------- WARC
class _StopAtTruncation(io.RawIOBase):
    """A decompressed stream that ends, instead of raising, where its compressed file was cut short, and
    remembers the error: FastWARC then sees the last record short (``warc_truncated``) and the reader
    rejects the unread rest as ``truncated_compressed_file``, like every other compressed input."""

    def __init__(self, stream: BinaryIO):
        self._stream, self.error, self._position = stream, None, 0
        self._read = getattr(stream, "read1", stream.read)

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        # FastWARC asks where it is (seek(0, SEEK_CUR)) for record offsets; it never moves.
        if (offset, whence) in ((0, io.SEEK_CUR), (self._position, io.SEEK_SET)):
            return self._position
        raise io.UnsupportedOperation("seek")

    def readinto(self, target) -> int:
        if self.error is not None:
            return 0
        try:
            # read1: one read of the decompressor, so the data before a cut is returned before the error is
            data = self._read(min(len(target), 1 << 16))
        except (EOFError, zlib.error, OSError) as exc:
            self.error = exc
            return 0
        target[: len(data)] = data
        self._position += len(data)
        return len(data)


def read_warc(stream: BinaryIO, ctx: _ReaderContext) -> Iterator[Any]:
    """Documents and rejected records of one (decompressed) WARC file; see the module docstring."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    extract = extractor(ctx.spec.html_extractor)
    source = _StopAtTruncation(stream)
    # Payloads are read as stored (auto_decode="none") so that a record cut short is seen by its length;
    # FastWARC's own decoding hides that (a cut gzip payload reads as empty, a cut chunked one raises).
    records = iter(ArchiveIterator(source, parse_http=True, auto_decode="none"))
    position = -1
    while True:
        try:
            record = next(records)
        except StopIteration:
            break
        except (ValueError, OSError) as exc:  # FastWARC: bytes it cannot parse as WARC (an ARC file, garbage)
            yield ctx.stopped(position + 1, exc)  # unreadable_file, or file_changed: another process changed it
            return
        position += 1
        if record.record_type != WarcRecordType.response:
            key = f"warc_skipped_{record.record_type}"
            ctx.counters[key] = ctx.counters.get(key, 0) + 1
            continue
        yield _response(position, record, extract, ctx)
    if source.error is not None:
        yield ctx.stopped(position + 1, source.error)  # truncated_compressed_file (or file_changed)


def _response(position: int, record, extract, ctx: _ReaderContext):
    url = record.headers.get("WARC-Target-URI") or ""
    if record.headers.get("WARC-Truncated"):  # the crawler stopped reading the page (length, time, ...)
        return ctx.reject(position, "warc_truncated", f"WARC-Truncated: {record.headers.get('WARC-Truncated')}", url)
    if not record.is_http:
        return ctx.reject(position, "warc_not_html", f"not an HTTP response: {record.headers.get('Content-Type')}", url)
    limit = ctx.max_chars * 4
    payload = record.reader.read(limit + 1)
    status = record.http_headers.status_code if record.http_headers is not None else None
    if len(payload) <= limit and (len(payload) < record.content_length or status is None):
        # the file ends inside this record (its HTTP headers or its payload)
        return ctx.reject(position, "warc_truncated", "warc ends inside this record", url)
    if status != 200:
        return ctx.reject(position, "warc_http_status", f"HTTP status {status}", url)
    content_type = (record.http_content_type or "").lower()
    if content_type not in HTML_TYPES:
        return ctx.reject(position, "warc_not_html", f"content type {content_type or '(none)'}", url)
    if len(payload) > limit:
        return ctx.reject(position, "oversize_record", f"page larger than {limit} bytes", url)
    try:
        payload = decode_payload(payload, record.http_headers, limit)
    except PayloadTooLarge:
        return ctx.reject(position, "oversize_record", f"decoded page larger than {limit} bytes", url)
    except (ValueError, zlib.error) as exc:
        return ctx.reject(position, "warc_bad_encoding", str(exc)[:200], url)
    text = _extract_or_reason(extract, payload, record.http_charset)
    if isinstance(text, tuple):
        return ctx.reject(position, *text, url)
    record_id = (record.record_id or "").strip("<>")
    metadata = {"url": url, "date": record.headers.get("WARC-Date") or "", "content_type": content_type,
                "warc_record_id": record_id}
    return ctx.document(position, text, record_id or None, metadata, url)


def _extract_or_reason(extract, html: bytes, charset: str | None) -> str | tuple[str, str]:
    """The page's main text, or ``(reason, detail)``: ``no_main_text``, or ``html_parse_error`` when the
    extractor fails on this page (one bad page is one rejected record, not a failed build)."""
    try:
        text = extract(html, charset)
    except Exception as exc:  # noqa: BLE001 - extractors raise their own types (HTMLParserException, lxml errors)
        return "html_parse_error", f"{type(exc).__name__}: {exc}"[:200]
    if not text.strip():
        return "no_main_text", "no main text found in the page"
    return text


def decode_payload(payload: bytes, http_headers, limit: int) -> bytes:
    """An HTTP payload as the server meant it: chunked transfer encoding undone (unless the crawler already
    did, as Common Crawl does), then each content encoding (gzip, deflate, br) in reverse order, never
    past ``limit`` bytes (a compression bomb ends as ``PayloadTooLarge``). Raises ValueError or zlib.error
    for a payload its headers do not describe."""
    if "chunked" in (http_headers.get("Transfer-Encoding") or "").lower():
        try:
            payload = _dechunk(payload)
        except ValueError:
            pass  # stored de-chunked under the original header
    codings = [c.strip().lower() for c in (http_headers.get("Content-Encoding") or "").split(",") if c.strip()]
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip"):
            payload = _inflate(payload, 32 + zlib.MAX_WBITS, limit)  # gzip or zlib header
        elif coding == "deflate":
            try:
                payload = _inflate(payload, zlib.MAX_WBITS, limit)
            except zlib.error:  # raw deflate, as some servers send it
                payload = _inflate(payload, -zlib.MAX_WBITS, limit)
        elif coding == "br":
            import brotli  # a dependency of fastwarc

            try:
                payload = brotli.Decompressor().process(payload, output_buffer_limit=limit + 1)
            except brotli.error as exc:
                raise ValueError(f"brotli: {exc}") from None
            if len(payload) > limit:
                raise PayloadTooLarge(limit)
        elif coding != "identity":
            raise ValueError(f"unknown content encoding {coding!r}")
    return payload


class PayloadTooLarge(Exception):
    """A decoded payload would pass the size limit."""


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    """Every member of ``data`` (gzip allows several one after another, RFC 1952 2.2; what follows a
    zlib or raw deflate stream is not read), never past ``limit`` bytes in all."""
    out, size = [], 0
    while True:
        inflater = zlib.decompressobj(wbits)
        piece = inflater.decompress(data, limit - size + 1)
        size += len(piece)
        if size > limit:
            raise PayloadTooLarge(limit)
        if not inflater.eof:
            raise zlib.error("incomplete or truncated compressed payload")
        out.append(piece)
        data = inflater.unused_data
        if wbits < 32 or not data.strip(b"\0"):  # trailing NUL padding is not a member
            return b"".join(out)


_HEX = re.compile(rb"[0-9A-Fa-f]+")


def _dechunk(data: bytes) -> bytes:
    out, pos = [], 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            raise ValueError("chunk size line without end")
        digits = data[pos:end].split(b";", 1)[0].strip()
        # hex digits only: int() also takes a sign, and a negative size would move pos back (an endless loop)
        if not _HEX.fullmatch(digits):
            raise ValueError("chunk size is not a hexadecimal number")
        size = int(digits, 16)
        if size == 0:
            return b"".join(out)
        start = end + 2
        if start + size > len(data):
            raise ValueError("chunk longer than the payload")
        out.append(data[start:start + size])
        pos = start + size + 2


# ----------------------------------------------------------------------------------------------- HTML
def read_html(stream: BinaryIO, ctx: _ReaderContext) -> Iterator[Any]:
    """One document per .html file: its main text, metadata ``path`` and ``content_type``."""
    limit = ctx.max_chars * 4
    try:
        data = stream.read(limit + 1)
    except (EOFError, zlib.error, OSError) as exc:  # cut short, corrupt, changed; an I/O error stops the build
        yield ctx.stopped(0, exc)
        return
    if len(data) > limit:
        yield ctx.reject(0, "oversize_record", f"file larger than {limit} bytes", ctx.relpath)
        return
    text = _extract_or_reason(extractor(ctx.spec.html_extractor), data, None)
    if isinstance(text, tuple):
        yield ctx.reject(0, *text, ctx.relpath)
        return
    yield ctx.document(0, text, None, {"path": ctx.relpath, "content_type": "text/html"}, ctx.relpath)
