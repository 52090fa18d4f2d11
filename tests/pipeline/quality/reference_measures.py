"""The measures as they were at 3228507 (before issue #20's fourth round), frozen: test_fast_measures.py holds the
current ``measure_*`` to these value for value. Only the helpers they call are imported (each has its own test).
Issue 40 added the script rule (corpusforge.pipeline.words): word counts, n-gram lengths and line widths where
characters of a script without spaces are tokens; a text without such characters gets the values it got before."""
# ruff: noqa
from __future__ import annotations

import re
from collections import Counter
from itertools import compress, repeat
from operator import contains
from typing import Any

from corpusforge.pipeline.quality.config import FineWebConfig, GopherConfig, RepetitionConfig
from corpusforge.pipeline.quality.measure import JUNK_FIELDS, FINEWEB_FIELDS, boilerplate_chars, repetition_fields
from corpusforge.pipeline.quality.text import (
    ALL_STOP_WORDS, CLOSERS, FINEWEB_STOP, GOPHER_STOP_WORDS, LETTER_RE, LOREM_WORDS, MOJIBAKE_RE,
    SENTENCE_START_FAST_RE, STOP_WORDS, URL_TOKEN_RE, TextView, base_language, count_duplicates,
    greedy_duplicated_chars, most_common_ngram, split_line_runs,
    split_paragraphs, stop_words_for, ngram_chars, mean_word_length, unpunctuated_ends,
)
from corpusforge.pipeline.words import has_no_space_script, ngram_length, text_width, word_count

Values = dict[str, Any]


# -------------------------------------------------------------------------------------------------- junk
def measure_junk(view: TextView, lang: str | None = None) -> Values:
    t = view.text
    if not t.strip():
        return dict.fromkeys(JUNK_FIELDS) | {"empty": True}
    # Letters and non-space characters counted in C: the ASCII ones by deleting bytes (str.split's whitespace is the
    # regex's \s; in ASCII, LETTER_RE's [^\W\d_] is exactly the letters), the others (few, mostly) by the regex.
    raw = t.encode("ascii", "ignore")
    non_space, letters = len(raw.translate(None, _ASCII_SPACES)), len(raw.translate(None, _ASCII_NON_LETTERS))
    bad = 0
    if len(raw) < len(t):
        others = "".join(_NON_ASCII_RE.findall(t))
        non_space += len("".join(others.split()))
        letters += len(LETTER_RE.findall(others))
        if not _MOJIBAKE_FIRST.isdisjoint(others):  # every pattern starts with one of these (non-ASCII) characters
            bad = sum(len(m) for m in MOJIBAKE_RE.findall(t))
    n = len(view.lower_words)
    counts = view.lower_word_counts  # per distinct word: the loops below visit each word once, not each token
    lorem = "lorem ipsum" in view.lower_text or bool(n and sum(counts[w] for w in LOREM_WORDS.intersection(counts)) / n >= 0.15)
    boiler = boilerplate_chars(view)
    urls = 0
    if n and ("@" in t or "http" in t or "www." in t):
        urls = sum(1 for w in view.words if ("@" in w and "." in w) or (w[:1] in "hw" and URL_TOKEN_RE.match(w)))
    starts = SENTENCE_START_FAST_RE.findall(t)
    stop = STOP_WORDS.get(base_language(lang) or "", ALL_STOP_WORDS)
    # The most frequent word that is not a stop word, a number or short: the first such in descending count order.
    top_word_count = next((c for w, c in counts.most_common() if len(w) > 2 and w not in stop and not w.isdigit()), 0)
    return {
        "empty": False,
        "mojibake_fraction": bad / len(t),
        "non_letter_fraction": 1.0 - letters / non_space if non_space else 0.0,
        "lorem_ipsum": lorem,
        "boilerplate_fraction": boiler / (len(t) + 1),
        "url_fraction": urls / word_count(view.content_words) if n else 0.0,
        "sentence_starts": len(starts),
        "lowercase_start_fraction": sum(1 for c in starts if c.islower()) / len(starts) if starts else 0.0,
        "n_words": word_count(view.content_words),
        "top_word_count": top_word_count,
    }


