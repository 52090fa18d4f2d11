"""Shared fixtures: a tiny BPE tokenizer trained on generated text, and a run directory with token shards."""
from __future__ import annotations

import hashlib
import json
import pathlib
import random

import pytest
import torch

# Tiny models are dominated by per-op overhead; one thread is faster on a shared machine and deterministic.
torch.set_num_threads(1)

WORDS = ("the cat dog bird fish tree house river stone cloud green small quick brown lazy happy red blue "
         "runs jumps sleeps sings walks eats reads writes under over near beside with without and but").split()
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # the bart family of tokenizer/special_tokens.py


def make_text(n_docs: int, seed: int = 0) -> list[str]:
    rnd = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        sentences = []
        for _ in range(rnd.randint(1, 6)):
            words = [rnd.choice(WORDS) for _ in range(rnd.randint(3, 12))]
            sentences.append(" ".join(words).capitalize() + rnd.choice([".", ".", "!", "?"]))
        docs.append(" ".join(sentences))
    return docs


def train_tokenizer(texts: list[str], path: pathlib.Path, vocab_size: int = 400, specials=SPECIALS):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(specials),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path))
    return tokenizer


def make_run(run_dir: pathlib.Path, n_train: int = 300, n_val: int = 40, seed: int = 0) -> pathlib.Path:
    """A run directory with tokenizer/tokenizer.json, tokens/{train,val}/part-*.arrow and tokens/manifest.json."""
    from corpusforge.tokenizer.token_shards import write_token_shards

    texts = make_text(n_train + n_val, seed)
    tok_path = run_dir / "tokenizer" / "tokenizer.json"
    tokenizer = train_tokenizer(texts, tok_path)
    encoded = [e.ids for e in tokenizer.encode_batch(texts)]
    splits = {}
    for name, docs in (("train", encoded[:n_train]), ("val", encoded[n_train:])):
        paths = write_token_shards(run_dir / "tokens" / name, docs, docs_per_shard=128)
        splits[name] = {"shards": [str(p.relative_to(run_dir / "tokens")) for p in paths],
                        "documents": len(docs), "tokens": sum(map(len, docs))}
    manifest = {"tokenizer": "../tokenizer/tokenizer.json",
                "tokenizer_sha256": hashlib.sha256(tok_path.read_bytes()).hexdigest(),
                "vocab_size": tokenizer.get_vocab_size(), "dtype": "uint16",
                "special_tokens": {s: tokenizer.token_to_id(s) for s in SPECIALS}, "splits": splits}
    (run_dir / "tokens" / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return run_dir


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> pathlib.Path:
    return make_run(tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="session")
def vocab(tiny_run):
    from corpusforge.trainers.vocab import Vocabulary

    return Vocabulary.from_file(tiny_run / "tokenizer" / "tokenizer.json")


@pytest.fixture
def run_dir(tiny_run, tmp_path):
    """A copy of the tiny run's tokenizer and token shards that a test may train into."""
    import shutil

    target = tmp_path / "run"
    shutil.copytree(tiny_run / "tokenizer", target / "tokenizer")
    shutil.copytree(tiny_run / "tokens", target / "tokens")
    return target
