"""Our model with Hugging Face transformers' weights computes their logits: the recipes are the papers'."""
import pytest
import torch

from corpusforge.trainers.model import Transformer, model_config

transformers = pytest.importorskip("transformers")
V, D, L, H, FF, T = 101, 32, 2, 4, 64, 16


def ours(family, **kw):
    return Transformer(model_config(family, "debug", vocab_size=V, max_len=T, d_model=D, n_layers=L, n_heads=H,
                                    d_ff=FF, dropout=0.0, **kw)).eval()


def load(model, weights):
    state = model.state_dict()
    assert set(weights) == set(state), set(weights) ^ set(state)
    model.load_state_dict({k: v.reshape(state[k].shape) for k, v in weights.items()})


def test_gpt2():
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=V, n_positions=T, n_embd=D, n_layer=L, n_head=H, n_inner=FF, activation_function="gelu_new",
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)).eval()
    with torch.no_grad():  # MLP inputs of order 1, where exact GELU and its tanh approximation differ
        for block in hf.transformer.h:
            block.mlp.c_fc.weight.mul_(50)
    s = hf.state_dict()
    w = {"tok_emb.weight": s["transformer.wte.weight"], "decoder.pos_emb.weight": s["transformer.wpe.weight"],
         "decoder.final_norm.weight": s["transformer.ln_f.weight"], "decoder.final_norm.bias": s["transformer.ln_f.bias"]}
    for i in range(L):
        p, q = f"transformer.h.{i}.", f"decoder.blocks.{i}."
        for ours_name, theirs in (("attn.qkv", "attn.c_attn"), ("attn.out", "attn.c_proj"), ("mlp.up", "mlp.c_fc"),
                                  ("mlp.down", "mlp.c_proj")):
            w[q + ours_name + ".weight"] = s[p + theirs + ".weight"].t()  # Conv1D stores (in, out)
            w[q + ours_name + ".bias"] = s[p + theirs + ".bias"]
        for ours_name, theirs in (("attn_norm", "ln_1"), ("mlp_norm", "ln_2")):
            w[q + ours_name + ".weight"], w[q + ours_name + ".bias"] = s[p + theirs + ".weight"], s[p + theirs + ".bias"]
    model = ours("gpt2")
    load(model, w)
    ids = torch.randint(0, V, (2, T))
    assert torch.allclose(model(ids)[0], hf(input_ids=ids).logits, atol=1e-5)


def test_bert():
    hf = transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=V, hidden_size=D, num_hidden_layers=L, num_attention_heads=H, intermediate_size=FF,
        max_position_embeddings=T, type_vocab_size=1, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        pad_token_id=0)).eval()
    s = hf.state_dict()
    e = "bert.embeddings."
    w = {"tok_emb.weight": s[e + "word_embeddings.weight"],
         # BERT adds token-type 0 to every position: fold it into the position table.
         "encoder.pos_emb.weight": s[e + "position_embeddings.weight"] + s[e + "token_type_embeddings.weight"][0],
         "encoder.emb_norm.weight": s[e + "LayerNorm.weight"], "encoder.emb_norm.bias": s[e + "LayerNorm.bias"],
         "head_transform.0.weight": s["cls.predictions.transform.dense.weight"],
         "head_transform.0.bias": s["cls.predictions.transform.dense.bias"],
         "head_transform.2.weight": s["cls.predictions.transform.LayerNorm.weight"],
         "head_transform.2.bias": s["cls.predictions.transform.LayerNorm.bias"],
         "lm_bias": s["cls.predictions.bias"]}
    for i in range(L):
        p, q = f"bert.encoder.layer.{i}.", f"encoder.blocks.{i}."
        a = p + "attention.self."
        for kind in ("weight", "bias"):
            w[q + "attn.qkv." + kind] = torch.cat([s[a + n + "." + kind] for n in ("query", "key", "value")])
            w[q + "attn.out." + kind] = s[p + "attention.output.dense." + kind]
            w[q + "attn_norm." + kind] = s[p + "attention.output.LayerNorm." + kind]
            w[q + "mlp.up." + kind] = s[p + "intermediate.dense." + kind]
            w[q + "mlp.down." + kind] = s[p + "output.dense." + kind]
            w[q + "mlp_norm." + kind] = s[p + "output.LayerNorm." + kind]
    model = ours("bert")
    load(model, w)
    ids = torch.randint(0, V, (2, T))
    mask = torch.ones(2, T, dtype=torch.long)
    mask[1, 10:] = 0
    theirs = hf(input_ids=ids, attention_mask=mask).logits
    assert torch.allclose(model(ids, attention_mask=mask)[0][mask.bool()], theirs[mask.bool()], atol=1e-4)


