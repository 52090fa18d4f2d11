"""One compact Transformer, assembled as an encoder (BERT), a decoder (GPT) or an encoder-decoder (T5/BART).

Architecture only: no data, no optimiser, no parallelism (those live in objectives.py, train.py and
parallel.py). Reads top to bottom: config and named sizes, norms and positions, attention, MLP, block,
stack, model. ``Transformer.forward`` returns ``(logits, loss)``.

    config = model_config("decoder", "debug", vocab_size=1000)
    model = Transformer(config)
    logits, loss = model(input_ids, labels=labels)
"""
from __future__ import annotations

import dataclasses
import math
from typing import Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

Arch = Literal["encoder", "decoder", "encoder_decoder"]
Position = Literal["learned", "sinusoidal", "rope", "relative"]


@dataclasses.dataclass
class ModelConfig:
    arch: Arch = "decoder"
    vocab_size: int = 32_000
    max_len: int = 512  # longest sequence for learned/sinusoidal/rope positions
    d_model: int = 512
    n_layers: int = 6  # per stack: an encoder-decoder has n_layers + n_decoder_layers
    n_decoder_layers: int | None = None  # encoder-decoder only; default n_layers
    n_heads: int = 8
    d_ff: int = 2048  # hidden width of the MLP (of each branch for swiglu)
    # ELECTRA's factorised embeddings: token, position and segment embeddings (and their norm) this wide,
    # projected to d_model; the head transform projects back to it. None: d_model.
    embedding_size: int | None = None
    position: Position = "learned"
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    norm_position: Literal["pre", "post"] = "pre"
    norm_eps: float = 1e-5
    # gelu is exact (BERT, BART); gelu_tanh is the tanh approximation GPT-2 was trained with
    # (transformers' "gelu_new"); swiglu is a gated SiLU.
    activation: Literal["gelu", "gelu_tanh", "relu", "swiglu"] = "gelu"
    tie_embeddings: bool = True
    bias: bool = True
    output_bias: bool = False  # a bias on the vocabulary logits (BERT's MLM head)
    dropout: float = 0.1
    head_transform: bool = False  # BERT's dense + activation + norm before the output projection
    num_segments: int = 0  # > 0 adds segment (token type) embeddings to the encoder, for next-sentence pairs
    sentence_head: bool = False  # a pooled two-way classifier on the first token (next-sentence prediction)
    relative_buckets: int = 32
    relative_max_distance: int = 128
    attention_scale: float | None = None  # None: 1/sqrt(head_dim); T5 uses 1.0 (the scale lives in its init)
    output_scale: bool = False  # T5: tied output logits from the final hidden state x d_model**-0.5
    init: Literal["normal", "t5"] = "normal"  # normal(0, init_std) as GPT-2/BERT, or T5's fan-in scaled init
    init_std: float = 0.02

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_len", "d_model", "n_layers", "n_heads", "d_ff", "n_decoder_layers",
                     "embedding_size", "relative_buckets", "relative_max_distance"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.num_segments, int) or self.num_segments < 0:
            raise ValueError(f"num_segments must be an integer >= 0, got {self.num_segments!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.position == "rope" and (self.d_model // self.n_heads) % 2:
            raise ValueError("rope needs an even head dimension")
        if self.sentence_head and self.arch != "encoder":
            raise ValueError("sentence_head (next-sentence prediction) needs arch 'encoder'")
        if self.embedding_size not in (None, self.d_model) and not (
                self.arch == "encoder" and self.position == "learned" and self.head_transform):
            raise ValueError("embedding_size other than d_model needs an encoder with learned positions and a head "
                             "transform (ELECTRA's generator)")

    @property
    def embedding_width(self) -> int:
        return self.embedding_size or self.d_model


# Named sizes. `base` is BERT-base / GPT-2 124M / T5-base (per stack); `small` is T5-small's width.
SIZES: dict[str, dict[str, int]] = {
    "debug": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256),
    "small": dict(d_model=512, n_layers=6, n_heads=8, d_ff=2048),
    "base": dict(d_model=768, n_layers=12, n_heads=12, d_ff=3072),
}

