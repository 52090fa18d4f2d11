"""The dedup transforms in TestPipelines: exact contents of kept, removed and edits, survivor determinism."""
from __future__ import annotations

import json
import random

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.dedup import (
    ConnectedComponents, Decontaminate, DecontaminateConfig, Dedup, DedupConfig, ExactDedup, ExactDedupConfig,
    GatheredComponents, LineDedup,
    LineDedupConfig, NearDedup, NearDedupConfig,
)
from corpusforge.pipeline.document import Document, removed_row
from tests.pipeline.dedup.corpus import edit_words, paragraphs

BASES = paragraphs(12)
# How the verdicts are joined to the documents (dedup.joins): the join tests run both and expect the same.
JOINS = ["shuffle", "side_input"]


def doc(doc_id, text, score=None, source="web"):
    return Document(doc_id, text, source, annotations={} if score is None else {"quality_score": score})


def ids(pcoll, label):
    return pcoll | label >> beam.Map(lambda d: d.id)


def removals(pcoll, label):
    return pcoll | label >> beam.Map(lambda r: (r.doc.id, r.stage, r.reason, r.details.get("survivor_id"),
                                                 r.details.get("cluster_size")))


# ----------------------------------------------------------------------------------------------- exact


@pytest.mark.parametrize("joins", JOINS)
def test_exact_dedup_keeps_the_best_ranked_copy(joins):
    docs = [
        doc("a", BASES[0]),
        doc("b", BASES[0].upper() + " !!", score=0.7),  # same normalised text, scored: survives
        doc("c", "  " + BASES[0].replace(" ", "\n"), source="other"),  # another source, same text
        doc("d", BASES[1]),
        doc("e", BASES[1], score=0.2),
        doc("f", BASES[2]),
    ]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | ExactDedup(joins=joins)
        assert_that(ids(out.kept, "Kept"), equal_to(["b", "e", "f"]), label="CheckKept")
        assert_that(removals(out.removed, "Removed"), equal_to([
            ("a", "dedup", "exact_duplicate", "b", 3),
            ("c", "dedup", "exact_duplicate", "b", 3),
            ("d", "dedup", "exact_duplicate", "e", 2),
        ]), label="CheckRemoved")


def test_exact_dedup_keys_can_fold_nfkc_and_case():
    plain = "Die Straße ist lang und die Finanzen sind gut. " * 3
    folded = plain.replace("Straße", "STRASSE").replace("Finanzen", "\ufb01nanzen").replace("lang", "ｌａｎｇ")
    docs = [doc("a", plain), doc("b", folded)]
    with TestPipeline() as p:
        today = p | "Default" >> beam.Create(docs) | "Lower" >> ExactDedup()
        assert_that(ids(today.kept, "KeptLower"), equal_to(["a", "b"]), label="CheckLower")
        out = p | "Folding" >> beam.Create(docs) | "Fold" >> ExactDedup(key_fold="nfkc_casefold")
        assert_that(ids(out.kept, "KeptFold"), equal_to(["a"]), label="CheckFold")
        assert_that(removals(out.removed, "RemovedFold"), equal_to([("b", "dedup", "exact_duplicate", "a", 2)]),
                    label="CheckRemovedFold")
    config = DedupConfig(exact=ExactDedupConfig(key_fold="nfkc_casefold"))
    assert Dedup(config).steps[0][1].key_fold == "nfkc_casefold"


# ------------------------------------------------------------------------------------------------ near

NEAR = NearDedupConfig(max_rounds=4)
# Connected components by distributed rounds or gathered on one worker: every near-dedup test that has a
# cluster runs both and expects the same removals and details.
COMPONENTS = ["distributed", "single"]


def near_config(components: str, **fields) -> NearDedupConfig:
    return NearDedupConfig(**{"max_rounds": NEAR.max_rounds, **fields, "components": components})


def near_corpus():
    """Clusters of near-duplicates (words edited, a sentence dropped, boilerplate added) and singletons."""
    docs, expected_removed = [], []
    for c in range(4):
        base = BASES[c]
        docs.append(doc(f"c{c}-0", base))
        docs.append(doc(f"c{c}-1", edit_words(base, 0.03, seed=c)))
        docs.append(doc(f"c{c}-2", base + " Copyright 2024 Example Corp. All rights reserved."))
        docs.append(doc(f"c{c}-3", ". ".join(base.split(". ")[1:]) if base.count(". ") > 2 else base + " x"))
        expected_removed += [(f"c{c}-{i}", "dedup", "near_duplicate", f"c{c}-0", 4) for i in (1, 2, 3)]
    for s in range(4, 12):
        docs.append(doc(f"s{s}", BASES[s]))
    return docs, expected_removed


