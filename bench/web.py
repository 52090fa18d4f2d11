"""Web archives: which WARC parser and which main-text extractor, by measurement, on real HTML pages.

    apt-get install -y python3.11-doc debian-handbook debian-reference-en   # real pages with boilerplate
    pip install fastwarc resiliparse warcio trafilatura lxml_html_clean
    python bench/web.py [--pages 150] [--repeat 3] [--json out.json]

Pages: Python's Sphinx documentation (a `role="main"` body between navigation bars, a sidebar with the table
of contents, "previous/next topic", a search box, a footer, scripts), the Debian Administrator's Handbook
(Publican: banner, top and bottom page navigation, site footer) and the Debian Reference (DocBook XSL:
navigation header and footer, a table of contents at the top of each chapter). The reference text of a page
is its main element, the one a person reads: Sphinx's `role="main"` element, the Publican/DocBook chapter or
section element, with scripts, styles, Sphinx's pilcrow links and DocBook's chapter table of contents taken
out. Quality is word-level precision, recall and F1 of the extracted text against it (bags of words, as in
the usual article-extraction benchmarks), averaged over pages.

Speed: the pages are written once as HTTP response records into a WARC (and a WARC.gz) with warcio; each
parser reads every record and its payload (`fastwarc` vs `warcio`), and each extractor turns every page into
text (`resiliparse.extract_plain_text(main_content=True)` vs `trafilatura.extract`), one core, best of
``--repeat`` runs.
"""
from __future__ import annotations

import argparse
import io
import json
import pathlib
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

SOURCES = {
    "python-docs": ("/usr/share/doc/python3.11/html", "**/*.html"),
    "debian-handbook": ("/usr/share/doc/debian-handbook/html/en-US", "*.html"),
    "debian-reference": ("/usr/share/debian-reference", "*.en.html"),
}
SETUP = "apt-get install -y python3.11-doc debian-handbook debian-reference-en"
WORD = re.compile(r"\w+")


def pages(per_source: int, seed: int = 0) -> list[tuple[str, str, bytes]]:
    """(source, file name, HTML bytes) of up to ``per_source`` pages of each source with a main element."""
    out = []
    for source, (root, pattern) in SOURCES.items():
        files = sorted(p for p in pathlib.Path(root).glob(pattern) if p.stat().st_size > 2000)
        if not files:
            sys.exit(f"no pages under {root}; run: {SETUP}")
        random.Random(seed).shuffle(files)
        taken = 0
        for path in files:
            data = path.read_bytes()
            if reference_text(data) is None:
                continue
            out.append((source, str(path.relative_to(root)), data))
            taken += 1
            if taken == per_source:
                break
    return out


def reference_text(html: bytes) -> str | None:
    """The text of the page's main element (see the module docstring), or None if it has none."""
    import lxml.html

    tree = lxml.html.fromstring(html)
    main = tree.xpath('//*[@role="main"]') or tree.xpath("//main") or tree.xpath("//article")
    if not main:  # Publican and DocBook: the first chapter/section/appendix element under <body>
        main = tree.xpath('/html/body/div[contains(concat(" ", @class, " "), " chapter ") or '
                          'contains(concat(" ", @class, " "), " section ") or '
                          'contains(concat(" ", @class, " "), " appendix ") or '
                          'contains(concat(" ", @class, " "), " preface ") or '
                          'contains(concat(" ", @class, " "), " book ")]')
    if not main:
        return None
    node = main[0]
    for bad in node.xpath('.//script | .//style | .//a[@class="headerlink"] | .//div[@class="toc"]'):
        bad.drop_tree()
    text = node.text_content()
    return text if len(WORD.findall(text)) >= 20 else None


