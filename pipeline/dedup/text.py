"""Text as deduplication sees it: normalised words, shingles, and the rank that picks a survivor.

Normalisation for hashing follows datatrove's defaults (lower case, punctuation removed, digits as ``0``,
whitespace collapsed) without its diacritics step. Pure functions, no Beam.
"""
from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from corpusforge.pipeline.words import count_spaced, has_no_space_script, spaced, spaced_parts

_WORD = re.compile(r"[^\W_]+")  # runs of letters and digits; punctuation and underscores separate words
_DIGIT = re.compile(r"\d")

# The same rule for ASCII bytes, as translation tables: every byte that is not [a-z0-9] becomes a space
# (bytes >= 0x80 are kept: they belong to non-ASCII characters, which the regular expression handles).
_ALNUM = b"abcdefghijklmnopqrstuvwxyz0123456789"
_KEEP_DIGITS = bytes(c if c in _ALNUM or c >= 0x80 else 0x20 for c in range(256))
_ZERO_DIGITS = _KEEP_DIGITS.translate(bytes.maketrans(b"0123456789", b"0000000000"))
# Marks the bytes of non-ASCII characters (0x01) among the rest (0x00), for ``bytes.find``.
_HIGH_MARKS = bytes(int(c >= 0x80) for c in range(256))
# A space-free run holding a non-ASCII byte, matched only from the start of a run and without
# backtracking, so that long runs cost linear time (``normalized_bytes_reference``).
_NON_ASCII_TOKEN = re.compile(rb"(?<![^ ])[^ \x80-\xff]*+[\x80-\xff][^ ]*+")


def words_reference(text: str, normalize_numbers: bool = True) -> list[str]:
    """The definition of the normalised words of ``text``: lower case, split at anything that is not a
    letter or digit, digits replaced by ``0`` unless ``normalize_numbers`` is false. (``normalized_bytes``
    is the fast implementation used everywhere; the tests hold the two equal.)"""
    text = text.lower()
    if normalize_numbers:
        text = _DIGIT.sub("0", text)
    return _WORD.findall(text)


def _fix_token(normalize_numbers: bool):
    def fix(token: bytes) -> bytes:
        return " ".join(words_reference(token.decode("utf-8", "surrogatepass"), normalize_numbers)).encode("utf-8")
    return fix


_FIX = {True: _fix_token(True), False: _fix_token(False)}


def normalized_bytes_reference(text: str, normalize_numbers: bool = True) -> bytes:
    """``normalized_bytes`` as it was, byte for byte: the space-free runs that hold a non-ASCII byte found by
    one regular expression (``_NON_ASCII_TOKEN``), which tries every byte of the text (~50 ns a byte)."""
    low = text.lower()
    data = low.encode("utf-8", "surrogatepass").translate(_ZERO_DIGITS if normalize_numbers else _KEEP_DIGITS)
    if low.isascii():
        return data
    fix = _FIX[normalize_numbers]
    return _NON_ASCII_TOKEN.sub(lambda match: fix(match.group()), data)


# The whole-text path of ``normalized_bytes``: a run of non-ASCII characters that are no letter or digit (they end
# words as punctuation does) becomes one lone surrogate, a marker that no text keeps (lone surrogates are such
# characters themselves); digits of other scripts (``\d``, Unicode's Nd) become ``0``.
_NON_ASCII_SEPARATORS = re.compile(r"[^\w\x00-\x7f]++")
_OTHER_DIGITS = re.compile(r"[^\D\x00-\x7f]")
_MARK = "\udfff"
_MARK_BYTES = _MARK.encode("utf-8", "surrogatepass")
_MARK_AFTER_SPACE, _MARK_BEFORE_SPACE = b" " + _MARK_BYTES, _MARK_BYTES + b" "
_WHOLE_TEXT = 50  # the whole-text path where UTF-8 is 1/50 longer than the text (0: never; bench/dedup_text_cost.py)


def normalized_bytes(text: str, normalize_numbers: bool = True) -> bytes:
    """The normalised words of ``text`` as UTF-8, separated by one or more spaces (a lone surrogate, which is
    no letter or digit, separates words like punctuation does).

    ASCII is mapped with one ``bytes.translate``; only space-free runs that hold non-ASCII characters go
    through the regular expression of ``words_reference``, so mostly-ASCII text stays fast. Those runs are
    found with ``bytes.find`` (a non-ASCII byte, then the spaces around it), not by a regular expression
    that tries every byte: web text has a few curly quotes or dashes in many documents, and that scan was
    most of the cost of such a document. A text whose UTF-8 is 2 % or more longer than its characters (Greek,
    Cyrillic, CJK, most accented prose) takes ``_normalized_whole`` instead: str and bytes methods over the whole
    text, no Python call per word (~0.45x the time on bench/build.py's multilingual corpus). The bytes are
    ``normalized_bytes_reference``'s on either path (tests/pipeline/dedup/test_text.py).
    """
    low = text.lower()
    data = low.encode("utf-8", "surrogatepass").translate(_ZERO_DIGITS if normalize_numbers else _KEEP_DIGITS)
    if low.isascii():
        return data
    if (len(data) - len(low)) * _WHOLE_TEXT >= len(low):  # UTF-8 2 % or more longer than the text: not English
        return _normalized_whole(low, normalize_numbers)
    fix, marks = _FIX[normalize_numbers], data.translate(_HIGH_MARKS)
    parts, done = [], 0
    high = marks.find(1)
    while high >= 0:
        start = data.rfind(b" ", done, high) + 1  # data[done] is a space unless done == 0: never before done
        end = data.find(b" ", high)
        if end < 0:
            end = len(data)
        parts += (data[done:start], fix(data[start:end]))
        done = end
        high = marks.find(1, end)
    parts.append(data[done:])
    return b"".join(parts)


