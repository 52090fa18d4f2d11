"""Near-duplicate removal with MinHash LSH, verified candidates and connected components.

    docs -> signatures (vectorised, batches) -> band records packed by band shard -> buckets
         -> candidate pairs of node digests -> one join by digest (signatures, ranks restored)
         -> verified pairs (estimated Jaccard >= verify_threshold, with that estimate) -> connected components
            (distributed rounds, or on Beam's DirectRunner all verified pairs on one worker: ``components``)
         -> each component's verified pairs gathered -> components split: in survivor order (score, then
            verified partners, then id), each document goes to the first kept document it is verified
            similar to, or is kept itself
         -> removals with survivor, size, similarity (always >= verify_threshold)

Nothing here gathers documents or all signatures on one worker. What is grouped, and what one group holds:

- a band shard: 16 bytes per (band key, node digest) record of 1/BAND_SHARDS of the band keys;
- a digest in the signature join: its document's rank and signature and its partners' digests;
- a digest in verification: its own signature and one (rank, signature) per candidate partner;
- a bucket above max_bucket_pairs: its members' ranks and signatures (pairs follow rank order);
- a node during connected components: its current neighbours (one edge ~ 2 ranks, ~200 bytes), or, with
  ``components: single`` (``auto`` on the DirectRunner, whose driver holds every shuffle in memory anyway),
  every verified pair under one key: one edge per near-duplicate pair, far fewer and smaller than documents;
- a node when its edges are sent to its component: its verified edges to larger nodes;
- a component at the end: its verified pairs (two ranks and a float each), to split it soundly;
- the join of the removals to the documents (``common.join_verdicts``): one id's documents and verdict
  (``joins: shuffle``), or every removal of the step on every worker, as a side input (``side_input``).

Signatures travel as their low 16 bits (2 x num_perm bytes, ``short_signatures``). Every signature join
after the first takes its signatures from the step before, so only the verification step's candidates and
the verified pairs' ends carry one. With a ``spill_dir`` (a build on a local run directory) the signatures
and band records are written to spill files once and every shuffle carries references instead (read back
where signatures are compared): Beam's local runners hold every shuffled value in memory, decoded and
encoded, so those shuffles were most of near-dedup's memory there.
"""
from __future__ import annotations

import typing

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from corpusforge.core.disk_grouping import CoGroupByKey, Distinct, Flatten, GroupByKey
from corpusforge.pipeline.dedup.buckets import band_records, buckets, node_digest
from corpusforge.pipeline.dedup.common import (
    BATCHES, SHUFFLE, STAGE, AsGrouped, apply_verdicts, batch_key, in_batch, join_mode, node_of, verdict_of,
)
from corpusforge.pipeline.dedup.components import (
    assign_survivors, large_star, orient_small, small_star, union_find_components,
)
from corpusforge.pipeline.dedup.config import NearDedupConfig
from corpusforge.pipeline.dedup.minhash import (
    SHORT_DTYPE, MinHasher, Shingler, band_hashes, estimated_jaccard, lsh_params, short_signatures,
)
from corpusforge.pipeline.document_coder import Documents
from corpusforge.pipeline.spill import LoadText, SpillWriter, read_bytes
from corpusforge.pipeline.stage import ERRORS, StageOutputs, guarded

REASON = "near_duplicate"
BANDS, LARGE, DOCS = "bands", "large", "docs"
# Band records (16 bytes each, bands x documents in all) are grouped in this many shards, each sorted to find
# its buckets: 1 MB per shard at a million documents of 64 bands. Results do not depend on it.
BAND_SHARDS = 1024
# Band records are packed per band shard once this many have gathered in a bundle (16 MB), not per signature
# batch: a batch of ~60 documents gave ~4 records per shard, and the per-element cost of those tiny byte
# strings (Python objects in the local runner's group buffers, framing on the data plane) was larger than
# the records. 1M records make ~1,000 per shard.
BAND_FLUSH_RECORDS = 1 << 20


