"""The word counts of a batch of documents, in numpy: what the heuristic rules read from each document's tokens
(``TextView``'s counts, the lower-case word counts that junk and gopher look stop and lorem-ipsum words up in, the top
n-grams of the repetition rules), counted for the whole batch at once from the chunk entries' numbers
(``text.ChunkTable``) instead of joining each document's token lists and counting them in Python.

Each count is the one the per-document path computes (``TextView``'s properties, ``measure.py``'s fallbacks): the
same integers, so the same ratios; ``tests/pipeline/quality/test_batch_counts.py`` holds the two equal on drawn text.
A document is left to the per-document path where its count differs by definition (a script without spaces, whose
characters are words: ``pipeline/words.py``) or where its entries' numbers are from an older table (a new generation
started while the batch was split).
"""
from __future__ import annotations

from bisect import bisect_left
from itertools import compress
from typing import NamedTuple

import numpy as np

from corpusforge.pipeline.quality import text
from corpusforge.pipeline.quality.config import QualityConfig, ngram_table
from corpusforge.pipeline.quality.measure import repetition_batch
from corpusforge.pipeline.quality.text import ALL_STOP_WORDS, LOREM_WORDS, STOP_WORDS, TextView, base_language, \
    stop_words_for, top_ngrams_of_ids


class WordCounts(NamedTuple):
    """A document's lower-case word counts as the junk and gopher measures read them (``measure.py``), counted for
    its batch: the measures use them where their stop words are the ones counted with."""

    lorem: int  # occurrences of LOREM_WORDS
    junk_stop: frozenset[str]  # the stop words ``top_word`` leaves out
    top_word: int  # the count of the most frequent word of 3+ characters, no number, not in ``junk_stop``; 0: none
    gopher_stop: frozenset[str] | None  # the stop words of the next two (None: not counted)
    stop_words: int  # distinct words of ``gopher_stop`` in the document
    stop_count: int  # their occurrences


class Numbered(NamedTuple):
    """The chunk entries' numbers of a batch's views (``number_batch``): which views are counted (their indexes), their
    numbers one view after another, how many each has, and the CHUNK_TABLE generation of each one's numbers."""

    picked: list[int]
    numbers: np.ndarray
    sizes: np.ndarray
    generations: np.ndarray

    def part(self, start: int, stop: int) -> "Numbered":
        """Those of the views ``[start:stop]``, indexed from ``start``."""
        first, last = bisect_left(self.picked, start), bisect_left(self.picked, stop)
        before = int(self.sizes[:first].sum())
        return Numbered([i - start for i in self.picked[first:last]],
                        self.numbers[before:before + int(self.sizes[first:last].sum())], self.sizes[first:last],
                        self.generations[first:last])


def number_batch(views: list[TextView | None]) -> Numbered:
    """The views that ``count_batch`` counts (not None, no script without spaces) and their chunks' numbers (new chunks
    numbered as they are split: ``text.batch_chunk_numbers``, for the whole batch at once)."""
    picked = [i for i, v in enumerate(views) if v is not None and not v.no_space_script]
    numbers, sizes, generations = text.batch_chunk_numbers([views[i] for i in picked])
    return Numbered(picked, numbers, sizes, np.array(generations, np.int64))


