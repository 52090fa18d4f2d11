"""Exported models load in plain transformers (Auto classes, no custom code) and compute our logits."""
import json

import pytest
import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.checkpoint import load_pretrained
from corpusforge.trainers.export import export_model, load_model
from corpusforge.trainers.hf_layout import from_transformers, match_layout, to_transformers
from corpusforge.trainers.model import Transformer, model_config
from tests.trainers.exports import make_model_dir, randomise

transformers = pytest.importorskip("transformers")
AUTO = {"gpt2": "AutoModelForCausalLM", "bert": "AutoModelForMaskedLM", "t5": "AutoModelForSeq2SeqLM",
        "bart": "AutoModelForSeq2SeqLM"}
CLASS = {"gpt2": "GPT2LMHeadModel", "bert": "BertForMaskedLM", "t5": "T5ForConditionalGeneration",
         "bart": "BartForConditionalGeneration"}


def logits_both(ours, theirs, vocab_size, arch, seed=0):
    """Our logits and transformers' on the same random input (with padding where the model reads a mask)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab_size, (2, 16), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 11:] = 0
    kwargs = {} if arch == "decoder" else {"attention_mask": mask}
    if arch == "encoder_decoder":
        kwargs["decoder_input_ids"] = torch.randint(0, vocab_size, (2, 7), generator=g)
    with torch.no_grad():
        a, b = ours(ids, **kwargs)[0], theirs(input_ids=ids, **kwargs).logits
    keep = mask.bool() if arch == "encoder" else slice(None)
    return a[keep], b[keep]


@pytest.mark.parametrize("family", ["gpt2", "bert", "t5", "bart"])
def test_export_loads_in_auto_classes_without_custom_code_and_matches_our_logits(tmp_path, family):
    model_dir = make_model_dir(tmp_path / "model", family)
    out = export_model(model_dir, tmp_path / "export")
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == [CLASS[family]] and "auto_map" not in config
    names = {p.name for p in out.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json", "README.md"} <= names
    assert not any(n.endswith((".bin", ".pt")) for n in names)
    assert ("generation_config.json" in names) == (family != "bert")
    hf = getattr(transformers, AUTO[family]).from_pretrained(out, trust_remote_code=False).eval()
    assert type(hf).__name__ == CLASS[family]
    ours, info = load_pretrained(model_dir)
    a, b = logits_both(ours.eval(), hf, ours.cfg.vocab_size, ours.cfg.arch)
    assert (a - b).abs().max().item() <= 1e-4
    # The tokenizer: every role of the family set, the model's length, the same ids as our tokenizer.json.
    tok = transformers.AutoTokenizer.from_pretrained(out)
    special = info["special_tokens"]
    for role in ("pad", "eos", "bos", "mask", "unk"):
        if family == "bert" and role in ("bos", "eos"):  # BERT calls them [CLS] and [SEP]
            role, attr = role, {"bos": "cls_token_id", "eos": "sep_token_id"}[role]
        else:
            attr = f"{role}_token_id"
        if role in special:
            assert getattr(tok, attr) == special[role], role
    assert tok.pad_token_id is not None and tok.model_max_length == ours.cfg.max_len
    from tokenizers import Tokenizer

    original = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    text = "The quick river walks over the green stone."
    assert tok(text)["input_ids"] == original.encode(text).ids


@pytest.mark.parametrize("size", ["debug", "small", "base"])
@pytest.mark.parametrize("family", ["gpt2", "bert", "t5", "bart"])
def test_every_family_and_size_converts_exactly(family, size):
    torch.manual_seed(0)
    ours = randomise(Transformer(model_config(family, size, vocab_size=320, max_len=32, dropout=0.0)))
    hf = to_transformers(ours, {"pad": 1, "eos": 2, "bos": 0})
    a, b = logits_both(ours, hf, 320, ours.cfg.arch)
    assert (a - b).abs().max().item() <= 1e-4


@pytest.mark.parametrize("family,overrides,layout", [
    ("gpt2", dict(tie_embeddings=False, activation="relu"), "gpt2"),
    ("gpt2", dict(position="rope", norm="rmsnorm", activation="swiglu", bias=False), "llama"),
    ("gpt2", dict(position="rope", norm="rmsnorm", activation="swiglu", bias=True, tie_embeddings=False), "llama"),
    ("t5", dict(activation="swiglu"), "t5"),
    ("t5", dict(activation="gelu", n_decoder_layers=3), "t5"),
    ("bert", dict(tie_embeddings=False, output_bias=False), "bert"),
    ("bert", dict(num_segments=2, sentence_head=True), "bert"),
    ("bart", dict(output_bias=True, activation="relu"), "bart"),
])
def test_recipe_variants_map_to_the_class_that_computes_them(family, overrides, layout):
    ours = randomise(Transformer(model_config(family, "debug", vocab_size=128, max_len=32, dropout=0.0, **overrides)))
    assert match_layout(ours.cfg) == layout
    hf = to_transformers(ours, {"pad": 1, "eos": 2, "bos": 0})
    a, b = logits_both(ours, hf, 128, ours.cfg.arch)
    assert (a - b).abs().max().item() <= 1e-4
    back = from_transformers(hf).state_dict()  # and back again (train --init-from): the same weights
    mine = ours.state_dict()
    assert all(torch.equal(mine.get(k, torch.zeros_like(v)), v) for k, v in back.items())  # absent bias = zeros
    # all of them but a next-sentence head, which BertForMaskedLM has no place for
    assert {k.split(".")[0] for k in set(ours.state_dict()) - set(back)} <= {"pooler", "sentence_classifier"}


@pytest.mark.parametrize("family,overrides,named", [
    ("gpt2", dict(position="sinusoidal"), "position='sinusoidal'"),
    ("gpt2", dict(norm_position="post"), "norm_position='post'"),
    ("gpt2", dict(position="rope", norm="rmsnorm", activation="gelu"), "activation='gelu'"),
    ("bert", dict(activation="relu"), "activation='relu'"),
    ("t5", dict(bias=True), "bias=True"),
    ("bart", dict(norm_eps=1e-6), "norm_eps=1e-06"),
])
def test_an_option_without_an_exact_equivalent_is_refused_by_name(tmp_path, family, overrides, named):
    model_dir = make_model_dir(tmp_path / "model", family, **overrides)
    with pytest.raises(UserError, match=named.replace("(", r"\(")):
        export_model(model_dir, tmp_path / "export")
    assert not (tmp_path / "export").exists() and not list(tmp_path.glob(".export*"))


def test_export_refuses_to_clobber_and_load_model_accepts_both_directories(tmp_path):
    model_dir = make_model_dir(tmp_path / "model", "gpt2")
    out = export_model(model_dir, tmp_path / "export")
    with pytest.raises(UserError, match="--overwrite"):
        export_model(model_dir, out)
    export_model(model_dir, out, overwrite=True)
    # --overwrite deletes only an earlier export: not the model itself, nor a directory of the user's
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("not corpusforge's")
    for target in (mine, model_dir, tmp_path):
        with pytest.raises(UserError, match="not a directory that `corpusforge export` wrote"):
            export_model(model_dir, target, overwrite=True)
    assert (mine / "thesis.tex").read_text() == "not corpusforge's" and (model_dir / "config.json").is_file()
    ids = torch.tensor([[5, 6, 7, 8]])
    ours, exported = load_model(model_dir), load_model(out)
    assert (ours.source, exported.source) == ("corpusforge", "transformers")
    with torch.no_grad():
        assert torch.allclose(ours.model(ids).logits, exported.model(ids).logits, atol=1e-5)
    with pytest.raises(UserError, match="already a transformers model"):
        export_model(out, tmp_path / "again")
    with pytest.raises(UserError, match="no config.json"):
        load_model(tmp_path)


def test_foreign_checkpoints_load_when_exact_and_are_refused_by_option_otherwise():
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=96, n_positions=32, n_embd=32, n_layer=2, n_head=4, activation_function="gelu")).eval()
    ours = from_transformers(hf).eval()
    a, b = logits_both(ours, hf, 96, "decoder")
    assert (a - b).abs().max().item() <= 1e-4
    scaled = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=96, n_positions=32, n_embd=32, n_layer=2, n_head=4, scale_attn_by_inverse_layer_idx=True))
    with pytest.raises(UserError, match="GPT-2 attention scaling"):
        from_transformers(scaled)
    gqa = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2))
    with pytest.raises(UserError, match="grouped-query attention"):
        from_transformers(gqa)


def test_an_export_over_a_folder_another_command_holds_is_refused_and_the_folder_stays(tmp_path):
    """export --overwrite moved an earlier export aside and deleted it whatever held it: a second export (or any
    command) writing into that folder meanwhile lost its folder. Now out_dir is replaced under its run lock."""
    from tests.lock_holder import held_by_another_process

    model_dir = make_model_dir(tmp_path / "model", "gpt2")
    out = export_model(model_dir, tmp_path / "export")
    before = sorted(p.name for p in out.iterdir())
    with held_by_another_process(out, "export") as pid:
        with pytest.raises(UserError, match=rf"in use by `corpusforge export` \(pid {pid} on "):
            export_model(model_dir, out, overwrite=True)
        assert sorted(p.name for p in out.iterdir() if p.name != ".corpusforge.lock") == before
    export_model(model_dir, out, overwrite=True)  # once free: replaced, and no lock file left in it
    assert sorted(p.name for p in out.iterdir()) == before
    fresh = export_model(model_dir, tmp_path / "new" / "export")  # a folder that did not exist: made under the lock
    assert sorted(p.name for p in fresh.iterdir()) == before


def test_an_export_killed_before_publishing_leaves_a_folder_the_next_export_takes(tmp_path):
    """A killed export left OUT_DIR holding only its lock file: every retry was refused ("not empty", then "not a
    directory that corpusforge export wrote"). A dangling link as OUT_DIR was a raw [Errno 17]."""
    model_dir = make_model_dir(tmp_path / "model", "gpt2")
    out = tmp_path / "export"
    out.mkdir()
    (out / ".corpusforge.lock").write_text('{"pid": 999999999, "command": "export"}\n')
    assert (export_model(model_dir, out) / "config.json").is_file() and not (out / ".corpusforge.lock").exists()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UserError, match="is a symbolic link"):
        export_model(model_dir, tmp_path / "dangling")
    assert not (tmp_path / "nowhere").exists()
