"""Line dedup then sentence dedup with one join of the documents instead of two.

``LineDedup`` then ``SentenceDedup`` each join their verdicts back to the documents (a shuffle of every
document, twice). Both decisions can be taken on light records instead, because a sentence never spans a line
(``sentence_split``: a line break always ends a sentence), so the sentence keys of a text after line dedup are
those of its kept lines. (Whether a full stop ends a sentence depends on its own line, but for a stop with only
space before it on its line: ``_ends_sentence`` then reads the previous line's last word. What that stop would
cut off normalises to no words, so the keys are the same either way; tests/pipeline/dedup/test_boilerplate.py.)

    documents -> (id, document), line keys (packed by shard), and per document its lines' light record:
                 (line key, words as line_cents, sentence keys) per line
    line keys -> boilerplate line drops (id, key)                              -- as LineDedup
    light records + line drops, by id -> the kept lines; a document that line dedup leaves too short sends
                 nothing on; the others send their kept lines' sentence keys   -- no document moves
    sentence keys -> boilerplate sentence drops (id, key)                      -- as SentenceDedup
    documents + line drops + sentence drops + repeats, by id -> lines removed (or removed as too short),
                 then sentences removed from what is left (or removed as too short)

Both joins by id are ``CoGroupByKey``s with ``joins: shuffle``; with ``side_input`` the drops are side inputs
looked up per light record and per document (``common.join_verdicts``), and no document is grouped.

The decisions, edits and counts are those of ``LineDedup`` followed by ``SentenceDedup``
(tests/pipeline/dedup/test_boilerplate.py compares the two on a corpus; the build uses this transform when both
are on).
"""
from __future__ import annotations

import array
import itertools
import re
from collections.abc import Sequence
from hashlib import blake2b

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from corpusforge.core.disk_grouping import CoGroupByKey, Flatten, GroupByKey
from corpusforge.pipeline.dedup.common import (
    BATCHES, CARRIED, KEYS, SHUFFLE, STAGE, AsGrouped, HeldDocs, digest64, in_batch, join_mode, join_verdicts,
    node_of, verdict_of,
)
from corpusforge.pipeline.dedup.config import LineDedupConfig, SentenceDedupConfig
from corpusforge.pipeline.dedup.lines import (
    REASON as LINES_REASON, KeysByShard, drop_lines, group_docs, line_key, shard_drops,
)
from corpusforge.pipeline.dedup.sentence_split import sentence_spans, split_sentences
from corpusforge.pipeline.dedup.sentences import (
    HAS_KEY, LAST_OF_LINE, REASON as SENTENCES_REASON, REPEATS, TABLE_TYPECODE, drop_sentences, line_normalized,
)
from corpusforge.pipeline.dedup.text import ascii_word_copy, normalized_bytes, word_parts
from corpusforge.pipeline.spill import SpillWriter, read_bytes
from corpusforge.pipeline.words import ENGLISH_WORD_CENTS, words_for
from corpusforge.pipeline.stage import ERRORS, StageOutputs, guarded

# A byte that starts a character of U+0800 or above in UTF-8. Without one, normalised words hold no character of a
# script written without spaces (every one is U+0E00 or above: corpusforge.pipeline.words.NO_SPACE_BLOCKS), so
# ``word_parts`` would count their spaces plus one (normalised words hold no whitespace): what keyed_lines counts.
_WIDE_CHARACTER = re.compile(rb"[\xe0-\xff]").search

LINES = "lines"  # tagged output: (id, (node, light record of the document's lines))


def line_records(text: str, lang: str | None, line_chars: int, sentence_chars: int) -> list[tuple]:
    """``(line key, words, sentence keys)`` per line of ``text``: ``line_key`` of the line (None when too short
    to count), its normalised words counted as ``line_cents`` (so that kept lines' words add up as line dedup's
    removal counts them), and the keys of its sentences that count (``keyed_sentences``, in order).

    Each sentence's words are normalised once (as ``sentence_words`` does) and a line's words are its
    sentences' words, joined: a sentence but the last of its line ends after whitespace or a CJK terminator
    (``sentence_split``), which separate words, so no word spans two sentences, and neither is case-ignorable,
    so the capital sigma (the one character ``str.lower`` reads in context) lowers the same in its sentence
    as in its line. ``line_records_reference`` is the definition (tests/pipeline/dedup/test_boilerplate.py)."""
    return keyed_lines(text, lang, line_chars, sentence_chars)[0]