def test_t5():
    hf = transformers.T5ForConditionalGeneration(transformers.T5Config(
        vocab_size=V, d_model=D, d_kv=D // H, d_ff=FF, num_layers=L, num_heads=H, dropout_rate=0.0,
        feed_forward_proj="relu", tie_word_embeddings=True, pad_token_id=0, eos_token_id=1,
        decoder_start_token_id=0)).eval()
    s = hf.state_dict()
    w = {"tok_emb.weight": s["shared.weight"]}
    for stack in ("encoder", "decoder"):
        w[f"{stack}.relative.bias.weight"] = s[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
        w[f"{stack}.final_norm.weight"] = s[f"{stack}.final_layer_norm.weight"]
        for i in range(L):
            p, q = f"{stack}.block.{i}.layer.", f"{stack}.blocks.{i}."
            w[q + "attn.qkv.weight"] = torch.cat([s[p + f"0.SelfAttention.{n}.weight"] for n in "qkv"])
            w[q + "attn.out.weight"] = s[p + "0.SelfAttention.o.weight"]
            w[q + "attn_norm.weight"] = s[p + "0.layer_norm.weight"]
            ff = 1
            if stack == "decoder":
                ff = 2
                w[q + "cross.q.weight"] = s[p + "1.EncDecAttention.q.weight"]
                w[q + "cross.kv.weight"] = torch.cat([s[p + f"1.EncDecAttention.{n}.weight"] for n in "kv"])
                w[q + "cross.out.weight"] = s[p + "1.EncDecAttention.o.weight"]
                w[q + "cross_norm.weight"] = s[p + "1.layer_norm.weight"]
            w[q + "mlp.up.weight"] = s[p + f"{ff}.DenseReluDense.wi.weight"]
            w[q + "mlp.down.weight"] = s[p + f"{ff}.DenseReluDense.wo.weight"]
            w[q + "mlp_norm.weight"] = s[p + f"{ff}.layer_norm.weight"]
    model = ours("t5")
    load(model, w)
    src, tgt = torch.randint(0, V, (2, T)), torch.randint(0, V, (2, 9))
    mask = torch.ones(2, T, dtype=torch.long)
    mask[0, 12:] = 0
    theirs = hf(input_ids=src, attention_mask=mask, decoder_input_ids=tgt).logits
    assert torch.allclose(model(src, attention_mask=mask, decoder_input_ids=tgt)[0], theirs, atol=1e-4)


def test_bart():
    hf = transformers.BartForConditionalGeneration(transformers.BartConfig(
        vocab_size=V, d_model=D, encoder_layers=L, decoder_layers=L, encoder_attention_heads=H,
        decoder_attention_heads=H, encoder_ffn_dim=FF, decoder_ffn_dim=FF, max_position_embeddings=T,
        activation_function="gelu", dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, scale_embedding=False,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)).eval()
    s = hf.state_dict()
    w = {"tok_emb.weight": s["model.shared.weight"]}
    for stack in ("encoder", "decoder"):
        m = f"model.{stack}."
        w[f"{stack}.pos_emb.weight"] = s[m + "embed_positions.weight"][2:]  # BART's positions start at offset 2
        for kind in ("weight", "bias"):
            w[f"{stack}.emb_norm.{kind}"] = s[m + "layernorm_embedding." + kind]
        for i in range(L):
            p, q = f"{m}layers.{i}.", f"{stack}.blocks.{i}."
            for kind in ("weight", "bias"):
                w[q + "attn.qkv." + kind] = torch.cat([s[f"{p}self_attn.{n}_proj.{kind}"] for n in "qkv"])
                w[q + "attn.out." + kind] = s[f"{p}self_attn.out_proj.{kind}"]
                w[q + "attn_norm." + kind] = s[f"{p}self_attn_layer_norm.{kind}"]
                w[q + "mlp.up." + kind] = s[f"{p}fc1.{kind}"]
                w[q + "mlp.down." + kind] = s[f"{p}fc2.{kind}"]
                w[q + "mlp_norm." + kind] = s[f"{p}final_layer_norm.{kind}"]
                if stack == "decoder":
                    w[q + "cross.q." + kind] = s[f"{p}encoder_attn.q_proj.{kind}"]
                    w[q + "cross.kv." + kind] = torch.cat([s[f"{p}encoder_attn.{n}_proj.{kind}"] for n in "kv"])
                    w[q + "cross.out." + kind] = s[f"{p}encoder_attn.out_proj.{kind}"]
                    w[q + "cross_norm." + kind] = s[f"{p}encoder_attn_layer_norm.{kind}"]
    assert not s["final_logits_bias"].any()  # BART's output bias starts at zero; ours has none
    model = ours("bart")
    load(model, w)
    src, tgt = torch.randint(3, V, (2, T)), torch.randint(3, V, (2, 11))
    mask = torch.ones(2, T, dtype=torch.long)
    mask[1, 9:] = 0
    theirs = hf(input_ids=src, attention_mask=mask, decoder_input_ids=tgt).logits
    assert torch.allclose(model(src, attention_mask=mask, decoder_input_ids=tgt)[0], theirs, atol=1e-4)


def test_t5_initialisation_matches_in_distribution():
    torch.manual_seed(0)
    model = Transformer(model_config("t5", "small", vocab_size=1000))
    assert abs(model.tok_emb.weight.std().item() - 1.0) < 0.01
    q = model.encoder.blocks[0].attn.qkv.weight[:512]
    assert abs(q.std().item() - (512 * 64) ** -0.5) < 1e-3
    assert abs(model.encoder.blocks[0].mlp.down.weight.std().item() - 2048 ** -0.5) < 1e-3