# The published recipe of each family; every field can be overridden.
FAMILIES: dict[str, dict] = {
    "bert": dict(arch="encoder", position="learned", norm="layernorm", norm_position="post", norm_eps=1e-12,
                 activation="gelu", tie_embeddings=True, bias=True, output_bias=True, head_transform=True),
    "gpt2": dict(arch="decoder", position="learned", norm="layernorm", norm_position="pre", norm_eps=1e-5,
                 activation="gelu_tanh", tie_embeddings=True, bias=True),
    "t5": dict(arch="encoder_decoder", position="relative", norm="rmsnorm", norm_position="pre", norm_eps=1e-6,
               activation="relu", tie_embeddings=True, bias=False, attention_scale=1.0, output_scale=True,
               init="t5"),
    "bart": dict(arch="encoder_decoder", position="learned", norm="layernorm", norm_position="post",
                 norm_eps=1e-5, activation="gelu", tie_embeddings=True, bias=True),
}


def model_config(family: str, size: str, **overrides) -> ModelConfig:
    """The ``family`` recipe ('bert', 'gpt2', 't5', 'bart') at a named ``size``, with ``overrides`` on top."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; choose one of {', '.join(SIZES)}")
    values = {**FAMILIES[family], **SIZES[size]}
    values.update({k: v for k, v in overrides.items() if v is not None})
    return ModelConfig(**values)


# ---------------------------------------------------------------------------------------------- pieces

def make_norm(cfg: ModelConfig, width: int | None = None) -> nn.Module:
    if cfg.norm == "rmsnorm":
        return nn.RMSNorm(width or cfg.d_model, eps=cfg.norm_eps)
    return nn.LayerNorm(width or cfg.d_model, eps=cfg.norm_eps, bias=cfg.bias)


def sinusoidal_table(length: int, dim: int) -> torch.Tensor:
    """The fixed sin/cos position table of "Attention is all you need"."""
    position = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10_000.0) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq[: dim // 2])
    return table


def rope_table(length: int, head_dim: int, base: float = 10_000.0) -> torch.Tensor:
    """cos and sin of the rotary angles, shape (2, length, head_dim // 2)."""
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(length, dtype=torch.float32), inv_freq)
    return torch.stack([angles.cos(), angles.sin()])


def apply_rope(x: torch.Tensor, rope: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (first half, second half) of each head of ``x`` (B, H, T, D) by the angles in ``rope``."""
    cos, sin = rope[0, : x.size(-2)].to(x.dtype), rope[1, : x.size(-2)].to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class RelativePositionBias(nn.Module):
    """T5's bucketed relative position bias, one scalar per head, shared by all layers of a stack."""

    def __init__(self, cfg: ModelConfig, bidirectional: bool):
        super().__init__()
        self.bidirectional = bidirectional
        self.buckets, self.max_distance = cfg.relative_buckets, cfg.relative_max_distance
        self.bias = nn.Embedding(self.buckets, cfg.n_heads)

    def bucket(self, relative: torch.Tensor) -> torch.Tensor:
        buckets, result = self.buckets, torch.zeros_like(relative)
        if self.bidirectional:
            buckets //= 2
            result += (relative > 0).long() * buckets
            relative = relative.abs()
        else:
            relative = -relative.clamp(max=0)
        exact = buckets // 2
        large = exact + (torch.log(relative.float().clamp(min=1) / exact) / math.log(self.max_distance / exact)
                         * (buckets - exact)).long()
        large = large.clamp(max=buckets - 1)
        return result + torch.where(relative < exact, relative, large)

    def forward(self, q_len: int, k_len: int) -> torch.Tensor:
        device = self.bias.weight.device
        relative = torch.arange(k_len, device=device)[None, :] - torch.arange(q_len, device=device)[:, None]
        return self.bias(self.bucket(relative)).permute(2, 0, 1)[None]  # (1, H, q_len, k_len)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, cross: bool = False):
        super().__init__()
        self.n_heads, self.dropout, self.scale = cfg.n_heads, cfg.dropout, cfg.attention_scale
        if cross:
            self.q = nn.Linear(cfg.d_model, cfg.d_model, bias=cfg.bias)
            self.kv = nn.Linear(cfg.d_model, 2 * cfg.d_model, bias=cfg.bias)
        else:
            self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=cfg.bias)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=cfg.bias)
        self.out.residual = True

    def forward(self, x, memory=None, mask=None, is_causal=False, rope=None):
        B, T, C = x.shape
        if memory is None:
            q, k, v = self.qkv(x).split(C, dim=2)
        else:
            q, (k, v) = self.q(x), self.kv(memory).split(C, dim=2)
        q, k, v = (t.view(B, t.size(1), self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))
        if rope is not None:
            q, k = apply_rope(q, rope), apply_rope(k, rope)
        if mask is not None and mask.dtype != torch.bool:
            mask = mask.to(q.dtype)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=self.scale,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.gated = cfg.activation == "swiglu"
        self.up = nn.Linear(cfg.d_model, (2 if self.gated else 1) * cfg.d_ff, bias=cfg.bias)
        self.act = {"gelu": nn.GELU(), "gelu_tanh": nn.GELU(approximate="tanh"), "relu": nn.ReLU(),
                    "swiglu": nn.SiLU()}[cfg.activation]
        self.down = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)
        self.down.residual = True

    def forward(self, x):
        if self.gated:
            gate, value = self.up(x).chunk(2, dim=-1)
            return self.down(self.act(gate) * value)
        return self.down(self.act(self.up(x)))


