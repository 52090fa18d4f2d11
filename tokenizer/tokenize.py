"""Token shards: the Beam stage that encodes a build's clean shards for the trainer.

    with beam.Pipeline(options=options) as p:
        p | "Tokenize" >> TokenizeShards(input="runs/x/clean", output="runs/x/tokens",
                                         tokenizer="runs/x/tokenizer/tokenizer.json")

Each document goes to ``train`` or ``val`` by a stable hash of its id (``val_fraction``), and to one of the
split's shards by a second hash. A shard is an Arrow IPC file with schema
``id: string, tokens: large_list<uint16>`` (``uint32`` when the vocabulary exceeds 65,535 ids), one record
batch, rows sorted by id: the bytes depend only on the input, the tokenizer and the options, never on the
runner or the order of work. Tokens are the encoding *without* special tokens, and special-token strings
inside a document are encoded as plain text. Shards are written to a temporary name and renamed;
``tokens/manifest.json`` is written last, so its presence marks a complete output.

A document whose encoding raises is left out of the shards and listed in the manifest's ``stage_errors``
(its id and ``"tokenize: <ExceptionType>: <message>"``, never its text; ``corpusforge.core.faults``);
more of them than ``build.error_allowance`` and ``build.max_error_fraction`` of the documents fails the run
(``FaultConfig.tolerates``), as does every document raising, however few, and ``build.fail_fast`` fails
it on the first.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import os
import re
from typing import Any, Iterable

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.metrics import Metrics

from corpusforge.core.direct_runner import beam_pipeline
from corpusforge.core.errors import UserError, resource_error
from corpusforge.core.beam_options import runs_locally
from corpusforge.core.disk_grouping import CoGroupByKey, Reshuffle, partitions_for, spill_directory, spilling_to
from corpusforge.core.fault_config import FaultConfig
from corpusforge.core.progress import Progress, Reporter
from corpusforge.core import files, rundir
from corpusforge.core.faults import ERRORS, error_parts, run_isolated
from corpusforge.core.dataset_card import CARD, write_card
from corpusforge.core.run_lock import run_lock
from corpusforge.core.shard_files import open_shard
from corpusforge.tokenizer.corpus import clean_shards
from corpusforge.tokenizer.config import TokenizeConfig, TokenizeRun
from corpusforge.tokenizer.mixture import (NONE_TAKEN, bucket_cutoff, copies, key_buckets, key_histogram, mix_key,
                                          mixture_epochs, quota_bucket, sources_summary)
from corpusforge.tokenizer.special_tokens import read_special_tokens
from corpusforge.tokenizer.token_shards import SPLITS, UINT16_MAX_VOCAB, token_dtype, token_schema

_SPLIT_PURPOSE = b"cf-tok-split"
_STAGE = "tokenize"


@dataclasses.dataclass(frozen=True)
class ShardPlan:
    """Where each document goes. Changing the shard counts never moves a document between splits."""

    train_shards: int
    val_shards: int
    val_fraction: float
    split_seed: int
    dtype: str

    def assign(self, doc_id: str) -> tuple[str, int]:
        """``(split, shard index)`` of a document, from a keyed BLAKE2b hash of its id."""
        digest = _split_digest(doc_id, self.split_seed)
        u = int.from_bytes(digest[:8], "little") / 2.0**64
        split = "val" if u < self.val_fraction else "train"
        n = self.val_shards if split == "val" else self.train_shards
        return split, int.from_bytes(digest[8:], "little") % n

    def keys(self) -> list[tuple[str, int]]:
        return [("train", i) for i in range(self.train_shards)] + [("val", i) for i in range(self.val_shards)]

    def shard_name(self, split: str, index: int) -> str:
        n = self.val_shards if split == "val" else self.train_shards
        return f"{split}/part-{index:05d}-of-{n:05d}.arrow"

    def for_tokens(self, train_tokens: float, val_tokens: int, shard_tokens: int) -> "ShardPlan":
        """This plan with shard counts of about ``shard_tokens`` tokens a shard (documents are spread by the
        same hash, so shards hold ``shard_tokens`` in expectation). The split of a document does not change."""
        train = max(1, math.ceil(train_tokens / shard_tokens))
        val = max(1, math.ceil(val_tokens / shard_tokens)) if self.val_fraction else 0
        return dataclasses.replace(self, train_shards=train, val_shards=val)

    @classmethod
    def for_input(cls, input_bytes: int, val_fraction: float, split_seed: int, dtype: str,
                  shard_target_mb: float = 256.0, num_shards: int = 0) -> "ShardPlan":
        if num_shards:
            train = num_shards
            val = max(1, math.ceil(num_shards * val_fraction / (1.0 - val_fraction))) if val_fraction else 0
        else:
            target = shard_target_mb * 1e6
            train = max(1, math.ceil(input_bytes * (1.0 - val_fraction) / target))
            val = max(1, math.ceil(input_bytes * val_fraction / target)) if val_fraction else 0
        return cls(train_shards=train, val_shards=val, val_fraction=val_fraction, split_seed=split_seed, dtype=dtype)


def _split_digest(doc_id: str, split_seed: int) -> bytes:
    return hashlib.blake2b(doc_id.encode("utf-8"), digest_size=16, key=split_seed.to_bytes(8, "little", signed=True),
                           person=_SPLIT_PURPOSE).digest()


def split_unit(doc_id: str, split_seed: int) -> float:
    """The number in [0, 1) whose place below the threshold sends a document to val (``ShardPlan.assign``)."""
    return int.from_bytes(_split_digest(doc_id, split_seed)[:8], "little") / 2.0**64


VAL_FLOOR_SHARE = 0.1  # the floor of the validation split never takes more of the corpus than this


def val_threshold(paths: list[str], val_fraction: float, split_seed: int, min_documents: int) -> float:
    """The split threshold (``ShardPlan.val_fraction``): ``val_fraction``, raised, when it sends fewer documents of
    the clean shards ``paths`` to val than ``min(min_documents, VAL_FLOOR_SHARE of them)``, to the one that sends
    exactly that many (the documents of the lowest split hashes). It depends on the ids and the seed only, so the
    same input gives the same split; raising it only moves documents from train to val. The ids are read only when
    the corpus is small enough for the floor to matter."""
    import heapq

    if not val_fraction or not min_documents:
        return val_fraction
    rows = _documents(paths)
    want = min(min_documents, int(rows * VAL_FLOOR_SHARE))
    # a corpus whose expected val count is 2 x want + 50 or more gets fewer than want with odds below 1e-12: its ids
    # are not read (at the defaults, corpora of 25,000 documents or more)
    if want == 0 or rows * val_fraction >= 2 * want + 50:
        return val_fraction
    units = (split_unit(doc_id, split_seed) for path in paths for batch in open_shard(path).batches(["id"])
             for doc_id in batch.column(0).to_pylist())
    lowest = heapq.nsmallest(want + 1, units)
    if len(lowest) <= want or lowest[want - 1] < val_fraction:  # val_fraction gives enough already
        return val_fraction
    return (lowest[want - 1] + lowest[want]) / 2  # exactly ``want`` documents below it


@dataclasses.dataclass
class Chunk:
    """Encoded documents bound for one shard: ids, token counts, and all their tokens back to back."""

    ids: list[str]
    lengths: np.ndarray  # int64, one per document
    tokens: np.ndarray  # uint16/uint32, flat
    sources: list[str] | None = None  # one per document; None: unknown ("")
    languages: list[str] | None = None  # the quality stage's lang annotation, one per document ("": none)

    def source_list(self) -> list[str]:
        return self.sources if self.sources is not None else [""] * len(self.ids)

    def language_list(self) -> list[str]:
        return self.languages if self.languages is not None else [""] * len(self.ids)

    def take(self, order: list[int], tokens: np.ndarray) -> "Chunk":
        """The documents at ``order`` (repeats allowed), whose tokens back to back are ``tokens``."""
        sources, languages = self.source_list(), self.language_list()
        return Chunk([self.ids[i] for i in order], self.lengths[order] if order else self.lengths[:0], tokens,
                     [sources[i] for i in order], [languages[i] for i in order])


def weighted(chunk: Chunk, epochs: dict[str, float], seed: int, cutoffs: dict[str, int]) -> Chunk:
    """``chunk`` with each document repeated ``copies(...)`` times for its source's epochs and fractional epoch's
    cutoff (0: dropped)."""
    sources = chunk.source_list()
    starts = np.concatenate([[0], np.cumsum(chunk.lengths)]).astype(np.int64)
    keep = [(i, copies(doc_id, epochs.get(src, 1.0), seed, cutoffs.get(src, NONE_TAKEN)))
            for i, (doc_id, src) in enumerate(zip(chunk.ids, sources))]
    order = [i for i, n in keep for _ in range(n)]
    if len(order) == len(chunk.ids) and order == list(range(len(chunk.ids))):
        return chunk
    tokens = (np.concatenate([chunk.tokens[starts[i]:starts[i + 1]] for i in order]) if order
              else chunk.tokens[:0])
    return chunk.take(order, tokens)


def regroup(chunk: Chunk, plan: ShardPlan) -> dict[tuple[str, int], Chunk]:
    """A chunk's documents grouped by their shard under ``plan`` (another shard count, the same split)."""
    starts = np.concatenate([[0], np.cumsum(chunk.lengths)]).astype(np.int64)
    groups: dict[tuple[str, int], list[int]] = {}
    for i, doc_id in enumerate(chunk.ids):
        groups.setdefault(plan.assign(doc_id), []).append(i)
    out = {}
    for key, members in groups.items():
        tokens = np.concatenate([chunk.tokens[starts[i]:starts[i + 1]] for i in members])
        out[key] = chunk.take(members, tokens)
    return out