@pytest.mark.parametrize("joins", JOINS)
@pytest.mark.parametrize("components", COMPONENTS)
def test_near_dedup_clusters_and_survivors(components, joins):
    docs, expected_removed = near_corpus()
    with TestPipeline() as p:
        out = p | beam.Create(docs) | NearDedup(near_config(components), joins=joins)
        assert_that(ids(out.kept, "Kept"), equal_to([f"c{c}-0" for c in range(4)] + [f"s{s}" for s in range(4, 12)]),
                    label="CheckKept")
        assert_that(removals(out.removed, "Removed"), equal_to(expected_removed), label="CheckRemoved")
        assert_that(out.removed | "Similarity" >> beam.Map(lambda r: NEAR.verify_threshold <= r.details["similarity"] <= 1),
                    equal_to([True] * len(expected_removed)), label="CheckSimilarity")


def test_near_dedup_survivor_is_highest_score_then_smallest_id():
    base = BASES[0]
    docs = [doc("a", base), doc("b", edit_words(base, 0.03, 1), score=0.4),
            doc("c", edit_words(base, 0.03, 2), score=0.9), doc("d", edit_words(base, 0.03, 3), score=0.9)]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | NearDedup(NEAR)
        assert_that(ids(out.kept, "Kept"), equal_to(["c"]), label="CheckKept")
        assert_that(removals(out.removed, "Removed"), equal_to(
            [(x, "dedup", "near_duplicate", "c", 4) for x in "abd"]), label="CheckRemoved")


def test_shared_boilerplate_is_not_a_near_duplicate():
    boilerplate = " ".join(BASES[10].split()[:60])
    docs = [doc(f"n{i}", " ".join(BASES[i].split()[:80]) + " " + boilerplate) for i in range(4)]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | NearDedup(NearDedupConfig(max_rounds=2))
        assert_that(ids(out.kept, "Kept"), equal_to(["n0", "n1", "n2", "n3"]))


def near_details(pcoll, label):
    return pcoll | label >> beam.Map(lambda r: (r.doc.id, r.details["survivor_id"], r.details["cluster_size"],
                                                 r.details["similarity"]))


def expected_near_details(docs, config):
    """The removed records' details computed in memory: the verified candidate pairs, split in survivor
    order (each document goes to the first kept document it is verified similar to)."""
    from corpusforge.pipeline.dedup.common import node_of
    from corpusforge.pipeline.dedup.components import assign_survivors
    from corpusforge.pipeline.dedup.minhash import MinHasher, Shingler, band_hashes, estimated_jaccard, short_signatures
    from corpusforge.pipeline.dedup.near import banding, survivor_priority

    full = MinHasher(config.num_perm, config.seed, Shingler(config.ngram)).signatures([d.text for d in docs])
    sigs = short_signatures(full)  # what verification and reporting compare
    nodes = [node_of(d, "quality_score") for d in docs]
    buckets = {}
    for i, row in enumerate(band_hashes(full, *banding(config)).tolist()):
        for key in row:
            buckets.setdefault(key, []).append(i)
    pairs = {(i, j) for members in buckets.values() for i in members for j in members if i < j}
    edges = [(nodes[i], nodes[j], estimated_jaccard(sigs[i], sigs[j])) for i, j in pairs]
    assigned = assign_survivors([e for e in edges if e[2] >= config.verify_threshold], survivor_priority)
    size = {}
    for c, _ in assigned.values():
        size[c] = size.get(c, 1) + 1
    return [(n[2], c[2], size[c], round(similarity, 4)) for n, (c, similarity) in assigned.items()]