def _normalized_whole(low: str, normalize_numbers: bool) -> bytes:
    """``normalized_bytes`` of a lower-cased, mostly non-ASCII text, without a Python call per word. In
    ``normalized_bytes_reference`` a space-free run (no ASCII character but letters and digits) that holds a
    non-ASCII character becomes its words joined by one space: a run of separators inside it (non-ASCII, no letter
    or digit) one space, at either end of it nothing. So each such separator run is marked (one regular
    expression over the text), the marks next to a space or at an end of the text are dropped, the others become
    spaces: all of it str and bytes methods. ``words_reference`` lowers its run again, which changes nothing
    (``str.lower`` is idempotent on every code point, final sigma included: the text is lowered already)."""
    low = _NON_ASCII_SEPARATORS.sub(_MARK, low)
    if normalize_numbers:
        low = _OTHER_DIGITS.sub("0", low)
    data = low.encode("utf-8", "surrogatepass").translate(_ZERO_DIGITS if normalize_numbers else _KEEP_DIGITS)
    data = data.replace(_MARK_AFTER_SPACE, b" ").replace(_MARK_BEFORE_SPACE, b" ")
    if data.startswith(_MARK_BYTES):
        data = data[len(_MARK_BYTES):]
    if data.endswith(_MARK_BYTES):
        data = data[:-len(_MARK_BYTES)]
    return data.replace(_MARK_BYTES, b" ")


# Non-ASCII characters that separate words as a space does (neither letters nor digits: ``\W``) and that
# lower-case to themselves: typographic quotes, dashes, spaces and symbols, the only non-ASCII characters of
# many web documents. tests/pipeline/dedup/test_text.py checks both properties of each.
WORD_SEPARATORS = frozenset("\u00a0\u2002\u2003\u2009\u200a\u200b\u202f’‘“”—–…«»„‚•·′″‹›‐‑‒−©®™°€£§¶†‡")
_ASCII_BYTES = bytes(range(0x80))


