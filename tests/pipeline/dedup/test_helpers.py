"""The pure pieces of the Beam transforms (verdicts, bucket pairs, line keys) and the config section."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpusforge.core.config_loader import ConfigError
from corpusforge.pipeline.dedup.config import DedupConfig, NearDedupConfig
from corpusforge.pipeline.dedup.exact import exact_verdicts, text_digest, text_digest_reference
from corpusforge.pipeline.dedup.lines import boilerplate_drops, line_keys, remove_lines
from corpusforge.pipeline.dedup.near import banding, bucket_pairs

A, B, C, D = [(1, 0.0, x) for x in "abcd"]
TOP = (0, -0.9, "z")


def test_text_digest_normalises():
    assert text_digest("Hello,  World!") == text_digest("hello world")
    assert text_digest("hello world") != text_digest("hello word")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aB0 .\n’é٣ﬁＡ")) | st.characters(blacklist_categories=("Cs",)),
               max_size=500), st.sampled_from(["lower", "nfkc_casefold"]))
def test_text_digest_equals_its_reference(text, key_fold):
    assert text_digest(text, key_fold) == text_digest_reference(text, key_fold)


def test_text_digest_equals_its_reference_on_documents():
    from tests.pipeline.dedup.corpus import paragraphs

    for text in paragraphs(40) + ["\n\n".join(paragraphs(10)), "  Straße  ", " " * 400 + "x  y" + " " * 400]:
        assert text_digest(text) == text_digest_reference(text)


def test_exact_verdicts_name_the_survivor_and_size():
    assert list(exact_verdicts((b"k", [B, TOP, A]))) == [
        ("b", {"survivor_id": "z", "cluster_size": 3, "similarity": 1.0}),
        ("a", {"survivor_id": "z", "cluster_size": 3, "similarity": 1.0}),
    ]
    assert list(exact_verdicts((b"k", [A]))) == []


def test_bucket_pairs_all_pairs_then_star_and_chain():
    assert sorted(bucket_pairs(50)((1, [C, A, B, A]))) == [(A, B), (A, C), (B, C)]
    assert list(bucket_pairs(50)((1, [A]))) == []
    assert sorted(bucket_pairs(3)((1, [D, C, B, A]))) == [(A, B), (A, C), (A, D), (B, C), (C, D)]


def test_line_keys_and_removal():
    text = "Home\nSubscribe to our newsletter!\nreal content here\nSUBSCRIBE to our newsletter"
    keys = line_keys(text, min_chars=10)
    assert len(keys) == 2  # "Home" is too short; the two newsletter lines normalise alike
    drop = line_keys("subscribe to our newsletter", 10)
    assert remove_lines(text, drop, 10) == ("Home\nreal content here", 2)


def test_boilerplate_drops_keep_the_best_ranked_document():
    drops = boilerplate_drops(max_occurrences=2)
    assert sorted(drops((7, [B, C, TOP]))) == [("b", 7), ("c", 7)]
    assert list(drops((7, [B, C]))) == []


@pytest.mark.parametrize("flush", [None, 5])  # everything at the bundle's end; packs sent every few records
def test_keys_packed_by_shard_give_the_drops_of_keys_grouped_one_by_one(monkeypatch, flush):
    import random

    from corpusforge.pipeline.dedup import lines
    from corpusforge.pipeline.dedup.lines import KEY_SHARDS, KeysByShard, shard_drops

    if flush:
        monkeypatch.setattr(lines, "KEY_FLUSH_RECORDS", flush)

    rng = random.Random(0)
    docs = [((rng.randint(0, 1), -rng.choice([0.5, 0.9]), f"d{i:03d}"), {rng.randrange(40) * 7919 for _ in range(8)})
            for i in range(300)]
    by_key: dict = {}
    for node, keys in docs:
        for key in keys:
            by_key.setdefault(key, []).append(node)
    reference = sorted(pair for key, nodes in by_key.items() for pair in boilerplate_drops(3)((key, nodes)))

    fn = KeysByShard()
    fn.start_bundle()
    packs = [out.value for node, keys in docs for out in fn.add(list(keys), node)]
    packs += [out.value.value for out in fn.finish_bundle()]
    grouped: dict = {}
    for shard, pack in packs:
        keys = np.frombuffer(pack[0], np.int64).tolist()
        assert 0 <= shard < KEY_SHARDS and keys and all(key % KEY_SHARDS == shard for key in keys)
        grouped.setdefault(shard, []).append(pack)
    fast = sorted(pair for item in grouped.items() for pair in shard_drops(3)(item))
    assert fast == reference and len(reference) > 100


def drops_by_definition(docs, max_occurrences):
    """The drops of ``(node, keys)`` documents one key at a time: each key's ``(key, node)`` records in the
    order added, ``boilerplate_drops`` of every key, keys in ascending order (what ``shard_drops`` promises)."""
    by_key: dict = {}
    for node, keys in docs:
        for key in keys:
            by_key.setdefault(key, []).append(node)
    drops = boilerplate_drops(max_occurrences)
    return [pair for key in sorted(by_key) for pair in drops((key, by_key[key]))]


def packed_drops(docs, max_occurrences, bundles):
    """The drops of the same documents through ``KeysByShard`` packs, ``bundles`` bundles (each its own packs),
    grouped by shard in the order the packs left, then ``shard_drops`` of each shard."""
    from corpusforge.pipeline.dedup.lines import KEY_SHARDS, KeysByShard, shard_drops

    fn, grouped = KeysByShard(), {}
    for part in range(bundles):
        fn.start_bundle()
        out = [pack.value for node, keys in docs[part::bundles] for pack in fn.add(keys, node)]
        out += [pack.value.value for pack in fn.finish_bundle()]
        for shard, pack in out:
            assert all(key % KEY_SHARDS == shard for key in np.frombuffer(pack[0], np.int64).tolist())
            grouped.setdefault(shard, []).append(pack)
    found = {shard: list(shard_drops(max_occurrences)((shard, packs))) for shard, packs in grouped.items()}
    return found


# Hostile key records: a key twice in one document (each is a record), negative keys and keys equal mod
# KEY_SHARDS (few distinct keys, most in one shard), documents without keys, nodes tied on rank and score or
# equal (documents sharing an id), more than max_occurrences records of a key.
_KEYS = st.sampled_from([0, 1, -1, 1024, -1024, 2048, 1023, -1023, 7 * 1024 + 5, 5, 2 ** 63 - 1, -2 ** 63,
                         -2 ** 63 + 1024]) | st.integers(-2 ** 63, 2 ** 63 - 1)
_NODES = st.tuples(st.integers(0, 1), st.sampled_from([0.0, -0.5, -0.9, -1e300, 0.25]),
                   st.sampled_from(["a", "b", "c", "d-1", "é", ""]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_NODES, st.lists(_KEYS, max_size=12)), max_size=40), st.integers(0, 4),
       st.integers(1, 3), st.sampled_from([None, 1, 7]))
def test_packed_key_columns_give_the_drops_of_each_key_one_by_one(docs, max_occurrences, bundles, flush):
    from corpusforge.pipeline.dedup import lines
    from corpusforge.pipeline.dedup.lines import KEY_SHARDS

    saved = lines.KEY_FLUSH_RECORDS
    lines.KEY_FLUSH_RECORDS = flush or saved  # packs sent every few records, or at the bundle's end
    try:
        found = packed_drops(docs, max_occurrences, bundles)
    finally:
        lines.KEY_FLUSH_RECORDS = saved
    # per shard: exactly the drops of its keys, in the definition's order (documents in the order added)
    ordered = [doc for part in range(bundles) for doc in docs[part::bundles]]
    expected = drops_by_definition(ordered, max_occurrences)
    for shard, drops in found.items():
        assert drops == [(doc_id, key) for doc_id, key in expected if key % KEY_SHARDS == shard]
        assert all(type(key) is int for _, key in drops)  # Python ints: np.int64 would be pickled by Beam
    assert sum(map(len, found.values())) == len(expected)


def test_banding_from_threshold_or_explicit():
    assert banding(NearDedupConfig(candidate_threshold=0.5, num_perm=128)) == (25, 5)
    assert banding(NearDedupConfig()) == (64, 4)  # the defaults: 256 permutations, candidate 0.3
    assert banding(NearDedupConfig(bands=16, rows=8)) == (16, 8)


@pytest.mark.parametrize("kwargs,message", [
    ({"bands": 4}, "set together"),
    ({"bands": 40, "rows": 8}, "must not exceed num_perm"),
    ({"candidate_threshold": 1.0}, "candidate_threshold"),
    ({"verify_threshold": 0.0}, "verify_threshold"),
    ({"max_rounds": 0}, "max_rounds"),
])
def test_near_config_checks(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        NearDedupConfig(**kwargs)


def test_dedup_section_loads_from_the_root_config(tmp_path):
    from corpusforge.config import load_config

    path = tmp_path / "c.yaml"
    path.write_text("dedup:\n  near: {verify_threshold: 0.7}\n  lines: {max_occurrences: 5}\n")
    config = load_config(path, ["dedup.near.unit=char", "dedup.survivor_score=score"])
    assert isinstance(config.dedup, DedupConfig)
    assert config.dedup.near.verify_threshold == 0.7 and config.dedup.near.unit == "char"
    assert config.dedup.lines.max_occurrences == 5 and config.dedup.survivor_score == "score"
    with pytest.raises(ConfigError, match="dedup.near.unit"):
        load_config(None, ["dedup.near.unit=line"])


def test_nodes_that_name_their_batch_travel_in_a_fifth_column_and_their_drops_go_to_the_batch():
    """``batches`` joins: 4-nodes (``in_batch``) are packed with their batch keys as a fifth int64 column, and
    ``shard_drops`` rebuilds them, each drop ``(batch key, (id, key))``; 3-node packs keep their four columns."""
    import random

    from corpusforge.pipeline.dedup.common import in_batch
    from corpusforge.pipeline.dedup.lines import KeysByShard, shard_drops

    rng = random.Random(5)
    docs = [((rng.randint(0, 1), -rng.choice([0.5, 0.9]), f"d{i:03d}"), [rng.randrange(30) * 7919 for _ in range(6)])
            for i in range(200)]
    batch_of = {node[2]: -2 ** 63 + i // 16 for i, (node, _) in enumerate(docs)}  # a negative key too
    reference = drops_by_definition(docs, 3)
    assert len(reference) > 100

    def drops(nodes_docs):
        fn, grouped = KeysByShard(), {}
        fn.start_bundle()
        for node, keys in nodes_docs:
            fn.add(keys, node)
        for shard, pack in fn.packs():
            grouped.setdefault(shard, []).append(pack)
        return grouped, sorted(d for item in grouped.items() for d in shard_drops(3)(item))

    plain, plain_drops = drops(docs)
    assert {len(pack) for packs in plain.values() for pack in packs} == {4}
    assert plain_drops == sorted(reference)
    batched, batch_drops = drops([(in_batch(node, batch_of[node[2]]), keys) for node, keys in docs])
    assert {len(pack) for packs in batched.values() for pack in packs} == {5}
    assert batch_drops == sorted((batch_of[doc_id], (doc_id, key)) for doc_id, key in reference)
