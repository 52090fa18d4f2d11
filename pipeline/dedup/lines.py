"""Line-level deduplication (CCNet / C4 style): boilerplate lines repeated across documents.

A line found in more than ``max_occurrences`` documents (compared after normalisation) is removed from
every document that holds it except the best-ranked one. Documents that lost lines and have fewer than
``min_words`` words left are removed (reason ``line_dedup_too_short``).
"""
from __future__ import annotations

import collections

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from corpusforge.core.disk_grouping import CoGroupByKey, Flatten, GroupByKey
from corpusforge.pipeline.dedup.common import KEYS, STAGE, digest64, node_of
from corpusforge.pipeline.dedup.config import LineDedupConfig
from corpusforge.pipeline.dedup.text import count_words, normalized_bytes
from corpusforge.pipeline.stage import EDITS, ERRORS, REMOVED, StageOutputs, edit, guarded, removal, split_outputs

REASON = "line_dedup_too_short"
# (key, node) records travel packed by key shard: a document has ~10 lines and ~20 sentences, and one Beam
# element per key cost more than the key (coding, grouping and framing each, most of sentence dedup's time).
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
                yield node[2], key
    return drops


def shard_drops(max_occurrences: int, counter: str = "boilerplate_lines", listed: bool = False):
    """``(shard, [[(key, node)...]...])`` -> what ``boilerplate_drops`` yields for each key of the shard, the
    shard's records gathered by key first (a shard holds 1/KEY_SHARDS of all keys). Only the keys in more
    than ``max_occurrences`` records go to ``boilerplate_drops`` (which yields nothing for the others): most
    lines and sentences are in one document. ``listed``: the shard's drops as one list (none when empty), one
    Beam element instead of one per drop (for ``AsGrouped.of(..., lists=True)``)."""
    drops = boilerplate_drops(max_occurrences, counter)
    if listed:
        one_by_one = shard_drops(max_occurrences, counter)

        def shard_list(group):
            found = list(one_by_one(group))
            return [found] if found else []
        return shard_list

    def shard(group):
        _, packs = group
        nodes: collections.defaultdict[int, list] = collections.defaultdict(list)
        for pack in packs:
            for key, node in pack:
                nodes[key].append(node)
        for key in sorted(key for key, found in nodes.items() if len(found) > max_occurrences):
            yield from drops((key, nodes[key]))
    return shard


class KeysByShard(beam.DoFn):
    """Base of a DoFn that emits ``(key, node)`` records: ``add`` them, and they leave tagged KEYS as
    ``(shard, [(key, node)...])`` packs (``KEY_SHARDS``, ``KEY_FLUSH_RECORDS``), for ``shard_drops``."""

    def start_bundle(self):
        self._empty_packs()

    def _empty_packs(self) -> None:
        self.packs: collections.defaultdict[int, list] = collections.defaultdict(list)  # no new list per key
        self.held = 0

    def add(self, keys, node) -> list:
        """Hold ``(key, node)`` for every key; the packs to emit now (none until enough are held)."""
        packs, shards = self.packs, KEY_SHARDS  # a local: no global look-up per key
        for key in keys:
            packs[key % shards].append((key, node))
        self.held += len(keys)
        return self._drain() if self.held >= KEY_FLUSH_RECORDS else []

    def _drain(self) -> list:
        packs = [beam.pvalue.TaggedOutput(KEYS, item) for item in sorted(self.packs.items())]
        self._empty_packs()
        return packs

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