def banding(config: NearDedupConfig) -> tuple[int, int]:
    """``(bands, rows)``: as configured, or datasketch's choice for the candidate threshold."""
    if config.bands:
        return config.bands, config.rows
    return lsh_params(config.candidate_threshold, config.num_perm, config.false_positive_weight)


class _SignatureFn(beam.DoFn):
    """A batch of documents -> the documents, tagged DOCS (a document whose signature raised is rejected
    instead), ``(digest, (node, signature bytes))`` per document and, tagged BANDS,
    ``(shard, packed (band key, digest) records)`` per band shard (corpusforge.pipeline.dedup.buckets). With a
    ``spill_dir`` the signatures and the packed records go to spill files there and spill references
    ``(path, offset, length)`` take their place."""

    def __init__(self, config: NearDedupConfig, score_key: str, spill_dir: str | None = None, batched: bool = False,
                 by_batch: bool = False):
        self.config, self.score_key, self.spill_dir = config, score_key, spill_dir
        # the documents go on as the batch (a list), not one by one, and so do the (digest, (node, signature))
        # records: one list per batch (side-input joins, _picked)
        self.batched = batched
        # batches joins: the documents go on as (batch key, list), the records one by one with nodes that name
        # the batch (common.in_batch)
        self.by_batch = by_batch
        self.bands, self.rows = banding(config)
        self.no_shingles = Metrics.counter(STAGE, "near_documents_without_shingles")
        # Built at construction: workers unpickle its two small permutation arrays instead of drawing them again
        # (for a configuration not in datasketch_tables that would import datasketch and its scipy, ~1 s).
        self.hasher = MinHasher(config.num_perm, config.seed, Shingler(config.ngram, config.unit, config.hash))

    def setup(self):
        self.spill = SpillWriter(self.spill_dir, ".near") if self.spill_dir else None

    def start_bundle(self):
        self.pending_keys: list[np.ndarray] = []
        self.pending_digests: list[np.ndarray] = []
        self.pending_records = 0

    def process(self, batch):
        hashes, counts = self.hasher.shingler.hashes([d.text for d in batch])
        sigs = self.hasher.from_hashes(hashes, counts)
        keep = np.flatnonzero(counts)  # no words: nothing to compare (exact dedup handles empty texts)
        short = short_signatures(sigs[keep])
        if self.spill is not None and len(keep):  # one write per batch; each document gets its record
            sig_of = self.spill.write_many([row.tobytes() for row in short]).__getitem__
        else:
            sig_of = lambda k: short[k].tobytes()  # noqa: E731
        digests, records = [], []
        key = batch_key(batch[0].id) if self.by_batch and batch else None
        for k, i in enumerate(keep.tolist()):
            node = node_of(batch[i], self.score_key)
            digests.append(node_digest(node))
            records.append((digests[-1], (node if key is None else in_batch(node, key), sig_of(k))))
        # counted once nothing of the batch can raise: a batch that raised is signed again one document at a time
        self.no_shingles.inc(len(batch) - len(keep))
        if not self.batched and not self.by_batch:
            yield from records
        elif records:  # one list a batch (by_batch: a listed input of the signature join)
            yield records
        if self.by_batch:
            yield beam.pvalue.TaggedOutput(DOCS, (key, Documents(batch)))
        elif self.batched:
            yield beam.pvalue.TaggedOutput(DOCS, Documents(batch))  # coded as columns (document_coder)
        else:
            for doc in batch:
                yield beam.pvalue.TaggedOutput(DOCS, doc)
        if digests:
            self.pending_keys.append(band_hashes(sigs[keep], self.bands, self.rows))
            self.pending_digests.append(np.array(digests, dtype=np.int64))
            self.pending_records += len(digests) * self.bands
        if self.pending_records >= BAND_FLUSH_RECORDS:
            yield from (beam.pvalue.TaggedOutput(BANDS, shard) for shard in self._packed_bands())

    def finish_bundle(self):
        for shard in self._packed_bands():
            yield beam.pvalue.TaggedOutput(BANDS, GlobalWindows.windowed_value(shard))
        if self.spill is not None:
            self.spill.close()

    def teardown(self):
        if self.spill is not None:
            self.spill.close()

    def _packed_bands(self):
        """The band records gathered so far, one ``(shard, packed records or their spill reference)`` per
        band shard."""
        if not self.pending_keys:
            return
        keys, digests = np.concatenate(self.pending_keys), np.concatenate(self.pending_digests)
        records = list(band_records(keys, digests, BAND_SHARDS))  # before the reset: nothing is lost if it raises
        self.start_bundle()
        for shard, packed in records:
            yield shard, (self.spill.write(packed) if self.spill is not None else packed)


