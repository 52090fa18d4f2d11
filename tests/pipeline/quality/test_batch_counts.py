"""``batch_counts.count_batch`` stores in each view what the view computes from its own tokens, on the sample corpus
and on drawn hostile text (sentence marks split across chunks, stop and lorem words in any case, numbers, scripts
without spaces, empty lines), whatever the batch and whatever happens to the chunk table meanwhile."""
from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpusforge.pipeline.quality import batch_counts, text
from corpusforge.pipeline.quality.config import GopherConfig, QualityConfig
from corpusforge.pipeline.quality.measure import words_in
from corpusforge.pipeline.quality.text import (
    ALL_STOP_WORDS, LETTER_RE, LOREM_WORDS, SENTENCE_START_RE, STOP_WORDS, TextView, base_language, count_sentences,
    stop_words_for,
)
from tests.pipeline.quality import reference
from tests.pipeline.quality.test_decide import CONFIGS, CORPUS, LANGS, PIECES

_draws = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Pieces whose marks and words meet across chunk and line boundaries
SENTENCE_PIECES = PIECES + [".", "!", "?", "。", "x.", ".y", "a.B", "(", ")", "«", "—", "...", "Lorem", "IPSUM", "dolor",
                            "The", "THE", "der", "und", "zz", "ZZ", "123", "4567", "abc", "Abc", "ABC", "中文", "ไทย",
                            "İstanbul", "ǅ", "\n\n", "\u3000", "\x1c", " . ", " ! x", "can't", "dont", "e.g.", ":)",
                            "x@y", "a.b@c", "@@", "www.", "WWW.x.com", "https://", "ftp://a.b", "(http://a.b/c)", "<a@b.c>",
                            "h", "w."]


def _alone(view: TextView, lang: str | None, cfg: QualityConfig) -> dict:
    """What each count is by its definition on the view's own tokens."""
    counts = Counter(view.lower_words)
    stop = STOP_WORDS.get(base_language(lang) or "", ALL_STOP_WORDS)
    found = {
        "n_tokens": len(view.words), "n_content": len(view.content_words),
        "content_chars": sum(map(len, view.content_words)),
        "n_letter_words": sum(1 for w in view.content_words if any(map(str.isalpha, w))),
        "n_sentences": sum(count_sentences(line) for line in view.line_words),
        "url_tokens": reference.url_token_count(view) if view.content_words else 0,
        "lorem": sum(counts[w] for w in LOREM_WORDS),
        "top_word": max((c for w, c in counts.items() if len(w) > 2 and w not in stop and not w.isdigit()), default=0),
        "chars": _chars_alone(view.text),
    }
    gopher_stop = stop_words_for(base_language(lang), cfg.gopher)
    if cfg.gopher.enabled and cfg.gopher.stop_words_per_language and gopher_stop is not None:
        present = words_in(gopher_stop, counts)
        found |= {"stop_words": len(present), "stop_count": sum(counts[w] for w in present)}
    return found


def _chars_alone(t: str) -> tuple[int, int, int, int]:
    """``measure_junk``'s character counts by their definitions: non-space characters, LETTER_RE's letters,
    SENTENCE_START_RE's matches (the regex as written, look-behinds first) and those with a lower-case letter."""
    starts = SENTENCE_START_RE.findall(t)
    return len("".join(t.split())), len(LETTER_RE.findall(t)), len(starts), sum(1 for c in starts if c.islower())


def _counted(view: TextView, cfg: QualityConfig) -> dict:
    d, counts = view.__dict__, view.__dict__["word_counts"]
    found = {key: d[key] for key in ("n_tokens", "n_content", "content_chars", "n_letter_words", "n_sentences")}
    found["url_tokens"] = d["url_tokens"] if d["n_content"] else 0  # (measure_junk counts none without words)
    found |= {"lorem": counts.lorem, "top_word": counts.top_word, "chars": tuple(d["char_counts"])}
    if counts.gopher_stop is not None:
        found |= {"stop_words": counts.stop_words, "stop_count": counts.stop_count}
    return found