_ASCII_NON_LETTERS = bytes(c for c in range(128) if not chr(c).isalpha())
_ASCII_SPACES = bytes(c for c in range(128) if chr(c).isspace())
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]+")
_MOJIBAKE_FIRST = frozenset("ÃÂâÅÄÐÑØÙÚ\ufffd" + "".join(map(chr, range(0x80, 0xA0))))  # MOJIBAKE_RE's first characters




# ------------------------------------------------------------------------------------------------ gopher
def measure_gopher(view: TextView, cfg: GopherConfig, lang: str | None = None) -> Values:
    t = view.text
    content = view.content_words
    n_tokens, n_words = word_count(view.words), word_count(content)
    base = base_language(lang)
    lines = view.splitlines or [""]
    pool_size = view.n_tokens if cfg.alpha_ratio_counts_punctuation else len(content)
    values: Values = {
        "no_space": base in cfg.no_space_languages if base else False,
        "n_words": n_words,
        "n_tokens": n_tokens,
        "mean_word_length": mean_word_length(view),
        "hash_ratio": t.count("#") / n_tokens if n_tokens else None,
        "ellipsis_ratio": (t.count("...") + t.count("…")) / n_tokens if n_tokens else None,
        "n_lines": len(lines),
        "bullet_lines_fraction": sum(1 for s in lines if s.lstrip().startswith(("•", "-"))) / len(lines),
        "ellipsis_lines_fraction": sum(1 for s in lines if s.rstrip().endswith(("...", "…"))) / len(lines),
        "alpha_words_fraction": view.n_letter_words / pool_size if pool_size else None,  # letters: in word tokens
        "stop_words_known": True,
        "n_stop_words": 0,
        "stop_word_fraction": None,
    }
    if cfg.stop_words_per_language:
        stop = stop_words_for(base, cfg)
        if stop is None:
            values["stop_words_known"] = False
        else:
            counts = view.lower_word_counts
            present = stop.intersection(counts)
            values["n_stop_words"] = len(present)
            values["stop_word_fraction"] = sum(counts[w] for w in present) / len(view.lower_words) if counts else None
    else:  # the paper: Gopher's 8 English words, case-sensitive, for every document
        stop = GOPHER_STOP_WORDS | frozenset(cfg.stop_words.get("en", ()))
        values["n_stop_words"] = len(stop.intersection(view.words))
    return values


# -------------------------------------------------------------------------------------------- repetition
def measure_repetition(view: TextView, cfg: RepetitionConfig) -> Values:
    """Duplicate line/paragraph fractions, and per configured n the top n-gram's and the duplicated n-grams'
    character fractions (keys ``top_<n>gram_char_frac``, ``top_<n>gram_count``, ``dup_<n>gram_char_frac``)."""
    t = view.text
    top_ns, dup_ns = [n for n, _ in cfg.top_ngrams()], [n for n, _ in cfg.dup_ngrams()]
    values: Values = dict.fromkeys(repetition_fields(cfg))
    values["empty"] = not t
    if not t:
        return values
    n_chars = len(t)
    paragraphs = split_paragraphs(t.strip())
    dup, dup_chars = count_duplicates(paragraphs)
    values["dup_para_frac"], values["dup_para_char_frac"] = dup / len(paragraphs), dup_chars / n_chars
    lines = split_line_runs(t)
    dup, dup_chars = count_duplicates(lines)
    values["dup_line_frac"], values["dup_line_char_frac"] = dup / len(lines), dup_chars / n_chars
    ws = view.content_words if cfg.ngram_words_only else view.words
    values["n_content_words"] = word_count(view.content_words)
    length = {n: ngram_length(n, ws, word_count(ws)) if has_no_space_script(t) else n for n in top_ns + dup_ns}
    repeats = repeated_ngrams(ws, set(length.values()))  # once for both rules' n
    for n in top_ns:
        k = length[n]
        if len(ws) >= k:
            gram, count = most_common_ngram(ws, k, *repeats[k])
            values[f"top_{n}gram_count"] = count
            values[f"top_{n}gram_char_frac"] = (ngram_chars(gram) if k != n else sum(map(len, gram)) + n - 1) * count / n_chars
    for n in dup_ns:
        values[f"dup_{n}gram_char_frac"] = greedy_duplicated_chars(length[n], *repeats[length[n]]) / n_chars
    return values