def source_counts(chunk: Chunk, by: str = "source") -> dict[str, list[int]]:
    """``{source: [documents, tokens]}`` of a chunk (``by="language"``: per language)."""
    out: dict[str, list[int]] = {}
    labels = chunk.source_list() if by == "source" else chunk.language_list()
    for src, n in zip(labels, chunk.lengths.tolist()):
        counts = out.setdefault(src, [0, 0])
        counts[0] += 1
        counts[1] += int(n)
    return out


def encode_documents(tokenizer, ids: list[str], texts: list[str], plan: ShardPlan
                     ) -> dict[tuple[str, int], Chunk]:
    """Encode one batch (no special tokens added) and group the results by destination shard."""
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    id_lists = [e.ids for e in encode(texts, add_special_tokens=False)]
    groups: dict[tuple[str, int], list[int]] = {}
    for i, doc_id in enumerate(ids):
        groups.setdefault(plan.assign(doc_id), []).append(i)
    dtype = np.dtype(plan.dtype)
    out = {}
    for key, members in groups.items():
        lengths = np.fromiter((len(id_lists[i]) for i in members), dtype=np.int64, count=len(members))
        flat = np.fromiter(itertools.chain.from_iterable(id_lists[i] for i in members), dtype=dtype,
                           count=int(lengths.sum()))
        out[key] = Chunk([ids[i] for i in members], lengths, flat)
    return out


def shard_batch(chunks: Iterable[Chunk], dtype: str) -> pa.RecordBatch:
    """One record batch of the chunks' documents, sorted by id (ties, a mixture's repeats, by tokens)."""
    chunks = list(chunks)
    ids = [doc_id for c in chunks for doc_id in c.ids]
    sources = [src for c in chunks for src in c.source_list()]
    np_dtype = np.dtype(dtype)
    lengths = np.concatenate([c.lengths for c in chunks]) if chunks else np.zeros(0, np.int64)
    tokens = np.concatenate([c.tokens for c in chunks]) if chunks else np.zeros(0, np_dtype)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(ids) else lengths
    if len(set(ids)) == len(ids):
        order = sorted(range(len(ids)), key=ids.__getitem__)
    else:
        order = sorted(range(len(ids)), key=lambda i: (ids[i], tokens[starts[i]:starts[i] + lengths[i]].tobytes()))
    sorted_lengths = lengths[order] if order else lengths
    offsets = np.zeros(len(ids) + 1, np.int64)
    np.cumsum(sorted_lengths, out=offsets[1:])
    if order:
        flat = np.concatenate([tokens[starts[i]:starts[i] + lengths[i]] for i in order]).astype(np_dtype, copy=False)
    else:
        flat = np.zeros(0, np_dtype)
    schema = token_schema(dtype)
    values = pa.array(flat, type=schema.field("tokens").type.value_type)
    column = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), values)
    return pa.RecordBatch.from_arrays([pa.array([ids[i] for i in order], pa.string()), column,
                                       pa.array([sources[i] for i in order], pa.string())], schema=schema)