def ascii_word_copy(text: str) -> str | None:
    """``text`` itself when ASCII; else, when its only non-ASCII characters are ``WORD_SEPARATORS``, a copy
    with each of them replaced by a space (one character for one, so every offset holds); else None.

    Every slice of the copy has the normalised words of the same slice of ``text`` (a separator splits words
    as a space does, and lower case is per character: the one character ``str.lower`` reads in context, the
    capital sigma, is not a separator), and an ASCII text is normalised once and sliced by its callers
    (``sentences.sentence_words``). Linear: one encode, one ``bytes.translate`` that keeps the non-ASCII
    bytes, and one ``str.replace`` per distinct separator present."""
    if text.isascii():
        return text
    others = set(text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass"))
    if not others <= WORD_SEPARATORS:
        return None
    for separator in others:
        text = text.replace(separator, " ")
    return text


# Every byte of normalised text but the space as ``a``: a word starts wherever `` a`` is, or at the start.
_WORD_SHAPE = bytes(0x20 if c == 0x20 else 0x61 for c in range(256))
_SPACE = np.uint8(0x20)
_SHORT = 256  # below this many bytes split and join beat numpy's fixed cost


def count_words(normalized: bytes) -> int:
    """The words (``corpusforge.pipeline.words``: a character of a script without spaces is one) of
    ``normalized_bytes``' output, whose only separator is the space: ``len(normalized.split())`` unless it holds
    such characters, without making a bytes object per word."""
    if not normalized.isascii():
        text = normalized.decode("utf-8", "surrogatepass")
        if has_no_space_script(text):
            return count_spaced(text)
    shape = normalized.translate(_WORD_SHAPE)
    return shape.count(b" a") + shape.startswith(b"a")


def word_parts(normalized: bytes) -> tuple[int, int]:
    """``count_words``' parts (``corpusforge.pipeline.words.spaced_parts``): the parts of pieces of a text add up to
    the text's, where their counts, rounded up each, need not."""
    if normalized.isascii():
        return count_words(normalized), 0
    return spaced_parts(normalized.decode("utf-8", "surrogatepass"))


def segmented_bytes(text: str, normalize_numbers: bool = True) -> bytes:
    """``normalized_bytes`` with a space around each character of a script written without spaces (Han, kana,
    Thai...: ``corpusforge.pipeline.words``), so that its space-separated runs are the words near-dedup shingles;
    the same bytes as ``normalized_bytes`` for a text without such characters (all ASCII text: one check)."""
    normalized = normalized_bytes(text, normalize_numbers)
    if normalized.isascii():
        return normalized
    return spaced(normalized.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass")


def joined_words(normalized: bytes) -> bytes:
    """``b" ".join(normalized.split())`` for ``normalized_bytes``' output (whose only separator is the space):
    runs of spaces cut to one in numpy for a long text, without a bytes object per word."""
    if len(normalized) < _SHORT:
        return b" ".join(normalized.split())
    data = np.frombuffer(normalized, dtype=np.uint8)
    space = data == _SPACE
    keep = ~space
    keep[1:] |= keep[:-1]  # a space right after a word stays: one space between two words
    return data[keep].tobytes().rstrip(b" ")


def normalized_joined(text: str, normalize_numbers: bool = True) -> bytes:
    """``joined_words(normalized_bytes(text))``: the normalised words joined by single spaces. A text whose UTF-8
    is 2 % or more longer than its characters (Greek, Cyrillic, CJK, most accented prose) takes them from one
    regular expression over the whole text (``words_reference``, ~0.4x the time there) instead of one Python call
    per non-ASCII word; the same bytes (tests/pipeline/dedup/test_text.py holds the two paths equal)."""
    if not text.isascii() and (len(text.encode("utf-8", "surrogatepass")) - len(text)) * 50 >= len(text):
        return _joined_by_words(text, normalize_numbers)
    return joined_words(normalized_bytes(text, normalize_numbers))


def _joined_by_words(text: str, normalize_numbers: bool = True) -> bytes:
    # words_reference lowers the whole text once as normalized_bytes does (its non-ASCII runs are lowered again:
    # str.lower is idempotent on every code point), and no word holds a lone surrogate (no letter or digit)
    return " ".join(words_reference(text, normalize_numbers)).encode("utf-8")


def word_bytes(text: str, normalize_numbers: bool = True) -> list[bytes]:
    """The words of ``text`` as UTF-8 bytes: its normalised words (``words_reference``), a character of a script
    without spaces one word (``segmented_bytes``)."""
    return segmented_bytes(text, normalize_numbers).split()


def words(text: str, normalize_numbers: bool = True) -> list[str]:
    """The words of ``text``: its normalised words (``words_reference``), a character of a script without spaces
    one word (``segmented_bytes``); what near-dedup's word shingles are made of."""
    return segmented_bytes(text, normalize_numbers).decode("utf-8", "surrogatepass").split()


def normalize_for_hash(text: str, normalize_numbers: bool = True) -> str:
    """``text`` reduced to its normalised words joined by single spaces (what exact dedup hashes)."""
    return joined_words(normalized_bytes(text, normalize_numbers)).decode("utf-8")


def word_shingles(tokens: list[str], n: int) -> list[str]:
    """Word n-grams joined by single spaces. A text of 1..n-1 words is one shingle; no words, none."""
    if len(tokens) < n:
        return [" ".join(tokens)] if tokens else []
    return list(map(" ".join, zip(*(tokens[i:] for i in range(n)))))


def char_shingles(normalized: str, n: int) -> list[str]:
    """Character n-grams of a normalised text; a text shorter than ``n`` is one shingle."""
    if len(normalized) < n:
        return [normalized] if normalized else []
    return [normalized[i:i + n] for i in range(len(normalized) - n + 1)]


def shingles(text: str, n: int, unit: str = "word") -> list[str]:
    """The shingles of a raw text, the way the near-duplicate stage builds them."""
    if unit == "word":
        return word_shingles(words(text), n)
    if unit == "char":
        return char_shingles(normalize_for_hash(text), n)
    raise ValueError(f"unit must be 'word' or 'char', got {unit!r}")


def jaccard(a: set, b: set) -> float:
    """The exact Jaccard similarity of two sets (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def survivor_rank(doc_id: str, annotations: dict[str, Any], score_key: str) -> tuple[int, float, str]:
    """The sort key that picks one survivor among duplicates: the smallest key wins.

    Documents with a finite numeric ``annotations[score_key]`` come first, highest score first; ties and
    documents without a score are ordered by id. The key depends on the document alone, so every runner
    and worker count picks the same survivor.
    """
    score = annotations.get(score_key) if score_key else None
    if isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score):
        return (0, -float(score) + 0.0, doc_id)  # + 0.0 turns -0.0 into 0.0: one encoding per key
    return (1, 0.0, doc_id)
