"""``corpusforge finetune``: a pretrained model trained on a task, fully or parameter-efficiently."""
from __future__ import annotations

import argparse
import json
import sys

from corpusforge.cli.options import DefaultsFormatter, RECORD_LIMIT_HELP, common_parser, flag_overrides
from corpusforge.cli.options import finite, seed

_SHORTCUTS = {  # option attribute -> finetune.* key (same name)
    name: name for name in (
        "model", "task", "method", "train", "validation", "out", "text_field", "text_pair_field", "label_field",
        "tokens_field", "tags_field", "prompt_field", "response_field", "id_field", "epochs", "batch_size", "lr",
        "max_length", "lora_r", "lora_alpha", "lora_dropout", "target_modules", "num_virtual_tokens",
        "adapter_size", "adapter_placement", "seed", "device", "keep", "early_stopping")}


def register(subparsers) -> None:
    finetune = subparsers.add_parser(
        "finetune", parents=[common_parser()], formatter_class=DefaultsFormatter,
        help="Fine-tune a model on a task: classify, tag or generate; full, LoRA, adapters, prefix or prompt tuning.",
        description="Train a pretrained model (a run's model/ or a transformers directory) on labelled records "
                    "(JSONL, CSV or Parquet) and write OUT/: metrics.json (validation accuracy and macro-F1 per "
                    "validation: each epoch with --epochs; by default every k epochs, k the fewest for which "
                    "validating costs at most the training between two, but at least 10 validations a run of 10 "
                    "epochs or more; trainable_params, total_params), labels.json, checkpoints/ (the latest; every epoch with "
                    "--epochs, about 20 a run by default; --resume), "
                    "model/ (full) or adapter/ (peft's format for lora, prefix, prompt; loads with "
                    "peft.PeftModel.from_pretrained on OUT/base), merged/ (lora --merge) and finetune.json. Options "
                    "are shortcuts for --set finetune.KEY=VALUE; defaults come from the finetune section. Record "
                    "files plain or compressed (.gz, .zst, .bz2, .xz). "
                    + RECORD_LIMIT_HELP.format(what="refused in one line"))
    add = finetune.add_argument
    add("--model", metavar="DIR", default=argparse.SUPPRESS, help="A run's model/ directory or a transformers directory.")
    add("--task", choices=["classify", "tag", "generate"], default=argparse.SUPPRESS, help="What to learn; default: finetune.task.")
    add("--method", choices=["full", "lora", "adapter", "prefix", "prompt", "elmo"], default=argparse.SUPPRESS,
        help="Which weights to train (elmo: an ELMo biLM's scalar mix and a classifier); default: "
             "finetune.method.")
    add("--train", metavar="FILE", default=argparse.SUPPRESS, help="Training records (.jsonl, .csv, .parquet).")
    add("--validation", metavar="FILE", default=argparse.SUPPRESS, help="Validation records.")
    add("--out", metavar="OUT", default=argparse.SUPPRESS, help="Output directory.")
    for name in ("text", "text-pair", "label", "tokens", "tags", "prompt", "response", "id"):
        add(f"--{name}-field", default=argparse.SUPPRESS, help=f"Field name; default: finetune.{name.replace('-', '_')}_field.")
    add("--epochs", type=int, default=argparse.SUPPRESS, help="Passes over the training records; default: finetune.epochs.")
    add("--batch-size", type=int, default=argparse.SUPPRESS, help="Records per step; default: finetune.batch_size.")
    add("--lr", type=finite, default=argparse.SUPPRESS,
        help="Peak learning rate (default: the method's, scaled by the model's width; docs/finetune.md).")
    add("--keep", choices=["best", "last"], default=argparse.SUPPRESS,
        help="Keep the best epoch by validation (default) or the last.")
    add("--early-stopping", type=int, default=argparse.SUPPRESS, metavar="N",
        help="Stop after N validations without a better score, counting those after the warmup (0: off); "
             "default: finetune.early_stopping.")
    add("--max-length", type=int, default=argparse.SUPPRESS, help="Tokens per record at most; default: finetune.max_length.")
    add("--lora-r", type=int, default=argparse.SUPPRESS, help="LoRA rank; default: finetune.lora_r.")
    add("--lora-alpha", type=int, default=argparse.SUPPRESS, help="LoRA alpha; default: finetune.lora_alpha.")
    add("--lora-dropout", type=finite, default=argparse.SUPPRESS, help="LoRA dropout; default: finetune.lora_dropout.")
    add("--target-modules", type=lambda s: [m for m in s.split(",") if m], default=argparse.SUPPRESS,
        metavar="A,B", help="Modules LoRA adapts, comma-separated (default: peft's for the model type).")
    add("--num-virtual-tokens", type=int, default=argparse.SUPPRESS, help="prefix / prompt: virtual tokens; default: finetune.num_virtual_tokens.")
    add("--adapter-size", type=int, default=argparse.SUPPRESS, help="adapter: bottleneck width; default: finetune.adapter_size.")
    add("--adapter-placement", choices=["pfeiffer", "houlsby"], default=argparse.SUPPRESS, help="adapter: where; default: finetune.adapter_placement.")
    add("--merge", action="store_true", default=argparse.SUPPRESS, help="lora: also write OUT/merged/.")
    add("--seed", type=seed, default=argparse.SUPPRESS, help="Seed; default: finetune.seed.")
    add("--device", choices=["auto", "cpu", "cuda"], default=argparse.SUPPRESS, help="Where to train (auto: a CUDA GPU when there is one); default: finetune.device.")
    add("--resume", action="store_true", default=argparse.SUPPRESS, help="Continue from the latest checkpoint, on the run's own plan.")
    add("--no-progress", action="store_true", default=argparse.SUPPRESS, help="No progress bar.")
    finetune.set_defaults(func=cmd_finetune)


def overrides(args) -> list[str]:
    out = flag_overrides(args, "finetune", _SHORTCUTS)
    for flag in ("merge", "resume"):
        if getattr(args, flag, False):
            out.append(f"finetune.{flag}=true")
    if getattr(args, "no_progress", False):
        out.append("finetune.progress=false")
    return out


def cmd_finetune(args) -> int:
    from corpusforge.config import load_config
    from corpusforge.cli.hf import quiet_transformers
    from corpusforge.trainers.finetune.train import finetune

    config = load_config(args.config, overrides(args))
    quiet_transformers()
    metrics = finetune(config.finetune, config.output.record_bytes)
    summary = {"kept_epoch": metrics.get("kept_epoch"), **metrics.get("kept", {}),
               "learning_rate": metrics["learning_rate"]}
    if "baseline" in metrics:
        summary["baseline"] = metrics["baseline"]
        summary["beats_baseline"] = metrics["beats_baseline"]
    print(json.dumps({"out": config.finetune.out, "trainable_params": metrics["trainable_params"],
                      "total_params": metrics["total_params"], **summary}))
    for warning in metrics.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    return 0