def keyed_lines(text: str, lang: str | None, line_chars: int, sentence_chars: int) -> tuple[list[tuple], bytes | None]:
    """``line_records`` of ``text``, and its sentence table (``sentences.TABLE_TYPECODE``: each sentence's span,
    whether it ends its line, its key when it counts, its words); None when a sentence's normalised words hold a
    character of a script written without spaces (``without_sentences`` then splits that text again: such words
    count in hundredths rounded up once for the text left, which no per-sentence count can carry). The removal
    step reads the table (``without_sentences``' ``table``) instead of splitting, normalising and hashing each
    sentence a second time.

    A sentence's words in the table are what ``without_sentences`` adds up for it: the spaces of ASCII words plus
    one; else ``word_parts``' space-delimited words (``word_parts``' parts of the kept sentences add up to the
    parts of their words joined, and with no hundredths those are the count), which are again the spaces plus one
    when every character is below U+0800 (``_WIDE_CHARACTER``: most accented, Greek or Cyrillic text)."""
    _check_min_chars(line_chars, sentence_chars)
    copy = ascii_word_copy(text)
    if copy is not None:
        return _keyed_ascii_lines(normalized_bytes(copy), sentence_spans(text, lang), line_chars, sentence_chars)
    return keyed_lines_by_line(text, lang, line_chars, sentence_chars)


def _check_min_chars(line_chars: int, sentence_chars: int) -> None:
    """Refuse a minimum under one character (``LineDedupConfig.min_line_chars`` and
    ``SentenceDedupConfig.min_sentence_chars`` are >= 1): with 0 a line or sentence of no words would count, the
    empty lines of every document one boilerplate line, and the paths disagreed on it (the whole-text loop left an
    empty line unkeyed, the batch path keyed an empty sentence)."""
    if line_chars < 1 or sentence_chars < 1:
        raise ValueError(f"line and sentence keys need minimums of at least 1 character, got line_chars={line_chars}, "
                         f"sentence_chars={sentence_chars}")


def keyed_lines_by_line(text: str, lang: str | None, line_chars: int,
                        sentence_chars: int) -> tuple[list[tuple], bytes | None]:
    """``keyed_lines`` of any text, each line normalised on its own (``line_normalized``) and a sentence of a line
    that ``ascii_word_copy`` cannot make ASCII alone: what ``keyed_lines`` does where the whole text has a
    character other than ASCII and word separators, and the definition its whole-text path is held equal to
    (tests/pipeline/dedup/test_boilerplate.py)."""
    _check_min_chars(line_chars, sentence_chars)
    norm = None
    records: list[tuple] = []
    keys: list[int] = []
    words: list[bytes] = []
    table: list[int] | None = []
    offset, new_line = 0, True
    # one loop (not sentence_words then word_keys): on an ASCII text, two more passes cost more than they save
    for start, end, last in sentence_spans(text, lang):
        if new_line:  # the first sentence of a line starts the line
            norm, offset = line_normalized(text, start), start
        part = norm[start - offset:end - offset] if norm is not None else normalized_bytes(text[start:end])
        joined = b" ".join(part.split())  # what line_key hashes
        key = None
        if joined:
            words.append(joined)
            if len(joined) >= sentence_chars:  # digest64 inlined (the same value), one call fewer per sentence
                key = int.from_bytes(blake2b(joined, digest_size=8).digest(), "little", signed=True)
                keys.append(key)
        if table is not None:
            if not joined:
                count = 0
            elif joined.isascii() or not _WIDE_CHARACTER(joined):  # ASCII, or accented Latin, Greek, Cyrillic...
                count = joined.count(b" ") + 1  # as without_sentences counts them (word_parts' count, quicker)
            else:
                count, cents = word_parts(joined)
                if cents:  # a no-space script: the text left's count is rounded once, not per sentence
                    table = None
            if table is not None:
                table += (start, end, (LAST_OF_LINE if last else 0) | (HAS_KEY if key is not None else 0), key or 0,
                          count)
        if last:
            joined = b" ".join(words)
            records.append((digest64(joined) if len(joined) >= line_chars else None, line_cents(joined), tuple(keys)))
            keys, words = [], []
        new_line = last
    return records, array.array(TABLE_TYPECODE, table).tobytes() if table is not None else None


