"""Near-duplicate removal with MinHash LSH, verified candidates and distributed connected components.

    docs -> signatures (vectorised, batches) -> band hashes -> buckets -> candidate pairs
         -> verified pairs (estimated Jaccard >= verify_threshold) -> connected components
         -> one survivor per component (smallest survivor_rank) -> removals with survivor, size, similarity

Nothing here gathers documents or all signatures on one worker. What is grouped, and what one group holds:

- a bucket: the ranks (~100 bytes each) of the documents sharing one band;
- a node during verification: its signature (4 x num_perm bytes) and its candidate partners;
- a node during connected components: its current neighbours (one edge ~ 2 ranks, ~200 bytes);
- a component at the end: the signatures of its members (to report each one's similarity to the survivor).
"""
from __future__ import annotations

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from pipeline.dedup.common import STAGE, apply_verdicts, node_of
from pipeline.dedup.components import large_star, orient_small, small_star
from pipeline.dedup.config import NearDedupConfig
from pipeline.dedup.minhash import MinHasher, Shingler, band_hashes, estimated_jaccard, lsh_params
from pipeline.stage import StageOutputs

REASON = "near_duplicate"
BANDS = "bands"


def banding(config: NearDedupConfig) -> tuple[int, int]:
    """``(bands, rows)``: as configured, or datasketch's choice for the candidate threshold."""
    if config.bands:
        return config.bands, config.rows
    return lsh_params(config.candidate_threshold, config.num_perm, config.false_positive_weight)


class _SignatureFn(beam.DoFn):
    """A batch of documents -> ``(node, signature bytes)`` and, tagged BANDS, ``(band key, node)`` (the
    64-bit band hash, which mixes in the band's index, so buckets of different bands never meet)."""

    def __init__(self, config: NearDedupConfig, score_key: str):
        self.config, self.score_key = config, score_key
        self.bands, self.rows = banding(config)
        self.no_shingles = Metrics.counter(STAGE, "near_documents_without_shingles")

    def setup(self):
        c = self.config
        self.hasher = MinHasher(c.num_perm, c.seed, Shingler(c.ngram, c.unit, c.hash))

    def process(self, batch):
        hashes, counts = self.hasher.shingler.hashes([d.text for d in batch])
        sigs = self.hasher.from_hashes(hashes, counts)
        keys = band_hashes(sigs, self.bands, self.rows)
        for doc, count, sig, band_keys in zip(batch, counts, sigs, keys):
            if not count:
                self.no_shingles.inc()  # no words: nothing to compare (exact dedup handles empty texts)
                continue
            node = node_of(doc, self.score_key)
            yield node, sig.tobytes()
            for key in band_keys.tolist():
                yield beam.pvalue.TaggedOutput(BANDS, (key, node))


def _batch_weight(doc) -> int:
    """Batch sizes count documents of up to 4 KB as 1 and longer ones by their size, so that a batch of
    ``batch_size`` stays near ``batch_size`` x 4 KB of text however long the documents are."""
    return 1 + len(doc.text) // 4096


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


def _send_signature(item):
    """``(u, {"sig": [s], "partner": [v...]})`` -> ``(v, (u, s))`` for each partner."""
    _, grouped = item
    sigs = list(grouped["sig"])
    if not sigs:
        return
    u_sig = sigs[0]
    for v, u in grouped["partner"]:
        yield v, (u, u_sig)


class _VerifyFn(beam.DoFn):
    """``(v, {"sig": [s], "half": [(u, s_u)...]})`` -> verified edges ``(u, v)``."""

    def __init__(self, threshold: float):
        self.threshold = threshold
        self.candidates = Metrics.counter(STAGE, "near_candidate_pairs")
        self.verified = Metrics.counter(STAGE, "near_verified_pairs")

    def process(self, item):
        v, grouped = item
        sigs = list(grouped["sig"])
        if not sigs:
            return
        v_sig = np.frombuffer(sigs[0], dtype=np.uint32)
        for u, u_sig in grouped["half"]:
            self.candidates.inc()
            if estimated_jaccard(np.frombuffer(u_sig, dtype=np.uint32), v_sig) >= self.threshold:
                self.verified.inc()
                yield u, v


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


