"""The ``beam`` config section, and from it plus CLI pass-through flags to Beam ``PipelineOptions``."""
from __future__ import annotations

import dataclasses
import difflib
import importlib
from typing import TYPE_CHECKING, Any

from corpusforge.core.config_loader import setting
from corpusforge.core.errors import UserError

if TYPE_CHECKING:
    from apache_beam.options.pipeline_options import PipelineOptions

# Beam is imported inside the functions: the config section is read by every command (and `--help`), and
# importing Beam costs ~1 s.

# Runners whose workers run on other machines: they cannot see this machine's disk.
REMOTE_RUNNERS = ("DataflowRunner", "SparkRunner", "FlinkRunner")
# Beam's local runners, by class name: every shuffle is held in the memory of the one driver process (the
# FnApiRunner's group buffers), in-process or with worker processes (direct_num_workers). Not the Dask or
# Prism runners: their shuffles live in other processes, Dask's possibly on other machines.
DIRECT_RUNNERS = ("DirectRunner", "SwitchingDirectRunner", "BundleBasedDirectRunner", "TestDirectRunner",
                  "FnApiRunner")


@dataclasses.dataclass
class BeamConfig:
    runner: str = setting("DirectRunner", "Beam runner: DirectRunner, PortableRunner, DataflowRunner, SparkRunner, FlinkRunner, or a dotted class path.")
    options: dict[str, Any] = setting(help="Any Beam pipeline options, e.g. {direct_num_workers: 2, temp_location: gs://...}; CLI flags after the subcommand's own pass through too. An option no Beam options class knows is an error (with a did-you-mean).", factory=dict)
    type_check: bool = setting(False, "Beam's construction-time type checks and type inference. Off by default: they cost about a third of building the graph (~0.6 s of every build's start-up) and the build's transforms are tested; turn on when you drop corpusforge's transforms into a pipeline of your own and want Beam to check it. Outputs are the same either way.")


FIXED_RUNNERS = {
    # Beam's DirectRunner downloads and runs the Prism binary first: ours does not (corpusforge/core/direct_runner.py).
    "DirectRunner": "corpusforge.core.direct_runner.DirectRunner",
    "SwitchingDirectRunner": "corpusforge.core.direct_runner.DirectRunner",
    "DaskRunner": "corpusforge.core.dask_runner.DaskRunner",
    "apache_beam.runners.dask.dask_runner.DaskRunner": "corpusforge.core.dask_runner.DaskRunner",
}


def option_flags(options: dict[str, Any]) -> list[str]:
    flags = []
    for key, value in sorted(options.items()):
        if value is True:
            flags.append(f"--{key}")
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            flags.extend(f"--{key}={item}" for item in value)
        else:
            flags.append(f"--{key}={value}")
    return flags


def pipeline_options(config: BeamConfig, extra_args: list[str] | None = None) -> PipelineOptions:
    """Options for ``beam.Pipeline``: the runner, the config's options, then CLI flags (which win). Their views
    are made once per options class (``corpusforge.core.options_views``)."""
    from corpusforge.core.options_views import ViewCachingOptions

    flags = [f"--runner={config.runner}", *option_flags(config.options), *(extra_args or [])]
    # Beam's own DaskRunner misroutes tagged outputs and skips all sinks but one: use the fixed one.
    flags = [f"--runner={FIXED_RUNNERS.get(f.split('=', 1)[1], f.split('=', 1)[1])}" if f.startswith("--runner=") else f
             for f in flags]
    if not any(f.startswith("--default_sdk_harness_log_level") for f in flags):
        # Worker processes (multi-process, portable, remote runners) log every bundle at INFO otherwise.
        flags.insert(1, "--default_sdk_harness_log_level=WARNING")
    if not config.type_check and "--no_pipeline_type_check" not in flags:
        # Beam's type checks and inference are a third of building the graph (beam.type_check). Outputs are
        # unchanged: without inferred types Beam's coders only move elements between steps differently.
        flags.append("--no_pipeline_type_check")
    check_known_flags(flags)
    options = ViewCachingOptions(flags)
    check_worker_count(options.get_all_options())
    return options


