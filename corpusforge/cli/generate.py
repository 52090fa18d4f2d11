"""``corpusforge generate --model DIR --prompt TEXT``: text from a decoder or seq2seq model."""
from __future__ import annotations

import json


def register(subparsers) -> None:
    from corpusforge.cli.options import DefaultsFormatter, add_device_option, common_parser
    from corpusforge.cli.options import finite, seed

    generate = subparsers.add_parser(
        "generate", parents=[common_parser()], formatter_class=DefaultsFormatter,
        help="Generate text from a decoder or seq2seq model (greedy or sampled, batched).",
        description="Continue prompts with a model (a run's model/ or an exported directory), using transformers' "
                    "generate with a KV cache: greedy (--greedy) or sampled (temperature, top-k, top-p), stop "
                    "strings, a seed, batched prompts. --json prints one object per prompt with a completion field.")
    generate.add_argument("--model", required=True, metavar="DIR", help="A run's model/ directory or an export.")
    generate.add_argument("--prompt", action="append", default=[], help="A prompt (repeatable).")
    generate.add_argument("--prompts", metavar="FILE", help="A file of prompts, one per line.")
    generate.add_argument("--max-new-tokens", type=int, default=64, help="Tokens to generate at most.")
    generate.add_argument("--greedy", action="store_true", help="Always take the most likely token.")
    generate.add_argument("--temperature", type=finite, default=1.0, help="Sampling temperature.")
    generate.add_argument("--top-k", type=int, default=0, help="Sample among the k most likely tokens (0: all).")
    generate.add_argument("--top-p", type=finite, default=1.0, help="Sample from the smallest set with this much probability.")
    generate.add_argument("--stop", action="append", default=[], help="Stop at this string (repeatable); it is cut off.")
    generate.add_argument("--seed", type=seed, default=0, help="Seed of the sampling.")
    generate.add_argument("--batch-size", type=int, default=8, help="Prompts generated together.")
    generate.add_argument("--no-cache", action="store_true", help="Recompute every position at each step (no KV cache).")
    generate.add_argument("--json", action="store_true", help="One JSON object per prompt (prompt, completion, tokens, stopped).")
    add_device_option(generate)
    generate.set_defaults(func=cmd_generate)


def cmd_generate(args) -> int:
    from corpusforge.cli.hf import quiet_transformers
    from corpusforge.core.errors import UserError
    from corpusforge.trainers.export import load_model
    from corpusforge.trainers.generate import GenerateOptions, generate

    prompts = list(args.prompt)
    if args.prompts:
        from corpusforge.core.input_files import text_lines

        # read as every reader reads lines: compressed, UTF-16, CR line ends, a FIFO refused, one line on bad bytes
        prompts += list(text_lines(args.prompts))
    if not prompts:
        raise UserError("no prompt; pass --prompt TEXT or --prompts FILE")
    options = GenerateOptions(max_new_tokens=args.max_new_tokens, greedy=args.greedy, temperature=args.temperature,
                              top_k=args.top_k, top_p=args.top_p, stop=tuple(args.stop), seed=args.seed,
                              batch_size=args.batch_size, use_cache=not args.no_cache)
    quiet_transformers()
    for row in generate(load_model(args.model, args.device), prompts, options):
        print(json.dumps(row, ensure_ascii=False) if args.json else row["prompt"] + row["completion"])
    return 0