class _PlanUnits(beam.DoFn):
    """A shard path -> ``(path, record batch, first row, end row)`` units of work of at most ``rows`` documents.
    Only Arrow is sliced so finely: a unit of a Parquet shard is a row group and a unit of a JSON Lines shard the
    whole file (batch None), as each unit reads its batch anew: smaller units would read the same data again. The
    rows of each batch come from its metadata (``ShardReader.batch_rows``): planning reads no text."""

    def __init__(self, rows: int) -> None:
        self.rows = rows

    def process(self, path: str):
        reader = open_shard(path)
        if reader.reads_whole:
            yield path, None, 0, reader.num_rows
            return
        for b, n in enumerate(reader.batch_rows()):  # from the batches' headers (Parquet: its footer), not read
            step = self.rows if reader.slices_cheaply else max(n, 1)
            for start in range(0, n, step):
                yield path, b, start, min(n, start + step)


def _language(annotations: dict | str | None) -> str:
    """The ``lang`` annotation of a clean-shard row's annotations: a typed struct (a dict), or the JSON string of
    older runs ("" when there is none)."""
    if isinstance(annotations, dict):
        lang = annotations.get("lang")
        return lang if isinstance(lang, str) else ""
    try:
        lang = json.loads(annotations or "{}").get("lang")
    except (ValueError, AttributeError):
        return ""
    return lang if isinstance(lang, str) else ""


def _token_error(record: tuple, detail: str) -> dict[str, str]:
    return {"id": record[0], "detail": detail}


def _singletons(pairs: list) -> list:
    return [[pair] for pair in pairs]


def _pairs(pairs: list) -> list:
    return list(pairs)


def _text_of(record: tuple) -> str:
    return record[1]


class _EncodeUnits(beam.DoFn):
    """Reads a unit of a clean shard, encodes it in batches, emits ``((split, shard), Chunk)``; a batch that
    raises is encoded one document at a time and each document that raises goes to ``ERRORS`` as
    ``{"id", "detail"}`` (unless ``fail_fast``)."""

    def __init__(self, tokenizer_path: str, plan: ShardPlan, batch_size: int, progress: str | None = None,
                 fail_fast: bool = False) -> None:
        self.tokenizer_path, self.plan, self.batch_size, self.progress = tokenizer_path, plan, batch_size, progress
        self.fail_fast = fail_fast
        self.documents = Metrics.counter(_STAGE, "documents")
        self.tokens = Metrics.counter(_STAGE, "tokens")
        self.text_bytes = Metrics.counter(_STAGE, "text_bytes")

    def setup(self) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_str(files.read_bytes(self.tokenizer_path).decode("utf-8"))
        # Document text is data: a literal "<|endoftext|>" or "[SEP]" in it must not become a control token.
        self.tokenizer.encode_special_tokens = True
        self._path, self._reader = None, None
        self.reporter = Reporter(self.progress)

    def finish_bundle(self):
        self.reporter.flush()

    def process(self, unit):
        path, b, start, stop = unit
        if path != self._path:
            self._path, self._reader, self._batch = path, open_shard(path), (None, None)
        if b is not None and self._batch[0] != b:  # a batch is read once for its units that come in a row
            self._batch = (b, self._reader.get_batch(b))
        if b is not None and self._batch[1].num_rows < stop:  # planned from its header: the shard changed since
            raise UserError(f"{path}: its record batch {b} has {self._batch[1].num_rows} rows, not the {stop} or more "
                            "its header said when tokenize planned its work; something else writes to clean/: run "
                            "tokenize again once nothing does")
        batch = (self._batch[1].slice(start, stop - start) if b is not None
                 else pa.concat_batches(list(self._reader.batches())) if self._reader.num_record_batches
                 else pa.RecordBatch.from_pylist([], schema=self._reader.schema))
        for lo in range(0, batch.num_rows, self.batch_size):
            part = batch.slice(lo, self.batch_size)
            names = part.schema.names
            sources = part.column("source").to_pylist() if "source" in names else [""] * part.num_rows
            languages = ([_language(a) for a in part.column("annotations").to_pylist()] if "annotations" in names
                         else [""] * part.num_rows)
            pairs = list(zip(part.column("id").to_pylist(), part.column("text").to_pylist(), sources, languages))
            if self.fail_fast:
                outputs = list(self._encode(pairs))
            else:
                outputs = run_isolated(self._encode, pairs, _STAGE, _token_error, records=_pairs, split=_singletons,
                                       text_of=_text_of)
            tokens = sum(len(out[1].tokens) for out in outputs if isinstance(out, tuple))
            self.documents.inc(len(pairs))
            self.text_bytes.inc(int(pc.sum(pc.binary_length(part.column("text"))).as_py() or 0))
            self.tokens.inc(tokens)
            self.reporter.add(documents=len(pairs), tokens=tokens)
            yield from outputs

    def _encode(self, records: list[tuple[str, str, str, str]]):
        chunks = encode_documents(self.tokenizer, [r[0] for r in records], [r[1] for r in records], self.plan)
        labels = {r[0]: (r[2], r[3]) for r in records}
        for key in sorted(chunks):
            chunk = chunks[key]
            chunk.sources = [labels[doc_id][0] for doc_id in chunk.ids]
            chunk.languages = [labels[doc_id][1] for doc_id in chunk.ids]
            yield key, chunk


