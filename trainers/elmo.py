"""ELMo (Peters et al., 2018): a bidirectional LSTM language model over character-CNN word representations.
Architecture only; the ``bilm`` objective (objectives.py) supplies next-word and previous-word labels.

    cfg = elmo_config("debug", vocab_size=v, spellings=spell(tokens, special))
    model = BiLM(cfg)
    logits, loss = model(input_ids, labels=next_ids, backward_labels=previous_ids)
    layers = model.layers(input_ids)        # (n_layers + 1, batch, length, 2 x d_model), ELMo's representations

Token layer: each word's characters (UTF-8 bytes with begin/end-of-word marks, from the vocabulary entry; the
table is a buffer of the model) -> character embeddings -> convolutions of several widths, max-pooled -> highway
layers -> a projection to ``d_model``. Then a forward and a backward stack of LSTMs (``lstm_dim`` cells
projected to ``d_model``) with a residual connection around every layer but the first. One softmax, shared by
both directions (tied). Loss: the mean of the forward and backward LM cross-entropies.
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn as nn
import torch.nn.functional as F

# Character ids: 0 pads, bytes are 1..256, then ELMo's marks.
BEGIN_WORD, END_WORD, BEGIN_SENTENCE, END_SENTENCE = 257, 258, 259, 260
CHARACTERS = 261


@dataclasses.dataclass
class ElmoConfig:
    arch: str = "bilm"
    vocab_size: int = 1000
    max_len: int = 512  # not a limit of the LSTM; kept for the tokenizer's model_max_length
    max_chars: int = 50  # characters per word, marks included (ELMo's 50)
    char_dim: int = 16
    filters: tuple = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))  # (width, count)
    highway_layers: int = 2
    d_model: int = 512  # token representation and LSTM output (projection) width
    lstm_dim: int = 4096  # LSTM cell width
    n_layers: int = 2  # per direction
    dropout: float = 0.1
    init_std: float = 0.02


# ELMo's published sizes: small is allennlp's elmo_2x1024_128_2048cnn_1xhighway; debug is for tests.
SIZES = {
    "debug": dict(char_dim=8, filters=((1, 8), (2, 8), (3, 16)), highway_layers=1, d_model=32, lstm_dim=64,
                  n_layers=2, max_chars=20),
    "small": dict(char_dim=16, filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)),
                  highway_layers=1, d_model=128, lstm_dim=1024, n_layers=2, max_chars=50),
}


def elmo_config(size: str, **overrides) -> ElmoConfig:
    if size not in SIZES:
        raise ValueError(f"the elmo family has sizes {', '.join(SIZES)}, not {size!r}")
    return ElmoConfig(**{**SIZES[size], **{k: v for k, v in overrides.items() if v is not None}})


def spell(tokens: list[str], bos: str | None, eos: str | None, max_chars: int) -> torch.Tensor:
    """The character table: row i spells vocabulary entry i as ELMo does (begin-of-word, UTF-8 bytes + 1, end-of-word,
    padded with 0; words too long are cut before the end mark). The sentence tokens get ELMo's sentence marks."""
    table = torch.zeros(len(tokens), max_chars, dtype=torch.long)
    for i, token in enumerate(tokens):
        if token == bos or token == eos:
            chars = [BEGIN_SENTENCE if token == bos else END_SENTENCE]
        else:
            chars = [b + 1 for b in token.encode("utf-8")][: max_chars - 2]
        row = [BEGIN_WORD, *chars, END_WORD]
        table[i, : len(row)] = torch.tensor(row)
    return table


class Highway(nn.Module):
    """y = g * x + (1 - g) * relu(W x), g = sigmoid(V x); the gate starts open towards x (bias 1)."""

    def __init__(self, width: int):
        super().__init__()
        self.proj = nn.Linear(width, 2 * width)
        nn.init.constant_(self.proj.bias[width:], 1.0)

    def forward(self, x):
        value, gate = self.proj(x).chunk(2, dim=-1)
        gate = torch.sigmoid(gate)
        return gate * x + (1 - gate) * F.relu(value)