@pytest.mark.parametrize("components", COMPONENTS)
def test_near_dedup_large_buckets_give_the_same_clusters(components):
    """Buckets above max_bucket_pairs take the rank-order path (ranks restored in the join): same result."""
    docs, expected_removed = near_corpus()
    with TestPipeline() as p:
        out = p | beam.Create(docs) | NearDedup(near_config(components, max_bucket_pairs=2))
        assert_that(removals(out.removed, "Removed"), equal_to(expected_removed), label="CheckRemoved")
        assert_that(near_details(out.removed, "Details"), equal_to(expected_near_details(docs, NEAR)),
                    label="CheckDetails")


@pytest.mark.parametrize("flush_records", [1 << 20, 96])
def test_near_dedup_spilled_to_disk_gives_the_same_clusters(tmp_path, monkeypatch, flush_records):
    """With a spill directory the signatures and band records go through files (band records flushed every
    ``flush_records`` records, or at the end of the bundle): same removals, same details."""
    import corpusforge.pipeline.dedup.near as near

    from corpusforge.pipeline.spill import SpillWriter

    monkeypatch.setattr(near, "BAND_FLUSH_RECORDS", flush_records)
    band_writes = []
    write = SpillWriter.write
    monkeypatch.setattr(SpillWriter, "write", lambda self, data: band_writes.append(1) or write(self, data))
    docs, expected_removed = near_corpus()
    with TestPipeline() as p:
        out = p | beam.Create(docs) | NearDedup(NEAR, spill_dir=str(tmp_path))
        assert_that(removals(out.removed, "Removed"), equal_to(expected_removed), label="CheckRemoved")
        assert_that(near_details(out.removed, "Details"), equal_to(expected_near_details(docs, NEAR)),
                    label="CheckDetails")
    spilled = sum(f.stat().st_size for f in tmp_path.glob("*.near"))
    bands, _ = near.banding(NEAR)
    # every document's band records (16 bytes each) and 16-bit signature, once; each signature a record of its
    # own and each band shard's packed records one, with a 4-byte CRC-32 after each
    assert band_writes and spilled == (16 * bands + 2 * NEAR.num_perm + 4) * len(docs) + 4 * len(band_writes)


@pytest.mark.parametrize("joins", JOINS)
def test_near_dedup_node_digest_collisions_lose_nothing(monkeypatch, joins):
    """Every document under one of three digests: the join still verifies every pair of them (with side-input
    joins, the repeated digests' signatures are grouped though no candidate pair names them)."""
    import corpusforge.pipeline.dedup.near as near

    monkeypatch.setattr(near, "node_digest", lambda node: len(node[2]) % 3)
    docs, expected_removed = near_corpus()
    with TestPipeline() as p:
        out = p | beam.Create(docs) | NearDedup(NEAR, joins=joins)
        assert_that(removals(out.removed, "Removed"), equal_to(expected_removed), label="CheckRemoved")
        assert_that(near_details(out.removed, "Details"), equal_to(expected_near_details(docs, NEAR)),
                    label="CheckDetails")


@pytest.mark.parametrize("joins", JOINS)
@pytest.mark.parametrize("components", COMPONENTS)
@pytest.mark.parametrize("runner,order", [("DirectRunner", "shuffled"), ("BundleBasedDirectRunner", "reversed")])
def test_survivors_identical_across_input_orders_and_runners(runner, order, components, joins):
    docs, expected_removed = near_corpus()
    docs = docs[::-1] if order == "reversed" else random.Random(5).sample(docs, len(docs))
    with TestPipeline(runner=runner) as p:
        out = p | beam.Create(docs) | NearDedup(near_config(components), joins=joins)
        assert_that(removals(out.removed, "Removed"), equal_to(expected_removed), label="CheckRemoved")
        assert_that(ids(out.kept, "Kept"), equal_to([f"c{c}-0" for c in range(4)] + [f"s{s}" for s in range(4, 12)]),
                    label="CheckKept")


def chain_corpus(length: int, window: int = 100, step: int = 25):
    """Documents that are overlapping windows of one long word sequence: each shares 75 % of its words with
    the next (estimated Jaccard ~0.6), ~50 % with the one after (~0.3, below verification) and nothing
    further on. Named so that their ids give the survivor order."""
    words = " ".join(BASES).split()
    assert len(words) >= window + step * (length - 1)
    return [doc(f"w{i:03d}", " ".join(words[i * step:i * step + window])) for i in range(length)]