def _keyed_ascii_lines(norm: bytes, spans: list[tuple[int, int, bool]], line_chars: int,
                       sentence_chars: int) -> tuple[list[tuple], bytes]:
    """``keyed_lines`` of a text that ``ascii_word_copy`` made ASCII (~95 % of web text), from ``norm``, the
    copy's ``normalized_bytes`` (only ``[a-z0-9 ]``: a sentence's words are its slice's split, their count the
    split's length, and no word count needs ``word_parts``), and the text's ``sentence_spans``. The loop of
    ``keyed_lines`` without its per-sentence checks for other text: a sentence without words writes its table
    row and nothing else (an empty line is one: ~1 line in 2 of web text), and a line of one sentence is keyed
    by that sentence's key when it has one (the same bytes, the same hash: ``digest64``)."""
    records: list[tuple] = []
    table: list[int] = []
    keys: list[int] = []
    words: list[bytes] = []  # the line's sentences' words, joined per sentence
    line_count = 0
    key = None
    for start, end, last in spans:
        parts = norm[start:end].split()
        if not parts:
            table += (start, end, LAST_OF_LINE if last else 0, 0, 0)
            if last:
                if not words:
                    records.append((None, 0, ()))
                    continue
                records.append((_line_key(words, key, line_chars), line_count * ENGLISH_WORD_CENTS, tuple(keys)))
                keys, words, line_count = [], [], 0
            continue
        joined = b" ".join(parts)
        count = len(parts)
        words.append(joined)
        line_count += count
        if len(joined) >= sentence_chars:  # digest64 inlined (the same value), one call fewer per sentence
            key = int.from_bytes(blake2b(joined, digest_size=8).digest(), "little", signed=True)
            keys.append(key)
            table += (start, end, LAST_OF_LINE | HAS_KEY if last else HAS_KEY, key, count)
        else:
            key = None
            table += (start, end, LAST_OF_LINE if last else 0, 0, count)
        if last:
            records.append((_line_key(words, key, line_chars), line_count * ENGLISH_WORD_CENTS, tuple(keys)))
            keys, words, line_count = [], [], 0
    return records, array.array(TABLE_TYPECODE, table).tobytes()


# Where an ASCII-able text's sentences (or lines) end in its normalised bytes, which hold only ``[a-z0-9 ]``: a byte
# no such text holds, so one ``split`` cuts a whole batch's sentences apart (``_keyed_ascii_texts``).
_END = b"|"
_END_BYTE = _END[0]
_SPACE_BYTE = ord(" ")
_BATCH_TEXTS = 16  # fewer ASCII-able texts than this are keyed one by one (_keyed_ascii_lines)
# The most sentences keyed together (_keyed_ascii_texts): it holds arrays, lists and bytes objects for every
# sentence of what it keys at once (~400 bytes a sentence of prose, where the loop holds one text's), and on one-word
# lines its CPU was the loop's at 6.4k sentences but 2.8x at 64k (the cyclic collector's passes over what it holds
# alive: 3.9 against 0.54 us a sentence with the collector off). A text of more sentences is keyed alone by the
# loop; a batch of 64 web documents (~20 sentences each) is one sub-batch, as before (bench/batch_keys.py).
_BATCH_SENTENCES = 4096
# ... and the most text bytes: it holds ~14 bytes a text byte at once (the joined copy, its normalisation, the marked
# array), so 64 texts of 200 KB in a few long sentences each peaked at 179 MB against the loop's 5.4 MB; a text of
# more is keyed alone too. Web prose (~2.4 KB, ~20 sentences) reaches the sentence bound first (~200 documents).
_BATCH_BYTES = 1 << 20


def keyed_lines_many(texts: list[tuple[str, str | None]], line_chars: int,
                     sentence_chars: int) -> list[tuple[list[tuple], bytes | None]]:
    """``keyed_lines`` of each ``(text, lang)`` of a batch, in order. The texts that ``ascii_word_copy`` makes ASCII
    (~95 % of web text) are keyed together in sub-batches of at most ``_BATCH_SENTENCES`` sentences and
    ``_BATCH_BYTES`` characters (``_keyed_ascii_texts``: one normalisation, one split of all their sentences, the
    digests in one comprehension, the table's columns in numpy), so that its work and memory follow a sub-batch's, not
    the batch's (1 MB of one-word lines is 500k sentences); a text of more sentences or bytes, and a sub-batch of fewer than
    ``_BATCH_TEXTS`` texts, one by one (``_keyed_ascii_lines``); the others one by one too (``keyed_lines_by_line``,
    the definition all are held equal to: tests/pipeline/dedup/test_batch_keys.py)."""
    _check_min_chars(line_chars, sentence_chars)
    out: list = [None] * len(texts)
    group: list[tuple[int, str, list]] = []  # (index, ASCII copy, spans) of the texts waiting to be keyed together
    held = held_bytes = 0  # their sentences and characters (an ASCII copy's characters are its bytes)
    for i, (text, lang) in enumerate(texts):
        copy = ascii_word_copy(text)
        if copy is None:
            out[i] = keyed_lines_by_line(text, lang, line_chars, sentence_chars)
            continue
        spans = sentence_spans(text, lang)
        if len(spans) > _BATCH_SENTENCES or len(copy) > _BATCH_BYTES:
            out[i] = _keyed_ascii_lines(normalized_bytes(copy), spans, line_chars, sentence_chars)
            continue
        if held + len(spans) > _BATCH_SENTENCES or held_bytes + len(copy) > _BATCH_BYTES:
            _key_group(group, texts, out, line_chars, sentence_chars)
            group, held, held_bytes = [], 0, 0
        group.append((i, copy, spans))
        held += len(spans)
        held_bytes += len(copy)
    _key_group(group, texts, out, line_chars, sentence_chars)
    return out


