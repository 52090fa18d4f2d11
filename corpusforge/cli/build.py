"""``corpusforge build``: raw text -> clean shards (Arrow, Parquet or JSON Lines)."""
from __future__ import annotations

import argparse

from corpusforge.cli.options import BEAM_EPILOG, common_parser, run_dir_setting


def register(subparsers) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    build = subparsers.add_parser(
        "build", parents=[common_parser()], formatter_class=fmt, help="Build clean shards (Arrow, Parquet or JSONL) from raw text.",
        description="Read the inputs, normalise, quality-filter, deduplicate and scrub PII, then write clean shards "
                    "(output.format: arrow, parquet or jsonl) to RUN_DIR/clean, removed and rejected records to RUN_DIR/removed and RUN_DIR/rejected, "
                    "counts to RUN_DIR/stats.json and a dataset card to RUN_DIR/README.md (datasets.load_dataset(RUN_DIR)).", epilog=BEAM_EPILOG)
    build.add_argument("--input", "-i", action="append", default=[], metavar="PATH",
                       help="An input file, directory or glob (repeatable); adds to the config's inputs.")
    build.add_argument("--text-field", metavar="NAME", default=None,
                       help="The field holding the text in the --input files (JSONL, Parquet, Arrow); default: text "
                            "(a config's inputs name theirs with inputs[].text_field).")
    build.add_argument("--id-field", metavar="NAME", default=None,
                       help="The field holding each record's id in the --input files; default: id (records without "
                            "one get a stable id from their file and position; a config's inputs name theirs with "
                            "inputs[].id_field).")
    build.add_argument("--run-dir", "-o", default=None, help="Run directory (default: output.run_dir, runs/latest).")
    build.add_argument("--overwrite", action="store_true", help="Replace an existing build in the run directory.")
    build.add_argument("--resume", action="store_true",
                       help="Continue a failed build from its last completed stage (needs output.stage_checkpoints, "
                            "which this flag switches on).")
    build.add_argument("--fail-fast", action="store_true",
                       help="Fail on the first record that makes a stage raise, with its traceback (build.fail_fast); "
                            "by default such a record is rejected as stage_error and the build goes on.")
    build.add_argument("--no-progress", action="store_true",
                       help="No live progress on stderr (when stderr is not a terminal, progress is a plain line "
                            "every 10 s and one at the end).")
    build.set_defaults(func=cmd_build, accepts_beam_args=True)



def cmd_build(args) -> int:
    from corpusforge.config import InputConfig, load_config, to_dict
    from corpusforge.core import lean_beam
    from corpusforge.core.errors import UserError

    overrides = list(args.set)
    if args.run_dir:
        overrides.append(run_dir_setting(args.run_dir))
    if args.overwrite:
        overrides.append("output.overwrite=true")
    if args.resume:
        overrides.append("output.stage_checkpoints=true")
    if args.fail_fast:
        overrides.append("build.fail_fast=true")
    config = load_config(args.config, overrides)
    fields = {key: value for key, value in (("text_field", args.text_field), ("id_field", args.id_field)) if value}
    for key in fields:
        if not args.input:
            flag, what = "--" + key.replace("_", "-"), key.split("_")[0]
            raise UserError(f"{flag} names the {what} field of the --input files, and none was given; for a "
                            f"config's inputs set inputs[].{key} in the config")
    config.inputs.extend(InputConfig(path=p, **fields) for p in args.input)
    # Beam without its GCP, MongoDB and pandas integrations
    if lean_beam.local_build(config.beam, to_dict(config), args.beam_args):
        lean_beam.import_for_local_build()
    from corpusforge.pipeline.build import run_build

    run_build(config, args.beam_args, resume=args.resume, progress=not args.no_progress)
    return 0
