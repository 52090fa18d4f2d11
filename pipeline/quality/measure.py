"""The *measure* half of the heuristic rules: the values each rule family decides on, computed once per document.

Each ``measure_<family>`` reads the shared ``TextView`` (one tokenisation, one line split) and returns a flat dict
of plain values (ints, floats, bools, a string) with the same keys for every document of a config, so the values
can be stored as typed columns and re-decided later (``decide.py``, ``corpusforge rethreshold``). A value is
``None`` where it is undefined (a ratio over zero words) or, for ``length.n_words`` only, not measured: it costs
a second tokenisation of the text before the C4 edits, so it is measured only when a word limit is set.

The measures compute exactly the numbers the reference rules in ``rules.py`` compare (same expressions, same
tie-breaks), so ``decide`` gives the same reason; ``tests/pipeline/quality/test_decide.py`` checks it.
"""
from __future__ import annotations

import functools
import re
from itertools import compress, repeat
from operator import contains
from typing import Any

from corpusforge.pipeline.quality.config import (
    FineWebConfig, GopherConfig, LengthConfig, RepetitionConfig, ngram_table,
)
from corpusforge.pipeline.quality.text import (
    ALL_STOP_WORDS, BOILERPLATE_PHRASE_WIDTH, BOILERPLATE_PHRASES_BY_HINT, BOILERPLATE_RE, CASE_FOLDS_TO_ASCII, CLOSERS,
    FINEWEB_STOP, GOPHER_STOP_WORDS, LETTER_RE, LOREM_WORDS, MENU_LINE_RE, MENU_SEPARATORS, MOJIBAKE_RE,
    NAV_LINE_RE, SENTENCE_START_FAST_RE, STOP_WORDS, TextView, base_language,
    count_duplicates, greedy_duplicated_chars, is_url_token, mean_word_length, most_common_ngram, ngram_chars, repeated_ngrams,
    split_line_runs, split_paragraphs, stop_words_for, top_ngrams, unpunctuated_ends,
)
from corpusforge.pipeline.words import text_width

Values = dict[str, Any]


# ------------------------------------------------------------------------------------------------ length
def measure_length(text: str, cfg: LengthConfig, view: TextView | None = None) -> Values:
    """Characters of the text before the C4 edits; its words only when a word limit needs them."""
    needs_words = cfg.min_words is not None or cfg.max_words is not None
    n_words = (view or TextView(text)).n_words if needs_words else None
    return {"n_chars": len(text), "n_words": n_words}


# -------------------------------------------------------------------------------------------------- junk
def measure_junk(view: TextView, lang: str | None = None) -> Values:
    t = view.text
    if not t.strip():
        return dict.fromkeys(JUNK_FIELDS) | {"empty": True}
    chars = view.__dict__.get("char_counts")  # counted with its batch (batch_counts.py)
    if chars is None:
        chars = char_counts(t)
    non_space, letters, n_starts, n_lower = chars
    bad = 0
    if not t.isascii():
        # The non-ASCII characters in order: the text's UTF-8 without its ASCII bytes (every byte of a longer
        # sequence is >= 0x80), deleted in C; a regex findall walked every character (~70 us a page).
        others = t.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")
        if not _MOJIBAKE_FIRST.isdisjoint(others):  # every pattern starts with one of these (non-ASCII) characters
            bad = sum(len(m) for m in MOJIBAKE_RE.findall(t))
    n = view.n_content  # = len(lower_words), which no measure needs as a list
    stop = STOP_WORDS.get(base_language(lang) or "", ALL_STOP_WORDS)
    counted = view.__dict__.get("word_counts")  # counted with its batch (batch_counts.py)
    if counted is not None and counted.junk_stop is stop:
        lorem_words, top_word_count = counted.lorem, counted.top_word
    else:
        counts = view.lower_word_counts  # per distinct word: the loops below visit each word once, not each token
        lorem_words = sum(map(counts.__getitem__, words_in(LOREM_WORDS, counts)))
        # The most frequent word that is not a stop word, a number or short: the first such in descending count order.
        top_word_count = next((c for w, c in counts.most_common() if len(w) > 2 and w not in stop and not w.isdigit()), 0)
    lorem = "lorem ipsum" in view.lower_text or bool(n and lorem_words / n >= 0.15)
    boiler = boilerplate_chars(view)
    urls = view.__dict__.get("url_tokens")  # counted with its batch (batch_counts.py)
    if urls is None or not n:
        urls = url_tokens(view) if n and ("@" in t or "http" in t or "www." in t) else 0
    n_words = view.n_words  # n but where characters of a script without spaces are words (pipeline/words.py)
    return {
        "empty": False,
        "mojibake_fraction": bad / len(t),
        "non_letter_fraction": 1.0 - letters / non_space if non_space else 0.0,
        "lorem_ipsum": lorem,
        "boilerplate_fraction": boiler / (len(t) + 1),
        "url_fraction": urls / n_words if n else 0.0,
        "sentence_starts": n_starts,
        "lowercase_start_fraction": n_lower / n_starts if n_starts else 0.0,
        "n_words": n_words,
        "top_word_count": top_word_count,
    }


