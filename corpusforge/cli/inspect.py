"""``corpusforge inspect``: schema, row counts and records of any shard."""
from __future__ import annotations

import sys

from corpusforge.cli.options import common_parser


def register(subparsers) -> None:
    inspect = subparsers.add_parser(
        "inspect", parents=[common_parser()], help="Show schema, row counts and records of shards.",
        description="Print the schema, the number of rows and the first records of a shard (Arrow, Parquet, JSONL), a shard "
                    "directory or a run directory (clean, removed, rejected or token shards).")
    inspect.add_argument("path", help="A shard (.arrow, .parquet, .jsonl[.zst|.gz]), a shard directory, or a run directory.")
    inspect.add_argument("--rows", "-n", type=int, default=3, help="How many records to show; default: 3.")
    inspect.add_argument("--chars", type=int, default=300, help="Truncate long text fields to this many characters; default: 300.")
    inspect.set_defaults(func=cmd_inspect)



def cmd_inspect(args) -> int:
    from corpusforge.pipeline.inspect_shards import inspect_path

    inspect_path(args.path, rows=args.rows, chars=args.chars, out=sys.stdout)
    return 0
