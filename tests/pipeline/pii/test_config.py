from __future__ import annotations

import pytest

from corpusforge.core.config_loader import ConfigError, from_dict
from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.entities import DEFAULT_ENTITIES, coverage


def test_defaults_cover_structured_types_offline():
    config = PIIConfig()
    assert config.entities == list(DEFAULT_ENTITIES)
    assert config.ner_model == "" and config.default_action == "replace"
    cov = coverage(config)
    assert cov.covered == DEFAULT_ENTITIES
    assert set(cov.uncovered) == {"URL", "PERSON", "LOCATION"}


def test_disabled_covers_nothing():
    cov = coverage(PIIConfig(enabled=False))
    assert cov.covered == () and "EMAIL_ADDRESS" in cov.uncovered


@pytest.mark.parametrize("data,message", [
    ({"entities": ["PASSPORT"]}, "pii.entities: unknown entity 'PASSPORT'"),
    ({"ner_entities": ["EMAIL_ADDRESS"]}, "pii.ner_entities: unknown entity"),
    ({"actions": {"EMAIL_ADDRESS": "burn"}}, "pii.actions.EMAIL_ADDRESS: 'burn' is not allowed"),
    ({"actions": {"NOPE": "mask"}}, "pii.actions: unknown entity 'NOPE'"),
    ({"mask_char": "**"}, "pii.mask_char must be one character"),
    ({"hash_salt": "short"}, "pii.hash_salt must be empty"),
    ({"max_density": 0}, "pii.max_density must be in"),
    ({"phone_regions": ["usa"]}, "pii.phone_regions"),
    ({"url_patterns": ["("]}, "pii.url_patterns"),
    ({"batch_size": 0}, "pii.batch_size must be >= 1"),
])
def test_bad_values_name_the_key(data, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        from_dict(PIIConfig, data, "pii")


def test_actions_and_placeholders_resolve():
    config = from_dict(PIIConfig, {"default_action": "mask", "actions": {"CREDIT_CARD": "drop"},
                                   "placeholders": {"EMAIL_ADDRESS": "[email]"}}, "pii")
    assert config.action_for("CREDIT_CARD") == "drop" and config.action_for("EMAIL_ADDRESS") == "mask"
    assert config.placeholder_for("EMAIL_ADDRESS") == "[email]"
    assert config.placeholder_for("PHONE_NUMBER") == "<PHONE>"


def test_loading_the_config_does_not_import_presidio():
    import subprocess
    import sys

    code = ("import sys, pipeline.pii, pipeline.pii.config; "
            "assert not [m for m in sys.modules if m.startswith(('presidio', 'spacy', 'apache_beam'))]")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_salt_is_written_only_as_set_with_a_fingerprint():
    from corpusforge.core.config_loader import public_dict

    salt = "a-salt-of-sixteen-chars"
    shown = public_dict(PIIConfig(hash_salt=salt))["hash_salt"]
    assert salt not in shown and shown.startswith("<secret set, fingerprint hmac-sha256:")
    assert shown == public_dict(PIIConfig(hash_salt=salt))["hash_salt"]  # the same salt, the same fingerprint
    assert shown != public_dict(PIIConfig(hash_salt=salt + "x"))["hash_salt"]
    assert public_dict(PIIConfig())["hash_salt"] == ""  # unset: nothing to fingerprint
    with pytest.raises(ConfigError, match="redacted marker"):
        PIIConfig(hash_salt=shown)  # copied back from a manifest: refused, not taken as a new salt
