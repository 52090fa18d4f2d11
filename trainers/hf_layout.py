"""Which Hugging Face transformers class computes exactly what a corpusforge model computes, and the mapping of
configs and weights between the two, both ways.

    layout = match_layout(model.cfg)                  # 'gpt2', 'llama', 'bert', 't5' or 'bart'; refuses otherwise
    hf = to_transformers(model, special_tokens)       # a transformers model with our weights
    model = from_transformers(hf)                     # and back (train --init-from)
    discriminator, generator = to_electra(electra_model, special_tokens)  # ElectraForPreTraining, ...ForMaskedLM

A layout is chosen only when every option of the model has an exact equivalent in it; an option without one
raises a ``UserError`` that names it. Weights are renamed, split (our fused q/k/v and SwiGLU projections) or
transposed (GPT-2's Conv1D), never approximated.
"""
from __future__ import annotations

import dataclasses
import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.model import ModelConfig, Transformer

# Our activation name -> the name transformers' ACT2FN gives the same function.
ACTIVATIONS = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu"}

# What each layout requires of a ModelConfig: field -> the values it can express exactly.
_COMMON = {"head_transform": {False}, "output_scale": {False}, "attention_scale": {None}, "num_segments": {0},
           "sentence_head": {False}, "embedding_size": {None}}
REQUIREMENTS: dict[str, dict[str, set]] = {
    "gpt2": {**_COMMON, "arch": {"decoder"}, "position": {"learned"}, "norm": {"layernorm"},
             "norm_position": {"pre"}, "activation": set(ACTIVATIONS), "bias": {True}, "output_bias": {False}},
    "llama": {**_COMMON, "arch": {"decoder"}, "position": {"rope"}, "norm": {"rmsnorm"}, "norm_position": {"pre"},
              "activation": {"swiglu"}, "output_bias": {False}},
    "bert": {"arch": {"encoder"}, "position": {"learned"}, "norm": {"layernorm"}, "norm_position": {"post"},
             # BERT's head transform uses the blocks' activation; ours is always exact GELU.
             "activation": {"gelu"}, "bias": {True}, "head_transform": {True}, "output_scale": {False},
             "attention_scale": {None}, "num_segments": {0, 1, 2}, "embedding_size": {None}},
    "t5": {"arch": {"encoder_decoder"}, "position": {"relative"}, "norm": {"rmsnorm"}, "norm_position": {"pre"},
           "activation": {*ACTIVATIONS, "swiglu"}, "bias": {False}, "attention_scale": {1.0},
           "head_transform": {False}, "output_bias": {False}, "num_segments": {0}, "sentence_head": {False},
           "embedding_size": {None}},
    "bart": {**_COMMON, "arch": {"encoder_decoder"}, "position": {"learned"}, "norm": {"layernorm"},
             "norm_position": {"post"}, "activation": set(ACTIVATIONS), "bias": {True},
             "norm_eps": {1e-5}},  # BART's LayerNorms use torch's default epsilon, not a config value
}
LAYOUTS_OF_ARCH = {"decoder": ("gpt2", "llama"), "encoder": ("bert",), "encoder_decoder": ("t5", "bart")}


def _mismatches(cfg: ModelConfig, layout: str) -> list[str]:
    out = []
    for key, allowed in REQUIREMENTS[layout].items():
        value = getattr(cfg, key)
        if value not in allowed:
            shown = " or ".join(sorted(repr(v) for v in allowed))
            out.append(f"{key}={value!r} (needs {shown})")
    if layout == "t5" and cfg.output_scale != cfg.tie_embeddings:
        out.append(f"output_scale={cfg.output_scale!r} with tie_embeddings={cfg.tie_embeddings!r} (T5 scales "
                   "the logits exactly when the embeddings are tied)")
    return out


