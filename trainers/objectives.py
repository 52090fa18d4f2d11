"""Pretraining objectives: pure functions from token arrays to model inputs and labels, and their collators.

Each noising function takes a numpy ``Generator``; the data pipeline seeds one per example from
(seed, epoch, example index), so the noise is fresh every epoch (dynamic masking) and identical on resume,
whatever the number of devices. Labels are -100 wherever nothing is predicted.

    objective = build_objective("span", vocab, seq_len=512, config=train_config)   # registry.py
    objective.raw_length                      # 568 raw tokens make one 512-token input
    example = objective.example(tokens, np.random.default_rng([seed, epoch, index]))
    batch = objective.collate([example, ...])  # dict of tensors for Transformer.forward(**batch)
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.config import BARTConfig, MLMConfig, SpanConfig
from corpusforge.trainers.vocab import Vocabulary

IGNORE = -100


# ------------------------------------------------------------------------------------------ masked LM

def word_ids(tokens: np.ndarray, vocab: Vocabulary) -> np.ndarray:
    """Index of the word each position belongs to; a special token is a word of its own and starts one after it."""
    special = vocab.special[tokens]
    start = vocab.word_start[tokens] | special
    start[1:] |= special[:-1]
    if len(start):
        start[0] = True
    return np.cumsum(start) - 1


def mask_tokens(tokens: np.ndarray, rng: np.random.Generator, vocab: Vocabulary, options: MLMConfig = MLMConfig()
                ) -> tuple[np.ndarray, np.ndarray]:
    """BERT masking: ``(inputs, labels)``. Exactly round(probability x ordinary tokens) positions are predicted;
    of those 80% become the mask token, 10% a random ordinary token, 10% stay (per token, or per span for
    SpanBERT). Special tokens are never chosen."""
    tokens = np.asarray(tokens)
    candidate = ~vocab.special[tokens]
    budget = int(round(options.probability * candidate.sum()))
    if candidate.any():
        budget = max(budget, 1)
    chosen = np.zeros(len(tokens), dtype=bool)
    unit = np.arange(len(tokens))  # the unit an 80/10/10 decision applies to
    if options.span:
        chosen, unit = _span_selection(tokens, rng, vocab, budget, options)
    elif options.whole_word:
        words = word_ids(tokens, vocab)
        starts = np.flatnonzero(np.r_[True, words[1:] != words[:-1]])
        ends = np.r_[starts[1:], len(tokens)]
        covered = 0
        for w in rng.permutation(len(starts)):
            s, e = starts[w], ends[w]
            if not candidate[s] or covered + (e - s) > budget:
                continue
            chosen[s:e] = True
            covered += e - s
            if covered == budget:
                break
    else:
        chosen[rng.choice(np.flatnonzero(candidate), size=budget, replace=False)] = True
    labels = np.where(chosen, tokens, IGNORE)
    decision = rng.random(len(tokens))[unit]  # one draw per unit
    inputs = tokens.copy()
    to_mask = chosen & (decision < options.mask_ratio)
    to_random = chosen & (decision >= options.mask_ratio) & (decision < options.mask_ratio + options.random_ratio)
    inputs[to_mask] = vocab.mask
    inputs[to_random] = rng.choice(vocab.random_ids, size=int(to_random.sum()))
    return inputs, labels


def span_length_distribution(p: float, max_length: int) -> np.ndarray:
    """SpanBERT's span lengths: geometric(p) truncated at ``max_length`` and renormalised (mean 3.8 for 0.2, 10)."""
    lengths = np.arange(1, max_length + 1)
    probs = p * (1 - p) ** (lengths - 1)
    return probs / probs.sum()


def draw_span_length(rng: np.random.Generator, probs: np.ndarray) -> int:
    """One SpanBERT span length, in words, from ``span_length_distribution``."""
    return int(rng.choice(len(probs), p=probs)) + 1


