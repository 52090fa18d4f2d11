"""Sentence-level deduplication: boilerplate sentences repeated across documents, even inside a line.

Line dedup misses a sentence such as "This article first appeared in ... and is reprinted with permission."
when it shares its line with the article's own text. This step cuts documents into sentences
(``sentence_split``, by the language the quality stage annotated), and works as line dedup does
(``lines.py``): a sentence found in more than ``max_occurrences`` documents (compared after normalisation) is
removed from every document that holds it except the best-ranked one, and a sentence repeated inside a
document is kept only where it first appears. A document that lost sentences and has fewer than
``min_words`` words left is removed (reason ``sentence_dedup_too_short``).
"""
from __future__ import annotations

import array
from hashlib import blake2b

import apache_beam as beam
from apache_beam.metrics import Metrics

from corpusforge.core.disk_grouping import CoGroupByKey, Flatten, GroupByKey
from corpusforge.pipeline.dedup.common import KEYS, STAGE, digest64, node_of
from corpusforge.pipeline.dedup.config import SentenceDedupConfig
from corpusforge.pipeline.dedup.lines import KeysByShard, group_docs, line_key, shard_drops
from corpusforge.pipeline.dedup.sentence_split import sentence_spans, split_sentences
from corpusforge.pipeline.dedup.text import ascii_word_copy, count_words, normalized_bytes, word_parts
from corpusforge.pipeline.words import words_for
from corpusforge.pipeline.stage import EDITS, ERRORS, REMOVED, StageOutputs, edit, guarded, removal, split_outputs

REASON = "sentence_dedup_too_short"
REPEATS = "repeats"  # tagged output: ids of documents that repeat a sentence of their own


def sentence_keys_reference(text: str, lang: str | None, min_chars: int) -> tuple[set[int], bool]:
    """The definition of ``sentence_keys``: each sentence of ``split_sentences`` keyed by ``line_key``."""
    keys, repeats = set(), False
    for line in split_sentences(text, lang):
        for sentence in line:
            key = line_key(sentence, min_chars)
            if key is None:
                continue
            repeats = repeats or key in keys
            keys.add(key)
    return keys, repeats


def line_normalized(text: str, start: int) -> bytes | None:
    """``normalized_bytes`` of the line of ``text`` that starts at ``start``, to be sliced per sentence, when
    ``ascii_word_copy`` can make the line ASCII; None when not (each of its sentences is normalised alone)."""
    stop = text.find("\n", start)
    line = ascii_word_copy(text[start:] if stop < 0 else text[start:stop])
    return normalized_bytes(line) if line is not None else None


def sentence_words(text: str, spans: list[tuple[int, int, bool]]) -> list[bytes]:
    """The normalised words of each sentence of ``text`` (``spans``: ``sentence_spans``), joined by single
    spaces: what ``line_key`` hashes.

    A text that ``ascii_word_copy`` can make ASCII (most web text: its only non-ASCII characters quotes and
    dashes) is normalised once and sliced: lower case and ``normalized_bytes``' byte table act on each ASCII
    character alone, so a slice of the normalised copy has the sentence's words. Else each line that it can
    make ASCII is normalised once and sliced, and a sentence of any other line is normalised alone (lower
    case is not per character there: the capital sigma)."""
    copy = ascii_word_copy(text)
    if copy is not None:
        norm = normalized_bytes(copy)
        return [b" ".join(norm[start:end].split()) for start, end, _ in spans]
    words, norm, offset, new_line = [], None, 0, True
    for start, end, last in spans:
        if new_line:  # the first sentence of a line starts the line
            norm, offset = line_normalized(text, start), start
        part = norm[start - offset:end - offset] if norm is not None else normalized_bytes(text[start:end])
        words.append(b" ".join(part.split()))
        new_line = last
    return words


def word_keys(words: list[bytes], min_chars: int) -> list[int | None]:
    """``digest64`` of each of ``words`` (``sentence_words``), None for one shorter than ``min_chars``: the
    sentences' ``line_key``s, in one comprehension (``digest64`` inlined: the same value)."""
    return [int.from_bytes(blake2b(joined, digest_size=8).digest(), "little", signed=True) if len(joined) >= min_chars else None
            for joined in words]


def keyed_sentences(text: str, lang: str | None, min_chars: int) -> list[tuple[int, int, bool, int | None]]:
    """``(start, end, last of its line, key)`` per sentence (``sentence_spans``); the key is ``line_key`` of
    the sentence (``sentence_words``, ``word_keys``; ``keyed_sentences_reference`` is the definition)."""
    spans = sentence_spans(text, lang)
    keys = word_keys(sentence_words(text, spans), min_chars)
    return [(start, end, last, key) for (start, end, last), key in zip(spans, keys)]


