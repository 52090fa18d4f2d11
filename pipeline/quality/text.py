"""Text primitives the quality rules share: a fast word tokenizer, lines, paragraphs, stop words.

A word is ``corpusforge.pipeline.words``' (shared with dedup): the tokenizer's tokens, each character of a script
written without spaces (Han, kana, Thai...) a token of its own.

``TextView`` computes each view of a text once (words, lines...) so that a chain of rules tokenizes a
document once. The tokenizer follows spaCy's English tokenizer (which datatrove counts words with), so
that the published rules give the same answers, at a fraction of the cost.
"""
from __future__ import annotations

import array
import re
from collections import Counter
from functools import reduce
from itertools import accumulate, chain, compress, count, repeat
from operator import iadd, itemgetter, not_
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpusforge.pipeline.words import (
    ends_unpunctuated_sentence, has_no_space_script, has_wide_script, ngram_length, split_tokens, text_width, word_count,
    writes_unpunctuated,
)

if TYPE_CHECKING:
    from corpusforge.pipeline.quality.config import GopherConfig

# --------------------------------------------------------------------------------------------- tokenizer
# An emulation of spaCy's English tokenizer (which datatrove's rules count words with), in plain Python:
# split on whitespace; peel prefix and suffix punctuation off each chunk; keep URLs, e-mail addresses and
# special cases (contractions, abbreviations, emoticons) whole; split what remains at infixes (hyphens and
# slashes between letters, ellipses...). Chunks of letters and digits only, most of a text, take a fast path.
_PUNCT = "…,:;!?¿؟¡()[]{}<>_#*&。？！，、；：～·।،۔؛٪"
_QUOTES = "'\"”“`‘´’‚,„»«「」『』（）〔〕【】《》〈〉⟦⟧"
_CURRENCY = "$£€¥฿₽﷼₴₠₡₢₣₤₥₦₧₨₩₪₫₭₮₯₰₱₲₳₵₶₷₸₹₺₻₼₾₿"
_ICONS = "¦©®°҂֍֎؎؏۞۩۽۾߶৺୰"
_LOWER, _UPPER = "a-zß-öø-ÿа-я", "A-ZÀ-ÖØ-ÞА-Я"
_ALPHA = r"[^\W\d_]"
_PREFIX_RE = re.compile(
    "|".join([r"[§%=—–]", r"\+(?![0-9])", r"\.\.+", "…"])
    + "|[" + re.escape(_PUNCT + _QUOTES + _CURRENCY + _ICONS) + "]"
)
_UNITS = ("km|km²|km³|m|m²|m³|dm|dm²|dm³|cm|cm²|cm³|mm|mm²|mm³|ha|µm|nm|yd|in|ft|kg|g|mg|µg|t|lb|oz|m/s|km/h|kmh|mph|"
          "hPa|Pa|mbar|mb|MB|kb|KB|gb|GB|tb|TB|T|G|M|K|%")
_SUFFIX_RE = re.compile(
    "(?:" + "|".join([
        r"\.\.+", "…", "'s", "'S", "’s", "’S", "—", "–",
        "[" + re.escape(_PUNCT + _QUOTES + _ICONS) + "]",
        r"(?<=[0-9])\+", r"(?<=°[FfCcKk])\.",
        "(?<=[0-9])(?:[" + re.escape(_CURRENCY) + "])",
        f"(?<=[0-9])(?:{_UNITS})",
        "(?<=[0-9" + _LOWER + r"%²\-\+" + re.escape(_PUNCT + _QUOTES) + r"])\.",
        "(?<=[" + _UPPER + "][" + _UPPER + r"])\.",
    ]) + ")$"
)
_INFIX_RE = re.compile(
    "|".join([
        r"\.\.+", "…",
        r"(?<=[0-9])[+\-\*^](?=[0-9-])",
        "(?<=[" + _LOWER + "'\"”’])\\.(?=[" + _UPPER + "'\"“‘])",
        rf"(?<={_ALPHA}),(?={_ALPHA})",
        rf"(?<=[^\W_])(?:---|--|——|-|–|—|~)(?={_ALPHA})",
        rf"(?<=[^\W_])[:<>=/](?={_ALPHA})",
    ])
)
_URL_RE = re.compile(
    r"^(?:(?:https?|ftp|file)://\S+|www\.\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|"
    r"(?:[^\W_][\w-]*\.)+(?:com|org|net|edu|gov|io|de|fr|es|it|uk|co|info)(?:/\S*)?)$",
    re.IGNORECASE,
)
_ABBREVIATIONS = frozenset(
    "and/or w/o Mr. Mrs. Ms. Dr. Prof. Sr. Jr. St. vs. Inc. Ltd. Co. Corp. Jan. Feb. Mar. Apr. Jun. Jul. Aug. Sep. "
    "Sept. Oct. Nov. Dec. Mt. Gen. Gov. Rep. Sen. Rev. e.g. i.e. a.m. p.m. cf. al. vol. No. approx. dept. est. "
    "Ala. Ariz. Ark. Calif. Colo. Conn. Del. Fla. Ga. Ill. Ind. Kan. Ky. La. Md. Mass. Mich. Minn. Miss. Mo. "
    "Mont. Neb. Nev. Okla. Ore. Pa. Tenn. Va. Wash. Wis. Wyo. Adm. Bros. Capt. Col. Messrs. Mmes. Sgt. Lt. "
    "Lieut. Maj. Hon. Gen. Jul. z.B. d.h. usw. bzw. ca. Nr.".split()
)
_EMOTICONS = frozenset(
    ":) :( ): (: :-) :-( )-: (-: ;) ;-) (; :D :-D :P :p :-P :-p =) (= =( )= :] :[ ]: [: <3 </3 :/ :| :o :O "
    ":') :'( xD XD :x ^_^ -_- o.O O.o o_O O_o o_o O_O 0_0 :3 :> :< ;p ;D =D =] =[ 8) 8-) :(( :)) :-)) <33".split()
)
_CONTRACTION_RE = re.compile(r"^(.+?)(n['’]t|['’](?:re|ve|ll|d|m|RE|VE|LL|D|M))$")
_ABBREV_RE = re.compile(r"^(?:[^\W\d_]\.)+$")
# Contractions written without an apostrophe, which spaCy splits too (id -> i d, dont -> do nt).
_BARE_CONTRACTIONS = {
    w: (w[:i], w[i:]) for w, i in (
        ("id", 1), ("im", 1), ("ive", 1), ("ill", 1), ("dont", 2), ("didnt", 3), ("doesnt", 4), ("isnt", 2),
        ("arent", 3), ("wasnt", 3), ("werent", 4), ("hasnt", 3), ("havent", 4), ("hadnt", 3), ("couldnt", 5),
        ("shouldnt", 6), ("wouldnt", 5), ("cant", 2), ("wont", 2), ("youre", 3), ("theyre", 4), ("wed", 2),
        ("youve", 3), ("theyve", 4), ("weve", 2), ("youll", 3), ("itll", 2), ("hes", 2), ("shes", 3), ("thats", 4),
    )
}


_ALNUM_SPECIALS = frozenset(_BARE_CONTRACTIONS) | {"cannot"}


def _special(chunk: str) -> list[str] | None:
    """spaCy's special cases that matter for counting: abbreviations, emoticons, contractions.

    Called several times per chunk the fast path cannot split: each regex runs only where a character it needs
    is there (an abbreviation like "e.g." ends in "." with "." second; a contraction has an apostrophe; a bare
    contraction or "cannot" has at most 8 characters: the longest, "shouldnt")."""
    if not chunk:
        return None
    if len(chunk) > 8 and chunk[-1] != "." and "'" not in chunk and "’" not in chunk:
        return None  # every special case has at most 8 characters, ends in "." or holds an apostrophe
    if (chunk in _ABBREVIATIONS or chunk in _EMOTICONS
            or (chunk[-1] == "." and chunk[1:2] == "." and _ABBREV_RE.match(chunk))):
        return [chunk]
    if len(chunk) <= 8:
        if chunk.lower() == "cannot":
            return [chunk[:3], chunk[3:]]
        bare = _BARE_CONTRACTIONS.get(chunk if chunk.islower() else chunk[0].lower() + chunk[1:])
        if bare is not None:
            i = len(bare[0])
            return [chunk[:i], chunk[i:]]
    if "'" not in chunk and "’" not in chunk:
        return None
    m = _CONTRACTION_RE.match(chunk)
    if m and m.group(1).isalpha():
        head, tail = m.group(1), m.group(2)
        if tail[0] == "n" and chunk.lower() in ("can't", "can’t", "won't", "won’t"):
            return [chunk[:2], chunk[2:]]  # ca n't, wo n't
        return [head, tail]
    return None


# The adjacent token pairs that _merge_emoticons joins: a proper prefix of an emoticon that does not start with a
# letter or digit, and the rest of it (checked in C on a chunk's token pairs before the merge loop runs).
_EMOTICON_PAIRS = frozenset((e[:k], e[k:]) for e in _EMOTICONS if not e[0].isalnum() for k in range(1, len(e)))