# ---------------------------------------------------------------------------------------------------- C4
def measure_c4(view: TextView, bad_words: re.Pattern | None = None) -> Values:
    """C4's page values on the text after its line edits."""
    t = view.text
    lower = view.lower_text
    return {
        "empty": not t.strip(),
        "lorem_ipsum": "lorem ipsum" in lower,
        "curly_bracket": "{" in t,
        "bad_words": bool(bad_words.search(lower)) if bad_words is not None else None,
        "n_sentences": view.n_sentences,
    }


# ----------------------------------------------------------------------------------------------- FineWeb
def measure_fineweb(view: TextView, cfg: FineWebConfig) -> Values:
    t = view.text
    lines = [line for line in t.split("\n") if line.strip()]
    if not lines:
        return dict.fromkeys(FINEWEB_FIELDS) | {"n_lines": 0}
    stops = FINEWEB_STOP + tuple(cfg.extra_line_end_chars)
    if cfg.ignore_trailing_closers:
        ended = sum(1 for line in lines if line.rstrip().rstrip(CLOSERS).endswith(stops))
    else:
        ended = sum(1 for line in lines if line.endswith(stops))
    ended += unpunctuated_ends(t, lines, stops, cfg.ignore_trailing_closers)  # Thai, Lao: a letter ends a sentence
    chars = len(t) - t.count("\n")
    n_words, newlines = word_count(view.words), t.count("\n")
    return {
        "n_lines": len(lines),
        "line_punct_ratio": ended / len(lines),
        "short_line_ratio": sum(1 for line in lines if text_width(line) <= cfg.short_line_length) / len(lines),
        "char_dup_ratio": count_duplicates(lines)[1] / chars if chars else 0.0,
        "newline_word_ratio": newlines / n_words if n_words else (float("inf") if newlines else 0.0),
    }


def repeated_ngrams(ws: list[str], ns: set[int]) -> dict[int, tuple[list[int], list[tuple[str, ...]]]]:
    """For each n of ``ns``: the start positions of the word n-grams of ``ws`` that occur more than once, ascending,
    and those n-grams. Bigrams are counted at every position in C (most words of prose repeat, so few are spared);
    past that an n-gram repeats only where the (n-1)-grams at its start and one word later both repeat, so each n
    builds n-grams only at those positions (in prose, few past n = 2) instead of at every word."""
    found: dict[int, tuple[list[int], list[tuple[str, ...]]]] = {}
    if 1 in ns:
        counts = Counter(ws)
        positions = list(compress(range(len(ws)), map((1).__lt__, map(counts.__getitem__, ws))))  # count > 1
        found[1] = (positions, [(ws[p],) for p in positions])
    if max(ns, default=0) < 2:
        return found
    bigrams = list(zip(ws, ws[1:]))
    bigram_counts = Counter(bigrams)
    repeats = list(map((1).__lt__, map(bigram_counts.__getitem__, bigrams)))
    positions, grams = list(compress(range(len(bigrams)), repeats)), list(compress(bigrams, repeats))
    if 2 in ns:
        found[2] = (positions, grams)
    for n in range(3, max(ns) + 1):
        if positions:  # without a repeated n-gram there is no repeated longer one
            starts = set(positions)
            candidates = [p for p in positions if p + 1 in starts]
            grams = [tuple(ws[p:p + n]) for p in candidates]
            counts = Counter(grams)
            kept = [(p, g) for p, g in zip(candidates, grams) if counts[g] > 1]
            positions = [p for p, _ in kept]
        else:
            kept = []
        if n in ns:
            found[n] = (positions, [g for _, g in kept])
    return found
