"""What one word is, in every script: the unit that dedup's shingles and "too short" counts and every word count of
the quality rules are made of.

Scripts that put spaces between words (Latin, Cyrillic, Greek, Arabic, Devanagari, Hangul...) keep the words their
tokenizers find (dedup's normalised words, the quality rules' spaCy-like tokens). Scripts written without spaces
between words (Han, Hiragana, Katakana, Bopomofo, Thai, Lao, Khmer, Myanmar, Tibetan, Javanese, Balinese) count by
characters: each of their letters, with the combining marks that follow it (Thai vowel signs and tone marks, Khmer
and Myanmar signs, the kana voicing marks), is one word. A mixed-script token splits span by span: "GPU加速" is
"GPU", "加", "速".

Why characters and no segmenter (jieba, MeCab/SudachiPy, PyThaiNLP): near-duplicate detection needs units that
two copies of a text share, not linguistic words (character 5-grams find planted CJK and Thai near-duplicates at
recall 1.0: docs/dedup.md), and the word thresholds of the quality rules and of dedup's "too short" only need a
count that grows with the text as English word counts do; a segmenter costs a model load per worker and 10-100x the
time per document, and one library per language. The splitting here is one regular expression, run only on
tokens that hold a character of these scripts (ASCII text is never looked at: ``has_no_space_script``).

Pure functions, no Beam; ``pipeline/dedup/text.py`` and ``pipeline/quality/text.py`` call them.
"""
from __future__ import annotations

import re
import unicodedata

# Blocks of the scripts written without spaces between words. Every character of a block that is not a combining
# mark starts a word of its own (the blocks' punctuation too: the tokenizers that call this have already made
# punctuation a token of its own, or removed it, so a punctuation character here stays what it was).
NO_SPACE_BLOCKS: tuple[tuple[int, int, str], ...] = (
    (0x0E00, 0x0E7F, "Thai"),
    (0x0E80, 0x0EFF, "Lao"),
    (0x0F00, 0x0FFF, "Tibetan"),
    (0x1000, 0x109F, "Myanmar"),
    (0x1780, 0x17FF, "Khmer"),
    (0x19E0, 0x19FF, "Khmer symbols"),
    (0x1B00, 0x1B7F, "Balinese"),
    (0x2E80, 0x2FDF, "CJK and Kangxi radicals"),
    (0x3005, 0x3007, "ideographic iteration mark, closing mark, number zero"),
    (0x3021, 0x3029, "Hangzhou numerals"),
    (0x3031, 0x3035, "kana repeat marks"),
    (0x3040, 0x309F, "Hiragana"),
    (0x30A0, 0x30FF, "Katakana"),
    (0x3100, 0x312F, "Bopomofo"),
    (0x31A0, 0x31BF, "Bopomofo extended"),
    (0x31F0, 0x31FF, "Katakana phonetic extensions"),
    (0x3400, 0x4DBF, "CJK extension A"),
    (0x4E00, 0x9FFF, "CJK unified ideographs"),
    (0xA980, 0xA9DF, "Javanese"),
    (0xA9E0, 0xA9FF, "Myanmar extended B"),
    (0xAA60, 0xAA7F, "Myanmar extended A"),
    (0xF900, 0xFAFF, "CJK compatibility ideographs"),
    (0xFF66, 0xFF9F, "halfwidth Katakana"),
    (0x1B000, 0x1B16F, "Kana supplement and extended"),
    (0x20000, 0x323AF, "CJK extensions B to H"),
)
# Combining marks that stay with the character before them: those of the blocks above, and the variation selectors.
_MARK_BLOCKS = ((0x0E00, 0x109F), (0x1780, 0x17FF), (0x1B00, 0x1B7F), (0x3099, 0x309A), (0xA980, 0xAA7F))


def _ranges_class(ranges) -> str:
    return "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" if a != b else re.escape(chr(a)) for a, b in ranges)