def _key_group(group: list[tuple[int, str, list]], texts: list[tuple[str, str | None]], out: list, line_chars: int,
               sentence_chars: int) -> None:
    """Key a sub-batch of ``keyed_lines_many`` (``(index, ASCII copy, spans)`` of each text) into ``out``."""
    if len(group) < _BATCH_TEXTS:  # numpy's fixed cost per call outweighs what it saves
        for i, copy, spans in group:
            out[i] = _keyed_ascii_lines(normalized_bytes(copy), spans, line_chars, sentence_chars)
        return
    where, copies, spans = zip(*group)
    keyed = _keyed_ascii_texts(copies, spans, line_chars, sentence_chars)
    if keyed is None:  # not expected (see _keyed_ascii_texts): the definition's loop, text by text
        keyed = [keyed_lines_by_line(*texts[i], line_chars, sentence_chars) for i in where]
    for i, result in zip(where, keyed):
        out[i] = result


def _pieces(marked: np.ndarray) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """The pieces of ``marked`` (normalised bytes as uint8, ``_END`` where each piece ends, the last byte one) with their
    words joined by single spaces (``b" ".join(piece.split())`` of each), their lengths and word counts. In numpy, no
    bytes object per word: a space stays after a word's byte (the first of a run), then goes where an ``_END``
    follows it; ~0.5x the time of that split and join over the whole batch (bench/sentence_dedup.py)."""
    space = marked == _SPACE_BYTE
    keep = ~space
    keep[1:] |= keep[:-1] & (marked[:-1] != _END_BYTE)  # the first space after a word
    data = marked[keep]
    space = data[:-1] == _SPACE_BYTE
    keep = np.ones(len(data), bool)
    keep[:-1] = ~(space & (data[1:] == _END_BYTE))  # a space before an _END (the last byte is one)
    data = data[keep]
    ends = np.flatnonzero(data == _END_BYTE)
    lengths = np.diff(ends, prepend=-1) - 1
    # each piece's spaces, summed over the piece and its _END (an empty piece's sum is its _END's, 0)
    spaces = np.add.reduceat(data == _SPACE_BYTE, np.append(0, ends[:-1] + 1), dtype=np.int64)
    words = spaces + (lengths > 0)
    return data.tobytes().split(_END)[:-1], lengths, words


def _digests(pieces: list[bytes], counts: np.ndarray) -> np.ndarray:
    """``digest64`` of each piece where ``counts`` (booleans, one per piece) is true, 0 elsewhere: the digests joined
    and read as little-endian signed 64-bit numbers at once (``int.from_bytes`` of each, in one call)."""
    keys = np.zeros(len(pieces), np.int64)
    # a comprehension: ~0.9 us a digest, where a map over functools.partial(blake2b, digest_size=8) took ~1.03
    digests = [blake2b(piece, digest_size=8).digest() for piece in itertools.compress(pieces, counts.tolist())]
    keys[counts] = np.frombuffer(b"".join(digests), "<i8")
    return keys