def _batch_weight(doc) -> int:
    """Batch sizes count documents of up to 4 KB as 1 and longer ones by their size, so that a batch of
    ``batch_size`` stays near ``batch_size`` x 4 KB of text however long the documents are."""
    return 1 + len(doc.text) // 4096


def _weighted_batches(docs: list, batch: int) -> list[list]:
    """A list of documents -> lists of them, their texts loaded (``Document.loaded``: the weight, then the
    signatures, read each text), each weighing at most ``batch`` (``_batch_weight``) unless one document
    alone does: what ``LoadText`` and ``BatchElements`` do for documents that arrive one by one."""
    out, current, weight = [], [], 0
    for doc in docs:
        doc = doc.loaded()
        doc_weight = _batch_weight(doc)
        if current and weight + doc_weight > batch:
            out.append(current)
            current, weight = [], 0
        current.append(doc)
        weight += doc_weight
    if current:
        out.append(current)
    return out


def bucket_pairs(max_all_pairs: int):
    """A bucket ``(key, [nodes])`` -> candidate pairs ``(u, v)`` with ``u < v``.

    Up to ``max_all_pairs`` members, every pair; above, each member with the smallest member and with its
    predecessor in rank order (2n pairs instead of n^2/2, and the bucket stays connected).
    """
    def pairs(bucket):
        _, nodes = bucket
        members = sorted(set(nodes))
        if len(members) < 2:
            return
        if len(members) <= max_all_pairs:
            for i, u in enumerate(members):
                for v in members[i + 1:]:
                    yield u, v
            return
        Metrics.counter(STAGE, "near_large_buckets").inc()
        first = members[0]
        for i in range(1, len(members)):
            yield first, members[i]
            if i > 1:
                yield members[i - 1], members[i]
    return pairs


# A band shard's candidate pairs go on in lists of at most this many (~150 bytes a pair as Python objects, 600 KB a
# list): a shard of full buckets makes pairs quadratic in its records, so one list a shard would not be bounded.
PAIRS_LISTED = 4096


def listed_pairs(max_all_pairs: int):
    """What ``shard_pairs`` gives for a band shard, its pairs in lists of up to ``PAIRS_LISTED`` (none empty) and
    its large buckets' members as they are: one element per list, for a ``Distinct(listed=True)``."""
    one_by_one = shard_pairs(max_all_pairs)

    def pairs(item):
        listed: list = []
        for out in one_by_one(item):
            if isinstance(out, beam.pvalue.TaggedOutput):
                yield out
                continue
            listed.append(out)
            if len(listed) >= PAIRS_LISTED:
                yield listed
                listed = []
        if listed:
            yield listed
    return pairs


def shard_pairs(max_all_pairs: int):
    """A band shard ``(shard, [packed records])`` -> digest pairs ``(a, b)``, ``a < b``, for buckets of up to
    ``max_all_pairs`` documents and, tagged LARGE, ``(digest, band key)`` for each member of a larger one
    (its pairs follow rank order, so they are chosen once the ranks are back: ``_LargeBucketFn``)."""
    def pairs(item):
        _, packed = item
        packed = (read_bytes(p) if isinstance(p, tuple) else p for p in packed)  # spilled or inline records
        for key, members in buckets(packed):
            if len(members) <= max_all_pairs:
                for i, a in enumerate(members):
                    for b in members[i + 1:]:
                        yield a, b
            else:
                for d in members:
                    yield beam.pvalue.TaggedOutput(LARGE, (d, key))
    return pairs


