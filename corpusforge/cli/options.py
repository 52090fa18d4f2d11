"""What every corpusforge subcommand shares: --config/--set/--debug, flag shortcuts, Beam pass-through help."""
from __future__ import annotations

import argparse
import contextlib
import json
import math
from typing import Mapping

BEAM_EPILOG = """\
Any other --flag is passed to Apache Beam as a pipeline option, e.g.
  --runner DirectRunner --direct_running_mode multi_processing --direct_num_workers 2
  --runner DataflowRunner --project P --region R --temp_location gs://B/tmp --setup_file ./setup.py
"""


class DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """ArgumentDefaultsHelpFormatter without "(default: None)", "(default: [])" and "(default: False)": a default
    that means "not given" (a required option, a filter not set, a switch) has nothing to say."""

    def _get_help_string(self, action):
        if action.required or action.default is None or action.default is False or action.default == []:
            return action.help
        return super()._get_help_string(action)


def finite(text: str) -> float:
    """The ``type`` of every float flag: a number, not NaN or an infinity, which no setting means and which
    reached the libraries below as tracebacks (``generate --temperature nan``)."""
    value = float(text)  # ValueError: argparse's "invalid finite value"
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def bound(text: str) -> float:
    """The ``type`` of a flag that is an upper bound (``ablate --max-epochs``): a number or ``inf`` (no bound); not
    NaN, not minus infinity."""
    value = float(text)  # ValueError: argparse's "invalid bound value"
    if math.isnan(value) or value == -math.inf:
        raise argparse.ArgumentTypeError(f"{text!r} is no bound: give a number, or inf for none")
    return value


def seed(text: str) -> int:
    """The ``type`` of every seed flag: an integer from 0 to 2**32 - 1, what every generator a seed reaches takes
    (numpy's refuse a negative one, datasketch's and scikit-learn's one past 32 bits), as ``config_loader`` holds
    config seeds (``seed_range``)."""
    from corpusforge.core.config_loader import seed_range

    value = int(text)  # ValueError: argparse's "invalid seed value"
    lowest, highest, words = seed_range("seed")
    if not lowest <= value <= highest:
        raise argparse.ArgumentTypeError(f"a seed is an integer {words}, got {text}")
    return value


def common_parser() -> argparse.ArgumentParser:
    """A parent parser with --config, --set and --debug, for ``add_parser(..., parents=[common_parser()])``.

    ``%(default).0s`` renders as nothing: it stops ArgumentDefaultsHelpFormatter from appending
    "(default: None)" to options whose default means "not given"."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--config", "-c", metavar="FILE", default=None,
                        help="YAML or TOML configuration file (every key: docs/configuration.md).%(default).0s")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="Override one config value, e.g. --set dedup.enabled=false --set output.run_dir=runs/x "
                             "(repeatable; values are parsed as YAML).%(default).0s")
    parser.add_argument("--debug", action="store_true", help="Show full tracebacks on errors.%(default).0s")
    return parser


def run_dir_parser() -> argparse.ArgumentParser:
    """A parent parser with ``--run-dir/-o``, the run directory a command works on (``output.run_dir``), for
    every command that works on a run, as ``build`` and ``demo`` take it; ``flag_overrides`` passes it on."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--run-dir", "-o", default=argparse.SUPPRESS, metavar="RUN",
                        help="The run directory; default: output.run_dir from the configuration (runs/latest).")
    return parser