def _merge_emoticons(out: list[str], start: int) -> None:
    """Join adjacent tokens of ``out[start:]`` that make an emoticon, left to right, a joined pair not
    joined again; one pass that rebuilds the tail (merging in place moved the whole tail per merge)."""
    tokens = out[start:]
    merged: list[str] = []
    i, n = 0, len(tokens)
    while i < n:
        if i + 1 < n and tokens[i] + tokens[i + 1] in _EMOTICONS and not tokens[i][0].isalnum():
            merged.append(tokens[i] + tokens[i + 1])
            i += 2
        else:
            merged.append(tokens[i])
            i += 1
    if len(merged) != n:
        out[start:] = merged


# The common shapes (word, "(word", "word).", "*word*,") split without the general loop.
# The suffix group lists each character once (no "\.\.+" beside "\."): with two ways to split a run of
# dots, a failing match backtracked through all 2^n of them ("and" + 60 dots + "then" never finished).
_FAST_RE = re.compile(r"^([(\[{\"`‘“«¿¡$£€#*_<]*)([^\W_]+)((?:[)\]}\"'`’”»,;:!?*_>]|…|\.)*)$")
_SUFFIX_TOKEN_RE = re.compile(r"\.\.+|.")
# Any other chunk made of prefix characters, a core that starts and ends with a letter or digit, and suffix
# characters ("os.path.join()", "f(x,", "_foo-bar:", ":c:func:`~a.b`.", "``'a'``,") splits as the general loop
# would, without it: each prefix character is one prefix and each suffix character (a run of dots whole) one
# suffix, peeled until the core is left, which is split at its infixes. The loop's special-case and URL checks
# look at the strings between, prefix tail + core + suffix head, and none of them can be one where
# - the chunk has no "@", "://", "www." and no ".com"-like ending (_PEEL_BLOCK_RE: every URL form needs one);
# - the core is no special case itself, nor ends in the suffix "'s"; a contraction holds letters on both sides of its
#   apostrophe, the prefix and suffix characters none, so only the core can be one; a "." right after the core can
#   only make "core." one (abbreviations hold letters and "." only; emoticons are at most 4 characters: the core
#   would be part of one).
# A "+" is a prefix or suffix only beside digits, a "." a prefix only in a run, a currency sign a suffix only after
# digits, and "—" "–" and icons allow no "." suffix after them: chunks with those at their ends take the loop.
_PEEL_PREFIX_CHARS = "".join(sorted(set("§%=—–…" + _PUNCT + _QUOTES + _CURRENCY)))
_PEEL_SUFFIX_CHARS = "".join(sorted(set(_PUNCT + _QUOTES + ".")))
_PEEL_BLOCK_RE = re.compile(r"@|://|www\.|\.(?:com|org|net|edu|gov|io|de|fr|es|it|uk|co|info)(?![^\W_])", re.IGNORECASE)
_PEEL_BLOCK_HINT = re.compile(r"@|://|(?i:w)\.|\.(?i:[cdefginou])").search  # what _PEEL_BLOCK_RE needs (5x cheaper)
_UNIT_END_RE = re.compile(f"[0-9](?:{_UNITS})$")
_APOSTROPHE_S = frozenset(("'s", "'S", "’s", "’S"))
# Cores the loop may treat otherwise: every substring of an emoticon that starts and ends with a letter or digit
# ("D", "xD", "o.O": inside an emoticon with the characters around it), "and/or" and "w/o", and "s" (after a
# prefix apostrophe, the suffix "'s").
_PEEL_SPECIAL_CORES = frozenset(
    e[a:b] for e in _EMOTICONS for a in range(len(e)) for b in range(a + 1, len(e) + 1)
    if e[a].isalnum() and e[b - 1].isalnum()
) | _ABBREVIATIONS | {"s", "S"}


def _fast_split(chunk: str, out: list[str]) -> bool:
    m = _FAST_RE.match(chunk)
    if m is None:
        return _peel_split(chunk, out)
    prefix, core, suffix = m.groups()
    if core.lower() in _ALNUM_SPECIALS:
        return False
    if suffix[:1] == "." and suffix[1:2] != ".":
        last = core[-1]
        if not (last.islower() or last.isdigit() or (len(core) > 1 and last.isupper() and core[-2].isupper())):
            return False  # "A." "Mr." and friends: the general path knows them
        if core + "." in _ABBREVIATIONS:
            return False
    out.extend(prefix)
    out.append(core)
    if suffix:
        out.extend(_SUFFIX_TOKEN_RE.findall(suffix))
    return True


def _peel_split(chunk: str, out: list[str]) -> bool:
    """The general loop's split of a chunk of prefix characters, a core and suffix characters (see above), or
    False where the loop is needed."""
    rest = chunk.lstrip(_PEEL_PREFIX_CHARS)
    core = rest.rstrip(_PEEL_SUFFIX_CHARS)
    if not core or not core[0].isalnum() or not core[-1].isalnum():
        return False
    if _PEEL_BLOCK_HINT(chunk) and _PEEL_BLOCK_RE.search(chunk):
        return False
    if core in _PEEL_SPECIAL_CORES or core.lower() in _ALNUM_SPECIALS or _UNIT_END_RE.search(core):
        return False
    if ("'" in core or "’" in core) and (core[-2:] in _APOSTROPHE_S or _special(core) is not None):
        return False
    suffix = rest[len(core):]
    if suffix[:1] == "." and suffix[1:2] != ".":  # "." is a suffix only after some characters; "core." no abbreviation
        tail = core[-2:]
        m = _SUFFIX_RE.search(tail + ".")
        if m is None or m.start() != len(tail) or core + "." in _ABBREVIATIONS or _ABBREV_RE.match(core + "."):
            return False
    out.extend(chunk[:len(chunk) - len(rest)])
    _split_infixes(core, out)
    out.extend(suffix if ".." not in suffix else _SUFFIX_TOKEN_RE.findall(suffix))  # a run of dots is one token
    return True


# _INFIX_RE with each alternative starting with its character (the look-behinds moved after it, one character
# wider; character classes spelled out), so the engine skips to the candidates instead of trying every alternative
# at every position (8x faster on "os.path.join"; test_text holds the two equal).
_INFIX_FAST_RE = re.compile("|".join([
    r"\.\.+", "…",
    *[rf"\{c}(?<=[0-9]\{c})(?=[0-9-])" for c in "+-*^"],
    "\\.(?<=[" + _LOWER + "'\"”’]\\.)(?=[" + _UPPER + "'\"“‘])",
    rf",(?<={_ALPHA},)(?={_ALPHA})",
    *[rf"{d}(?<=[^\W_]{d})(?={_ALPHA})" for d in ("---", "--", "——", "-", "–", "—", "~")],
    *[rf"\{c}(?<=[^\W_]\{c})(?={_ALPHA})" for c in ":<>=/"],
]))


def _split_infixes(s: str, out: list[str]) -> None:
    """``s`` split at its infixes (``_INFIX_RE``; a match at its start or an empty one is none)."""
    if _INFIX_FAST_RE.search(s) is None:
        out.append(s)
        return
    start = 0
    for m in _INFIX_FAST_RE.finditer(s):
        if m.start() == 0 or m.start() == m.end():
            continue
        if start < m.start():
            out.append(s[start:m.start()])
        out.append(m.group())
        start = m.end()
    if start < len(s):
        out.append(s[start:])


# Every _SUFFIX_RE alternative but a run of dots is at most this long (units such as "km/h"): a suffix starts in
# the last _LONGEST_SUFFIX characters or where the trailing dots start, so the search starts there (its
# look-behinds still see the characters before) instead of at every position of a long chunk.
_LONGEST_SUFFIX = max(4, *map(len, _UNITS.split("|")))


def _suffix_len(s: str) -> int:
    """The length of ``_SUFFIX_RE.search(s)``'s match (0: none): the leftmost suffix that ends the string."""
    start = min(len(s) - _LONGEST_SUFFIX, len(s.rstrip(".")))
    m = _SUFFIX_RE.search(s, start if start > 0 else 0)
    return len(m.group()) if m else 0


def _is_url(s: str) -> bool:
    """``_URL_RE.match(s)``: every form it knows has a "." but for scheme://, which has "://"."""
    return ("." in s or "://" in s) and _URL_RE.match(s) is not None




def _split_chunk(chunk: str, out: list[str]) -> None:
    if _fast_split(chunk, out):
        return
    special = _special(chunk)
    if special is not None:
        out.extend(special)
        return
    prefixes: list[str] = []
    suffixes: list[str] = []
    s = chunk
    last = -1
    # What the loop's top found for the string it last checked, reused below when the loop ends on it unchanged.
    checked, special, url = None, None, False
    while s and len(s) != last:
        special = _special(s) if s is not chunk else None  # the chunk itself: checked above
        url = special is None and _is_url(s)
        checked = s
        if url or special is not None:
            break
        last = len(s)
        pre = _PREFIX_RE.match(s)
        pre_len = pre.end() if pre else 0
        if pre_len and _special(s[pre_len:]) is not None:
            prefixes.append(s[:pre_len])
            s = s[pre_len:]
            break
        suf_len = _suffix_len(s[pre_len:])
        if suf_len and s[:-suf_len] and _special(s[:-suf_len]) is not None:
            suffixes.append(s[-suf_len:])
            s = s[:-suf_len]
            break
        if pre_len and suf_len and pre_len + suf_len <= len(s):
            prefixes.append(s[:pre_len])
            suffixes.append(s[-suf_len:])
            s = s[pre_len:-suf_len]
        elif pre_len:
            prefixes.append(s[:pre_len])
            s = s[pre_len:]
        elif suf_len:
            suffixes.append(s[-suf_len:])
            s = s[:-suf_len]
    out.extend(prefixes)
    if s:
        if s is not checked:
            special = _special(s)
            url = special is None and _is_url(s)
        if special is not None:
            out.extend(special)
        elif url:
            out.append(s)
        else:
            _split_infixes(s, out)
    out.extend(reversed(suffixes))