class _WriteShard(beam.DoFn):
    """``((split, shard), [Chunk | None])`` -> the shard file, sorted by id, written atomically. Train
    documents are repeated or dropped by their source's ``epochs`` and ``cutoffs`` (side inputs; validation stays
    as is)."""

    def __init__(self, output: str, plan: ShardPlan, mixture_seed: int = 0) -> None:
        self.output, self.plan, self.mixture_seed = output, plan, mixture_seed

    def process(self, element, epochs: dict[str, float], cutoffs: dict[str, int], plan: ShardPlan | None = None):
        plan = plan or self.plan  # token-sized shards: the plan made once the tokens are counted
        (split, index), chunks = element
        chunks = [c for c in chunks if c is not None]
        if split == "train":
            chunks = [weighted(c, epochs, self.mixture_seed, cutoffs) for c in chunks]
        batch = shard_batch(chunks, plan.dtype)
        name = plan.shard_name(split, index)
        files.write_arrow_atomic(files.join(self.output, *name.split("/")), batch)
        counts: dict[str, dict[str, list[int]]] = {"sources": {}, "languages": {}}
        for chunk in chunks:
            for field, by in (("sources", "source"), ("languages", "language")):
                for label, (docs, tokens) in source_counts(chunk, by).items():
                    total = counts[field].setdefault(label, [0, 0])
                    total[0] += docs
                    total[1] += tokens
        yield {"split": split, "index": index, "path": name, "documents": batch.num_rows,
               "tokens": len(batch.column("tokens").values), **counts}


def _train_counts(by: str):
    """``((split, shard), Chunk)`` -> ``(source or language, (documents, tokens))`` of the train split, before
    weighting."""
    def counts(item):
        (split, _), chunk = item
        if split == "train":
            for label, (docs, tokens) in source_counts(chunk, by).items():
                yield label, (docs, tokens)
    return counts


def _train_keys(seed: int):
    """``((split, shard), Chunk)`` -> ``(source, (mix keys, token lengths))`` of the train split's documents."""
    def keys(item):
        (split, _), chunk = item
        if split != "train":
            return
        members: dict[str, list[int]] = {}
        for i, src in enumerate(chunk.source_list()):
            members.setdefault(src, []).append(i)
        for src, idx in sorted(members.items()):
            yield src, (np.array([mix_key(chunk.ids[i], seed) for i in idx], np.uint64), chunk.lengths[idx])
    return keys


class _KeyHistogram(beam.CombineFn):
    """Per source, ``key_histogram`` of its train documents' ``(keys, lengths)``: documents and tokens per bucket
    of keys, a fixed size whatever the corpus."""

    def create_accumulator(self):
        return key_histogram(np.zeros(0, np.uint64), np.zeros(0, np.int64))

    def add_input(self, acc, item):
        return key_histogram(*item, out=acc)

    def merge_accumulators(self, accumulators):
        merged = self.create_accumulator()
        for acc in accumulators:
            merged += acc
        return merged

    def extract_output(self, acc):
        return acc


class _ConcatKeys(beam.CombineFn):
    """Per source, the ``(keys, lengths)`` arrays of its train documents in its quota's bucket, concatenated (16
    bytes a document of that bucket: what ``bucket_cutoff`` orders)."""

    def create_accumulator(self):
        return []

    def add_input(self, acc, item):
        acc.append(item)
        return acc

    def merge_accumulators(self, accumulators):
        return [item for acc in accumulators for item in acc]

    def extract_output(self, acc):
        if not acc:
            return np.zeros(0, np.uint64), np.zeros(0, np.int64)
        return np.concatenate([k for k, _ in acc]), np.concatenate([n for _, n in acc]).astype(np.int64)


def _quota_buckets(histograms: dict[str, np.ndarray], epochs: dict[str, float]) -> dict[str, tuple[int, int, float]]:
    """Per source whose fractional epoch takes documents, ``quota_bucket``: where its quota is met."""
    out = {}
    for source, histogram in histograms.items():
        e = epochs.get(source, 1.0)
        target = quota_bucket(histogram, e - math.floor(e))
        if target is not None:
            out[source] = target
    return out


def _in_quota_bucket(item, targets: dict[str, tuple[int, int, float]]):
    """``(source, (keys, lengths))`` -> the same of the documents in the source's quota bucket (none elsewhere)."""
    source, (keys, lengths) = item
    target = targets.get(source)
    if target is not None:
        inside = key_buckets(keys) == target[0]
        if inside.any():
            yield source, (keys[inside], lengths[inside])


def _cutoffs(keys_by_source: dict[str, tuple[np.ndarray, np.ndarray]], targets: dict[str, tuple[int, int, float]]
             ) -> dict[str, int]:
    """Per source, the largest key its fractional epoch takes (a source absent: ``NONE_TAKEN``)."""
    return {source: bucket_cutoff(keys, lengths, *targets[source][1:])
            for source, (keys, lengths) in keys_by_source.items()}


def _val_tokens(item) -> Iterable[int]:
    (split, _), chunk = item
    if split == "val":
        yield int(chunk.lengths.sum())


def _token_plan(counts: dict[str, tuple[int, int]], epochs: dict[str, float], val_tokens: int, plan: ShardPlan,
                shard_tokens: int) -> ShardPlan:
    """The plan of token-sized shards: the train split's tokens after weighting, the validation split's."""
    train = sum(tokens * epochs.get(src, 1.0) for src, (_, tokens) in counts.items())
    return plan.for_tokens(train, val_tokens, shard_tokens)


def _regroup(item, plan: ShardPlan):
    _, chunk = item
    yield from sorted(regroup(chunk, plan).items(), key=lambda kv: kv[0])


def _markers(_, plan: ShardPlan):
    return [(key, None) for key in plan.keys()]


def _epochs(counts: dict[str, tuple[int, int]], weights: dict[str, float], target_tokens: int) -> dict[str, float]:
    return mixture_epochs({src: tokens for src, (_, tokens) in counts.items()}, weights, target_tokens)


def _sum_pairs(pairs):
    docs = tokens = 0
    for d, t in pairs:
        docs += d
        tokens += t
    return docs, tokens


