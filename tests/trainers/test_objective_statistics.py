"""The noise of every masking option against the papers' numbers, measured on a few thousand examples.

BERT: 15% of tokens predicted, of those 80% [MASK] / 10% random / 10% unchanged; whole-word masking keeps
words whole at the same rate; SpanBERT: span lengths (in words) geometric with p = 0.2 clipped at 10 (mean
3.8); next-sentence prediction (BERT) and sentence-order prediction (ALBERT): label 1 half of the time.
The seeds are fixed, so these tests are deterministic; the tolerances are several standard errors wide.
"""
import numpy as np
import pytest

from tests.trainers.conftest import make_text
from corpusforge.trainers.config import MLMConfig
from corpusforge.trainers.objectives import (IGNORE, draw_span_length, mask_tokens, next_sentence_pair,
                                             sentence_order_pair, span_length_distribution, word_ids)

EXAMPLES = 3000
WINDOW = 126


@pytest.fixture(scope="module")
def stream(vocab, tiny_run):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tiny_run / "tokenizer" / "tokenizer.json"))
    docs = [np.asarray(e.ids, dtype=np.int64) for e in tokenizer.encode_batch(make_text(400, seed=11))]
    return np.concatenate([np.r_[d, vocab.eos] for d in docs])  # documents packed as training packs them


def windows(stream, count=EXAMPLES, length=WINDOW):
    for i in range(count):
        start = (i * 37) % (len(stream) - length)
        yield i, stream[start: start + length]


def masking_counts(stream, vocab, options, count=EXAMPLES):
    totals = dict(candidates=0, chosen=0, mask=0, random=0, kept=0)
    for i, window in windows(stream, count):
        tokens = np.r_[vocab.bos, window, vocab.eos]
        inputs, labels = mask_tokens(tokens, np.random.default_rng([5, i]), vocab, options)
        chosen = labels != IGNORE
        totals["candidates"] += int((~vocab.special[tokens]).sum())
        totals["chosen"] += int(chosen.sum())
        totals["mask"] += int((inputs[chosen] == vocab.mask).sum())
        # A random replacement that draws the original token looks unchanged: the expected share of those
        # (1 / ordinary tokens) is added back below.
        totals["kept"] += int((inputs[chosen] == tokens[chosen]).sum())
        totals["random"] += int(((inputs[chosen] != vocab.mask) & (inputs[chosen] != tokens[chosen])).sum())
        if options.whole_word or options.span:
            words = word_ids(tokens, vocab)
            partial = sum(not chosen[words == w].all() for w in np.unique(words[chosen]))
            # Words stay whole; SpanBERT keeps the exact budget, so the span that reaches it may end mid-word.
            assert partial <= (1 if options.span else 0)
    return totals


def check_80_10_10(totals, vocab, tolerance):
    collisions = 1 / len(vocab.random_ids)  # a random token that happens to be the original one
    mask, random, kept = (totals[k] / totals["chosen"] for k in ("mask", "random", "kept"))
    assert abs(mask - 0.8) < tolerance, mask
    assert abs(random / (1 - collisions) - 0.1) < tolerance, random
    assert abs(kept - 0.1 - 0.1 * collisions) < tolerance, kept


def test_bert_masking_predicts_15_percent_with_80_10_10(stream, vocab):
    totals = masking_counts(stream, vocab, MLMConfig())
    assert totals["chosen"] > 50_000
    assert abs(totals["chosen"] / totals["candidates"] - 0.15) < 0.002  # round(0.15 x n) per example
    check_80_10_10(totals, vocab, tolerance=0.01)


def test_whole_word_masking_keeps_the_rate_and_the_80_10_10(stream, vocab):
    totals = masking_counts(stream, vocab, MLMConfig(whole_word=True), count=2000)
    rate = totals["chosen"] / totals["candidates"]
    assert 0.14 < rate <= 0.15  # whole words fill the budget from below
    check_80_10_10(totals, vocab, tolerance=0.01)


def test_spanbert_span_lengths_are_geometric_0_2_clipped_at_10():
    probs = span_length_distribution(0.2, 10)
    rng = np.random.default_rng(0)
    lengths = np.array([draw_span_length(rng, probs) for _ in range(20_000)])
    assert lengths.min() == 1 and lengths.max() == 10
    assert abs(lengths.mean() - 3.8) < 0.05  # SpanBERT, section 3.1: mean span length 3.8 words
    observed = np.bincount(lengths, minlength=11)[1:] / len(lengths)
    np.testing.assert_allclose(observed, probs, atol=0.01)
    expected = 0.2 * 0.8 ** np.arange(10)
    np.testing.assert_allclose(probs, expected / expected.sum())


def test_spanbert_masking_rate_80_10_10_per_span_and_span_lengths(stream, vocab):
    totals = masking_counts(stream, vocab, MLMConfig(span=True), count=2000)
    assert abs(totals["chosen"] / totals["candidates"] - 0.15) < 0.005
    check_80_10_10(totals, vocab, tolerance=0.03)  # one decision per span: fewer independent draws
    # Spans measured in the output: runs of masked whole words. The budget cuts the last span of an example
    # and a sentence's end or a document boundary cuts others; adjacent spans merge. Net, a run is shorter
    # than a drawn span, never longer than 10 words unless two spans touch.
    runs = []
    for i, window in windows(stream, 1000, length=510):
        tokens = np.r_[vocab.bos, window, vocab.eos]
        _, labels = mask_tokens(tokens, np.random.default_rng([6, i]), vocab, MLMConfig(span=True))
        chosen = np.flatnonzero(labels != IGNORE)
        words = word_ids(tokens, vocab)
        for run in np.split(chosen, np.flatnonzero(np.diff(chosen) > 1) + 1):
            runs.append(len(np.unique(words[run])))
    runs = np.array(runs)
    assert 2.5 < runs.mean() < 4.0, runs.mean()
    assert (runs <= 10).mean() > 0.97


def test_next_sentence_prediction_is_random_next_half_of_the_time(stream, vocab):
    labels = []
    for i, window in windows(stream):
        other = stream[(i * 101) % (len(stream) - WINDOW):][:WINDOW]
        ids, segments, label = next_sentence_pair(window, other, np.random.default_rng([7, i]), vocab)
        assert len(ids) == WINDOW + 3 and len(segments) == len(ids)
        labels.append(label)
    assert abs(np.mean(labels) - 0.5) < 0.03


def test_sentence_order_prediction_swaps_half_of_the_time_within_one_document(stream, vocab):
    labels, lengths = [], []
    for i, window in windows(stream):
        ids, segments, label = sentence_order_pair(window, np.random.default_rng([8, i]), vocab)
        assert ids[0] == vocab.bos and ids[-1] == vocab.eos and len(ids) <= WINDOW + 3
        first = ids[1:][segments[1:] == 0][:-1]  # drop each segment's closing [SEP]
        second = ids[segments == 1][:-1]
        assert len(first) and len(second)
        document = np.r_[second, first] if label else np.r_[first, second]
        assert not (document == vocab.eos).any()  # one document: no separator inside the pair
        # The pair, put back in order, is a contiguous piece of the window: the two segments are consecutive.
        found = [s for s in range(len(window) - len(document) + 1) if (window[s: s + len(document)] == document).all()]
        assert found
        labels.append(label)
        lengths.append(len(ids))
    assert abs(np.mean(labels) - 0.5) < 0.03  # ALBERT: the two segments are swapped with probability 0.5
    assert np.mean(lengths) > 20  # the longest document of the window, not a sliver of it
