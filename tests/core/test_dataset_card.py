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


def test_a_damaged_or_foreign_token_manifest_is_left_out_of_the_card(tmp_path):
    # An identical rebuild rewrites the card with the run's tokens/: a tokens/manifest.json that is not one raised
    # JSONDecodeError or AttributeError at the end of the build.
    import json

    from corpusforge.core.dataset_card import write_card

    (tmp_path / "clean").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"config": {}}))
    (tmp_path / "stats.json").write_text(json.dumps({}))
    (tmp_path / "tokens").mkdir()
    for text in ("{", "[]", '{"splits": []}', '{"splits": {"train": {"tokens": "many"}}}', "[" * 5000):
        (tmp_path / "tokens" / "manifest.json").write_text(text)
        write_card(str(tmp_path), tokens_root=str(tmp_path))
        assert "Token shards:" not in (tmp_path / "README.md").read_text()