def _same(texts: list[str], langs: list[str | None], cfg: QualityConfig, all_counted: bool = True) -> None:
    views = [TextView(t) for t in texts]
    batch_counts.count_batch(views, langs, cfg)
    for t, v, lang in zip(texts, views, langs):
        if v.no_space_script or not all_counted and "word_counts" not in v.__dict__:
            assert "word_counts" not in v.__dict__, t  # left to the per-document path
            continue
        assert _counted(v, cfg) == _alone(TextView(t), lang, cfg), t


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_sample_counted_as_a_batch_is_counted_as_alone(name):
    langs = [LANGS[i % len(LANGS)] for i in range(len(CORPUS))]
    for s in range(0, len(CORPUS), 64):
        _same(CORPUS[s:s + 64], langs[s:s + 64], CONFIGS[name])


@_draws
@given(texts=st.lists(st.lists(st.sampled_from(SENTENCE_PIECES), max_size=30).map(" ".join), min_size=1, max_size=10),
       langs=st.lists(st.sampled_from(LANGS + ["xx"]), min_size=10, max_size=10), name=st.sampled_from(sorted(CONFIGS)))
def test_drawn_pieces_counted_as_a_batch_are_counted_as_alone(texts, langs, name):
    _same(texts, langs[:len(texts)], CONFIGS[name])


@_draws
@given(texts=st.lists(st.lists(st.sampled_from(SENTENCE_PIECES), max_size=30).map("".join), min_size=1, max_size=10))
def test_glued_pieces_counted_as_a_batch_are_counted_as_alone(texts):
    _same(texts, ["en"] * len(texts), QualityConfig(gopher=GopherConfig(stop_words={"en": ["Abc", "zz"]})))


@_draws
@given(texts=st.lists(st.text(max_size=200), min_size=1, max_size=8))
def test_drawn_unicode_counted_as_a_batch_is_counted_as_alone(texts):
    _same(texts, [None] * len(texts), QualityConfig())


# What SENTENCE_START_RE's look-behinds and halves, LETTER_RE and str.isspace tell apart, to glue into texts: every
# whitespace character, abbreviations that end no sentence, one letter and a mark (no end after a space, one at the
# text's start), the quotes before a letter, letters of every case and none (titlecase, combining marks, digits that are
# letters to the regex: superscripts, fractions, Roman numerals; decimal digits of other scripts, which are not), marks
# that end no sentence here (。 …).
WHITESPACE = [c for c in map(chr, range(0x110000)) if c.isspace()]
JUNK_PIECES = SENTENCE_PIECES + WHITESPACE + [
    "Mr.", "Mrs.", "Ms!", "Dr?", "St.", "vs.", "cf.", "ca.", "al.", "etc.", "z.B.", "d.h.", "xMr.", "_Mr.", "1etc.",
    "Aetc.", "A.", "b!", "é?", ".a.", " a.", "\ta?", "1.", "_.", "x..", "!", "?", "…", "。", '"', "'", "“", "‘", "«",
    "(", '"a', "'B", "«é", "(x", "((x", "\u0301", "e\u0301", "\u0301a", "ǅ", "ǆ", "ß", "İ", "ı", "²", "½", "Ⅻ", "ⅻ",
    "٣", "_", "a_", "\x00", "\ud800", "🙂", "𝐀", "𝐚", "\n", "\n\n", "\r\n", "",
]


def _hostile_text(rng, pieces: int) -> str:
    return "".join(rng.choice(JUNK_PIECES) for _ in range(pieces))


@_draws
@given(texts=st.lists(st.lists(st.sampled_from(JUNK_PIECES), max_size=40).map("".join), min_size=1, max_size=10))
def test_drawn_hostile_characters_counted_as_a_batch_are_counted_as_alone(texts):
    _same(texts, ["en"] * len(texts), QualityConfig())


def test_hostile_pages_and_a_megabyte_line_counted_as_a_batch_are_counted_as_alone():
    import random

    rng = random.Random(38)
    texts = [_hostile_text(rng, rng.randrange(400)) for _ in range(40)]
    line = "".join(rng.choice([p for p in JUNK_PIECES if "\n" not in p and p not in WHITESPACE[1:]])
                   for _ in range(150_000))
    texts += [line[:1 << 20], "A. b " + line[:1 << 20], "Mr. " * 300_000, "x." * 500_000, "\n" * 10]
    _same(texts, ["en"] * len(texts), QualityConfig())


