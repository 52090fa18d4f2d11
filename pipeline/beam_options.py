"""From the config's ``beam`` section and CLI pass-through flags to Beam ``PipelineOptions``."""
from __future__ import annotations

import logging
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.config import BeamConfig


FIXED_RUNNERS = {
    "DaskRunner": "pipeline.dask_runner.DaskRunner",
    "apache_beam.runners.dask.dask_runner.DaskRunner": "pipeline.dask_runner.DaskRunner",
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
    """Options for ``beam.Pipeline``: the runner, the config's options, then CLI flags (which win)."""
    flags = [f"--runner={config.runner}", *option_flags(config.options), *(extra_args or [])]
    # Beam's own DaskRunner misroutes tagged outputs and skips all sinks but one: use the fixed one.
    flags = [f"--runner={FIXED_RUNNERS.get(f.split('=', 1)[1], f.split('=', 1)[1])}" if f.startswith("--runner=") else f
             for f in flags]
    if not any(f.startswith("--default_sdk_harness_log_level") for f in flags):
        # Worker processes (multi-process, portable, remote runners) log every bundle at INFO otherwise.
        flags.insert(1, "--default_sdk_harness_log_level=WARNING")
    # Offline, Beam's DirectRunner first tries to download the Prism runner and logs the failure; quiet it.
    logging.getLogger("apache_beam.runners.direct.direct_runner").setLevel(logging.ERROR)
    return PipelineOptions(flags)
