"""``corpusforge train``: pretrain a model on a run's token shards."""
from __future__ import annotations

import argparse
import typing

from corpusforge.cli.options import DefaultsFormatter, choices, common_parser, flag_overrides, overwrite_parser, run_dir_parser
from corpusforge.cli.options import finite
from corpusforge.trainers.config import Objective as ObjectiveName, TrainConfig

_SHORTCUTS = {  # option attribute -> train.* key
    "objective": "objective", "size": "model.size", "family": "model.family", "seq_len": "seq_len",
    "batch_size": "micro_batch_size", "grad_accum": "grad_accum", "max_steps": "max_steps", "lr": "optim.lr",
    "device": "device", "dtype": "dtype", "data_parallel": "data_parallel", "init_from": "init_from",
}


def register(subparsers) -> None:
    train = subparsers.add_parser(
        "train", parents=[common_parser(), run_dir_parser(), overwrite_parser()], formatter_class=DefaultsFormatter,
        help="Pretrain an encoder (MLM), seq2seq (T5 span corruption, BART) or decoder (GPT) model.",
        description="Train on <run_dir>/tokens (the tokenize stage's shards) and write <run_dir>/model: "
                    "checkpoints/, metrics.jsonl, loss_curve.png, and the final model.safetensors with config.json "
                    "and tokenizer.json. Options below are shortcuts for --set train.KEY=VALUE. On several GPUs: "
                    "torchrun --nproc_per_node=N -m corpusforge train ... (see docs/training.md).")
    # The objective registry's names (trainers/registry.py; a test holds train.objective's Literal to it), read
    # from the config module so that the CLI starts without importing torch.
    train.add_argument("--objective", choices=typing.get_args(ObjectiveName), default=argparse.SUPPRESS,
                       help="mlm: BERT masked LM and rtd: ELECTRA replaced-token detection (encoder); span: T5 span "
                            "corruption and bart: BART denoising (encoder-decoder); clm: GPT causal LM and prefixlm: "
                            "prefix LM (decoder); bilm: ELMo's bidirectional LM. Default: train.objective.")
    train.add_argument("--size", choices=choices(TrainConfig, "model.size"), default=argparse.SUPPRESS,
                       help="Model size; default: train.model.size.")
    train.add_argument("--family", choices=choices(TrainConfig, "model.family"), default=argparse.SUPPRESS,
                       help="Architecture recipe; default: the objective's.")
    train.add_argument("--seq-len", type=int, default=argparse.SUPPRESS, help="Tokens per example; default: train.seq_len.")
    train.add_argument("--batch-size", type=int, default=argparse.SUPPRESS,
                       help="Examples per device per micro-step; default: train.micro_batch_size.")
    train.add_argument("--grad-accum", type=int, default=argparse.SUPPRESS,
                       help="Micro-steps per optimizer step; default: train.grad_accum.")
    train.add_argument("--max-steps", type=int, default=argparse.SUPPRESS, help="Optimizer steps; default: train.max_steps.")
    train.add_argument("--lr", type=finite, default=argparse.SUPPRESS, help="Peak learning rate; default: train.optim.lr.")
    train.add_argument("--device", choices=choices(TrainConfig, "device"), default=argparse.SUPPRESS,
                       help="Where to train; default: train.device (auto: cuda when available).")
    train.add_argument("--dtype", choices=choices(TrainConfig, "dtype"), default=argparse.SUPPRESS,
                       help="Autocast dtype; default: train.dtype.")
    train.add_argument("--compile", action="store_true", default=argparse.SUPPRESS,
                       help="torch.compile the training step (fullgraph).")
    train.add_argument("--data-parallel", choices=choices(TrainConfig, "data_parallel"), default=argparse.SUPPRESS,
                       help="Under torchrun: replicate the model (ddp) or shard it (fsdp); default: train.data_parallel.")
    train.add_argument("--checkpoint-activations", action="store_true", default=argparse.SUPPRESS,
                       help="Recompute each block's activations in the backward pass (less memory).")
    train.add_argument("--init-from", metavar="HF_DIR", default=argparse.SUPPRESS,
                       help="Continue pretraining a local transformers checkpoint (e.g. a corpusforge export); "
                            "default: train.init_from (random weights).")
    train.add_argument("--resume", action="store_true", default=argparse.SUPPRESS,
                       help="Continue exactly from the latest checkpoint in <run_dir>/model/checkpoints.")
    train.add_argument("--no-progress", action="store_true", default=argparse.SUPPRESS, help="No progress bar.")
    train.set_defaults(func=cmd_train)


def overrides(args) -> list[str]:
    flags = {"compile": "compile", "resume": "resume", "checkpoint_activations": "checkpoint_activations"}
    out = flag_overrides(args, "train", {**_SHORTCUTS, **{a: k for a, k in flags.items() if getattr(args, a, False)}})
    if getattr(args, "no_progress", False):
        out.append("train.progress=false")
    return out


def cmd_train(args) -> int:
    from corpusforge.config import load_config
    from corpusforge.trainers.train import train_model

    config = load_config(args.config, overrides(args))
    train_model(config.train, config.run_paths())
    return 0