def _keyed_ascii_texts(copies: Sequence[str], spans: Sequence[list[tuple[int, int, bool]]], line_chars: int,
                       sentence_chars: int) -> list[tuple[list[tuple], bytes]] | None:
    """``keyed_lines`` of texts that ``ascii_word_copy`` made ASCII (``copies``; ``spans``: each text's
    ``sentence_spans``), all at once: the copies are joined by a space and normalised once (``normalized_bytes`` of
    ASCII is per character); the byte where each sentence ends becomes ``_END`` (for a sentence that ends its line
    the line's ``\\n``, or the space after the text; for another its last byte, whitespace that a terminator run or a
    colon run needs after it in an ASCII-able text, a space once normalised, so no word loses a byte), and one split
    of the whole gives every sentence's words, joined; lines alike with an ``_END`` where each line ends. Per
    sentence no Python bytecode runs: lengths and word counts are numpy's, digests a ``map`` of C calls. None when a
    sentence that does not end its line does not end in a space (never, by the above)."""
    counts = [len(text_spans) for text_spans in spans]
    starts, ends, lasts = zip(*itertools.chain.from_iterable(spans))
    starts, ends, last = np.array(starts, np.int64), np.array(ends, np.int64), np.array(lasts, bool)
    lengths = np.fromiter(map(len, copies), np.int64, len(copies))
    offsets = np.repeat(np.cumsum(lengths + 1) - (lengths + 1), counts)  # each text's offset, per sentence
    norm = normalized_bytes(" ".join(copies) + " ")
    at = offsets + np.where(last, ends, ends - 1)
    marked = np.frombuffer(norm, np.uint8).copy()
    if not (marked[at[~last]] == _SPACE_BYTE).all():
        return None
    marked[at] = _END_BYTE
    sentences, sentence_lengths, words = _pieces(marked)
    has_key = sentence_lengths >= sentence_chars
    keys = _digests(sentences, has_key)
    flags = last * LAST_OF_LINE | has_key * HAS_KEY
    table = np.stack([starts, ends, flags, keys, words], axis=1).astype(np.dtype(TABLE_TYPECODE), copy=False)
    first = np.concatenate(([0], np.flatnonzero(last)[:-1] + 1))  # each line's first sentence
    keyed_in_line = np.add.reduceat(has_key.astype(np.int64), first)
    with_words = sentence_lengths > 0
    worded = np.add.reduceat(with_words.astype(np.int64), first)
    # a line's words are its sentences' words joined by single spaces (no word spans two sentences)
    line_lengths = np.add.reduceat(sentence_lengths, first) + np.maximum(worded - 1, 0)
    line_words = np.add.reduceat(words, first)
    counted = line_lengths >= line_chars
    # a line of one sentence with words is that sentence: its key, when it has one, is the line's (the same digest64)
    alone = (worded == 1) & (keyed_in_line == 1)
    line_keys = np.add.reduceat(keys, first)  # (used where alone: the one key of the line)
    joined = (counted & ~alone).nonzero()[0]
    if len(joined):
        bounds = np.append(first, len(sentences))
        lines = [b" ".join(filter(None, sentences[a:b])) for a, b in zip(bounds[joined].tolist(),
                                                                        bounds[joined + 1].tolist())]
        line_keys[joined] = _digests(lines, np.ones(len(lines), bool))
    line_keys = [key if count else None for key, count in zip(line_keys.tolist(), counted.tolist())]
    keyed = keys[has_key].tolist()
    bounds = np.cumsum(keyed_in_line).tolist()
    records = list(zip(line_keys, (line_words * ENGLISH_WORD_CENTS).tolist(),
                       [tuple(keyed[a:b]) for a, b in zip([0] + bounds, bounds)]))
    line_bounds = np.cumsum(np.add.reduceat(last.astype(np.int64), np.cumsum(counts) - counts)).tolist()
    sentence_bounds = np.cumsum(counts).tolist()
    return [(records[a:b], table[c:d].tobytes()) for a, b, c, d in
            zip([0] + line_bounds, line_bounds, [0] + sentence_bounds, sentence_bounds)]


def _line_key(words: list[bytes], key: int | None, line_chars: int) -> int | None:
    """A line's key from its sentences' normalised words (``line_key``'s value); ``key``: its last sentence's key."""
    joined = words[0] if len(words) == 1 else b" ".join(words)
    if len(joined) < line_chars:
        return None
    # a line of one sentence is that sentence: its key, when it has one, is the line's (the same digest64)
    return key if key is not None and len(words) == 1 else digest64(joined)


def line_records_reference(text: str, lang: str | None, line_chars: int, sentence_chars: int) -> list[tuple]:
    """The definition of ``line_records``: each line keyed, counted and split into sentences on its own, each
    sentence keyed alone."""
    def sentence_keys_of(line: str) -> tuple:
        keys = (line_key(sentence, sentence_chars) for part in split_sentences(line, lang) for sentence in part)
        return tuple(key for key in keys if key is not None)

    return [(line_key(part, line_chars), line_cents(b" ".join(normalized_bytes(part).split())), sentence_keys_of(part))
            for part in text.split("\n")]


def line_cents(normalized: bytes) -> int:
    """A line's words (``count_words``' parts of its normalised words) as one number that adds up across lines: its
    space-delimited words times ``ENGLISH_WORD_CENTS``, plus the hundredths its no-space-script characters stand for.
    The words of lines kept are ``words_for(0, sum)`` (``count_words`` of their text, rounded once): a plain
    word count per line put a line of Chinese at one word, where line dedup's removal counts its characters, and
    the one join sent no sentence keys of documents it kept (other sentence drops than LineDedup then SentenceDedup)."""
    if not normalized:
        return 0
    if normalized.isascii() or not _WIDE_CHARACTER(normalized):
        return (normalized.count(b" ") + 1) * ENGLISH_WORD_CENTS
    others, cents = word_parts(normalized)
    return others * ENGLISH_WORD_CENTS + cents


def sentence_keys_after_lines(records: list[tuple], drop: set[int], min_words: int) -> tuple[list[int], bool] | None:
    """The sentence keys of the lines that line dedup keeps (``records``: ``line_records``; ``drop``: its
    dropped line keys), or None when it removes the document as too short (the rule of ``_RemoveLinesFn``)."""
    if drop:  # most documents lose no line: their records are all kept
        kept = [record for record in records if record[0] is None or record[0] not in drop]
        if len(kept) < len(records) and words_for(0, sum(cents for _, cents, _ in kept)) < min_words:
            return None
    else:
        kept = records
    keys: list[int] = []
    for record in kept:  # += of each line's tuple: ~half a comprehension's time over its keys
        keys += record[2]
    return keys


