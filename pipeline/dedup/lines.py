"""Line-level deduplication (CCNet / C4 style): boilerplate lines repeated across documents.

A line found in more than ``max_occurrences`` documents (compared after normalisation) is removed from
every document that holds it except the best-ranked one. Documents that lost lines and have fewer than
``min_words`` words left are removed (reason ``line_dedup_too_short``).
"""
from __future__ import annotations

import array
import collections
import itertools

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from corpusforge.core.disk_grouping import CoGroupByKey, Flatten, GroupByKey
from corpusforge.pipeline.dedup.common import KEYS, STAGE, digest64, node_of, verdict_of
from corpusforge.pipeline.dedup.config import LineDedupConfig
from corpusforge.pipeline.dedup.text import count_words, normalized_bytes
from corpusforge.pipeline.stage import EDITS, ERRORS, REMOVED, StageOutputs, edit, guarded, removal, split_outputs

REASON = "line_dedup_too_short"
# (key, node) records travel packed by key shard, as columns (KeysByShard): a document has ~10 lines and ~20
# sentences, and one Beam element per key cost more than the key (coding, grouping and framing each, most of
# sentence dedup's time).
# A DoFn sends what it holds once it has this many records, and at the end of each bundle.
KEY_SHARDS = 1024
KEY_FLUSH_RECORDS = 1 << 18


def line_key(line: str, min_chars: int) -> int | None:
    """The 64-bit hash of a line's normalised words, or None for a line too short to count."""
    normalized = b" ".join(normalized_bytes(line).split())
    if len(normalized) < min_chars:
        return None
    return digest64(normalized)


def line_keys(text: str, min_chars: int) -> set[int]:
    """The distinct keys of the lines of ``text`` that count."""
    keys = {line_key(line, min_chars) for line in text.split("\n")}
    keys.discard(None)
    return keys


def remove_lines(text: str, drop: set[int], min_chars: int) -> tuple[str, int]:
    """``text`` without the lines whose key is in ``drop``, and how many lines went."""
    kept, removed = [], 0
    for line in text.split("\n"):
        if line_key(line, min_chars) in drop:
            removed += 1
        else:
            kept.append(line)
    return "\n".join(kept), removed


def boilerplate_drops(max_occurrences: int, counter: str = "boilerplate_lines"):
    """``(key, [nodes])`` -> ``(id, key)`` for every node but the smallest, when the line (or sentence: the
    counter names which) is in more than ``max_occurrences`` documents. Iterates the group twice, keeping only
    the smallest node."""
    def drops(group):
        key, nodes = group
        first, count = None, 0
        for node in nodes:
            count += 1
            if first is None or node < first:
                first = node
        if count <= max_occurrences:
            return
        Metrics.counter(STAGE, counter).inc()
        for node in nodes:
            if node != first:
                yield verdict_of(node, key)
    return drops


def shard_drops(max_occurrences: int, counter: str = "boilerplate_lines", listed: bool = False):
    """``(shard, [packs])`` (``KeysByShard``'s) -> what ``boilerplate_drops`` yields for each key of the shard
    in more than ``max_occurrences`` records, keys in ascending order, each key's nodes in the order the packs
    hold them (``boilerplate_drops`` yields nothing for the others: most lines and sentences are in one
    document). The keys are counted with numpy (a stable sort, then run lengths): no Python object per record;
    only the records of keys found too often become ``(rank, score, id)`` nodes. ``listed``: the shard's drops
    as one list (none when empty), one Beam element instead of one per drop (for
    ``AsGrouped.of(..., lists=True)``)."""
    drops = boilerplate_drops(max_occurrences, counter)
    if listed:
        one_by_one = shard_drops(max_occurrences, counter)

        def shard_list(group):
            found = list(one_by_one(group))
            return [found] if found else []
        return shard_list

    def shard(group):
        _, packs = group
        packs = list(packs)
        keys = np.frombuffer(b"".join([pack[0] for pack in packs]), np.int64)
        if len(keys) <= max_occurrences:
            return
        ordered = np.sort(keys)
        if max_occurrences:  # a key in more than max_occurrences records: its run is longer than that
            repeated = ordered[max_occurrences:][ordered[max_occurrences:] == ordered[:-max_occurrences]]
            if not len(repeated):  # most shards: no line or sentence of theirs is in that many documents
                return
            heavy = set(repeated.tolist())
        else:
            heavy = set(keys.tolist())
        found = collections.defaultdict(list)  # their records, in the order the packs hold them
        for index, key in enumerate(keys.tolist()):
            if key in heavy:
                found[key].append(index)
        heavy = sorted(found)
        records = np.array([index for key in heavy for index in found[key]])
        ranks = np.frombuffer(b"".join([pack[1] for pack in packs]), np.int8)[records].tolist()
        scores = np.frombuffer(b"".join([pack[2] for pack in packs]), np.float64)[records].tolist()
        ids = list(itertools.chain.from_iterable(pack[3] for pack in packs))
        at = records.tolist()
        if len(packs[0]) > 4:  # nodes that name their batch (common.in_batch): the batch keys' column
            batches = np.frombuffer(b"".join([pack[4] for pack in packs]), np.int64)[records].tolist()
            nodes = zip(ranks, scores, [ids[index] for index in at], batches)
        else:
            nodes = zip(ranks, scores, [ids[index] for index in at])
        for key in heavy:
            yield from drops((key, list(itertools.islice(nodes, len(found[key])))))
    return shard


