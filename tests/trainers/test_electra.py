"""ELECTRA's replaced-token detection (trainers/electra.py): the two halves, the combined loss, training, export."""
import json
import shutil

import pytest
import torch
import transformers

from corpusforge.core.errors import UserError
from corpusforge.trainers.checkpoint import load_pretrained, save_pretrained
from corpusforge.trainers.electra import (ReplacedTokenDetection, detection_metrics, discriminator_config,
                                         generator_config)
from corpusforge.trainers.export import export_model, load_model
from corpusforge.trainers.hf_layout import to_electra
from corpusforge.trainers.model import model_config
from tests.runs import train_on
from tests.trainers.exports import make_model_dir, randomise
from tests.trainers.test_train import config


def electra(size="debug", fraction=0.25, share=True, vocab_size=128, **kw):
    d = discriminator_config(model_config("bert", size, vocab_size=vocab_size, max_len=32, dropout=0.0))
    return ReplacedTokenDetection(d, generator_config(d, fraction, share), share_embeddings=share, **kw)


def masked_batch(vocab_size=128, mask_id=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, vocab_size, (2, 32), generator=g)
    labels = torch.full_like(ids, -100)
    labels[:, ::5] = ids[:, ::5]
    inputs = ids.clone()
    inputs[:, ::5] = mask_id
    return inputs, labels


def test_generator_is_a_fraction_of_the_discriminator_and_shares_its_embeddings():
    model = electra("small", fraction=0.25)
    assert (model.cfg.d_model, model.generator_cfg.d_model) == (512, 128)
    assert model.generator_cfg.n_heads == 2 and model.generator_cfg.d_ff == 512  # 64-dimension heads, MLP 4x
    assert model.generator_cfg.n_layers == model.cfg.n_layers and model.generator_cfg.embedding_size == 512
    assert model.generator.tok_emb.weight is model.discriminator.tok_emb.weight
    assert model.generator.encoder.pos_emb.weight is model.discriminator.encoder.pos_emb.weight
    assert model.generator.encoder.emb_project.weight.shape == (128, 512)  # embeddings at 512, projected to 128
    unshared = electra("debug", share=False)
    assert unshared.generator.tok_emb.weight.shape == (128, 16)
    assert unshared.generator.tok_emb.weight.data_ptr() != unshared.discriminator.tok_emb.weight.data_ptr()


def test_loss_is_generator_mlm_plus_weighted_detection_and_only_masks_are_replaced():
    torch.manual_seed(0)
    model = electra(discriminator_weight=50.0, sample_vocab_size=100).eval()
    inputs, labels = masked_batch()
    torch.manual_seed(1)
    _, loss = model(inputs, labels)
    _, generator_loss = model.generator(inputs, labels)
    # Replay the same sample: recompute the detection loss by hand.
    torch.manual_seed(1)
    logits = model.generator(inputs)[0].float()
    logits[..., 100:] = float("-inf")
    sampled = (logits - torch.log(-torch.log(torch.rand_like(logits).clamp(min=1e-9)))).argmax(-1)
    masked = labels != -100
    corrupted = torch.where(masked, sampled, inputs)
    original = torch.where(masked, labels, inputs)
    replaced = corrupted != original
    assert not replaced[~masked].any() and replaced[masked].float().mean() > 0.5  # an untrained generator misses
    assert (sampled[masked] < 100).all()  # never a row past the tokenizer's vocabulary
    detection_logits = model.detect(corrupted)
    detection = torch.nn.functional.binary_cross_entropy_with_logits(detection_logits, replaced.float())
    assert loss.item() == pytest.approx(generator_loss.item() + 50.0 * detection.item(), rel=1e-5)
    # What the log reports of the same batch: each half by itself.
    logged = detection_metrics(model.detection_sums)
    assert logged == pytest.approx({
        "generator_loss": generator_loss.item(), "discriminator_loss": detection.item(),
        "discriminator_accuracy": ((detection_logits > 0) == replaced).float().mean().item(),
        "replaced_share": replaced.float().mean().item()}, rel=1e-5)