def char_counts(t: str) -> tuple[int, int, int, int]:
    """``batch_counts.CharCounts`` of one text: non-space characters, LETTER_RE's letters, SENTENCE_START_FAST_RE's
    matches and those with a lower-case letter. Letters and non-space characters counted in C: the ASCII ones by
    deleting bytes (str.split's whitespace is the regex's \\s; in ASCII, LETTER_RE's [^\\W\\d_] is exactly the
    letters), the others (few, mostly) by the regex."""
    raw = t.encode("ascii", "ignore")
    non_space, letters = len(raw.translate(None, _ASCII_SPACES)), len(raw.translate(None, _ASCII_NON_LETTERS))
    if len(raw) < len(t):
        others = t.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")
        non_space += len("".join(others.split()))
        letters += len(LETTER_RE.findall(others))
    starts = SENTENCE_START_FAST_RE.findall(t)
    return non_space, letters, len(starts), sum(1 for c in starts if c.islower())


def url_tokens(view: TextView) -> int:
    """Tokens that are URLs or e-mail addresses (the junk rules' links), testing only the tokens of lines that hold
    "@", "://" or "www." (picked in C): a token that is a URL or an address holds one of them, and so does its
    line."""
    lines = view.splitlines
    everywhere = range(len(lines))
    candidates: set[int] = set()
    for hint in _URL_HINTS:
        if hint in view.text:
            candidates.update(compress(everywhere, map(contains, lines, repeat(hint))))
    return sum(map(is_url_token, view.tokens_of_lines(sorted(candidates))))


_URL_HINTS = ("@", "://", "www.")


def words_in(words: frozenset[str], counts: dict[str, int]) -> set[str]:
    """``words.intersection(counts)``, looking up each item of the smaller of the two in the other (intersection
    walks its argument, the document's distinct words, even when the word list is the smaller)."""
    return words.intersection(counts) if len(counts) <= len(words) else counts.keys() & words


_ASCII_NON_LETTERS = bytes(c for c in range(128) if not chr(c).isalpha())
_ASCII_SPACES = bytes(c for c in range(128) if chr(c).isspace())
_ASCII_BYTES = bytes(range(128))
_MOJIBAKE_FIRST = frozenset("ÃÂâÅÄÐÑØÙÚ\ufffd" + "".join(map(chr, range(0x80, 0xA0))))  # MOJIBAKE_RE's first characters


def boilerplate_chars(view: TextView) -> int:
    """Characters (+1 per line) in lines BOILERPLATE_RE finds something in, trying each of its parts only where it
    can match (see text.BOILERPLATE_PHRASE_HINTS): the whole regex tried at every position of every line was half the
    junk rules' time. The lines a part can match in are picked in C first, so the loop visits only those: a phrase
    needs a hint in the line, a navigation line holds at most 4 words ("back to top |"), a menu line a separator."""
    t = view.text
    lines = view.splitlines
    if not t.isascii() and any(map(t.__contains__, CASE_FOLDS_TO_ASCII)):  # (isdisjoint(t) hashed every character)
        return sum(len(line) + 1 for line in lines if BOILERPLATE_RE.search(line))
    everywhere = range(len(lines))
    # Which part each line is tried with: a line is tried with a part only where it is in that part's set.
    nav = set(compress(everywhere, map(_NAV_SIZES.__contains__, view.line_sizes)))
    phrase: set[int] = set()
    hints = view.phrase_hints
    if hints:
        lowered = list(map(str.lower, lines))
        for hint in hints:
            phrase.update(compress(everywhere, map(contains, lowered, repeat(hint))))
    menu: set[int] = set()
    for separator in MENU_SEPARATORS:
        if separator in t:
            menu.update(compress(everywhere, map(contains, lines, repeat(separator))))
    total = 0
    for i in nav | phrase | menu:
        line = lines[i]
        if ((i in phrase and has_phrase(line, lowered[i], hints))
                or (i in nav and _nav_first(line) and NAV_LINE_RE.match(line))
                or (i in menu and MENU_LINE_RE.match(line))):
            total += len(line) + 1
    return total


