import math

import numpy as np
import pytest

from tests.trainers.conftest import make_text, train_tokenizer
from corpusforge.trainers.config import BARTConfig, MLMConfig
from corpusforge.trainers.objectives import (IGNORE, bart_noise, causal_lm, mask_tokens, next_sentence_pair,
                                             prefix_lm, random_spans_noise_mask, span_corrupt,
                                             span_corruption_lengths, span_length_distribution, uncorrupt, word_ids)
from corpusforge.trainers.registry import build_objective, prepare_vocabulary
from corpusforge.trainers.vocab import Vocabulary


@pytest.fixture(scope="module")
def docs(vocab, tiny_run):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tiny_run / "tokenizer" / "tokenizer.json"))
    return [np.asarray(e.ids, dtype=np.int64) for e in tokenizer.encode_batch(make_text(200, seed=7))]


_streams = {}


def window(docs, vocab, n, start=0):
    if id(docs) not in _streams:
        _streams[id(docs)] = np.concatenate([np.r_[d, vocab.eos] for d in docs])
    stream = _streams[id(docs)]
    start %= len(stream) - n
    return stream[start: start + n]


def with_frame(tokens, vocab):
    return np.r_[vocab.bos, tokens, vocab.eos].astype(np.int64)


def test_vocabulary_reads_roles_from_the_tokenizer(vocab):
    assert (vocab.bos, vocab.pad, vocab.eos, vocab.unk, vocab.mask) == (0, 1, 2, 3, 4)  # the bart family order
    assert vocab.special[:5].all() and not vocab.special[5:].any()
    assert vocab.sentence_end.sum() >= 3 and vocab.word_start.any() and not vocab.word_start.all()


def test_vocabulary_of_the_encoder_and_t5_families(tmp_path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from corpusforge.tokenizer.special_tokens import family_tokens

    texts = make_text(50)
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=150, special_tokens=list(family_tokens("encoder").tokens)))
    tok.save(str(tmp_path / "wp.json"))
    v = Vocabulary.from_file(tmp_path / "wp.json")
    assert (v.pad, v.unk, v.bos, v.eos, v.mask) == (0, 1, 2, 3, 4)  # [CLS] and [SEP] play bos and eos
    pieces = [i for t, i in tok.get_vocab().items() if t.startswith("##")]
    words = [i for t, i in tok.get_vocab().items() if t.isalpha()]
    assert pieces and not v.word_start[pieces].any() and v.word_start[words].all()
    t5 = train_tokenizer(texts, tmp_path / "t5.json", vocab_size=400, specials=family_tokens("t5").all_tokens)
    v = Vocabulary.from_file(tmp_path / "t5.json")
    assert v.eos == t5.token_to_id("</s>") and v.mask is None and len(v.sentinels) == 100
    assert v.sentinels[:2] == (t5.token_to_id("<extra_id_0>"), t5.token_to_id("<extra_id_1>"))


@pytest.mark.parametrize("options", [MLMConfig(), MLMConfig(whole_word=True), MLMConfig(span=True)])
def test_mlm_rates_specials_and_labels(docs, vocab, options):
    stats = {"chosen": 0, "candidates": 0, "mask": 0, "random": 0, "kept": 0}
    for i in range(300):
        tokens = with_frame(window(docs, vocab, 126, start=i * 7), vocab)
        inputs, labels = mask_tokens(tokens, np.random.default_rng(i), vocab, options)
        chosen = labels != IGNORE
        assert not chosen[vocab.special[tokens]].any()  # special tokens never chosen
        assert (labels[chosen] == tokens[chosen]).all()  # labels are the original tokens
        assert (inputs[~chosen] == tokens[~chosen]).all()  # nothing else changes
        candidates = int((~vocab.special[tokens]).sum())
        assert chosen.sum() == round(0.15 * candidates) or options.whole_word  # exact budget
        assert chosen.sum() <= round(0.15 * candidates)
        stats["chosen"] += int(chosen.sum())
        stats["candidates"] += candidates
        stats["mask"] += int((inputs[chosen] == vocab.mask).sum())
        kept = inputs[chosen] == tokens[chosen]
        stats["kept"] += int(kept.sum())
        stats["random"] += int((~kept & (inputs[chosen] != vocab.mask)).sum())
    rate = stats["chosen"] / stats["candidates"]
    assert abs(rate - 0.15) < 0.01
    tolerance = 0.02 if not options.span else 0.06  # SpanBERT decides per span: fewer independent draws
    assert abs(stats["mask"] / stats["chosen"] - 0.8) < tolerance
    # A random replacement can draw the original token (1 in ~200): count those as kept.
    assert abs(stats["random"] / stats["chosen"] - 0.1) < tolerance
    assert abs(stats["kept"] / stats["chosen"] - 0.1) < tolerance


