import pytest
import torch
import torch.nn.functional as F

from corpusforge.trainers.checkpoint import clean_state_dict
from corpusforge.trainers.model import FAMILIES, Transformer, model_config

V = 97


def build(family, position=None, **kw):
    torch.manual_seed(0)
    return Transformer(model_config(family, "debug", vocab_size=V, max_len=32, dropout=0.0, position=position, **kw)).eval()


def run(model, ids, **kw):
    if model.cfg.arch == "encoder_decoder":
        return model(torch.randint(0, V, (ids.size(0), 10), generator=torch.Generator().manual_seed(1)),
                     decoder_input_ids=ids, **kw)[0]
    return model(ids, **kw)[0]


@pytest.mark.parametrize("family", ["gpt2", "t5", "bart"])
@pytest.mark.parametrize("position", ["learned", "sinusoidal", "rope", "relative"])
def test_causal_models_do_not_see_the_future(family, position):
    model = build(family, position)
    ids = torch.randint(0, V, (2, 16))
    changed = ids.clone()
    changed[:, 9] = (changed[:, 9] + 1) % V
    before, after = run(model, ids), run(model, changed)
    assert torch.allclose(before[:, :9], after[:, :9], atol=1e-6)
    assert not torch.allclose(before[:, 9:], after[:, 9:], atol=1e-4)


def test_prefix_lm_sees_its_prefix_both_ways_and_the_rest_causally():
    model = build("gpt2", "rope")
    ids = torch.randint(0, V, (1, 16))
    prefix = torch.tensor([6])
    changed = ids.clone()
    changed[:, 4] = (changed[:, 4] + 1) % V  # inside the prefix: earlier prefix positions see it
    a, b = model(ids, prefix_lengths=prefix)[0], model(changed, prefix_lengths=prefix)[0]
    assert not torch.allclose(a[:, :4], b[:, :4], atol=1e-4)
    changed = ids.clone()
    changed[:, 10] = (changed[:, 10] + 1) % V  # after the prefix: causal
    a, b = model(ids, prefix_lengths=prefix)[0], model(changed, prefix_lengths=prefix)[0]
    assert torch.allclose(a[:, :10], b[:, :10], atol=1e-6)


@pytest.mark.parametrize("position", ["learned", "relative"])
def test_encoder_is_bidirectional_and_ignores_padding(position):
    model = build("bert", position)
    ids = torch.randint(0, V, (1, 12))
    changed = ids.clone()
    changed[:, 10] = (changed[:, 10] + 1) % V
    assert not torch.allclose(model(ids)[0][:, :5], model(changed)[0][:, :5], atol=1e-4)
    mask = torch.ones(1, 12, dtype=torch.long)
    mask[:, 8:] = 0
    a = model(ids, attention_mask=mask)[0][:, :8]
    b = model(changed, attention_mask=mask)[0][:, :8]  # the change is in a padded position
    assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_logits_with_labels_are_all_rows_and_the_loss_is_the_labelled_cross_entropy(family):
    model = build(family)
    ids = torch.randint(0, V, (2, 12))
    labels = torch.full((2, 12), -100)
    labels[0, 3], labels[1, 7], labels[1, 11] = 5, 6, 7
    full = run(model, ids)
    kw = {"decoder_input_ids": ids} if model.cfg.arch == "encoder_decoder" else {}
    src = torch.randint(0, V, (2, 10), generator=torch.Generator().manual_seed(1)) if kw else ids
    logits, loss = model(src, labels=labels, **kw)
    assert logits.shape == (2, 12, V)
    assert torch.allclose(logits, full, atol=1e-5)
    expected = torch.nn.functional.cross_entropy(full[labels != -100], labels[labels != -100])
    assert torch.allclose(loss, expected, atol=1e-5)