def test_top_ngrams_of_a_batch_are_each_documents_most_common():
    texts = [t for t in CORPUS[:64] if not TextView(t).no_space_script] + ["a b a b a b", "x", ""]
    views = [TextView(t) for t in texts]
    grams = batch_counts.count_batch(views, ["en"] * len(views), QualityConfig())
    for t, found in zip(texts, grams):
        ws = TextView(t).content_words
        expected = {}
        for n in (2, 3, 4):
            if len(ws) >= n:
                gram, count = Counter(zip(*(ws[i:] for i in range(n)))).most_common(1)[0]
                expected[n] = (count, sum(map(len, gram)) + n - 1)
        assert found == (expected if t else None), t


def test_a_new_table_generation_meanwhile_leaves_the_batch_to_each_document(monkeypatch):
    # a table this small starts again while the batch is split: no document may be counted with stale numbers
    monkeypatch.setattr(text.ChunkTable, "LIMIT", 50)
    text._new_generation()
    texts = [" ".join(f"w{i}x{j}" for j in range(40)) + " the end." for i in range(10)]
    views = [TextView(t) for t in texts]
    batch_counts.count_batch(views, ["en"] * 10, QualityConfig())
    assert any("word_counts" not in v.__dict__ for v in views)
    _same(texts, ["en"] * 10, QualityConfig(), all_counted=False)
    for t in texts:  # each view computes its own counts where the batch left it
        view = TextView(t)
        assert view.n_sentences == sum(count_sentences(line) for line in view.line_words)
    monkeypatch.undo()
    text._new_generation()


def test_threads_numbering_chunks_at_once_keep_the_table_in_step():
    texts = [[" ".join(f"t{k}w{i}{j}. x" for j in range(30)) for i in range(20)] for k in range(4)]
    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(_same, ts, ["en"] * len(ts), QualityConfig()) for ts in texts]:
            done.result()  # (raises what the thread raised)
    for ts in texts:  # and in the main thread, after: every number still points at its own chunk's counts
        _same(ts, ["en"] * len(ts), QualityConfig())


def test_no_characters_lower_case_is_or_holds_whitespace():
    # what text.hint_mask relies on: a text's lower case splits at whitespace where the text does
    assert not [c for c in map(chr, range(0x110000)) if not c.isspace() and any(map(str.isspace, c.lower()))]
    assert all(c.lower().isspace() for c in map(chr, range(0x110000)) if c.isspace())


@settings(max_examples=300, deadline=None)
@given(codes=st.lists(st.integers(0, 50), max_size=60) | st.lists(st.integers(0, (1 << 62) - 1), max_size=8))
def test_inverse_and_counts_are_numpys(codes):
    array = np.array(codes, np.int64)
    found, expected = text._inverse_and_counts(array), np.unique(array, return_inverse=True, return_counts=True)[1:]
    assert [a.tolist() for a in found] == [a.tolist() for a in expected]


# --------------------------------------------------------------------------------- a batch's chunk numbers
def test_arrow_splits_lines_and_chunks_where_str_does_at_every_code_point():
    # what text.batch_chunk_numbers relies on: pyarrow's utf8_split_whitespace splits where str.split does, and the
    # texts it splits at "\n" alone are those without another line break of str.splitlines
    import pyarrow as pa
    import pyarrow.compute as pc

    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    pieces = pc.utf8_split_whitespace(pa.array([f"a{c}b" for c in points])).to_pylist()
    assert [c for c, found in zip(points, pieces) if f"a{c}b".split() != found] == []
    other = pc.match_substring_regex(pa.array(points), text._OTHER_LINE_BREAKS).to_pylist()
    assert [c for c, odd in zip(points, other) if odd != (c != "\n" and len(f"a{c}b".splitlines()) > 1)] == []


def _rows(numbers: np.ndarray) -> list[list[int]]:
    """The table rows of ``numbers`` (without their words' place, which a chunk split again gets anew)."""
    return text.CHUNK_TABLE.chunks.read()[numbers][:, :text.START].tolist()