@pytest.mark.parametrize("components", COMPONENTS)
def test_near_dedup_splits_a_chain_whose_ends_are_unlike(components):
    """A~B, B~C, C~D but A and C (and B and D) unlike: connected components removed B, C and D in favour of
    A. Sound dedup removes a document only for one it is verified similar to: B (two partners, the smaller
    id of the two) is kept and takes A and C; D, unlike B, is kept too."""
    docs = chain_corpus(4)
    with TestPipeline() as p:
        out = p | beam.Create(docs) | NearDedup(near_config(components))
        assert_that(ids(out.kept, "Kept"), equal_to(["w001", "w003"]), label="CheckKept")
        assert_that(removals(out.removed, "Removed"), equal_to([
            ("w000", "dedup", "near_duplicate", "w001", 3),
            ("w002", "dedup", "near_duplicate", "w001", 3),
        ]), label="CheckRemoved")
        assert_that(out.removed | "Similarity" >> beam.Map(lambda r: r.details["similarity"] >= NEAR.verify_threshold),
                    equal_to([True, True]), label="CheckSimilarity")


CHAIN = NearDedupConfig(max_rounds=8)


@pytest.mark.parametrize("components", COMPONENTS)
@pytest.mark.parametrize("runner,order", [("DirectRunner", "shuffled"), ("BundleBasedDirectRunner", "reversed")])
def test_near_dedup_long_chain_every_removal_verified(runner, order, components):
    """A chain of 14 windows (it needs several connected-components rounds; before, all 14 were one cluster
    and w013 went to w000 at similarity ~0): every other one is kept and each removal's survivor is its
    neighbour in the chain, whatever the input order or runner; the details equal the in-memory reference."""
    docs = chain_corpus(14, window=100, step=20)
    expected = expected_near_details(docs, CHAIN)
    assert sorted((m, s) for m, s, _, _ in expected) == [("w000", "w001")] + [
        (f"w{i:03d}", f"w{i - 1:03d}") for i in range(2, 14, 2)]
    docs = docs[::-1] if order == "reversed" else random.Random(3).sample(docs, len(docs))
    with TestPipeline(runner=runner) as p:
        out = p | beam.Create(docs) | NearDedup(near_config(components, max_rounds=CHAIN.max_rounds))
        assert_that(ids(out.kept, "Kept"), equal_to([f"w{i:03d}" for i in range(1, 14, 2)]), label="CheckKept")
        assert_that(near_details(out.removed, "Details"), equal_to(expected), label="CheckDetails")


def test_a_chain_too_long_for_the_rounds_needs_no_rounds_when_gathered():
    """The 14-window chain does not converge in one distributed round (the build fails, naming max_rounds);
    gathered on one worker it needs none, and gives the in-memory reference's details."""
    docs = chain_corpus(14, window=100, step=20)
    with pytest.raises(Exception, match="did not converge in 1 rounds"):
        with TestPipeline() as p:
            _ = p | beam.Create(docs) | NearDedup(near_config("distributed", max_rounds=1))
    with TestPipeline() as p:
        out = p | beam.Create(docs) | NearDedup(near_config("single", max_rounds=1))
        assert_that(near_details(out.removed, "Details"), equal_to(expected_near_details(docs, CHAIN)))


@pytest.mark.parametrize("components,direct_runner,chosen", [
    ("auto", True, "single"), ("auto", False, "distributed"),
    ("distributed", True, "distributed"), ("single", False, "single"),
])
def test_components_auto_gathers_only_on_the_direct_runner(components, direct_runner, chosen):
    """``auto`` follows the build's runner (``StageContext.direct_runner``); an explicit choice wins; a
    NearDedup used without a build context is distributed, which is safe on every runner."""
    from corpusforge.pipeline.stage import StageContext

    config = DedupConfig(near=NearDedupConfig(components=components))
    near = dict(Dedup(config, StageContext(direct_runner=direct_runner)).steps)["NearDedup"]
    assert near.components == chosen
    assert NearDedup(NearDedupConfig(components=components)).components == (
        "single" if components == "single" else "distributed")


# -------------------------------------------------------------------------------- connected components


