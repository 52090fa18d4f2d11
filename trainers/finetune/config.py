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

from corpusforge.core.config_loader import check, check_finite, setting

TASKS = ("classify", "tag", "generate")
METHODS = ("full", "lora", "adapter", "prefix", "prompt", "elmo")
DEFAULT_EPOCHS = 3
MIN_STEPS = 300  # the measurement behind it: docs/finetune.md, "Defaults that learn at every size"
# The default plan's validations and checkpoints on a set of many short epochs (FinetuneConfig.schedule)
MIN_VALIDATIONS, CHECKPOINTS = 10, 20


@dataclasses.dataclass
class FinetuneConfig:
    model: str = setting("", "The pretrained model: a run's model/ directory (converted through export; an ELMo biLM's used as "
                "it is) or a local transformers directory (a corpusforge export or any checkpoint of a supported "
                "family).")
    task: Literal["classify", "tag", "generate"] = setting("classify", "classify: one label per text (or text pair); tag: one label per word; generate: prompt -> "
                "response (decoders and seq2seq; loss on the response only).")
    method: Literal["full", "lora", "adapter", "prefix", "prompt", "elmo"] = setting("full", "full: every weight; lora: low-rank updates (peft); adapter: bottleneck adapters in each layer; "
                "prefix: trainable keys/values at every layer (peft); prompt: soft prompt tokens at the input (peft); "
                "elmo: an ELMo biLM (objective bilm) frozen, a learned scalar mix of its layers, mean-pooled, "
                "under a classifier (classify only; the only method for a biLM).")
    train: str = setting("", "Training records: a JSONL, CSV or Parquet file.")
    validation: str = setting("", "Validation records (same format); empty: no validation.")
    out: str = setting("", "Output directory (metrics.json, labels.json, adapter/ or model/, checkpoints/).")
    text_field: str = setting("text", "classify: the field holding the text.")
    text_pair_field: str = setting("", "classify: the field holding the second text of a pair (empty: single texts).")
    label_field: str = setting("label", "classify: the label field.")
    tokens_field: str = setting("tokens", "tag: the field holding the list of words.")
    tags_field: str = setting("tags", "tag: the field holding one label per word.")
    prompt_field: str = setting("prompt", "generate: the prompt field.")
    response_field: str = setting("response", "generate: the response field (the only tokens with a loss).")
    id_field: str = setting("id", "Record id field (missing: the record's position).")
    epochs: int = setting(0, "Passes over the training records (0: at least 3, and as many more as min_steps optimizer "
                "steps take on a small set; an explicit number is run as given).")
    min_steps: int = setting(MIN_STEPS, "With epochs 0: the fewest optimizer steps (epochs grow until the run takes "
                "this many; 90 records at batch 16 are 6 steps an epoch, 3 epochs only 18; docs/finetune.md).")
    batch_size: int = setting(16, "Records per optimizer step.")
    lr: float = setting(0.0, "Peak learning rate (0: the default for the method and the model's width d: full 5e-5, lora and "
                "adapter 5e-4, each times (768/d)^1.5, at most 2e-3 full and 1e-2 lora and adapter; prefix 1e-2, "
                "prompt 3e-2, elmo 1e-3; docs/finetune.md).")
    warmup_ratio: float = setting(0.06, "Share of the steps with a linear warmup (then linear decay to 0).")
    keep: Literal["best", "last"] = setting("best", "Which epoch's weights OUT/ keeps: best (the best validation score: "
                "accuracy for classify and tag, token accuracy for generate; ties to the lower loss, then the earlier "
                "epoch) or last. Without validation records: last.")
    early_stopping: int = setting(0, "Stop after this many validations without a better score (0: off; needs "
                "validation records): epochs with an explicit --epochs; only validations after the warmup count.")
    weight_decay: float = setting(0.01, "AdamW weight decay.")
    max_length: int = setting(256, "Tokens per record at most (longer inputs are cut).")
    lora_r: int = setting(8, "LoRA rank.")
    lora_alpha: int = setting(16, "LoRA scaling alpha (the update is scaled by alpha / r).")
    lora_dropout: float = setting(0.0, "Dropout on LoRA's input.")
    target_modules: list[str] = setting(help="Module names LoRA adapts (empty: peft's default for the model type, e.g. query/value for BERT, c_attn for GPT-2).", factory=list)
    num_virtual_tokens: int = setting(20, "prefix / prompt: number of virtual tokens.")
    adapter_size: int = setting(64, "adapter: bottleneck width.")
    adapter_placement: Literal["pfeiffer", "houlsby"] = setting("pfeiffer", "adapter: pfeiffer (one adapter after each feed-forward block) or houlsby (after attention too).")
    merge: bool = setting(False, "lora: also write OUT/merged/, the base with the update merged in (a plain transformers model).")
    seed: int = setting(0, "Seed of head initialisation, shuffling and dropout.")
    device: Literal["auto", "cpu", "cuda"] = setting("auto", "auto: cuda when available, else cpu.")
    resume: bool = setting(False, "Continue from the latest checkpoint in OUT/checkpoints, on the run's own plan (epochs, validations).")
    progress: bool = setting(True, "Show a progress bar.")

    def __post_init__(self) -> None:
        check_finite(self, "finetune")  # every float setting: no infinity (lr=inf)
        check(self.epochs >= 0 and self.min_steps >= 0, "finetune.epochs and finetune.min_steps must be >= 0")
        check(self.batch_size >= 1, "finetune.batch_size must be >= 1")
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

    def planned_epochs(self, steps_per_epoch: int) -> int:
        """``epochs``, or (0, the default) ``DEFAULT_EPOCHS`` and more until the run takes ``min_steps`` optimizer
        steps: a set of 90 records is 6 steps an epoch at batch 16, and 18 steps leave LoRA, adapters and prompt
        tuning near chance where full fine-tuning has learned (peft's own sequence-classification examples train
        20 epochs of 115 steps); the best epoch is kept, so the extra epochs cost time, not accuracy."""
        if self.epochs:
            return self.epochs
        return max(DEFAULT_EPOCHS, -(-self.min_steps // max(steps_per_epoch, 1)))

    def schedule(self, planned_epochs: int, train_records: int, validation_records: int) -> tuple[int, int]:
        """(epochs between validations, epochs between checkpoints): 1 and 1 with an explicit ``epochs`` (the
        per-epoch validation, checkpoint and early stopping it promises). On the default plan a tiny set runs
        hundreds of epochs (4 records: 300 epochs of one step), and validating 400 records and writing a checkpoint
        after each took over 90 % of the run's time. So: validation every k epochs, k the fewest for which it costs
        at most the training between two (a forward pass a record against a training step's forward and backward,
        about 3 forwards), but at least ``MIN_VALIDATIONS`` a run; a checkpoint at every m-th validation, m the
        fewest that keep the run to ``CHECKPOINTS`` (each holds the trainable weights and AdamW's two moments: a
        BERT-base full fine-tuning, 1.3 GB). Both also after the last epoch."""
        if self.epochs:
            return 1, 1
        cost = -(-validation_records // (3 * max(train_records, 1)))  # epochs whose training costs one validation
        validate = max(1, min(cost, planned_epochs // MIN_VALIDATIONS))
        return validate, validate * -(-planned_epochs // (CHECKPOINTS * validate))