def test_mlm_whole_word_masks_complete_words(docs, vocab):
    for i in range(50):
        tokens = with_frame(window(docs, vocab, 126, start=i * 11), vocab)
        _, labels = mask_tokens(tokens, np.random.default_rng(i), vocab, MLMConfig(whole_word=True))
        words = word_ids(tokens, vocab)
        chosen = labels != IGNORE
        for w in np.unique(words[chosen]):
            assert chosen[words == w].all()


def test_spanbert_spans_are_contiguous_whole_words_with_geometric_lengths(docs, vocab):
    probs = span_length_distribution(0.2, 10)
    assert abs((np.arange(1, 11) * probs).sum() - 3.8) < 0.05  # SpanBERT's mean span length
    lengths = []
    for i in range(200):
        tokens = with_frame(window(docs, vocab, 254, start=i * 13), vocab)
        _, labels = mask_tokens(tokens, np.random.default_rng(i), vocab, MLMConfig(span=True))
        chosen = labels != IGNORE
        words = word_ids(tokens, vocab)
        runs = np.split(np.flatnonzero(chosen), np.flatnonzero(np.diff(np.flatnonzero(chosen)) > 1) + 1)
        for r in runs:
            if len(r):
                lengths.append(len(np.unique(words[r])))
    assert max(lengths) <= 20  # adjacent spans may touch; a single span is at most 10 words
    assert 2.0 < np.mean(lengths) < 6.0


def test_masking_is_a_function_of_the_seed(docs, vocab):
    tokens = with_frame(window(docs, vocab, 126), vocab)
    a = mask_tokens(tokens, np.random.default_rng([1, 0, 5]), vocab)
    b = mask_tokens(tokens, np.random.default_rng([1, 0, 5]), vocab)
    c = mask_tokens(tokens, np.random.default_rng([1, 1, 5]), vocab)  # next epoch: fresh masks
    assert all((x == y).all() for x, y in zip(a, b))
    assert not (a[1] == c[1]).all()


def test_next_sentence_pairs(docs, vocab):
    labels = []
    for i in range(400):
        tokens = window(docs, vocab, 61, start=i * 5)
        other = window(docs, vocab, 61, start=(3000 + 37 * i) % 5000)
        ids, segments, label = next_sentence_pair(tokens, other, np.random.default_rng(i), vocab)
        assert len(ids) == len(segments) == 64
        assert ids[0] == vocab.bos and ids[-1] == vocab.eos
        split = int(np.argmax(segments))
        assert ids[split - 1] == vocab.eos and (segments[:split] == 0).all() and (segments[split:] == 1).all()
        assert (ids[1: split - 1] == tokens[: split - 2]).all()
        if label == 0:
            assert (ids[split:-1] == tokens[split - 2:]).all()
        labels.append(label)
    assert abs(np.mean(labels) - 0.5) < 0.08


def test_t5_lengths_are_exact():
    assert span_corruption_lengths(512) == (568, 114)
    assert span_corruption_lengths(128) == (141, 29)  # 141 - 21 noise + 7 sentinels + EOS = 128
    for inputs_length in (64, 128, 256, 512, 1024):
        raw, targets = span_corruption_lengths(inputs_length)
        for seed in range(5):
            tokens = np.arange(1000, 1000 + raw)
            sentinels = np.arange(999, 899, -1)  # descending, like T5's <extra_id_N>
            inputs, target = span_corrupt(tokens, np.random.default_rng(seed), sentinels, eos=1)
            assert len(inputs) == inputs_length and len(target) == targets
            assert inputs[-1] == 1 and target[-1] == 1