class CharacterEncoder(nn.Module):
    """Word ids -> their characters -> convolutions, max-pooled -> highway -> projection to d_model."""

    def __init__(self, cfg: ElmoConfig):
        super().__init__()
        self.register_buffer("spellings", torch.zeros(cfg.vocab_size, cfg.max_chars, dtype=torch.long))
        self.chars = nn.Embedding(CHARACTERS, cfg.char_dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(cfg.char_dim, count, width) for width, count in cfg.filters)
        total = sum(count for _, count in cfg.filters)
        self.highways = nn.ModuleList(Highway(total) for _ in range(cfg.highway_layers))
        self.project = nn.Linear(total, cfg.d_model)

    def forward(self, input_ids):
        B, T = input_ids.shape
        chars = self.chars(self.spellings[input_ids]).view(B * T, -1, self.chars.embedding_dim).transpose(1, 2)
        x = torch.cat([F.relu(conv(chars)).amax(dim=-1) for conv in self.convs], dim=-1)
        for highway in self.highways:
            x = highway(x)
        return self.project(x).view(B, T, -1)


class LSTMStack(nn.Module):
    """One direction: LSTMs with projected cells, dropout between, a residual connection from layer 2 on."""

    def __init__(self, cfg: ElmoConfig):
        super().__init__()
        self.layers = nn.ModuleList(nn.LSTM(cfg.d_model, cfg.lstm_dim, proj_size=cfg.d_model, batch_first=True)
                                    for _ in range(cfg.n_layers))
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x) -> list[torch.Tensor]:
        outputs = []
        for i, lstm in enumerate(self.layers):
            h = self.drop(lstm(x)[0])
            x = h + x if i > 0 else h
            outputs.append(x)
        return outputs


class BiLM(nn.Module):
    def __init__(self, cfg: ElmoConfig):
        super().__init__()
        self.cfg = cfg
        self.tokens = CharacterEncoder(cfg)
        self.drop = nn.Dropout(cfg.dropout)
        self.forward_lm, self.backward_lm = LSTMStack(cfg), LSTMStack(cfg)
        self.softmax = nn.Linear(cfg.d_model, cfg.vocab_size)  # tied: both directions predict through it
        nn.init.normal_(self.softmax.weight, std=cfg.init_std)
        nn.init.zeros_(self.softmax.bias)

    def num_params(self, trainable_only: bool = True) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    def states(self, input_ids, attention_mask=None) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """Token layer, forward layers, backward layers (each batch, length, d_model). ``attention_mask`` (1 on
        tokens, 0 on right padding): the backward direction starts at each sequence's own last token, so no
        token's states depend on the padding (the forward direction reaches the padding only after the tokens)."""
        x = self.drop(self.tokens(input_ids))
        forward = self.forward_lm(x)
        if attention_mask is None:
            backward = [h.flip(1) for h in self.backward_lm(x.flip(1))]
        else:
            order = _reversed_within(attention_mask)
            backward = [_gather(h, order) for h in self.backward_lm(_gather(x, order))]
        return x, forward, backward

    def layers(self, input_ids, attention_mask=None) -> torch.Tensor:
        """ELMo's representations: (n_layers + 1, batch, length, 2 x d_model); layer 0 is the token layer twice."""
        x, forward, backward = self.states(input_ids, attention_mask)
        return torch.stack([torch.cat([x, x], dim=-1)] + [torch.cat(pair, dim=-1) for pair in zip(forward, backward)])

    def forward(self, input_ids, labels=None, *, backward_labels=None):
        """Forward-LM logits (batch, length, vocab) and the mean of the two directions' cross-entropies."""
        _, forward, backward = self.states(input_ids)
        logits = self.softmax(forward[-1])
        if labels is None:
            return logits, None
        loss = _mean_cross_entropy(logits, labels)
        if backward_labels is not None:
            loss = (loss + _mean_cross_entropy(self.softmax(backward[-1]), backward_labels)) / 2
        return logits, loss


def _reversed_within(attention_mask) -> torch.Tensor:
    """Per row, the positions that reverse its first ``length`` entries and leave the padding after them in place
    (its own inverse)."""
    lengths = attention_mask.sum(dim=1, keepdim=True)
    positions = torch.arange(attention_mask.size(1), device=attention_mask.device).expand_as(attention_mask)
    return torch.where(positions < lengths, lengths - 1 - positions, positions)


def _gather(x, order):
    return x.gather(1, order.unsqueeze(-1).expand_as(x))


def _mean_cross_entropy(logits, labels):
    total = F.cross_entropy(logits.flatten(0, -2).float(), labels.flatten(), ignore_index=-100, reduction="sum")
    return total / (labels != -100).sum().clamp(min=1)


class ScalarMix(nn.Module):
    """ELMo's task representation ``gamma * sum_j softmax(s)_j h_j`` over the layers; starts as the plain mean."""

    def __init__(self, n_layers: int):
        super().__init__()
        self.scalars = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        weights = torch.softmax(self.scalars, dim=0).view(-1, *([1] * (layers.dim() - 1)))
        return self.gamma * (weights * layers).sum(dim=0)