def has_phrase(line: str, lower: str, hints: list[str]) -> bool:
    """``BOILERPLATE_PHRASES_RE.search(line)``, searched only near the places ``lower`` (``line.lower()``, as long as
    ``line``: no CASE_FOLDS_TO_ASCII character) holds one of ``hints``, and there only for the alternatives that hold
    that hint (``BOILERPLATE_PHRASES_BY_HINT``): every match holds its alternative's hint (in lower case) and is at most
    BOILERPLATE_PHRASE_WIDTH characters long, so it lies within that many characters either side of the hint. The
    regex tried at every position of a whole line cost ~0.4 us a character (~280 us for a ~700-character paragraph
    that mentions "terms" or "share"); a hint's window is ~60, and all ~30 alternatives tried at each of its positions
    were still most of the junk rules' time (~80 us a page with a hint; one hint's are one to eleven). A hint's
    windows that overlap are searched as one span, so no character is searched twice for a hint. A span is searched
    with ``pos`` (the regex still sees the characters before it, for its \\b) and ``endpos`` one past the span: a match
    that ends before ``endpos`` saw only real characters; one that ends at it might have matched a \\b at the cut, and
    the whole line decides (rare)."""
    n, width = len(line), BOILERPLATE_PHRASE_WIDTH
    for hint in hints:
        search = BOILERPLATE_PHRASES_BY_HINT[hint].search
        start = end = -1
        i = lower.find(hint)
        while i >= 0:
            if i - width <= end:  # this place's window overlaps the span: widen it
                end = i + width + 1
            else:
                if end >= 0 and _found(search, line, start, min(n, end)):
                    return True
                start, end = max(0, i - width), i + width + 1
            i = lower.find(hint, i + 1)
        if end >= 0 and _found(search, line, start, min(n, end)):
            return True
    return False


def _found(search, line: str, start: int, end: int) -> bool:
    m = search(line, start, end)
    return m is not None and (m.end() < end or end == len(line) or search(line) is not None)


def _nav_first(line: str) -> bool:
    """Whether ``line`` can be a navigation line by its first character: one of its words' letters or a digit."""
    first = line.lstrip()[:1]
    return first in _NAV_FIRST or first.isdecimal()


_NAV_SIZES = range(1, 5)  # NAV_LINE's words and separator are 1 to 4 of str.split's chunks (its \s is str.isspace)


# The first letters of NAV_LINE's words (home, menu, search, login, register, contact, about, faq, next, previous,
# back to top, read more, cart, my account, comments), either case: the texts that reach the check hold none
# of the four characters that IGNORECASE also folds to ASCII letters.
_NAV_FIRST = frozenset("hmslrcafnpbHMSLRCAFNPB")


JUNK_FIELDS = ("empty", "mojibake_fraction", "non_letter_fraction", "lorem_ipsum", "boilerplate_fraction",
               "url_fraction", "sentence_starts", "lowercase_start_fraction", "n_words", "top_word_count")


