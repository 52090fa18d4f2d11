"""The card's configuration fingerprint covers what changes the data and nothing else."""
from __future__ import annotations

import dataclasses

from corpusforge.config import Config
from corpusforge.core.config_loader import to_dict
from corpusforge.core.dataset_card import config_fingerprint


def _config(**output) -> dict:
    config = Config()
    config.output = dataclasses.replace(config.output, **output)
    return to_dict(config)


def test_where_shuffles_wait_does_not_change_the_configuration_fingerprint():
    """output.disk_shuffle_mb decides whether shuffles wait on disk or in memory: the same bytes either way."""
    assert config_fingerprint(_config(disk_shuffle_mb=0.0)) == config_fingerprint(_config(disk_shuffle_mb=64.0))
    # a setting that changes the data still changes it (the comparison is not vacuous)
    assert config_fingerprint(_config(max_doc_chars=1000)) != config_fingerprint(_config(max_doc_chars=2000))
