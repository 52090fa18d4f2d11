"""Tokenizer training on a record with one very long word (``text_guards.bounded_pieces``).

The ``tokenizers`` trainers are super-linear in the length of one pre-tokenized word: measured before the guard
(``bench/record_cost.py --ops tok_bpe_train tok_wordpiece_train tok_unigram_train``), BPE on one 100,000-digit
word took 6.6 CPU s (0.06 s at 10,000: quadratic), WordPiece on a 100,000-letter word 5.1 s, Unigram on 100,000
dots 4.0 s; the cases here are three times longer (~40-60 s before); with the guard each takes ~0.1 s. Each
trains in a child process, so that the old code fails on the time limit instead of stalling the run.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap

import pytest
from tokenizers import pre_tokenizers

from corpusforge.core.text_guards import MAX_RUN, bounded_pieces
from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.train import new_tokenizer, train_from_texts
from tests.tokenizer.data import make_documents

LIMIT_S = 60  # wall seconds for a child: ~2 s with the guard (most of it imports), ~40 s or more without it


def _longest_run(text: str) -> int:
    runs = [len(run) for run in text.split(" ")]  # runs between spaces
    spaces = [len(run) for run in "".join(c if c == " " else "\n" for c in text).split("\n")]
    return max(runs + spaces)


def test_pieces_rebuild_the_text_and_bound_every_run():
    rng = random.Random(0)
    for _ in range(200):
        parts = [rng.choice(["a", "7", ".", " ", "\n", "\t", "\u0301", "\U0001F600"]) * rng.choice([1, 3, 999, 1001, 2500])
                 for _ in range(rng.randint(1, 8))]
        text = "".join(parts)
        pieces = bounded_pieces(text)
        assert "".join(pieces) == text
        assert all(_longest_run(piece) <= MAX_RUN for piece in pieces)


def test_ordinary_text_is_one_piece():
    for doc in make_documents(50, seed=3):
        assert bounded_pieces(doc["text"]) == [doc["text"]]
    at_the_bound = "x" * MAX_RUN + " " * MAX_RUN + "y"
    assert bounded_pieces(at_the_bound) == [at_the_bound]
    assert bounded_pieces("x" * (MAX_RUN + 1)) == ["x" * MAX_RUN, "x"]


@pytest.mark.parametrize("pre", [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                                 pre_tokenizers.BertPreTokenizer()])
def test_a_long_run_with_line_breaks_is_cut_where_the_pre_tokenizer_splits_anyway(pre):
    text = "Intro " + "".join(f"row{i}\n" for i in range(600)) + "\tend of it"  # 4,000 characters, no space
    pieces = bounded_pieces(text)
    assert len(pieces) > 1
    assert [w for piece in pieces for w, _ in pre.pre_tokenize_str(piece)] == [w for w, _ in pre.pre_tokenize_str(text)]


def test_training_on_ordinary_text_is_unchanged():
    docs = [doc["text"] for doc in make_documents(200, seed=4)]
    cfg = TokenizerConfig(family="decoder", kind="bpe", vocab_size=400)
    guarded = train_from_texts([docs], cfg)
    bare = new_tokenizer("bpe", "decoder")
    from corpusforge.tokenizer.train import finish, new_trainer

    bare.train_from_iterator([docs], trainer=new_trainer("bpe", "decoder", 400, cfg.min_frequency, cfg.max_token_chars))
    assert guarded.to_str() == finish(bare, "bpe", "decoder").to_str()


_CHILD = textwrap.dedent("""
    import json, sys, time
    from corpusforge.tokenizer.config import TokenizerConfig
    from corpusforge.tokenizer.train import train_from_texts
    family, kind, unit, repeat = json.loads(sys.argv[1])
    text = unit * repeat
    cfg = TokenizerConfig(family=family, kind=kind, vocab_size=600)
    start = time.process_time()
    tok = train_from_texts([["An ordinary sentence to learn from, and another one. " * 40, text]], cfg)
    print(json.dumps({"seconds": time.process_time() - start, "vocab": tok.get_vocab_size()}))
""")


@pytest.mark.timeout(LIMIT_S + 30)
@pytest.mark.parametrize("family,kind,unit,repeat", [
    ("decoder", "bpe", "7", 300_000),                # one 300k-digit word: byte-level BPE
    ("encoder", "wordpiece", "abcdefghij", 50_000),  # one 500k-letter word: WordPiece
    ("t5", "unigram", ".", 300_000),                 # 300k dots: one Metaspace piece
], ids=["bpe-digits", "wordpiece-word", "unigram-dots"])
def test_one_long_word_does_not_stall_training(family, kind, unit, repeat):
    chars = len(unit) * repeat
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([family, kind, unit, repeat])], capture_output=True,
                              text=True, timeout=LIMIT_S, env={"TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1",
                                                               "PATH": "/usr/bin:/bin"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"training {kind} on one record with a {chars:,}-character word ran past {LIMIT_S} s")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["vocab"] > 20  # it learned something
    assert result["seconds"] < 5, result  # ~0.1 s with the guard; ~40-60 s without it
