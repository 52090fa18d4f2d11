"""What the dedup sub-transforms share: the stage name, and the join that turns verdicts into outputs.

Every sub-transform decides on light records (ids, ranks, hashes, signatures) and only at the end joins
its verdicts back to the documents by id, so no step ever gathers documents by content. That join is done one
of two ways (``dedup.joins``, ``join_mode``), with the same outputs:

- ``shuffle``: a ``CoGroupByKey`` of ``(id, document)`` with the verdict collections, every document
  shuffled; a worker holds one id's documents and verdicts at a time. For every runner.
- ``side_input``: the verdict collections (far smaller than the documents: ids and details of the documents
  removed or edited) are read by every worker as side inputs (``AsGrouped``), and a ``ParDo`` over the
  documents looks each one's verdicts up by id. No document is grouped; each worker holds every verdict of the
  step. ``auto`` picks it on Beam's DirectRunner, whose driver holds every shuffle in memory anyway.

Both call the same DoFn on the same ``(id, {"doc": [documents], tag: [verdicts]...})`` group. A ParDo over
the documents can only give that group to a document whose id no other document of the stage holds (ids are
unique in a build, ``readers.namespaced_ids``): the documents that share an id (``SharedIds``) are gathered by
id first (a ``GroupByKey`` of those documents only) and each group is joined whole, so they are removed
together, counted in ``documents_sharing_an_id`` and rejected together, as in the shuffle.
"""
from __future__ import annotations

import array
import hashlib
import pickle

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.portability import common_urns
from apache_beam.transforms.window import GlobalWindows

from corpusforge.core.disk_grouping import CoGroupByKey, GroupByKey, spill_directory
from corpusforge.pipeline.dedup.text import survivor_rank
from corpusforge.pipeline.document import Document, held_bytes
from corpusforge.pipeline.document_coder import DocumentPairs, Documents
from corpusforge.pipeline.stage import EDITS, ERRORS, REMOVED, StageOutputs, removal, split_outputs

STAGE = "dedup"
KEYS = "keys"  # the tagged output of a step that passes documents on and emits their grouping keys beside them
SHUFFLE, SIDE_INPUT, BATCHES = "shuffle", "side_input", "batches"
SHARED = "shared"  # tagged output of the side-input join: documents whose id another document holds
# In a group given to a join's DoFn: ``[value]`` that the document's producer carried beside it to the join
# (``join_verdicts``' ``carried``), where the document is joined alone (not when documents share its id).
CARRIED = "carried"


def node_of(doc, score_key: str) -> tuple:
    """The graph node of a document: its survivor rank (the smallest node of a group survives)."""
    return survivor_rank(doc.id, doc.annotations, score_key)


