"""The build-side commands: ``build``, ``demo``, ``inspect`` and ``config``."""
from __future__ import annotations

import argparse
import sys

from pipeline.cli_common import common_parser

BEAM_EPILOG = """\
Any other --flag is passed to Apache Beam as a pipeline option, e.g.
  --runner DirectRunner --direct_running_mode multi_processing --direct_num_workers 2
  --runner DataflowRunner --project P --region R --temp_location gs://B/tmp --setup_file ./setup.py
"""


def register(subparsers) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    build = subparsers.add_parser(
        "build", parents=[common_parser()], formatter_class=fmt, help="Build clean Arrow shards from raw text.",
        description="Read the inputs, normalise, quality-filter, deduplicate and scrub PII, then write clean Arrow "
                    "shards to RUN_DIR/clean, removed and rejected records to RUN_DIR/removed and RUN_DIR/rejected, "
                    "and counts to RUN_DIR/stats.json.", epilog=BEAM_EPILOG)
    build.add_argument("--input", "-i", action="append", default=[], metavar="PATH",
                       help="An input file, directory or glob (repeatable); adds to the config's inputs.")
    build.add_argument("--run-dir", "-o", default=None, help="Run directory (default: output.run_dir, runs/latest).")
    build.add_argument("--overwrite", action="store_true", help="Replace an existing build in the run directory.")
    build.add_argument("--resume", action="store_true",
                       help="Continue a failed build from its last completed stage (needs output.stage_checkpoints, "
                            "which this flag switches on).")
    build.add_argument("--no-progress", action="store_true",
                       help="No live progress on stderr (when stderr is not a terminal, progress is a plain line "
                            "every 10 s and one at the end).")
    build.set_defaults(func=cmd_build, accepts_beam_args=True)

    demo = subparsers.add_parser(
        "demo", parents=[common_parser()], formatter_class=fmt,
        help="Run the whole chain on the built-in sample.",
        description="Write the built-in sample (real text from Python's own documentation, with duplicates, "
                    "personal data, junk, other languages and bad records), then build, train a tokenizer, tokenize, "
                    "train a tiny model and write the report, all into one run directory.", epilog=BEAM_EPILOG)
    demo.add_argument("--run-dir", "-o", default="runs/demo", help="Where the demo writes everything.")
    demo.add_argument("--documents", type=int, default=1000, help="Upper bound on good documents in the sample.")
    demo.add_argument("--steps", type=int, default=60, help="Training steps of the demo model.")
    demo.set_defaults(func=cmd_demo, accepts_beam_args=True)

    inspect = subparsers.add_parser(
        "inspect", parents=[common_parser()], help="Show schema, row counts and records of shards.",
        description="Print the schema, the number of rows and the first records of an Arrow shard, a shard "
                    "directory or a run directory (clean, removed, rejected or token shards).")
    inspect.add_argument("path", help="A .arrow file, a shard directory, or a run directory.")
    inspect.add_argument("--rows", "-n", type=int, default=3, help="How many records to show.")
    inspect.add_argument("--chars", type=int, default=300, help="Truncate long text fields to this many characters.")
    inspect.set_defaults(func=cmd_inspect)

    config = subparsers.add_parser(
        "config", parents=[common_parser()], help="Print the effective configuration, or the reference.",
        description="Print the configuration after loading --config and applying --set, as YAML; "
                    "with --reference, print every key with its type, default and meaning (Markdown).")
    config.add_argument("--reference", action="store_true", help="Print the configuration reference table.")
    config.set_defaults(func=cmd_config)


def _load(args, base=None):
    from pipeline.config import load_config

    return load_config(args.config, args.set, base=base)


def cmd_build(args) -> int:
    from pipeline.build import run_build

    overrides = list(args.set)
    if args.run_dir:
        overrides.append(f"output.run_dir={args.run_dir}")
    if args.overwrite:
        overrides.append("output.overwrite=true")
    if args.resume:
        overrides.append("output.stage_checkpoints=true")
    args.set = overrides
    config = _load(args)
    if args.input:
        from pipeline.config import InputConfig

        config.inputs.extend(InputConfig(path=p) for p in args.input)
    run_build(config, args.beam_args, resume=args.resume, progress=not args.no_progress)
    return 0


def cmd_demo(args) -> int:
    from pipeline.demo import run_demo

    return run_demo(args)


def cmd_config(args) -> int:
    from pipeline.config import to_dict

    if args.reference:
        print(reference_markdown())
        return 0
    import yaml

    print(yaml.safe_dump(to_dict(_load(args)), sort_keys=False), end="")
    return 0


def reference_markdown() -> str:
    """The configuration reference, generated from the dataclasses so it cannot drift."""
    from pipeline.config import Config
    from pipeline.configuration import field_docs

    lines = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for key, type_label, default, help_text in field_docs(Config):
        lines.append(f"| `{key}` | {type_label.replace('|', '&#124;')} | `{default}` | {help_text.replace('|', '&#124;')} |")
    return "\n".join(lines)


def cmd_inspect(args) -> int:
    from pipeline.inspect_shards import inspect_path

    inspect_path(args.path, rows=args.rows, chars=args.chars, out=sys.stdout)
    return 0



def update_readme(path: str = "README.md") -> None:
    """Rewrite the README's configuration reference from the dataclasses."""
    import pathlib
    import re

    readme = pathlib.Path(path)
    text = readme.read_text(encoding="utf-8")
    block = f"<!-- config-reference:start -->\n{reference_markdown()}\n<!-- config-reference:end -->"
    readme.write_text(re.sub(r"<!-- config-reference:start -->.*?<!-- config-reference:end -->", lambda _: block,
                             text, flags=re.S), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--update-readme"]:
        update_readme()