def match_layout(cfg: ModelConfig) -> str:
    """The transformers layout that matches ``cfg`` exactly; a UserError naming the options that have none."""
    candidates = LAYOUTS_OF_ARCH[cfg.arch]
    found = {layout: _mismatches(cfg, layout) for layout in candidates}
    for layout in candidates:
        if not found[layout]:
            return layout
    nearest = min(candidates, key=lambda layout: len(found[layout]))
    raise UserError(f"this {cfg.arch} model has no exact transformers equivalent: as {nearest} it differs in "
                    f"{'; '.join(found[nearest])}; export refuses an approximate conversion (train with the "
                    f"{nearest} recipe's options, or use the model inside corpusforge)")


# ------------------------------------------------------------------------------------------ configs

def hf_config(cfg: ModelConfig, special: dict[str, int]):
    """The transformers config object of ``cfg`` (its layout's class), with the special-token ids."""
    import transformers

    layout = match_layout(cfg)
    pad, eos, bos = special.get("pad"), special.get("eos"), special.get("bos")
    heads, d = cfg.n_heads, cfg.d_model
    common = dict(vocab_size=cfg.vocab_size, tie_word_embeddings=cfg.tie_embeddings)
    if layout == "gpt2":
        return transformers.GPT2Config(
            **common, n_positions=cfg.max_len, n_embd=d, n_layer=cfg.n_layers, n_head=heads, n_inner=cfg.d_ff,
            activation_function=ACTIVATIONS[cfg.activation], layer_norm_epsilon=cfg.norm_eps,
            resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout, attn_pdrop=cfg.dropout,
            bos_token_id=bos if bos is not None else eos, eos_token_id=eos, pad_token_id=pad)
    if layout == "llama":
        return transformers.LlamaConfig(
            **common, hidden_size=d, intermediate_size=cfg.d_ff, num_hidden_layers=cfg.n_layers,
            num_attention_heads=heads, num_key_value_heads=heads, head_dim=d // heads, hidden_act="silu",
            max_position_embeddings=cfg.max_len, rms_norm_eps=cfg.norm_eps, rope_theta=10_000.0,
            attention_bias=cfg.bias, mlp_bias=cfg.bias, attention_dropout=cfg.dropout,
            bos_token_id=bos if bos is not None else eos, eos_token_id=eos, pad_token_id=pad)
    if layout == "bert":
        return transformers.BertConfig(
            **common, hidden_size=d, num_hidden_layers=cfg.n_layers, num_attention_heads=heads,
            intermediate_size=cfg.d_ff, hidden_act="gelu", max_position_embeddings=cfg.max_len,
            type_vocab_size=max(cfg.num_segments, 1), layer_norm_eps=cfg.norm_eps,
            hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.dropout,
            pad_token_id=pad if pad is not None else 0)
    if layout == "t5":
        proj = "gated-silu" if cfg.activation == "swiglu" else ACTIVATIONS[cfg.activation]
        return transformers.T5Config(
            **common, d_model=d, d_kv=d // heads, d_ff=cfg.d_ff, num_layers=cfg.n_layers,
            num_decoder_layers=cfg.n_decoder_layers or cfg.n_layers, num_heads=heads,
            relative_attention_num_buckets=cfg.relative_buckets,
            relative_attention_max_distance=cfg.relative_max_distance, dropout_rate=cfg.dropout,
            layer_norm_epsilon=cfg.norm_eps, feed_forward_proj=proj, is_encoder_decoder=True,
            pad_token_id=pad, eos_token_id=eos, decoder_start_token_id=pad)
    return transformers.BartConfig(
        **common, d_model=d, encoder_layers=cfg.n_layers, decoder_layers=cfg.n_decoder_layers or cfg.n_layers,
        encoder_attention_heads=heads, decoder_attention_heads=heads, encoder_ffn_dim=cfg.d_ff,
        decoder_ffn_dim=cfg.d_ff, activation_function=ACTIVATIONS[cfg.activation],
        max_position_embeddings=cfg.max_len, scale_embedding=False, dropout=cfg.dropout,
        attention_dropout=cfg.dropout, activation_dropout=0.0, encoder_layerdrop=0.0, decoder_layerdrop=0.0,
        pad_token_id=pad, bos_token_id=bos, eos_token_id=eos, decoder_start_token_id=eos,
        forced_eos_token_id=eos, is_encoder_decoder=True)