@pytest.mark.parametrize("edges,expected", [
    ([(1, 2), (2, 3), (3, 4), (4, 5)], [(2, 1), (3, 1), (4, 1), (5, 1)]),  # chain
    ([(5, 1), (5, 2), (5, 3), (5, 9)], [(2, 1), (3, 1), (5, 1), (9, 1)]),  # star
    ([(7, 8), (10, 11), (11, 12)], [(8, 7), (11, 10), (12, 10)]),  # two components; singletons have no edges
])
@pytest.mark.parametrize("components", [lambda: ConnectedComponents(max_rounds=4), GatheredComponents],
                         ids=["distributed", "gathered"])
def test_connected_components_in_beam(edges, expected, components):
    with TestPipeline() as p:
        assert_that(p | beam.Create(edges) | components(), equal_to(expected))


def test_connected_components_fail_loudly_when_rounds_do_not_suffice():
    with pytest.raises(Exception, match="did not converge"):
        with TestPipeline() as p:
            _ = p | beam.Create([(i, i + 1) for i in range(300)]) | ConnectedComponents(max_rounds=1)


def test_connected_components_refuse_zero_rounds():
    # the rounds key each edge both ways for the next large-star; without a round nothing turns the edges into the
    # roles the convergence check reads (it failed at run time unpacking a node)
    with pytest.raises(ValueError, match="max_rounds must be at least 1"):
        ConnectedComponents(max_rounds=0)


def test_gathered_components_of_a_long_chain_and_an_empty_graph():
    """Union-find has no round limit: a 300-node chain (and its edges in either direction) is one component
    centred on 0; no edges give no assignments."""
    chain = [(i + 1, i) if i % 2 else (i, i + 1) for i in range(300)]
    with TestPipeline() as p:
        assert_that(p | "Chain" >> beam.Create(chain) | "Gather" >> GatheredComponents(),
                    equal_to([(i, 0) for i in range(1, 301)]), label="CheckChain")
        assert_that(p | "None" >> beam.Create([]) | "GatherNone" >> GatheredComponents("Empty"),
                    equal_to([]), label="CheckEmpty")


# ----------------------------------------------------------------------------------------------- lines

FOOTER = "Subscribe to our newsletter for weekly updates"


def test_line_dedup_removes_boilerplate_from_all_but_the_best_ranked_document():
    docs = [doc(f"l{i}", BASES[i] + "\n" + FOOTER + "\nHome") for i in range(4)]
    docs.append(doc("short", "Just a few words here.\n" + FOOTER))
    docs.append(doc("top", BASES[5] + "\n" + FOOTER, score=0.8))
    with TestPipeline() as p:
        out = p | beam.Create(docs) | LineDedup(LineDedupConfig(max_occurrences=3, min_words=20))
        assert_that(out.kept | beam.Map(lambda d: (d.id, FOOTER in d.text, d.text.endswith("Home"))),
                    equal_to([(f"l{i}", False, True) for i in range(4)] + [("top", True, False)]),
                    label="CheckKept")
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.reason, r.details)),
                    equal_to([("short", "line_dedup_too_short", {"lines_removed": 1, "words_left": 5})]),
                    label="CheckRemoved")
        assert_that(out.edits | beam.CombinePerKey(sum) if False else out.edits
                    | "SumEdits" >> beam.Map(lambda e: ((e[0], e[1]), e[2])) | beam.CombinePerKey(sum),
                    equal_to([(("dedup", "lines_removed"), 5), (("dedup", "documents_line_edited"), 5)]),
                    label="CheckEdits")


def test_lines_in_few_documents_stay():
    docs = [doc(f"l{i}", BASES[i] + "\n" + FOOTER) for i in range(3)]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | LineDedup(LineDedupConfig(max_occurrences=3))
        assert_that(out.kept | beam.Map(lambda d: d.text), equal_to([d.text for d in docs]))


# --------------------------------------------------------------------------------------- decontaminate


def write_eval_sets(tmp_path):
    (tmp_path / "squad.jsonl").write_text(
        json.dumps({"question": " ".join(BASES[3].split()[20:40])}) + "\n"
        + json.dumps({"question": "What is the capital of France?"}) + "\n")
    (tmp_path / "trivia.txt").write_text(" ".join(BASES[4].split()[:14]) + "\n\n")
    return [str(tmp_path / "*.jsonl"), str(tmp_path / "trivia.txt")]


