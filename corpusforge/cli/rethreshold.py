"""``corpusforge rethreshold RUN --set quality.gopher.min_words=80 --out RUN2``: re-decide quality from stored values."""
from __future__ import annotations

import sys

from corpusforge.cli.options import DefaultsFormatter


def register(subparsers) -> None:
    cmd = subparsers.add_parser(
        "rethreshold", formatter_class=DefaultsFormatter,
        help="Re-decide a run's quality rules under new thresholds, from its stored values, into a new run.",
        description="Decide the heuristic quality rules of a built run again with new thresholds, from the values "
                    "its build measured and stored (annotations.quality, details.quality): no model runs and no "
                    "input is read. Writes a whole new run directory (clean, removed, rejected, manifest, stats). "
                    "Dedup and PII are not redone: survivors of dedup that quality now removes leave their "
                    "duplicates removed, and documents the new thresholds let through got no dedup or PII decision.")
    cmd.add_argument("run_dir", metavar="RUN", help="The built run directory to read (it is not changed).")
    cmd.add_argument("--config", "-c", metavar="FILE", default=None,
                     help="A configuration file (YAML or TOML) whose quality section holds the new thresholds, "
                          "applied before any --set.%(default).0s")
    cmd.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="A new threshold, e.g. --set quality.gopher.min_words=80 (repeatable; YAML values; null "
                          "turns a check off).%(default).0s")
    cmd.add_argument("--out", "--run-dir", "-o", dest="out", required=True, metavar="RUN2",
                     help="The new run directory to write.")
    cmd.add_argument("--overwrite", action="store_true",
                     help="Replace the outputs of an earlier rethreshold or build in RUN2.%(default).0s")
    cmd.add_argument("--debug", action="store_true", help="Show full tracebacks on errors.%(default).0s")
    cmd.set_defaults(func=cmd_rethreshold)


def cmd_rethreshold(args) -> int:
    from corpusforge.pipeline.rethreshold import rethreshold

    rethreshold(args.run_dir, [*config_overrides(args.config), *args.set], args.out, overwrite=args.overwrite,
                out=sys.stdout)
    return 0


def config_overrides(path: str | None) -> list[str]:
    """The ``quality`` section of a configuration file as ``--set`` items (other sections are the build's)."""
    if path is None:
        return []
    import json

    from corpusforge.core.config_loader import load_file

    def flat(node, prefix):
        if isinstance(node, dict):
            return [item for key, value in node.items() for item in flat(value, f"{prefix}.{key}")]
        return [f"{prefix}={json.dumps(node)}"]

    return flat(load_file(path).get("quality") or {}, "quality")