# ------------------------------------------------------------------------------------------------ gopher
def measure_gopher(view: TextView, cfg: GopherConfig, lang: str | None = None) -> Values:
    t = view.text
    n_tokens, n_words = view.n_word_tokens, view.n_words  # words, as pipeline/words.py counts them
    base = base_language(lang)
    lines = view.splitlines or [""]
    pool_size = view.n_tokens if cfg.alpha_ratio_counts_punctuation else view.n_content  # a share of tokens
    values: Values = {
        "no_space": base in cfg.no_space_languages if base else False,
        "n_words": n_words,
        "n_tokens": n_tokens,
        "mean_word_length": mean_word_length(view),
        "hash_ratio": t.count("#") / n_tokens if n_tokens else None,
        "ellipsis_ratio": (t.count("...") + t.count("…")) / n_tokens if n_tokens else None,
        "n_lines": len(lines),
        "bullet_lines_fraction": sum(1 for s in lines if s.lstrip().startswith(("•", "-"))) / len(lines),
        # no line ends in an ellipsis where the text has none (most texts): no pass over the lines
        "ellipsis_lines_fraction": (sum(1 for s in lines if s.rstrip().endswith(("...", "…"))) / len(lines)
                                    if "..." in t or "…" in t else 0.0),
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
            counted = view.__dict__.get("word_counts")  # counted with its batch (batch_counts.py)
            if counted is not None and counted.gopher_stop is not None and (counted.gopher_stop is stop
                                                                            or counted.gopher_stop == stop):
                n_stop, stop_count = counted.stop_words, counted.stop_count
            else:
                counts = view.lower_word_counts
                present = words_in(stop, counts)
                n_stop, stop_count = len(present), sum(map(counts.__getitem__, present))
            values["n_stop_words"] = n_stop
            values["stop_word_fraction"] = stop_count / view.n_content if view.n_content else None
    else:  # the paper: Gopher's 8 English words, case-sensitive, for every document
        stop = GOPHER_STOP_WORDS | frozenset(cfg.stop_words.get("en", ()))
        values["n_stop_words"] = len(stop.intersection(view.words))
    return values


# -------------------------------------------------------------------------------------------- repetition
def measure_repetition(view: TextView, cfg: RepetitionConfig,
                       top_grams: dict[int, tuple[int, int]] | None = None) -> Values:
    """Duplicate line/paragraph fractions, and per configured n the top n-gram's and the duplicated n-grams'
    character fractions (keys ``top_<n>gram_char_frac``, ``top_<n>gram_count``, ``dup_<n>gram_char_frac``).
    ``top_grams``: the top n-grams' (count, characters) per n, counted for a whole batch (``repetition_batch``)."""
    t = view.text
    fields, tops, dups = _repetition_keys(ngram_table(tuple(cfg.top_ngram_char_frac.items())),
                                          ngram_table(tuple(cfg.dup_ngram_char_frac.items())))
    values: Values = dict.fromkeys(fields)
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
    values["n_content_words"] = view.n_words
    if top_grams is not None and not dups:  # counted with the batch: no token list needed (no script without spaces)
        n_tokens = view.n_content if cfg.ngram_words_only else view.n_tokens
        for n, count_key, frac_key in tops:
            if n_tokens >= n:
                count, chars = top_grams[n]
                values[count_key] = count
                values[frac_key] = chars * count / n_chars
        return values
    ws = view.content_words if cfg.ngram_words_only else view.words
    # An n-gram of n words: n tokens, more where a character of a script without spaces is a token (pipeline/words.py).
    length = {n: view.ngram_length(n, ws) for n in {n for n, _, _ in tops} | {n for n, _ in dups}}
    # once for both rules' n (the top n-grams' only when not counted for the batch)
    repeats = repeated_ngrams(ws, set(length.values()) if top_grams is None else {length[n] for n, _ in dups})
    for n, count_key, frac_key in tops:
        k = length[n]
        if len(ws) >= k:
            if top_grams is not None:
                count, chars = top_grams[n]
            else:
                gram, count = most_common_ngram(ws, k, *repeats[k])  # positions, grams, counts
                chars = ngram_chars(gram) if k != n else sum(map(len, gram)) + n - 1
            values[count_key] = count
            values[frac_key] = chars * count / n_chars
    for n, key in dups:
        k = length[n]
        values[key] = greedy_duplicated_chars(k, repeats[k].positions, repeats[k].grams) / n_chars
    return values


def repetition_batch(views: list[TextView | None], cfg: RepetitionConfig) -> list[dict[int, tuple[int, int]] | None]:
    """``measure_repetition``'s ``top_grams`` for each of ``views`` (None: a view left out), counted for all at once
    (``top_ngrams``); None for a text with characters of a script without spaces, whose n-grams are longer than n
    tokens, and for every view when duplicated n-grams are measured too (they need the repeated n-grams per text)."""
    tops = ngram_table(tuple(cfg.top_ngram_char_frac.items()))
    if not tops or ngram_table(tuple(cfg.dup_ngram_char_frac.items())):
        return [None] * len(views)
    counted = [i for i, v in enumerate(views) if v is not None and v.text and not v.no_space_script]
    words = [views[i].content_words if cfg.ngram_words_only else views[i].words for i in counted]
    found: list[dict[int, tuple[int, int]] | None] = [None] * len(views)
    for i, grams in zip(counted, top_ngrams(words, [n for n, _ in tops])):
        found[i] = grams
    return found


@functools.lru_cache(maxsize=64)
def _repetition_keys(top: tuple[tuple[int, float], ...], dup: tuple[tuple[int, float], ...]):
    """The repetition family's value names, and per n its keys: (n, count key, fraction key) for the top n-gram,
    (n, key) for the duplicated n-grams; remembered per config (built per document, they cost more than the
    values they name in short documents)."""
    tops = tuple((n, f"top_{n}gram_count", f"top_{n}gram_char_frac") for n, _ in top)
    dups = tuple((n, f"dup_{n}gram_char_frac") for n, _ in dup)
    fields = ("empty", "dup_para_frac", "dup_para_char_frac", "dup_line_frac", "dup_line_char_frac", "n_content_words",
              *(key for _, count, frac in tops for key in (frac, count)), *(key for _, key in dups))
    return fields, tops, dups


def repetition_fields(cfg: RepetitionConfig) -> tuple[str, ...]:
    return _repetition_keys(ngram_table(tuple(cfg.top_ngram_char_frac.items())),
                            ngram_table(tuple(cfg.dup_ngram_char_frac.items())))[0]


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
    lines = list(filter(str.strip, t.split("\n")))
    if not lines:
        return dict.fromkeys(FINEWEB_FIELDS) | {"n_lines": 0}
    stops = FINEWEB_STOP + tuple(cfg.extra_line_end_chars)
    if cfg.ignore_trailing_closers:
        ended = sum(1 for line in lines if line.rstrip().rstrip(CLOSERS).endswith(stops))
    else:
        ended = sum(1 for line in lines if line.endswith(stops))
    ended += unpunctuated_ends(t, lines, stops, cfg.ignore_trailing_closers)  # Thai, Lao: a letter ends a sentence
    chars = len(t) - t.count("\n")
    n_words, newlines = view.n_word_tokens, t.count("\n")
    width = len if not view.wide_script else text_width  # characters of Han, kana, Thai, Hangul count more
    return {
        "n_lines": len(lines),
        "line_punct_ratio": ended / len(lines),
        "short_line_ratio": sum(1 for line in lines if width(line) <= cfg.short_line_length) / len(lines),
        "char_dup_ratio": count_duplicates(lines)[1] / chars if chars else 0.0,
        "newline_word_ratio": newlines / n_words if n_words else (float("inf") if newlines else 0.0),
    }


FINEWEB_FIELDS = ("n_lines", "line_punct_ratio", "short_line_ratio", "char_dup_ratio", "newline_word_ratio")


# ------------------------------------------------------------------------------------------------- types
_FIXED_TYPES: dict[str, dict[str, type]] = {
    "length": {"n_chars": int, "n_words": int},
    "blocklist": {"reason": str},
    "junk": {"empty": bool, "mojibake_fraction": float, "non_letter_fraction": float, "lorem_ipsum": bool,
             "boilerplate_fraction": float, "url_fraction": float, "sentence_starts": int,
             "lowercase_start_fraction": float, "n_words": int, "top_word_count": int},
    "gopher": {"no_space": bool, "n_words": int, "n_tokens": int, "mean_word_length": float, "hash_ratio": float,
               "ellipsis_ratio": float, "n_lines": int, "bullet_lines_fraction": float,
               "ellipsis_lines_fraction": float, "alpha_words_fraction": float, "stop_words_known": bool,
               "n_stop_words": int, "stop_word_fraction": float},
    "c4": {"empty": bool, "lorem_ipsum": bool, "curly_bracket": bool, "bad_words": bool, "n_sentences": int},
    "fineweb": {"n_lines": int, "line_punct_ratio": float, "short_line_ratio": float, "char_dup_ratio": float,
                "newline_word_ratio": float},
}


def value_types(cfg: RepetitionConfig) -> dict[str, dict[str, type]]:
    """Every family's value names and Python types, in the order stored (``decide.FAMILIES``); the repetition
    family's n-gram fields follow the configured n."""
    repetition = {"empty": bool, "dup_para_frac": float, "dup_para_char_frac": float, "dup_line_frac": float,
                  "dup_line_char_frac": float, "n_content_words": int}
    for name in repetition_fields(cfg)[len(repetition):]:
        repetition[name] = int if name.endswith("_count") else float
    types = dict(_FIXED_TYPES)
    types["repetition"] = repetition
    return {family: types[family] for family in ("length", "blocklist", "junk", "gopher", "repetition", "c4", "fineweb")}