def test_decontaminate_removes_and_reports_the_eval_set(tmp_path):
    config = DecontaminateConfig(eval_sets=write_eval_sets(tmp_path), text_field="question")
    docs = [doc("clean", BASES[0]), doc("leak", BASES[3]), doc("leak2", "Intro. " + BASES[4]),
            doc("short", "what is the CAPITAL of france"), doc("near", "What is the capital of Spain?")]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | Decontaminate(config)
        assert_that(ids(out.kept, "Kept"), equal_to(["clean", "near"]), label="CheckKept")
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.reason, r.details)), equal_to([
            ("leak", "eval_contamination", {"eval_sets": {"squad": 8}}),
            ("leak2", "eval_contamination", {"eval_sets": {"trivia": 2}}),
            ("short", "eval_contamination", {"eval_sets": {"squad": 1}}),
        ]), label="CheckRemoved")


def test_decontaminate_flags(tmp_path):
    config = DecontaminateConfig(eval_sets=write_eval_sets(tmp_path), text_field="question", action="flag")
    with TestPipeline() as p:
        out = p | beam.Create([doc("leak", BASES[3]), doc("clean", BASES[0])]) | Decontaminate(config)
        assert_that(out.kept | beam.Map(lambda d: (d.id, d.annotations.get("contamination"))),
                    equal_to([("leak", {"squad": 8}), ("clean", None)]), label="CheckKept")
        assert_that(out.edits, equal_to([("dedup", "contamination_flagged", 1)]), label="CheckEdits")


def test_eval_sets_are_read_as_build_inputs_are(tmp_path):
    """An eval set is read through the readers' guards: a nested record, invalid UTF-8 or a FIFO is a one-line
    error naming the file and line (they raised RecursionError / UnicodeDecodeError, or blocked), and text lines
    end where str.splitlines ends them, as before."""
    import os

    from corpusforge.core.errors import UserError
    from corpusforge.pipeline.dedup.decontaminate import read_examples

    (tmp_path / "a.txt").write_text("one line\n\nsecond\u2028third\n")
    assert read_examples(str(tmp_path / "a.txt"), "text") == ["one line", "second", "third"]
    (tmp_path / "b.jsonl").write_text(json.dumps({"text": "x"}) + "\n" + "[" * 100000 + "]" * 100000 + "\n")
    with pytest.raises(UserError, match=r"b.jsonl:2: too_deep"):
        read_examples(str(tmp_path / "b.jsonl"), "text")
    (tmp_path / "c.txt").write_bytes(b"ok\n\xff\xfe bad\n")
    with pytest.raises(UserError, match=r"c.txt:2: invalid_utf8"):
        read_examples(str(tmp_path / "c.txt"), "text")
    os.mkfifo(tmp_path / "d.txt")
    with pytest.raises(UserError, match=r"d.txt: not_a_regular_file"):
        read_examples(str(tmp_path / "d.txt"), "text")


def test_decontaminate_fails_at_construction_on_a_missing_eval_set(tmp_path):
    from corpusforge.core.errors import UserError

    with pytest.raises(UserError, match="matches no file"):
        Decontaminate(DecontaminateConfig(eval_sets=[str(tmp_path / "nope*.jsonl")]))


# ----------------------------------------------------------------------------------------------- stage


@pytest.mark.parametrize("joins", JOINS)
def test_dedup_stage_end_to_end_and_removed_rows(tmp_path, joins):
    docs, _ = near_corpus()
    docs += [doc("exact-copy", docs[0].text.upper()), doc("leak", BASES[3] + " extra words")]
    config = DedupConfig(joins=joins)
    config.near.max_rounds = 4
    config.decontaminate = DecontaminateConfig(eval_sets=write_eval_sets(tmp_path), text_field="question")
    with TestPipeline() as p:
        out = p | beam.Create(docs) | Dedup(config)
        assert_that(ids(out.kept, "Kept"), equal_to(["c0-0", "c1-0", "c2-0"] + [f"s{s}" for s in range(5, 12)]),
                    label="CheckKept")
        rows = out.removed | beam.Map(removed_row) | beam.Map(
            lambda r: (r["id"], r["stage"], r["reason"], json.loads(r["details"]).get("survivor_id")))
        assert_that(rows, equal_to(
            [("exact-copy", "dedup", "exact_duplicate", "c0-0")]
            + [(f"c{c}-{i}", "dedup", "near_duplicate", f"c{c}-0") for c in range(3) for i in (1, 2, 3)]
            + [(f"c3-{i}", "dedup", "eval_contamination", None) for i in range(4)]
            + [("leak", "dedup", "eval_contamination", None), ("s4", "dedup", "eval_contamination", None)]),
            label="CheckRemoved")


