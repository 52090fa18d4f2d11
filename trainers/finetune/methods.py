"""The task model on a base directory, the fine-tuning method applied to it, and the result saved and loaded.

    model = task_model(base_dir, "classify", labels)          # transformers' Auto class for the task
    model = apply_method(model, config, "classify")           # full | lora | prefix | prompt (peft) | adapter | elmo
    save_result(model, out, config, ...); model = load_result(out, info)

LoRA, prefix tuning and prompt tuning are peft's own (``get_peft_model``); their ``OUT/adapter/`` is peft's
format and loads with ``PeftModel.from_pretrained`` on the base. peft has no bottleneck adapters, so those
come from ``adapters.py`` and ``OUT/adapter/`` holds their weights and the task head as safetensors. An ELMo
biLM (no transformers layout) gets ``elmo.py``'s classifier: frozen, with a learned scalar mix; ``OUT/adapter/``
holds the mix and the classifier the same way.
"""
from __future__ import annotations

import inspect
import json
import pathlib
from typing import Any

import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.finetune.adapters import add_adapters
from corpusforge.trainers.finetune.config import FinetuneConfig
from corpusforge.trainers.finetune.elmo import ElmoClassifier, is_bilm

HEADS = ("classifier", "score", "classification_head")  # transformers' names of a task head
ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "corpusforge_adapter.json"


def arch_of(base_dir: str | pathlib.Path) -> str:
    if is_bilm(base_dir):
        return "bilm"
    import transformers

    from corpusforge.trainers.export import arch_of_config

    return arch_of_config(transformers.AutoConfig.from_pretrained(base_dir))


def task_model(base_dir: str | pathlib.Path, task: str, labels: dict[str, int] | None, pad: int | None = None):
    """The base's weights in the task's transformers class (a new, seeded task head for classify and tag); for
    an ELMo biLM, ELMo's frozen classifier."""
    import transformers

    from corpusforge.trainers import model_files

    if not is_bilm(base_dir):  # before anything reads it: an export's files against the SHA-256 it recorded
        model_files.check_export_record(base_dir)
    arch = arch_of(base_dir)
    if arch == "bilm":
        if task != "classify":
            raise UserError(f"an ELMo biLM fine-tunes for --task classify only (a scalar mix of its frozen layers, "
                            f"mean-pooled, under a classifier), not --task {task}; use a transformer run's model")
        return ElmoClassifier.from_dir(base_dir, len(labels))
    if task == "generate":
        if arch == "encoder":
            raise UserError("an encoder (masked LM) does not generate; fine-tune a decoder or seq2seq model for "
                            "--task generate, or use --task classify / tag")
        auto = transformers.AutoModelForCausalLM if arch == "decoder" else transformers.AutoModelForSeq2SeqLM
        return auto.from_pretrained(base_dir, dtype=torch.float32)
    auto = (transformers.AutoModelForSequenceClassification if task == "classify"
            else transformers.AutoModelForTokenClassification)
    id2label = {i: name for name, i in labels.items()}
    try:
        model = auto.from_pretrained(base_dir, dtype=torch.float32, num_labels=len(labels), id2label=id2label,
                                     label2id=dict(labels))
    except ValueError as exc:  # no such class for this model type (e.g. BART token classification)
        raise UserError(f"transformers has no {task} model for this base: {str(exc).splitlines()[0]}") from None
    if model.config.pad_token_id is None and pad is not None:
        model.config.pad_token_id = pad  # a decoder classifies at the last non-pad token
    return model


def takes_segments(base_dir) -> bool:
    """Whether the model has a second segment embedding (BERT with type_vocab_size 2) for text pairs."""
    if is_bilm(base_dir):
        return False
    import transformers

    return getattr(transformers.AutoConfig.from_pretrained(base_dir), "type_vocab_size", 0) >= 2


def head_names(model) -> list[str]:
    """The task head, plus BERT's pooler, which the exported masked LM lacks and so starts untrained."""
    names = [name for name, _ in model.named_children() if name in HEADS]
    if model.config.model_type == "bert" and getattr(getattr(model, "bert", None), "pooler", None) is not None:
        names.append("pooler")
    return names


def check_method(model_dir: str | pathlib.Path, method: str) -> None:
    """An ELMo biLM fine-tunes with method elmo, and method elmo needs one."""
    if is_bilm(model_dir) and method != "elmo":
        raise UserError(f"{model_dir} is an ELMo biLM: fine-tune it with --method elmo (its layers frozen, a learned "
                        f"scalar mix and a classifier trained), not --method {method}")
    if method == "elmo" and not is_bilm(model_dir):
        raise UserError(f"--method elmo needs an ELMo biLM (a run's model/ trained with train.objective=bilm); "
                        f"{model_dir} is not one: use full, lora, adapter, prefix or prompt")