def _route_signatures(item):
    """``(digest, {"node": [(node, sig)], "to": [b...], "from": [...], "large": [band key...]})`` ->
    ``(b, (False, node, sig))`` for each partner b (a half of a candidate pair), ``(digest, (True, node,
    sig))`` when some partner will send its half here, and, tagged LARGE, ``(band key, (node, sig))``.

    Several distinct nodes under one digest (a collision, corpusforge.pipeline.dedup.buckets) are also sent to each
    other, so that every pair of them is verified like a candidate pair.
    """
    digest, grouped = item
    entries = list(grouped["node"])  # one per document of this digest: normally one
    if not entries:
        return
    collision = len({node for node, _ in entries}) > 1
    if collision:
        Metrics.counter(STAGE, "near_digest_collisions").inc()
    partners = set(grouped["to"])
    receives = collision or any(True for _ in grouped["from"])
    large = set(grouped["large"])
    if not (partners or receives or large):
        return  # no candidate
    nodes = _one_signature_per_node(entries)
    for node, sig in nodes.items():
        for b in partners:
            yield b, (False, node, sig)
        if receives:
            yield digest, (True, node, sig)
        if collision:
            yield digest, (False, node, sig)
        for key in large:
            yield beam.pvalue.TaggedOutput(LARGE, (key, (node, sig)))


class _BundleDigests(beam.DoFn):
    """Lists of ``(digest, (node, signature))`` -> one array of their digests per bundle (8 bytes a document)."""

    def start_bundle(self):
        self.digests: list[int] = []

    def process(self, records):
        self.digests += [digest for digest, _ in records]

    def finish_bundle(self):
        if self.digests:
            yield GlobalWindows.windowed_value((None, np.array(self.digests, dtype=np.int64).tobytes()))
        self.digests = []


def _repeated_digests(item):
    """``(None, [digest arrays])`` -> the frozenset of the digests that more than one document holds (documents
    sharing an id, and digest collisions: ``_route_signatures`` compares their nodes)."""
    _, arrays = item
    digests, counts = np.unique(np.frombuffer(b"".join(arrays), dtype=np.int64), return_counts=True)
    yield frozenset(digests[counts > 1].tolist())


def _pair_candidates(pair):
    """A candidate pair ``(a, b)`` -> what each end's route needs: ``a`` sends its half to ``b``, ``b`` receives."""
    a, b = pair
    return [(a, ("to", b)), (b, ("from", None))]


def _large_candidate(member):
    """``(digest, band key)`` of a large bucket's member -> its route's ``large`` entry."""
    digest, key = member
    return digest, ("large", key)


def _picked(records, candidates: dict, repeated: frozenset):
    """A list of ``(digest, (node, signature))`` -> those ``_route_signatures`` sends something for: a digest
    that is a candidate (``candidates``: ``{digest: [(tag, value)...]}``) or that several documents hold
    (``repeated``). The others' groups would route nothing, so they are not grouped."""
    return [record for record in records if record[0] in candidates or record[0] in repeated]


def _route_picked(item, candidates: dict):
    """``(digest, [(node, signature)...])`` -> ``_route_signatures`` of the group that the ``CoGroupByKey`` of
    the shuffle join gives that digest (its candidate entries from the side input)."""
    digest, entries = item
    grouped: dict = {"node": entries, "to": [], "from": [], "large": []}
    for tag, value in candidates.get(digest, ()):
        grouped[tag].append(value)
    return _route_signatures((digest, grouped))


def _signature(sig) -> np.ndarray:
    """A signature from its spill reference ``(path, offset, length)`` or its inline bytes."""
    return np.frombuffer(read_bytes(sig) if isinstance(sig, tuple) else sig, dtype=SHORT_DTYPE)


