"""``corpusforge tokenizer train|report`` and ``corpusforge tokenize``."""
from __future__ import annotations

import argparse
import json

from pipeline.cli_common import common_parser

_FORMAT = argparse.ArgumentDefaultsHelpFormatter


def register(subparsers) -> None:
    tokenizer = subparsers.add_parser(
        "tokenizer", help="Train a tokenizer on the clean shards, or show its report.",
        description="Tokenizer training with HF tokenizers: byte-level BPE, WordPiece or Unigram, with the special "
                    "tokens of a model family. Subcommands: train, report.")
    commands = tokenizer.add_subparsers(dest="tokenizer_command", metavar="SUBCOMMAND", required=True)

    train = commands.add_parser(
        "train", parents=[common_parser()], formatter_class=_FORMAT,
        help="Train tokenizer.json on <run_dir>/clean.",
        description="Stream the clean Arrow shards of a build (or a seeded sample of them) into a tokenizer "
                    "trainer; write <run_dir>/tokenizer/tokenizer.json, tokenizer_config.json and report.json "
                    "(compression, unknown-token share and round trip on held-out documents, longest tokens). "
                    "The options below are shortcuts for --set tokenizer.KEY=VALUE.")
    train.add_argument("--family", choices=["encoder", "t5", "bart", "decoder"], default=argparse.SUPPRESS,
                       help="Model family (special tokens and post-processing); default: tokenizer.family.")
    train.add_argument("--kind", choices=["auto", "bpe", "wordpiece", "unigram"], default=argparse.SUPPRESS,
                       help="Algorithm; default: tokenizer.kind.")
    train.add_argument("--vocab-size", type=int, default=argparse.SUPPRESS, help="Vocabulary size; default: tokenizer.vocab_size.")
    train.add_argument("--input", default=argparse.SUPPRESS, help="Clean shards (directory or glob); default: <run_dir>/clean.")
    train.add_argument("--output", default=argparse.SUPPRESS, help="Output directory; default: <run_dir>/tokenizer.")
    train.add_argument("--no-progress", action="store_true", help="No progress on stderr.")
    train.set_defaults(func=cmd_train)

    report = commands.add_parser(
        "report", parents=[common_parser()], formatter_class=_FORMAT,
        help="Print the report of a trained tokenizer.",
        description="Print <run_dir>/tokenizer/report.json as a short summary (or as JSON with --json).")
    report.add_argument("--output", default=argparse.SUPPRESS, help="Tokenizer directory; default: <run_dir>/tokenizer.")
    report.add_argument("--json", action="store_true", help="Print the whole report as JSON.")
    report.set_defaults(func=cmd_report)

    tokenize = subparsers.add_parser(
        "tokenize", parents=[common_parser()], formatter_class=_FORMAT,
        help="Encode the clean shards into train/val token shards for the trainer.",
        description="A Beam pipeline: encode <run_dir>/clean with <run_dir>/tokenizer/tokenizer.json into "
                    "<run_dir>/tokens/{train,val}/part-*.arrow (id, tokens without special tokens; sorted by id) "
                    "and tokens/manifest.json. Documents go to val by a stable hash of their id. Beam flags "
                    "(--runner, --direct_num_workers=2, ...) after the options pass through to Beam.")
    tokenize.add_argument("--val-fraction", type=float, default=argparse.SUPPRESS,
                          help="Share of documents in val; default: tokenize.val_fraction.")
    tokenize.add_argument("--tokenizer", default=argparse.SUPPRESS, help="tokenizer.json; default: <run_dir>/tokenizer/tokenizer.json.")
    tokenize.add_argument("--input", default=argparse.SUPPRESS, help="Clean shards; default: <run_dir>/clean.")
    tokenize.add_argument("--output", default=argparse.SUPPRESS, help="Output directory; default: <run_dir>/tokens.")
    tokenize.add_argument("--no-progress", action="store_true", help="No progress on stderr.")
    tokenize.set_defaults(func=cmd_tokenize, accepts_beam_args=True)


def _overrides(args, section: str, names: dict[str, str]) -> list[str]:
    out = list(args.set)
    for attr, key in names.items():
        value = getattr(args, attr, None)
        if value is not None:
            out.append(f"{section}.{key}={json.dumps(value) if isinstance(value, str) else value}")
    return out


def cmd_train(args) -> int:
    from pipeline.config import load_config
    from tokenizer.train import run_train

    config = load_config(args.config, _overrides(args, "tokenizer", {
        "family": "family", "kind": "kind", "vocab_size": "vocab_size", "input": "input", "output": "output"}))
    report = run_train(config, progress=not args.no_progress)
    output = config.tokenizer.output or f"{config.run_dir}/tokenizer"
    print(f"tokenizer written to {output}/tokenizer.json", flush=True)
    print(format_report(report), flush=True)
    return 0


def cmd_report(args) -> int:
    from pipeline.config import load_config
    from pipeline.errors import UserError
    from tokenizer import files

    config = load_config(args.config, args.set)
    output = getattr(args, "output", None) or config.tokenizer.output or files.join(config.run_dir, "tokenizer")
    path = files.join(output, "report.json")
    if not files.exists(path):
        raise UserError(f"{path} does not exist; run `corpusforge tokenizer train` first")
    report = json.loads(files.read_bytes(path).decode("utf-8"))
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_report(report))
    return 0


def cmd_tokenize(args) -> int:
    from pipeline.config import load_config
    from tokenizer.shards import run_tokenize

    config = load_config(args.config, _overrides(args, "tokenize", {
        "val_fraction": "val_fraction", "tokenizer": "tokenizer", "input": "input", "output": "output"}))
    manifest = run_tokenize(config, getattr(args, "beam_args", None), progress=not args.no_progress)
    output = config.tokenize.output or f"{config.run_dir}/tokens"
    print(format_manifest(manifest, output), flush=True)
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


def format_manifest(manifest: dict, output: str) -> str:
    lines = [f"token shards in {output} ({manifest['dtype']}, vocabulary {manifest['vocab_size']:,}):"]
    for split, entry in manifest["splits"].items():
        lines.append(f"  {split}: {entry['documents']:,} documents, {entry['tokens']:,} tokens in "
                     f"{len(entry['shards'])} shards")
    return "\n".join(lines)