def build_manifest(shards: list[dict[str, Any]], header: dict[str, Any],
                   errors: list[dict[str, str]] | None = None, before: dict[str, tuple[int, int]] | None = None,
                   epochs: dict[str, float] | None = None, weights: dict[str, float] | None = None,
                   languages_before: dict[str, tuple[int, int]] | None = None) -> dict[str, Any]:
    """The manifest: ``header``, per split its shards and counts, ``sources`` (the train split per source,
    before and after the mixture's weighting; ``corpusforge.tokenizer.mixture.sources_summary``), ``languages``
    (the same per ``lang`` annotation, "" for none) and the documents whose encoding raised."""
    splits = {}
    for split in SPLITS:
        rows = sorted((s for s in shards if s["split"] == split), key=lambda s: s["index"])
        splits[split] = {
            "shards": [s["path"] for s in rows],
            "documents": sum(s["documents"] for s in rows),
            "tokens": sum(s["tokens"] for s in rows),
            "shard_documents": [s["documents"] for s in rows],
            "shard_tokens": [s["tokens"] for s in rows],
        }
    by_type: dict[str, int] = {}
    for error in errors or []:
        name = error_parts(error["detail"])[1]
        by_type[name] = by_type.get(name, 0) + 1
    stage_errors = {"documents": len(errors or []), "by_type": dict(sorted(by_type.items())),
                    "records": sorted(errors or [], key=lambda e: (e["id"], e["detail"]))}
    after, languages_after = _train_totals(shards, "sources"), _train_totals(shards, "languages")
    if before is None:  # no weighting: what was written is what there was
        before = {src: tuple(counts) for src, counts in after.items()}
    if languages_before is None:
        languages_before = {lang: tuple(counts) for lang, counts in languages_after.items()}
    languages = {lang: {key: value for key, value in entry.items() if key in _LANGUAGE_FIELDS}
                 for lang, entry in sources_summary(languages_before, {k: tuple(c) for k, c in languages_after.items()},
                                                    {}, {}).items()}
    sources = sources_summary(before, {s: tuple(c) for s, c in after.items()}, weights or {}, epochs or {})
    val = splits.get("val", {}).get("documents", 0)
    encoded = sum(docs for docs, _ in before.values()) + val
    return {**header, "documents_encoded": encoded, "splits": splits, "sources": sources, "languages": languages,
            "stage_errors": stage_errors}


_LANGUAGE_FIELDS = ("documents_before", "tokens_before", "share_before", "documents", "tokens", "share")


def _train_totals(shards: list[dict[str, Any]], field: str) -> dict[str, list[int]]:
    """``{label: [documents, tokens]}`` of the train split's shards, from their ``field`` counts."""
    totals: dict[str, list[int]] = {}
    for shard in shards:
        if shard["split"] == "train":
            for label, (docs, tokens) in shard.get(field, {}).items():
                total = totals.setdefault(label, [0, 0])
                total[0] += docs
                total[1] += tokens
    return totals


def _write_manifest(shards: list[dict[str, Any]], output: str, header: dict[str, Any],
                    errors: list[dict[str, str]] | None = None, before: dict[str, tuple[int, int]] | None = None,
                    epochs: dict[str, float] | None = None, weights: dict[str, float] | None = None,
                    languages_before: dict[str, tuple[int, int]] | None = None) -> dict[str, Any]:
    manifest = build_manifest(shards, header, errors, before, epochs, weights, languages_before)
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    files.write_bytes_atomic(files.join(output, "manifest.json"), text.encode("utf-8"))
    return manifest


