"""A fine-tuned output directory loaded back, and its predictions.

    tuned = load_finetuned("runs/x/finetune/sentiment")
    rows = predict(tuned, examples)     # classify: {"id", "label", "score"}; tag: {"id", "tags", "scores"};
                                        # generate: {"id", "generation"}
"""
from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.export import model_device
from corpusforge.trainers.finetune.data import Example
from corpusforge.trainers.finetune.encode import collate, encode, pad_id
from corpusforge.trainers.finetune.methods import base_path, load_result
from corpusforge.trainers.finetune.metrics import classification_metrics


@dataclasses.dataclass
class Finetuned:
    model: Any  # a transformers model or a peft.PeftModel, eval mode
    tokenizer: Any
    info: dict[str, Any]  # finetune.json

    @property
    def task(self) -> str:
        return self.info["task"]


def load_finetuned(out: str | pathlib.Path, device: str = "cpu") -> Finetuned:
    """``corpusforge finetune``'s output, its weights on ``device`` (auto, cpu or cuda)."""
    import transformers

    from corpusforge.trainers.export import inference_device
    from corpusforge.trainers.model_files import check_tokenizer, loading, not_a_folder, read_json

    out = pathlib.Path(out)
    marker = out / "finetune.json"
    if not marker.is_file():
        what = not_a_folder(out) or "holds no finetune.json"
        raise UserError(f"{out} {what}: not a finished `corpusforge finetune` output (an interrupted one continues "
                        "with --resume)")
    info = read_json(marker, "finetune.json")
    check_result_files(out, info)
    target = inference_device(device)
    with loading(out):  # a malformed or truncated file in it: one line naming the directory
        tokenizer_dir = out / "model" if info["method"] == "full" else base_path(out, info)
        if (tokenizer_dir / "tokenizer.json").exists():
            check_tokenizer(tokenizer_dir / "tokenizer.json")
        model = load_result(out, info)
        tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer_dir)
    if target.type != "cpu":
        model.to(target)
    return Finetuned(model, tokenizer, info)


def check_result_files(out: pathlib.Path, info: dict[str, Any]) -> None:
    """The result's files against ``finetune.json``'s ``file_sha256``: each folder it wrote (``outputs``) holds
    exactly the files recorded (``every_file``; before it was recorded, the weights and tokenizer files it lists)."""
    from corpusforge.trainers.model_files import check_every_file, check_file_digests

    recorded, outputs = info.get("file_sha256"), info.get("outputs")
    if info.get("every_file") is not True or not isinstance(recorded, dict):
        check_file_digests(out, recorded, "finetune.json")
        return
    if not isinstance(outputs, list) or not all(isinstance(w, str) and w and "/" not in w for w in outputs):
        raise UserError(f"{out / 'finetune.json'}: section 'outputs' must list folder names; fine-tune again")
    if any(not isinstance(name, str) or name.split("/", 1)[0] not in outputs for name in recorded):
        check_file_digests(out, recorded, "finetune.json")  # refuses a malformed section in its one line
        raise UserError(f"{out / 'finetune.json'}: section 'file_sha256' names a file outside its outputs; fine-tune "
                        "again")
    for folder in outputs:
        check_every_file(out / folder, {name[len(folder) + 1:]: digest for name, digest in recorded.items()
                                        if name.startswith(f"{folder}/")}, "finetune.json")


@torch.no_grad()
def predict(tuned: Finetuned, examples: list[Example], batch_size: int = 16,
            max_new_tokens: int = 64) -> list[dict[str, Any]]:
    if tuned.task == "generate":
        return _generate(tuned, examples, batch_size, max_new_tokens)
    names = {i: name for name, i in tuned.info["labels"].items()}
    max_length = tuned.info["max_length"]
    prompt = tuned.info["method"] == "prompt" and tuned.task == "tag"
    rows = encode(examples, tuned.tokenizer, tuned.task, tuned.info["arch"], None, max_length,
                  segments=tuned.info.get("segments", False),
                  virtual_tokens=tuned.info["config"]["num_virtual_tokens"] if prompt else 0)
    pad = pad_id(tuned.tokenizer)
    device = model_device(tuned.model)
    out = []
    for start in range(0, len(rows), batch_size):
        batch = collate(rows[start: start + batch_size], pad)
        word_ids = batch.pop("word_ids", None)
        batch = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
        probs = tuned.model(**batch).logits.float().softmax(-1)
        score, best = probs.max(-1)
        for i, example in enumerate(examples[start: start + batch_size]):
            if tuned.task == "classify":
                out.append({"id": example.id, "label": names[int(best[i])], "score": round(float(score[i]), 6)})
                continue
            tags: list[str | None] = [None] * len(example.text)  # words cut off by max_length stay None
            scores: list[float | None] = [None] * len(example.text)
            previous = None
            for position, word in enumerate(word_ids[i].tolist()):
                if word >= 0 and word != previous:
                    tags[word], scores[word] = names[int(best[i, position])], round(float(score[i, position]), 6)
                previous = word
            out.append({"id": example.id, "tags": tags, "scores": scores})
    return out