def scores(extracted: str, reference: str) -> tuple[float, float, float]:
    got, want = Counter(WORD.findall(extracted.lower())), Counter(WORD.findall(reference.lower()))
    common = sum((got & want).values())
    precision = common / max(1, sum(got.values()))
    recall = common / max(1, sum(want.values()))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def extractors():
    """The extractors as corpusforge calls them (``corpusforge.pipeline.web.extractor``), plus trafilatura's
    faster and more precise settings and, as a floor, all visible text."""
    import trafilatura
    from resiliparse.extract.html2text import extract_plain_text

    from corpusforge.pipeline.web import decode_html, extractor

    resiliparse, trafilatura_default = extractor("resiliparse"), extractor("trafilatura")
    return {
        "resiliparse main_content": lambda b: resiliparse(b, None),
        "trafilatura": lambda b: trafilatura_default(b, None),
        "trafilatura fast": lambda b: trafilatura.extract(decode_html(b, None), include_comments=False, fast=True) or "",
        "trafilatura favor_precision": lambda b: trafilatura.extract(decode_html(b, None), include_comments=False,
                                                                     favor_precision=True) or "",
        "all visible text (no extraction)": lambda b: extract_plain_text(decode_html(b, None), main_content=False),
    }


def quality(items, fns) -> dict[str, dict[str, dict[str, float]]]:
    table: dict[str, dict[str, dict[str, float]]] = {}
    refs = [reference_text(data) for _, _, data in items]
    for name, fn in fns.items():
        per_source: dict[str, list[tuple[float, float, float]]] = {}
        for (source, _, data), ref in zip(items, refs):
            per_source.setdefault(source, []).append(scores(fn(data), ref))
            per_source.setdefault("all", []).append(per_source[source][-1])
        table[name] = {src: {k: round(statistics.mean(s[i] for s in rows), 3) for i, k in enumerate(("P", "R", "F1"))}
                       for src, rows in per_source.items()}
    return table


def write_warc(items, path: str, gzip: bool) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=gzip)
        for i, (source, name, data) in enumerate(items):
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                                  ("Content-Length", str(len(data)))], protocol="HTTP/1.1")
            record = writer.create_warc_record(f"https://{source}.example/{name}", "response",
                                               payload=io.BytesIO(data), http_headers=headers)
            writer.write_record(record)


def read_fastwarc(path: str) -> int:
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    n = 0
    with open(path, "rb") as f:
        for record in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
            n += len(record.reader.read())
    return n


def read_warcio(path: str) -> int:
    from warcio.archiveiterator import ArchiveIterator

    n = 0
    with open(path, "rb") as f:
        for record in ArchiveIterator(f):
            if record.rec_type == "response":
                n += len(record.content_stream().read())
    return n


def best_of(repeat: int, fn, *args) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=150, help="pages per source")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default="")
    args = parser.parse_args()

    items = pages(args.pages)
    total_mb = sum(len(d) for _, _, d in items) / 1e6
    print(f"{len(items)} pages ({total_mb:.1f} MB of HTML): "
          + ", ".join(f"{s} {sum(1 for i in items if i[0] == s)}" for s in SOURCES))
    fns = extractors()
    table = quality(items, fns)
    print("\nextraction quality against the main element's text (word precision / recall / F1, mean over pages)")
    print(f"{'extractor':34s} " + " ".join(f"{s:>22s}" for s in [*SOURCES, "all"]))
    for name, row in table.items():
        print(f"{name:34s} " + " ".join(f"{row[s]['P']:.3f}/{row[s]['R']:.3f}/{row[s]['F1']:.3f}".rjust(22)
                                        for s in [*SOURCES, "all"]))

    speed = {}
    for name in ("resiliparse main_content", "trafilatura", "trafilatura fast"):
        secs = best_of(args.repeat, lambda: [fns[name](d) for _, _, d in items])
        speed[name] = {"pages_per_s": round(len(items) / secs, 1), "mb_per_s": round(total_mb / secs, 2)}
    with tempfile.TemporaryDirectory() as tmp:
        for suffix, gz in ((".warc", False), (".warc.gz", True)):
            path = f"{tmp}/pages{suffix}"
            write_warc(items, path, gz)
            for name, fn in (("fastwarc", read_fastwarc), ("warcio", read_warcio)):
                secs = best_of(args.repeat, fn, path)
                speed[f"{name} {suffix}"] = {"records_per_s": round(len(items) / secs, 1),
                                             "mb_per_s": round(total_mb / secs, 1)}
    print("\nspeed (one core, best of %d)" % args.repeat)
    for name, row in speed.items():
        print(f"  {name:28s} " + ", ".join(f"{v:,} {k.replace('_per_s', '/s')}" for k, v in row.items()))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"quality": table, "speed": speed}, indent=2))


if __name__ == "__main__":
    main()