class TokenizeShards(beam.PTransform):
    """Clean shards -> train/val token shards + ``manifest.json``. Applied to a pipeline (``p | ...``);
    returns a one-element PCollection holding the manifest dict.

    Construction reads the tokenizer (its hash, vocabulary size and special tokens) and lists the input, so
    a bad path fails before the pipeline runs. Every path may be local or on any Beam filesystem.
    ``progress``: a local directory where the encoder counts documents and tokens (``corpusforge.core.progress``).
    ``min_val_documents``: 0 here (``val_fraction`` alone, each document's split from its id and seed only, as
    benchmarks and callers of this transform had it); ``corpusforge tokenize`` passes the config's (100 by default).
    """

    def __init__(self, input: str, output: str, tokenizer: str, val_fraction: float = 0.01, split_seed: int = 0,
                 batch_size: int = 256, shard_target_mb: float = 256.0, num_shards: int = 0,
                 rows_per_unit: int | None = None, progress: str | None = None, fail_fast: bool = False,
                 weights: dict[str, float] | None = None, target_tokens: int = 0, mixture_seed: int = 0,
                 shard_tokens: int = 0, min_val_documents: int = 0) -> None:
        super().__init__()
        if target_tokens < 0 or shard_tokens < 0:
            raise ValueError(f"target_tokens and shard_tokens must be >= 0, got {target_tokens}, {shard_tokens}")
        self.shard_tokens = shard_tokens
        self.weights, self.target_tokens, self.mixture_seed = dict(weights or {}), target_tokens, mixture_seed
        self.progress, self.fail_fast = progress, fail_fast
        if not 0.0 <= val_fraction < 1.0:
            raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
        if not files.exists(tokenizer):
            raise UserError(f"no tokenizer at {tokenizer}; run `corpusforge tokenizer train` first")
        self.input, self.output, self.tokenizer_path = input, output, tokenizer
        self.batch_size = batch_size
        self.rows_per_unit = rows_per_unit or batch_size * 16
        shards = clean_shards(input)
        self.paths = [p for p, _ in shards]
        self.input_bytes = sum(size for _, size in shards)
        raw = files.read_bytes(tokenizer)
        try:
            vocab_size = _vocab_size(raw.decode("utf-8"))
            special = read_special_tokens(json.loads(raw.decode("utf-8")))
        except Exception as exc:  # malformed JSON, a tokenizers error, no known special-token set
            raise UserError(f"{tokenizer} is not a tokenizer corpusforge can use ({' '.join(str(exc).split())[:300]}); "
                            "train one with `corpusforge tokenizer train` or point tokenize.tokenizer at another") from None
        dtype = token_dtype(vocab_size)
        threshold = val_threshold(self.paths, val_fraction, split_seed, min_val_documents)
        self.plan = ShardPlan.for_input(self.input_bytes, threshold, split_seed, dtype, shard_target_mb, num_shards)
        self.header = {
            "tokenizer": files.relative(tokenizer, output),
            "tokenizer_sha256": hashlib.sha256(raw).hexdigest(),
            "vocab_size": vocab_size,
            "dtype": dtype,
            "family": special.family,
            "special_tokens": special.as_mapping(),
            "val_fraction": val_fraction,
            "min_val_documents": min_val_documents,
            "val_threshold": threshold,  # what a document's split hash is compared with (evaluate reads it)
            "split_seed": split_seed,
            "shard_tokens": shard_tokens,
            "mixture": {"target_tokens": target_tokens, "seed": mixture_seed, "weights": dict(sorted(self.weights.items()))},
        }

    @classmethod
    def from_config(cls, cfg, run_dir: str, fail_fast: bool = False,
                    weights: dict[str, float] | None = None) -> "TokenizeShards":
        return cls(
            input=cfg.input or files.join(run_dir, "clean"),
            output=cfg.output or files.join(run_dir, "tokens"),
            tokenizer=cfg.tokenizer or files.join(run_dir, "tokenizer", "tokenizer.json"),
            val_fraction=cfg.val_fraction, split_seed=cfg.split_seed, batch_size=cfg.batch_size,
            shard_target_mb=cfg.shard_target_mb, num_shards=cfg.num_shards, fail_fast=fail_fast,
            weights=weights, target_tokens=cfg.target_tokens, mixture_seed=cfg.mixture_seed,
            shard_tokens=cfg.shard_tokens, min_val_documents=cfg.min_val_documents,
        )

    def expand(self, pbegin):
        encoded = (
            pbegin
            | "ListCleanShards" >> beam.Create(self.paths)
            | "PlanUnits" >> beam.ParDo(_PlanUnits(self.rows_per_unit))
            | "SpreadUnits" >> beam.Reshuffle()
            | "Encode" >> beam.ParDo(_EncodeUnits(self.tokenizer_path, self.plan, self.batch_size, self.progress,
                                                  self.fail_fast)).with_outputs(ERRORS, main="chunks")
        )
        errors = encoded[ERRORS] | "CollectErrors" >> beam.combiners.ToList()
        before = (
            encoded.chunks
            | "TrainSourceCounts" >> beam.FlatMap(_train_counts("source"))
            | "SumSourceCounts" >> beam.CombinePerKey(_sum_pairs)
            | "SourceCounts" >> beam.combiners.ToDict()
        )
        languages_before = (
            encoded.chunks
            | "TrainLanguageCounts" >> beam.FlatMap(_train_counts("language"))
            | "SumLanguageCounts" >> beam.CombinePerKey(_sum_pairs)
            | "LanguageCounts" >> beam.combiners.ToDict()
        )
        epochs = before | "MixtureEpochs" >> beam.Map(_epochs, self.weights, self.target_tokens)
        if self.target_tokens:
            # Two passes (``mixture.quota_bucket``): the keys' histogram says in which bucket each quota is met,
            # then only that bucket's keys are gathered. The keys wait for the histogram on disk when the
            # shuffles do (the step that reads them again cannot run with the encoder).
            keys = encoded.chunks | "TrainMixKeys" >> beam.FlatMap(_train_keys(self.mixture_seed))
            targets = (
                keys
                | "KeyHistograms" >> beam.CombinePerKey(_KeyHistogram())
                | "SourceHistograms" >> beam.combiners.ToDict()
                | "QuotaBuckets" >> beam.Map(_quota_buckets, beam.pvalue.AsSingleton(epochs))
            )
            if spill_directory() is not None:
                keys = keys | "SpreadKeys" >> Reshuffle()
            cutoffs = (
                keys
                | "KeysInQuotaBucket" >> beam.FlatMap(_in_quota_bucket, beam.pvalue.AsSingleton(targets))
                | "KeysPerSource" >> beam.CombinePerKey(_ConcatKeys())
                | "SourceKeys" >> beam.combiners.ToDict()
                | "QuotaCutoffs" >> beam.Map(_cutoffs, beam.pvalue.AsSingleton(targets))
            )
        else:  # no budget: every epoch is whole (1.0), no cutoff is read
            cutoffs = pbegin | "NoCutoffs" >> beam.Create([{}])
        chunks, extra = encoded.chunks, []
        if self.shard_tokens:  # shard counts from the tokens, known only now: documents move to their new shard
            val_tokens = encoded.chunks | "ValTokens" >> beam.FlatMap(_val_tokens) | "SumValTokens" >> beam.CombineGlobally(sum)
            plan = before | "TokenPlan" >> beam.Map(_token_plan, beam.pvalue.AsSingleton(epochs),
                                                   beam.pvalue.AsSingleton(val_tokens), self.plan, self.shard_tokens)
            if spill_directory() is not None:
                # The step that regroups waits for the plan (a side input counted from every chunk), so it
                # cannot run with the encoder: the chunks wait for it on disk, not in the runner's memory.
                chunks = chunks | "SpreadChunks" >> Reshuffle()
            chunks = chunks | "TokenSizedShards" >> beam.FlatMap(_regroup, beam.pvalue.AsSingleton(plan))
            markers = (pbegin | "OneShardList" >> beam.Create([None])
                       | "AllShards" >> beam.FlatMap(_markers, beam.pvalue.AsSingleton(plan)))
            extra = [beam.pvalue.AsSingleton(plan)]
        else:
            # One empty marker per shard, so that every planned shard is written even when no document hashes to it.
            markers = pbegin | "AllShards" >> beam.Create([(key, None) for key in self.plan.keys()])
        return (
            _group_by_shard(chunks, markers)
            | "WriteShards" >> beam.ParDo(_WriteShard(self.output, self.plan, self.mixture_seed),
                                          beam.pvalue.AsSingleton(epochs), beam.pvalue.AsSingleton(cutoffs), *extra)
            | "CollectShards" >> beam.combiners.ToList()
            | "WriteManifest" >> beam.Map(_write_manifest, self.output, self.header, beam.pvalue.AsSingleton(errors),
                                          beam.pvalue.AsSingleton(before), beam.pvalue.AsSingleton(epochs),
                                          self.weights, beam.pvalue.AsSingleton(languages_before))
        )