class _KeysFn(KeysByShard):
    """A document (or, ``batched``, a list of them) -> its ``(line key, node)`` records (packed, tagged KEYS) and
    the document with its sentence table (the table of ``keyed_lines``, which the removal reads instead of
    splitting the text again): for the shuffle join (``keyed``) ``(id, (document, table))`` and
    ``(id, (node, line_records))`` tagged LINES; for the side-input join lists of ``(document, table)``
    (``HeldDocs``) and one list of ``(id, (node, line_records))`` per element tagged LINES; for the batch join
    (``by_batch``) ``(batch key, list of (document, table))`` (``HeldDocs(keyed=True)``), nodes that name the batch,
    and one list of ``(batch key, (id, (node, line_records)))`` per element tagged LINES. With a ``spill_dir`` the tables (~40 bytes a sentence, several times a spilled
    document's own record) wait in a spill file, one write per element, and a reference goes with each
    document."""

    def __init__(self, lines: LineDedupConfig, sentences: SentenceDedupConfig, score_key: str, keyed: bool = True,
                 batched: bool = False, spill_dir: str | None = None, by_batch: bool = False):
        self.lines, self.sentences, self.score_key, self.keyed = lines, sentences, score_key, keyed
        self.batched, self.spill_dir = batched, spill_dir
        # batches joins: the documents wait in keyed batches (HeldDocs(keyed=True)), their nodes name the batch,
        # and the light records go as one list an element of (batch key, (id, (node, line_records)))
        self.by_batch = by_batch
        # the shuffle and batch joins carry a table only as a spill reference: inline (~40 bytes a sentence) it would
        # add a third to every shuffled document of a runner that shuffles texts (Dataflow, Spark, Flink, Dask);
        # without one, a batch holds (document, None) and the removal splits the text again
        self.carries = spill_dir is not None or (not keyed and not by_batch)

    def setup(self):
        self.spill = SpillWriter(self.spill_dir, ".sentences") if self.spill_dir else None

    def teardown(self):
        if self.spill is not None:
            self.spill.close()

    def start_bundle(self):
        super().start_bundle()
        # a retried bundle's processor may hold documents of the failed attempt: every bundle starts empty
        self.held_docs = HeldDocs(keyed=self.by_batch)

    def process(self, element):
        line_chars, sentence_chars = self.lines.min_line_chars, self.sentences.min_sentence_chars
        docs = element if self.batched else [element]
        keyed = keyed_lines_many([(doc.text, doc.annotations.get("lang")) for doc in docs], line_chars, sentence_chars)
        computed = [(doc, node_of(doc, self.score_key), records, table) for doc, (records, table) in zip(docs, keyed)]
        if self.spill is not None:  # one write for the element's tables, a record of it for each document
            tables = [table for _, _, _, table in computed if table is not None]
            if tables:
                refs = iter(self.spill.write_many(tables))
                computed = [(doc, node, records, None if table is None else next(refs))
                            for doc, node, records, table in computed]
        # Nothing below raises on a document's content: a batch that raised added and held nothing (it is
        # retried document by document).
        out, lines = [], []
        for doc, node, records, table in computed:
            if not self.keyed:
                out += self.held_docs.hold((doc, table if self.carries else None))
                if self.by_batch:
                    node = in_batch(node, self.held_docs.key)
            out += self.add(list({key for key, _, _ in records if key is not None}), node)
            if self.by_batch:
                lines.append((node[3], (doc.id, (node, records))))
            else:
                lines.append((doc.id, (node, records)))
            if self.keyed:
                out.append((doc.id, (doc, table)) if self.carries else (doc.id, doc))
        if self.keyed:
            out += [beam.pvalue.TaggedOutput(LINES, record) for record in lines]
        else:
            out.append(beam.pvalue.TaggedOutput(LINES, lines))
        return out

    def finish_bundle(self):
        yield from super().finish_bundle()
        yield from self.held_docs.rest()
        if self.spill is not None:
            self.spill.close()


class _SentenceKeysFn(KeysByShard):
    """``(id, {"lines": [(node, records)], "drop": [line keys]})`` -> the ``(sentence key, node)`` records of
    what line dedup keeps (packed, tagged KEYS), and ``(id, True)`` tagged REPEATS when a kept sentence recurs."""

    def __init__(self, lines: LineDedupConfig, sentences: SentenceDedupConfig):
        self.lines, self.sentences = lines, sentences

    def process(self, item):
        doc_id, grouped = item
        yield from self.sentence_keys(doc_id, grouped["lines"], grouped["drop"])

    def sentence_keys(self, doc_id, lines, drops):
        drop = set(drops)
        for node, records in lines:
            keys = sentence_keys_after_lines(records, drop, self.lines.min_words)
            if keys is None:
                continue
            distinct = set(keys)
            yield from self.add(distinct, node)  # add iterates it once, in the order list(distinct) has
            if len(distinct) < len(keys) and self.sentences.collapse_repeats:
                # (id, True); (batch key, (id, True)) for a node that names its batch (its id is doc_id either way)
                yield beam.pvalue.TaggedOutput(REPEATS, verdict_of(node, True))


