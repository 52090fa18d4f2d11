"""How the report shows a run's texts: scrubbed with the run's PII configuration, every entity replaced by its
placeholder, whether or not the build ran the PII stage (report.html is the file people pass around)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from corpusforge.core.errors import UserError


def display_scrubber(section: dict[str, Any] | None) -> Callable[[str], str]:
    """A function scrubbing a text with ``display_pii_config(section)``; the scrubber is built on its first call."""
    scrubber = None

    def text(value: str) -> str:
        nonlocal scrubber
        if scrubber is None:
            from corpusforge.pipeline.pii.fields import FieldScrubber
            from corpusforge.pipeline.pii.scrubber import Scrubber

            scrubber = FieldScrubber(Scrubber(display_pii_config(section)))
        return scrubber.text(value)

    return text


def display_pii_config(section: dict[str, Any] | None):
    """The run's ``PIIConfig`` (the manifest's ``config.pii`` section) with every action ``replace``; the default
    config when the manifest has none or it no longer loads (written by another version), or names an NER model
    not installed."""
    from corpusforge.core.config_loader import ConfigError, from_dict
    from corpusforge.pipeline.pii.config import PIIConfig

    section = dict(section or {})
    known = {f.name for f in dataclasses.fields(PIIConfig)}
    section = {k: v for k, v in section.items() if k in known and k not in ("hash_salt", "actions", "audit_file")}
    section.update(enabled=True, default_action="replace")
    try:
        config = from_dict(PIIConfig, section)
    except ConfigError:
        return PIIConfig()
    if config.ner_model:
        from corpusforge.pipeline.pii.scrubber import check_ner_model

        try:
            check_ner_model(config.ner_model)
        except UserError:
            config = dataclasses.replace(config, ner_model="")
    return config
