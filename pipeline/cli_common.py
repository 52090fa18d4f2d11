"""Options every corpusforge subcommand shares."""
from __future__ import annotations

import argparse


def common_parser() -> argparse.ArgumentParser:
    """A parent parser with --config, --set and --debug, for ``add_parser(..., parents=[common_parser()])``.

    ``%(default).0s`` renders as nothing: it stops ArgumentDefaultsHelpFormatter from appending
    "(default: None)" to options whose default means "not given"."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--config", "-c", metavar="FILE", default=None,
                        help="YAML or TOML configuration file (see the README's configuration reference).%(default).0s")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="Override one config value, e.g. --set dedup.enabled=false --set output.run_dir=runs/x "
                             "(repeatable; values are parsed as YAML).%(default).0s")
    parser.add_argument("--debug", action="store_true", help="Show full tracebacks on errors.%(default).0s")
    return parser
