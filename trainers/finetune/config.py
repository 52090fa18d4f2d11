"""Configuration of ``corpusforge finetune``: the ``finetune`` section.

    finetune:
      model: runs/x/model          # a run's model/ or a transformers directory (e.g. a corpusforge export)
      task: classify               # classify | tag | generate
      method: lora                 # full | lora | adapter | prefix | prompt | elmo (an ELMo biLM)
      train: data/train.jsonl
      validation: data/val.jsonl
      out: runs/x/finetune/sentiment
"""
from __future__ import annotations

import dataclasses
from typing import Literal

from corpusforge.core.config_loader import check

f = dataclasses.field
TASKS = ("classify", "tag", "generate")
METHODS = ("full", "lora", "adapter", "prefix", "prompt", "elmo")


@dataclasses.dataclass
class FinetuneConfig:
    model: str = f(default="", metadata={
        "help": "The pretrained model: a run's model/ directory (converted through export; an ELMo biLM's used as "
                "it is) or a local transformers directory (a corpusforge export or any checkpoint of a supported "
                "family)."})
    task: Literal["classify", "tag", "generate"] = f(default="classify", metadata={
        "help": "classify: one label per text (or text pair); tag: one label per word; generate: prompt -> "
                "response (decoders and seq2seq; loss on the response only)."})
    method: Literal["full", "lora", "adapter", "prefix", "prompt", "elmo"] = f(default="full", metadata={
        "help": "full: every weight; lora: low-rank updates (peft); adapter: bottleneck adapters in each layer; "
                "prefix: trainable keys/values at every layer (peft); prompt: soft prompt tokens at the input (peft); "
                "elmo: an ELMo biLM (objective bilm) frozen, a learned scalar mix of its layers, mean-pooled, "
                "under a classifier (classify only; the only method for a biLM)."})
    train: str = f(default="", metadata={"help": "Training records: a JSONL, CSV or Parquet file."})
    validation: str = f(default="", metadata={"help": "Validation records (same format); empty: no validation."})
    out: str = f(default="", metadata={"help": "Output directory (metrics.json, labels.json, adapter/ or model/, checkpoints/)."})
    text_field: str = f(default="text", metadata={"help": "classify: the field holding the text."})
    text_pair_field: str = f(default="", metadata={"help": "classify: the field holding the second text of a pair (empty: single texts)."})
    label_field: str = f(default="label", metadata={"help": "classify: the label field."})
    tokens_field: str = f(default="tokens", metadata={"help": "tag: the field holding the list of words."})
    tags_field: str = f(default="tags", metadata={"help": "tag: the field holding one label per word."})
    prompt_field: str = f(default="prompt", metadata={"help": "generate: the prompt field."})
    response_field: str = f(default="response", metadata={"help": "generate: the response field (the only tokens with a loss)."})
    id_field: str = f(default="id", metadata={"help": "Record id field (missing: the record's position)."})
    epochs: int = f(default=3, metadata={"help": "Passes over the training records."})
    batch_size: int = f(default=16, metadata={"help": "Records per optimizer step."})
    lr: float = f(default=0.0, metadata={
        "help": "Peak learning rate (0: the default for the method and the model's width d: full 5e-5, lora and "
                "adapter 5e-4, each times 768/d (at most 16x: debug d=64 gets 12x); prefix 1e-2, prompt 3e-2, "
                "elmo 1e-3; docs/finetune.md)."})
    warmup_ratio: float = f(default=0.06, metadata={"help": "Share of the steps with a linear warmup (then linear decay to 0)."})
    keep: Literal["best", "last"] = f(default="best", metadata={
        "help": "Which epoch's weights OUT/ keeps: best (the best validation score: accuracy for classify and tag, "
                "token accuracy for generate; ties to the lower loss, then the earlier epoch) or last. Without "
                "validation records: last."})
    early_stopping: int = f(default=0, metadata={
        "help": "Stop after this many epochs without a better validation score (0: off; needs validation records)."})
    weight_decay: float = f(default=0.01, metadata={"help": "AdamW weight decay."})
    max_length: int = f(default=256, metadata={"help": "Tokens per record at most (longer inputs are cut)."})
    lora_r: int = f(default=8, metadata={"help": "LoRA rank."})
    lora_alpha: int = f(default=16, metadata={"help": "LoRA scaling alpha (the update is scaled by alpha / r)."})
    lora_dropout: float = f(default=0.0, metadata={"help": "Dropout on LoRA's input."})
    target_modules: list[str] = f(default_factory=list, metadata={
        "help": "Module names LoRA adapts (empty: peft's default for the model type, e.g. query/value for BERT, c_attn for GPT-2)."})
    num_virtual_tokens: int = f(default=20, metadata={"help": "prefix / prompt: number of virtual tokens."})
    adapter_size: int = f(default=64, metadata={"help": "adapter: bottleneck width."})
    adapter_placement: Literal["pfeiffer", "houlsby"] = f(default="pfeiffer", metadata={
        "help": "adapter: pfeiffer (one adapter after each feed-forward block) or houlsby (after attention too)."})
    merge: bool = f(default=False, metadata={"help": "lora: also write OUT/merged/, the base with the update merged in (a plain transformers model)."})
    seed: int = f(default=0, metadata={"help": "Seed of head initialisation, shuffling and dropout."})
    device: Literal["auto", "cpu", "cuda"] = f(default="auto", metadata={"help": "auto: cuda when available, else cpu."})
    resume: bool = f(default=False, metadata={"help": "Continue from the latest epoch checkpoint in OUT/checkpoints."})
    progress: bool = f(default=True, metadata={"help": "Show a progress bar."})

    def __post_init__(self) -> None:
        check(self.epochs >= 1 and self.batch_size >= 1, "finetune.epochs and finetune.batch_size must be >= 1")
        check(self.lr >= 0, f"finetune.lr must be >= 0, got {self.lr}")
        check(0 <= self.warmup_ratio < 1, f"finetune.warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        check(self.early_stopping >= 0, f"finetune.early_stopping must be >= 0, got {self.early_stopping}")
        check(self.max_length >= 8, f"finetune.max_length must be >= 8, got {self.max_length}")
        check(self.lora_r >= 1 and self.lora_alpha >= 1, "finetune.lora_r and finetune.lora_alpha must be >= 1")
        check(0 <= self.lora_dropout < 1, f"finetune.lora_dropout must be in [0, 1), got {self.lora_dropout}")
        check(self.num_virtual_tokens >= 1 and self.adapter_size >= 1,
              "finetune.num_virtual_tokens and finetune.adapter_size must be >= 1")
        check(not self.merge or self.method == "lora", "finetune.merge applies to method lora only")

    def learning_rate(self, width: int | None = None) -> float:
        """``lr``, or the default for the method at the model's hidden ``width`` (``defaults.py``)."""
        from corpusforge.trainers.finetune.defaults import default_learning_rate

        return self.lr or default_learning_rate(self.method, width)