@pytest.mark.parametrize("family,overrides", [
    ("bert", {}), ("gpt2", {}), ("t5", {}), ("bart", {}),
    ("gpt2", {"position": "rope", "norm": "rmsnorm", "activation": "swiglu", "tie_embeddings": False}),
])
def test_each_family_overfits_a_tiny_batch(family, overrides):
    torch.manual_seed(0)
    model = Transformer(model_config(family, "debug", vocab_size=V, max_len=32, dropout=0.0, **overrides))
    ids = torch.randint(5, V, (4, 16))
    labels = ids.clone()
    if model.cfg.arch == "encoder":  # predict a few masked positions
        inputs = ids.clone()
        inputs[:, ::4] = 1
        labels[:, 1::4] = -100
        labels[:, 2::4] = -100
        labels[:, 3::4] = -100
        kw = {}
    elif model.cfg.arch == "decoder":
        inputs, labels, kw = ids[:, :-1], ids[:, 1:], {}
    else:
        inputs, kw = ids.flip(1), {"decoder_input_ids": torch.cat([torch.zeros(4, 1, dtype=torch.long), ids[:, :-1]], 1)}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    first = None
    for _ in range(60):
        _, loss = model(inputs, labels=labels, **kw)
        first = first if first is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert first > 4.0 and loss.item() < 0.05, (first, loss.item())


@pytest.mark.parametrize("family", list(FAMILIES))
def test_nothing_to_predict_gives_a_zero_loss_with_a_graph(family):
    model = build(family)
    ids = torch.randint(0, V, (2, 12))
    kw = {"decoder_input_ids": ids} if model.cfg.arch == "encoder_decoder" else {}
    _, loss = model(ids, labels=torch.full((2, 12), -100), **kw)
    loss.backward()
    assert loss.item() == 0.0 and loss.requires_grad


def test_gelu_tanh_is_the_tanh_approximation_and_the_gpt2_default():
    assert model_config("gpt2", "debug").activation == "gelu_tanh"
    assert model_config("bert", "debug").activation == "gelu" and model_config("bart", "debug").activation == "gelu"
    mlp = build("gpt2").decoder.blocks[0].mlp
    x = torch.linspace(-4, 4, 101)
    tanh = 0.5 * x * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (x + 0.044715 * x ** 3)))
    assert torch.allclose(mlp.act(x), tanh, atol=1e-6) and not torch.allclose(mlp.act(x), F.gelu(x), atol=1e-6)


def test_sizes_and_parameter_counts():
    with torch.device("meta"):  # shapes only
        gpt = Transformer(model_config("gpt2", "base", vocab_size=50257, max_len=1024, dropout=0.0))
        bert = Transformer(model_config("bert", "base", vocab_size=30522, max_len=512, dropout=0.0, num_segments=2))
        t5 = Transformer(model_config("t5", "small", vocab_size=32128))
    assert gpt.num_params() == 124_439_808  # GPT-2 small: 124.4M with tied embeddings
    assert abs(bert.num_params() - 109.5e6) < 0.6e6  # BERT-base: 110M (without its pooler)
    assert abs(t5.num_params() - 60.5e6) < 0.5e6  # T5-small: 60.5M


def test_next_sentence_head_adds_its_loss():
    model = build("bert", num_segments=2, sentence_head=True)
    ids = torch.randint(0, V, (2, 12))
    labels = torch.where(torch.rand(2, 12) < 0.3, ids, torch.tensor(-100))
    labels[0, 1] = ids[0, 1]
    _, without = model(ids, labels=labels, segment_ids=torch.zeros_like(ids))
    _, with_nsp = model(ids, labels=labels, segment_ids=torch.zeros_like(ids), next_sentence_labels=torch.tensor([0, 1]))
    assert with_nsp.item() > without.item()


def test_clean_state_dict_strips_compile_and_ddp_prefixes():
    state = {"module._orig_mod.tok_emb.weight": 1, "_orig_mod.module.lm_bias": 2, "decoder.x": 3,
             "encoder.blocks.0._orig_mod._checkpoint_wrapped_module.mlp.up.weight": 4}
    assert clean_state_dict(state) == {"tok_emb.weight": 1, "lm_bias": 2, "decoder.x": 3,
                                       "encoder.blocks.0.mlp.up.weight": 4}