class KeysByShard(beam.DoFn):
    """Base of a DoFn that emits ``(key, node)`` records (key: a signed 64-bit int; node: ``node_of``'s
    ``(rank, score, id)``, rank 0 or 1): ``add`` them, and they leave tagged KEYS as ``(shard, pack)``
    (``KEY_SHARDS``, ``KEY_FLUSH_RECORDS``; shard ``key % KEY_SHARDS``) for ``shard_drops``.

    A pack holds its records as columns, ``(keys, ranks, scores, ids)``: the keys' int64, ranks' int8 and
    scores' float64 bytes and the list of ids, in the order they were added (nodes that name their batch,
    ``common.in_batch``: a fifth column, the batch keys' int64 bytes). Held, a record costs its key's 8
    bytes and a document's node is kept once; Beam codes bytes and a list of strings in compiled code, not a
    tuple of four objects per record (~51 coded bytes a record with 32-character ids against ~59, and about a
    fifth of the time to code and decode: ``bench/key_packs.py``)."""

    def start_bundle(self):
        self._empty_packs()

    def _empty_packs(self) -> None:
        self.keys = array.array("q")  # every record's key, in order
        self.nodes: list = []  # each document's node
        self.ends = array.array("q")  # where each document's keys end in ``keys``

    def add(self, keys, node) -> list:
        """Hold ``(key, node)`` for every key of ``keys`` (an iterable, read once); the packs to emit now (none
        until enough are held)."""
        held = self.keys
        held.extend(keys)
        self.nodes.append(node)
        self.ends.append(len(held))
        return self._drain() if len(held) >= KEY_FLUSH_RECORDS else []

    def packs(self) -> list:
        """The ``(shard, pack)`` of what is held, by shard, and holds nothing after."""
        if not self.keys:
            self._empty_packs()
            return []
        keys = np.frombuffer(self.keys, np.int64)
        owners = np.repeat(np.arange(len(self.nodes)), np.diff(np.frombuffer(self.ends, np.int64), prepend=0))
        shards = np.remainder(keys, KEY_SHARDS)  # Python's %: in 0 .. KEY_SHARDS - 1 for negative keys too
        order = np.argsort(shards, kind="stable")  # stable: each shard's records in the order added
        shards, owners = shards[order], owners[order]
        columns = list(zip(*self.nodes))
        ranks, scores, ids = columns[:3]
        keys = keys[order].tobytes()
        ranks = np.array(ranks, np.int8)[owners].tobytes()
        scores = np.array(scores, np.float64)[owners].tobytes()
        ids = np.array(ids, dtype=object)[owners].tolist()
        # nodes that name their batch (common.in_batch, batches joins): a fifth column, the batch keys' int64s
        batches = np.array(columns[3], np.int64)[owners].tobytes() if len(columns) > 3 else None
        starts = np.flatnonzero(np.concatenate(([True], shards[1:] != shards[:-1])))
        numbers = shards[starts].tolist()
        starts = starts.tolist()
        ends = starts[1:] + [len(ids)]
        self._empty_packs()
        if batches is not None:
            return [(shard, (keys[8 * start:8 * end], ranks[start:end], scores[8 * start:8 * end], ids[start:end],
                             batches[8 * start:8 * end]))
                    for shard, start, end in zip(numbers, starts, ends)]
        return [(shard, (keys[8 * start:8 * end], ranks[start:end], scores[8 * start:8 * end], ids[start:end]))
                for shard, start, end in zip(numbers, starts, ends)]

    def _drain(self) -> list:
        return [beam.pvalue.TaggedOutput(KEYS, item) for item in self.packs()]

    def finish_bundle(self):
        for packed in self._drain():
            yield beam.pvalue.TaggedOutput(KEYS, GlobalWindows.windowed_value(packed.value))