def _group_by_shard(chunks, markers):
    """``((split, shard), Chunk)`` chunks and ``((split, shard), None)`` markers -> ``((split, shard), [Chunk |
    None])``. Inside ``disk_grouping.spilling_to`` each input waits on local disk, written by the step that made
    it (a CoGroupByKey: a Flatten's inputs would wait in the runner's memory for the grouping step); outside it,
    Beam's Flatten and GroupByKey, the graph that remote runners (and Dataflow's update check) know."""
    if spill_directory() is None:
        return (chunks, markers) | "WithEmptyShards" >> beam.Flatten() | "GroupByShard" >> beam.GroupByKey()
    return ({"chunks": chunks, "markers": markers} | "GroupByShard" >> CoGroupByKey()
            | "WithEmptyShards" >> beam.Map(_joined))


def _joined(group):
    key, by_input = group
    return key, by_input["chunks"] + by_input["markers"]


def shuffle_dir(input_bytes: int, disk_shuffle_mb: float, local_runner: bool, staging: str | None) -> str | None:
    """Where tokenize's shuffles wait (``corpusforge.core.disk_grouping``): on local disk in the staging directory
    when the clean shards exceed ``output.disk_shuffle_mb`` (0: always) and the runner is local (Beam's local
    runners hold a shuffle in memory: every encoded token of the corpus), so memory stays flat as the corpus
    grows; None: the runner's own shuffle (remote runners shuffle on disk themselves, an output that is not a
    local directory has no staging, a small corpus: Beam's in-memory shuffle starts faster and holds little)."""
    if staging is None or not local_runner:
        return None
    if disk_shuffle_mb > 0 and input_bytes <= disk_shuffle_mb * 1e6:
        return None
    return files.join(staging, ".shuffle")


def _vocab_size(text: str) -> int:
    """Vocabulary size of a tokenizer.json's text, added tokens included."""
    from tokenizers import Tokenizer

    return Tokenizer.from_str(text).get_vocab_size(with_added_tokens=True)


def _documents(paths: list[str]) -> int:
    """Rows of the clean shards, from their metadata (``ShardReader.num_rows``: Arrow batch headers, Parquet
    footers; a JSON Lines shard is read)."""
    return sum(open_shard(path).num_rows for path in paths)


def run_tokenize(cfg: TokenizeConfig, run: TokenizeRun, beam_args: list[str] | None = None, progress: bool = True
                 ) -> dict[str, Any]:
    """``corpusforge tokenize``: encode ``<run_dir>/clean`` into ``<run_dir>/tokens``; returns the manifest.
    ``progress``: documents encoded of the total, with ETA and tokens, on stderr while it runs."""
    run_dir = rundir.check_run_dir(run.run.run_dir)
    with run_lock(run_dir, "tokenize"):
        tokenizer = cfg.tokenizer or files.join(run_dir, "tokenizer", "tokenizer.json")
        if rundir.same_path(tokenizer, files.join(run_dir, "tokenizer", "tokenizer.json")):
            rundir.check_fresh(run_dir, "tokenizer")  # a tokenizer of an earlier clean/ is refused, whatever flags
        try:
            return _tokenize(cfg, run, run_dir, beam_args, progress)
        except Exception as exc:  # a full disk inside a Beam worker: one line naming the output
            resource = resource_error(exc, cfg.output or files.join(run_dir, "tokens"))
            if resource is None:
                raise
            raise resource from exc


def _tokenize(cfg: TokenizeConfig, run: TokenizeRun, run_dir: str, beam_args: list[str] | None, progress: bool
              ) -> dict[str, Any]:
    transform = TokenizeShards.from_config(cfg, run_dir, fail_fast=run.faults.fail_fast, weights=run.weights)
    output = transform.output
    in_run = not cfg.output or rundir.same_path(output, files.join(run_dir, "tokens"))
    # Who records the shards: the run directory (RUN/tokens), or, for tokenize.output elsewhere, that folder's
    # own marker (its manifest.json, train/ and val/). Nothing unrecorded is replaced (a user's manifest.json).
    owner_dir, names = (run_dir, ("tokens",)) if in_run else (output, ("manifest.json", *SPLITS))
    if not in_run:
        rundir.check_not_a_run(output, "tokenize.output")
    # tokenize.output elsewhere is a folder of its own: its marker is read, changed and written under its own lock
    # (another command recording an output there meanwhile would lose it); RUN's is held already (re-entrant)
    with run_lock(owner_dir, "tokenize"):
        return _tokenize_into(transform, cfg, run, run_dir, owner_dir, names, in_run, beam_args, progress)


