"""``corpusforge report RUN_DIR``: write RUN_DIR/report.html and print a summary."""
from __future__ import annotations

import argparse
import os

from corpusforge.cli.options import DefaultsFormatter, common_parser


def register(subparsers) -> None:
    report = subparsers.add_parser(
        "report", parents=[common_parser()], formatter_class=DefaultsFormatter,
        help="Write a self-contained HTML report of a run and print a summary.",
        description="Write one self-contained HTML page (inline CSS and script, embedded PNG plots, no network needed "
                    "to view it) about a run directory: the funnel of documents and characters through every stage, "
                    "per source with its tokens, removal reasons in a filterable table, length and language "
                    "distributions, a histogram of every stored rule value with the run's thresholds, duplicate "
                    "clusters and near-duplicates beside their survivors, PII entities, kept documents beside "
                    "removed ones, rejected records, the tokenizer and the training curves. Shows whatever parts "
                    "the run has. Open the page in any browser.")
    # Options whose default depends on RUN_DIR are SUPPRESSed, so the help shows the rule rather than "None".
    report.add_argument("run_dir", nargs="?", default=argparse.SUPPRESS, metavar="RUN_DIR",
                        help="The run directory; default: output.run_dir from the configuration.")
    report.add_argument("--run-dir", dest="run_dir", default=argparse.SUPPRESS, metavar="RUN_DIR",
                        help="The run directory, as every command that works on a run takes it (or give it first).")
    report.add_argument("--output", "-o", default=argparse.SUPPRESS,
                        help="Where to write the page; default: RUN_DIR/report.html (-o is the page here, as before).")
    report.add_argument("--sample-rows", type=int, default=20_000,
                        help="Read at most this many rows of the clean and of the removed shards (every k-th row) for "
                             "the value and language distributions; keeps the report fast on large runs.")
    report.add_argument("--top-reasons", type=int, default=8, help="Show sample documents for this many removal reasons.")
    report.add_argument("--samples", type=int, default=3,
                        help="Sample documents per reason, near-duplicate pairs shown (and twice this many kept documents).")
    report.add_argument("--text-chars", type=int, default=600, help="Truncate sample texts to this many characters.")
    report.add_argument("--tokenizer-dir", default=argparse.SUPPRESS, help="Tokenizer directory; default: RUN_DIR/tokenizer.")
    report.add_argument("--model-dir", default=argparse.SUPPRESS,
                        help="Model directory with metrics.jsonl; default: RUN_DIR/model.")
    report.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from corpusforge.core.errors import UserError
    from corpusforge.pipeline.report import write_report

    for name in ("sample_rows", "top_reasons", "samples", "text_chars"):
        if getattr(args, name) < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    run_dir, output = getattr(args, "run_dir", None), getattr(args, "output", None)
    if run_dir is None and output is not None and os.path.isdir(output):
        # every other command's -o is the run directory: `report -o RUN` reported on output.run_dir (runs/latest,
        # "does not exist") or, where that exists, tried to write its page over RUN
        raise UserError(f"report's -o names the page it writes, and {output} is a directory; give the run first: "
                        f"corpusforge report {output} (or --run-dir {output})")
    if run_dir is None:
        from corpusforge.config import load_config

        run_dir = load_config(args.config, args.set).output.run_dir
    result = write_report(run_dir, getattr(args, "output", None), sample_rows=args.sample_rows,
                          top_reasons=args.top_reasons, per_reason=args.samples, text_chars=args.text_chars,
                          tokenizer_dir=getattr(args, "tokenizer_dir", None), model_dir=getattr(args, "model_dir", None))
    print(result.summary)
    print(f"wrote {result.path} ({result.bytes / 1e3:,.0f} kB); open it in a browser")
    return 0