class _LineKeysFn(KeysByShard):
    """A document -> ``(id, document)``, and its ``(line key, node)`` records for each of its lines that count
    (packed by shard, tagged KEYS)."""

    def __init__(self, config: LineDedupConfig, score_key: str):
        self.config, self.score_key = config, score_key

    def process(self, doc):
        node = node_of(doc, self.score_key)
        yield from self.add(list(line_keys(doc.text, self.config.min_line_chars)), node)
        yield doc.id, doc


def group_docs(item):
    """The documents of a joined ``(id, {"doc": [...], ...})``: what a failing join step rejects."""
    return list(item[1]["doc"])


class _RemoveLinesFn(beam.DoFn):
    """``(id, {"doc": [documents], "drop": [line keys]})`` -> edited document, or its removal."""

    def __init__(self, config: LineDedupConfig):
        self.config = config
        self.too_short = Metrics.counter(STAGE, REASON)

    def process(self, item):
        _, grouped = item
        drop = set(grouped["drop"])
        for doc in grouped["doc"]:
            if drop:
                doc = yield from drop_lines(doc, drop, self.config, self.too_short)
            if doc is not None:
                yield doc


def drop_lines(doc, drop: set[int], config: LineDedupConfig, too_short):
    """Yields the edits of removing ``doc``'s lines whose key is in ``drop`` (or its removal, counted in
    ``too_short``, when too few words are left); returns the document left, None when removed."""
    text, removed = remove_lines(doc.text, drop, config.min_line_chars)
    if not removed:
        return doc
    yield edit(STAGE, "lines_removed", removed)
    yield edit(STAGE, "documents_line_edited", 1)
    words = count_words(normalized_bytes(text))
    if words < config.min_words:
        too_short.inc()
        yield removal(doc, STAGE, REASON, lines_removed=removed, words_left=words)
        return None
    return doc.with_text(text)


class LineDedup(beam.PTransform):
    """Remove boilerplate lines repeated across documents; returns ``StageOutputs`` with edits."""

    def __init__(self, config: LineDedupConfig | None = None, score_key: str = "quality_score",
                 fail_fast: bool = False):
        super().__init__()
        self.config = config or LineDedupConfig()
        self.score_key, self.fail_fast = score_key, fail_fast

    def expand(self, docs) -> StageOutputs:
        c = self.config
        keys = guarded(_LineKeysFn(c, self.score_key), STAGE, self.fail_fast)
        keyed = docs | "LinesKeys" >> beam.ParDo(keys).with_outputs(KEYS, ERRORS, main="docs")
        drops = (
            keyed[KEYS]
            | "LinesGroup" >> GroupByKey()
            | "LinesBoilerplate" >> beam.FlatMap(shard_drops(c.max_occurrences))
        )
        joined = {"doc": keyed.docs, "drop": drops} | "LinesJoin" >> CoGroupByKey()
        remove = guarded(_RemoveLinesFn(c), STAGE, self.fail_fast, records=group_docs)
        outputs = split_outputs(
            joined | "LinesRemove" >> beam.ParDo(remove).with_outputs(REMOVED, EDITS, ERRORS, main="kept"),
            with_edits=True, with_errors=True)
        errors = (keyed[ERRORS], outputs.errors) | "LinesErrors" >> Flatten()
        return outputs._replace(errors=errors)