def keyed_sentences_reference(text: str, lang: str | None, min_chars: int,
                              normalized: bytes | None = None) -> list[tuple[int, int, bool, int | None]]:
    """``keyed_sentences`` as it was, one loop per sentence: an ASCII text, or else each ASCII line, is
    normalised once and sliced; a sentence of a line with a non-ASCII character is normalised alone
    (``normalized``: ``normalized_bytes(text)`` of an ASCII text, when the caller has it)."""
    whole = text.isascii()
    if whole:
        norm = normalized if normalized is not None else normalized_bytes(text)
    keyed, offset, new_line = [], 0, not whole
    for start, end, last in sentence_spans(text, lang):
        if new_line:  # the first sentence of a line starts the line
            stop = text.find("\n", start)
            line = text[start:] if stop < 0 else text[start:stop]
            norm, offset = (normalized_bytes(line), start) if line.isascii() else (None, start)
        if norm is None:
            key = line_key(text[start:end], min_chars)
        else:
            words = b" ".join(norm[start - offset:end - offset].split())
            # digest64 inlined (the same value), one Python call fewer per sentence
            key = int.from_bytes(blake2b(words, digest_size=8).digest(), "little", signed=True) if len(words) >= min_chars else None
        keyed.append((start, end, last, key))
        new_line = last and not whole
    return keyed


def sentence_keys(text: str, lang: str | None, min_chars: int) -> tuple[set[int], bool]:
    """The distinct keys of the sentences of ``text`` that count, and whether one of them recurs in it."""
    keys = [key for key in word_keys(sentence_words(text, sentence_spans(text, lang)), min_chars) if key is not None]
    distinct = set(keys)
    return distinct, len(distinct) < len(keys)


def remove_sentences(text: str, lang: str | None, drop: set[int], min_chars: int,
                     collapse: bool = True) -> tuple[str, int, int]:
    """``text`` without the sentences whose key is in ``drop`` and (``collapse``) a sentence's later repeats; how
    many sentences went for each reason (``removed``, ``collapsed``). A line left empty goes too."""
    return without_sentences(text, lang, drop, min_chars, collapse)[:3]


# A sentence table (``boilerplate.keyed_lines``): five signed 64-bit numbers per sentence of a text, in order,
# packed as bytes (one Beam value, no object per sentence): start, end, flags (LAST_OF_LINE, HAS_KEY), key, words.
TABLE_TYPECODE = "q"
LAST_OF_LINE, HAS_KEY = 1, 2


def without_sentences(text: str, lang: str | None, drop: set[int], min_chars: int,
                      collapse: bool = True, table: bytes | None = None) -> tuple[str, int, int, int]:
    """``remove_sentences``' text and counts, and the normalised words left in that text: the kept sentences'
    words, counted as they go, which are the words of the text they make up (``line_records`` says why),
    instead of normalising that text again. One loop over the sentences, normalised as ``sentence_words``
    does: on an ASCII text, a list of words and one of keys first cost more than they save.

    ``table``: the text's sentence table (``boilerplate.keyed_lines`` made it for this text, language and
    ``min_chars``), when the caller has it: the sentences are then neither split, normalised nor hashed again
    (``without_sentences_in_table``)."""
    if table is not None:
        return without_sentences_in_table(text, table, drop, collapse)
    copy = ascii_word_copy(text)
    norm = normalized_bytes(copy) if copy is not None else None
    seen: set[int] = set()
    lines, removed, collapsed, left, other_words = [], 0, 0, 0, []
    line_start, kept, whole, offset, new_line = 0, [], True, 0, copy is None
    for start, end, last in sentence_spans(text, lang):
        if new_line:  # the first sentence of a line starts the line
            norm, offset = line_normalized(text, start), start
        part = norm[start - offset:end - offset] if norm is not None else normalized_bytes(text[start:end])
        joined = b" ".join(part.split())
        key = int.from_bytes(blake2b(joined, digest_size=8).digest(), "little", signed=True) if len(joined) >= min_chars else None
        if key is not None and key in drop:
            removed += 1
            whole = False
        elif collapse and key is not None and key in seen:
            collapsed += 1
            whole = False
        else:
            kept.append(text[start:end])
            if joined:
                if joined.isascii():
                    left += joined.count(b" ") + 1
                else:  # counted at the end, together (their parts add up: pipeline/words.py)
                    other_words.append(joined)
            if key is not None:
                seen.add(key)
        if last:
            if whole:
                lines.append(text[line_start:end])
            elif kept:
                lines.append("".join(kept).rstrip())
            line_start, kept, whole = end + 1, [], True
        new_line = last and copy is None
    if other_words:  # the kept sentences' non-ASCII words, counted at once: one decode, one script test
        others, cents = word_parts(b" ".join(other_words))
        left += words_for(others, cents)
    return "\n".join(lines), removed, collapsed, left