def _one_signature_per_node(entries) -> dict:
    """``{node: sig}`` from ``(node, sig)`` entries. Two documents of one rank (one node) keep the smaller
    signature, the same one on every run; a node's only signature is not read."""
    nodes: dict = {}
    for node, sig in entries:
        if node not in nodes or _signature(sig).tobytes() < _signature(nodes[node]).tobytes():
            nodes[node] = sig
    return nodes


class _Verifier(beam.DoFn):
    """Links candidate pairs whose signatures estimate Jaccard >= threshold: verified edges
    ``(u, v, estimated Jaccard)`` with ``u < v`` (what splitting components and reporting the similarity to
    the survivor need)."""

    def __init__(self, threshold: float):
        self.threshold = threshold
        self.candidates = Metrics.counter(STAGE, "near_candidate_pairs")
        self.verified = Metrics.counter(STAGE, "near_verified_pairs")

    def verify(self, u_sig: np.ndarray, v_sig: np.ndarray) -> float | None:
        """The estimated Jaccard when it reaches the threshold, else None."""
        self.candidates.inc()
        similarity = estimated_jaccard(u_sig, v_sig)
        if similarity >= self.threshold:
            self.verified.inc()
            return similarity
        return None


def _edge(u, v, similarity: float) -> tuple:
    return (u, v, similarity) if u < v else (v, u, similarity)


class _VerifyFn(_Verifier):
    """``(digest, [(is_self, node, sig)...])`` -> each half verified against each node of the digest.

    ``sig`` is a spill reference or the bytes; each signature of the group is read once."""

    def process(self, item):
        _, entries = item
        entries = [(is_self, node, _signature(sig)) for is_self, node, sig in entries]
        selves = {node: array for is_self, node, array in entries if is_self}
        for v, v_array in selves.items():
            for is_self, u, u_array in entries:
                if is_self or u == v or (u in selves and u > v):  # a colliding pair is verified once
                    continue
                similarity = self.verify(u_array, v_array)
                if similarity is not None:
                    yield _edge(u, v, similarity)


class _LargeBucketFn(_Verifier):
    """``(band key, [(node, sig)...])`` of a bucket above ``max_all_pairs`` -> its rank-order pairs
    (``bucket_pairs``), verified."""

    def __init__(self, threshold: float, max_all_pairs: int):
        super().__init__(threshold)
        self.pairs = bucket_pairs(max_all_pairs)

    def process(self, item):
        key, members = item
        sig_of = _one_signature_per_node(members)
        array_of = {node: _signature(sig) for node, sig in sig_of.items()}
        for u, v in self.pairs((key, list(sig_of))):
            similarity = self.verify(array_of[u], array_of[v])
            if similarity is not None:
                yield _edge(u, v, similarity)


class _ConvergenceFn(beam.DoFn):
    """``(node, [("child", centre) | ("centre", None)...])`` -> ``(child, centre)``; fails loudly when the
    edges are not yet disjoint stars."""

    def __init__(self, max_rounds: int):
        self.max_rounds = max_rounds

    def process(self, item):
        node, roles = item
        centres = {centre for role, centre in roles if role == "child"}
        is_centre = any(role == "centre" for role, _ in roles)
        if len(centres) > 1 or (centres and is_centre):
            raise RuntimeError(
                f"near-duplicate connected components did not converge in {self.max_rounds} rounds "
                "(a very long chain of near-duplicates); raise dedup.near.max_rounds or dedup.near.verify_threshold")
        if centres:
            yield node, centres.pop()


def _roles(edge):
    child, centre = edge
    yield child, ("child", centre)
    yield centre, ("centre", None)


def _both_ways(edge):
    """An edge keyed by each of its ends (what large-star groups by)."""
    u, v = edge
    return [(u, v), (v, u)]


def _large_star_oriented(item):
    """Large-star at a node, its edges keyed by their larger end (what small-star groups by)."""
    node, neighbours = item
    return [orient_small(edge) for edge in large_star(node, neighbours)]


def _small_star_both_ways(item):
    """Small-star at a node, its edges keyed by each end (the next round's large-star)."""
    node, smaller = item
    return [keyed for edge in small_star(node, smaller) for keyed in _both_ways(edge)]