def count_batch(views: list[TextView | None], langs: list[str | None], cfg: QualityConfig,
                numbered: Numbered | None = None) -> list[dict[int, tuple[int, int]] | None]:
    """Count ``views`` (None: a document left out) for the rules of ``cfg``, storing each counted document's counts
    in its view (``n_tokens``, ``n_content``, ``content_chars``, ``n_letter_words``, ``n_sentences``,
    ``phrase_hints``, ``url_tokens``: its tokens that ``is_url_token``, ``word_counts``); returns each view's top
    n-grams for ``measure_repetition`` (None where not counted). ``numbered``: ``number_batch(views)`` where the
    caller numbered a larger batch (``Numbered.part``)."""
    grams: list[dict[int, tuple[int, int]] | None] = [None] * len(views)
    picked, numbers, sizes, generations = numbered if numbered is not None else number_batch(views)
    table = text.CHUNK_TABLE
    keep = generations == table.generation
    if not keep.all():  # documents whose numbers are from an older table: left to themselves
        numbers = numbers[np.repeat(keep, sizes)]
        picked, sizes = list(compress(picked, keep)), sizes[keep]
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    with table.lock:  # the rows as they are now; a new generation makes new ones, these stay as read
        if table is not text.CHUNK_TABLE:
            picked = []
        chunk_rows, word_rows, size = table.chunks.read(), table.words.read(), len(table.lowers)
    if not picked:
        return repetition_batch(views, cfg.repetition) if cfg.repetition.enabled else grams
    counted = [views[i] for i in picked]

    chunks = chunk_rows[numbers]  # each chunk's fields, in one gather
    filled = sizes > 0  # (reduceat reads one element for an empty segment)
    per_document = np.zeros((len(picked), chunks.shape[1]), np.int64)  # each document's sum of each field
    if len(chunks):
        per_document[filled] = np.add.reduceat(chunks, bounds[:-1][filled], axis=0, dtype=np.int64)
    n_content = per_document[:, text.N_CONTENT]
    # count_sentences across chunks: a chunk that starts with a word starts a sentence when the last chunk before it
    # that has marks leaves a sentence end pending (every document's last entry is a line end, which leaves none)
    setters = np.where(chunks[:, text.SETS] == 1, np.arange(len(chunks)), -1)
    before = np.concatenate([[-1], np.maximum.accumulate(setters)[:-1]]) if len(chunks) else setters
    pending = np.where(before >= 0, chunks[:, text.PENDING][before], 0)
    crossing = _segment_sums(chunks[:, text.LEAD] * pending, bounds)
    sentences = per_document[:, text.SENTENCES] + crossing

    # every word token of the batch, in order: each chunk's run of rows in the table's words
    per_chunk = chunks[:, text.N_CONTENT].astype(np.int64)
    where = np.repeat(chunks[:, text.START] - (np.cumsum(per_chunk) - per_chunk), per_chunk)
    where += np.arange(len(where))
    words = word_rows[where].astype(np.int64)
    rep = cfg.repetition
    tops = ngram_table(tuple(rep.top_ngram_char_frac.items()))
    if rep.enabled and tops and rep.ngram_words_only and not ngram_table(tuple(rep.dup_ngram_char_frac.items())):
        found = top_ngrams_of_ids(words[:, text.WORD], n_content, [n for n, _ in tops], words[:, text.WORD_CHARS])
        for i, v, top in zip(picked, counted, found):
            if v.text:
                grams[i] = top
    elif rep.enabled:  # n-grams of every token, or duplicated n-grams too: from the token lists
        grams = repetition_batch(views, rep)

    # a hint is in a text where one of its chunks holds it (text.hint_mask): the OR of each document's chunks' bits
    hinted = np.zeros(len(picked), np.int64)
    if len(chunks):
        hinted[filled] = np.bitwise_or.reduceat(chunks[:, text.HINTS], bounds[:-1][filled])
    word_counts = _word_counts(table, words[:, text.LOWER], n_content, size, [langs[i] for i in picked], cfg)
    starts, lower_starts = _sentence_starts(chunks, sizes, [v.text[:1].isspace() for v in counted])
    for v, mask, (n, chars, tokens, letters, urls, non_space, letter_chars), sentence_count, counts, *started in zip(
            counted, hinted.tolist(),
            per_document[:, [text.N_CONTENT, text.CONTENT_CHARS, text.N_TOKENS, text.LETTERS, text.URLS, text.CHARS,
                             text.LETTER_CHARS]].tolist(),
            sentences.tolist(), word_counts, starts.tolist(), lower_starts.tolist()):
        lines = v.line_sizes
        v.__dict__.update(phrase_hints=text.hints_of_mask(v, mask), n_content=n, content_chars=chars, n_tokens=tokens,
                          n_letter_words=letters, n_sentences=len(lines) - lines.count(0) + sentence_count,
                          word_counts=counts, url_tokens=urls, char_counts=CharCounts(non_space, letter_chars, *started))
    return grams


class CharCounts(NamedTuple):
    """What ``measure_junk`` counts of a document's characters, counted for its batch from its chunks' entries (a chunk is
    a run of non-whitespace, so the chunks hold every non-space character and every match of SENTENCE_START_FAST_RE
    spans two neighbouring chunks): instead of a pass over the text's bytes per count and the regex's scan of every
    character (~30 us a page: ``bench/quality_cost.py``)."""

    non_space: int  # characters that are not whitespace (str.isspace)
    letters: int  # LETTER_RE's matches
    sentence_starts: int  # SENTENCE_START_FAST_RE's matches
    lower_starts: int  # those whose letter is lower case