def without_sentences_in_table(text: str, table: bytes, drop: set[int],
                               collapse: bool = True) -> tuple[str, int, int, int]:
    """``without_sentences`` of ``text`` from its sentence table (``TABLE_TYPECODE``): the same decisions on the
    same spans, keys and word counts, read instead of computed (``without_sentences_in_table_reference`` is the
    definition). One pass over the table's numbers five at a time (no list per sentence), a sentence that goes
    settles its line at once and skips the rest; ~0.8x the reference's time on the bench corpus, where about
    half of a table's sentences go."""
    it = iter(array.array(TABLE_TYPECODE, table).tolist())
    seen: set[int] = set()
    lines, removed, collapsed, left = [], 0, 0, 0
    line_start, kept, whole = 0, [], True
    for start, end, flags, key, words in zip(it, it, it, it, it):
        if flags & HAS_KEY:
            if key in drop:
                removed += 1
                whole = False
                if flags & LAST_OF_LINE:  # the line ends with a sentence that goes
                    if kept:
                        lines.append("".join(kept).rstrip())
                        kept = []
                    line_start, whole = end + 1, True
                continue
            if collapse:
                if key in seen:
                    collapsed += 1
                    whole = False
                    if flags & LAST_OF_LINE:
                        if kept:
                            lines.append("".join(kept).rstrip())
                            kept = []
                        line_start, whole = end + 1, True
                    continue
                seen.add(key)
        left += words
        if flags & LAST_OF_LINE:
            if whole:
                lines.append(text[line_start:end])
            else:
                kept.append(text[start:end])
                lines.append("".join(kept).rstrip())
            kept = []
            line_start, whole = end + 1, True
        else:
            kept.append(text[start:end])
    return "\n".join(lines), removed, collapsed, left


def without_sentences_in_table_reference(text: str, table: bytes, drop: set[int],
                                         collapse: bool = True) -> tuple[str, int, int, int]:
    """The definition of ``without_sentences_in_table``: one loop over the table's sentences, as
    ``without_sentences`` loops over the text's."""
    numbers = array.array(TABLE_TYPECODE, table).tolist()
    seen: set[int] = set()
    lines, removed, collapsed, left = [], 0, 0, 0
    line_start, kept, whole = 0, [], True
    for i in range(0, len(numbers), 5):
        start, end, flags, key, words = numbers[i:i + 5]
        if flags & HAS_KEY and key in drop:
            removed += 1
            whole = False
        elif collapse and flags & HAS_KEY and key in seen:
            collapsed += 1
            whole = False
        else:
            kept.append(text[start:end])
            left += words
            if flags & HAS_KEY:
                seen.add(key)
        if flags & LAST_OF_LINE:
            if whole:
                lines.append(text[line_start:end])
            elif kept:
                lines.append("".join(kept).rstrip())
            line_start, kept, whole = end + 1, [], True
    return "\n".join(lines), removed, collapsed, left


def remove_sentences_reference(text: str, lang: str | None, drop: set[int], min_chars: int,
                               collapse: bool = True) -> tuple[str, int, int]:
    """The definition of ``remove_sentences``, on ``split_sentences`` and ``line_key``."""
    seen: set[int] = set()
    lines, removed, collapsed = [], 0, 0
    for sentences in split_sentences(text, lang):
        kept = []
        for sentence in sentences:
            key = line_key(sentence, min_chars)
            if key is not None and key in drop:
                removed += 1
            elif collapse and key is not None and key in seen:
                collapsed += 1
            else:
                kept.append(sentence)
                if key is not None:
                    seen.add(key)
        if len(kept) == len(sentences):
            lines.append("".join(sentences))
        elif kept:
            lines.append("".join(kept).rstrip())
    return "\n".join(lines), removed, collapsed