def _span_selection(tokens, rng, vocab, budget, options):
    """SpanBERT: pick a random word, extend to a geometric number of whole words, until the budget is met."""
    words = word_ids(tokens, vocab)
    candidate = ~vocab.special[tokens]
    starts = np.flatnonzero(np.r_[True, words[1:] != words[:-1]])
    ends = np.r_[starts[1:], len(tokens)]
    probs = span_length_distribution(options.span_p, options.span_max)
    chosen = np.zeros(len(tokens), dtype=bool)
    unit = np.arange(len(tokens))
    covered, attempts = 0, 0
    while covered < budget and attempts < 100 * max(budget, 1):
        attempts += 1
        length = draw_span_length(rng, probs)
        w = rng.integers(len(starts))
        if not candidate[starts[w]] or chosen[starts[w]]:
            continue
        head = starts[w]
        for word in range(w, min(w + length, len(starts))):
            if not candidate[starts[word]]:
                break
            for position in range(starts[word], ends[word]):
                if covered >= budget:
                    break
                if not chosen[position]:
                    chosen[position], unit[position] = True, head
                    covered += 1
    return chosen, unit


def next_sentence_pair(tokens: np.ndarray, other: np.ndarray, rng: np.random.Generator, vocab: Vocabulary
                       ) -> tuple[np.ndarray, np.ndarray, int]:
    """BERT's NSP input ``[CLS] A [SEP] B [SEP]`` from ``len(tokens) + 3`` positions: ``(ids, segment_ids, label)``.

    A and B split ``tokens`` at a sentence end near the middle when there is one; with probability 0.5 B is
    replaced by as many tokens of ``other`` (label 1, "random next"), else label 0.
    """
    n = len(tokens)
    ends = np.flatnonzero(vocab.sentence_end[tokens[:-1]]) + 1
    middle = ends[(ends >= n // 4) & (ends <= 3 * n // 4)]
    split = int(rng.choice(middle)) if len(middle) else int(rng.integers(1, n))
    first, second = tokens[:split], tokens[split:]
    label = int(rng.random() < 0.5)
    if label:
        second = other[: len(second)]
    ids = np.concatenate([[vocab.bos], first, [vocab.eos], second, [vocab.eos]]).astype(tokens.dtype)
    segments = np.r_[np.zeros(split + 2, dtype=np.int64), np.ones(len(second) + 1, dtype=np.int64)]
    return ids, segments, label


def sentence_order_pair(tokens: np.ndarray, rng: np.random.Generator, vocab: Vocabulary
                        ) -> tuple[np.ndarray, np.ndarray, int]:
    """ALBERT's SOP input ``[CLS] A [SEP] B [SEP]``: ``(ids, segment_ids, label)``, at most ``len(tokens) + 3``
    positions.

    A and B are two consecutive segments of one document: the longest document of the window (documents are
    separated by ``vocab.eos`` in the packed stream) split at a sentence end near its middle when there is one.
    With probability 0.5 they are swapped (label 1), else label 0. The other documents of the window are left
    out: a segment pair never crosses a document boundary.
    """
    breaks = np.flatnonzero(tokens == vocab.eos)
    starts, ends = np.r_[0, breaks + 1], np.r_[breaks, len(tokens)]
    longest = int(np.argmax(ends - starts))
    document = tokens[starts[longest]: ends[longest]]
    if len(document) < 2:  # a window of separators only: nothing to order
        document = tokens
    n = len(document)
    sentence_ends = np.flatnonzero(vocab.sentence_end[document[:-1]]) + 1
    middle = sentence_ends[(sentence_ends >= n // 4) & (sentence_ends <= 3 * n // 4)]
    split = int(rng.choice(middle)) if len(middle) else int(rng.integers(1, n))
    first, second = document[:split], document[split:]
    label = int(rng.random() < 0.5)
    if label:
        first, second = second, first
    ids = np.concatenate([[vocab.bos], first, [vocab.eos], second, [vocab.eos]]).astype(tokens.dtype)
    segments = np.r_[np.zeros(len(first) + 2, dtype=np.int64), np.ones(len(second) + 1, dtype=np.int64)]
    return ids, segments, label


# ------------------------------------------------------------------------------------- T5 span corruption

def span_corruption_lengths(inputs_length: int, noise_density: float = 0.15, mean_span_length: float = 3.0
                            ) -> tuple[int, int]:
    """T5's ``compute_input_and_target_lengths``: the raw length whose corrupted input (with EOS) fits
    ``inputs_length`` exactly, and the target length (with EOS). 512 -> (568, 114)."""
    def lengths(raw: int) -> tuple[int, int]:
        noise = int(round(raw * noise_density))
        spans = int(round(noise / mean_span_length))
        return raw - noise + spans + 1, noise + spans + 1

    raw = inputs_length
    while lengths(raw + 1)[0] <= inputs_length:
        raw += 1
    _, targets = lengths(raw)
    if noise_density == 0.5 and targets > inputs_length:
        raw, targets = raw - 1, targets - 1
    return raw, targets


def random_spans_noise_mask(length: int, rng: np.random.Generator, noise_density: float = 0.15,
                            mean_span_length: float = 3.0) -> np.ndarray:
    """T5's noise mask: round(length x density) noise tokens in round(noise / mean) spans, the sequence starting
    with a non-noise span."""
    noise = min(max(int(round(length * noise_density)), 1), length - 1)
    spans = max(int(round(noise / mean_span_length)), 1)

    def segment(items: int, segments: int) -> np.ndarray:
        first = np.arange(items - 1) < segments - 1
        rng.shuffle(first)
        return np.bincount(np.cumsum(np.r_[False, first]), minlength=segments)

    interleaved = np.stack([segment(length - noise, spans), segment(noise, spans)], axis=1).reshape(-1)
    starts = np.zeros(length, dtype=np.int64)
    starts[np.cumsum(interleaved)[:-1]] = 1
    return np.cumsum(starts) % 2 == 1


def collapse_spans(tokens: np.ndarray, spans: np.ndarray, sentinels: np.ndarray) -> np.ndarray:
    """Replace each run of ``spans`` by the next sentinel (sentinels[0], sentinels[1], ...)."""
    first = spans & ~np.r_[False, spans[:-1]]
    numbered = np.where(first, sentinels[np.clip(np.cumsum(first) - 1, 0, None)], tokens)
    return numbered[~(spans & ~first)]


def span_corrupt(tokens: np.ndarray, rng: np.random.Generator, sentinels: np.ndarray, eos: int,
                 noise_density: float = 0.15, mean_span_length: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """T5 span corruption: ``(inputs, targets)``, each ending with EOS. Sentinel k marks the k-th span in both."""
    noise = random_spans_noise_mask(len(tokens), rng, noise_density, mean_span_length)
    inputs = np.r_[collapse_spans(tokens, noise, sentinels), eos].astype(tokens.dtype)
    targets = np.r_[collapse_spans(tokens, ~noise, sentinels), eos].astype(tokens.dtype)
    return inputs, targets


def uncorrupt(inputs: np.ndarray, targets: np.ndarray, sentinels: np.ndarray, eos: int) -> np.ndarray:
    """The original tokens from T5 ``inputs`` and ``targets`` (each sentinel in the input gets its span back)."""
    index = {int(s): k for k, s in enumerate(sentinels)}
    spans: dict[int, list[int]] = {}
    current = None
    for t in targets[:-1] if len(targets) and targets[-1] == eos else targets:
        if int(t) in index:
            current = index[int(t)]
            spans[current] = []
        elif current is not None:
            spans[current].append(int(t))
    out: list[int] = []
    for t in inputs[:-1] if len(inputs) and inputs[-1] == eos else inputs:
        out.extend(spans.get(index[int(t)], []) if int(t) in index else [int(t)])
    return np.asarray(out, dtype=inputs.dtype)


# ------------------------------------------------------------------------------------- BART denoising

def permute_sentences(tokens: np.ndarray, rng: np.random.Generator, is_end: np.ndarray, ratio: float,
                      is_separator: np.ndarray | None = None) -> np.ndarray:
    """Shuffle ``ratio`` of the sentences (split after tokens where ``is_end``) of ``<s> ... </s>``, each document
    on its own: sentences never cross a separator (``is_separator``, the ``</s>`` between packed documents),
    and separators stay where they are."""
    if is_separator is None:
        is_separator = np.zeros(len(tokens), dtype=bool)
    body, body_end, body_sep = tokens[1:-1], is_end[1:-1], is_separator[1:-1]
    pieces, start = [tokens[:1]], 0
    for sep in [*np.flatnonzero(body_sep), len(body)]:
        document = body[start:sep]
        cuts = np.flatnonzero(body_end[start:sep][:-1]) + 1
        sentences = np.split(document, cuts)
        count = len(sentences)
        moved = int(math.ceil(count * ratio))
        if count >= 2 and moved >= 2:
            order = np.arange(count)
            chosen = rng.permutation(count)[:moved]
            order[chosen] = chosen[rng.permutation(moved)]
            sentences = [sentences[i] for i in order]
        pieces.extend(sentences)
        pieces.append(body[sep: sep + 1])  # the separator (empty after the last document)
        start = sep + 1
    pieces.append(tokens[-1:])
    return np.concatenate(pieces)


def infill(tokens: np.ndarray, rng: np.random.Generator, vocab: Vocabulary, ratio: float, poisson_lambda: float,
           random_ratio: float, is_separator: np.ndarray | None = None) -> np.ndarray:
    """BART text infilling: ceil(ratio x words) words in spans of Poisson(lambda) words, each span replaced by one
    mask (a zero-length span inserts one); ``random_ratio`` of the masks become a random token. The first and
    last tokens (``<s>``, ``</s>``) and the separators between packed documents (``is_separator``) are never
    masked, and a span ends at the next separator."""
    n = len(tokens)
    protected = np.zeros(n, dtype=bool) if is_separator is None else is_separator.copy()
    protected[0] = protected[-1] = True
    words = word_ids(tokens, vocab)
    is_start = np.r_[True, words[1:] != words[:-1]] & ~protected
    starts = np.flatnonzero(is_start)
    budget = int(math.ceil(len(starts) * ratio))
    if budget == 0:
        return tokens
    lengths = rng.poisson(poisson_lambda, size=budget)
    while lengths.sum() < budget:
        lengths = np.r_[lengths, rng.poisson(poisson_lambda, size=budget)]
    total = np.cumsum(lengths)
    last = int(np.searchsorted(total, budget))  # the span that reaches the budget is trimmed to it
    lengths = lengths[: last + 1].copy()
    lengths[last] = budget - (total[last - 1] if last else 0)
    inserts = int((lengths == 0).sum())
    lengths = lengths[lengths > 0][: len(starts)]
    heads = rng.permutation(starts)[: len(lengths)]
    keep = np.ones(n, dtype=bool)
    head_token = tokens.copy()
    next_protected = np.minimum.accumulate(np.where(protected, np.arange(n), n)[::-1])[::-1]
    word_end = np.r_[starts[1:], n - 1]  # end (exclusive) of the word starting at starts[i]
    for head, length in zip(heads, lengths):
        i = int(np.searchsorted(starts, head))
        end = min(word_end[min(i + length - 1, len(starts) - 1)], next_protected[head])
        keep[head + 1: end] = False
    is_random = rng.random(len(heads)) < random_ratio
    head_token[heads] = vocab.mask
    head_token[heads[is_random]] = rng.choice(vocab.random_ids, size=int(is_random.sum()))
    out = head_token[keep]
    if inserts:
        out = insert_masks(out, rng, vocab, inserts, random_ratio)
    return out


def insert_masks(tokens: np.ndarray, rng: np.random.Generator, vocab: Vocabulary, count: int,
                 random_ratio: float) -> np.ndarray:
    """Insert ``count`` masks at random positions between ``<s>`` and ``</s>``."""
    n = len(tokens) + count
    positions = rng.permutation(np.arange(1, n - 1))[:count]
    out = np.empty(n, dtype=tokens.dtype)
    inserted = np.zeros(n, dtype=bool)
    inserted[positions] = True
    values = np.full(count, vocab.mask, dtype=tokens.dtype)
    is_random = rng.random(count) < random_ratio
    values[is_random] = rng.choice(vocab.random_ids, size=int(is_random.sum()))
    out[inserted] = values
    out[~inserted] = tokens
    return out


def bart_noise(tokens: np.ndarray, rng: np.random.Generator, vocab: Vocabulary, options: BARTConfig = BARTConfig()
               ) -> np.ndarray:
    """BART's noising of ``<s> ... </s>``, in fairseq's order: sentence permutation, text infilling, token
    masking, token deletion, document rotation; each off when its ratio is 0. The ``</s>`` separators between
    documents packed into the window are never masked or deleted, and sentences move only within their
    document."""
    source = tokens
    if options.permute_sentences > 0:
        source = permute_sentences(source, rng, vocab.sentence_end[source], options.permute_sentences,
                                   source == vocab.eos)
    if options.infill_ratio > 0:
        source = infill(source, rng, vocab, options.infill_ratio, options.poisson_lambda, options.random_ratio,
                        source == vocab.eos)
    inner = np.flatnonzero(source[1:-1] != vocab.eos) + 1  # never the document separators
    if options.mask_ratio > 0 and len(inner):
        chosen = rng.choice(inner, size=int(math.ceil(len(inner) * options.mask_ratio)), replace=False)
        source = source.copy()
        source[chosen] = vocab.mask
    if options.delete_ratio > 0 and len(inner):
        keep = np.ones(len(source), dtype=bool)
        keep[rng.choice(inner, size=int(math.ceil(len(inner) * options.delete_ratio)), replace=False)] = False
        source = source[keep]
    if options.rotate > 0 and len(source) > 3 and rng.random() < options.rotate:
        offset = int(rng.integers(1, len(source) - 1))
        source = np.concatenate([source[:1], source[offset:-1], source[1:offset], source[-1:]])
    return source


# --------------------------------------------------------------------------------------- causal LM

def causal_lm(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GPT: predict each next token. ``len(tokens) - 1`` inputs."""
    return tokens[:-1], tokens[1:].astype(np.int64)


def prefix_lm(tokens: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """Prefix LM: a uniform random prefix of 1..n-1 input tokens is seen both ways and not predicted; the rest
    is causal LM. ``(inputs, labels, prefix_length)``."""
    inputs, labels = causal_lm(tokens)
    prefix = int(rng.integers(1, len(inputs)))
    labels = labels.copy()
    labels[: prefix - 1] = IGNORE  # position prefix-1 predicts the first token after the prefix
    return inputs, labels, prefix


# ---------------------------------------------------------------------------------------- collators

class Objective:
    """An objective's layout: how long a raw window is, what separates documents in the packed stream,
    which architecture it trains, and how one window becomes one example."""

    name = ""
    family = ""
    needs_other = False  # the example also needs a random other window (next-sentence prediction)
    pairs = False  # examples are sentence pairs with a pair label (NSP, SOP): the model grows a pair classifier

    def __init__(self, vocab: Vocabulary, seq_len: int):
        self.vocab, self.seq_len = vocab, seq_len
        self.pad = vocab.pad if vocab.pad is not None else (vocab.eos if vocab.eos is not None else 0)

    raw_length: int
    separator: tuple[int, ...]
    decoder_length: int = 0

    @classmethod
    def vocabulary(cls, vocab: Vocabulary, seq_len: int, *options) -> Vocabulary:
        """The vocabulary the objective trains with, from the tokenizer's (the same unless it needs more ids)."""
        return vocab

    def example(self, tokens: np.ndarray, rng: np.random.Generator, other: np.ndarray | None = None
                ) -> dict[str, Any]:
        raise NotImplementedError

    def collate(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        """Stack examples into tensors, padding sequences (inputs with pad, labels with -100, masks with 0)."""
        pad_value = {"labels": IGNORE, "backward_labels": IGNORE, "attention_mask": 0, "segment_ids": 0}
        batch = {}
        for key in examples[0]:
            values = [e[key] for e in examples]
            if np.isscalar(values[0]):
                batch[key] = torch.tensor(values, dtype=torch.long)
                continue
            width = max(len(v) for v in values)
            out = np.full((len(values), width), pad_value.get(key, self.pad), dtype=np.int64)
            for i, v in enumerate(values):
                out[i, : len(v)] = v
            batch[key] = torch.from_numpy(out)
        return batch

    def tokens_per_example(self) -> int:
        """Positions processed per example (encoder + decoder), the unit of tokens/s."""
        return self.seq_len + self.decoder_length


class MaskedLM(Objective):
    name, family = "mlm", "bert"

    def __init__(self, vocab: Vocabulary, seq_len: int, options: MLMConfig = MLMConfig()):
        super().__init__(vocab, seq_len)
        vocab.require("mask", "bos", "eos", purpose="masked LM", recipe=self.family)
        self.options = options
        self.needs_other = options.nsp
        self.pairs = options.nsp or options.sop
        self.raw_length = seq_len - (3 if self.pairs else 2)
        self.separator = (vocab.eos,)

    def example(self, tokens, rng, other=None):
        if self.options.nsp:
            ids, segments, label = next_sentence_pair(tokens, other, rng, self.vocab)
        elif self.options.sop:
            ids, segments, label = sentence_order_pair(tokens, rng, self.vocab)
        else:
            ids = np.r_[self.vocab.bos, tokens, self.vocab.eos].astype(tokens.dtype)
        inputs, labels = mask_tokens(ids, rng, self.vocab, self.options)
        out = {"input_ids": inputs, "labels": labels}
        if self.pairs:  # one pair classifier: NSP's "random next" or SOP's "swapped" is label 1
            out.update(segment_ids=segments, next_sentence_labels=label)
        if self.options.sop:  # a pair from one document is shorter than the window: pad to one batch shape
            pad = self.seq_len - len(inputs)
            out = {"input_ids": np.r_[inputs, np.full(pad, self.pad, dtype=inputs.dtype)],
                   "labels": np.r_[labels, np.full(pad, IGNORE, dtype=labels.dtype)],
                   "attention_mask": np.r_[np.ones(len(inputs), dtype=np.int64), np.zeros(pad, dtype=np.int64)],
                   "segment_ids": np.r_[segments, np.zeros(pad, dtype=np.int64)], "next_sentence_labels": label}
        return out


class ReplacedTokens(MaskedLM):
    """ELECTRA: masked LM's inputs and labels; the model's generator fills the masks and its discriminator finds
    them (trainers/electra.py). No sentence-pair task, as in the paper."""

    name, family = "rtd", "bert"

    def __init__(self, vocab: Vocabulary, seq_len: int, options: MLMConfig = MLMConfig()):
        if options.nsp or options.sop:
            raise UserError("objective rtd (ELECTRA) has no sentence-pair task; turn train.mlm.nsp and "
                            "train.mlm.sop off")
        super().__init__(vocab, seq_len, options)


class SpanCorruption(Objective):
    name, family = "span", "t5"

    def __init__(self, vocab: Vocabulary, seq_len: int, options: SpanConfig = SpanConfig()):
        super().__init__(vocab, seq_len)
        vocab.require("eos", purpose="T5 span corruption", recipe=self.family)
        self.options = options
        self.raw_length, self.decoder_length = span_corruption_lengths(seq_len, options.noise_density,
                                                                       options.mean_span_length)
        noise = int(round(self.raw_length * options.noise_density))
        self.num_spans = max(int(round(noise / options.mean_span_length)), 1)
        if len(vocab.sentinels) < self.num_spans:
            raise UserError(f"T5 span corruption needs {self.num_spans} sentinels, the vocabulary has "
                            f"{len(vocab.sentinels)}; build it with Vocabulary.with_sentinels({self.num_spans})")
        self.sentinels = np.asarray(vocab.sentinels)
        self.separator = (vocab.eos,)

    @classmethod
    def vocabulary(cls, vocab: Vocabulary, seq_len: int, options: SpanConfig = SpanConfig()) -> Vocabulary:
        """Span corruption adds the sentinels the tokenizer lacks."""
        raw, _ = span_corruption_lengths(seq_len, options.noise_density, options.mean_span_length)
        spans = max(int(round(int(round(raw * options.noise_density)) / options.mean_span_length)), 1)
        return vocab.with_sentinels(spans)

    def example(self, tokens, rng, other=None):
        inputs, targets = span_corrupt(tokens, rng, self.sentinels, self.vocab.eos, self.options.noise_density,
                                       self.options.mean_span_length)
        # T5 starts the decoder with the pad token.
        return {"input_ids": inputs, "decoder_input_ids": np.r_[self.pad, targets[:-1]], "labels": targets}


class Denoising(Objective):
    name, family = "bart", "bart"

    def __init__(self, vocab: Vocabulary, seq_len: int, options: BARTConfig = BARTConfig()):
        super().__init__(vocab, seq_len)
        needs = ["bos", "eos"] + (["mask"] if options.infill_ratio or options.mask_ratio else [])
        vocab.require(*needs, purpose="BART denoising", recipe=self.family)
        self.options = options
        self.raw_length, self.decoder_length = seq_len - 2, seq_len
        self.separator = (vocab.eos,)

    def example(self, tokens, rng, other=None):
        target = np.r_[self.vocab.bos, tokens, self.vocab.eos].astype(tokens.dtype)
        source = bart_noise(target, rng, self.vocab, self.options)
        if len(source) > self.seq_len:  # zero-length spans insert masks; keep the end token
            source = np.r_[source[: self.seq_len - 1], self.vocab.eos].astype(tokens.dtype)
        # Padded to seq_len here, not to the batch's longest: every batch has one shape (no recompiles).
        mask = np.r_[np.ones(len(source), dtype=np.int64), np.zeros(self.seq_len - len(source), dtype=np.int64)]
        source = np.r_[source, np.full(self.seq_len - len(source), self.pad, dtype=tokens.dtype)]
        # BART starts the decoder with the end token.
        return {"input_ids": source, "attention_mask": mask,
                "decoder_input_ids": np.r_[self.vocab.eos, target[:-1]], "labels": target}


class CausalLM(Objective):
    name, family = "clm", "gpt2"

    def __init__(self, vocab: Vocabulary, seq_len: int):
        super().__init__(vocab, seq_len)
        vocab.require("eos", purpose="causal LM", recipe=self.family)
        self.raw_length, self.separator = seq_len + 1, (vocab.eos,)

    def example(self, tokens, rng, other=None):
        inputs, labels = causal_lm(tokens)
        return {"input_ids": inputs, "labels": labels}


class PrefixLM(CausalLM):
    name, family = "prefixlm", "gpt2"

    def example(self, tokens, rng, other=None):
        inputs, labels, prefix = prefix_lm(tokens, rng)
        return {"input_ids": inputs, "labels": labels, "prefix_lengths": prefix}


class BidirectionalLM(Objective):
    """ELMo: every input word predicts the next word (forward LM) and the previous one (backward LM)."""

    name, family = "bilm", "elmo"

    def __init__(self, vocab: Vocabulary, seq_len: int):
        super().__init__(vocab, seq_len)
        vocab.require("eos", purpose="the bidirectional LM", recipe=self.family)
        self.raw_length, self.separator = seq_len + 2, (vocab.eos,)

    def example(self, tokens, rng, other=None):
        tokens = tokens.astype(np.int64)
        return {"input_ids": tokens[1:-1], "labels": tokens[2:], "backward_labels": tokens[:-2]}