def _generate(tuned: Finetuned, examples: list[Example], batch_size: int, max_new_tokens: int):
    from corpusforge.trainers.export import LoadedModel
    from corpusforge.trainers.generate import GenerateOptions, generate

    loaded = LoadedModel(tuned.model, tuned.tokenizer, tuned.info["arch"], "finetune")
    # an error names the record (as the data's errors do: its position from 0, and its id), not "prompt N"
    names = [f"record {position} (id {example.id!r})" for position, example in enumerate(examples)]
    if tuned.info["method"] == "prefix":
        from corpusforge.trainers.generate import check_room, encode_prompts, refuse_long_prompts

        # every prompt measured before any is generated (as generate does): an over-long last record stops
        # the command before the others' work, not after it
        refuse_long_prompts(loaded, [e.text for e in examples], True, names)  # a huge one before tokenising it
        batches = [encode_prompts(loaded, [e.text], as_text=True) for e in examples]  # as encoded in training
        check_room(loaded, [int(b["attention_mask"].sum()) for b in batches], max_new_tokens, names)
        return [{"id": e.id, "generation": _greedy_without_cache(tuned, batch, max_new_tokens)}
                for e, batch in zip(examples, batches)]
    # prompts_as_text: a record's literal "</s>" is read as it was in training (finetune.encode)
    options = GenerateOptions(max_new_tokens=max_new_tokens, greedy=True, batch_size=batch_size, prompts_as_text=True)
    rows = generate(loaded, [example.text for example in examples], options, names)
    return [{"id": example.id, "generation": row["completion"]} for example, row in zip(examples, rows)]


def score_predictions(tuned: Finetuned, examples: list[Example], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy and macro-F1 of ``rows`` against the examples' labels (per record or per word); for generate,
    the share of exact matches."""
    labelled = [(e, r) for e, r in zip(examples, rows) if e.target is not None]
    if not labelled:
        return {}
    if tuned.task == "generate":
        exact = sum(r["generation"].strip() == e.target.strip() for e, r in labelled)
        return {"records": len(labelled), "exact_match": exact / len(labelled)}
    labels = tuned.info["labels"]
    gold, guess = [], []
    for example, row in labelled:
        pairs = zip(example.target, row["tags"]) if tuned.task == "tag" else [(example.target, row["label"])]
        for g, p in pairs:
            gold.append(labels.get(g, -1))
            guess.append(labels.get(p, -2) if p is not None else -2)
    metrics = classification_metrics(gold, guess, len(labels))
    return {"records": len(labelled), "accuracy": metrics["val_accuracy"], "macro_f1": metrics["val_macro_f1"]}


def _greedy_without_cache(tuned: Finetuned, batch: dict[str, torch.Tensor], max_new_tokens: int) -> str:
    """Greedy decoding of one encoded prompt (``batch``, checked by ``check_room``) by whole forward passes.
    peft 0.21's prefix tuning hands ``generate`` its prefix as ``past_key_values``, which transformers 5.24
    ignores once it has its own ``cache``: generate would run without the prefix. A forward pass keeps it (as in
    training); the cost, no KV cache, is fine for a fine-tuned model's short answers."""
    tok = tuned.tokenizer
    ids, new = batch["input_ids"], []
    device = ids.device
    seq2seq = tuned.info["arch"] == "encoder_decoder"
    start = tuned.model.generation_config.decoder_start_token_id if seq2seq else None
    decoder = torch.tensor([[start]], device=device) if seq2seq else None
    for _ in range(max_new_tokens):
        if seq2seq:
            logits = tuned.model(input_ids=ids, attention_mask=torch.ones_like(ids), decoder_input_ids=decoder).logits
        else:
            logits = tuned.model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
        token = int(logits[0, -1].argmax())
        if token == tok.eos_token_id:
            break
        new.append(token)
        if seq2seq:
            decoder = torch.cat([decoder, torch.tensor([[token]], device=device)], dim=1)
        else:
            ids = torch.cat([ids, torch.tensor([[token]], device=device)], dim=1)
    return tok.decode(new, skip_special_tokens=True)
