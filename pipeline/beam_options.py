"""From the config's ``beam`` section and CLI pass-through flags to Beam ``PipelineOptions``."""
from __future__ import annotations

import logging
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions

from pipeline.config import BeamConfig


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
    # Offline, Beam's DirectRunner first tries to download the Prism runner and logs the failure; quiet it.
    logging.getLogger("apache_beam.runners.direct.direct_runner").setLevel(logging.ERROR)
    return PipelineOptions(flags)