def test_exports_as_electra_for_pretraining_and_masked_lm_with_equal_logits(tmp_path):
    model = randomise(electra(vocab_size=128, sample_vocab_size=120))
    discriminator, generator = to_electra(model, {"pad": 1})
    assert isinstance(discriminator, transformers.ElectraForPreTraining)
    assert isinstance(generator, transformers.ElectraForMaskedLM)
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(3))
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    keep = mask.bool()
    with torch.no_grad():
        ours, theirs = model.detect(ids, attention_mask=mask), discriminator(input_ids=ids, attention_mask=mask).logits
        assert (ours - theirs)[keep].abs().max() <= 1e-4 and ours.abs().max() > 0.1
        ours, theirs = model.generator(ids, attention_mask=mask)[0], generator(input_ids=ids, attention_mask=mask).logits
        assert (ours - theirs)[keep].abs().max() <= 1e-4 and ours.abs().max() > 0.1


def test_model_directory_round_trip_export_and_load(tmp_path):
    source = make_model_dir(tmp_path / "bert", "bert")  # a tokenizer and config.json of the encoder family
    info = json.loads((source / "config.json").read_text())
    vocab_size = info["model"]["vocab_size"]
    model = randomise(electra(vocab_size=vocab_size, sample_vocab_size=info["tokenizer_vocab_size"]))
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    info.pop("model")
    info.update(objective="rtd", electra={"generator": __import__("dataclasses").asdict(model.generator_cfg),
                                          "share_embeddings": True, "discriminator_weight": 50.0,
                                          "sample_vocab_size": info["tokenizer_vocab_size"]})
    save_pretrained(model, model_dir, tokenizer=source / "tokenizer.json", info=info)
    loaded, _ = load_pretrained(model_dir)
    assert loaded.generator.tok_emb is loaded.discriminator.tok_emb
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in model.state_dict().items())
    out = export_model(model_dir, tmp_path / "export")
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["ElectraForPreTraining"]
    assert json.loads((out / "generator" / "config.json").read_text())["architectures"] == ["ElectraForMaskedLM"]
    assert "AutoModelForPreTraining" in (out / "README.md").read_text()
    with pytest.raises(UserError, match="ELECTRA discriminator"):
        load_model(out)  # no masked-LM head: fill-mask and evaluate are pointed at the generator
    assert isinstance(load_model(out / "generator").model, transformers.ElectraForMaskedLM)
    assert isinstance(load_model(model_dir).model, transformers.ElectraForMaskedLM)
    # the generator, loaded on its own, is checked by its own record of every file in it
    parent, own = (json.loads((d / "corpusforge.json").read_text()) for d in (out, out / "generator"))
    assert parent["folders"] == ["generator"] and not any("/" in name for name in parent["file_sha256"])
    assert own["every_file"] and {"model.safetensors", "tokenizer.json", "config.json"} <= set(own["file_sha256"])
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        copy = tmp_path / f"copy-{name}"
        shutil.copytree(out, copy)
        path = copy / "generator" / name
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x10
        path.write_bytes(bytes(data))
        with pytest.raises(UserError, match=f"generator/{name} is not the file this model was saved with"):
            load_model(copy / "generator")
    copy = tmp_path / "copy-record"
    shutil.copytree(out, copy)
    (copy / "generator" / "corpusforge.json").unlink()  # the record the parent's says is there
    with pytest.raises(UserError, match="generator/corpusforge.json is missing"):
        load_model(copy / "generator")
    # an export written before each folder had its record: the parent's entries under generator/ check it
    copy = tmp_path / "copy-older"
    shutil.copytree(out, copy)
    (copy / "generator" / "corpusforge.json").unlink()
    older = {k: v for k, v in parent.items() if k not in ("every_file", "folders")}
    older["file_sha256"] = {f"generator/{name}": own["file_sha256"][name] for name in ("model.safetensors", "tokenizer.json")}
    (copy / "corpusforge.json").write_text(json.dumps(older))
    assert isinstance(load_model(copy / "generator").model, transformers.ElectraForMaskedLM)
    path = copy / "generator" / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match="generator/model.safetensors is not the file this model was saved with"):
        load_model(copy / "generator")