def _numbered_alone(t: str) -> tuple[list[list[int]], list[int]]:
    view, numbers = TextView(t), []
    text.fill_chunks(view, numbers)
    return _rows(np.array(numbers, np.int64)), view.line_sizes


def _same_numbers(texts: list[str]) -> None:
    views = [TextView(t) for t in texts]
    numbers, sizes, generations = text.batch_chunk_numbers(views)
    assert len(sizes) == len(texts)
    if set(generations) - {text.CHUNK_TABLE.generation}:  # the table started again meanwhile (tested above)
        return
    start = 0
    for t, v, size in zip(texts, views, sizes.tolist()):
        rows, line_sizes = _numbered_alone(t)
        assert (_rows(numbers[start:start + size]), v.line_sizes) == (rows, line_sizes), t
        start += size
    assert start == len(numbers)


# Whitespace and line breaks where they meet pieces: leading, trailing, doubled, the breaks that take the texts' own path
_SPACING = [" ", "  ", "\t", "\n", "\n\n", "\u3000", "\xa0", "\x1f", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85",
            "\u2028", "\u2029", "\ud800"]


@_draws
@given(texts=st.lists(st.lists(st.sampled_from(SENTENCE_PIECES + _SPACING * 3), max_size=30).map("".join), max_size=10))
def test_a_batch_numbers_each_texts_chunks_as_the_text_alone(texts):
    _same_numbers(texts)


@_draws
@given(texts=st.lists(st.text(max_size=120), max_size=8))
def test_a_batch_numbers_drawn_unicode_as_the_text_alone(texts):
    _same_numbers(texts)


def test_a_batch_numbers_the_sample_as_each_text_alone():
    _same_numbers(CORPUS[:200] + ["", "\n", "a\n", "\n\na  b \n", " ", "x\r\ny", "long" * 40 + " " + "long" * 40])


def _followed_by_bytes(texts: list[str], after: bytes):
    """``texts`` as a pyarrow large_string array whose data buffer goes on past the last string with ``after``."""
    import pyarrow as pa

    data = "".join(texts).encode()
    offsets = np.cumsum([0] + [len(t.encode()) for t in texts]).astype(np.int64)
    return pa.LargeStringArray.from_buffers(len(texts), pa.py_buffer(offsets.tobytes()), pa.py_buffer(data + after))


@pytest.mark.parametrize("after", [b"", b"x", b"\x80", b"\xc4", b"\xff\xfe"])
def test_a_line_ending_in_whitespace_is_split_as_str_splits_it_whatever_follows_it_in_memory(after):
    """pyarrow's utf8_split_whitespace left a line's trailing whitespace on its last chunk where the bytes after the
    array's last string were not UTF-8 (memory left by earlier work: the same batch counted otherwise in a process that
    had done more), so a chunk "a.b@c " was numbered and counted one character longer than alone."""
    lines = ["x y", "Home İ _x_ Lorem Lorem a.b@c ", "a b\u3000", "é\t \x1c"]
    for n in range(1, len(lines) + 1):
        pieces = text.line_pieces(_followed_by_bytes(lines[:n], after)).to_pylist()
        assert [[p for p in line if p] for line in pieces] == [line.split() for line in lines[:n]]


def test_arrow_trims_at_line_ends_exactly_what_str_calls_whitespace():
    import pyarrow as pa
    import pyarrow.compute as pc

    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    trimmed = pc.utf8_rtrim_whitespace(pa.array(["a" + c for c in points], pa.large_string())).to_pylist()
    assert [c for c, t in zip(points, trimmed) if (t == "a") != c.isspace()] == []


@_draws
@given(lines=st.lists(st.lists(st.sampled_from(SENTENCE_PIECES + [" ", "\t", "\u3000", "\xa0", "\x1c", "\u2028"]),
                               max_size=12).map("".join).map(lambda s: s.replace("\n", "")), min_size=1, max_size=6),
       after=st.binary(max_size=4))
def test_drawn_lines_are_split_as_str_splits_them_whatever_follows_them_in_memory(lines, after):
    pieces = text.line_pieces(_followed_by_bytes(lines, after)).to_pylist()
    assert [[p for p in line if p] for line in pieces] == [line.split() for line in lines]