def _small_star_roles(item):
    """The last round's small-star at a node, its edges as ``_roles`` (for the convergence check)."""
    node, smaller = item
    return [role for edge in small_star(node, smaller) for role in _roles(edge)]


class ConnectedComponents(beam.PTransform):
    """Edges ``(u, v)`` between comparable nodes -> ``(node, smallest node of its component)`` for every
    node but the smallest, by ``max_rounds`` rounds of large-star / small-star (corpusforge.pipeline.dedup.components).

    Each step's map is folded into the step before it (a round is group, large-star, group, small-star: two
    transforms besides the groups, module-level functions), because the rounds are unrolled into the graph and
    every transform of it costs graph construction and bundle set-up in every build, whatever the data."""

    def __init__(self, max_rounds: int = 10, label: str = "CC"):
        super().__init__()
        if max_rounds < 1:  # the last round's small-star is what emits the roles the convergence check reads
            raise ValueError(f"ConnectedComponents: max_rounds must be at least 1, got {max_rounds}")
        # Not ``self.label``: that is the PTransform's own label, which ``"Name" >> transform`` replaces.
        self.max_rounds, self.prefix = max_rounds, label

    def expand(self, edges):
        p = self.prefix
        keyed = edges | f"{p}BothWays" >> beam.FlatMap(_both_ways)
        for r in range(self.max_rounds):
            last = r == self.max_rounds - 1
            keyed = (
                keyed
                | f"{p}LargeGroup{r}" >> GroupByKey()
                | f"{p}LargeStar{r}" >> beam.FlatMap(_large_star_oriented)
                | f"{p}SmallGroup{r}" >> GroupByKey()
                | f"{p}SmallStar{r}" >> beam.FlatMap(_small_star_roles if last else _small_star_both_ways)
            )
        return (
            keyed
            | f"{p}GroupRoles" >> GroupByKey()
            | f"{p}Converged" >> beam.ParDo(_ConvergenceFn(self.max_rounds))
        )


def _under_one_key(edge):
    return 0, edge


def _union_find_centres(item):
    """``(_, [(u, v)...])``: every edge -> ``(node, smallest node of its component)`` for every node but the
    smallest, by union-find (``union_find_components``: its root is always the smallest node of the set)."""
    _, edges = item
    for node, centre in union_find_components(edges).items():
        if node != centre:
            yield node, centre


class GatheredComponents(beam.PTransform):
    """What ``ConnectedComponents`` computes, in one step: every edge under one key, one ``GroupByKey``, then
    union-find on the worker that holds them all. One fused stage instead of two per unrolled round, no round
    limit, memory linear in the edges; for runners whose driver holds every shuffle in memory anyway (Beam's
    DirectRunner), not for Dataflow, Spark, Flink or Dask, where one worker would hold the whole edge list."""

    def __init__(self, label: str = "CC"):
        super().__init__()
        self.prefix = label  # not self.label, which ``"Name" >> transform`` replaces

    def expand(self, edges):
        p = self.prefix
        return (
            edges
            | f"{p}OneKey" >> beam.Map(_under_one_key)
            | f"{p}Gather" >> GroupByKey()
            | f"{p}UnionFind" >> beam.FlatMap(_union_find_centres)
        )


def components_mode(setting: str, direct_runner: bool) -> str:
    """``single`` or ``distributed``: ``dedup.near.components``, ``auto`` decided by the runner."""
    if setting == "auto":
        return "single" if direct_runner else "distributed"
    return setting


def _to_component(item):
    """``(u, {"edges": [(v, similarity)...], "centre": [c]})`` -> ``(c, (u, v, similarity))`` per verified
    edge ``u < v``; a node without a centre is the smallest of its component (its own centre)."""
    node, grouped = item
    centre = next(iter(grouped["centre"]), node)
    for v, similarity in grouped["edges"]:
        yield centre, (node, v, similarity)