class _SentenceKeysBySideInputFn(_SentenceKeysFn):
    """A list of ``(id, (node, records))`` and the line drops by id (a side input) -> what ``_SentenceKeysFn``
    yields for the group of each id. The same records for documents sharing an id: each one's keys are those of
    its own records with the id's drops, as in the group."""

    def process(self, items, drops_by_id):
        for doc_id, lines in items:
            yield from self.sentence_keys(doc_id, [lines], drops_by_id.get(doc_id, ()))


class _SentenceKeysByBatchFn(_SentenceKeysFn):
    """``(batch key, {"lines": [(id, (node, records))...], "drop": [(id, line key)...]})``, a batch's light records
    and line drops -> what ``_SentenceKeysFn`` yields for the group of each id (ids are unique in a batch join)."""

    def process(self, item):
        _, grouped = item
        drops: dict = {}
        for doc_id, key in grouped["drop"]:
            drops.setdefault(doc_id, []).append(key)
        for doc_id, lines in grouped["lines"]:
            yield from self.sentence_keys(doc_id, [lines], drops.get(doc_id, ()))


class _RemoveFn(beam.DoFn):
    """``(id, {"doc": [...], "lines": [line keys], "sentences": [sentence keys], "repeats": [True]})`` -> the
    document with its boilerplate lines then sentences removed, or its removal (``lines.drop_lines`` then
    ``sentences.drop_sentences``, the steps of ``LineDedup`` and ``SentenceDedup``)."""

    # A lone document without drops or repeats comes out as it went in, counting nothing (and nothing of it can
    # raise here): the side-input join passes it on without building its group (common._JoinBySideInput).
    keeps_unjudged = True

    def __init__(self, lines: LineDedupConfig, sentences: SentenceDedupConfig):
        self.lines, self.sentences = lines, sentences
        self.lines_too_short = Metrics.counter(STAGE, LINES_REASON)
        self.sentences_too_short = Metrics.counter(STAGE, SENTENCES_REASON)

    def process(self, item):
        _, grouped = item
        line_drop, sentence_drop = set(grouped["lines"]), set(grouped["sentences"])
        repeats = bool(list(grouped["repeats"]))
        docs, tables = list(grouped["doc"]), grouped.get(CARRIED) or ()
        for i, doc in enumerate(docs):
            # its sentence table (keyed_lines; bytes, a spill reference or None) when the join carried it
            table = tables[i] if len(tables) == len(docs) else None
            if line_drop and (sentence_drop or repeats):  # both read the text: a spilled one from disk once
                doc = doc.loaded()
            text_of_table = doc
            if line_drop:
                doc = yield from drop_lines(doc, line_drop, self.lines, self.lines_too_short)
            if doc is not None and (sentence_drop or repeats):
                if doc is not text_of_table:  # a line went: the table is of the text before
                    table = None
                elif isinstance(table, tuple):
                    table = read_bytes(table)
                doc = yield from drop_sentences(doc, sentence_drop, self.sentences, self.sentences_too_short, table)
            if doc is not None:
                yield doc


