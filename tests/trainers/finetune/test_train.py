"""finetune on debug models: every task x method learns a trivially learnable task, trains exactly the
parameters its method should, and its saved result reloads to the same predictions."""
import json

import pytest
import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.finetune.config import FinetuneConfig
from corpusforge.trainers.finetune.data import read_records, task_examples
from corpusforge.trainers.finetune.predict import load_finetuned, predict, score_predictions
from corpusforge.trainers.finetune.train import finetune
from tests.trainers.finetune.conftest import interrupt_at_epoch

D, LAYERS, R, VIRTUAL, BOTTLENECK = 64, 2, 4, 4, 8  # debug size; the options every test passes

# Trainable parameters each method should have on the debug models (2 labels), counted by hand:
# LoRA r x (in + out) per adapted projection (peft's defaults: BERT query and value, GPT-2 c_attn 64 -> 192);
# prompt: one vector per virtual token; prefix: a key and a value per virtual token and layer; a Pfeiffer
# adapter (d x s + s) + (s x d + d) per layer; plus the task head (and BERT's pooler, new in the classifier).
HEAD = {("bert", "classify"): D * 2 + 2 + D * D + D, ("gpt2", "classify"): D * 2,
        ("bert", "tag"): D * 2 + 2, ("gpt2", "tag"): D * 2 + 2}
METHOD = {("bert", "lora"): LAYERS * 2 * R * (D + D), ("gpt2", "lora"): LAYERS * R * (D + 3 * D),
          "prompt": VIRTUAL * D, "prefix": VIRTUAL * LAYERS * 2 * D, "adapter": LAYERS * (2 * D * BOTTLENECK + BOTTLENECK + D)}
LR = {"full": 1e-3, "lora": 1e-2, "adapter": 1e-2, "prefix": 3e-2, "prompt": 3e-2}


def run(bases, task_files, tmp_path, family, task, method, **options):
    train, val = task_files[task]
    settings = dict(model=str(bases[family]), task="classify" if task == "pair" else task, method=method,
                    train=str(train), validation=str(val), out=str(tmp_path / "out"), epochs=4, batch_size=8,
                    lr=LR[method], lora_r=R, num_virtual_tokens=VIRTUAL, adapter_size=BOTTLENECK, progress=False,
                    text_pair_field="text2" if task == "pair" else "")
    settings.update(options)
    config = FinetuneConfig(**settings)
    return config, finetune(config)


def expected_trainable(family, task, method):
    return METHOD.get((family, method), METHOD.get(method)) + HEAD[family, task]


def check_reload(config, metrics):
    """The saved result, loaded back, scores the validation file as the kept epoch did."""
    tuned = load_finetuned(config.out)
    examples = task_examples(read_records(config.validation), config, config.validation)
    rows = predict(tuned, examples, batch_size=5)
    scores = score_predictions(tuned, examples, rows)
    assert scores["accuracy"] == pytest.approx(metrics["kept"]["val_accuracy"])
    return tuned, rows


# Not BERT with adapters, prompt or prefix tuning: in an untrained BERT the [CLS] position barely sees the other tokens (small attention
# values against a normalised embedding), and adapters act per position and a soft prompt only adds positions, so they need pretrained attention
# for this task; tagging tests BERT's adapters instead.
@pytest.mark.parametrize("family,method", [("bert", m) for m in ("full", "lora")]
                         + [("gpt2", m) for m in ("full", "lora", "adapter", "prompt", "prefix")])
def test_classify_learns_trains_the_right_parameters_and_reloads(bases, task_files, tmp_path, family, method):
    config, metrics = run(bases, task_files, tmp_path, family, "classify", method)
    assert metrics["epochs"][-1]["val_accuracy"] == 1.0
    assert metrics["epochs"][-1]["val_macro_f1"] == 1.0
    if method == "full":
        assert metrics["trainable_params"] == metrics["total_params"]
    else:
        assert metrics["trainable_params"] == expected_trainable(family, "classify", method)
    _, rows = check_reload(config, metrics)
    assert set(rows[0]) == {"id", "label", "score"} and rows[0]["label"] in ("cat", "dog")
    saved = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert [e["epoch"] for e in saved["epochs"]] == [1, 2, 3, 4]
    assert json.loads((tmp_path / "out" / "labels.json").read_text()) == {"cat": 0, "dog": 1}


