"""The PII entity types the stage knows, their placeholders, and which of them a configuration covers.

This module imports nothing heavy (no Presidio, no spaCy), so the run summary can say what was and was not
covered without building an analyzer.
"""
from __future__ import annotations

from typing import NamedTuple

LANGUAGE = "en"  # Presidio's registry key; our pattern recognizers are language-independent.

# Types found by pattern recognizers (regex + checksum/shape validation); they need no model.
PATTERN_ENTITIES = (
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "IP_ADDRESS",
    "IBAN_CODE",
    "US_SSN",
    "CRYPTO",
    "URL",
)
# Types only a spaCy NER model finds (Presidio's SpacyRecognizer, with its default label mapping).
NER_ENTITIES = ("PERSON", "LOCATION", "NRP", "ORGANIZATION")

# On by default: every pattern type except URL, which is opt-in (only URLs with personal paths match).
DEFAULT_ENTITIES = tuple(e for e in PATTERN_ENTITIES if e != "URL")
DEFAULT_NER_ENTITIES = ("PERSON", "LOCATION")

PLACEHOLDERS = {
    "EMAIL_ADDRESS": "<EMAIL>",
    "PHONE_NUMBER": "<PHONE>",
    "CREDIT_CARD": "<CREDIT_CARD>",
    "IP_ADDRESS": "<IP_ADDRESS>",
    "IBAN_CODE": "<IBAN>",
    "US_SSN": "<US_SSN>",
    "CRYPTO": "<CRYPTO_WALLET>",
    "URL": "<URL>",
    "PERSON": "<PERSON>",
    "LOCATION": "<LOCATION>",
    "NRP": "<NRP>",
    "ORGANIZATION": "<ORGANIZATION>",
}

ALL_ENTITIES = PATTERN_ENTITIES + NER_ENTITIES
ACTIONS = ("replace", "mask", "hash", "drop")


class Coverage(NamedTuple):
    """Which entity types a configuration detects, and for each one it does not, how to turn it on."""

    covered: tuple[str, ...]
    uncovered: dict[str, str]

    def summary(self) -> str:
        """One line for the run summary; never contains document text."""
        line = "PII covered: " + (", ".join(self.covered) or "nothing")
        if self.uncovered:
            line += "; NOT covered: " + "; ".join(f"{e} ({why})" for e, why in self.uncovered.items())
        return line


def coverage(config) -> Coverage:
    """The covered/uncovered entity types of a ``PIIConfig`` (for the lead's run summary)."""
    if not config.enabled:
        return Coverage((), {e: "pii.enabled is false" for e in DEFAULT_ENTITIES + DEFAULT_NER_ENTITIES})
    covered = [e for e in PATTERN_ENTITIES if e in config.entities]
    if config.ner_model:
        covered += [e for e in NER_ENTITIES if e in config.ner_entities]
    uncovered: dict[str, str] = {}
    for entity in PATTERN_ENTITIES:
        if entity not in covered:
            uncovered[entity] = f"add {entity} to pii.entities"
    for entity in DEFAULT_NER_ENTITIES + tuple(e for e in NER_ENTITIES if e in config.ner_entities):
        if entity in covered or entity in uncovered:
            continue
        if not config.ner_model:
            uncovered[entity] = "no NER model; set pii.ner_model, e.g. en_core_web_lg"
        else:
            uncovered[entity] = f"add {entity} to pii.ner_entities"
    return Coverage(tuple(covered), uncovered)