# A chunk's split (a regex pass for "said," "(see" "os.path.join()", a case fold for plain words) repeats across
# documents as words do: it is remembered per process (a pure function of the chunk; cleared when full) with its
# word tokens (those with a letter or digit), their lower case, how many hold a letter and its sentence marks, so
# a document's views and counts are joined from remembered pieces instead of testing every token again. Only
# word-sized chunks: a 200k-character blob would pin its text in every worker and never repeat.
# The last field is the chunk's number in CHUNK_TABLE, where a batch's counts are read in numpy (batch_counts.py).
Chunk = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], int, str, int, int]


_NEW_SENTENCE = re.compile("E+W")  # count_sentences: a word after a sentence end (since the last word) starts one


class GrowingColumn:
    """A column of ints appended one by one (an ``array.array``: cheap per item, and nothing for the garbage collector
    to walk, which a list of a million ints made a full collection do) and read as a numpy array by a batch: only the
    items added since the last read are copied into the array (grown by doubling). With ``width``, rows of that many
    ints (appended flat), read as a 2-D array."""

    __slots__ = ("items", "array", "synced", "width")

    def __init__(self, dtype=np.int64, width: int = 0):
        self.items = array.array(np.dtype(dtype).char if dtype is not bool else "b")
        self.width = width
        self.array = np.zeros((1024, width) if width else 1024, dtype)
        self.synced = 0

    def read(self) -> np.ndarray:
        w = self.width or 1
        n = len(self.items) // w
        if n > self.synced:
            if n > len(self.array):
                grown = np.zeros((max(n, 2 * len(self.array)),) + self.array.shape[1:], self.array.dtype)
                grown[:self.synced] = self.array[:self.synced]
                self.array = grown
            self.array.reshape(-1)[self.synced * w:n * w] = self.items[self.synced * w:n * w]
            self.synced = n
        return self.array[:n]


# ChunkTable.chunks' fields, in order: word tokens, their characters, tokens, tokens with a letter; count_sentences'
# matches inside the chunk, whether its marks start with a word, whether it has marks, whether it leaves a sentence end
# pending; hint_mask; tokens that is_url_token; where its words start in ChunkTable.words; then what the junk measure
# reads of its characters: how many (a chunk is a run of non-whitespace: the text's non-space characters are its chunks'),
# how many are LETTER_RE letters, whether SENTENCE_START_FAST_RE's end mark can be its last character (junk_fields),
# and whether its start can be the letter after (junk_fields).
(N_CONTENT, CONTENT_CHARS, N_TOKENS, LETTERS, SENTENCES, LEAD, SETS, PENDING, HINTS, URLS, START,
 CHARS, LETTER_CHARS, ENDS, BEGINS) = range(15)
# ChunkTable.words' fields: the word's number, its lower case's number, its characters.
(WORD, LOWER, WORD_CHARS) = range(3)