def _sentence_starts(chunks: np.ndarray, sizes: np.ndarray, space_first: list[bool]) -> tuple[np.ndarray, np.ndarray]:
    """Each document's matches of SENTENCE_START_FAST_RE, and those whose letter is lower case, from its chunks' rows
    (``chunks``, documents one after another, ``sizes`` each, line ends among them): one per chunk whose last character
    ends a sentence (``text.junk_fields``: the bit for what stands before the chunk, the text's start only for a
    document's first chunk where ``space_first`` is False) followed by a chunk of the same document that begins one."""
    n_docs = len(sizes)
    real = np.flatnonzero(chunks[:, text.CHARS] > 0)  # the chunks, without the line ends
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), sizes)[real]
    ends, begins = chunks[real, text.ENDS], chunks[real, text.BEGINS]
    first = np.ones(len(real), bool)
    np.not_equal(doc[1:], doc[:-1], out=first[1:])
    at_start = first & ~np.array(space_first, bool)[doc] if n_docs else first
    ends_here = np.where(at_start, ends & text.AT_START, ends & text.AFTER_SPACE) > 0
    pairs = ends_here[:-1] & (begins[1:] > 0) & ~first[1:]
    lower = pairs & (begins[1:] == 2)
    return np.bincount(doc[:-1][pairs], minlength=n_docs), np.bincount(doc[:-1][lower], minlength=n_docs)


def _word_counts(table: text.ChunkTable, lowers: np.ndarray, n_content: np.ndarray, size: int,
                 langs: list[str | None], cfg: QualityConfig) -> list[WordCounts]:
    """Each document's ``WordCounts`` from its lower-case words (``lowers``, documents one after another,
    ``n_content`` each): one ``np.unique`` of (document, word) pairs gives every count junk and gopher read."""
    n_docs = len(n_content)
    owner = np.repeat(np.arange(n_docs, dtype=np.int64), n_content)
    pairs, counts = np.unique(owner * max(size, 1) + lowers, return_counts=True)
    doc, word = pairs // max(size, 1), pairs % max(size, 1)
    bounds = np.searchsorted(doc, np.arange(n_docs + 1))  # each document's pairs: sorted by document
    lorem = _segment_sums(counts * _mask(table, "lorem", LOREM_WORDS.__contains__)[word], bounds)

    base = [base_language(lang) for lang in langs]
    junk_stop = [STOP_WORDS.get(b or "", ALL_STOP_WORDS) for b in base]
    long_words = _mask(table, "long", lambda w: len(w) > 2 and not w.isdigit())[word]
    eligible = long_words & ~_in_stop_words(table, junk_stop, doc, word)
    top = np.zeros(n_docs, np.int64)
    np.maximum.at(top, doc[eligible], counts[eligible])

    gopher_stop: list[frozenset[str] | None] = [None] * n_docs
    stop_words = stop_count = np.zeros(n_docs, np.int64)
    if cfg.gopher.enabled and cfg.gopher.stop_words_per_language:
        gopher_stop = [stop_words_for(b, cfg.gopher) for b in base]
        present = _in_stop_words(table, gopher_stop, doc, word)
        stop_words, stop_count = _segment_sums(present, bounds), _segment_sums(counts * present, bounds)
    return [WordCounts(*row) for row in zip(lorem.tolist(), junk_stop, top.tolist(), gopher_stop,
                                            stop_words.tolist(), stop_count.tolist())]


def _in_stop_words(table: text.ChunkTable, stops: list[frozenset[str] | None], doc: np.ndarray,
                   word: np.ndarray) -> np.ndarray:
    """Whether each (document, word) pair's word is in its document's stop words (None: none are)."""
    found = np.zeros(len(word), bool)
    sets: dict[frozenset[str] | None, int] = {}
    which = np.fromiter((sets.setdefault(s, len(sets)) for s in stops), np.int64, len(stops))[doc]
    for stop, k in sets.items():
        if stop is not None:
            mine = which == k
            found[mine] = _mask(table, stop, stop.__contains__)[word[mine]]
    return found


def _mask(table: text.ChunkTable, key, predicate) -> np.ndarray:
    """``predicate`` of each lower-case word of ``table``, by number, remembered per key (words numbered since the
    last call are tested now); under the table's lock, so that two threads do not both test the same words."""
    with table.lock:
        column = table.masks.get(key)
        if column is None:
            if len(table.masks) >= 32:  # stop-word sets of configs with extra words: a few per run
                table.masks.clear()
            column = table.masks[key] = text.GrowingColumn(bool)
        column.items.extend(map(predicate, table.lowers[len(column.items):]))
        return column.read()


def _segment_sums(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """The sums of ``values[bounds[k]:bounds[k + 1]]`` for each k (empty segments: 0)."""
    sums = np.concatenate([[0], np.cumsum(values, dtype=np.int64)])
    return sums[bounds[1:]] - sums[bounds[:-1]]