def _runs(code_points: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for c in sorted(code_points):
        if runs and runs[-1][1] == c - 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    return runs


_MARKS = [c for a, b in _MARK_BLOCKS for c in range(a, b + 1) if unicodedata.category(chr(c)).startswith("M")]
_MARK_CLASS = _ranges_class(_runs(_MARKS)) + "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_MARK_SET = frozenset(_MARKS)
# The blocks less their marks (a mark is no character of its own; one right after a space-delimited character stays
# with that token).
_BASE_RANGES: list[tuple[int, int]] = []
for _a, _b, _ in NO_SPACE_BLOCKS:
    if _b - _a < 0x1000:
        _BASE_RANGES += _runs([c for c in range(_a, _b + 1) if c not in _MARK_SET])
    else:  # the large CJK blocks hold no combining marks
        _BASE_RANGES.append((_a, _b))
BASE_CLASS = _ranges_class(_BASE_RANGES)

# One character of a no-space script with its marks, captured, so that ``split`` keeps it between the other pieces.
_CHARACTER = re.compile(f"([{BASE_CLASS}][{_MARK_CLASS}]*)")
_HAS_BASE = re.compile(f"[{BASE_CLASS}]").search
# A word of a text whose only separator is the space (dedup's normalised words): one no-space character with its
# marks, or a run of other characters.
_WORD_IN_SPACED = re.compile(f"[{BASE_CLASS}][{_MARK_CLASS}]*|[^ {BASE_CLASS}]+")


_ASCII_BYTES = bytes(range(0x80))


def non_ascii(text: str) -> str:
    """The non-ASCII characters of ``text``, in order: the only ones the script tests need to look at. Cut out in C
    (encode, delete the ASCII bytes, decode): a regular expression of the scripts' ~40 ranges costs ~35 us a KB on
    an English text it finds nothing in, one curly quote being enough to need it; on the few characters left, ~0."""
    return text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")


def has_no_space_script(text: str) -> bool:
    """Whether ``text`` holds a character of a script written without spaces (False at once for ASCII)."""
    return not text.isascii() and _HAS_BASE(non_ascii(text)) is not None


def split_token(token: str) -> list[str]:
    """The words of one token (a run without spaces): each character of a no-space script, with its marks, is one;
    the spans between them stay whole. A token without such characters is itself."""
    if not has_no_space_script(token):
        return [token]
    return [piece for piece in _CHARACTER.split(token) if piece]


def split_tokens(tokens) -> list[str]:
    """``split_token`` of each token, in order, joined into one list."""
    out: list[str] = []
    for token in tokens:
        if token.isascii() or _HAS_BASE(token) is None:
            out.append(token)
        else:
            out += [piece for piece in _CHARACTER.split(token) if piece]
    return out


def words(text: str) -> list[str]:
    """The words of a text split at whitespace only (``str.split``), each token then split by ``split_token``: the
    definition the tokenizers' script rule follows (tests pin it per script)."""
    return split_tokens(text.split())


def spaced(text: str) -> str:
    """A text whose only separator is the space with a space around each character of a no-space script (its words,
    ``words``, joined by single spaces); the text itself when it holds none."""
    if not has_no_space_script(text):
        return text
    return " ".join(_WORD_IN_SPACED.findall(text))  # one findall in C (a substitution expanded a template per match)


# ------------------------------------------------------------------------------------------- word counts
# A count of words that does not depend on the script: a space-delimited word counts one; a character of a script
# without spaces counts the share of an English word it stands for in translation. Measured on parallel text
# (bench/lang_data/parallel.py: the gettext catalogs' messages and their English originals, `bench/lang_quality.py
# --rates`): an English word is 6.45 characters with its space; a Han character stands for 3.3 English characters
# (0.51 words), a kana 1.45 (0.22), a Thai character with its marks 1.35 (0.21). Lao, Khmer, Myanmar, Tibetan,
# Javanese and Balinese (abugidas like Thai; too few catalogs to measure) count as Thai does.
# In hundredths of a character, so that counts add up exactly (a text's count is the sum of its pieces' parts).
ENGLISH_WORD_CENTS = 645
HAN_CENTS, KANA_CENTS, OTHER_CENTS = 330, 145, 135
_HAN_RANGES = [(a, b) for a, b in _BASE_RANGES
               if a >= 0x2E80 and not (0x3040 <= a <= 0x31FF or 0xFF66 <= a <= 0xFF9F or 0x1B000 <= a <= 0x1B16F)]
_KANA_RANGES = [(a, b) for a, b in _BASE_RANGES if 0x3040 <= a <= 0x30FF or 0x31F0 <= a <= 0x31FF
                or 0xFF66 <= a <= 0xFF9F or 0x1B000 <= a <= 0x1B16F]
_HAN = re.compile(f"[{_ranges_class(_HAN_RANGES)}]")
_KANA = re.compile(f"[{_ranges_class(_KANA_RANGES)}]")
_BASE = re.compile(f"[{BASE_CLASS}]")
# A run of characters that are neither spaces nor of a no-space script (a combining mark after one of those
# characters belongs to it; elsewhere it is part of the run).
_OTHER_RUN = re.compile(f"(?:[^\\s{BASE_CLASS}{_MARK_CLASS}]|(?<![{BASE_CLASS}{_MARK_CLASS}])[{_MARK_CLASS}])+")


def english_cents(text: str) -> int:
    """The English characters, in hundredths, that the no-space-script characters of ``text`` stand for."""
    han, kana, base = len(_HAN.findall(text)), len(_KANA.findall(text)), len(_BASE.findall(text))
    return HAN_CENTS * han + KANA_CENTS * kana + OTHER_CENTS * (base - han - kana)


def words_for(others: int, cents: int) -> int:
    """A word count from its parts: ``others`` space-delimited words, and no-space-script characters that stand for
    ``cents`` hundredths of English characters, which count the English words they make, rounded up."""
    return others - (-cents // ENGLISH_WORD_CENTS)


def spaced_parts(text: str) -> tuple[int, int]:
    """``count_spaced``'s parts of a text whose only separator is the space: (its space-delimited words,
    ``english_cents`` of its no-space-script characters). Parts of pieces of a text add up to the text's."""
    if not has_no_space_script(text):
        return len(text.split()), 0
    return len(_OTHER_RUN.findall(text)), english_cents(text)


# Hangul is written with spaces, and its words are words; but a syllable block packs two or three letters, so a
# Korean word is short in characters (measured as above: a syllable stands for 2.2 English characters). Lengths
# in characters (a word's, a line's) count it so.
HANGUL_CENTS = 220
_HANGUL = re.compile("[\uac00-\ud7a3]")
_WIDE = re.compile(f"[{BASE_CLASS}\uac00-\ud7a3]")


def text_width(text: str) -> float:
    """A text's length in English characters: its characters, those of a script without spaces and Hangul syllables
    counted for the English characters they stand for; ``len(text)`` for a text without them."""
    if not has_wide_script(text):
        return len(text)
    hangul, base = len(_HANGUL.findall(text)), len(_BASE.findall(text))
    return len(text) - base - hangul + (english_cents(text) + HANGUL_CENTS * hangul) / 100


def has_wide_script(text: str) -> bool:
    """Whether ``text`` holds a character ``text_width`` counts otherwise than one (False at once for ASCII)."""
    return not text.isascii() and _WIDE.search(non_ascii(text)) is not None


# Thai and Lao mark no sentence end with punctuation (a space ends a sentence): a line that ends in one of their
# letters ends as a sentence does.
_UNPUNCTUATED_END = re.compile("[\u0e01-\u0e5b\u0e81-\u0edf]$")


def writes_unpunctuated(text: str) -> bool:
    """Whether ``text`` holds letters of a script that writes no sentence-end punctuation (Thai, Lao)."""
    return not text.isascii() and _UNPUNCTUATED.search(non_ascii(text)) is not None


_UNPUNCTUATED = re.compile("[\u0e01-\u0e5b\u0e81-\u0edf]")


def ends_unpunctuated_sentence(line: str) -> bool:
    """Whether ``line`` (stripped) ends in a letter of a script that writes no sentence-end punctuation."""
    return not line.isascii() and _UNPUNCTUATED_END.search(line) is not None


def count_spaced(text: str) -> int:
    """How many words a text whose only separator is the space holds (dedup's normalised words), counted as
    ``word_count`` counts them: ``len(text.split())`` for a text without no-space-script characters."""
    return words_for(*spaced_parts(text))


def word_count(tokens: list[str], text: str | None = None) -> int:
    """How many words ``tokens`` (a tokenizer's tokens, ``split_tokens`` applied) count for: ``len(tokens)`` when none
    holds a no-space-script character; else one per other token, and the no-space-script characters the English
    words they stand for, rounded up. ``text``: a text the tokens come from, to skip the work at once when it holds
    no such character."""
    if text is not None and not has_no_space_script(text):
        return len(tokens)
    joined = "".join(tokens)
    if not has_no_space_script(joined):
        return len(tokens)
    # After split_tokens every no-space-script character is a token of its own (with its marks): counted in C on the
    # joined tokens, one findall per script, instead of a test per token.
    return words_for(len(tokens) - len(_BASE.findall(joined)), english_cents(joined))


def ngram_length(n: int, tokens: list[str], words: int) -> int:
    """The n-gram length, in ``tokens``, of a phrase of ``n`` words of a text of ``words`` words (``word_count``):
    ``n`` in a space-delimited text; longer where characters of a script without spaces are tokens (a 5-word
    phrase of Chinese is about 10 characters)."""
    if words >= len(tokens) or not words:
        return n
    return max(n, round(n * len(tokens) / words))