class ChunkTable:
    """Per chunk entry (its number is the entry's last field), what a batch sums or counts in numpy
    (``batch_counts.py``) instead of joining each document's token lists in Python: a row of ``chunks`` (the fields
    above: what the views count, its sentence marks reduced to what ``count_sentences`` needs across chunks) and its
    word tokens as rows of ``words`` (a number per distinct string, one per distinct lower case, their characters).
    Rows, not a column per field, so that a batch reads each chunk's fields with one memory access (the table is
    too big for the CPU's caches: each gather of a column cost a cache miss per chunk). A chunk's entry is numbered
    once (cached chunks are looked up, not numbered again); the table starts again (a new ``generation``, numbers
    from 0) when it holds ``LIMIT`` entries, with the chunk cache emptied, so that no cached entry keeps an old
    number. A lock keeps a chunk's rows in step if threads share the process."""

    LIMIT = 2 * 200_000

    def __init__(self, generation: int = 0):
        import threading

        self.generation = generation
        self.lock = threading.Lock()
        self.content_ids: dict[str, int] = {}
        self.lower_ids: dict[str, int] = {}
        self.lowers: list[str] = []  # each lower-case word's string, by number
        self.chunks = GrowingColumn(np.int32, width=15)
        self.words = GrowingColumn(np.int32, width=3)
        self.size = 0
        self.masks: dict[object, GrowingColumn] = {}  # a test of each lower-case word, by number (batch_counts)

    def add(self, chunk: str, tokens: tuple[str, ...], content: tuple[str, ...], lower: tuple[str, ...], letters: int,
            marks: str) -> Chunk:
        """The entry of ``chunk`` split into these, numbered."""
        hints = hint_mask(chunk.lower()) if chunk else 0
        if chunk.isalpha():  # (most new chunks: no call; the last character is no mark, the first a letter)
            junk = (len(chunk), 0, 2 if chunk[0].islower() else 1)
        else:
            junk = junk_fields(chunk) if chunk else (0, 0, 0)
        # (a URL token holds one of these: url_tokens)
        urls = sum(map(is_url_token, tokens)) if "@" in chunk or "://" in chunk or "www." in chunk else 0
        last_word = marks.rfind("W")
        # count_sentences across chunks: a chunk that starts with a word starts a sentence when a sentence end came
        # since the last word (in earlier chunks of the line); after this chunk one has when its last mark is an end
        # (a line's end, "|", forgets it); a chunk without marks changes nothing.
        if last_word >= 0:
            sets, pending = 1, int("E" in marks[last_word:])
        else:
            sets, pending = int(bool(marks)), int("E" in marks)
        with self.lock:
            number = self.size
            self.size += 1
            words = self.words.items
            self.chunks.items.extend((len(content), sum(map(len, content)), len(tokens), letters,
                                  len(_NEW_SENTENCE.findall(marks)), int(marks[:1] == "W"), sets, pending, hints, urls,
                                      len(words) // 3, len(chunk), *junk))
            for word, low in zip(content, lower):
                words.extend((self._number(self.content_ids, word), self._number(self.lower_ids, low), len(word)))
        return tokens, content, lower, letters, marks, len(tokens), number

    def _number(self, numbers: dict[str, int], word: str) -> int:
        number = numbers.get(word)
        if number is None:
            number = numbers[word] = len(numbers)
            if numbers is self.lower_ids:
                self.lowers.append(word)
        return number


CHUNK_TABLE = ChunkTable()
# A line's end: a key no chunk (a str) can equal, looked up with the chunks so that a document's sentence marks are
# joined with a "|" between lines in C; it holds no token. Number 0 in every generation of the table.
_LINE_END = object()
_LINE_END_ENTRY: Chunk = CHUNK_TABLE.add("", (), (), (), 0, "|")
_CHUNK_CACHE: dict[object, Chunk] = {_LINE_END: _LINE_END_ENTRY}
_CHUNK_CACHE_SIZE = 200_000
_CACHED_CHUNK_CHARS = 64


_HAS_ALNUM = re.compile(r"[^\W_]").search  # is_word: \w is a letter, a digit or "_"
_ASCII_LETTER = re.compile("[A-Za-z]").search


def _split_cached(chunk: str) -> Chunk:
    """(tokens, word tokens, word tokens in lower case, tokens with a letter, sentence marks, number of tokens, number
    in CHUNK_TABLE) of one chunk."""
    entry = _CHUNK_CACHE.get(chunk)
    if entry is None:
        if CHUNK_TABLE.size >= ChunkTable.LIMIT:
            _new_generation()
        no_space = not chunk.isascii() and has_no_space_script(chunk)  # a Han, kana or Thai character is one word
        if chunk.isalnum() and chunk.lower() not in _ALNUM_SPECIALS and not no_space:  # a plain word or number
            tokens = (chunk,)
            entry = CHUNK_TABLE.add(chunk, tokens, tokens, (chunk.lower(),),
                                    1 if chunk.isalpha() or any(map(str.isalpha, chunk)) else 0, "W")
        elif chunk.isalnum() and chunk.lower() not in _ALNUM_SPECIALS:
            entry = _chunk_entry(chunk, tuple(split_tokens((chunk,))))
        else:
            out: list[str] = []
            _split_chunk(chunk, out)
            # emoticons made of adjacent punctuation tokens, e.g. "foo():" -> foo ( ):
            if len(out) > 1 and not _EMOTICON_PAIRS.isdisjoint(zip(out, out[1:])):
                _merge_emoticons(out, 0)
            entry = _chunk_entry(chunk, tuple(split_tokens(out) if no_space else out))
        if len(chunk) <= _CACHED_CHUNK_CHARS:
            if len(_CHUNK_CACHE) >= _CHUNK_CACHE_SIZE:
                _CHUNK_CACHE.clear()
                _CHUNK_CACHE[_LINE_END] = _LINE_END_ENTRY
            _CHUNK_CACHE[chunk] = entry
    return entry


def _new_generation() -> None:
    """Start CHUNK_TABLE again, and the chunk cache with it (its entries hold the old numbers)."""
    global CHUNK_TABLE
    with CHUNK_TABLE.lock:
        table = ChunkTable(CHUNK_TABLE.generation + 1)
        table.add("", (), (), (), 0, "|")  # the line end: number 0, as _LINE_END_ENTRY says
        CHUNK_TABLE = table
        _CHUNK_CACHE.clear()
        _CHUNK_CACHE[_LINE_END] = _LINE_END_ENTRY


def _chunk_entry(chunk: str, tokens: tuple[str, ...]) -> Chunk:
    """``_split_cached``'s entry for ``chunk`` split into ``tokens``, counted in C where it can be."""
    content = tuple(filter(_HAS_ALNUM, tokens))
    # count_sentences' view: E a sentence end, W a word, nothing for the rest
    if len(content) == len(tokens) or SENTENCE_END_TOKENS.isdisjoint(tokens):
        marks = "W" * len(content)
    else:
        marks = "".join(["W" if _HAS_ALNUM(w) else "E" for w in tokens if w in SENTENCE_END_TOKENS or _HAS_ALNUM(w)])
    joined = "".join(content)
    if joined.isalpha():  # only word tokens hold letters (a letter is alphanumeric)
        letters = len(content)
    elif joined.isascii():
        letters = len(list(filter(_ASCII_LETTER, content)))
    else:
        letters = sum(1 for w in content if any(map(str.isalpha, w)))
    return CHUNK_TABLE.add(chunk, tokens, content, tuple(map(str.lower, content)), letters, marks)


def words(text: str) -> list[str]:
    """Word tokens of ``text``, punctuation tokens included, as spaCy's English tokenizer splits them."""
    out: list[str] = []
    for chunk in text.split():
        out += _split_cached(chunk)[0]
    return out


# Characters that end a sentence / a line of prose (datatrove's TERMINAL_PUNCTUATION, common scripts).
TERMINAL_PUNCTUATION = frozenset(".!?。！？．｡।॥؟۔։።፧߹‼⁇⁈⁉‽⸮")
SENTENCE_END_TOKENS = frozenset(".!?。！？．｡।॥؟۔։።፧‼⁇⁈⁉‽")
PARAGRAPH_RE = re.compile(r"\n{2,}")
LINES_RE = re.compile(r"\n+")


def split_line_runs(text: str) -> list[str]:
    """``LINES_RE.split(text)`` with str.split: runs of newlines leave empty pieces only inside."""
    pieces = text.split("\n")
    return pieces if len(pieces) < 3 else [pieces[0], *filter(None, pieces[1:-1]), pieces[-1]]


def split_paragraphs(text: str) -> list[str]:
    """``PARAGRAPH_RE.split(text)`` for a stripped text: lines joined up to each empty line."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in text.split("\n"):
        if line:
            current.append(line)
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    paragraphs.append("\n".join(current))
    return paragraphs


def is_word(token: str) -> bool:
    """A token with a letter or digit (not a punctuation/symbol token)."""
    return token[0].isalnum() or any(c.isalnum() for c in token)


def count_sentences(tokens: list[str]) -> int:
    """Sentences in a token list, as spaCy's sentencizer splits: after a sentence-end token, at the next word."""
    n, seen_end = (1 if tokens else 0), False
    for tok in tokens:
        if tok in SENTENCE_END_TOKENS:
            seen_end = True
        elif seen_end and is_word(tok):
            n += 1
            seen_end = False
    return n


def mean_word_length(view: "TextView") -> float | None:
    """The mean length of ``content_words`` in characters, as many as English spells the same words with: the
    characters of Han, kana, Thai... and Hangul syllables count for the English characters they stand for, and the
    words are ``n_words`` (``corpusforge.pipeline.words``); None without words."""
    if not view.n_content:
        return None
    if not view.wide_script:
        return view.content_chars / view.n_content
    return text_width("".join(view.content_words)) / view.n_words  # the width of the words, one by one, added up


def unpunctuated_ends(text: str, lines: list[str], stops: tuple[str, ...], ignore_closers: bool) -> int:
    """How many of ``lines`` that do not end in one of ``stops`` end in a letter of Thai or Lao, which write no
    sentence-end punctuation (``corpusforge.pipeline.words.ends_unpunctuated_sentence``): such a line ends as a
    sentence does. 0 at once for a text without those scripts."""
    if not writes_unpunctuated(text):
        return 0
    ends = (line.rstrip().rstrip(CLOSERS) if ignore_closers else line for line in lines)
    return sum(1 for end in ends if not end.endswith(stops) and ends_unpunctuated_sentence(end.rstrip()))


def ngram_chars(gram: tuple[str, ...]) -> int:
    """The characters of an n-gram as the text spells it: its tokens and a space between two, but none between two
    characters of a script without spaces."""
    spaces = len(gram) - 1
    if spaces and not all(map(str.isascii, gram)):
        spaces -= sum(1 for a, b in zip(gram, gram[1:]) if has_no_space_script(a) and has_no_space_script(b))
    return sum(map(len, gram)) + spaces


def find_duplicates(items: list[str]) -> tuple[int, int]:
    """(number of repeated items, characters in them), counting every occurrence after the first."""
    seen: set[str] = set()
    dup_items = dup_chars = 0
    for item in items:
        if item in seen:
            dup_items += 1
            dup_chars += len(item)
        else:
            seen.add(item)
    return dup_items, dup_chars


_LINE_END_ONLY = (_LINE_END,)


class once:  # noqa: N801 - used as a decorator, like the functools.cached_property it stands for
    """``functools.cached_property`` without its lock: Python 3.11's takes an ``RLock`` on every first access (3.12
    dropped it), ~1 us each, and a document's ``TextView`` computes a dozen views once each. The value is stored in
    the instance's ``__dict__``, where later lookups find it before this (non-data) descriptor."""

    def __init__(self, compute):
        self.compute, self.name, self.__doc__ = compute, compute.__name__, compute.__doc__

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value


def _joined(entries: list[Chunk], field: int) -> list[str]:
    """The chunks' token tuples of one field, joined into a list (in C: list += tuple, no iterator per chunk)."""
    return reduce(iadd, map(itemgetter(field), entries), [])


class TextView:
    """Lazily computed views of one text, shared by all rules applied to it."""

    __slots__ = ("text", "__dict__")

    def __init__(self, text: str):
        self.text = text

    @once
    def line_words(self) -> list[list[str]]:
        """The word tokens of each line of ``splitlines``; together they are ``words`` (every line break is
        whitespace to ``str.split``). The measures need none (C4 counts sentences from the chunks' marks)."""
        ends = self.line_starts
        return [_joined(self._chunks[a:b], 0) for a, b in zip(ends, ends[1:])]

    @once
    def words(self) -> list[str]:
        return _joined(self._chunks, 0)

    @once
    def content_words(self) -> list[str]:
        """The tokens with a letter or digit (``is_word``)."""
        return _joined(self._chunks, 1)

    @once
    def lower_words(self) -> list[str]:
        """``content_words`` in lower case."""
        return _joined(self._chunks, 2)

    @once
    def n_tokens(self) -> int:
        """``len(words)``."""
        return sum(map(itemgetter(5), self._chunks))

    @once
    def n_content(self) -> int:
        """``len(content_words)``."""
        return len(self.content_words)

    @once
    def content_chars(self) -> int:
        """The characters of ``content_words``."""
        return sum(map(len, self.content_words))

    @once
    def n_sentences(self) -> int:
        """``sum(count_sentences(line) for line in line_words)``: one sentence per line with a token, and one
        more at each word after a sentence end, read from the chunks' sentence marks ("|" ends a line)."""
        lines = self.line_chunks
        return len(lines) - lines.count([]) + len(_NEW_SENTENCE.findall("".join(map(itemgetter(4), self._chunks))))

    @once
    def no_space_script(self) -> bool:
        """Whether the text holds characters of a script without spaces (Han, kana, Thai...: pipeline/words.py)."""
        return has_no_space_script(self.text)

    @once
    def wide_script(self) -> bool:
        """Whether the text holds characters ``text_width`` counts otherwise than one (those and Hangul)."""
        return self.no_space_script or has_wide_script(self.text)

    @once
    def n_words(self) -> int:
        """How many words ``content_words`` count for (``corpusforge.pipeline.words.word_count``): their number,
        but where characters of a script without spaces are tokens, which count the English words they stand for."""
        return word_count(self.content_words) if self.no_space_script else self.n_content

    @once
    def n_word_tokens(self) -> int:
        """``n_tokens`` counted as ``n_words`` counts: ``n_tokens`` for a text without no-space-script characters."""
        return word_count(self.words) if self.no_space_script else self.n_tokens

    def ngram_length(self, n: int, tokens: list[str]) -> int:
        """The length in ``tokens`` (``content_words`` or ``words``) of an n-gram of ``n`` words: ``n``, but longer
        where characters of a script without spaces are tokens (``corpusforge.pipeline.words.ngram_length``)."""
        if not self.no_space_script:
            return n
        return ngram_length(n, tokens, self.n_words if tokens is self.content_words else word_count(tokens))

    @once
    def n_letter_words(self) -> int:
        """How many tokens hold a letter (``any(c.isalpha() for c in w)``); all are in ``content_words``."""
        return sum(map(itemgetter(3), self._chunks))

    @once
    def lower_word_counts(self) -> Counter[str]:
        """How often each of ``lower_words`` occurs (counted in C), in first-occurrence order."""
        return Counter(self.lower_words)

    @once
    def line_sizes(self) -> list[int]:
        """How many chunks each line has (``len`` of each of ``line_chunks``)."""
        return list(map(len, self.line_chunks))

    @once
    def line_chunks(self) -> list[list[str]]:
        """Each line's chunks (``str.split``)."""
        return list(map(str.split, self.splitlines))

    @once
    def _chunks(self) -> list[Chunk]:
        """Each chunk's remembered pieces (``_split_cached``) and a _LINE_END after each line's (``fill_chunks``)."""
        fill_chunks(self)
        return self.__dict__["_chunks"]

    @once
    def line_starts(self) -> list[int]:
        """Where each line's entries start in ``_chunks``, then ``len(_chunks)``: line i's chunks' entries are
        ``_chunks[line_starts[i]:line_starts[i + 1] - 1]``, and its line-end entry follows them."""
        return list(accumulate(map(len, self.line_chunks), lambda end, n: end + n + 1, initial=0))

    def tokens_of_lines(self, indexes) -> list[str]:
        """The tokens of the lines at ``indexes`` (``line_words`` of those lines, joined)."""
        starts, entries = self.line_starts, self._chunks
        return _joined([e for i in indexes for e in entries[starts[i]:starts[i + 1]]], 0)

    @once
    def splitlines(self) -> list[str]:
        return self.text.splitlines()

    @once
    def lower_text(self) -> str:
        return self.text.lower()

    @once
    def phrase_hints(self) -> list[str]:
        """The ``BOILERPLATE_PHRASE_HINTS`` that ``lower_text`` holds (``batch_counts`` finds them from the chunks')."""
        return [h for h in BOILERPLATE_PHRASE_HINTS if h in self.lower_text]


def fill_chunks(view: TextView, numbers: list[int] | None = None) -> None:
    """Set the view's ``_chunks``: its chunks' remembered pieces (``_split_cached``) and a _LINE_END after each line's,
    looked up in C (the chunks of all lines are ``text.split()``: a line break is whitespace to it); new chunks are
    split. And ``chunk_generation``: the CHUNK_TABLE generation the entries' numbers belong to (-1: a new one started
    meanwhile), for ``batch_counts``, which passes ``numbers`` to extend with the entries' numbers while they are in
    the CPU's caches (a second pass over a batch's entries missed them)."""
    generation = CHUNK_TABLE.generation
    chunks = list(chain.from_iterable(chain.from_iterable(zip(view.line_chunks, repeat(_LINE_END_ONLY)))))
    entries = list(map(_CHUNK_CACHE.get, chunks))
    if not all(entries):  # an entry is a non-empty tuple, a chunk not seen before None
        # Chunks too long for the cache (reST table borders) often repeat within the document: split once here.
        split: dict[str, Chunk] = {}
        for i in compress(range(len(entries)), map(not_, entries)):
            chunk = chunks[i]
            if chunk is _LINE_END:  # the cache was cleared from outside
                _CHUNK_CACHE[_LINE_END] = entries[i] = _LINE_END_ENTRY
            else:
                entry = split.get(chunk)
                if entry is None:
                    entry = split[chunk] = _split_cached(chunk)
                entries[i] = entry
    view.__dict__.update(_chunks=entries, chunk_generation=generation if CHUNK_TABLE.generation == generation else -1)
    if numbers is not None:
        numbers += map(itemgetter(6), entries)


def batch_chunk_numbers(views: list[TextView]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """``fill_chunks``' numbers of every view, one view after another, and how many each has, with the CHUNK_TABLE
    generation of each view's numbers (-1: a new one started meanwhile, as ``chunk_generation``); sets each view's
    ``line_sizes``. The views' texts are split for the whole batch in pyarrow (lines at "\\n", chunks at whitespace:
    ``utf8_split_whitespace`` splits where ``str.split`` does, ``test_text`` checks every code point) and each distinct
    chunk of the batch is looked up once (``dictionary_encode``): the per-chunk Python of ``fill_chunks`` (a string, a
    hash and a dict lookup each, ~350 a page, most of them repeats) was its cost. The views' ``_chunks`` are left
    unset (the batch counts need only the numbers; a view computes them if a measure asks). A text with a line break
    ``str.splitlines`` knows other than "\\n" (``\\r``, ``\\x0b``, ``\\u2028`` ...) or that UTF-8 cannot hold (a lone
    surrogate) takes ``fill_chunks``."""
    numbers: list[np.ndarray] = []
    sizes = np.zeros(len(views), np.int64)
    generations = [CHUNK_TABLE.generation] * len(views)
    texts = [v.text for v in views]
    try:
        array_ = pa.array(texts, pa.large_string())
    except (UnicodeEncodeError, pa.ArrowException):  # a lone surrogate: each text on its own
        array_ = None
    arrow = np.zeros(len(views), bool)
    if array_ is not None and len(views):
        arrow = ~pc.match_substring_regex(array_, _OTHER_LINE_BREAKS).to_numpy(zero_copy_only=False)
        if not arrow.all():
            array_ = array_.filter(pa.array(arrow))
    found = _split_batch(array_) if arrow.any() else None
    if found is None:  # (a new table generation meanwhile: the texts on their own)
        arrow[:] = False
    else:
        numbers_of, line_sizes, n_lines, generation = found
        chunks_before = np.concatenate([[0], np.cumsum(line_sizes)])[np.concatenate([[0], np.cumsum(n_lines)])]
        sizes[arrow] = np.diff(chunks_before) + n_lines  # each line's chunks and its line end
        lines = line_sizes.tolist()
        start = 0
        for i, count_ in zip(np.flatnonzero(arrow).tolist(), n_lines.tolist()):
            views[i].__dict__["line_sizes"] = lines[start:start + count_]
            start += count_
            generations[i] = generation
    if arrow.all():
        return (numbers_of if found is not None else np.zeros(0, np.int64)), sizes, generations
    # some texts on their own: their numbers between the batch's, in order
    bounds = np.concatenate([[0], np.cumsum(sizes[arrow])])
    k = 0
    for i, view in enumerate(views):
        if arrow[i]:
            numbers.append(numbers_of[bounds[k]:bounds[k + 1]])
            k += 1
            continue
        own: list[int] = []
        fill_chunks(view, own)
        numbers.append(np.array(own, np.int64))
        sizes[i], generations[i] = len(own), view.__dict__["chunk_generation"]
    return (np.concatenate(numbers) if numbers else np.zeros(0, np.int64)), sizes, generations


# The line breaks of str.splitlines other than "\n" (test_text checks them against every code point).
_OTHER_LINE_BREAKS = "[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]"


def _split_batch(texts: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """``batch_chunk_numbers`` of texts whose only line break is "\\n": the entries' numbers (each line's chunks, then
    its line end), each line's chunks, each text's lines, the table generation; None if a new generation started."""
    lines = pc.split_pattern(texts, "\n")
    n_lines = pc.list_value_length(lines).to_numpy().astype(np.int64)
    flat_lines = lines.flatten()
    # str.splitlines has no line after a last line break (nor any line in an empty text): drop an empty last piece
    last = np.cumsum(n_lines) - 1
    empty_last = pc.binary_length(flat_lines).to_numpy()[last] == 0
    if empty_last.any():
        keep = np.ones(len(flat_lines), bool)
        keep[last[empty_last]] = False
        flat_lines = flat_lines.filter(pa.array(keep))
        n_lines = n_lines - empty_last
    pieces = line_pieces(flat_lines)  # leading whitespace: an empty piece, dropped below
    per_line = pc.list_value_length(pieces).to_numpy().astype(np.int64)
    flat = pieces.flatten()
    filled = pc.binary_length(flat).to_numpy() > 0
    before = np.concatenate([[0], np.cumsum(filled, dtype=np.int64)])
    line_ends = np.cumsum(per_line)
    line_sizes = before[line_ends] - before[line_ends - per_line]
    encoded = pc.dictionary_encode(flat.filter(pa.array(filled)))
    generation = CHUNK_TABLE.generation
    distinct = encoded.dictionary.to_pylist()
    entries = list(map(_CHUNK_CACHE.get, distinct))
    if not all(entries):
        for i in compress(range(len(entries)), map(not_, entries)):
            entries[i] = _split_cached(distinct[i])
    if CHUNK_TABLE.generation != generation:
        return None
    chunk_numbers = np.fromiter(map(itemgetter(6), entries), np.int64, len(entries))[encoded.indices.to_numpy()]
    out = np.full(len(chunk_numbers) + len(line_sizes), _LINE_END_ENTRY[6], np.int64)
    out[np.arange(len(chunk_numbers)) + np.repeat(np.arange(len(line_sizes)), line_sizes)] = chunk_numbers
    return out, line_sizes, n_lines, generation


def line_pieces(lines: pa.Array) -> pa.Array:
    """Each line's chunks as ``str.split`` finds them, but for an empty first piece where the line starts with
    whitespace: ``utf8_split_whitespace`` of the lines with their trailing whitespace trimmed first. pyarrow 25's
    ``utf8_split_whitespace`` reads past the end of a string that ends in whitespace, and where the bytes after the
    array's last string are not UTF-8 (whatever the memory there holds: it changed with what the process did before)
    it leaves that whitespace on the last chunk ("b " for "a b "), which numbered another chunk and changed the
    counts; ``utf8_rtrim_whitespace`` trims exactly what ``str.isspace`` calls whitespace (test_batch_counts checks
    every code point) and leaves no string ending in it."""
    return pc.utf8_split_whitespace(pc.utf8_rtrim_whitespace(lines))


def as_view(text: "str | TextView") -> TextView:
    return text if isinstance(text, TextView) else TextView(text)


# Gopher's stop words (Rae et al. 2021), used case-sensitively for every document in the paper setting.
GOPHER_STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})

# Frequent function words per language (lower case). A document of a language with a list needs a few of
# its own language's function words; languages without a list skip the stop-word rules.
_STOP_WORDS_TEXT = {
    "en": "the be to of and that have with a an in is it for on as was are by or this from at not but which "
          "you he she we they his her its their our be been has had were will would can could should may "
          "there if when than then so also into about more one all no its who what how up out over under "
          "through between after before during without within each other some any such only most",
    "de": "der die das und ist in zu den von mit sich des auf für nicht ein eine einer eines einem einen "
          "als auch es an er sie wir ich dem im aus bei nach wie wird werden sind war hat haben oder aber "
          "so wenn nur noch kann zum zur über durch dass",
    "fr": "le la les de des du un une et est en que qui dans pour pas sur au aux il elle ce cette ces "
          "avec par plus ne se sont ont a son sa ses leur nous vous ils je mais ou comme été être tout",
    "es": "el la los las de del y en que a un una es por con para no se su sus al lo como más pero "
          "este esta son fue ha le ya o muy sin sobre también me hay entre cuando todo ser",
    "it": "il lo la i gli le di del della dei delle e è in che un una per non con da si al alla sono "
          "come più ma anche ha questo questa nel nella o se sua suo loro",
    "pt": "o a os as de do da dos das e em que um uma para com não no na por se é mais ao como mas "
          "foi ser são sua seu ou quando muito já também pelo pela",
    "nl": "de het een en van in is dat op te zijn met voor niet aan er die als ook door maar om bij "
          "wordt worden of uit naar dan ze hij zij wij ik was",
    "sv": "och i att det som en på är av för med till den har de inte om ett var jag men så kan vi "
          "från eller när sig",
    "da": "og i at det som en på er af for med til den har de ikke om et var jeg men så kan vi fra "
          "eller når sig",
    "no": "og i å det som en på er av for med til den har de ikke om et var jeg men så kan vi fra "
          "eller når seg",
    "pl": "i w na z się nie do to że jest o jak a od po co ale dla przez jego tak za są oraz było być",
    "cs": "a v se na je že s z do to o k i jako ale pro by jsou jeho byl což nebo jak",
    "ru": "и в не на что с по как это он к но из у за от то же о для а так она был его все мы они "
          "было при бы или быть",
    "uk": "і в не на що з по як це він до але із у за від та же о для а так вона був його всі ми вони",
    "ro": "și în de la a pe cu nu că o un este care din se pentru mai sunt fost ca dar",
    "tr": "ve bir bu da de için ile ne çok olarak daha gibi en ama ki o var olan",
    "id": "dan yang di ini itu dengan untuk dari dalam tidak akan pada juga ke ada adalah oleh",
    "fi": "ja on ei se että oli hän mutta kun tai myös ovat joka kuin niin sen",
    "hu": "a az és hogy nem is egy van meg de csak el volt mint már ez",
    "ca": "el la els les de del i en que a un una per amb no es és al com més però",
}
STOP_WORDS: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in _STOP_WORDS_TEXT.items()}


def base_language(label: str | None) -> str | None:
    """``en`` for ``en``, ``eng_Latn`` (GlotLID) or ``__label__en``; None stays None."""
    if not label:
        return None
    label = label.removeprefix("__label__")
    code = label.split("_", 1)[0].split("-", 1)[0].lower()
    return _ISO3.get(code, code)


_ISO3 = {
    "eng": "en", "deu": "de", "fra": "fr", "spa": "es", "ita": "it", "por": "pt", "nld": "nl", "swe": "sv",
    "dan": "da", "nob": "no", "nno": "no", "pol": "pl", "ces": "cs", "rus": "ru", "ukr": "uk", "ron": "ro",
    "tur": "tr", "ind": "id", "fin": "fi", "hun": "hu", "cat": "ca", "zho": "zh", "cmn": "zh", "jpn": "ja",
    "tha": "th", "nb": "no", "nn": "no",
}
ALL_STOP_WORDS = frozenset().union(*STOP_WORDS.values())


def stop_words_for(base: str | None, cfg: "GopherConfig") -> frozenset[str] | None:
    # Called per document: the built-in sets are returned as they are when the config adds no words.
    if base is None:  # language unknown (language ID off): any language's function words count
        if not cfg.stop_words:
            return ALL_STOP_WORDS
        return ALL_STOP_WORDS | frozenset(w.lower() for ws in cfg.stop_words.values() for w in ws)
    builtin = STOP_WORDS.get(base)
    extra = cfg.stop_words.get(base)
    if not extra:
        return builtin
    return (builtin or frozenset()) | frozenset(w.lower() for w in extra)


def duplicated_ngram_chars(ws: list[str], n: int, grams: list[tuple[str, ...]] | None = None) -> int:
    """Characters in word n-grams seen before, scanning greedily (a repeat skips its n words), as datatrove.
    ``grams``: the n-grams of ``ws`` when the caller has them."""
    if grams is None:
        grams = list(zip(*(ws[i:] for i in range(n))))
    seen: set[tuple[str, ...]] = set()
    repeated, idx, end = 0, 0, len(grams)
    while idx < end:
        gram = grams[idx]
        if gram in seen:
            repeated += sum(map(len, gram))
            idx += n
        else:
            seen.add(gram)
            idx += 1
    return repeated


class RepeatedNgrams(NamedTuple):
    """The word n-grams of one n that occur more than once: their start positions (ascending), the n-grams, and the
    counts of every n-gram counted (a superset of the repeated ones; each repeated n-gram's count is its count in
    the text; None for n < 3, where all n-grams were counted)."""

    positions: list[int]
    grams: list[tuple[str, ...]]
    counts: Counter | None


_NO_COUNTS: Counter = Counter()  # the counts of no n-grams, shared (never changed)


def repeated_ngrams(ws: list[str], ns: set[int]) -> dict[int, RepeatedNgrams]:
    """For each n of ``ns``: the start positions of the word n-grams of ``ws`` that occur more than once, ascending,
    and those n-grams. Bigrams are counted at every position in C (most words of prose repeat, so few are spared);
    past that an n-gram repeats only where the (n-1)-grams at its start and one word later both repeat, so each n
    builds n-grams only at those positions (in prose, few past n = 2) instead of at every word. Past n = 2 each n's
    counts (of those positions only) are kept for ``most_common_ngram``. (Bigrams counted as int ids or with numpy,
    and maps instead of comprehensions for the higher n, measured slower on ~300-word documents.)"""
    found: dict[int, RepeatedNgrams] = {}
    if 1 in ns:
        counts = Counter(ws)
        positions = list(compress(range(len(ws)), map((1).__lt__, map(counts.__getitem__, ws))))  # count > 1
        found[1] = RepeatedNgrams(positions, [(ws[p],) for p in positions], None)
    if max(ns, default=0) < 2:
        return found
    bigrams = list(zip(ws, ws[1:]))
    bigram_counts = Counter(bigrams)
    repeats = list(map((1).__lt__, map(bigram_counts.__getitem__, bigrams)))
    positions, grams = list(compress(range(len(bigrams)), repeats)), list(compress(bigrams, repeats))
    if 2 in ns:
        found[2] = RepeatedNgrams(positions, grams, None)  # every bigram's count: more to scan than to count again
    for n in range(3, max(ns) + 1):
        if positions:  # without a repeated n-gram there is no repeated longer one
            starts = set(positions)
            candidates = [p for p in positions if p + 1 in starts]
            grams = [tuple(ws[p:p + n]) for p in candidates]
            counts = Counter(grams)
            kept = [(p, g) for p, g in zip(candidates, grams) if counts[g] > 1]
            positions = [p for p, _ in kept]
        else:
            kept, counts = [], _NO_COUNTS  # (in prose, most n past 4: one Counter less each)
        if n in ns:
            found[n] = RepeatedNgrams(positions, [g for _, g in kept], counts)
    return found


def top_ngrams(docs: list[list[str]], ns) -> list[dict[int, tuple[int, int]]]:
    """``most_common_ngram`` of many token lists at once: per list, per n of ``ns`` that it has an n-gram of, the
    most frequent n-gram's count and characters (its tokens' and a space between two: ``sum(map(len, gram)) + n -
    1``), the earliest first occurrence winning ties, as ``Counter.most_common(1)`` picks (``top_ngrams_of_ids`` with
    each word numbered by its first position in the batch)."""
    flat: list[str] = reduce(iadd, docs, [])
    total = len(flat)
    if not total:
        return [{} for _ in docs]
    seen: dict[str, int] = {}
    ids = np.fromiter(map(seen.setdefault, flat, count()), np.int64, total)
    return top_ngrams_of_ids(ids, np.fromiter(map(len, docs), np.int64, len(docs)), ns,
                             np.fromiter(map(len, flat), np.int64, total))


def top_ngrams_of_ids(ids: np.ndarray, lengths: np.ndarray, ns, chars: np.ndarray) -> list[dict[int, tuple[int, int]]]:
    """``top_ngrams`` of token lists given as numbers: ``ids`` the lists' tokens, one after another, a number per
    distinct token (any non-negative numbers), ``lengths`` each list's tokens, ``chars`` each token's characters.

    Counted over the whole batch in numpy instead of a ``Counter`` of tuples per document (77 -> ~30 us a ~350-word
    document in batches of 256: ``bench/quality_cost.py``): each (document, n-gram) gets a code (``np.unique`` of the
    (n-1)-gram's code and the next word's number), and each position the count of its n-gram. Past n = 2 only
    positions whose (n-1)-grams at it and one word later both repeat are coded (an n-gram repeats only there;
    ``repeated_ngrams``); the others occur once."""
    ns = sorted(set(ns))
    found: list[dict[int, tuple[int, int]]] = [{} for _ in lengths]
    total = len(ids)
    if not ns or not total:
        return found
    span = int(ids.max()) + 1  # codes below are (code, number) pairs: code * span + number
    doc = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    room = np.repeat(np.cumsum(lengths), lengths) - np.arange(total)  # tokens from each position to its list's end
    codes = doc * span + ids  # a (document, word) code
    if len(lengths) * span >= (1 << 62) // span:  # (code, number) pairs would overflow int64: number the codes first
        codes = np.unique(codes, return_inverse=True)[1].astype(np.int64)
    counts = np.ones(total, np.int64)
    if 1 in ns:
        inverse, per_code = _inverse_and_counts(codes)
        counts = per_code[inverse]
    starts = np.cumsum(lengths) - lengths
    ends = np.concatenate([[0], np.cumsum(chars)])  # characters before each position
    for n in range(1, ns[-1] + 1):
        if n > 1:
            places = np.flatnonzero(room >= n)
            if n > 2:  # only where the (n-1)-grams at the place and one word later both repeat
                places = places[(counts[places] > 1) & (counts[places + 1] > 1)]
            inverse, per_code = _inverse_and_counts(codes[places] * span + ids[places + n - 1])
            codes = np.zeros(total, np.int64)
            codes[places] = inverse  # below ``total``: the next pairs, below total * span, fit in int64
            counts = (room >= n).astype(np.int64)  # an n-gram at a place not coded occurs once
            counts[places] = per_code[inverse]
        if n not in ns:
            continue
        has = lengths >= n
        if not has.any():
            continue
        most = np.zeros(len(lengths), np.int64)
        most[has] = np.maximum.reduceat(counts, starts[has])  # (a list shorter than n has no n-gram: not read)
        hits = np.flatnonzero((counts == np.repeat(most, lengths)) & (counts > 0))
        first = hits[np.r_[True, doc[hits[1:]] != doc[hits[:-1]]]]  # each list's earliest place of its top count
        widths = ends[first + n] - ends[first] + n - 1
        for d, c, w in zip(doc[first].tolist(), most[doc[first]].tolist(), widths.tolist()):
            found[d][n] = (c, w)
    return found


def _inverse_and_counts(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True, return_counts=True)[1:]`` of non-negative codes, by sorting each code
    with its position packed into one integer (``np.sort`` of integers, ~4x faster than the ``argsort`` that
    ``np.unique`` needs for the inverse on a batch's ~10k codes); ``np.unique`` where the packing would overflow."""
    n = len(codes)
    if not n or int(codes.max()) >= (1 << 62) // n:
        return np.unique(codes, return_inverse=True, return_counts=True)[1:]
    packed = np.sort(codes * n + np.arange(n))
    ordered = packed // n  # the codes, sorted
    new = np.empty(n, bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    inverse = np.empty(n, np.int64)
    inverse[packed - ordered * n] = np.cumsum(new) - 1  # each position's rank among the distinct codes
    starts = np.flatnonzero(new)
    return inverse, np.diff(np.append(starts, n))


def count_duplicates(items: list[str]) -> tuple[int, int]:
    """``find_duplicates`` counted in C: every occurrence after an item's first is what the items and their
    characters hold beyond the distinct items'."""
    distinct = set(items)
    return len(items) - len(distinct), sum(map(len, items)) - sum(map(len, distinct))


def most_common_ngram(ws: list[str], n: int, positions: list[int], grams: list[tuple[str, ...]],
                      counts: Counter | None = None) -> tuple[tuple[str, ...], int]:
    """``Counter(all n-grams of ws).most_common(1)[0]`` from the repeated ones (``repeated_ngrams``): the most
    frequent, the earliest first on ties; with no repeat every count is 1 and the first n-gram wins. ``counts``
    (``RepeatedNgrams.counts``) saves counting again: the n-grams it counts beyond the repeated ones occur once, so
    they never win, and it meets the repeated ones in the same order."""
    if not grams:
        return tuple(ws[:n]), 1
    return (counts if counts is not None else Counter(grams)).most_common(1)[0]


def greedy_duplicated_chars(n: int, positions: list[int], grams: list[tuple[str, ...]]) -> int:
    """``duplicated_ngram_chars(ws, n)`` from the repeated n-grams alone: the scan it does visits every position,
    but at a position whose n-gram occurs once it only moves on by one word, so only these positions decide."""
    seen: set[tuple[str, ...]] = set()
    repeated = end = 0
    for p, gram in zip(positions, grams):
        if p < end:  # inside a repeat just counted: the scan skipped it
            continue
        if gram in seen:
            repeated += sum(map(len, gram))
            end = p + n
        else:
            seen.add(gram)
            end = p + 1
    return repeated


# ------------------------------------------------------------------------------- patterns the rules share
MOJIBAKE_RE = re.compile(
    "Ã[\u0080-\u00bf€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ]"  # é read as cp1252/latin-1 -> Ã©
    "|Â[\u0080-\u00bf]"  # ° £ nbsp -> Â° Â£
    "|â€[\u0080-\u00bf™œ\u009dž˜“”¦¢¡…–—šŸ‚ƒ„†‡ˆ‰‹›]?"  # ’ “ – -> â€™ â€œ â€“
    "|[ÅÄÐÑØÙÚ][\u0080-\u009f]"  # other UTF-8 lead bytes followed by C1 controls
    "|\ufffd+"  # replacement characters
    "|[\u0080-\u009f]"  # stray C1 control characters
)
LETTER_RE = re.compile(r"[^\W\d_]")
SPACE_RE = re.compile(r"\s")
LOREM_WORDS = frozenset(
    "lorem ipsum dolor amet consectetur consectetuer adipiscing adipisicing elit eiusmod tempor incididunt labore "
    "dolore aliqua veniam nostrud exercitation ullamco laboris aliquip commodo consequat aute irure reprehenderit "
    "voluptate velit cillum fugiat pariatur excepteur occaecat cupidatat proident culpa officia deserunt mollit "
    "laborum vestibulum nullam mauris vivamus pellentesque fusce aenean curabitur donec phasellus praesent maecenas "
    "suspendisse vehicula tincidunt sollicitudin ullamcorper lacinia faucibus egestas convallis porttitor".split()
)
# A line that is only a navigation word: Home, Log in, Back to top |, 12 comments.
NAV_LINE = (r"^\s*(?:home|menu|search|login|log in|sign in|sign up|register|contact(?: us)?|about(?: us)?|faq|help|"
            r"next|previous|back to top|read more|more|cart|my account|(?:\d+ )?comments?)\s*[|»›>·•:]?\s*$")
BOILERPLATE_PHRASES = (
    r"\b(?:we|this (?:site|website)|our (?:site|website)) uses? cookies\b|\bcookies? (?:policy|settings|preferences|consent)"
    r"|\baccept (?:all )?cookies\b|\buse of cookies\b|\bprivacy (?:policy|settings|notice)\b|\bterms (?:of|and) (?:use|service|conditions)\b"
    r"|\ball rights reserved\b|©|\bcopyright \d{4}|\bsubscribe to (?:our|the) newsletter\b|\bsign up for (?:our|the) newsletter\b"
    r"|\benable javascript\b|\bjavascript (?:is )?(?:disabled|required)\b|\byour browser does not support\b"
    r"|\bskip to (?:main )?content\b|\bfollow us on\b|\bshare (?:this|on) (?:facebook|twitter|page|article)\b"
    r"|\bwir verwenden cookies\b|\bdatenschutz(?:erklärung)?\b|\bimpressum\b|\bcookies akzeptieren\b"
    r"|\bnous utilisons des cookies\b|\bpolitique de confidentialité\b|\bmentions légales\b|\baccepter les cookies\b"
    r"|\butilizamos cookies\b|\bpolítica de (?:privacidad|cookies)\b|\baviso legal\b|\baceptar (?:las )?cookies\b"
)
MENU_LINE = r"^(?:[^\n|»›·•]{1,30}[|»›·•]){2,}[^\n|»›·•]{0,30}$"  # menu lines: Home | About | Contact
BOILERPLATE_RE = re.compile(BOILERPLATE_PHRASES + r"|" + NAV_LINE + r"|" + MENU_LINE, re.IGNORECASE | re.MULTILINE)
NAV_LINE_RE = re.compile(NAV_LINE, re.IGNORECASE | re.MULTILINE)
# BOILERPLATE_RE's three parts on their own (it finds something in a line where one of them does): the phrases
# need a hint (BOILERPLATE_PHRASE_HINTS), the other two can only match at a line's start.
BOILERPLATE_PHRASES_RE = re.compile(BOILERPLATE_PHRASES, re.IGNORECASE | re.MULTILINE)
MENU_LINE_RE = re.compile(MENU_LINE, re.IGNORECASE | re.MULTILINE)
# A sentence end (not an abbreviation like "e.g." or "Mr.") and the first letter of the next word.
SENTENCE_START_RE = re.compile(r"(?<![.\s][^\W\d_])(?<!\b(?:Mr|Ms|Dr|St|vs|cf|ca|al))(?<!\betc)(?<!\bMrs)(?<!\bz\.B)(?<!\bd\.h)[.!?]\s+[\"'“‘«(]?([^\W\d_])")
URL_TOKEN_RE = re.compile(r"(?:https?://|www\.)|@[\w-]+\.")


def is_url_token(token: str) -> bool:
    """Whether a token is a URL or an e-mail address (the junk rules' links)."""
    return ("@" in token and "." in token) or (token[:1] in "hw" and URL_TOKEN_RE.match(token) is not None)

# Faster equivalents of the patterns above, for ``measure.py`` (the test of measure against the reference rules
# checks that they agree):
# - BOILERPLATE_RE finds something in a line where its phrases do (each needs one of BOILERPLATE_PHRASE_HINTS in
#   the line, compared in lower case), or NAV_LINE or MENU_LINE match at the line's start (MENU_LINE only where
#   the text has a separator): searching the whole regex in every line with a "|" (tables) cost ~50 us a line.
#   Lower case is exact for the regex's IGNORECASE except for four characters it also matches to ASCII letters
#   (İ ı ſ K); a text holding one takes the slow path.
BOILERPLATE_PHRASE_HINTS = ("cookie", "privacy", "terms", "rights reserved", "©", "copyright", "newsletter", "javascript",
                            "browser", "skip to", "follow us", "share", "datenschutz", "impressum", "confidentialit",
                            "mentions", "política", "aviso legal")
# What a chunk (whitespace never inside) can hold of each hint: all of it, or its first word. No character's lower case
# is or holds whitespace (test_batch_counts checks every one), so a hint without a space is in a text's lower case
# exactly where it is in one of its chunks' lower case, and one with a space only where its first word is.
_HINT_WORDS = tuple(hint.split(" ")[0] for hint in BOILERPLATE_PHRASE_HINTS)
_HINT_WORDS_RE = re.compile("|".join(map(re.escape, _HINT_WORDS)))


def hint_mask(lower: str) -> int:
    """Bit k set where ``lower`` (a chunk in lower case) holds ``_HINT_WORDS[k]``."""
    if _HINT_WORDS_RE.search(lower) is None:  # (most chunks: one pass instead of 18)
        return 0
    return sum(1 << k for k, word in enumerate(_HINT_WORDS) if word in lower)


def hints_of_mask(view: "TextView", mask: int) -> list[str]:
    """``view.phrase_hints`` from the OR of its chunks' ``hint_mask``: a hint with a space is looked for in the text."""
    if not mask:
        return []
    return [hint for k, hint in enumerate(BOILERPLATE_PHRASE_HINTS)
            if mask >> k & 1 and (" " not in hint or hint in view.lower_text)]
BOILERPLATE_PHRASE_WIDTH = 29  # the longest match of BOILERPLATE_PHRASES (test_decide checks it)


def phrase_alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a regex (split at each "|" outside parentheses and character classes)."""
    parts, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return parts + [pattern[start:]]


def outside_groups(alternative: str) -> str:
    """What an alternative matches in every match outside its groups, in lower case: its groups and the
    characters a quantifier makes optional taken out, \\b dropped (a stand-in "\\0" in their place, so no hint reads
    across one)."""
    out, depth = [], 0
    for i, c in enumerate(alternative):
        if c == "(":
            depth += 1
        if depth:
            out.append("\0") if c == "(" else None
        elif c in "?*{" and out:
            out[-1] = "\0"
        else:
            out.append(c)
        if c == ")":
            depth -= 1
    return "".join(out).replace("\\b", "\0").lower()


def _hint_of(alternative: str) -> str:
    """The first of BOILERPLATE_PHRASE_HINTS that every match of ``alternative`` holds (test_decide: there is one)."""
    return next(h for h in BOILERPLATE_PHRASE_HINTS if h in outside_groups(alternative))


# BOILERPLATE_PHRASES' alternatives grouped by the hint each holds in every match: a line's windows around a hint need
# only that hint's alternatives searched (each tried at every position of a window: the whole regex's ~30 cost ~80 us
# a page that mentions "share" or "terms"); a match of any alternative is one of the whole regex, and every match of the
# whole regex is one of some alternative, found around its hint.
BOILERPLATE_PHRASES_BY_HINT: dict[str, re.Pattern] = {
    hint: re.compile("|".join(a for a in phrase_alternatives(BOILERPLATE_PHRASES) if _hint_of(a) == hint),
                     re.IGNORECASE | re.MULTILINE)
    for hint in dict.fromkeys(map(_hint_of, phrase_alternatives(BOILERPLATE_PHRASES)))
}
MENU_SEPARATORS = ("|", "»", "›", "·", "•")  # MENU_LINE needs two of them
CASE_FOLDS_TO_ASCII = frozenset("\u0130\u0131\u017f\u212a")
# SENTENCE_START_RE with the end mark first and the look-behinds moved after it (each one character wider), so
# the engine scans for . ! ? instead of testing six look-behinds at every position.
_SENTENCE_END = (r"[.!?](?<![.\s][^\W\d_][.!?])(?<!\b(?:Mr|Ms|Dr|St|vs|cf|ca|al)[.!?])(?<!\betc[.!?])(?<!\bMrs[.!?])"
                 r"(?<!\bz\.B[.!?])(?<!\bd\.h[.!?])")
_SENTENCE_BEGIN = r"[\"'“‘«(]?([^\W\d_])"
SENTENCE_START_FAST_RE = re.compile(_SENTENCE_END + r"\s+" + _SENTENCE_BEGIN)
# Its two halves, for one chunk (a run of non-whitespace) at a time: a match holds whitespace only in its "\s+", so the
# end mark is the last character of a chunk and the letter starts the next chunk (with a quote before it or not), and
# the look-behinds read only the chunk's own characters and what stands before the chunk, whitespace or the text's
# start. Those two differ only for "[.\s]": "x A. B" is no sentence start, "A. B" at the text's start is.
_SENTENCE_END_RE = re.compile(_SENTENCE_END + r"\Z")
_SENTENCE_BEGIN_RE = re.compile(_SENTENCE_BEGIN)
# ENDS bits: the chunk's last character ends a sentence where whitespace stands before the chunk / where the
# chunk starts the text.
AFTER_SPACE, AT_START = 1, 2


def junk_fields(chunk: str) -> tuple[int, int, int]:
    """A chunk's LETTER_CHARS, ENDS and BEGINS (one call: a new chunk's fields cost on a fresh worker's every page).

    - LETTER_CHARS, ``len(LETTER_RE.findall(chunk))``: in C for ASCII (whose letters are the regex's).
    - ENDS, where its last character can be SENTENCE_START_FAST_RE's end mark (``AFTER_SPACE`` | ``AT_START``), matched
      at that character only (the look-behinds read what stands before it). At the text's start nothing stands before
      the chunk, which no look-behind's character can match; after whitespace only "[.\\s]" of a letter and a mark
      ("A.") can, whose look-behind then blocks the end.
    - BEGINS, 2 where it starts as the regex's match ends with a lower-case letter, 1 with another letter, 0 where it
      cannot end one (a letter to str.isalpha is one to LETTER_RE: the regex only for other characters)."""
    letters = (len(chunk.encode().translate(None, _ASCII_NON_LETTERS)) if chunk.isascii()
               else len(LETTER_RE.findall(chunk)))
    ends = 0
    if chunk[-1] in "!.?" and _SENTENCE_END_RE.match(chunk, len(chunk) - 1) is not None:
        ends = AT_START if len(chunk) == 2 and LETTER_RE.match(chunk) else AT_START | AFTER_SPACE
    first = chunk[0]
    if first.isalpha():
        begins = 2 if first.islower() else 1
    elif not first.isalnum() and first not in _SENTENCE_QUOTES:
        begins = 0
    else:
        m = _SENTENCE_BEGIN_RE.match(chunk)
        begins = 0 if m is None else 2 if m.group(1).islower() else 1
    return letters, ends, begins


_SENTENCE_QUOTES = "\"'“‘«("
_ASCII_NON_LETTERS = bytes(c for c in range(128) if not chr(c).isalpha())
FINEWEB_STOP = tuple(TERMINAL_PUNCTUATION)
CLOSERS = "\"'”’»)]*"
