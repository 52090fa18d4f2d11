"""The quality tokenizer as it was before its fast paths (corpusforge d200b23, pipeline/quality/text.py), kept
verbatim as the definition that ``pipeline/quality/text.py``'s ``words`` must agree with token for token
(tests/pipeline/quality/test_text.py). Its tables are the package's own, imported, so only the code is frozen."""
from __future__ import annotations

from corpusforge.pipeline.quality.text import (  # noqa: F401 - the shared tables
    _ABBREV_RE, _ABBREVIATIONS, _ALNUM_SPECIALS, _BARE_CONTRACTIONS, _CONTRACTION_RE, _EMOTICONS, _FAST_RE, _INFIX_RE,
    _PREFIX_RE, _SUFFIX_RE, _SUFFIX_TOKEN_RE, _URL_RE,
)
from corpusforge.pipeline.words import split_tokens


def _special(chunk: str) -> list[str] | None:
    """spaCy's special cases that matter for counting: abbreviations, emoticons, contractions."""
    if not chunk:
        return None
    if chunk in _ABBREVIATIONS or chunk in _EMOTICONS or _ABBREV_RE.match(chunk):
        return [chunk]
    lower = chunk.lower()
    if lower == "cannot":
        return [chunk[:3], chunk[3:]]
    bare = _BARE_CONTRACTIONS.get(chunk if chunk.islower() else chunk[0].lower() + chunk[1:])
    if bare is not None:
        i = len(bare[0])
        return [chunk[:i], chunk[i:]]
    m = _CONTRACTION_RE.match(chunk)
    if m and m.group(1).isalpha():
        head, tail = m.group(1), m.group(2)
        if tail[0] == "n" and lower in ("can't", "can’t", "won't", "won’t"):
            return [chunk[:2], chunk[2:]]  # ca n't, wo n't
        return [head, tail]
    return None


def _tokenize_chunk(chunk: str, out: list[str]) -> None:
    start = len(out)
    _split_chunk(chunk, out)
    if len(out) - start > 1:  # emoticons made of adjacent punctuation tokens, e.g. "foo():" -> foo ( ):
        _merge_emoticons(out, start)


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


def _fast_split(chunk: str, out: list[str]) -> bool:
    m = _FAST_RE.match(chunk)
    if m is None:
        return False
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
    while s and len(s) != last:
        if _URL_RE.match(s) or _special(s) is not None:
            break
        last = len(s)
        pre = _PREFIX_RE.match(s)
        pre_len = pre.end() if pre else 0
        if pre_len and _special(s[pre_len:]) is not None:
            prefixes.append(s[:pre_len])
            s = s[pre_len:]
            break
        suf = _SUFFIX_RE.search(s[pre_len:])
        suf_len = len(suf.group()) if suf else 0
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
        special = _special(s)
        if special is not None:
            out.extend(special)
        elif _URL_RE.match(s):
            out.append(s)
        else:
            start = 0
            for m in _INFIX_RE.finditer(s):
                if m.start() == 0 or m.start() == m.end():
                    continue
                if start < m.start():
                    out.append(s[start:m.start()])
                out.append(m.group())
                start = m.end()
            if start < len(s):
                out.append(s[start:])
    out.extend(reversed(suffixes))


# A chunk's split (a regex pass for "said," "(see" "os.path.join()", a case fold for plain words) repeats across
# documents as words do: it is remembered per process (a pure function of the chunk; cleared when full). Only
# word-sized chunks: a 200k-character blob would pin its text in every worker and never repeat.
_CHUNK_CACHE: dict[str, tuple[str, ...]] = {}
_CHUNK_CACHE_SIZE = 200_000
_CACHED_CHUNK_CHARS = 64


def _split(chunk: str) -> tuple[str, ...]:
    """The chunk's spaCy-like tokens, then the script rule (``corpusforge.pipeline.words.split_tokens``, issue 40:
    a Han, kana or Thai character is a word of its own), which the tokens of space-delimited scripts pass as
    they are."""
    return tuple(split_tokens(_split_spacy(chunk)))


def _split_spacy(chunk: str) -> tuple[str, ...]:
    if chunk.isalnum():
        return tuple(_special(chunk) or [chunk]) if chunk.lower() in _ALNUM_SPECIALS else (chunk,)
    out: list[str] = []
    _tokenize_chunk(chunk, out)
    return tuple(out)


def words(text: str) -> list[str]:
    """Word tokens of ``text``, punctuation tokens included, as spaCy's English tokenizer splits them."""
    out: list[str] = []
    cache = _CHUNK_CACHE
    for chunk in text.split():
        tokens = cache.get(chunk)
        if tokens is None:
            tokens = _split(chunk)
            if len(chunk) <= _CACHED_CHUNK_CHARS:
                if len(cache) >= _CHUNK_CACHE_SIZE:
                    cache.clear()
                cache[chunk] = tokens
        out += tokens
    return out