class LineAndSentenceDedup(beam.PTransform):
    """``LineDedup`` then ``SentenceDedup`` (same decisions) with one join of the documents; returns
    ``StageOutputs`` with edits."""

    def __init__(self, lines: LineDedupConfig | None = None, sentences: SentenceDedupConfig | None = None,
                 score_key: str = "quality_score", fail_fast: bool = False, joins: str = SHUFFLE,
                 spill_dir: str | None = None):
        """``joins``: how the light records and then the documents are joined with the drops (``shuffle``,
        ``side_input`` or ``batches``, ``common.join_verdicts``); ``shared_ids``: the stage's ``SharedIds``, when it
        has one. ``spill_dir``: a local directory every worker can read, where the sentence tables wait (carried as
        references to the removal; without one, only the side-input join carries them, in memory)."""
        super().__init__()
        self.lines, self.sentences = lines or LineDedupConfig(), sentences or SentenceDedupConfig()
        self.score_key, self.fail_fast, self.spill_dir = score_key, fail_fast, spill_dir
        self.joins, self.shared_ids = join_mode(joins, direct_runner=False), None  # auto: no build, shuffle
        # its input is lists of documents (near-dedup's kept_lists; side-input and batch joins): the stage sets it
        self.docs_in_lists = False

    def expand(self, docs) -> StageOutputs:
        lines, sentences, shuffle = self.lines, self.sentences, self.joins == SHUFFLE
        by_batch = self.joins == BATCHES
        if self.docs_in_lists and shuffle:
            raise ValueError("LineAndSentenceDedup.docs_in_lists needs the side_input or batches join")
        keys = guarded(_KeysFn(lines, sentences, self.score_key, keyed=shuffle, batched=self.docs_in_lists,
                               spill_dir=self.spill_dir, by_batch=by_batch),
                       STAGE, self.fail_fast, batched=self.docs_in_lists)
        keyed = docs | "BoilerplateKeys" >> beam.ParDo(keys).with_outputs(KEYS, LINES, ERRORS, main="docs")
        # With side-input joins each key shard's drops go on as one list, read as a side input (AsGrouped) by the
        # sentence keys and by the removal alike: not one Beam element per drop (~5 a document on web text); with
        # batch joins as one list too, (batch key, (id, key)) records a listed input of the joins by batch key.
        line_drops = (
            keyed[KEYS]
            | "LinesGroup" >> GroupByKey()
            | "LinesBoilerplate" >> beam.FlatMap(shard_drops(lines.max_occurrences, listed=not shuffle))
        )
        if by_batch:
            return self._by_batch(keyed, line_drops)
        # Light records only: no document is in this join (nothing in it can raise on a document's content).
        if shuffle:
            sentence_keys = (
                {"lines": keyed[LINES], "drop": line_drops}
                | "LinesJoinRecords" >> CoGroupByKey()
                | "SentencesKeys" >> beam.ParDo(_SentenceKeysFn(lines, sentences)).with_outputs(KEYS, REPEATS, main="none")
            )
        else:
            line_drops = AsGrouped.of(line_drops, "LinesPackDrops", lists=True)
            sentence_keys = keyed[LINES] | "SentencesKeys" >> beam.ParDo(
                _SentenceKeysBySideInputFn(lines, sentences), line_drops
            ).with_outputs(KEYS, REPEATS, main="none")
        sentence_drops = (
            sentence_keys[KEYS]
            | "SentencesGroup" >> GroupByKey()
            | "SentencesBoilerplate" >> beam.FlatMap(
                shard_drops(sentences.max_occurrences, "boilerplate_sentences", listed=not shuffle))
        )
        if not shuffle:
            sentence_drops = AsGrouped.of(sentence_drops, "BoilerplatePackSentences", lists=True)
        remove = guarded(_RemoveFn(lines, sentences), STAGE, self.fail_fast, records=group_docs)
        outputs = join_verdicts(
            keyed.docs, {"lines": line_drops, "sentences": sentence_drops, "repeats": sentence_keys[REPEATS]}, remove,
            "Boilerplate", self.joins, self.shared_ids, join_label="BoilerplateJoin", apply_label="BoilerplateRemove",
            keyed=shuffle, batched=not shuffle, with_edits=True, with_errors=True,
            carried=self.spill_dir is not None or not shuffle)  # as _KeysFn.carries
        errors = (keyed[ERRORS], outputs.errors) | "BoilerplateErrors" >> Flatten()
        return outputs._replace(errors=errors)

    def _by_batch(self, keyed, line_drops) -> StageOutputs:
        """The joins by batch key (``batches``): each batch's light records with its line drops (one group a
        batch), then its documents with its line and sentence drops and repeats (one group a batch)."""
        lines, sentences = self.lines, self.sentences
        sentence_keys = (
            {"lines": keyed[LINES], "drop": line_drops}
            | "LinesJoinRecords" >> CoGroupByKey(listed=("lines", "drop"))
            | "SentencesKeys" >> beam.ParDo(_SentenceKeysByBatchFn(lines, sentences)).with_outputs(KEYS, REPEATS,
                                                                                                   main="none")
        )
        sentence_drops = (
            sentence_keys[KEYS]
            | "SentencesGroup" >> GroupByKey()
            | "SentencesBoilerplate" >> beam.FlatMap(
                shard_drops(sentences.max_occurrences, "boilerplate_sentences", listed=True))
        )
        remove = guarded(_RemoveFn(lines, sentences), STAGE, self.fail_fast, records=group_docs)
        outputs = join_verdicts(
            keyed.docs, {"lines": line_drops, "sentences": sentence_drops, "repeats": sentence_keys[REPEATS]}, remove,
            "Boilerplate", BATCHES, join_label="BoilerplateJoin", apply_label="BoilerplateRemove", with_edits=True,
            with_errors=True, carried=True, listed=("lines", "sentences"))
        errors = (keyed[ERRORS], outputs.errors) | "BoilerplateErrors" >> Flatten()
        return outputs._replace(errors=errors)