def without_sentences_reference(text: str, lang: str | None, drop: set[int], min_chars: int, collapse: bool = True,
                                table: bytes | None = None) -> tuple[str, int, int, int]:
    """The definition of ``without_sentences``: ``remove_sentences_reference``, then the text left normalised
    (``table`` is not read: the reference splits the text again)."""
    left, removed, collapsed = remove_sentences_reference(text, lang, drop, min_chars, collapse)
    return left, removed, collapsed, count_words(normalized_bytes(left))


class _SentenceKeysFn(KeysByShard):
    """A document -> ``(id, document)``; its ``(sentence key, node)`` records for each of its sentences that
    count (packed by shard, tagged KEYS); ``(id, True)`` tagged REPEATS when it repeats a sentence of its own."""

    def __init__(self, config: SentenceDedupConfig, score_key: str):
        self.config, self.score_key = config, score_key

    def process(self, doc):
        keys, repeats = sentence_keys(doc.text, doc.annotations.get("lang"), self.config.min_sentence_chars)
        node = node_of(doc, self.score_key)
        yield from self.add(list(keys), node)
        if repeats and self.config.collapse_repeats:
            yield beam.pvalue.TaggedOutput(REPEATS, (doc.id, True))
        yield doc.id, doc


class _RemoveSentencesFn(beam.DoFn):
    """``(id, {"doc": [documents], "drop": [keys], "repeats": [True]})`` -> edited document, or its removal."""

    def __init__(self, config: SentenceDedupConfig):
        self.config = config
        self.too_short = Metrics.counter(STAGE, REASON)

    def process(self, item):
        _, grouped = item
        drop, repeats = set(grouped["drop"]), bool(list(grouped["repeats"]))
        for doc in grouped["doc"]:
            if drop or repeats:
                doc = yield from drop_sentences(doc, drop, self.config, self.too_short)
            if doc is not None:
                yield doc


def drop_sentences(doc, drop: set[int], config: SentenceDedupConfig, too_short, table: bytes | None = None):
    """Yields the edits of removing ``doc``'s sentences whose key is in ``drop`` and its repeated sentences (or
    its removal, counted in ``too_short``, when too few words are left); returns the document left, None when
    removed. ``table``: its text's sentence table, when the caller has it (``without_sentences``)."""
    text, removed, collapsed, words = without_sentences(doc.text, doc.annotations.get("lang"), drop,
                                                        config.min_sentence_chars, config.collapse_repeats, table)
    if not (removed or collapsed):
        return doc
    if removed:
        yield edit(STAGE, "sentences_removed", removed)
    if collapsed:
        yield edit(STAGE, "sentences_collapsed", collapsed)
    yield edit(STAGE, "documents_sentence_edited", 1)
    if words < config.min_words:
        too_short.inc()
        yield removal(doc, STAGE, REASON, sentences_removed=removed, sentences_collapsed=collapsed, words_left=words)
        return None
    return doc.with_text(text)


class SentenceDedup(beam.PTransform):
    """Remove boilerplate sentences repeated across documents and collapse a document's repeated sentences;
    returns ``StageOutputs`` with edits."""

    def __init__(self, config: SentenceDedupConfig | None = None, score_key: str = "quality_score",
                 fail_fast: bool = False):
        super().__init__()
        self.config = config or SentenceDedupConfig()
        self.score_key, self.fail_fast = score_key, fail_fast

    def expand(self, docs) -> StageOutputs:
        c = self.config
        keys = guarded(_SentenceKeysFn(c, self.score_key), STAGE, self.fail_fast)
        keyed = docs | "SentencesKeys" >> beam.ParDo(keys).with_outputs(KEYS, REPEATS, ERRORS, main="docs")
        drops = (
            keyed[KEYS]
            | "SentencesGroup" >> GroupByKey()
            | "SentencesBoilerplate" >> beam.FlatMap(shard_drops(c.max_occurrences, "boilerplate_sentences"))
        )
        joined = ({"doc": keyed.docs, "drop": drops, "repeats": keyed[REPEATS]}
                  | "SentencesJoin" >> CoGroupByKey())
        remove = guarded(_RemoveSentencesFn(c), STAGE, self.fail_fast, records=group_docs)
        outputs = split_outputs(
            joined | "SentencesRemove" >> beam.ParDo(remove).with_outputs(REMOVED, EDITS, ERRORS, main="kept"),
            with_edits=True, with_errors=True)
        errors = (keyed[ERRORS], outputs.errors) | "SentencesErrors" >> Flatten()
        return outputs._replace(errors=errors)
