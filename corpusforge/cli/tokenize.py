"""``corpusforge tokenize``: clean shards -> train/val token shards for the trainer."""
from __future__ import annotations

import argparse

from corpusforge.cli.options import DefaultsFormatter, common_parser, flag_overrides, overwrite_parser, run_dir_parser
from corpusforge.cli.options import finite

_FORMAT = DefaultsFormatter


def register(subparsers) -> None:
    tokenize = subparsers.add_parser(
        "tokenize", parents=[common_parser(), run_dir_parser(), overwrite_parser()], formatter_class=_FORMAT,
        help="Encode the clean shards into train/val token shards for the trainer.",
        description="A Beam pipeline: encode <run_dir>/clean with <run_dir>/tokenizer/tokenizer.json into "
                    "<run_dir>/tokens/{train,val}/part-*.arrow (id, tokens without special tokens; sorted by id) "
                    "and tokens/manifest.json. Documents go to val by a stable hash of their id. Beam flags "
                    "(--runner, --direct_num_workers=2, ...) after the options pass through to Beam.")
    tokenize.add_argument("--val-fraction", type=finite, default=argparse.SUPPRESS,
                          help="Share of documents in val; default: tokenize.val_fraction.")
    tokenize.add_argument("--tokenizer", default=argparse.SUPPRESS, help="tokenizer.json; default: <run_dir>/tokenizer/tokenizer.json.")
    tokenize.add_argument("--input", default=argparse.SUPPRESS, help="Clean shards; default: <run_dir>/clean.")
    tokenize.add_argument("--output", default=argparse.SUPPRESS, help="Output directory; default: <run_dir>/tokens.")
    tokenize.add_argument("--no-progress", action="store_true", help="No progress on stderr.")
    tokenize.set_defaults(func=cmd_tokenize, accepts_beam_args=True)


def cmd_tokenize(args) -> int:
    from corpusforge.config import load_config
    from corpusforge.tokenizer.tokenize import run_tokenize

    config = load_config(args.config, flag_overrides(args, "tokenize", {
        "val_fraction": "val_fraction", "tokenizer": "tokenizer", "input": "input", "output": "output"}))
    from corpusforge.core.beam_options import pipeline_options

    # a mistyped Beam flag first, as build does: it came after every other check ("runs/x/tokens already holds
    # token shards" for `tokenize --overwrit`), or only once the work had started
    pipeline_options(config.beam, getattr(args, "beam_args", None))
    manifest = run_tokenize(config.tokenize, config.tokenize_run(), getattr(args, "beam_args", None),
                            progress=not args.no_progress)
    output = config.tokenize.output or f"{config.run_dir}/tokens"
    print(format_manifest(manifest, output), flush=True)
    return 0


def format_manifest(manifest: dict, output: str) -> str:
    lines = [f"token shards in {output} ({manifest['dtype']}, vocabulary {manifest['vocab_size']:,}):"]
    for split, entry in manifest["splits"].items():
        lines.append(f"  {split}: {entry['documents']:,} documents, {entry['tokens']:,} tokens in "
                     f"{len(entry['shards'])} shards")
    return "\n".join(lines)