def test_t5_text_is_recoverable_and_sentinels_unique_descending(docs, vocab):
    v = vocab.with_sentinels(40)
    sentinels = np.asarray(v.sentinels)
    assert (np.diff(sentinels) == -1).all() and sentinels[0] == v.size - 1  # appended above the tokenizer's ids
    raw, _ = span_corruption_lengths(128)
    for seed in range(30):
        tokens = window(docs, vocab, raw, start=seed * 17)
        inputs, targets = span_corrupt(tokens, np.random.default_rng(seed), sentinels, v.eos)
        assert (uncorrupt(inputs, targets, sentinels, v.eos) == tokens).all()
        used = inputs[np.isin(inputs, sentinels)]
        assert (used == sentinels[: len(used)]).all()  # each span its own sentinel, in order
        assert (targets[np.isin(targets, sentinels)] == used).all()
        noise = random_spans_noise_mask(raw, np.random.default_rng(seed))
        assert noise.sum() == round(raw * 0.15) and not noise[0]


def test_bart_infilling_and_switches(docs, vocab):
    raw = window(docs, vocab, 126)
    target = with_frame(raw, vocab)
    off = BARTConfig(infill_ratio=0, permute_sentences=0, random_ratio=0)
    assert (bart_noise(target, np.random.default_rng(0), vocab, off) == target).all()
    masked_words = []
    for seed in range(100):
        rng = np.random.default_rng(seed)
        source = bart_noise(target, rng, vocab, BARTConfig(permute_sentences=0, random_ratio=0))
        assert source[0] == vocab.bos and source[-1] == vocab.eos
        assert (source == vocab.mask).sum() >= 1 and len(source) < len(target)
        # Removing the masks leaves the target with whole spans cut out, in order: a subsequence.
        rest = source[source != vocab.mask]
        it = iter(target.tolist())
        assert all(t in it for t in rest.tolist())
        masked_words.append(len(target) - len(rest))
    # 30% of the words are masked; words are a few tokens each, so about 30% of the tokens.
    assert abs(np.mean(masked_words) / (len(target) - 2) - 0.3) < 0.08


def test_bart_permutation_rotation_deletion_and_token_masking(docs, vocab):
    target = with_frame(window(docs, vocab, 126), vocab)
    rng = np.random.default_rng(3)
    permuted = bart_noise(target, rng, vocab, BARTConfig(infill_ratio=0, permute_sentences=1.0))
    assert sorted(permuted.tolist()) == sorted(target.tolist()) and not (permuted == target).all()
    assert permuted[0] == target[0] and permuted[-1] == target[-1]
    rotated = bart_noise(target, rng, vocab, BARTConfig(infill_ratio=0, permute_sentences=0, rotate=1.0))
    inner = target[1:-1].tolist()
    assert any(rotated[1:-1].tolist() == inner[k:] + inner[:k] for k in range(1, len(inner)))
    deleted = bart_noise(target, rng, vocab, BARTConfig(infill_ratio=0, permute_sentences=0, delete_ratio=0.2))
    words = int((target[1:-1] != vocab.eos).sum())  # the budget counts tokens other than document separators
    assert len(deleted) == len(target) - math.ceil(0.2 * words)
    masked = bart_noise(target, rng, vocab, BARTConfig(infill_ratio=0, permute_sentences=0, mask_ratio=0.2))
    assert (masked == vocab.mask).sum() == math.ceil(0.2 * words) and len(masked) == len(target)


def documents(tokens, vocab):
    """The packed documents of ``<s> ... </s>``: the inner tokens split at the ``</s>`` separators."""
    inner = tokens[1:-1]
    pieces = np.split(inner, np.flatnonzero(inner == vocab.eos))
    return pieces[:1] + [piece[1:] for piece in pieces[1:]]