def test_prefix_tuning_a_bert_classifier_trains_the_prefix_and_the_head_and_reloads(bases, task_files, tmp_path):
    # BERT's forward names the prefix `cache` (transformers 5); the subclass hands peft's past_key_values on
    config, metrics = run(bases, task_files, tmp_path, "bert", "classify", "prefix", epochs=1)
    assert metrics["trainable_params"] == expected_trainable("bert", "classify", "prefix")
    tuned, _ = check_reload(config, metrics)
    base = tuned.model.get_base_model()
    assert "past_key_values" in __import__("inspect").signature(base.forward).parameters
    batch = tuned.tokenizer(["cat cat cat", "dog dog dog"], return_tensors="pt")
    with torch.no_grad():
        prefixed = tuned.model(**batch).logits
        plain = base(**batch).logits  # the base and the trained head without the prefix: other logits
    assert not torch.allclose(prefixed, plain)


def test_sentence_pairs_reach_the_second_text(bases, task_files, tmp_path):
    config, metrics = run(bases, task_files, tmp_path, "bert", "pair", "full")
    assert metrics["epochs"][-1]["val_accuracy"] == 1.0
    check_reload(config, metrics)


@pytest.mark.parametrize("family,method", [("bert", "full"), ("bert", "lora"), ("bert", "adapter"),
                                           ("bert", "prompt"), ("gpt2", "prompt"), ("bert", "prefix"),
                                           ("gpt2", "prefix")])
def test_tag_learns_word_labels_on_first_pieces(bases, task_files, tmp_path, family, method):
    config, metrics = run(bases, task_files, tmp_path, family, "tag", method)
    assert metrics["epochs"][-1]["val_accuracy"] == 1.0
    if method != "full":
        assert metrics["trainable_params"] == expected_trainable(family, "tag", method)
    _, rows = check_reload(config, metrics)
    assert len(rows[0]["tags"]) == 4 and set(rows[0]["tags"]) <= {"A", "O"}


@pytest.mark.parametrize("family,method,lr", [("gpt2", "full", 3e-3), ("gpt2", "lora", 1e-2), ("gpt2", "adapter", 3e-2),
                                              ("gpt2", "prefix", 0.3), ("t5", "lora", 1e-2), ("bart", "full", 3e-3)])
def test_generate_learns_the_response_and_generates_it(bases, task_files, tmp_path, family, method, lr):
    config, metrics = run(bases, task_files, tmp_path, family, "generate", method, epochs=8, lr=lr)
    assert metrics["epochs"][-1]["val_token_accuracy"] == 1.0
    if family == "gpt2" and method != "full":
        assert metrics["trainable_params"] == METHOD.get((family, method), METHOD.get(method))
    tuned = load_finetuned(config.out)
    examples = task_examples(read_records(config.validation), config, config.validation)
    rows = predict(tuned, examples, batch_size=4, max_new_tokens=4)
    assert score_predictions(tuned, examples, rows)["exact_match"] == 1.0


@pytest.mark.parametrize("method", ["prefix", "lora"])
def test_a_prompt_too_long_for_the_model_is_named_by_its_record_before_any_is_generated(bases, task_files, tmp_path,
                                                                                         method):
    # Before: prefix tuning checked one prompt at a time, so every over-long record was "prompt 1" (after the
    # records before it were generated); the other methods said "prompt 3" for the record at position 2.
    config, _ = run(bases, task_files, tmp_path, "gpt2", "generate", method, epochs=1)
    tuned = load_finetuned(config.out)
    records = [{"id": "a", "prompt": "the cat"}, {"id": "b", "prompt": "the dog"},
               {"id": "c", "prompt": "the cat " * 40}, {"id": "d", "prompt": "the dog"}]
    examples = task_examples(records, config, "p.jsonl", labelled=False)
    with pytest.raises(UserError, match=r"^record 2 \(id 'c'\) is \d+ tokens; the model reads \d+ at most") as info:
        predict(tuned, examples, batch_size=1, max_new_tokens=2)
    assert "\n" not in str(info.value)


