"""Third-party code that is super-linear on some input runs behind a guard (issue 35, class 9). Each hostile
input here took minutes before its guard (measured: 80k alternating combining marks, 48 s in
``unicodedata.normalize``; 30,000 nested ``<div>``s, Resiliparse main-content extraction past 300 s); each test
only has to finish (pytest-timeout) and give the guarded result."""
from __future__ import annotations

import time
import unicodedata

import pytest

from corpusforge.core.text_guards import MAX_NON_STARTERS, bounded_normalize, cap_combining_runs
from corpusforge.pipeline.dedup.exact import fold_text
from corpusforge.pipeline.normalize.config import NormalizeConfig
from corpusforge.pipeline.normalize.stage import normalize_text

MARKS = "\u0301\u0316"  # two combining classes (230, 220): canonical ordering moves every mark


def test_runs_of_combining_marks_are_cut_to_the_stream_safe_limit():
    text, runs = cap_combining_runs("a" + MARKS * 40 + " b\u0301 c" + "\u0300" * 31)
    assert runs == 2
    assert text == "a" + (MARKS * 40)[:MAX_NON_STARTERS] + " b\u0301 c" + "\u0300" * MAX_NON_STARTERS
    assert cap_combining_runs("plain ascii") == ("plain ascii", 0)
    ordinary = "Ṩ café ệ \u0915\u093f\u0902"  # real sequences are far below the limit: unchanged
    assert bounded_normalize("NFC", ordinary) == unicodedata.normalize("NFC", ordinary)


@pytest.mark.timeout(30)
def test_normalize_stage_is_linear_on_a_long_run_of_combining_marks():
    text = "Zalgo a" + MARKS * 50_000 + " end"
    out = normalize_text(text, NormalizeConfig())
    out = out[0] if isinstance(out, tuple) else out
    assert out.startswith("Zalgo ") and out.endswith(" end") and len(out) < 60


@pytest.mark.timeout(30)
def test_exact_dedup_fold_is_linear_on_a_long_run_of_combining_marks():
    assert len(fold_text("a" + MARKS * 50_000, "nfkc_casefold")) <= 1 + MAX_NON_STARTERS


web = pytest.importorskip("corpusforge.pipeline.web")


def _nested(depth: int) -> str:
    return "<html><body>" + "<div>x " * depth + "</div>" * depth + "</body></html>"


@pytest.mark.timeout(30)
def test_deeply_nested_page_is_extracted_in_linear_time():
    extract = web.extractor("resiliparse")
    start = time.perf_counter()
    text = extract(_nested(30_000).encode(), "utf-8")
    assert text.split() == ["x"] * 30_000
    assert time.perf_counter() - start < 10


def test_depth_scan_counts_as_a_parser_nests():
    assert not web.nested_deeper_than(_nested(web.MAX_HTML_DEPTH - 3), web.MAX_HTML_DEPTH)
    assert web.nested_deeper_than(_nested(web.MAX_HTML_DEPTH + 1), web.MAX_HTML_DEPTH)
    # implied end tags, void elements, self-closing tags, comments and scripts add no depth
    unit = ("<p>a<li>b<br><img src=x><div/><!-- <div><div> --><script>" + "<div>" * 500 + "</script>"
            + "<table><tr><td>1<td>2<tr><td>3</table><ul><li>x<li>y</ul><p>c")
    assert not web.nested_deeper_than("<html><body>" + unit * 300 + "</body></html>", 12)


def test_a_page_within_the_limit_keeps_main_content_extraction():
    page = ("<html><body><nav><a href=/>Home</a> <a href=/x>About</a></nav><article>"
            + "<p>The river runs through the old town and past the mill, where the miller kept his accounts.</p>" * 5
            + "</article><footer>Copyright 2024 all rights reserved</footer></body></html>").encode()
    text = web.extractor("resiliparse")(page, "utf-8")
    assert "The river runs" in text and "Copyright" not in text


@pytest.mark.timeout(30)
@pytest.mark.parametrize("tail", ["<" * 200_000, "<div" * 100_000, "<script>" * 100_000, "<!--" * 100_000])
def test_flat_text_fallback_and_depth_scan_are_linear_on_unclosed_tags(tail):
    page = "<html><body>" + "<div>" * (web.MAX_HTML_DEPTH + 5) + "deep text " + tail
    assert "deep text" in web.extractor("resiliparse")(page.encode(), "utf-8")