def test_bart_keeps_document_separators_and_permutes_sentences_within_documents(docs, vocab):
    target = with_frame(window(docs, vocab, 126, start=17), vocab)
    expected = documents(target, vocab)
    assert len(expected) >= 3  # the window holds several packed documents
    shuffled = 0
    for seed in range(50):
        rng = np.random.default_rng(seed)
        permuted = bart_noise(target, rng, vocab, BARTConfig(infill_ratio=0, permute_sentences=1.0))
        got = documents(permuted, vocab)
        assert len(got) == len(expected)  # every separator where it was
        assert all(sorted(a.tolist()) == sorted(b.tolist()) for a, b in zip(got, expected))
        shuffled += any(not np.array_equal(a, b) for a, b in zip(got, expected))
        # Every noise at once (no random replacement): separators are never masked or deleted, and what is
        # left of each document is a subsequence of that document.
        noised = bart_noise(target, rng, vocab, BARTConfig(infill_ratio=0.5, permute_sentences=0, mask_ratio=0.3,
                                                            delete_ratio=0.3, random_ratio=0.0))
        got = documents(noised, vocab)
        assert len(got) == len(expected) and noised[0] == vocab.bos and noised[-1] == vocab.eos
        for a, b in zip(got, expected):
            it = iter(b.tolist())
            assert all(t in it for t in a[a != vocab.mask].tolist())
    assert shuffled > 40


def test_causal_and_prefix_lm_labels():
    tokens = np.arange(10, 30)
    inputs, labels = causal_lm(tokens)
    assert (inputs == tokens[:-1]).all() and (labels == tokens[1:]).all()
    for seed in range(20):
        inputs, labels, prefix = prefix_lm(tokens, np.random.default_rng(seed))
        assert 1 <= prefix < len(inputs)
        assert (labels[: prefix - 1] == IGNORE).all() and (labels[prefix - 1:] == tokens[prefix:]).all()


@pytest.mark.parametrize("name", ["mlm", "span", "bart", "clm", "prefixlm"])
def test_collated_batches_have_the_exact_shapes(name, docs, vocab):
    v = prepare_vocabulary(vocab, name, 64)
    objective = build_objective(name, v, 64)
    examples = [objective.example(window(docs, vocab, objective.raw_length, start=i * 50),
                                  np.random.default_rng(i)) for i in range(4)]
    batch = objective.collate(examples)
    assert batch["input_ids"].shape == (4, 64)  # bart: shortened sources are padded to seq_len (one shape)
    if name == "span":
        assert batch["labels"].shape == batch["decoder_input_ids"].shape == (4, objective.decoder_length)
        assert (batch["decoder_input_ids"][:, 0] == v.pad).all()
    elif name == "bart":
        assert batch["labels"].shape == (4, 64) and (batch["decoder_input_ids"][:, 0] == v.eos).all()
        assert (batch["input_ids"][batch["attention_mask"] == 0] == v.pad).all()
    else:
        assert batch["labels"].shape == (4, 64)


def test_an_objective_whose_tokens_the_tokenizer_lacks_says_which_tokenizer_to_train(tmp_path):
    # `train --objective mlm` on a run whose tokenizer is a decoder's (tokenizer.family's default) ended "masked LM
    # needs special tokens the tokenizer lacks (mask: ...); retrain the tokenizer with them": not how (the family
    # decides the special tokens), nor that the token shards must be encoded again
    from corpusforge.core.errors import UserError
    from corpusforge.tokenizer.special_tokens import family_tokens

    decoder = train_tokenizer(make_text(30), tmp_path / "dec.json", specials=family_tokens("decoder").all_tokens)
    vocab = Vocabulary.from_tokenizer(decoder)
    for name, family in (("mlm", "encoder"), ("rtd", "encoder"), ("bart", "bart")):
        with pytest.raises(UserError) as caught:
            build_objective(name, vocab, 32)
        assert str(caught.value).endswith(f"; train one for it and encode the corpus again: corpusforge tokenizer "
                                          f"train --family {family} --overwrite, then corpusforge tokenize --overwrite")
    build_objective("clm", vocab, 32)  # what the tokenizer was trained for