def max_local_workers() -> int:
    """The most worker processes or threads a local runner may start: 4 per CPU (at least 8)."""
    import os

    return max(8, 4 * (os.cpu_count() or 1))


def check_worker_count(all_options: dict[str, Any]) -> None:
    """Refuse a local runner's worker count that would hang the machine (``direct_num_workers: 100000`` starts
    that many processes or threads) or that means nothing (a negative one)."""
    workers = all_options.get("direct_num_workers")
    if workers is None:
        return
    limit = max_local_workers()
    if not isinstance(workers, int) or workers < 0 or workers > limit:
        raise UserError(f"beam direct_num_workers={workers} is not a usable number of local workers: each one is a "
                        f"process or thread on this machine; use 1 to {limit} (4 per CPU), or 0 for one per CPU")


def runs_locally(all_options: dict[str, Any], default_runner: str) -> bool:
    """Whether the runner's workers write to this machine's disk (where the progress files are read)."""
    runner = str(all_options.get("runner") or default_runner)
    if all_options.get("environment_type") == "LOOPBACK":
        return True
    return not any(r in runner for r in REMOTE_RUNNERS)


def runs_on_direct_runner(all_options: dict[str, Any], default_runner: str) -> bool:
    """Whether the runner is one of Beam's DirectRunners (``DIRECT_RUNNERS``; a dotted class path counts by
    its class name): what a step may gather on one worker without raising the build's memory peak's order."""
    runner = str(all_options.get("runner") or default_runner)
    return runner.rsplit(".", 1)[-1] in DIRECT_RUNNERS


def _option_classes(cls=None):
    if cls is None:
        from apache_beam.options.pipeline_options import PipelineOptions

        cls = PipelineOptions
    for sub in cls.__subclasses__():
        yield sub
        yield from _option_classes(sub)


def check_known_flags(flags: list[str]) -> None:
    """Refuse flags that no Beam options class defines: Beam itself only logs "Discarding unparseable args",
    so a typo (``--direct_num_worker=2``) would silently run with the default. The runner named by a dotted
    path is imported first, so options that its module defines (``DaskOptions``) are known."""
    for flag in flags:
        if flag.startswith("--runner="):
            runner = flag.split("=", 1)[1]
            if "." in runner:
                try:
                    importlib.import_module(runner.rsplit(".", 1)[0])
                except Exception:  # the runner cannot load: Beam says so, better than an unknown-flag error here
                    return
    parser = _beam_parser()
    _, unknown = parser.parse_known_args(flags)
    unknown = [arg.split("=", 1)[0] for arg in unknown if arg.startswith("-")]
    if not unknown:
        return
    known = [opt for action in parser._actions for opt in action.option_strings if opt.startswith("--")]
    problems = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        problems.append(name + (f" (did you mean {close[0]}?)" if close else ""))
    raise UserError(f"unknown Beam pipeline option{'s' if len(problems) > 1 else ''} {', '.join(problems)}, "
                    "from beam.options or the command line")


def _beam_parser():
    """An argparse parser holding every flag of every Beam options class, whose errors are a ``UserError``."""
    from apache_beam.options.pipeline_options import _BeamArgumentParser

    parser = _BeamArgumentParser(allow_abbrev=False)

    def refuse(message: str):  # argparse's own error() prints the usage of ~300 options and exits with 2
        raise UserError(f"Beam pipeline options (beam.options or the command line): {message}")

    parser.error = refuse  # type: ignore[method-assign]
    seen = set()
    for cls in _option_classes():
        if str(cls) not in seen:  # as Beam's get_all_options: one class per name
            seen.add(str(cls))
            try:
                cls._add_argparse_args(parser)  # pylint: disable=protected-access
            except Exception:  # a class registering an option twice (re-imported module): its flags are known
                pass
    return parser


def known_flags() -> set[str]:
    """Every ``--flag`` some Beam options class defines."""
    return {opt for action in _beam_parser()._actions for opt in action.option_strings if opt.startswith("--")}