def test_dedup_with_everything_disabled_passes_documents_through():
    config = DedupConfig()
    config.exact.enabled = config.near.enabled = config.lines.enabled = config.sentences.enabled = False
    with TestPipeline() as p:
        out = p | beam.Create([doc("a", "x"), doc("b", "x")]) | Dedup(config)
        assert_that(ids(out.kept, "Kept"), equal_to(["a", "b"]), label="CheckKept")
        assert_that(out.removed, equal_to([]), label="CheckRemoved")
        assert out.edits is None


def test_near_weighted_batches_keep_every_document_in_order_and_under_the_weight():
    """Near-dedup's batches of exact dedup's lists (``near._weighted_batches``): every document once, in order,
    its text loaded, each batch at most ``batch`` heavy (``_batch_weight``) unless one document alone is."""
    from corpusforge.pipeline.dedup.near import _batch_weight, _weighted_batches

    docs = [Document(f"d{i}", "word " * (50 + 3000 * (i % 7)), "web") for i in range(40)]
    for batch in (1, 3, 8, 512):
        batches = _weighted_batches(docs, batch)
        assert [d.id for b in batches for d in b] == [d.id for d in docs]
        for b in batches:
            assert len(b) == 1 or sum(_batch_weight(d) for d in b) <= batch
            assert all("text" in d.__dict__ for d in b)


def test_only_the_signatures_of_candidates_and_repeated_digests_are_grouped_with_side_input_joins():
    # _picked keeps what _route_signatures would route something for; _route_picked routes as the CoGroupByKey's
    # group would: partners, receivers, large buckets, and a digest that two nodes share (a collision)
    from corpusforge.pipeline.dedup.near import _pair_candidates, _picked, _route_picked, _route_signatures

    sig = b"\x01\x00" * 4
    nodes = {d: ((0, -0.5, f"id{d}"), sig) for d in range(8)}
    pairs, large = [(1, 2), (2, 3)], [(4, 99)]
    candidates: dict = {}
    for digest, entry in [kv for pair in pairs for kv in _pair_candidates(pair)] + [(4, ("large", 99))]:
        candidates.setdefault(digest, []).append(entry)
    records = [(d, nodes[d]) for d in range(8)] + [(6, ((0, -0.1, "other"), sig)), (7, nodes[7])]
    picked = _picked(records, candidates, frozenset({6, 7}))
    assert sorted({d for d, _ in picked}) == [1, 2, 3, 4, 6, 7]  # 0 and 5: nothing to route
    for digest in range(8):
        entries = [entry for d, entry in records if d == digest]
        grouped = {"node": entries, "to": [b for a, b in pairs if a == digest],
                   "from": [None for _, b in pairs if b == digest], "large": [k for d, k in large if d == digest]}
        expected = list(_route_signatures((digest, grouped)))
        got = list(_route_picked((digest, entries), candidates)) if digest in {d for d, _ in picked} else []
        as_rows = lambda out: sorted(repr((o.tag, o.value) if hasattr(o, "tag") else o) for o in out)  # noqa: E731
        assert as_rows(got) == as_rows(expected), digest
        assert bool(expected) == (digest in {1, 2, 3, 4, 6}), digest  # 7: one node twice, no collision


def test_an_eval_set_named_with_glob_characters_is_the_file_named(tmp_path):
    """``eval_sets`` are patterns, but a file whose own name holds ``[``, ``*`` or ``?`` is that file (it matched
    nothing: "matches no file"); patterns still match as before."""
    from corpusforge.pipeline.dedup.decontaminate import eval_set_files

    literal = tmp_path / "squad[v2].jsonl"
    literal.write_text(json.dumps({"text": "x"}) + "\n")
    (tmp_path / "other.jsonl").write_text(json.dumps({"text": "y"}) + "\n")
    assert eval_set_files([str(literal)]) == [str(literal)]
    assert eval_set_files([str(tmp_path / "o*.jsonl")]) == [str(tmp_path / "other.jsonl")]