def digest64(data: bytes) -> int:
    """A stable 64-bit hash (BLAKE2b) for grouping keys, signed: Beam's default coder writes an int of -2**63 ..
    2**63 - 1 as one varint and pickles any other (~1 us each way, on ~1 key in 2 when they were unsigned)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


def join_mode(setting: str, direct_runner: bool, unique_ids: bool = False) -> str:
    """``shuffle``, ``side_input`` or ``batches``: ``dedup.joins``, ``auto`` decided by the runner (as
    ``near.components_mode``): side inputs on Beam's DirectRunner while its shuffles are in memory, because
    every worker of another runner would hold every verdict; else ``batches`` where no two documents share an id
    (``unique_ids``: a build's), ``shuffle`` where they may. ``batches`` where ids may be shared (a ``Dedup``
    stage used without a build) is ``shuffle`` too: a batch join cannot gather one id's documents from several
    batches (a step transform given ``batches`` takes its caller's word that they are unique)."""
    if setting == "auto":
        # a build whose shuffles wait on disk (corpusforge.core.disk_grouping) shuffles its documents too: a
        # side-input join would hold every document in memory until the verdicts are ready
        if direct_runner and spill_directory() is None:
            return SIDE_INPUT
        return BATCHES if unique_ids else SHUFFLE
    return setting


# ----------------------------------------------------------------------------------------------- batch keys
#
# With ``batches`` joins a step's documents wait in batches (``HeldDocs(keyed=True)``, near-dedup's signature
# batches), each under a batch key: the 64-bit hash of its first document's id, unique in a build because ids are
# (two batches under one key, a hash collision, are joined together and still looked up by id). Each document's
# node then names its batch (``in_batch``: ``(rank, score, id, batch key)``), every record a step groups carries
# that node, and a verdict goes to the batch (``verdict_of``): one grouping by batch key applies a step's
# verdicts to ``DOC_BATCH`` documents at once, where the ``shuffle`` join moves one record per document.


def batch_key(first_id: str) -> int:
    """The key of a batch whose first document's id is ``first_id``."""
    return _id_hash(first_id)


def in_batch(node: tuple, key: int) -> tuple:
    """``node`` (``node_of``'s ``(rank, score, id)``) naming the batch ``key`` its document waits in. The key
    comes after the id, so it never decides an order between nodes of different documents."""
    return (*node[:3], key)


def verdict_of(node: tuple, value) -> tuple:
    """The record of a verdict ``value`` on ``node``'s document: ``(id, value)``, or ``(batch key, (id, value))``
    for a node that names its batch (``in_batch``)."""
    if len(node) > 3:
        return node[3], (node[2], value)
    return node[2], value


class _ApplyVerdicts(beam.DoFn):
    """``(id, {"doc": [documents], "verdict": [details]})`` -> the document, or its removal."""

    # A lone document without verdicts comes out as it went in, counting nothing: _JoinBySideInput passes it
    # on without building its group (most documents of every join).
    keeps_unjudged = True

    def __init__(self, reason: str):
        self.reason = reason
        self.removed = Metrics.counter(STAGE, reason)
        self.shared_ids = Metrics.counter(STAGE, "documents_sharing_an_id")

    def process(self, item):
        _, grouped = item
        docs, verdicts = list(grouped["doc"]), list(grouped["verdict"])
        if len(docs) > 1:
            self.shared_ids.inc(len(docs))
        for doc in docs:
            if verdicts:
                self.removed.inc()
                yield removal(doc, STAGE, self.reason, **verdicts[0])
            else:
                yield doc


def apply_verdicts(docs, verdicts, reason: str, label: str, mode: str = SHUFFLE, shared=None,
                   batched: bool = False, kept_lists: bool = False) -> StageOutputs:
    """Remove the documents that ``verdicts`` (``(id, details)``) name, with ``reason`` and the details
    (``join_verdicts``: ``mode``, ``shared``, ``batched``, ``kept_lists``)."""
    return join_verdicts(docs, {"verdict": verdicts}, _ApplyVerdicts(reason), label, mode, shared,
                         join_label=f"{label}JoinVerdicts", apply_label=f"{label}Apply", batched=batched,
                         kept_lists=kept_lists)


# ------------------------------------------------------------------------------------ documents sharing an id


def _id_hash(doc_id: str) -> int:
    return digest64(doc_id.encode("utf-8", "surrogatepass"))


class _BundleIdHashes(beam.DoFn):
    """Documents -> one array of their ids' 64-bit hashes per bundle (8 bytes a document, no Beam element
    each)."""

    def start_bundle(self):
        self.hashes = array.array("q")

    def process(self, doc):
        self.hashes.append(_id_hash(doc.id))

    def finish_bundle(self):
        if self.hashes:
            yield GlobalWindows.windowed_value((None, self.hashes.tobytes()))
        self.hashes = array.array("q")


def _repeated_hashes(item):
    """``(None, [hash arrays])`` -> the frozenset of the hashes that occur more than once (ids that documents
    share, and, harmlessly, the rare ids whose hashes collide: their documents take the shuffle join)."""
    _, arrays = item
    hashes, counts = np.unique(np.frombuffer(b"".join(arrays), dtype=np.int64), return_counts=True)
    yield frozenset(hashes[counts > 1].tolist())


class SharedIds(beam.PTransform):
    """Documents -> one element (none for no documents): the frozenset of the id hashes that more than one
    document holds, usually empty. Each bundle's id hashes travel as one array to one worker (8 bytes per
    document)."""

    def expand(self, docs):
        return (
            docs
            | "IdHashes" >> beam.ParDo(_BundleIdHashes())
            | "GatherIdHashes" >> GroupByKey()
            | "RepeatedIdHashes" >> beam.FlatMap(_repeated_hashes)
        )


class _UniqueIds:
    """``join_verdicts``' ``shared`` for documents whose ids are unique (a build's: its reader makes them so,
    README "Document ids"): no ``SharedIds`` is computed and no document is gathered by id."""

    def __repr__(self):
        return "UNIQUE_IDS"


UNIQUE_IDS = _UniqueIds()


def shared_view(shared):
    """The side input of a ``SharedIds`` collection: a frozenset (empty when it has no element)."""
    return beam.pvalue.AsSingleton(shared, default_value=frozenset())


def _is_shared(doc_id: str, shared: frozenset) -> bool:
    return bool(shared) and _id_hash(doc_id) in shared


# --------------------------------------------------------------------------------------------------- joins

# Verdicts reach a side input packed, many (key, value) pairs pickled into one byte string per bundle (or per
# PACK_PAIRS pairs): the local runner's state cache weighs every side input it caches by walking each of its
# elements' objects (objsize), which cost ~60 us per unpacked verdict, more than the shuffle it replaces.
PACK_PAIRS = 1 << 16
# Documents that only wait for a side-input join cross the stage boundary in lists of this many: one Beam
# element (coding, framing, dispatch) per list instead of per document. A list also ends once it holds
# DOC_BATCH_BYTES (``document.held_bytes``: text in memory and metadata), so one list, and a batch join's group,
# stays bounded however long the documents (the reader's batches are bounded alike).
DOC_BATCH = 256
DOC_BATCH_BYTES = 8_000_000


class _PackPairs(beam.DoFn):
    """``(key, value)`` pairs (``lists``: lists of them) -> pickled lists of them, one per bundle (or per
    ``PACK_PAIRS`` pairs)."""

    def __init__(self, lists: bool = False):
        self.lists = lists

    def start_bundle(self):
        self.pairs: list = []

    def process(self, pair):
        if self.lists:
            self.pairs += pair
        else:
            self.pairs.append(pair)
        if len(self.pairs) >= PACK_PAIRS:
            packed, self.pairs = pickle.dumps(self.pairs, pickle.HIGHEST_PROTOCOL), []
            yield packed

    def finish_bundle(self):
        if self.pairs:
            yield GlobalWindows.windowed_value(pickle.dumps(self.pairs, pickle.HIGHEST_PROTOCOL))
        self.pairs = []


def _grouped(packs) -> dict:
    """``{key: [values]}`` of the pairs of ``_PackPairs``' packs."""
    by_key: dict = {}
    for packed in packs:
        for key, value in pickle.loads(packed):
            by_key.setdefault(key, []).append(value)
    return by_key


class AsGrouped(beam.pvalue.AsSideInput):
    """A side input of ``(key, value)`` pairs seen as ``{key: [values]}``: the pairs are packed first
    (``_PackPairs``; use ``AsGrouped.of``) and read in one pass per bundle (as ``AsDict`` reads, unlike
    ``AsMultiMap``, which asks the runner's state API once per key looked up)."""

    @classmethod
    def of(cls, pairs, label: str, lists: bool = False) -> "AsGrouped":
        """``pairs``: a collection of ``(key, value)`` pairs (``lists``: of lists of them, one Beam element per
        list, for a producer of many pairs)."""
        return cls(pairs | label >> beam.ParDo(_PackPairs(lists)))

    @staticmethod
    def _from_runtime_iterable(it, options):
        return _grouped(it)

    def _side_input_data(self) -> beam.pvalue.SideInputData:
        return beam.pvalue.SideInputData(common_urns.side_inputs.ITERABLE.urn, self._window_mapping_fn, _grouped)


class _JoinBySideInput(beam.DoFn):
    """A document -> what ``fn`` yields for ``(id, {"doc": [document], tag: [verdicts]...})``, the group a
    ``CoGroupByKey`` would give it, its verdicts looked up in the side inputs (``AsGrouped``, one per tag);
    a document whose id another document holds goes to the ``SHARED`` output as ``(id, document)`` instead.
    ``batched``: elements are lists of documents, each joined alone; ``gathered``: elements are
    ``(id, [documents])`` of an id that documents share, each group joined whole; ``carried``: the lists hold
    ``(document, value)`` pairs, the value given to ``fn`` as ``[value]`` under ``CARRIED`` when the document is
    joined alone (a document sharing its id goes to ``SHARED`` without it)."""

    def __init__(self, fn: beam.DoFn, tags: list[str], batched: bool = False, gathered: bool = False,
                 kept_lists: bool = False, carried: bool = False):
        self.fn, self.tags, self.batched, self.gathered = fn, tags, batched, gathered
        self.carried = carried
        self.kept_lists = kept_lists  # the kept documents of an element go on as one list (none when empty)
        # fn's own, or that of the DoFn the dead-letter wrapper (stage.guarded: faults.Isolated) holds
        inner = getattr(fn, "fn", None)
        self.unjudged_pass = getattr(fn, "keeps_unjudged", False) or getattr(inner, "keeps_unjudged", False)

    def setup(self):
        self.fn.setup()

    def start_bundle(self):
        return self.fn.start_bundle()

    def process(self, element, shared, *verdicts):
        if self.batched and not self.gathered:
            return self._batch(element, shared, verdicts)
        if self.gathered:
            out = self._join(element[0], element[1], verdicts)
        else:
            out = self._one(element, shared, verdicts)
        if not self.kept_lists:
            return out
        tagged, kept = [], []
        for o in out:
            (tagged if isinstance(o, beam.pvalue.TaggedOutput) else kept).append(o)
        if kept:
            tagged.append(kept)
        return tagged

    def _batch(self, element, shared, verdicts) -> list:
        """A list of documents (``carried``: of ``(document, value)`` pairs) -> what ``_one`` gives for each, in
        order, with the edits summed (``_summed_edits``) and, ``kept_lists``, the kept documents as one list.
        Per list, not per document: the ids that a verdict names are found in one pass over each verdict dict's
        keys, the ids are hashed only when some ids are shared (``shared`` is usually empty), and a document
        without verdicts goes on as it is, never into a list of outputs to sort."""
        if self.carried:
            docs, values = [doc for doc, _ in element], [value for _, value in element]
        else:
            docs, values = element, None
        ids = [doc.id for doc in docs]
        apart = {i for i, doc_id in enumerate(ids) if _id_hash(doc_id) in shared} if shared else ()
        if self.unjudged_pass:
            judged: set = set()
            for by_id in verdicts:
                judged |= by_id.keys() & ids
        else:
            judged = None
        kept_lists, tags = self.kept_lists, self.tags
        kept: list = []  # kept_lists: the kept documents; else every output but the edits, in order
        tagged: list = []  # kept_lists: the tagged outputs but the edits, in order
        edits: dict = {}
        fn_process = self.fn.process
        TaggedOutput = beam.pvalue.TaggedOutput
        for i, doc in enumerate(docs):
            doc_id = ids[i]
            if apart and i in apart:
                (tagged if kept_lists else kept).append(TaggedOutput(SHARED, (doc_id, doc)))
                continue
            if judged is not None and doc_id not in judged:
                kept.append(doc)
                continue
            grouped = {"doc": [doc]}
            if values is not None:
                grouped[CARRIED] = [values[i]]
            for tag, by_id in zip(tags, verdicts):
                grouped[tag] = by_id.get(doc_id, ())
            for o in fn_process((doc_id, grouped)) or ():
                if isinstance(o, TaggedOutput):
                    if o.tag == EDITS:
                        stage, counter, amount = o.value
                        edits[(stage, counter)] = edits.get((stage, counter), 0) + amount
                    else:
                        (tagged if kept_lists else kept).append(o)
                else:
                    kept.append(o)
        if edits:
            tagged += [TaggedOutput(EDITS, (stage, counter, amount)) for (stage, counter), amount in edits.items()]
        if not kept_lists:
            return kept + tagged
        if kept:
            tagged.append(_as_batch(kept))
        return tagged

    def _one(self, doc, shared, verdicts, carried=None):
        doc_id = doc.id
        if _is_shared(doc_id, shared):
            return [beam.pvalue.TaggedOutput(SHARED, (doc_id, doc))]
        if self.unjudged_pass:
            for by_id in verdicts:
                if doc_id in by_id:
                    break
            else:
                return [doc]
        return self._join(doc_id, [doc], verdicts, carried)

    def _join(self, doc_id, docs, verdicts, carried=None):
        grouped = {"doc": docs}
        if carried is not None:
            grouped[CARRIED] = [carried]
        for tag, by_id in zip(self.tags, verdicts):
            grouped[tag] = by_id.get(doc_id, ())
        return self.fn.process((doc_id, grouped)) or ()

    def finish_bundle(self):
        return self.fn.finish_bundle()

    def teardown(self):
        self.fn.teardown()


class _JoinByBatch(_JoinBySideInput):
    """``(batch key, {"doc": [batches], tag: [(id, value)...]...})``, a batch join's group -> what
    ``_JoinBySideInput`` gives each batch with those verdicts looked up by id: every document joined alone (ids
    are unique where ``batches`` joins run), the edits summed per group, and (``kept_lists``) each batch's kept
    documents as one list."""

    def __init__(self, fn: beam.DoFn, tags: list[str], kept_lists: bool = False, carried: bool = False):
        super().__init__(fn, tags, batched=True, kept_lists=kept_lists, carried=carried)

    def process(self, item):
        _, grouped = item
        verdicts = []
        for tag in self.tags:
            by_id: dict = {}
            for doc_id, value in grouped[tag]:
                by_id.setdefault(doc_id, []).append(value)
            verdicts.append(by_id)
        out: list = []
        for batch in grouped["doc"]:
            out += self._batch(batch, (), verdicts)
        return _summed_edits(out)


def _summed_edits(out: list) -> list:
    """``out`` with its edits (``(stage, counter, amount)`` tagged ``EDITS``) summed per stage and counter, in
    the order each first appears: what the build's stats do with them (``stats.edit_facts``), one Beam element
    per counter of a list of documents instead of ~2 per document."""
    sums: dict = {}
    rest = []
    for o in out:
        if isinstance(o, beam.pvalue.TaggedOutput) and o.tag == EDITS:
            stage, counter, amount = o.value
            sums[(stage, counter)] = sums.get((stage, counter), 0) + amount
        else:
            rest.append(o)
    if not sums:
        return out
    return rest + [beam.pvalue.TaggedOutput(EDITS, (stage, counter, amount)) for (stage, counter), amount in sums.items()]


def _as_batch(items: list) -> list:
    """``items`` as the element that carries them across a stage boundary: a list of documents as ``Documents``,
    of ``(document, value)`` pairs as ``DocumentPairs`` (``DocumentCoder`` writes either as columns in one call,
    where a plain list makes one call of the coder's fallback per document: a ~2.2 KB document's round trip in a
    batch of 256, 19.6 -> 12.6 us on a loaded machine), anything else as it is."""
    if not items:
        return items
    first = items[0]
    if type(first) is Document:
        return Documents(items)
    if type(first) is tuple and len(first) == 2 and type(first[0]) is Document:
        return DocumentPairs(items)
    return items


class HeldDocs:
    """What a DoFn that passes documents on in lists holds: ``hold(doc)`` the lists to emit now (one every
    ``DOC_BATCH`` documents), ``rest()`` the last list of the bundle (for ``finish_bundle``). Documents cross
    a stage boundary as one element per list instead of one each (see ``join_verdicts``' ``batched``), a list
    of documents as ``Documents`` (``_as_batch``); a list ends at ``DOC_BATCH_BYTES`` too. ``keyed`` (``batches`` joins): each list goes as
    ``(batch key, list)``, and ``key`` is the batch key of the list the last document held went into (for its
    node, ``in_batch``). A held item is a document or a ``(document, value)`` pair."""

    def __init__(self, keyed: bool = False):
        self.docs: list = []
        self.keyed = keyed
        self.key: int | None = None
        self.bytes = 0

    def hold(self, doc) -> list:
        document = doc[0] if type(doc) is tuple else doc
        size = held_bytes(document)  # before the document is held: a hold that raised holds nothing
        if not self.docs and self.keyed:
            self.key = batch_key(document.id)
        self.docs.append(doc)
        self.bytes += size
        if len(self.docs) < DOC_BATCH and self.bytes < DOC_BATCH_BYTES:
            return []
        return [self._emitted()]

    def _emitted(self):
        batch, self.docs, self.bytes = _as_batch(self.docs), [], 0
        return (self.key, batch) if self.keyed else batch

    def rest(self) -> list:
        return [GlobalWindows.windowed_value(self._emitted())] if self.docs else []


def _by_id(doc):
    return doc.id, doc


def _each(batch):
    return batch


def _each_carried(batch):
    return [doc for doc, _ in batch]


def _carried_apart(item):
    """A joined ``(id, {"doc": [(document, value)...], ...})`` -> the same with the documents under ``"doc"``
    and their values under ``CARRIED``, in the same order."""
    doc_id, grouped = item
    pairs = list(grouped["doc"])
    apart = {tag: values for tag, values in grouped.items()}
    apart["doc"], apart[CARRIED] = [doc for doc, _ in pairs], [value for _, value in pairs]
    return doc_id, apart


def join_verdicts(docs, verdicts: dict, fn: beam.DoFn, label: str, mode: str = SHUFFLE, shared=None,
                  join_label: str | None = None, apply_label: str | None = None, keyed: bool = False,
                  batched: bool = False, with_edits: bool = False, with_errors: bool = False,
                  kept_lists: bool = False, carried: bool = False, listed: tuple = ()) -> StageOutputs:
    """The outputs of ``fn`` (a DoFn of ``(id, {"doc": [documents], tag: [values]...})`` with main output
    kept and tagged ``REMOVED``, and ``EDITS``, ``ERRORS`` when asked) on every document of ``docs`` (documents,
    ``(id, document)`` when ``keyed``, lists of documents when ``batched``: the producer's choice in
    ``side_input`` mode) joined by id with ``verdicts`` (``{tag: (id, value) collection}``).

    ``kept_lists`` (``side_input`` mode): the kept documents come out in lists, those of one input element
    each, for a consumer that takes lists (near-dedup after exact dedup), not one Beam element each.
    ``carried``: the lists (``side_input`` mode, ``batched``) or keyed elements (``shuffle`` mode, ``keyed``) hold
    ``(document, value)`` pairs, and ``fn`` finds the documents' values under ``CARRIED``, in the order of its
    ``"doc"`` (side inputs: a lone document's only; what the producer computed that ``fn`` would compute again).

    ``mode`` ``batches``: ``docs`` are ``(batch key, list)`` (``HeldDocs(keyed=True)``; lists of ``(document,
    value)`` pairs when ``carried``), ``verdicts`` ``(batch key, (id, value))`` (``verdict_of`` of nodes that name
    their batch; ``listed``: the tags whose elements are lists of them, disk_grouping's listed inputs), one
    ``CoGroupByKey`` by batch key; ids must be unique. ``shuffle``: one ``CoGroupByKey``. ``side_input``: ``_JoinBySideInput`` (a value of ``verdicts`` may
    be an ``AsGrouped`` already, shared with another step); the documents whose id
    ``shared`` (a ``SharedIds`` of these documents or of a superset of them; computed here when None) names
    are gathered by id first (a ``GroupByKey`` of those documents only), so each such group is joined whole.
    ``shared`` ``UNIQUE_IDS``: no two documents share an id (a build's), each is joined alone and the outputs are
    the join's own, with no Flatten."""
    tags = [REMOVED] + ([EDITS] if with_edits else []) + ([ERRORS] if with_errors else [])
    join_label, apply_label = join_label or f"{label}Join", apply_label or f"{label}Apply"
    if mode == BATCHES:
        joined = {"doc": docs, **verdicts} | join_label >> CoGroupByKey(listed=listed)
        return split_outputs(joined | apply_label >> beam.ParDo(_JoinByBatch(fn, list(verdicts), kept_lists, carried))
                             .with_outputs(*tags, main="kept"), with_edits, with_errors)
    if mode == SHUFFLE:
        if kept_lists or (carried and not keyed):
            raise ValueError("kept_lists needs the side_input join, carried keyed documents with a shuffle")
        if batched:
            docs = docs | f"{label}Unbatch" >> beam.FlatMap(_each)
        keyed_docs = docs if keyed else docs | f"{label}KeyDocs" >> beam.Map(_by_id)
        joined = {"doc": keyed_docs, **verdicts} | join_label >> CoGroupByKey()
        if carried:
            joined = joined | f"{label}CarriedApart" >> beam.Map(_carried_apart)
        return split_outputs(joined | apply_label >> beam.ParDo(fn).with_outputs(*tags, main="kept"),
                             with_edits, with_errors)
    if mode != SIDE_INPUT:
        raise ValueError(f"unknown join mode {mode!r}: expected {SHUFFLE!r} or {SIDE_INPUT!r}")
    if keyed:
        docs = docs | f"{label}Unkey" >> beam.Values()
    packed = [v if isinstance(v, AsGrouped) else AsGrouped.of(v, f"{label}Pack{tag.title()}")
              for tag, v in verdicts.items()]
    if shared is UNIQUE_IDS:
        # Every document is joined alone, so the kept documents are the join's own output: no Flatten with a
        # gathered branch, whose buffer would make every document cross one more fused-stage boundary (encoded and
        # decoded once more) before the next step, and no SharedIds step over every document.
        applied = docs | apply_label >> beam.ParDo(_JoinBySideInput(fn, list(verdicts), batched, kept_lists=kept_lists,
                                                                    carried=carried),
                                                   frozenset(), *packed).with_outputs(*tags, main="kept")
        return StageOutputs(kept=applied.kept, removed=applied[REMOVED], edits=applied[EDITS] if with_edits else None,
                            errors=applied[ERRORS] if with_errors else None)
    if shared is None:
        singles = docs | f"{label}Unbatch" >> beam.FlatMap(_each_carried if carried else _each) if batched else docs
        shared = singles | f"{label}SharedIds" >> SharedIds()
    side = [shared_view(shared)] + packed
    applied = docs | apply_label >> beam.ParDo(_JoinBySideInput(fn, list(verdicts), batched, kept_lists=kept_lists,
                                                                carried=carried),
                                               *side).with_outputs(SHARED, *tags, main="kept")
    gathered = (
        applied[SHARED]
        | f"{join_label}Shared" >> GroupByKey()  # documents sharing an id: none in a build
        | f"{apply_label}Shared" >> beam.ParDo(_JoinBySideInput(fn, list(verdicts), gathered=True,
                                                                kept_lists=kept_lists), *side)
        .with_outputs(*tags, main="kept")
    )
    # in memory: a side-input join holds the documents until its verdicts are ready by design (dedup.joins)
    flat = {tag: (applied[tag], gathered[tag]) | f"{label}Flatten{tag.title()}" >> beam.Flatten()
            for tag in ["kept", *tags]}
    return StageOutputs(kept=flat["kept"], removed=flat[REMOVED], edits=flat.get(EDITS), errors=flat.get(ERRORS))