def apply_method(model, config: FinetuneConfig, task: str):
    """``model`` ready to train with ``config.method``: peft's wrapper, or the model itself with adapters (or, for
    elmo, its frozen biLM as it is)."""
    if config.method in ("full", "elmo"):
        return model
    if config.method == "adapter":
        add_adapters(model, config.adapter_size, config.adapter_placement)
        for name in head_names(model):
            module = model.get_submodule(name if name != "pooler" else "bert.pooler")
            module.requires_grad_(True)
        return model
    import peft

    task_type = {"classify": peft.TaskType.SEQ_CLS, "tag": peft.TaskType.TOKEN_CLS}.get(task) or (
        peft.TaskType.SEQ_2_SEQ_LM if model.config.is_encoder_decoder else peft.TaskType.CAUSAL_LM)
    heads = head_names(model) if task != "generate" else []
    if config.method == "lora":
        settings = peft.LoraConfig(task_type=task_type, r=config.lora_r, lora_alpha=config.lora_alpha,
                                   lora_dropout=config.lora_dropout, target_modules=config.target_modules or None,
                                   modules_to_save=heads or None)
    else:
        if config.method == "prefix" and task != "generate":
            model = prefix_ready(model)
        cls = peft.PrefixTuningConfig if config.method == "prefix" else peft.PromptTuningConfig
        settings = cls(task_type=task_type, num_virtual_tokens=config.num_virtual_tokens,
                       modules_to_save=heads or None)
    try:
        return peft.get_peft_model(model, settings)
    except ValueError as exc:
        raise UserError(f"peft cannot apply {config.method} to this {model.config.model_type} model: "
                        f"{str(exc).splitlines()[0]}") from None


_PREFIXED: dict[type, type] = {}


def prefix_ready(model):
    """``model`` (a task model for classify or tag) whose ``forward`` takes ``past_key_values`` and hands it on as
    ``cache``: peft 0.21's prefix tuning of a task head passes the prefix only to a ``forward`` whose signature
    names ``past_key_values`` (``PeftModel._prefix_tuning_forward``), and transformers 5 renamed it ``cache`` in
    every model. A thin subclass of the model's own class (the instance's class is swapped: no weight moves),
    one per class. T5 and BART are refused: peft builds an encoder-decoder's prefix for the decoder's cache
    (huggingface/peft#2989), so it would never reach the encoder that reads the text."""
    if model.config.is_encoder_decoder:
        raise UserError(f"prefix tuning of a {model.config.model_type} classifier or tagger is refused: peft builds "
                        "an encoder-decoder's prefix for its decoder's cache, so it never reaches the encoder that "
                        "reads the text; use --method prompt, lora or adapter")
    cls = type(model)
    if "past_key_values" in inspect.signature(cls.forward).parameters:
        return model
    if cls not in _PREFIXED:
        def forward(self, *args, past_key_values=None, **kwargs):
            if past_key_values is not None:
                kwargs["cache"] = past_key_values
            return cls.forward(self, *args, **kwargs)

        _PREFIXED[cls] = type(cls.__name__, (cls,), {"forward": forward, "__module__": cls.__module__,
                                                      "__qualname__": cls.__qualname__})
    model.__class__ = _PREFIXED[cls]
    return model


def count_parameters(model) -> tuple[int, int]:
    """(trainable, total) parameters, each tensor counted once."""
    seen: dict[int, tuple[int, bool]] = {}
    for param in model.parameters():
        seen[id(param)] = (param.numel(), param.requires_grad)
    return sum(n for n, t in seen.values() if t), sum(n for n, _ in seen.values())


def save_result(model, out: pathlib.Path, config: FinetuneConfig, tokenizer) -> list[str]:
    """What predict loads: OUT/model (full), OUT/adapter (every other method), OUT/merged (lora --merge)."""
    from safetensors.torch import save_file

    written = []
    if config.method == "full":
        model.save_pretrained(out / "model")
        tokenizer.save_pretrained(out / "model")
        written.append("model")
    elif config.method in ("adapter", "elmo"):
        (out / "adapter").mkdir(parents=True, exist_ok=True)
        state = {name: p.detach().cpu().contiguous() for name, p in model.named_parameters() if p.requires_grad}
        save_file(state, str(out / "adapter" / ADAPTER_WEIGHTS))
        settings = ({"size": config.adapter_size, "placement": config.adapter_placement} if config.method == "adapter"
                    else {"scalar_mix": torch.softmax(model.mix.scalars.detach(), 0).tolist(),
                          "gamma": float(model.mix.gamma)})  # for the reader: which layers the task used
        (out / "adapter" / ADAPTER_CONFIG).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        written.append("adapter")
    else:
        model.save_pretrained(out / "adapter")
        written.append("adapter")
        if config.merge:
            merged = model.merge_and_unload()
            merged.save_pretrained(out / "merged")
            tokenizer.save_pretrained(out / "merged")
            written.append("merged")
    return written


def load_result(out: pathlib.Path, info: dict[str, Any]):
    """The fine-tuned model of ``out`` (eval mode), built the way ``save_result`` wrote it."""
    labels = info.get("labels")
    method, task = info["method"], info["task"]
    if method == "full":
        return task_model(out / "model", task, labels).eval()
    model = task_model(base_path(out, info), task, labels, info.get("pad_token_id"))
    if method in ("adapter", "elmo"):
        from safetensors.torch import load_file

        if method == "adapter":
            settings = json.loads((out / "adapter" / ADAPTER_CONFIG).read_text(encoding="utf-8"))
            add_adapters(model, settings["size"], settings["placement"])
        state = load_file(str(out / "adapter" / ADAPTER_WEIGHTS))
        result = model.load_state_dict(state, strict=False)
        if result.unexpected_keys:
            raise UserError(f"{out}/adapter holds weights this base lacks ({result.unexpected_keys[0]}); was it "
                            "fine-tuned from another model?")
        return model.eval()
    import peft

    if method == "prefix" and task != "generate":
        model = prefix_ready(model)
    return peft.PeftModel.from_pretrained(model, out / "adapter").eval()


def base_path(out: pathlib.Path, info: dict[str, Any]) -> pathlib.Path:
    base = pathlib.Path(info["base"])
    base = base if base.is_absolute() else out / base
    if not (base / "config.json").is_file():
        raise UserError(f"the base model of {out} is gone from {base}; put it back or fine-tune again")
    return base
