"""``corpusforge ablate``: train identical small models on corpus variants and compare held-out bits per byte."""
from __future__ import annotations

import argparse
import json

from corpusforge.cli.options import BEAM_EPILOG, common_parser
from corpusforge.cli.options import bound, finite


def register(subparsers) -> None:
    ablate = subparsers.add_parser(
        "ablate", parents=[common_parser()], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="Compare corpus variants: identical models at one token budget, held-out bits per byte.",
        description="For each variant (a name plus build overrides): build it (variants with the same build "
                    "config share one build), encode it with one shared tokenizer (trained once on every "
                    "variant's clean text, or --tokenizer), train an identical decoder for exactly --tokens tokens "
                    "per seed (repeating the data when a variant is smaller: the epochs are reported), and measure "
                    "bits per byte on the held-out set, per source and language too. Every variant is compared "
                    "with the baseline: the paired difference with an interval over seeds and one over held-out "
                    "documents (bootstrap), a verdict (better, worse, no detectable difference at this budget) and, "
                    "when unresolved, the budget that would resolve it. Writes OUT/ablation.json and "
                    "OUT/ablation.html. Rerunning with the same arguments redoes nothing that finished. "
                    "See docs/ablation.md.",
        epilog="Examples:\n"
               "  corpusforge ablate --input raw.jsonl --eval heldout.jsonl --out runs/ablate --tokens 2048000 \\\n"
               "    --variant raw:quality.enabled=false,dedup.enabled=false,pii.enabled=false \\\n"
               "    --variant quality-only:dedup.enabled=false --variant dedup-only:quality.enabled=false \\\n"
               "    --variant full\n"
               "  corpusforge ablate --input raw.jsonl --eval heldout-en.jsonl --eval heldout-de.jsonl --out runs/loo \\\n"
               "    --tokens 204800 --seeds 2 --variant raw:quality.enabled=false --leave-one-out quality\n\n"
               + BEAM_EPILOG)
    ablate.add_argument("--input", action="append", default=[], metavar="PATH",
                        help="Raw input (file, directory or glob; repeatable). Default: the config's inputs.")
    ablate.add_argument("--eval", required=True, action="append", metavar="HELDOUT",
                        help="Held-out text: a JSONL (.gz/.zst), Parquet or Arrow file or a directory of them "
                             "(repeatable); a record's `source` field, else its file's stem, names its source for the "
                             "per-source figures. It must not overlap any variant's training text.")
    ablate.add_argument("--variant", action="append", default=[], metavar="NAME[:KEY=VALUE,...]",
                        help="A variant: a name and build overrides (normalize, quality, dedup, pii, inputs); a bare "
                             "name means the defaults. Repeatable; the first is the baseline of the comparison.")
    ablate.add_argument("--variants", metavar="FILE", help="A YAML/TOML file of variants and threshold sweeps "
                                                           "(docs/ablation.md); added after the --variant ones.")
    ablate.add_argument("--baseline", default="", metavar="NAME",
                        help="The variant every other is compared with. Default: the first.")
    ablate.add_argument("--leave-one-out", action="append", default=[], metavar="SECTION",
                        help="Add one variant per sub-step (quality: langid, junk, gopher, ...; dedup: exact, near, "
                             "lines, sentences) or, for a section of rules (quality.junk), per rule, with just that "
                             "one off, and a variant `full` (the configuration as is) when none runs it; the table "
                             "says what each removes and whether it costs or earns bits per byte. Repeatable.")
    ablate.add_argument("--resolve", type=finite, default=0.01, metavar="BPB",
                        help="For a comparison with no detectable difference, report the tokens per model (and "
                             "seeds) that would resolve a difference of this many bits per byte. Default: 0.01.")
    ablate.add_argument("--tokens", type=int, required=True,
                        help="Tokens each model trains on: a whole number of steps of seq_len x micro_batch_size x "
                             "grad_accum tokens.")
    ablate.add_argument("--seeds", type=int, default=3, help="Models per variant (train.seed 1..S). Default: 3.")
    ablate.add_argument("--size", choices=["debug", "small", "base"], default="debug", help="Model size. Default: debug.")
    ablate.add_argument("--family", choices=["decoder"], default="decoder",
                        help="Model family: decoder (a causal LM predicts every byte of the held-out text, so bits per "
                             "byte is the whole text's); the only one, the default.")
    ablate.add_argument("--tokenizer", metavar="TOKENIZER_JSON", default="",
                        help="Use this tokenizer.json for every variant instead of training one.")
    ablate.add_argument("--max-epochs", type=bound, default=20.0,
                        help="Refuse a variant whose data would be repeated more often than this (inf: never). "
                             "Default: 20.")
    ablate.add_argument("--out", "-o", required=True, metavar="DIR", help="Directory of the ablation.")
    ablate.add_argument("--no-progress", action="store_true", help="No progress bars.")
    ablate.set_defaults(func=cmd_ablate, accepts_beam_args=True)


def cmd_ablate(args) -> int:
    from corpusforge.ablate.compare import describe
    from corpusforge.ablate.run import ABLATION_DEFAULTS, AblationOptions, run_ablation
    from corpusforge.ablate.variants import load_variants, parse_variant
    from corpusforge.config import load_config
    from corpusforge.cli.hf import quiet_transformers
    from corpusforge.core.errors import UserError

    variants = [parse_variant(spec) for spec in args.variant]
    if args.variants:
        variants += load_variants(args.variants)
    base = json.loads(json.dumps(ABLATION_DEFAULTS))  # a copy
    if args.input:
        base["inputs"] = [{"path": path} for path in args.input]
    config = load_config(args.config, [*args.set, f"train.model.size={args.size}"], base=base)
    if not config.inputs:
        raise UserError("no input: pass --input PATH or list inputs in the config file")
    from corpusforge.core.beam_options import pipeline_options

    pipeline_options(config.beam, args.beam_args)  # a mistyped Beam flag before any build, as build does
    quiet_transformers()
    options = AblationOptions(heldout=args.eval, tokens=args.tokens, out_dir=args.out, seeds=args.seeds,
                              tokenizer=args.tokenizer, max_epochs=args.max_epochs, progress=not args.no_progress,
                              baseline=args.baseline, leave_one_out=args.leave_one_out, resolve=args.resolve)
    report = run_ablation(config, variants, options, args.beam_args)
    print(f"{'variant':<32} {'kept':>6} {'tokens':>10} {'epochs':>6} {'bits/byte':>9} {'seed std':>8}  "
          f"vs {report['baseline']}")
    for v in report["variants"]:
        s = v["bits_per_byte_summary"]
        versus = describe(v["vs_baseline"]) if "vs_baseline" in v else "(baseline)"
        print(f"{v['name'][:32]:<32} {100 * v['kept_fraction']:>5.1f}% {v['tokens']:>10,} {v['epochs']:>6.2f} "
              f"{s['mean']:>9.4f} {s['std']:>8.4f}  {versus}")
    if report["leave_one_out"]:
        print(f"\n{'left out':<32} {'removes':>8}  effect (reference minus variant; positive: it costs)")
        for row in report["leave_one_out"]:
            resolved = "" if row["verdict"] == row["effect"]["verdict"] else f" -> {row['verdict']}"
            print(f"{row['variant'][:32]:<32} {100 * row['removes_chars_fraction']:>7.1f}%  "
                  f"{describe(row['effect'])}{resolved}")
    return 0