class Block(nn.Module):
    """Self-attention, optional cross-attention, MLP; each a residual branch with pre- or post-norm."""

    def __init__(self, cfg: ModelConfig, cross: bool):
        super().__init__()
        self.pre = cfg.norm_position == "pre"
        self.drop = nn.Dropout(cfg.dropout)
        self.attn, self.attn_norm = Attention(cfg), make_norm(cfg)
        self.cross = Attention(cfg, cross=True) if cross else None
        self.cross_norm = make_norm(cfg) if cross else None
        self.mlp, self.mlp_norm = MLP(cfg), make_norm(cfg)

    def residual(self, x, norm, branch):
        if self.pre:
            return x + self.drop(branch(norm(x)))
        return norm(x + self.drop(branch(x)))

    def forward(self, x, mask=None, is_causal=False, rope=None, memory=None, memory_mask=None):
        x = self.residual(x, self.attn_norm, lambda h: self.attn(h, mask=mask, is_causal=is_causal, rope=rope))
        if self.cross is not None:
            x = self.residual(x, self.cross_norm, lambda h: self.cross(h, memory=memory, mask=memory_mask))
        return self.residual(x, self.mlp_norm, self.mlp)


class Stack(nn.Module):
    """Positions + blocks + final norm: the encoder (bidirectional) or the decoder (causal) of a model."""

    def __init__(self, cfg: ModelConfig, n_layers: int, causal: bool, cross: bool):
        super().__init__()
        self.cfg, self.causal = cfg, causal
        width = cfg.embedding_width
        if cfg.position == "learned":
            self.pos_emb = nn.Embedding(cfg.max_len, width)
        elif cfg.position == "sinusoidal":
            self.register_buffer("pos_table", sinusoidal_table(cfg.max_len, cfg.d_model), persistent=False)
        elif cfg.position == "rope":
            self.register_buffer("rope", rope_table(cfg.max_len, cfg.d_model // cfg.n_heads), persistent=False)
        else:
            self.relative = RelativePositionBias(cfg, bidirectional=not causal)
        self.seg_emb = nn.Embedding(cfg.num_segments, width) if cfg.num_segments and not causal else None
        # Post-norm models (BERT, BART) normalise the embeddings; pre-norm models normalise the output.
        self.emb_norm = make_norm(cfg, width) if cfg.norm_position == "post" else None
        self.emb_project = nn.Linear(width, cfg.d_model) if width != cfg.d_model else None
        self.final_norm = make_norm(cfg) if cfg.norm_position == "pre" else None
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg, cross) for _ in range(n_layers))

    def forward(self, x, attention_mask=None, prefix_lengths=None, segment_ids=None, memory=None,
                memory_mask=None):
        B, T, _ = x.shape
        if T > self.cfg.max_len and self.cfg.position != "relative":
            raise ValueError(f"sequence length {T} exceeds max_len {self.cfg.max_len}")
        if self.cfg.position == "learned":
            x = x + self.pos_emb(torch.arange(T, device=x.device))
        elif self.cfg.position == "sinusoidal":
            x = x + self.pos_table[:T].to(x.dtype)
        if self.seg_emb is not None:
            x = x + self.seg_emb(segment_ids if segment_ids is not None else torch.zeros_like(x[..., 0], dtype=torch.long))
        if self.emb_norm is not None:
            x = self.emb_norm(x)
        x = self.drop(x)
        if self.emb_project is not None:
            x = self.emb_project(x)
        mask, is_causal = self.self_attention_mask(B, T, x.device, attention_mask, prefix_lengths)
        rope = self.rope if self.cfg.position == "rope" else None
        for block in self.blocks:
            x = block(x, mask=mask, is_causal=is_causal, rope=rope, memory=memory, memory_mask=memory_mask)
        return self.final_norm(x) if self.final_norm is not None else x

    def self_attention_mask(self, B, T, device, attention_mask, prefix_lengths):
        """A boolean (attend-to) or additive float mask for SDPA, or ``is_causal`` when that is all it takes."""
        bias = self.relative(T, T) if self.cfg.position == "relative" else None
        allowed = None
        if self.causal:
            allowed = torch.ones(T, T, dtype=torch.bool, device=device).tril()[None, None]
            if prefix_lengths is not None:  # prefix LM: the prefix sees itself both ways
                prefix = torch.arange(T, device=device)[None, :] < prefix_lengths.to(device)[:, None]
                allowed = allowed | prefix[:, None, None, :]
            elif bias is None and attention_mask is None:
                return None, True
        if attention_mask is not None:
            keys = attention_mask.to(device=device, dtype=torch.bool)[:, None, None, :]
            allowed = keys if allowed is None else allowed & keys
        if bias is None:
            return allowed, False
        if allowed is None:
            return bias, False
        return bias.masked_fill(~allowed, torch.finfo(bias.dtype).min), False