class ConnectedComponents(beam.PTransform):
    """Edges ``(u, v)`` between comparable nodes -> ``(node, smallest node of its component)`` for every
    node but the smallest, by ``max_rounds`` rounds of large-star / small-star (pipeline.dedup.components)."""

    def __init__(self, max_rounds: int = 10, label: str = "CC"):
        super().__init__()
        self.max_rounds, self.label = max_rounds, label

    def expand(self, edges):
        p = self.label
        for r in range(self.max_rounds):
            edges = (
                edges
                | f"{p}LargeMap{r}" >> beam.FlatMap(lambda e: [(e[0], e[1]), (e[1], e[0])])
                | f"{p}LargeGroup{r}" >> beam.GroupByKey()
                | f"{p}LargeStar{r}" >> beam.FlatMap(lambda kv: large_star(kv[0], kv[1]))
                | f"{p}SmallMap{r}" >> beam.Map(orient_small)
                | f"{p}SmallGroup{r}" >> beam.GroupByKey()
                | f"{p}SmallStar{r}" >> beam.FlatMap(lambda kv: small_star(kv[0], kv[1]))
            )
        return (
            edges
            | f"{p}Roles" >> beam.FlatMap(_roles)
            | f"{p}GroupRoles" >> beam.GroupByKey()
            | f"{p}Converged" >> beam.ParDo(_ConvergenceFn(self.max_rounds))
        )


def _send_member_signature(item):
    """``(child, {"sig": [s], "centre": [c]})`` -> ``(c, (child, s))``."""
    child, grouped = item
    sigs, centres = list(grouped["sig"]), list(grouped["centre"])
    if sigs and centres:
        yield centres[0], (child, sigs[0])


def _cluster_verdicts(item):
    """``(centre, {"sig": [s], "member": [(child, s)...]})`` -> ``(child id, details)``."""
    centre, grouped = item
    members = grouped["member"]
    size = 1 + sum(1 for _ in members)
    if size == 1:
        return
    centre_sig = np.frombuffer(next(iter(grouped["sig"])), dtype=np.uint32)
    for child, sig in members:
        similarity = estimated_jaccard(np.frombuffer(sig, dtype=np.uint32), centre_sig)
        yield child[2], {"survivor_id": centre[2], "cluster_size": size, "similarity": round(similarity, 4)}


class NearDedup(beam.PTransform):
    """Remove near-duplicates (reason ``near_duplicate``), keeping the best-ranked document of each cluster.

    Removed records carry ``survivor_id``, ``cluster_size`` (documents in the cluster, survivor included)
    and ``similarity`` (the Jaccard similarity to the survivor that the signatures estimate).
    """

    def __init__(self, config: NearDedupConfig | None = None, score_key: str = "quality_score"):
        super().__init__()
        self.config = config or NearDedupConfig()
        self.score_key = score_key
        self.bands, self.rows = banding(self.config)

    def expand(self, docs) -> StageOutputs:
        c = self.config
        batch = max(1, c.batch_size)
        computed = (
            docs
            | "NearBatch" >> beam.BatchElements(min_batch_size=min(batch, 64), max_batch_size=batch,
                                                element_size_fn=_batch_weight)
            | "NearSignatures" >> beam.ParDo(_SignatureFn(c, self.score_key)).with_outputs(BANDS, main="sigs")
        )
        sigs = computed.sigs
        candidates = (
            computed[BANDS]
            | "NearBuckets" >> beam.GroupByKey()
            | "NearBucketPairs" >> beam.FlatMap(bucket_pairs(c.max_bucket_pairs))
            | "NearDistinctPairs" >> beam.Distinct()
        )
        halves = (
            {"sig": sigs, "partner": candidates | "NearByFirst" >> beam.Map(lambda uv: (uv[0], (uv[1], uv[0])))}
            | "NearJoinFirst" >> beam.CoGroupByKey()
            | "NearSendSignature" >> beam.FlatMap(_send_signature)
        )
        edges = (
            {"sig": sigs, "half": halves}
            | "NearJoinSecond" >> beam.CoGroupByKey()
            | "NearVerify" >> beam.ParDo(_VerifyFn(c.verify_threshold))
        )
        assignments = edges | "NearComponents" >> ConnectedComponents(c.max_rounds, "NearCC")
        members = (
            {"sig": sigs, "centre": assignments}
            | "NearJoinMembers" >> beam.CoGroupByKey()
            | "NearSendMember" >> beam.FlatMap(_send_member_signature)
        )
        verdicts = (
            {"sig": sigs, "member": members}
            | "NearJoinCentres" >> beam.CoGroupByKey()
            | "NearClusterVerdicts" >> beam.FlatMap(_cluster_verdicts)
        )
        return apply_verdicts(docs, verdicts, REASON, "Near")