def overwrite_parser() -> argparse.ArgumentParser:
    """A parent parser with ``--overwrite`` (``output.overwrite=true``), for every command that writes a step's
    output into a run directory, as ``build --overwrite``; ``flag_overrides`` passes it on."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--overwrite", action="store_true", default=argparse.SUPPRESS,
                        help="Replace this step's earlier output in the run directory (only what corpusforge wrote "
                             "there); the same as --set output.overwrite=true.")
    return parser


def flag_overrides(args: argparse.Namespace, section: str, shortcuts: Mapping[str, str]) -> list[str]:
    """``--set`` items for the shortcut flags the user gave, after their own ``--set`` items.

    ``shortcuts`` maps an argparse attribute to a key of ``section``; attributes the user did not give are
    absent (``default=argparse.SUPPRESS``) or None. ``--run-dir`` (``run_dir_parser``) becomes ``output.run_dir``,
    ``--overwrite`` ``output.overwrite=true``. Strings are quoted as JSON (so YAML reads them as strings)
    and floats keep a dot and a signed exponent ("1e-4" would read as a string)."""
    out = list(getattr(args, "set", []) or [])
    for attr, key in shortcuts.items():
        value = getattr(args, attr, None)
        if value is None:
            continue
        if isinstance(value, bool):
            value = str(value).lower()
        elif isinstance(value, str):
            value = json.dumps(value)
        elif isinstance(value, float):
            value = f"{value:.6e}"
        out.append(f"{section}.{key}={value}")
    if getattr(args, "run_dir", None) is not None:
        out.append(run_dir_setting(args.run_dir))
    if getattr(args, "overwrite", False):
        out.append("output.overwrite=true")
    return out


def run_dir_setting(path) -> str:
    """The ``--set`` item for a ``--run-dir`` the user gave: quoted as JSON, so a directory named ``null``,
    ``yes``, ``1e3`` or ``a: b`` stays that path, not YAML's None, True, a number or a mapping."""
    return f"output.run_dir={json.dumps(str(path))}"


def choices(cls: type, key: str) -> list:
    """The values config field ``key`` (dotted, under dataclass ``cls``) allows: its ``Literal`` type's, so a
    CLI flag offers exactly what the configuration accepts (``Optional`` unwrapped)."""
    import typing

    tp: object = cls
    for name in key.split("."):
        tp = typing.get_type_hints(tp)[name]
        if typing.get_origin(tp) in (typing.Union, __import__("types").UnionType):
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
    if typing.get_origin(tp) is not typing.Literal:
        raise TypeError(f"{cls.__name__}.{key} is not a Literal field")
    return list(typing.get_args(tp))


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """``--device`` of the commands that run a model (evaluate, generate, fill-mask, predict)."""
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="Where the model runs: auto takes a CUDA GPU when there is one, else the CPU.")


RECORD_LIMIT_HELP = ("A record over output.max_record_bytes (default 0: 6 x output.max_doc_chars + 1 MiB = 61 MB, "
                     "as the build reads; --set output.max_record_bytes=N) is {what}, never converted.")


def record_bytes(args: argparse.Namespace) -> int:
    """The most bytes one record of a user file may take, for a command that reads them outside the build:
    ``output.record_bytes`` of the command's --config and --set (the build's limit)."""
    from corpusforge.config import load_config

    return load_config(args.config, list(getattr(args, "set", []) or [])).output.record_bytes


@contextlib.contextmanager
def reporting_skipped(skipped: dict[str, int]):
    """Around a command that reads data with ``corpusforge.trainers.evaluate.read_documents(..., skipped)``:
    prints one line on stderr saying what it skipped (``skipped 2 unreadable records (malformed_json 1,
    truncated_compressed_file 1)``), and adds it to a ``UserError`` such as "no documents", which it explains."""
    import sys

    from corpusforge.core.errors import UserError
    from corpusforge.trainers.evaluate import skipped_line

    try:
        yield
    except UserError as exc:
        if skipped:
            # the example names the fields the records have and the flag to pass (Skipped.examples)
            named = getattr(skipped, "examples", {}).get("missing_text")
            hint = "; check --text-field" if "missing_text" in skipped and not named else ""
            if "oversize_record" in skipped:
                hint += "; raise output.max_record_bytes (--set output.max_record_bytes=N) to read larger records"
            raise UserError(f"{exc}; {skipped_line(skipped)}{hint}") from None
        raise
    if skipped:
        print(skipped_line(skipped), file=sys.stderr, flush=True)