def survivor_priority(node: tuple, degree: int) -> tuple:
    """The order in which a component's documents claim survivorship (``assign_survivors``): the higher
    survivor score first (``survivor_rank``), then the document verified similar to more of the component,
    then the smaller id. Preferring well-connected documents among equals keeps a cluster's centre (the
    original a set of edited copies derive from) rather than one edited copy that the others are unlike."""
    return node[0], node[1], -degree, node[2]


def _component_verdicts(item):
    """``(centre, [(u, v, similarity)...])``: one component's verified pairs -> ``(member id, details)`` for
    every member removed, its survivor being a kept member it was verified similar to
    (``corpusforge.pipeline.dedup.components.assign_survivors``)."""
    _, edges = item
    assigned = assign_survivors(edges, survivor_priority)
    sizes: dict = {}
    for survivor, _ in assigned.values():
        sizes[survivor] = sizes.get(survivor, 1) + 1
    for member, (survivor, similarity) in sorted(assigned.items()):
        yield verdict_of(member, {"survivor_id": survivor[2], "cluster_size": sizes[survivor],
                          "similarity": round(similarity, 4)})


class NearDedup(beam.PTransform):
    """Remove near-duplicates (reason ``near_duplicate``), keeping the best-ranked document of each cluster.

    A document is removed only in favour of a kept document it was verified similar to (estimated Jaccard
    >= ``verify_threshold``): connected components of the verified pairs are split in survivor order
    (``survivor_priority``: score, then verified partners, then id), so a chain A~B~C~D whose ends are
    unlike keeps more than one document. Removed records carry
    ``survivor_id`` (that verified document), ``cluster_size`` (documents removed in its favour, plus
    itself) and ``similarity`` (the Jaccard similarity to the survivor that the signatures estimate).
    """

    def __init__(self, config: NearDedupConfig | None = None, score_key: str = "quality_score",
                 spill_dir: str | None = None, fail_fast: bool = False, direct_runner: bool = False,
                 joins: str = SHUFFLE):
        """``spill_dir``: a local directory every worker can write and read (a build's spill directory).
        Signatures and band records, the biggest things near-dedup shuffles, then wait there and the shuffles
        carry references: the local runners hold shuffled values in memory, several copies of them.
        ``direct_runner``: the pipeline runs on Beam's DirectRunner, so ``components: auto`` gathers the
        verified pairs on one worker (``GatheredComponents``); without it, ``auto`` is the distributed rounds.
        ``joins``: how the verdicts are joined to the documents (``common.join_verdicts``); ``shared_ids``: the
        stage's ``SharedIds``, when it has one."""
        super().__init__()
        self.config = config or NearDedupConfig()
        self.score_key, self.spill_dir, self.fail_fast = score_key, spill_dir, fail_fast
        self.bands, self.rows = banding(self.config)
        self.components = components_mode(self.config.components, direct_runner)
        self.joins, self.shared_ids = join_mode(joins, direct_runner=False), None  # auto: no build, shuffle
        # its input is lists of documents (exact dedup's kept_lists), cut here into weighted batches
        self.docs_in_lists = False
        # the kept documents go on in lists (side-input joins only): the stage sets it when the next step takes
        # lists (LineAndSentenceDedup.docs_in_lists)
        self.kept_lists = False

    def expand(self, docs) -> StageOutputs:
        c = self.config
        batch = max(1, c.batch_size)
        # A batch that raises is signed again one document at a time: only the document that raises is rejected.
        by_batch = self.joins == BATCHES
        batched = self.joins != SHUFFLE and not by_batch  # side inputs: candidates' signatures picked (below)
        sign = guarded(_SignatureFn(c, self.score_key, self.spill_dir, batched, by_batch), STAGE, self.fail_fast,
                       batched=True)
        if self.docs_in_lists:
            batches = docs | "NearBatch" >> beam.FlatMap(_weighted_batches, batch)
        else:
            batches = (
                docs
                | "NearLoadText" >> LoadText()  # the batch's weight, then its signatures, read each text
                | "NearBatch" >> beam.BatchElements(min_batch_size=min(batch, 64), max_batch_size=batch,
                                                    element_size_fn=_batch_weight)
            )
        computed = batches | "NearSignatures" >> beam.ParDo(sign).with_outputs(BANDS, DOCS, ERRORS, main="sigs")
        bucketed = (
            computed[BANDS]
            | "NearBandShards" >> GroupByKey()
            | "NearBucketPairs" >> beam.FlatMap((listed_pairs if by_batch else shard_pairs)(c.max_bucket_pairs))
            .with_outputs(LARGE, main="pairs")
        )
        # batches joins: each shard's pairs and each batch's signature records go to the shuffle as one element
        # (disk_grouping's listed inputs: on disk no Beam step per record)
        pairs = (bucketed.pairs | "NearDistinctPairs" >> Distinct(listed=True) if by_batch
                 else bucketed.pairs | "NearDistinctPairs" >> Distinct())
        if batched:  # side inputs: only the signatures of candidates (and of repeated digests) are grouped
            candidates = AsGrouped.of(
                (pairs | "NearPairCandidates" >> beam.FlatMap(_pair_candidates),
                 bucketed[LARGE] | "NearLargeCandidates" >> beam.Map(_large_candidate))
                | "NearCandidates" >> Flatten(), "NearPackCandidates")
            repeated = (computed.sigs | "NearDigests" >> beam.ParDo(_BundleDigests())
                        | "NearGatherDigests" >> GroupByKey()
                        | "NearRepeatedDigests" >> beam.FlatMap(_repeated_digests))
            routed = (
                computed.sigs
                | "NearPickSignatures" >> beam.FlatMap(
                    _picked, candidates, beam.pvalue.AsSingleton(repeated, default_value=frozenset()))
                | "NearJoinSignatures" >> GroupByKey()
                | "NearRoute" >> beam.FlatMap(_route_picked, candidates)
                .with_output_types(typing.Tuple[typing.Any, typing.Any]).with_outputs(LARGE, main="halves")
            )
        else:
            routed = (
                {"node": computed.sigs, "to": pairs,
                 "from": pairs | "NearBySecond" >> beam.Map(lambda ab: (ab[1], None)),
                 "large": bucketed[LARGE]}
                | "NearJoinSignatures" >> CoGroupByKey(listed=("node",) if by_batch else ())
                | "NearRoute" >> beam.FlatMap(_route_signatures).with_output_types(typing.Tuple[typing.Any, typing.Any])
                .with_outputs(LARGE, main="halves")
            )
        small = (
            routed.halves
            | "NearJoinHalves" >> GroupByKey()
            | "NearVerify" >> beam.ParDo(_VerifyFn(c.verify_threshold))
        )
        large = (
            routed[LARGE]
            | "NearLargeBuckets" >> GroupByKey()
            | "NearVerifyLarge" >> beam.ParDo(_LargeBucketFn(c.verify_threshold, c.max_bucket_pairs))
        )
        verified = (small, large) | "NearEdges" >> Flatten()  # (u, v, similarity), u < v
        components = (GatheredComponents("NearCC") if self.components == "single"
                      else ConnectedComponents(c.max_rounds, "NearCC"))
        assignments = (
            verified
            | "NearUnweighted" >> beam.Map(lambda e: (e[0], e[1]))
            | "NearComponents" >> components
        )
        verdicts = (
            {"edges": verified | "NearBySmaller" >> beam.Map(lambda e: (e[0], (e[1], e[2]))),
             "centre": assignments}
            | "NearJoinComponents" >> CoGroupByKey()
            | "NearToComponent" >> beam.FlatMap(_to_component)
            | "NearComponentEdges" >> GroupByKey()
            | "NearComponentVerdicts" >> beam.FlatMap(_component_verdicts)
        )
        return apply_verdicts(computed[DOCS], verdicts, REASON, "Near", self.joins, self.shared_ids, batched,
                              self.kept_lists)._replace(errors=computed[ERRORS])