# ---------------------------------------------------------------------------------------------- model

class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.embedding_width)
        self.encoder = Stack(cfg, cfg.n_layers, causal=False, cross=False) if cfg.arch != "decoder" else None
        if cfg.arch == "encoder":
            self.decoder = None
        else:
            cross = cfg.arch == "encoder_decoder"
            layers = (cfg.n_decoder_layers or cfg.n_layers) if cross else cfg.n_layers
            self.decoder = Stack(cfg, layers, causal=True, cross=cross)
        if cfg.head_transform:
            self.head_transform = nn.Sequential(nn.Linear(cfg.d_model, cfg.embedding_width, bias=cfg.bias),
                                                nn.GELU(), make_norm(cfg, cfg.embedding_width))
        else:
            self.head_transform = None
        self.lm_head = None if cfg.tie_embeddings else nn.Linear(cfg.embedding_width, cfg.vocab_size, bias=False)
        self.lm_bias = nn.Parameter(torch.zeros(cfg.vocab_size)) if cfg.output_bias else None
        if cfg.sentence_head:
            self.pooler = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_model), nn.Tanh())
            self.sentence_classifier = nn.Linear(cfg.d_model, 2)
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        if self.cfg.init == "t5":
            return self._init_t5(module)
        std = self.cfg.init_std
        if isinstance(module, nn.Linear):
            # GPT-2: residual output projections scaled down by the number of residual additions.
            scale = (2 * self.cfg.n_layers) ** -0.5 if getattr(module, "residual", False) else 1.0
            nn.init.normal_(module.weight, mean=0.0, std=std * scale)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=std)

    def _init_t5(self, module: nn.Module) -> None:
        """T5's initialisation (Mesh TensorFlow): unit-variance embeddings, fan-in scaled projections, the
        attention scale folded into the query."""
        d, hd = self.cfg.d_model, self.cfg.d_model // self.cfg.n_heads
        normal = lambda w, std: nn.init.normal_(w, mean=0.0, std=std)  # noqa: E731
        if isinstance(module, Attention):
            if hasattr(module, "qkv"):
                normal(module.qkv.weight[:d], (d * hd) ** -0.5)
                normal(module.qkv.weight[d:], d ** -0.5)
            else:
                normal(module.q.weight, (d * hd) ** -0.5)
                normal(module.kv.weight, d ** -0.5)
            normal(module.out.weight, d ** -0.5)
        elif isinstance(module, MLP):
            normal(module.up.weight, d ** -0.5)
            normal(module.down.weight, self.cfg.d_ff ** -0.5)
        elif isinstance(module, RelativePositionBias):
            normal(module.bias.weight, d ** -0.5)
        elif isinstance(module, nn.Embedding) or module is self.lm_head:
            normal(module.weight, 1.0)
        elif isinstance(module, nn.Linear):  # head transform, pooler: not part of T5
            normal(module.weight, d ** -0.5)
        if isinstance(module, nn.Linear) and module.bias is not None:  # children come first in apply()
            nn.init.zeros_(module.bias)

    def num_params(self, trainable_only: bool = True) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    def output_logits(self, h: torch.Tensor) -> torch.Tensor:
        if self.head_transform is not None:
            h = self.head_transform(h)
        if self.cfg.output_scale and self.lm_head is None:
            h = h * self.cfg.d_model ** -0.5
        weight = self.tok_emb.weight if self.lm_head is None else self.lm_head.weight
        return F.linear(h, weight, self.lm_bias)

    def hidden(self, input_ids, *, attention_mask=None, segment_ids=None) -> torch.Tensor:
        """An encoder's last hidden states (batch, length, d_model)."""
        return self.encoder(self.tok_emb(input_ids), attention_mask=attention_mask, segment_ids=segment_ids)

    def forward(self, input_ids, labels=None, *, attention_mask=None, decoder_input_ids=None,
                decoder_attention_mask=None, prefix_lengths=None, segment_ids=None, next_sentence_labels=None):
        """Logits (batch, length, vocab) and the mean cross-entropy over ``labels`` that are not -100 (``loss`` is
        None without labels).

        Every position gets an output projection and the loss ignores -100 labels: no shape depends on the
        data, so ``torch.compile(fullgraph=True)`` traces the whole step in one graph without a host sync.
        An encoder-decoder takes the source as ``input_ids`` and the shifted target as ``decoder_input_ids``;
        ``decoder_attention_mask`` is accepted for symmetry (causal attention never sees later padding).
        """
        del decoder_attention_mask
        cfg = self.cfg
        if cfg.arch == "encoder":
            h = self.hidden(input_ids, attention_mask=attention_mask, segment_ids=segment_ids)
        elif cfg.arch == "decoder":
            h = self.decoder(self.tok_emb(input_ids), attention_mask=attention_mask, prefix_lengths=prefix_lengths)
        else:
            if decoder_input_ids is None:
                raise ValueError("an encoder-decoder needs decoder_input_ids (the shifted target)")
            memory = self.encoder(self.tok_emb(input_ids), attention_mask=attention_mask)
            memory_mask = None if attention_mask is None else attention_mask.bool()[:, None, None, :]
            h = self.decoder(self.tok_emb(decoder_input_ids), memory=memory, memory_mask=memory_mask)
        logits = self.output_logits(h)
        if labels is None:
            return logits, None
        # Sum over the predicted positions / their count (at least 1: a batch with nothing to predict has loss 0).
        total = F.cross_entropy(logits.flatten(0, -2).float(), labels.flatten(), ignore_index=-100, reduction="sum")
        loss = total / (labels != -100).sum().clamp(min=1)
        if next_sentence_labels is not None and cfg.sentence_head:
            sentence_logits = self.sentence_classifier(self.pooler(h[:, 0]))
            loss = loss + F.cross_entropy(sentence_logits.float(), next_sentence_labels)
        return logits, loss