def test_prompt_tuning_a_decoder_trains_only_the_soft_prompt_and_reloads(bases, task_files, tmp_path):
    """An untrained decoder gives near-uniform next tokens, and a soft prompt alone does not turn that into the
    task in a test's budget (prefix tuning, which reaches every layer, does); what is checked here is that it
    trains, trains only the prompt, and that the saved prompt is the trained one."""
    from corpusforge.trainers.finetune.encode import encode, pad_id
    from corpusforge.trainers.finetune.train import evaluate_rows

    config, metrics = run(bases, task_files, tmp_path, "gpt2", "generate", "prompt", epochs=3, lr=0.3)
    losses = [e["val_loss"] for e in metrics["epochs"]]
    assert losses[-1] < losses[0]
    assert metrics["trainable_params"] == VIRTUAL * D
    tuned = load_finetuned(config.out)
    examples = task_examples(read_records(config.validation), config, config.validation)
    rows = encode(examples, tuned.tokenizer, "generate", "decoder", None, config.max_length)
    again = evaluate_rows(tuned.model, rows, "generate", pad_id(tuned.tokenizer), "cpu", 0, 8)
    assert again["val_loss"] == pytest.approx(losses[-1], rel=1e-5)


def test_peft_adapter_loads_on_the_exported_base_with_peft_itself(bases, task_files, tmp_path):
    import peft
    import transformers

    config, _ = run(bases, task_files, tmp_path, "bert", "classify", "lora", merge=True)
    out = tmp_path / "out"
    base = transformers.AutoModelForSequenceClassification.from_pretrained(out / "base", num_labels=2)
    plain = peft.PeftModel.from_pretrained(base, out / "adapter").eval()
    merged = transformers.AutoModelForSequenceClassification.from_pretrained(out / "merged").eval()
    tuned = load_finetuned(out)
    batch = tuned.tokenizer(["cat cat cat", "dog dog dog", "the river"], padding=True, return_tensors="pt")
    with torch.no_grad():
        ours = tuned.model(**batch).logits
        torch.testing.assert_close(plain(**batch).logits, ours)
        torch.testing.assert_close(merged(**batch).logits, ours, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("resume_epochs", [3, 0])
def test_resume_after_an_interrupted_epoch_gives_the_uninterrupted_run(bases, task_files, tmp_path, monkeypatch,
                                                                       resume_epochs):
    """Resumed with the default flags (``resume_epochs`` 0), a run planned for 3 epochs (the default before min_steps)
    was re-planned (300 steps: 50 epochs of 6) and loaded the old schedule into the new one (47 epochs at learning
    rate 0, or a KeyError traceback where the warmup differed). Now the checkpoint's plan holds; another --epochs is
    refused in one line."""
    _, straight = run(bases, task_files, tmp_path / "a", "gpt2", "classify", "lora", epochs=3)
    restore = interrupt_at_epoch(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        run(bases, task_files, tmp_path / "b", "gpt2", "classify", "lora", epochs=3)
    assert not (tmp_path / "b" / "out" / "finetune.json").exists()
    restore()
    if not resume_epochs:
        with pytest.raises(UserError, match="planned for 3 epochs; resume it without --epochs"):
            run(bases, task_files, tmp_path / "b", "gpt2", "classify", "lora", epochs=5, resume=True)
    _, resumed = run(bases, task_files, tmp_path / "b", "gpt2", "classify", "lora", epochs=resume_epochs, resume=True)
    assert resumed["planned_epochs"] == 3
    assert resumed["epochs"] == [{**e, "seconds": r["seconds"]} for e, r in zip(straight["epochs"], resumed["epochs"])]
    assert resumed["kept_epoch"] == straight["kept_epoch"] and resumed["kept"] == straight["kept"]


def test_the_best_epoch_is_kept_and_early_stopping_stops_after_the_patience(bases, task_files, tmp_path, monkeypatch):
    import corpusforge.trainers.finetune.train as train_module

    scripted = iter([0.5, 0.7, 0.6, 0.6, 0.9])  # epoch 2 is the best; 2 epochs without a better one stop the run
    weights = {}

    def evaluate(model, *args):
        weights[len(weights) + 1] = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
        return {"val_loss": 1.0, "val_accuracy": next(scripted), "val_macro_f1": 0.5}

    monkeypatch.setattr(train_module, "evaluate_rows", evaluate)
    config, metrics = run(bases, task_files, tmp_path, "gpt2", "classify", "lora", epochs=5, early_stopping=2)
    assert [e["epoch"] for e in metrics["epochs"]] == [1, 2, 3, 4] and metrics["stopped_early"]
    # a warning states what ran, not the plan (it said "after 30 optimizer steps (5 epochs)")
    said = [w for w in metrics["warnings"] if "baseline" in w]
    assert said and all("optimizer steps (4 epochs of the 5 planned)" in w for w in said), metrics["warnings"]
    assert metrics["kept_epoch"] == 2 and metrics["kept"]["val_accuracy"] == 0.7
    tuned = load_finetuned(config.out)
    saved = {n: p.detach() for n, p in tuned.model.named_parameters() if n in weights[2]}
    for name, value in saved.items():  # the saved adapter holds epoch 2's weights, not epoch 4's
        assert torch.equal(value, weights[2][name]), name
    assert saved and any(not torch.equal(weights[2][n], weights[4][n]) for n in saved)


def test_misuse_is_a_one_line_error(bases, task_files, tmp_path):
    for family in ("t5", "bart"):  # an encoder-decoder's prefix never reaches its encoder
        with pytest.raises(UserError, match="prefix tuning of a .* classifier or tagger is refused: peft builds"):
            run(bases, task_files, tmp_path / family, family, "classify", "prefix")
    with pytest.raises(UserError, match="does not generate"):
        run(bases, task_files, tmp_path / "b", "bert", "generate", "full")
    with pytest.raises(UserError, match="no field 'sentence'"):
        run(bases, task_files, tmp_path / "c", "bert", "classify", "full", text_field="sentence")
    config, _ = run(bases, task_files, tmp_path / "d", "bert", "classify", "full", epochs=1)
    with pytest.raises(UserError, match="already holds a finished"):
        finetune(config)


@pytest.mark.parametrize("method,damaged", [("lora", "adapter/adapter_model.safetensors"),
                                            ("full", "model/model.safetensors"), ("full", "model/tokenizer.json")])
def test_a_changed_byte_in_a_finetuned_result_is_refused(bases, task_files, tmp_path, method, damaged):
    """finetune.json records the SHA-256 of the result's weights and tokenizer: predict refuses a changed byte in
    one line instead of predicting with other weights than the ones the run kept."""
    config, _ = run(bases, task_files, tmp_path, "gpt2", "classify", method, epochs=1)
    assert damaged in json.loads((tmp_path / "out" / "finetune.json").read_text())["file_sha256"]
    path = tmp_path / "out" / damaged
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x04
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match=f"{damaged} is not the file this model was saved with") as info:
        load_finetuned(config.out)
    assert "\n" not in str(info.value)


def _edit_alpha(out):
    settings = json.loads((out / "adapter" / "adapter_config.json").read_text())
    settings["lora_alpha"] *= 4  # the adapter's update scaled 4 x: other predictions, loaded without a sign before
    (out / "adapter" / "adapter_config.json").write_text(json.dumps(settings))
    return "adapter/adapter_config.json is not the file this model was saved with"


def _added_index(out):
    (out / "model" / "adapter_config.json").write_text("{}")  # transformers would load an adapter onto the model
    return "model/adapter_config.json is not a file this model was saved with"


def _gone_tokenizer_config(out):
    (out / "model" / "tokenizer_config.json").unlink()
    return "model/tokenizer_config.json is missing, but finetune.json records it"


@pytest.mark.parametrize("method,damage", [("lora", _edit_alpha), ("full", _added_index), ("full", _gone_tokenizer_config)],
                         ids=["lora-alpha-edited", "adapter-config-added", "tokenizer-config-gone"])
def test_every_file_of_a_finetuned_result_is_checked(bases, task_files, tmp_path, method, damage):
    """finetune.json records every file of each folder the result has (``every_file``): a changed setting, a missing
    file or an unexpected one is refused in one line, as a changed weight is."""
    config, _ = run(bases, task_files, tmp_path, "gpt2", "classify", method, epochs=1)
    said = damage(tmp_path / "out")
    with pytest.raises(UserError, match=said) as info:
        load_finetuned(config.out)
    assert "\n" not in str(info.value)


def test_a_start_that_failed_before_training_can_be_run_again_into_the_same_out(bases, task_files, tmp_path):
    """A start refused on its data (or on its model) has written only OUT's marker (and maybe base/): the user fixes
    the mistake and runs the command again, perhaps on another --model. Before, that run was refused ("already holds a fine-tuning run;
    pass --resume") and --resume was refused too ("holds no checkpoint; run without --resume"): no way on but
    deleting the folder by hand."""
    with pytest.raises(UserError, match="no field 'sentence'"):
        run(bases, task_files, tmp_path, "bert", "classify", "full", epochs=1, text_field="sentence")
    assert (tmp_path / "out" / ".corpusforge-run.json").is_file()
    assert json.loads((tmp_path / "out" / "base" / "config.json").read_text())["model_type"] == "bert"
    # run again on another --model: base/ is that model's export, not the first attempt's
    _, metrics = run(bases, task_files, tmp_path, "gpt2", "classify", "full", epochs=1)
    assert [e["epoch"] for e in metrics["epochs"]] == [1]
    assert json.loads((tmp_path / "out" / "base" / "config.json").read_text())["model_type"] == "gpt2"
    assert json.loads((tmp_path / "out" / "model" / "config.json").read_text())["model_type"] == "gpt2"
    # a folder holding a checkpoint is still a run to resume, never started over
    (tmp_path / "out" / "finetune.json").unlink()
    with pytest.raises(UserError, match="pass --resume"):
        run(bases, task_files, tmp_path, "gpt2", "classify", "full", epochs=1)


def test_a_finetuning_into_an_out_another_command_holds_is_refused_naming_it(bases, task_files, tmp_path):
    """Two fine-tunings into one OUT interleaved checkpoints and wrote OUT's marker over each other; now OUT is held
    for the whole run, as a run directory is."""
    from tests.lock_holder import held_by_another_process

    with held_by_another_process(tmp_path / "out", "finetune") as pid:
        with pytest.raises(UserError, match=rf"in use by `corpusforge finetune` \(pid {pid} on "):
            run(bases, task_files, tmp_path, "gpt2", "classify", "full", epochs=1)
    assert not (tmp_path / "out" / ".corpusforge-run.json").exists()
    _, metrics = run(bases, task_files, tmp_path, "gpt2", "classify", "full", epochs=1)
    assert [e["epoch"] for e in metrics["epochs"]] == [1] and not (tmp_path / "out" / ".corpusforge.lock").exists()


def tiny_set(tmp_path, n_val=64):
    """4 training records (one optimizer step an epoch at the default batch) beside a larger validation set."""
    from tests.trainers.finetune.conftest import task_records, write_jsonl

    tmp_path.mkdir(parents=True, exist_ok=True)
    return (write_jsonl(tmp_path / "train.jsonl", task_records("classify", 4, 0)),
            write_jsonl(tmp_path / "val.jsonl", task_records("classify", n_val, 1)))


def counting(monkeypatch):
    """Counts validations and checkpoints written, calling the real ones."""
    import corpusforge.trainers.finetune.train as train_module

    counts = {"validations": 0, "checkpoints": 0}
    real_evaluate, real_save = train_module.evaluate_rows, train_module.ckpt.save_checkpoint

    def evaluate(*args, **kwargs):
        counts["validations"] += 1
        return real_evaluate(*args, **kwargs)

    def save(*args, **kwargs):
        counts["checkpoints"] += 1
        return real_save(*args, **kwargs)

    monkeypatch.setattr(train_module, "evaluate_rows", evaluate)
    monkeypatch.setattr(train_module.ckpt, "save_checkpoint", save)
    return counts


def test_a_tiny_set_on_the_default_plan_validates_and_checkpoints_a_bounded_number_of_times(bases, tmp_path,
                                                                                              monkeypatch):
    """4 training records are 300 epochs of one step on the default plan (min_steps): it validated the 400
    validation records and wrote a checkpoint after each of the 300 (3 min, 9.6 s of it training). Now every 30
    epochs (10 validations, 10 checkpoints), and the run still learns the task."""
    train, val = tiny_set(tmp_path, n_val=400)
    counts = counting(monkeypatch)
    config = FinetuneConfig(model=str(bases["bert"]), task="classify", train=str(train), validation=str(val),
                            out=str(tmp_path / "out"), progress=False, device="cpu")
    metrics = finetune(config)
    assert counts == {"validations": 10, "checkpoints": 10}, counts  # were 300 and 300
    assert metrics["planned_epochs"] == 300 and metrics["optimizer_steps"] == 300  # the plan is unchanged
    assert metrics["evaluate_every"] == metrics["checkpoint_every"] == 30
    assert [e["epoch"] for e in metrics["epochs"]] == list(range(30, 301, 30))
    assert [e["step"] for e in metrics["epochs"]] == list(range(30, 301, 30))
    assert metrics["kept"]["val_accuracy"] == 1.0, metrics["epochs"]
    # an explicit --epochs keeps its validation and checkpoint every epoch
    counts.update(validations=0, checkpoints=0)
    run(bases, {"classify": (train, val)}, tmp_path / "explicit", "bert", "classify", "full", epochs=5, batch_size=16)
    assert counts == {"validations": 5, "checkpoints": 5}, counts


def test_early_stopping_waits_for_the_warmup_to_end(bases, tmp_path, monkeypatch):
    """With one step an epoch and half the steps warmup, the best validation comes first and none is better after:
    patience 2 stopped the run at epoch 3, at 3/5 of its rate. Only validations after the warmup (5 steps) count."""
    import corpusforge.trainers.finetune.train as train_module

    scripted = iter([0.9] + [0.5] * 9)
    monkeypatch.setattr(train_module, "evaluate_rows", lambda *a: {"val_loss": 1.0, "val_accuracy": next(scripted),
                                                                   "val_macro_f1": 0.5})
    train, val = tiny_set(tmp_path)
    _, metrics = run(bases, {"classify": (train, val)}, tmp_path, "gpt2", "classify", "lora", epochs=10,
                     batch_size=16, warmup_ratio=0.5, early_stopping=2)
    assert [e["epoch"] for e in metrics["epochs"]] == [1, 2, 3, 4, 5, 6, 7] and metrics["stopped_early"]  # was 1-3
    assert metrics["warmup_steps"] == 5
    assert metrics["kept_epoch"] == 1


def test_resume_on_the_default_plan_continues_its_validation_schedule(bases, tmp_path, monkeypatch):
    """A default-plan run interrupted between two checkpoints (in epoch 16 of 40: validated every epoch, 8
    validation records cost less than an epoch's training, and a checkpoint every 2) resumes from the latest (14,
    validated again: 15) and ends as the uninterrupted run did: the same validations, the same kept epoch."""
    train, val = tiny_set(tmp_path, n_val=8)
    files = {"classify": (train, val)}
    options = dict(epochs=0, batch_size=16, min_steps=40)
    _, straight = run(bases, files, tmp_path / "a", "gpt2", "classify", "lora", **options)
    assert [e["epoch"] for e in straight["epochs"]] == list(range(1, 41))
    restore = interrupt_at_epoch(monkeypatch, 16)
    with pytest.raises(KeyboardInterrupt):
        run(bases, files, tmp_path / "b", "gpt2", "classify", "lora", **options)
    assert [p.name for p in (tmp_path / "b" / "out" / "checkpoints").iterdir()] == ["step-00000014.pt"]  # was 15
    assert straight["planned_epochs"] == 40 and (straight["evaluate_every"], straight["checkpoint_every"]) == (1, 2)
    restore()
    # resumed under another default (min_steps): the checkpoint's plan, not a new one
    _, resumed = run(bases, files, tmp_path / "b", "gpt2", "classify", "lora", epochs=0, batch_size=16,
                     min_steps=300, resume=True)
    assert resumed["planned_epochs"] == 40 and (resumed["evaluate_every"], resumed["checkpoint_every"]) == (1, 2)
    assert resumed["epochs"] == [{**e, "seconds": r["seconds"]} for e, r in zip(straight["epochs"], resumed["epochs"])]
    assert len(resumed["epochs"]) == 40
    assert resumed["kept_epoch"] == straight["kept_epoch"] and resumed["kept"] == straight["kept"]