def _tokenize_into(transform: "TokenizeShards", cfg: TokenizeConfig, run: TokenizeRun, run_dir: str, owner_dir: str,
                   names: tuple[str, ...], in_run: bool, beam_args: list[str] | None, progress: bool) -> dict[str, Any]:
    output = transform.output
    made_from = rundir.fingerprint_of(transform.input)  # checked against clean/ by train (and the report)
    previous = [files.join(output, name) for name in ("manifest.json", *SPLITS)]
    doomed: list[str] = []
    if any(files.exists(p) for p in previous):
        if not run.run.overwrite:
            raise UserError(f"{output} already holds token shards; pass --overwrite (--set output.overwrite=true) to replace them")
        rundir.check_owned(owner_dir, list(names))
        if in_run or not files.is_local(output):
            doomed = token_files(output)  # refuses a directory holding files tokenize did not write
    # In a local directory the new shards are written beside the old ones and swapped in on success (a killed
    # tokenize keeps the old shards); elsewhere the old shards go first.
    staging = rundir.make_scratch(owner_dir) if files.is_local(owner_dir) else None
    if staging:
        # the manifest's paths are relative to the final place
        transform.output = files.join(staging, "tokens") if in_run else staging
    else:
        for name in names:  # recorded before anything is written: what a killed run leaves is ours to replace
            rundir.record_output(owner_dir, name, derived=False)
        for path in doomed:  # shards of an earlier plan would otherwise linger beside the new ones
            rundir.delete(path)
    from corpusforge.core.beam_options import pipeline_options

    options = pipeline_options(run.beam, beam_args)
    shown = Progress(None, "", enabled=False)
    if progress and runs_locally(options.get_all_options(), run.beam.runner):
        transform.progress = rundir.temporary_dir("corpusforge-tokenize-")
        shown = Progress(transform.progress, "documents", _documents(transform.paths), unit="docs",
                         extras=(("tokens", "tokens"),), label="tokenize")
    # the run files of the shuffles, when they wait on disk, go with the staging directory
    shuffles = shuffle_dir(transform.input_bytes, run.disk_shuffle_mb,
                           runs_locally(options.get_all_options(), run.beam.runner), staging)
    try:
        with shown, spilling_to(shuffles, partitions_for(transform.input_bytes)), \
                beam_pipeline(options) as pipeline, pipeline as p:  # Beam's temporary directory goes however it ends
            _ = p | "Tokenize" >> transform
        manifest_path = files.join(transform.output, "manifest.json")
        manifest = files.read_json(manifest_path)
        check_token_errors(manifest, run.faults, manifest_path)
    except BaseException:
        if staging:
            rundir.delete(staging)
        raise
    marker = rundir.read_marker(owner_dir) or {"outputs": {}, "derived": {}, "scratch": []}
    for name in names:
        where = files.join(staging or owner_dir, name)
        marker["outputs"][name] = rundir.listing(where) if name in ("tokens", *SPLITS) else None
        marker["derived"][name] = made_from
    if staging:
        rundir.swap_in(owner_dir, staging, names, marker)
    else:
        rundir.write_marker(owner_dir, marker)
    if in_run and made_from == marker.get("corpus_fingerprint"):
        _card_with_tokens(run_dir)
    return manifest


def _card_with_tokens(run_dir: str) -> None:
    """Rewrite the build's dataset card (RUN/README.md, when the build wrote it) with the ``tokens`` config, so
    ``load_dataset(RUN, "tokens")`` finds the new shards; ``load_dataset(RUN)`` stays the clean corpus."""
    marker = rundir.read_marker(run_dir) or {}
    card = files.join(run_dir, CARD)
    if CARD in marker.get("outputs", {}) and (rundir.is_regular(card) if files.is_local(card) else files.exists(card)):
        write_card(run_dir, tokens_root=run_dir)


def token_files(output: str) -> list[str]:
    """The files of an earlier tokenize in ``output``: the shards its manifest lists, the manifest, and the
    temporary files of a killed run. Refuses (a ``UserError``) when ``output`` or a split directory holds
    anything else, or a split directory is a link: those are not tokenize's to delete."""
    manifest_path = files.join(output, "manifest.json")
    listed = {"manifest.json"}
    if files.exists(manifest_path):
        try:
            manifest = files.read_json(manifest_path)
        except ValueError:
            manifest = {}
        for split in manifest.get("splits", {}).values():
            listed.update(str(s) for s in split.get("shards", []))
    doomed = [manifest_path] if files.exists(manifest_path) else []
    if files.is_local(output):
        stray = [n for n in sorted(os.listdir(output)) if n not in (*SPLITS, "manifest.json")
                 and not _TEMP_FILE.fullmatch(n)]
        if stray:
            raise UserError(f"{files.join(output, stray[0])} was not written by corpusforge tokenize; move it out of "
                            f"{output} and run again")
    for split in SPLITS:
        directory = files.join(output, split)
        if not files.exists(directory):
            continue
        if files.is_local(directory):
            if os.path.islink(directory):
                raise UserError(f"{directory} is a symbolic link; corpusforge does not delete through links: remove "
                                "the link and run again")
            names = sorted(os.listdir(directory))
            stray = [n for n in names if f"{split}/{n}" not in listed and not _TEMP_FILE.fullmatch(n)
                     and not _SHARD_FILE.fullmatch(n)]  # a killed run's shards, named as ShardPlan names them
            if stray:
                raise UserError(f"{directory}/{stray[0]} was not written by corpusforge tokenize; move it out of "
                                f"{directory} and run again")
            doomed += [os.path.join(directory, n) for n in names]
        else:
            doomed.append(directory)
    return doomed


# What files.atomic_local_file names its temporary files: left behind only by a killed run.
_TEMP_FILE = re.compile(r"\..+\.tmp-[0-9a-f]{32}")
_SHARD_FILE = re.compile(r"part-\d{5}-of-\d{5}\.arrow")


def check_token_errors(manifest: dict[str, Any], faults: FaultConfig, manifest_path: str) -> None:
    """More documents left out because encoding raised than ``faults`` tolerates (``build.error_allowance``, or
    ``build.max_error_fraction`` of them): a systematic bug. The manifest (what marks the token shards complete)
    is removed and the run fails."""
    failed = manifest.get("stage_errors", {}).get("documents", 0)
    encoded = manifest.get("documents_encoded", sum(split["documents"] for split in manifest["splits"].values()))
    total = failed + encoded  # before a mixture repeated or dropped documents
    if failed and not encoded:
        # Every document raised: token shards holding nothing are no corpus to train on, whatever the allowance
        # (a run of a few documents fits in it), as a build whose every record is rejected publishes nothing
        # (pipeline.build.check_something_kept).
        rundir.delete(manifest_path)
        by = ", ".join(f"{name} {n:,}" for name, n in manifest["stage_errors"]["by_type"].items())
        raise UserError(f"every one of the {failed:,} documents could not be tokenized ({by}); nothing was published. "
                        "Rerun with --set build.fail_fast=true to see the first traceback")
    if faults.tolerates(failed, total):
        return
    limit = faults.max_error_fraction
    rundir.delete(manifest_path)
    by = ", ".join(f"{name} {n:,}" for name, n in manifest["stage_errors"]["by_type"].items())
    raise UserError(f"{failed:,} of {total:,} documents ({failed / total:.2%}) could not be tokenized ({by}), more than "
                    f"build.max_error_fraction={limit:g} (and build.error_allowance={faults.error_allowance}); the token shards are not marked complete. Rerun with "
                    "--set build.fail_fast=true to see the first traceback, or raise build.max_error_fraction")


