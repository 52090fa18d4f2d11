"""``corpusforge fill-mask --model DIR TEXT``: the most likely tokens for the mask, from an encoder."""
from __future__ import annotations

import json


def register(subparsers) -> None:
    from corpusforge.cli.options import DefaultsFormatter, add_device_option, common_parser

    fill = subparsers.add_parser(
        "fill-mask", parents=[common_parser()], formatter_class=DefaultsFormatter,
        help="Show the most likely tokens for the mask in a text (encoder models).",
        description="Predict the masked token of TEXT with an encoder (a run's model/ or an exported directory), "
                    "through transformers' fill-mask pipeline. Write the mask as the tokenizer's mask token "
                    "([MASK] for BERT-style tokenizers) or as <mask>.")
    fill.add_argument("text", metavar="TEXT", help="Text with exactly one mask.")
    fill.add_argument("--model", required=True, metavar="DIR", help="A run's model/ directory or an export.")
    fill.add_argument("--top-k", type=int, default=5, help="How many candidates to show.")
    fill.add_argument("--json", action="store_true", help="Print a JSON list of {token_str, score, token, sequence}.")
    add_device_option(fill)
    fill.set_defaults(func=cmd_fill_mask)


def cmd_fill_mask(args) -> int:
    from corpusforge.cli.hf import quiet_transformers
    from corpusforge.trainers.export import load_model
    from corpusforge.trainers.fill_mask import fill_mask

    quiet_transformers()
    rows = fill_mask(load_model(args.model, args.device), args.text, args.top_k)
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        for row in rows:
            print(f"{row['score']:.4f}  {row['token_str']}")
    return 0
