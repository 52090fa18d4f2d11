"""Web archives and HTML pages: a WARC written here with warcio, pages with real boilerplate, a real build."""
import gzip
import io
import json

import pyarrow as pa
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from corpusforge.core.shard_files import open_shard
from corpusforge.cli.main import main
from corpusforge.pipeline.config import InputConfig
from corpusforge.pipeline.document import Document, Rejected
from corpusforge.pipeline.readers import detect_format, open_decompressed, records_from_file

ARTICLE = [
    "The lighthouse keeper climbed the spiral stairs every evening at dusk to light the great lamp.",
    "For forty years the light had never failed, not even during the storm that sank three fishing boats.",
    "Ships passing the headland counted on its beam to find the narrow channel between the rocks.",
    "When the lamp was finally replaced by an automatic one, the keeper moved to a cottage in the village.",
]


def page(title: str, paragraphs: list[str]) -> str:
    """A page as sites build them: menu, breadcrumbs, a sidebar table of contents, scripts, a cookie banner and
    a footer around an <article>."""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title>
<script>window.dataLayer = [];function track(){{return 'tracking code never text';}}</script>
<style>.menu {{ color: red }}</style></head><body>
<header><nav class="menu"><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li>
<li><a href="/shop">Shop</a></li><li><a href="/about">About us</a></li><li><a href="/login">Log in</a></li></ul></nav></header>
<div class="breadcrumbs"><a href="/">Home</a> &gt; <a href="/stories">Stories</a></div>
<aside class="sidebar"><h3>Contents</h3><ul><li><a href="#a">Subscribe to our newsletter</a></li>
<li><a href="#b">Related posts</a></li><li><a href="#c">Popular tags</a></li></ul></aside>
<main><article><h1>{title}</h1>{body}</article></main>
<div id="cookie-banner">We use cookies to improve your experience. Accept all cookies.</div>
<footer><p>Copyright 2024 Example Media Group. All rights reserved.</p><a href="/privacy">Privacy policy</a>
<a href="/terms">Terms of service</a></footer>
<script src="/analytics.js"></script></body></html>"""


BOILERPLATE = ("Home", "Log in", "newsletter", "Related posts", "cookies", "Copyright", "Privacy policy",
               "tracking code", "color: red")


def _response(writer, url, status, content_type, body: bytes, **warc_headers):
    http = StatusAndHeaders(status, [("Content-Type", content_type), ("Content-Length", str(len(body)))],
                            protocol="HTTP/1.1")
    record = writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http,
                                       warc_headers_dict=warc_headers or None)
    writer.write_record(record)


def write_warc(path, gz: bool) -> None:
    """warcinfo, a request and a metadata record (skipped), two good pages (one latin-1), a 404, a PDF, a page
    the crawler truncated, a page on a blocked domain, one on a blocked URL pattern and one with a long URL."""
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=gz)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "test"}))
        request = StatusAndHeaders("GET /story HTTP/1.1", [("Host", "news.example.org")], is_http_request=True)
        writer.write_record(writer.create_warc_record("https://news.example.org/story", "request",
                                                      payload=io.BytesIO(b""), http_headers=request))
        _response(writer, "https://news.example.org/story", "200 OK", "text/html; charset=utf-8",
                  page("The lighthouse keeper", ARTICLE).encode())
        writer.write_record(writer.create_warc_record("https://news.example.org/story", "metadata",
                                                      payload=io.BytesIO(b"fetchTimeMs: 12\n"),
                                                      warc_content_type="application/warc-fields"))
        latin = page("Café", ["Le café du coin ouvre à sept heures et ferme après le dernier client du soir.",
                              "On y sert un café noir très fort et des croissants que tout le quartier connaît."])
        _response(writer, "https://cafe.example.fr/", "200 OK", "text/html; charset=iso-8859-1",
                  latin.replace('charset="utf-8"', 'charset="iso-8859-1"').encode("latin-1"))
        _response(writer, "https://news.example.org/gone", "404 Not Found", "text/html", b"<html>Not found</html>")
        _response(writer, "https://news.example.org/report.pdf", "200 OK", "application/pdf", b"%PDF-1.4 ...")
        _response(writer, "https://news.example.org/long", "200 OK", "text/html", page("Cut", ARTICLE).encode(),
                  **{"WARC-Truncated": "length"})
        _response(writer, "https://ads.spam.example/win", "200 OK", "text/html",
                  page("Prize", [p.replace("lighthouse", "prize") for p in ARTICLE]).encode())
        _response(writer, "https://news.example.org/login/story", "200 OK", "text/html",
                  page("Login", [p.replace("keeper", "guard") for p in ARTICLE]).encode())
        _response(writer, "https://news.example.org/s?" + "x" * 300, "200 OK", "text/html",
                  page("Long", [p.replace("stairs", "steps") for p in ARTICLE]).encode())


def _read(path, **spec):
    counters = {}
    with open(path, "rb") as raw, open_decompressed(raw, str(path)) as stream:
        items = list(records_from_file(stream, InputConfig(path=str(path), **spec), str(path), path.name, 100_000,
                                       counters))
    return items, counters


def _rejected(items):
    return [(r.position, r.reason) for r in items if isinstance(r, Rejected)]


@pytest.mark.parametrize("name,gz", [("crawl.warc", False), ("crawl.warc.gz", True)])
def test_warc_records_become_documents_or_named_rejections(tmp_path, name, gz):
    path = tmp_path / name
    write_warc(path, gz)
    items, counters = _read(path)
    docs = [d for d in items if isinstance(d, Document)]
    assert [d.metadata["url"] for d in docs] == [
        "https://news.example.org/story", "https://cafe.example.fr/", "https://ads.spam.example/win",
        "https://news.example.org/login/story", "https://news.example.org/s?" + "x" * 300]
    story, cafe = docs[0], docs[1]
    assert story.metadata["content_type"] == "text/html" and story.metadata["date"].startswith("20")
    assert story.id == "crawl/" + story.metadata["warc_record_id"] and story.id.startswith("crawl/urn:uuid:")
    for sentence in ARTICLE:
        assert sentence in story.text
    for junk in BOILERPLATE:
        assert junk not in story.text, junk
    assert "Le café du coin ouvre à sept heures" in cafe.text  # latin-1 page decoded by its HTTP charset
    # Records: 0 warcinfo, 1 request, 2 story, 3 metadata, 4 café, 5 404, 6 PDF, 7 truncated, 8-10 pages.
    assert _rejected(items) == [(5, "warc_http_status"), (6, "warc_not_html"), (7, "warc_truncated")]
    assert counters == {"warc_skipped_warcinfo": 1, "warc_skipped_request": 1, "warc_skipped_metadata": 1}


def test_a_warc_cut_short_keeps_what_was_read(tmp_path):
    whole = tmp_path / "whole.warc"
    write_warc(whole, gz=False)
    data = whole.read_bytes()
    cut = tmp_path / "cut.warc"
    cut.write_bytes(data[: data.index(b"https://ads.spam.example/win") + 1000])  # inside that page's record
    items, _ = _read(cut)
    assert [d.metadata["url"] for d in items if isinstance(d, Document)] == ["https://news.example.org/story",
                                                                              "https://cafe.example.fr/"]
    assert _rejected(items) == [(5, "warc_http_status"), (6, "warc_not_html"), (7, "warc_truncated"),
                                (8, "warc_truncated")]
    assert [r.detail for r in items if isinstance(r, Rejected)][2:] == ["WARC-Truncated: length", "warc ends inside this record"]

    whole_gz = tmp_path / "whole.warc.gz"
    write_warc(whole_gz, gz=True)
    blob = whole_gz.read_bytes()
    cut_gz = tmp_path / "cut.warc.gz"
    cut_gz.write_bytes(blob[: len(blob) * 2 // 3])
    items, _ = _read(cut_gz)
    assert [d.metadata["url"] for d in items if isinstance(d, Document)][:2] == ["https://news.example.org/story",
                                                                                  "https://cafe.example.fr/"]
    assert _rejected(items)[-1][1] == "truncated_compressed_file"


def test_encoded_payloads_are_decoded_and_a_bad_one_rejected(tmp_path):
    import zlib

    import brotli

    html = page("The lighthouse keeper", ARTICLE).encode()
    raw_deflate = zlib.compressobj(wbits=-15)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(html[i:i + 500]), html[i:i + 500]) for i in range(0, len(html), 500))
    bodies = [("gzip", gzip.compress(html), {}), ("deflate", raw_deflate.compress(html) + raw_deflate.flush(), {}),
              ("br", brotli.compress(html), {}), ("", chunked + b"0\r\n\r\n", {"Transfer-Encoding": "chunked"}),
              ("gzip", b"not gzip at all", {}), ("gzip", gzip.compress(html)[:-30], {}),  # stored cut short
              ("gzip", gzip.compress(b"<p>" + b"a" * 1_000_000), {}),  # 1 MB from 1 KB: past 4 x max_chars
              ("br", brotli.compress(b"<p>" + b"a" * 1_000_000), {})]
    path = tmp_path / "encoded.warc"
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=False)
        for i, (coding, body, extra) in enumerate(bodies):
            headers = [("Content-Type", "text/html"), ("Content-Length", str(len(body)))]
            headers += [("Content-Encoding", coding)] if coding else []
            headers += list(extra.items())
            http = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(f"https://x.example/{i}", "response",
                                                          payload=io.BytesIO(body), http_headers=http))
    items, _ = _read(path)
    docs = [d for d in items if isinstance(d, Document)]
    assert len(docs) == 4 and all(all(s in d.text for s in ARTICLE) for d in docs)
    assert _rejected(items) == [(4, "warc_bad_encoding"), (5, "warc_bad_encoding"), (6, "oversize_record"),
                                (7, "oversize_record")]
    # A chunked payload cut by the end of the file is a truncated record, not an unreadable file.
    data = path.read_bytes()
    cut = tmp_path / "cut.warc"
    cut.write_bytes(data[: data.index(b"https://x.example/3") + 1500])
    items, _ = _read(cut)
    assert _rejected(items) == [(3, "warc_truncated")]


def test_a_chunk_size_that_is_not_hex_digits_is_not_dechunked():
    from corpusforge.pipeline import web

    with pytest.raises(ValueError, match="hexadecimal"):  # int() takes a sign: -1 moved the parser back a byte
        web._dechunk(b"-1\r\nX0\r\n\r\n")
    # -6 sent it back to the start of the payload forever, growing its output: a stalled build
    hostile = b"-6\r\n" + b"<p>page</p>" * 10
    assert web.decode_payload(hostile, {"Transfer-Encoding": "chunked"}, 1000) == hostile


def test_html_files_and_format_detection(tmp_path):
    assert [detect_format(p) for p in ("a.warc", "a.warc.gz", "b.html", "c.htm.gz", "d.xhtml")] == \
        ["warc", "warc", "html", "html", "html"]
    (tmp_path / "story.html").write_text(page("The lighthouse keeper", ARTICLE), encoding="utf-8")
    (tmp_path / "empty.html").write_text("<html><body><nav><a href='/'>Home</a></nav></body></html>")
    (story,), _ = _read(tmp_path / "story.html")
    assert story.metadata == {"path": "story.html", "content_type": "text/html"}
    assert all(s in story.text for s in ARTICLE) and not any(j in story.text for j in BOILERPLATE)
    items, _ = _read(tmp_path / "empty.html")
    assert _rejected(items) == [(0, "no_main_text")]


def test_an_extractor_failure_rejects_that_page_only(tmp_path, monkeypatch):
    from corpusforge.pipeline import web

    real = web.extractor("resiliparse")

    def fragile(html, charset):
        if b"Cut" in html or b"Prize" in html:
            raise ValueError("parser gave up")
        return real(html, charset)

    monkeypatch.setattr(web, "extractor", lambda name: fragile)
    path = tmp_path / "crawl.warc"
    write_warc(path, gz=False)
    items, _ = _read(path)
    assert _rejected(items) == [(5, "warc_http_status"), (6, "warc_not_html"), (7, "warc_truncated"),
                                (8, "html_parse_error")]
    assert len([d for d in items if isinstance(d, Document)]) == 4
    (tmp_path / "bad.html").write_text(page("Prize", ARTICLE))
    items, _ = _read(tmp_path / "bad.html")
    assert [(r.reason, r.detail) for r in items] == [("html_parse_error", "ValueError: parser gave up")]


def test_not_a_warc_is_one_unreadable_file(tmp_path):
    path = tmp_path / "old.warc"
    path.write_bytes(b"filedesc://old.arc 0.0.0.0 20240101000000 text/plain 76\n1 0 test\n\n")  # an ARC header
    items, _ = _read(path)
    assert _rejected(items) == [(0, "unreadable_file")]


def test_trafilatura_extractor_drops_the_same_boilerplate(tmp_path):
    (tmp_path / "story.html").write_text(page("The lighthouse keeper", ARTICLE), encoding="utf-8")
    (story,), _ = _read(tmp_path / "story.html", html_extractor="trafilatura")
    assert all(s in story.text for s in ARTICLE) and not any(j in story.text for j in BOILERPLATE)


def test_build_over_a_warc_and_html_pages_counts_every_record(tmp_path):
    data = tmp_path / "crawl"
    data.mkdir()
    write_warc(data / "crawl-00000.warc.gz", gz=True)
    (data / "story.html").write_text(page("The night ferry", [s.replace("lighthouse", "ferry") for s in ARTICLE]))
    config = tmp_path / "corpus.yaml"
    config.write_text(
        f"inputs:\n  - path: {data}\n    name: web\n"
        "quality:\n  langid: {enabled: false}\n  gopher: {min_stop_words: 0}\n  fineweb: {enabled: false}\n"
        "  blocklist:\n    domains: [spam.example]\n    url_patterns: ['/login/']\n    max_url_length: 200\n"
        "dedup: {enabled: false}\npii: {enabled: false}\n")
    assert main(["build", "--config", str(config), "--run-dir", str(tmp_path / "run"), "--no-progress"]) == 0
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    # 8 response records + 1 HTML file; the warcinfo, request and metadata records are skipped and counted.
    assert stats["accounting"] == {"input": 9, "kept": 3, "removed": 3, "rejected": 3, "balanced": True}
    assert stats["rejected"]["reasons"] == {"warc_http_status": 1, "warc_not_html": 1, "warc_truncated": 1}
    assert stats["removed"]["by_stage"]["quality"]["reasons"] == {
        "blocklist_domain": 1, "blocklist_url_pattern": 1, "url_too_long": 1}
    assert stats["edits"]["read"] == {"warc_skipped_warcinfo": 1, "warc_skipped_request": 1,
                                      "warc_skipped_metadata": 1}
    files = sorted((tmp_path / "run" / "clean").glob("part-*"))
    table = pa.concat_tables([open_shard(str(f)).read_all() for f in files])
    metadata = [json.loads(m) for m in table.column("metadata").to_pylist()]
    urls = sorted(m.get("url") or m["path"] for m in metadata)
    assert urls == ["https://cafe.example.fr/", "https://news.example.org/story", "story.html"]


def test_a_multi_member_gzip_payload_is_read_whole_and_bounded():
    from corpusforge.pipeline.web import PayloadTooLarge, decode_payload

    html = page("The lighthouse keeper", ARTICLE).encode()
    half = len(html) // 2
    two_members = gzip.compress(html[:half]) + gzip.compress(html[half:]) + b"\0" * 8  # NUL padding after
    assert decode_payload(two_members, {"Content-Encoding": "gzip"}, 10 * len(html)) == html
    # the limit counts every member: two members of 600 bytes each pass a limit of 1,000 together
    with pytest.raises(PayloadTooLarge):
        decode_payload(gzip.compress(b"a" * 600) * 2, {"Content-Encoding": "gzip"}, 1000)
