"""``corpusforge tokenizer train|report``: train a tokenizer on the clean shards, or show its report."""
from __future__ import annotations

import argparse
import json

from corpusforge.cli.options import DefaultsFormatter, choices, common_parser, flag_overrides, overwrite_parser, run_dir_parser

_FORMAT = DefaultsFormatter


def register(subparsers) -> None:
    from corpusforge.tokenizer.config import TokenizerConfig

    tokenizer = subparsers.add_parser(
        "tokenizer", help="Train a tokenizer on the clean shards, or show its report.",
        description="Tokenizer training with HF tokenizers: byte-level BPE, WordPiece or Unigram, with the special "
                    "tokens of a model family. Subcommands: train, report.")
    commands = tokenizer.add_subparsers(dest="tokenizer_command", metavar="SUBCOMMAND", required=True)

    train = commands.add_parser(
        "train", parents=[common_parser(), run_dir_parser(), overwrite_parser()], formatter_class=_FORMAT,
        help="Train tokenizer.json on <run_dir>/clean.",
        description="Stream the clean shards of a build (or a seeded sample of them) into a tokenizer "
                    "trainer; write <run_dir>/tokenizer/tokenizer.json, tokenizer_config.json and report.json "
                    "(compression, unknown-token share and round trip on held-out documents, longest tokens). "
                    "The options below are shortcuts for --set tokenizer.KEY=VALUE.")
    train.add_argument("--family", choices=choices(TokenizerConfig, "family"), default=argparse.SUPPRESS,
                       help="Model family (special tokens and post-processing); default: tokenizer.family.")
    train.add_argument("--kind", choices=choices(TokenizerConfig, "kind"), default=argparse.SUPPRESS,
                       help="Algorithm; default: tokenizer.kind.")
    train.add_argument("--vocab-size", type=int, default=argparse.SUPPRESS, help="Vocabulary size; default: tokenizer.vocab_size.")
    train.add_argument("--input", default=argparse.SUPPRESS, help="Clean shards (directory or glob); default: <run_dir>/clean.")
    train.add_argument("--output", default=argparse.SUPPRESS, help="Output directory; default: <run_dir>/tokenizer.")
    train.add_argument("--no-progress", action="store_true", help="No progress on stderr.")
    train.set_defaults(func=cmd_train)

    report = commands.add_parser(
        "report", parents=[common_parser(), run_dir_parser()], formatter_class=_FORMAT,
        help="Print the report of a trained tokenizer.",
        description="Print <run_dir>/tokenizer/report.json as a short summary (or as JSON with --json).")
    report.add_argument("--output", default=argparse.SUPPRESS, help="Tokenizer directory; default: <run_dir>/tokenizer.")
    report.add_argument("--json", action="store_true", help="Print the whole report as JSON.")
    report.set_defaults(func=cmd_report)


def cmd_train(args) -> int:
    from corpusforge.config import load_config
    from corpusforge.tokenizer.train import train_tokenizer

    config = load_config(args.config, flag_overrides(args, "tokenizer", {
        "family": "family", "kind": "kind", "vocab_size": "vocab_size", "input": "input", "output": "output"}))
    report = train_tokenizer(config.tokenizer, config.run_paths(), seq_len=config.train.seq_len,
                             progress=not args.no_progress)
    output = config.tokenizer.output or f"{config.run_dir}/tokenizer"
    print(f"tokenizer written to {output}/tokenizer.json", flush=True)
    print(format_report(report), flush=True)
    return 0


def cmd_report(args) -> int:
    from corpusforge.config import load_config
    from corpusforge.core.errors import UserError
    from corpusforge.core import files

    config = load_config(args.config, flag_overrides(args, "tokenizer", {}))
    output = getattr(args, "output", None) or config.tokenizer.output or files.join(config.run_dir, "tokenizer")
    path = files.join(output, "report.json")
    if not files.exists(path):
        raise UserError(f"{path} does not exist; run `corpusforge tokenizer train` first")
    report = json.loads(files.read_bytes(path).decode("utf-8"))
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_report(report))
    return 0


def format_report(report: dict) -> str:
    held = report["heldout"]
    lines = [
        f"{report['kind']} tokenizer for {report['family']} models: vocabulary {report['vocab_size']:,} "
        f"(asked {report['requested_vocab_size']:,}), trained on {report['training']['documents']:,} documents "
        f"({report['training']['bytes'] / 1e6:.1f} MB) in {report['training']['seconds']:.1f} s",
    ]
    if held["documents"]:
        lines.append(
            f"held out {held['documents']:,} documents: {held['chars_per_token']} chars/token, "
            f"{held['bytes_per_token']} bytes/token, unknown {100 * held['unk_share']:.3f}% of tokens, "
            f"round trip {100 * held['round_trip_share']:.1f}% of documents")
    special = ", ".join(f"{k}={v}" for k, v in report["special_tokens"].items() if not k.startswith("extra_id_"))
    sentinels = sum(1 for k in report["special_tokens"] if k.startswith("extra_id_"))
    lines.append(f"special tokens: {special}" + (f", {sentinels} sentinels <extra_id_N>" if sentinels else ""))
    lines.append("longest tokens: " + ", ".join(repr(t["text"]) for t in report["longest_tokens"][:5]))
    return "\n".join(lines)