def test_training_rtd_learns_and_saves_both_halves(run_dir):
    result = train_on(config(run_dir, "train.objective=rtd", "train.max_steps=8"))
    info = json.loads((result.model_dir / "config.json").read_text())
    assert info["objective"] == "rtd" and info["electra"]["discriminator_weight"] == 50.0
    assert info["model"]["head_transform"] is False and info["electra"]["generator"]["d_model"] == 16
    losses = [json.loads(line)["loss"] for line in (result.model_dir / "metrics.jsonl").read_text().splitlines()
              if json.loads(line)["split"] == "train"]
    assert losses[-1] < losses[0]
    model, _ = load_pretrained(result.model_dir)
    assert isinstance(model, ReplacedTokenDetection)


def test_rtd_logs_each_half_under_its_own_name_and_no_perplexity(run_dir, capsys):
    """The combined loss mixes a masked-LM loss with 50 x a detection loss: its exponential is no perplexity."""
    result = train_on(config(run_dir, "train.objective=rtd", "train.max_steps=4", "train.log_every=1"))
    records = [json.loads(line) for line in (result.model_dir / "metrics.jsonl").read_text().splitlines()]
    train, val = [r for r in records if r["split"] == "train"], [r for r in records if r["split"] == "val"]
    for r in train:  # one batch per logged step: the combined loss is exactly its two parts
        assert r["loss"] == pytest.approx(r["generator_loss"] + 50.0 * r["discriminator_loss"], rel=1e-4)
        assert 0 <= r["discriminator_accuracy"] <= 1 and 0 < r["replaced_share"] < 0.3
    assert val and "ppl" not in val[-1] and "accuracy" not in val[-1]
    assert {"generator_loss", "generator_accuracy", "discriminator_loss", "discriminator_accuracy",
            "replaced_share"} <= set(val[-1])
    out = capsys.readouterr().out
    assert "discriminator loss" in out and "ppl" not in out


@pytest.mark.parametrize("change,said", [
    ("train.rtd.generator_fraction=0.5", "generator_fraction was 0.25, now 0.5"),
    ("train.rtd.share_embeddings=false", "share_embeddings was True, now False"),
    ("train.rtd.discriminator_weight=10", "discriminator_weight was 50.0, now 10.0")])
def test_resume_refuses_other_electra_generator_settings(run_dir, change, said):
    train_on(config(run_dir, "train.objective=rtd"), stop_at_step=2)
    with pytest.raises(UserError, match=said) as refused:
        train_on(config(run_dir, "train.objective=rtd", change), resume=True)
    assert "\n" not in str(refused.value) and "train.rtd" in str(refused.value)
    assert train_on(config(run_dir, "train.objective=rtd"), resume=True).step == 6  # the same settings resume


def test_rtd_refuses_sentence_pairs(run_dir):
    with pytest.raises(UserError, match="no sentence-pair task"):
        train_on(config(run_dir, "train.objective=rtd", "train.mlm.sop=true"))


def test_discriminator_learns_which_tokens_were_replaced_not_just_the_rate():
    """Text uses only the lower half of the vocabulary; the untrained generator samples from all of it, so a
    replacement from the upper half is obvious. After 200 joint steps the discriminator must pick those out: a
    wrong label (masked rather than replaced), the original sequence fed to the discriminator, or a loss that
    never reaches it would leave it at the replacement rate."""
    torch.manual_seed(0)
    model = electra(vocab_size=72)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1)

    def text():
        ids = torch.randint(5, 37, (16, 32), generator=g)
        return ids, torch.rand(ids.shape, generator=g) < 0.15

    for _ in range(200):
        ids, masked = text()
        _, loss = model(torch.where(masked, 4, ids), torch.where(masked, ids, -100))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    ids, masked = text()
    with torch.no_grad():
        p = torch.sigmoid(model.eval().detect(torch.where(masked, ids + 32, ids)))
    assert p[masked].mean() > 0.8 and p[~masked].mean() < 0.3