def model_config_from_hf(hf_cfg) -> ModelConfig:
    """Our ModelConfig for a transformers config of a supported layout (the reverse of ``hf_config``)."""
    kind = getattr(hf_cfg, "model_type", None)
    act = {v: k for k, v in ACTIVATIONS.items()}
    if kind == "gpt2":
        activation = act.get(hf_cfg.activation_function)
        _require(activation is not None, f"activation_function {hf_cfg.activation_function!r}")
        _require(not hf_cfg.scale_attn_by_inverse_layer_idx and not hf_cfg.reorder_and_upcast_attn
                 and hf_cfg.scale_attn_weights, "GPT-2 attention scaling options")
        return ModelConfig(arch="decoder", vocab_size=hf_cfg.vocab_size, max_len=hf_cfg.n_positions,
                           d_model=hf_cfg.n_embd, n_layers=hf_cfg.n_layer, n_heads=hf_cfg.n_head,
                           d_ff=hf_cfg.n_inner or 4 * hf_cfg.n_embd, position="learned", norm="layernorm",
                           norm_position="pre", norm_eps=hf_cfg.layer_norm_epsilon, activation=activation,
                           tie_embeddings=hf_cfg.tie_word_embeddings, bias=True, dropout=hf_cfg.resid_pdrop)
    if kind == "llama":
        heads = hf_cfg.num_attention_heads
        _require(hf_cfg.num_key_value_heads == heads, "grouped-query attention (num_key_value_heads)")
        _require(hf_cfg.hidden_act == "silu", f"hidden_act {hf_cfg.hidden_act!r}")
        _require(getattr(hf_cfg, "head_dim", None) in (None, hf_cfg.hidden_size // heads), "head_dim")
        rope = getattr(hf_cfg, "rope_parameters", None) or {}
        theta = rope.get("rope_theta", getattr(hf_cfg, "rope_theta", 10_000.0))
        _require(float(theta) == 10_000.0 and rope.get("rope_type", "default") == "default",
                 "RoPE scaling or a rope_theta other than 10000")
        _require(hf_cfg.attention_bias == hf_cfg.mlp_bias, "attention_bias different from mlp_bias")
        return ModelConfig(arch="decoder", vocab_size=hf_cfg.vocab_size, max_len=hf_cfg.max_position_embeddings,
                           d_model=hf_cfg.hidden_size, n_layers=hf_cfg.num_hidden_layers, n_heads=heads,
                           d_ff=hf_cfg.intermediate_size, position="rope", norm="rmsnorm", norm_position="pre",
                           norm_eps=hf_cfg.rms_norm_eps, activation="swiglu",
                           tie_embeddings=hf_cfg.tie_word_embeddings, bias=hf_cfg.attention_bias,
                           dropout=hf_cfg.attention_dropout)
    if kind == "bert":
        _require(hf_cfg.hidden_act == "gelu", f"hidden_act {hf_cfg.hidden_act!r}")
        _require(getattr(hf_cfg, "position_embedding_type", "absolute") == "absolute", "relative position embeddings")
        _require(hf_cfg.type_vocab_size in (1, 2), f"type_vocab_size {hf_cfg.type_vocab_size}")
        return ModelConfig(arch="encoder", vocab_size=hf_cfg.vocab_size, max_len=hf_cfg.max_position_embeddings,
                           d_model=hf_cfg.hidden_size, n_layers=hf_cfg.num_hidden_layers,
                           n_heads=hf_cfg.num_attention_heads, d_ff=hf_cfg.intermediate_size, position="learned",
                           norm="layernorm", norm_position="post", norm_eps=hf_cfg.layer_norm_eps,
                           activation="gelu", tie_embeddings=hf_cfg.tie_word_embeddings, bias=True,
                           output_bias=True, head_transform=True, num_segments=hf_cfg.type_vocab_size,
                           dropout=hf_cfg.hidden_dropout_prob)
    if kind == "t5":
        activation = "swiglu" if hf_cfg.feed_forward_proj == "gated-silu" else act.get(hf_cfg.feed_forward_proj)
        _require(activation is not None, f"feed_forward_proj {hf_cfg.feed_forward_proj!r}")
        _require(hf_cfg.d_kv * hf_cfg.num_heads == hf_cfg.d_model, "d_kv x num_heads different from d_model")
        return ModelConfig(arch="encoder_decoder", vocab_size=hf_cfg.vocab_size, d_model=hf_cfg.d_model,
                           n_layers=hf_cfg.num_layers, n_decoder_layers=hf_cfg.num_decoder_layers,
                           n_heads=hf_cfg.num_heads, d_ff=hf_cfg.d_ff, position="relative", norm="rmsnorm",
                           norm_position="pre", norm_eps=hf_cfg.layer_norm_epsilon, activation=activation,
                           tie_embeddings=hf_cfg.tie_word_embeddings, bias=False,
                           relative_buckets=hf_cfg.relative_attention_num_buckets,
                           relative_max_distance=hf_cfg.relative_attention_max_distance, attention_scale=1.0,
                           output_scale=hf_cfg.tie_word_embeddings, init="t5", dropout=hf_cfg.dropout_rate)
    if kind == "bart":
        activation = act.get(hf_cfg.activation_function)
        _require(activation is not None, f"activation_function {hf_cfg.activation_function!r}")
        _require(not hf_cfg.scale_embedding, "scale_embedding")
        _require(hf_cfg.encoder_attention_heads == hf_cfg.decoder_attention_heads
                 and hf_cfg.encoder_ffn_dim == hf_cfg.decoder_ffn_dim, "different encoder and decoder widths")
        return ModelConfig(arch="encoder_decoder", vocab_size=hf_cfg.vocab_size,
                           max_len=hf_cfg.max_position_embeddings, d_model=hf_cfg.d_model,
                           n_layers=hf_cfg.encoder_layers, n_decoder_layers=hf_cfg.decoder_layers,
                           n_heads=hf_cfg.encoder_attention_heads, d_ff=hf_cfg.encoder_ffn_dim, position="learned",
                           norm="layernorm", norm_position="post", norm_eps=1e-5, activation=activation,
                           tie_embeddings=hf_cfg.tie_word_embeddings, bias=True, output_bias=True,
                           dropout=hf_cfg.dropout)
    raise UserError(f"model_type {kind!r} is not a layout corpusforge can train; supported: gpt2, llama, bert, t5, "
                    "bart")


def build_model(cfg: ModelConfig) -> Transformer:
    """``Transformer(cfg)``, or a UserError when this version of the model lacks one of its options."""
    try:
        return Transformer(cfg)
    except KeyError as exc:
        raise UserError(f"the transformers checkpoint needs activation {cfg.activation!r} ({exc}), which this "
                        "corpusforge model does not implement") from None


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise UserError(f"the transformers checkpoint uses {what}, which corpusforge's model has no exact "
                        "equivalent for; it cannot be loaded without changing what it computes")


# ------------------------------------------------------------------------------------------ weights

@dataclasses.dataclass(frozen=True)
class Rule:
    """Our weight ``ours`` is the transformers weights ``theirs``: renamed (one name), concatenated along the
    first dimension (several), transposed (GPT-2's Conv1D), or shifted by ``rows_before`` unused rows (BART's
    position table starts at offset 2)."""

    ours: str
    theirs: tuple[str, ...]
    transpose: bool = False
    rows_before: int = 0


def weight_rules(cfg: ModelConfig) -> list[Rule]:
    """Every weight of a ``cfg`` model and where it lives in the matching transformers model."""
    return {"gpt2": _gpt2, "llama": _llama, "bert": _bert, "t5": _t5, "bart": _bart}[match_layout(cfg)](cfg)


def _linear(rules, ours, theirs, bias, *, transpose=False):
    theirs = (theirs,) if isinstance(theirs, str) else tuple(theirs)
    rules.append(Rule(ours + ".weight", tuple(t + ".weight" for t in theirs), transpose=transpose))
    if bias:
        rules.append(Rule(ours + ".bias", tuple(t + ".bias" for t in theirs)))


def _output(cfg, rules, lm_head):
    if not cfg.tie_embeddings:
        rules.append(Rule("lm_head.weight", (lm_head,)))


def _gpt2(cfg):
    rules = [Rule("tok_emb.weight", ("transformer.wte.weight",)), Rule("decoder.pos_emb.weight", ("transformer.wpe.weight",))]
    _linear(rules, "decoder.final_norm", "transformer.ln_f", True)
    for i in range(cfg.n_layers):
        p, q = f"transformer.h.{i}.", f"decoder.blocks.{i}."
        for ours, theirs in (("attn.qkv", "attn.c_attn"), ("attn.out", "attn.c_proj"), ("mlp.up", "mlp.c_fc"),
                             ("mlp.down", "mlp.c_proj")):
            _linear(rules, q + ours, p + theirs, True, transpose=True)  # Conv1D stores (in, out)
        _linear(rules, q + "attn_norm", p + "ln_1", True)
        _linear(rules, q + "mlp_norm", p + "ln_2", True)
    _output(cfg, rules, "lm_head.weight")
    return rules


def _llama(cfg):
    rules = [Rule("tok_emb.weight", ("model.embed_tokens.weight",)), Rule("decoder.final_norm.weight", ("model.norm.weight",))]
    for i in range(cfg.n_layers):
        p, q = f"model.layers.{i}.", f"decoder.blocks.{i}."
        _linear(rules, q + "attn.qkv", [p + f"self_attn.{n}_proj" for n in "qkv"], cfg.bias)
        _linear(rules, q + "attn.out", p + "self_attn.o_proj", cfg.bias)
        _linear(rules, q + "mlp.up", [p + "mlp.gate_proj", p + "mlp.up_proj"], cfg.bias)  # our chunk order: gate, value
        _linear(rules, q + "mlp.down", p + "mlp.down_proj", cfg.bias)
        rules.append(Rule(q + "attn_norm.weight", (p + "input_layernorm.weight",)))
        rules.append(Rule(q + "mlp_norm.weight", (p + "post_attention_layernorm.weight",)))
    _output(cfg, rules, "lm_head.weight")
    return rules


def _bert_encoder(cfg, ours: str = "", theirs: str = "bert."):
    """BERT's embeddings and layers (ELECTRA's too, under ``electra.``), our names prefixed with ``ours``."""
    e = theirs + "embeddings."
    rules = [Rule(ours + "tok_emb.weight", (e + "word_embeddings.weight",)),
             Rule(ours + "encoder.pos_emb.weight", (e + "position_embeddings.weight",))]
    if cfg.num_segments:
        rules.append(Rule(ours + "encoder.seg_emb.weight", (e + "token_type_embeddings.weight",)))
    _linear(rules, ours + "encoder.emb_norm", e + "LayerNorm", True)
    if cfg.embedding_width != cfg.d_model:
        _linear(rules, ours + "encoder.emb_project", theirs + "embeddings_project", True)
    for i in range(cfg.n_layers):
        p, q = f"{theirs}encoder.layer.{i}.", f"{ours}encoder.blocks.{i}."
        _linear(rules, q + "attn.qkv", [p + f"attention.self.{n}" for n in ("query", "key", "value")], True)
        _linear(rules, q + "attn.out", p + "attention.output.dense", True)
        _linear(rules, q + "attn_norm", p + "attention.output.LayerNorm", True)
        _linear(rules, q + "mlp.up", p + "intermediate.dense", True)
        _linear(rules, q + "mlp.down", p + "output.dense", True)
        _linear(rules, q + "mlp_norm", p + "output.LayerNorm", True)
    return rules


def _bert(cfg):
    rules = _bert_encoder(cfg)
    _linear(rules, "head_transform.0", "cls.predictions.transform.dense", True)
    _linear(rules, "head_transform.2", "cls.predictions.transform.LayerNorm", True)
    if cfg.output_bias:
        rules.append(Rule("lm_bias", ("cls.predictions.bias",)))
    # A next-sentence head (pooler + classifier) is a pretraining auxiliary; BertForMaskedLM has none, as
    # transformers drops bert-base's own when loading it for masked LM. Its weights are not exported.
    _output(cfg, rules, "cls.predictions.decoder.weight")
    return rules


def _t5(cfg):
    rules = [Rule("tok_emb.weight", ("shared.weight",))]
    for stack, layers in (("encoder", cfg.n_layers), ("decoder", cfg.n_decoder_layers or cfg.n_layers)):
        rules.append(Rule(f"{stack}.relative.bias.weight",
                          (f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight",)))
        rules.append(Rule(f"{stack}.final_norm.weight", (f"{stack}.final_layer_norm.weight",)))
        for i in range(layers):
            p, q = f"{stack}.block.{i}.layer.", f"{stack}.blocks.{i}."
            _linear(rules, q + "attn.qkv", [p + f"0.SelfAttention.{n}" for n in "qkv"], False)
            _linear(rules, q + "attn.out", p + "0.SelfAttention.o", False)
            rules.append(Rule(q + "attn_norm.weight", (p + "0.layer_norm.weight",)))
            ff = 1
            if stack == "decoder":
                ff = 2
                _linear(rules, q + "cross.q", p + "1.EncDecAttention.q", False)
                _linear(rules, q + "cross.kv", [p + f"1.EncDecAttention.{n}" for n in "kv"], False)
                _linear(rules, q + "cross.out", p + "1.EncDecAttention.o", False)
                rules.append(Rule(q + "cross_norm.weight", (p + "1.layer_norm.weight",)))
            f = p + f"{ff}.DenseReluDense."
            up = [f + "wi_0", f + "wi_1"] if cfg.activation == "swiglu" else f + "wi"
            _linear(rules, q + "mlp.up", up, False)
            _linear(rules, q + "mlp.down", f + "wo", False)
            rules.append(Rule(q + "mlp_norm.weight", (p + f"{ff}.layer_norm.weight",)))
    _output(cfg, rules, "lm_head.weight")
    return rules


def _bart(cfg):
    rules = [Rule("tok_emb.weight", ("model.shared.weight",))]
    for stack, layers in (("encoder", cfg.n_layers), ("decoder", cfg.n_decoder_layers or cfg.n_layers)):
        m = f"model.{stack}."
        rules.append(Rule(f"{stack}.pos_emb.weight", (m + "embed_positions.weight",), rows_before=2))
        _linear(rules, f"{stack}.emb_norm", m + "layernorm_embedding", True)
        for i in range(layers):
            p, q = f"{m}layers.{i}.", f"{stack}.blocks.{i}."
            _linear(rules, q + "attn.qkv", [p + f"self_attn.{n}_proj" for n in "qkv"], True)
            _linear(rules, q + "attn.out", p + "self_attn.out_proj", True)
            _linear(rules, q + "attn_norm", p + "self_attn_layer_norm", True)
            if stack == "decoder":
                _linear(rules, q + "cross.q", p + "encoder_attn.q_proj", True)
                _linear(rules, q + "cross.kv", [p + "encoder_attn.k_proj", p + "encoder_attn.v_proj"], True)
                _linear(rules, q + "cross.out", p + "encoder_attn.out_proj", True)
                _linear(rules, q + "cross_norm", p + "encoder_attn_layer_norm", True)
            _linear(rules, q + "mlp.up", p + "fc1", True)
            _linear(rules, q + "mlp.down", p + "fc2", True)
            _linear(rules, q + "mlp_norm", p + "final_layer_norm", True)
    if cfg.output_bias:
        rules.append(Rule("lm_bias", ("final_logits_bias",)))
    _output(cfg, rules, "lm_head.weight")
    return rules


def to_hf_state(ours: dict[str, torch.Tensor], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """Our state dict as the matching transformers model's (tied copies left to transformers)."""
    out = {}
    for rule in weight_rules(cfg):
        value = ours[rule.ours]
        parts = value.chunk(len(rule.theirs), dim=0) if len(rule.theirs) > 1 else (value,)
        for name, part in zip(rule.theirs, parts):
            if rule.rows_before:
                part = torch.cat([part.new_zeros(rule.rows_before, *part.shape[1:]), part])
            out[name] = (part.t() if rule.transpose else part).contiguous()
    # Parts transformers always has and our model may leave out: zero is exactly "absent".
    layout = match_layout(cfg)
    if layout == "bart":
        out["final_logits_bias"] = out.get("final_logits_bias", torch.zeros(cfg.vocab_size)).reshape(1, -1)
    if layout == "bert":
        out.setdefault("bert.embeddings.token_type_embeddings.weight", torch.zeros(1, cfg.d_model))
        out.setdefault("cls.predictions.bias", torch.zeros(cfg.vocab_size))
        out["cls.predictions.decoder.bias"] = out["cls.predictions.bias"]  # one parameter, two names
    return out


def from_hf_state(theirs: dict[str, torch.Tensor], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """A transformers state dict of ``cfg``'s layout as our state dict (the inverse of ``to_hf_state``)."""
    out = {}
    for rule in weight_rules(cfg):
        missing = [name for name in rule.theirs if name not in theirs]
        if missing:
            raise UserError(f"the transformers checkpoint lacks {missing[0]}; it is not a complete "
                            f"{match_layout(cfg)} model")
        parts = [theirs[name].t() if rule.transpose else theirs[name] for name in rule.theirs]
        value = torch.cat(parts, dim=0) if len(parts) > 1 else parts[0]
        if rule.rows_before:
            value = value[rule.rows_before:]
        out[rule.ours] = value.reshape(-1) if rule.ours == "lm_bias" else value.contiguous()
    return out


# ------------------------------------------------------------------------------------------ models

def to_transformers(model: Transformer, special: dict[str, int]):
    """A transformers model (float32, eval mode) computing what ``model`` computes, with its weights."""
    import transformers

    cfg = model.cfg
    hf_cfg = hf_config(cfg, special)
    cls = {"gpt2": transformers.GPT2LMHeadModel, "llama": transformers.LlamaForCausalLM,
           "bert": transformers.BertForMaskedLM,
           "t5": transformers.T5ForConditionalGeneration,
           "bart": transformers.BartForConditionalGeneration}[match_layout(cfg)]
    hf = cls(hf_cfg)
    state = to_hf_state({k: v.detach().float().cpu() for k, v in model.state_dict().items()
                         if not k.startswith(("pooler.", "sentence_classifier."))}, cfg)
    _load_exactly(hf, state)
    return hf.eval()


def _load_exactly(hf, state: dict[str, torch.Tensor]) -> None:
    """Load ``state``; every weight the model has must come from it or be tied to one that does."""
    result = hf.load_state_dict(state, strict=False)
    if result.unexpected_keys:
        raise RuntimeError(f"weights transformers does not know: {result.unexpected_keys[:5]}")
    hf.tie_weights()
    loaded = {t.data_ptr() for name, t in hf.state_dict().items() if name in state}
    untied = [name for name in result.missing_keys if hf.state_dict()[name].data_ptr() not in loaded
              and not _derived_buffer(hf, name)]
    if untied:
        raise RuntimeError(f"transformers weights with no corpusforge counterpart: {untied[:5]}")


# ------------------------------------------------------------------------------------------ ELECTRA

def electra_config(cfg: ModelConfig, special: dict[str, int]):
    """transformers' ElectraConfig of one half of an ELECTRA model (BERT's recipe, embeddings maybe narrower)."""
    import transformers

    mismatches = _mismatches(dataclasses.replace(cfg, head_transform=True, embedding_size=None), "bert")
    if mismatches:
        raise UserError(f"this ELECTRA model has no exact transformers equivalent: it differs in "
                        f"{'; '.join(mismatches)}; train it with the bert recipe's options")
    pad = special.get("pad")
    return transformers.ElectraConfig(
        vocab_size=cfg.vocab_size, embedding_size=cfg.embedding_width, hidden_size=cfg.d_model,
        num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads, intermediate_size=cfg.d_ff,
        hidden_act="gelu", max_position_embeddings=cfg.max_len, type_vocab_size=max(cfg.num_segments, 1),
        layer_norm_eps=cfg.norm_eps, hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.dropout,
        pad_token_id=pad if pad is not None else 0, tie_word_embeddings=True)


def electra_rules(model) -> tuple[list[Rule], list[Rule]]:
    """Weight rules of an ELECTRA model's discriminator (ElectraForPreTraining) and generator (ElectraForMaskedLM)."""
    discriminator = _bert_encoder(model.cfg, "discriminator.", "electra.")
    _linear(discriminator, "detector.0", "discriminator_predictions.dense", True)
    _linear(discriminator, "detector.2", "discriminator_predictions.dense_prediction", True)
    generator = _bert_encoder(model.generator_cfg, "generator.", "electra.")
    _linear(generator, "generator.head_transform.0", "generator_predictions.dense", True)
    _linear(generator, "generator.head_transform.2", "generator_predictions.LayerNorm", True)
    generator.append(Rule("generator.lm_bias", ("generator_lm_head.bias",)))
    return discriminator, generator


def to_electra(model, special: dict[str, int]):
    """``(ElectraForPreTraining, ElectraForMaskedLM)`` computing what an ELECTRA model's discriminator and
    generator compute (float32, eval mode). Shared embeddings are copied into both."""
    import transformers

    ours = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
    out = []
    for rules, cfg, cls in zip(electra_rules(model), (model.cfg, model.generator_cfg),
                               (transformers.ElectraForPreTraining, transformers.ElectraForMaskedLM)):
        hf = cls(electra_config(cfg, special))
        state = {}
        for rule in rules:
            parts = ours[rule.ours].chunk(len(rule.theirs), dim=0) if len(rule.theirs) > 1 else (ours[rule.ours],)
            state.update({name: part.contiguous() for name, part in zip(rule.theirs, parts)})
        state.setdefault("electra.embeddings.token_type_embeddings.weight", torch.zeros(1, cfg.embedding_width))
        if cls is transformers.ElectraForPreTraining:
            state["discriminator_predictions.dense_prediction.weight"] = \
                state["discriminator_predictions.dense_prediction.weight"].reshape(1, -1)
        _load_exactly(hf, state)
        out.append(hf.eval())
    return tuple(out)


def _derived_buffer(hf, name: str) -> bool:
    """Buffers computed from the config (position ids, RoPE frequencies), not learned."""
    return name.endswith(("position_ids", "inv_freq", "token_type_ids"))


def from_transformers(hf) -> Transformer:
    """Our model with the weights of a transformers model of a supported layout (``train --init-from``)."""
    cfg = model_config_from_hf(hf.config)
    model = build_model(cfg)
    state = from_hf_state({k: v.detach().float().cpu() for k, v in hf.state_dict().items()}, cfg)
    model.load_state_dict(state, strict=True)
    return model

