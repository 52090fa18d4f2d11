"""Source mixtures: epochs from weights and a token budget, deterministic repeats and drops, and the token
shards and manifest that tokenize writes with them."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from apache_beam.testing.test_pipeline import TestPipeline

from corpusforge.pipeline.config import InputConfig
from corpusforge.core.config_loader import ConfigError
from corpusforge.core.errors import UserError
from corpusforge.tokenizer.mixture import (KEY_BUCKETS, copies, fraction_cutoff, key_histogram, mix_key,
                                          mixture_epochs, source_weights)
from corpusforge.tokenizer.token_shards import TokenCorpus
from corpusforge.tokenizer.tokenize import TokenizeShards
from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.train import train_from_shards
from tests.tokenizer.data import make_documents, write_clean_shards


@pytest.fixture(scope="module")
def tokenizer_path(tmp_path_factory, clean_dir):
    directory = tmp_path_factory.mktemp("tok")
    train_from_shards(TokenizerConfig(family="decoder", vocab_size=500, heldout_mb=0.01), str(clean_dir), str(directory))
    return directory / "tokenizer.json"


def test_epochs_follow_the_weights_and_the_budget():
    tokens = {"web": 1000, "books": 100, "code": 0}
    assert mixture_epochs(tokens, {"web": 3, "books": 1}, 0) == {"web": 1.0, "books": 1.0, "code": 1.0}
    epochs = mixture_epochs(tokens, {"web": 3, "books": 1}, 800)
    assert epochs == {"web": 0.6, "books": 2.0, "code": 0.0}  # web 600 tokens, books 200, code has none
    assert mixture_epochs({"a": 100, "b": 100}, {"a": 0}, 100) == {"a": 0.0, "b": 1.0}  # weight 0: dropped
    assert mixture_epochs({"a": 100, "b": 300}, {}, 800) == {"a": 4.0, "b": 4 / 3}  # unnamed sources weigh 1


def test_copies_are_whole_epochs_plus_documents_in_hash_order_until_the_quota():
    ids = [f"d{i}" for i in range(20000)]
    lengths = np.array([1 + (i * 7919) % 400 for i in range(len(ids))], np.int64)  # sizes from 1 to 400 tokens
    keys = np.array([mix_key(i, 0) for i in ids], np.uint64)

    def take(epochs, seed=0, key_array=keys):
        cutoff = fraction_cutoff(key_array, lengths, epochs % 1)
        return [copies(i, epochs, seed, cutoff) for i in ids]

    assert set(take(2.0)) == {2}
    for epochs in (0.25, 1.5, 0.003):
        got = take(epochs)
        tokens = int(np.dot(got, lengths))
        target = epochs * int(lengths.sum())
        # whole documents until the quota is met: over it by less than one document
        assert target <= tokens < target + lengths.max(), (epochs, tokens, target)
    down = take(0.25)
    assert set(down) == {0, 1} and down == take(0.25)  # deterministic
    other_keys = np.array([mix_key(i, 7) for i in ids], np.uint64)
    assert down != take(0.25, 7, other_keys)  # the seed picks another sample
    # a larger fraction keeps every document a smaller one keeps
    assert all(b >= a for a, b in zip(down, take(0.5)))
    # the cutoff does not depend on the order the documents come in
    perm = np.random.default_rng(0).permutation(len(ids))
    assert fraction_cutoff(keys[perm], lengths[perm], 0.25) == fraction_cutoff(keys, lengths, 0.25)
    assert fraction_cutoff(keys, lengths, 0.0) == -1 and set(take(1.0)) == {1}


def _cutoff_of_all_keys(keys, lengths, fraction):
    """The cutoff by ordering every key at once (what the two passes must equal)."""
    quota = fraction * float(np.sum(lengths))
    if quota <= 0 or not len(keys):
        return -1
    order = np.lexsort((lengths, keys))
    reached = np.cumsum(lengths[order]) >= quota
    return int(keys[order[int(np.argmax(reached)) if reached.any() else len(order) - 1]])


def test_the_two_pass_cutoff_is_the_cutoff_of_all_keys_in_order():
    rng = np.random.default_rng(3)
    for case in range(300):
        n = int(rng.integers(1, 400))
        if case % 3 == 0:  # few distinct keys in few buckets: ties of keys, quotas met inside a crowded bucket
            keys = rng.choice(np.array([1, 2, 2**52, 2**52 + 1, 2**63, 2**64 - 1], np.uint64), n)
        else:
            keys = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
        lengths = rng.integers(0, 50 if case % 2 else 3, n).astype(np.int64)  # some documents of no tokens
        for fraction in (0.0, 1e-9, float(rng.random()), 0.5, 1 - 1e-12):
            got = fraction_cutoff(keys, lengths, fraction)
            assert got == _cutoff_of_all_keys(keys, lengths, fraction), (case, fraction)
    # the histogram that finds the bucket is a fixed size, whatever the number of documents
    assert key_histogram(keys, lengths).shape == key_histogram(keys[:1], lengths[:1]).shape == (2, KEY_BUCKETS)


def test_weights_belong_to_named_sources():
    assert source_weights([InputConfig("a.jsonl", name="web", weight=3), InputConfig("b.jsonl")]) == {"web": 3}
    with pytest.raises(ConfigError, match="needs inputs\\[\\].name"):
        InputConfig("a.jsonl", weight=2)
    with pytest.raises(ConfigError, match="inputs\\[\\].weight must be >= 0"):
        InputConfig("a.jsonl", name="web", weight=-1)
    with pytest.raises(UserError, match="different weights"):
        source_weights([InputConfig("a.jsonl", name="web", weight=3), InputConfig("b.jsonl", name="web")])


@pytest.fixture(scope="module")
def two_sources(tmp_path_factory):
    web = make_documents(300, seed=3)
    books = make_documents(60, seed=4)
    for d in web:
        d["source"], d["annotations"] = "web", json.dumps({"lang": "en", "quality_score": 0.5})
    for d in books:
        d["id"] = "book-" + d["id"]
        d["source"], d["annotations"] = "books", json.dumps({"lang": "de"})
    directory = tmp_path_factory.mktemp("mix") / "clean"
    write_clean_shards(directory, web + books, num_shards=2)
    return directory


def _run(clean, out, tokenizer, **kwargs):
    with TestPipeline() as p:
        _ = p | TokenizeShards(str(clean), str(out), str(tokenizer), **kwargs)
    return json.loads((out / "manifest.json").read_text())


def _rows(out):
    rows = []
    for path in sorted((out / "train").glob("*.arrow")):
        rows += ipc.open_file(pa.memory_map(str(path))).read_all().to_pylist()
    return rows


def test_tokenize_without_a_budget_writes_every_document_once_with_its_source(tmp_path, two_sources, tokenizer_path):
    manifest = _run(two_sources, tmp_path / "tokens", tokenizer_path, val_fraction=0.0, num_shards=2)
    rows = _rows(tmp_path / "tokens")
    assert len(rows) == 360 and len({r["id"] for r in rows}) == 360
    assert {r["source"] for r in rows if r["id"].startswith("book-")} == {"books"}
    sources = manifest["sources"]
    assert set(sources) == {"web", "books"}
    for name, count in (("web", 300), ("books", 60)):
        s = sources[name]
        assert s["documents"] == s["documents_before"] == count and s["epochs"] == 1.0
        assert s["tokens"] == s["tokens_before"] == sum(len(r["tokens"]) for r in rows if r["source"] == name)


def test_tokenize_with_weights_up_samples_and_down_samples_whole_documents(tmp_path, two_sources, tokenizer_path):
    natural = _run(two_sources, tmp_path / "natural", tokenizer_path, val_fraction=0.0, num_shards=2)["sources"]
    target = natural["web"]["tokens"] + natural["books"]["tokens"]
    weights = {"web": 1.0, "books": 1.0}  # equal shares: books (~1/6 of the tokens) go up, web goes down
    manifest = _run(two_sources, tmp_path / "mixed", tokenizer_path, val_fraction=0.0, num_shards=2,
                    weights=weights, target_tokens=target, mixture_seed=0)
    sources = manifest["sources"]
    books, web = sources["books"], sources["web"]
    assert books["epochs"] > 2 and web["epochs"] < 1
    assert abs(books["share"] - 0.5) < 0.1 and abs(web["share"] - 0.5) < 0.1
    assert books["share_before"] < 0.3
    rows = _rows(tmp_path / "mixed")
    per_id = {}
    for r in rows:
        per_id.setdefault(r["id"], []).append(r)
    # up-sampling repeats whole documents (same tokens each time); down-sampling drops whole documents
    assert all(len({tuple(r["tokens"]) for r in reps}) == 1 for reps in per_id.values())
    book_ids = {i for i in per_id if i.startswith("book-")}
    assert len(book_ids) == 60 and min(len(per_id[i]) for i in book_ids) >= int(books["epochs"])
    assert web["documents"] == sum(1 for r in rows if r["source"] == "web") < 300
    assert books["tokens"] == sum(len(r["tokens"]) for r in rows if r["source"] == "books")
    assert manifest["documents_encoded"] == 360 and manifest["mixture"]["target_tokens"] == target
    # per language (the lang annotation), the same figures: here English is web and German is books
    languages = manifest["languages"]
    assert set(languages) == {"en", "de"}
    for lang, source in (("en", web), ("de", books)):
        assert {k: languages[lang][k] for k in ("documents_before", "tokens_before", "documents", "tokens", "share")} \
            == {k: source[k] for k in ("documents_before", "tokens_before", "documents", "tokens", "share")}
    # the trainer reads the repeated documents like any others
    corpus = TokenCorpus(str(tmp_path / "mixed"))
    assert sum(len(s) for s in corpus.split("train")) == len(rows)
    # the same inputs give the same bytes
    again = _run(two_sources, tmp_path / "again", tokenizer_path, val_fraction=0.0, num_shards=2,
                 weights=weights, target_tokens=target, mixture_seed=0)
    assert again["sources"] == sources
    assert [p.read_bytes() for p in sorted((tmp_path / "again" / "train").glob("*.arrow"))] == \
        [p.read_bytes() for p in sorted((tmp_path / "mixed" / "train").glob("*.arrow"))]


def test_token_sized_shards_hold_about_shard_tokens_each(tmp_path, two_sources, tokenizer_path):
    natural = _run(two_sources, tmp_path / "natural", tokenizer_path, val_fraction=0.1, num_shards=1)
    train_tokens = natural["splits"]["train"]["tokens"]
    manifest = _run(two_sources, tmp_path / "sized", tokenizer_path, val_fraction=0.1, num_shards=1,
                    shard_tokens=train_tokens // 4)
    train = manifest["splits"]["train"]
    assert len(train["shards"]) == 5 and train["shards"][0] == "train/part-00000-of-00005.arrow"
    assert train["tokens"] == train_tokens and manifest["splits"]["val"] == {
        **natural["splits"]["val"], "shards": manifest["splits"]["val"]["shards"]}
    assert all(0.5 * train_tokens / 5 < t < 1.5 * train_tokens / 5 for t in train["shard_tokens"])
    assert sorted(p.name for p in (tmp_path / "sized" / "train").iterdir()) == [
        f"part-{i:05d}-of-00005.arrow" for i in range(5)]
    # a document keeps its split; with a budget the count follows the weighted tokens
    weighted = _run(two_sources, tmp_path / "weighted", tokenizer_path, val_fraction=0.1, num_shards=1,
                    shard_tokens=train_tokens // 4, target_tokens=2 * train_tokens, weights={"books": 1, "web": 1})
    assert len(weighted["splits"]["train"]["shards"]) == 9


def test_run_tokenize_takes_the_weights_from_the_named_inputs(tmp_path, two_sources, tokenizer_path):
    from corpusforge.config import load_config
    from tests.runs import tokenize_on

    (tmp_path / "run.yaml").write_text(
        "inputs:\n  - {path: web.jsonl, name: web, weight: 1}\n  - {path: books/, name: books, weight: 3}\n"
        f"output: {{run_dir: {tmp_path / 'run'}}}\n"
        f"tokenize: {{input: {two_sources}, tokenizer: {tokenizer_path}, val_fraction: 0.0, num_shards: 1, "
        "target_tokens: 40000}\n")
    manifest = tokenize_on(load_config(tmp_path / "run.yaml"), progress=False)
    assert manifest["mixture"] == {"target_tokens": 40000, "seed": 0, "weights": {"books": 3.0, "web": 1.0}}
    books, web = manifest["sources"]["books"], manifest["sources"]["web"]
    assert abs(books["epochs"] * books["tokens_before"] - 30000) < 1 and abs(web["epochs"] * web["tokens_before"] - 10000) < 1
    assert abs(books["share"] - 0.75) < 0.1


@pytest.fixture(scope="module")
def unequal_sources(tmp_path_factory):
    """590 web and 60 book documents of 10 to 300 tokens (the issue's case)."""
    web, books = make_documents(590, seed=5), make_documents(60, seed=6)
    for prefix, docs in (("web", web), ("books", books)):
        for d in docs:
            d["id"], d["source"] = f"{prefix}-{d['id']}", prefix
    directory = tmp_path_factory.mktemp("unequal") / "clean"
    write_clean_shards(directory, web + books, num_shards=2)
    return directory


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_source_hits_its_weight_within_a_point_and_the_budget_within_a_percent(tmp_path, unequal_sources,
                                                                                   tokenizer_path, seed):
    natural = _run(unequal_sources, tmp_path / "natural", tokenizer_path, val_fraction=0.1, num_shards=2)
    target = int(0.57 * natural["splits"]["train"]["tokens"])  # web is cut to ~0.3 epochs, books repeated ~3 times
    manifest = _run(unequal_sources, tmp_path / "mixed", tokenizer_path, val_fraction=0.1, num_shards=2,
                    weights={"web": 0.5, "books": 0.5}, target_tokens=target, mixture_seed=seed)
    sources = manifest["sources"]
    assert sources["web"]["epochs"] < 1 < 2 < sources["books"]["epochs"]
    for name in ("web", "books"):
        assert abs(sources[name]["share"] - 0.5) <= 0.01, (name, sources[name])
    written = manifest["splits"]["train"]["tokens"]
    assert abs(written / target - 1) <= 0.01, (written, target)
    assert manifest["splits"]["val"] == natural["splits"]["val"]  # validation is not weighted
