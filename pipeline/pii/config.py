"""Configuration of the PII stage."""
from __future__ import annotations

import dataclasses
import re
from typing import Literal

from corpusforge.core.config_loader import check, check_not_redacted, setting
from corpusforge.pipeline.pii.entities import (
    ACTIONS,
    ALL_ENTITIES,
    DEFAULT_ENTITIES,
    DEFAULT_NER_ENTITIES,
    NER_ENTITIES,
    PATTERN_ENTITIES,
    PLACEHOLDERS,
)

Action = Literal["replace", "mask", "hash", "drop"]
FieldAction = Literal["scrub", "hash", "keep"]
IdAction = Literal["hash", "keep"]
STAGE = "pii"  # the section name, the namespace of the stage's metrics
FIELD_ACTIONS = ("scrub", "hash", "keep")

# Regions whose national formats (no +country code) a phone number may be written in.
DEFAULT_PHONE_REGIONS = ["US", "CA", "GB", "IE", "DE", "AT", "CH", "FR", "BE", "NL", "IT", "ES", "PT", "BR",
                         "MX", "IN", "JP", "PL", "AU"]

# A URL is personal when its path/query matches one of these (URL must be in pii.entities).
DEFAULT_URL_PATTERNS = [
    r"/~[\w.-]+",
    r"/(?:users?|u|people|profiles?|members?|home|author|in)/[\w.%-]+",
    r"[?&](?:e-?mail|user(?:name)?|uid|login|phone|tel)=",
]


@dataclasses.dataclass
class PIIConfig:
    enabled: bool = setting(True, "Run the PII stage.")
    entities: list[str] = setting(help="Pattern-based entity types to find: " + ", ".join(PATTERN_ENTITIES)
                  + ". URL (opt-in) only matches URLs with personal paths, see pii.url_patterns.", factory=lambda: list(DEFAULT_ENTITIES))
    ner_model: str = setting("", "An installed spaCy NER model (package name such as en_core_web_lg, or a path) to also "
                  "find names; empty: no name detection (PERSON/LOCATION are reported as not covered).")
    ner_entities: list[str] = setting(help="Entity types taken from the NER model when pii.ner_model is set: "
                  + ", ".join(NER_ENTITIES) + ".", factory=lambda: list(DEFAULT_NER_ENTITIES))
    default_action: Action = setting("replace", "What to do with a found entity: replace (typed placeholder such as <EMAIL>), mask "
                  "(every character becomes pii.mask_char), hash (<EMAIL:1a2b...>, salted per run), drop "
                  "(remove the whole document).")
    actions: dict[str, Action] = setting(help="Per-entity actions overriding default_action, e.g. {CREDIT_CARD: drop}.", factory=dict)
    placeholders: dict[str, str] = setting(help="Per-entity placeholder overrides, e.g. {EMAIL_ADDRESS: '[email]'}.", factory=dict)
    mask_char: str = setting("*", "Character used by the mask action.")
    hash_salt: str = setting("", "Salt of the hash action and of ids (at least 16 characters); empty: a random salt per run, "
                  "so hashes only link mentions within one run. Never written: manifest.json, the report and "
                  "`corpusforge config` show only that it was set and an HMAC fingerprint.", secret=True)
    hash_chars: int = setting(12, "Hex digits of the hash kept in a hash placeholder.")
    max_density: float = setting(0.4, "Remove a document (reason pii_density) when PII spans cover more than this share of its "
                  "characters and it has at least density_min_entities entities; 1.0 disables.")
    density_min_entities: int = setting(3, "Fewest entities for the density rule to apply (a short note with one email stays).")
    score_threshold: float = setting(0.5, "Minimum Presidio score of a result (pattern results are 0.7-1.0, spaCy NER 0.85).")
    phone_regions: list[str] = setting(help="ISO regions whose national phone formats are recognised; +country-code numbers are "
                  "recognised for every region.", factory=lambda: list(DEFAULT_PHONE_REGIONS))
    keep_private_ips: bool = setting(True, "Leave IPs that identify no one intact: non-global IPv4 (127.0.0.1, 10.x, 192.168.x, "
                  "documentation ranges) and IPv6 loopback, :: and 2001:db8::/32 (full IPv6 link-local addresses can "
                  "embed a MAC address, so they are removed); they are common in technical text.")
    allow_list: list[str] = setting(help="Exact strings never treated as PII (e.g. a project's public contact address).", factory=list)
    url_patterns: list[str] = setting(help="Regexes (searched in a URL's path and query) that make a URL personal; used when URL is in pii.entities.", factory=lambda: list(DEFAULT_URL_PATTERNS))
    scrub_removed: bool = setting(True, "Scrub the text of documents every stage removed (removed/) and the raw previews of "
                  "rejected records (rejected/) with this configuration too; false keeps them raw for an audit "
                  "(the report then says so; its own samples are scrubbed either way).")
    id_action: IdAction = setting("hash", "PII inside document ids (clean/ and removed/, and the survivor ids of duplicates): hash "
                  "(each entity becomes a salted <TYPE:hash> of 32 hex digits, so ids stay unique and a duplicate "
                  "still names its survivor; stable across runs when pii.hash_salt is set) or keep.")
    metadata_action: FieldAction = setting("scrub", "What happens to metadata string values (nested ones too): scrub (entities replaced "
                  "as in the text), hash (the whole value becomes a salted hash, 32 hex digits, for fields such "
                  "as user names that no recognizer finds) or keep.")
    metadata_fields: dict[str, FieldAction] = setting(help="Per top-level metadata key, an action overriding metadata_action, e.g. {author: hash, url: keep}.", factory=dict)
    batch_size: int = setting(64, "Documents per analyzer batch (NER runs nlp.pipe over a batch).")
    audit_file: str = setting("", "Write every original span and its replacement to this JSONL path prefix, inside the run "
                  "directory (relative to it; a path outside it is refused), files 0600. SENSITIVE: contains the PII. "
                  "Empty: the mapping is never written.")

    def __post_init__(self) -> None:
        for entity in self.entities:
            check(entity in PATTERN_ENTITIES,
                  f"pii.entities: unknown entity {entity!r}; choose from {', '.join(PATTERN_ENTITIES)}")
        for entity in self.ner_entities:
            check(entity in NER_ENTITIES,
                  f"pii.ner_entities: unknown entity {entity!r}; choose from {', '.join(NER_ENTITIES)}")
        for entity, action in self.actions.items():
            check(entity in ALL_ENTITIES, f"pii.actions: unknown entity {entity!r}; choose from {', '.join(ALL_ENTITIES)}")
            check(action in ACTIONS, f"pii.actions.{entity} must be one of {', '.join(ACTIONS)}, got {action!r}")
        for entity in self.placeholders:
            check(entity in PLACEHOLDERS, f"pii.placeholders: unknown entity {entity!r}")
        check(len(self.mask_char) == 1, f"pii.mask_char must be one character, got {self.mask_char!r}")
        check_not_redacted(self.hash_salt, "pii.hash_salt")
        check(self.id_action in ("hash", "keep"), f"pii.id_action must be hash or keep, got {self.id_action!r}")
        # A record's own metadata object is merged into metadata by the readers (pipeline/readers.py
        # merged_metadata): an action for the key "metadata" would no longer reach its values, which then fall
        # to metadata_action (a name that no recognizer finds would be kept in clean/ where "hash" was asked).
        check("metadata" not in self.metadata_fields,
              "pii.metadata_fields.metadata: a record's own metadata object is merged into the document's metadata "
              "(its keys are top-level keys), so name those keys instead, e.g. {author: hash, url: keep}")
        for key, action in {"": self.metadata_action, **self.metadata_fields}.items():
            where = f"pii.metadata_fields.{key}" if key else "pii.metadata_action"
            check(action in FIELD_ACTIONS, f"{where} must be one of {', '.join(FIELD_ACTIONS)}, got {action!r}")
        check(not self.hash_salt or len(self.hash_salt.encode()) >= 16,
              "pii.hash_salt must be empty (random per run) or at least 16 characters")
        check(4 <= self.hash_chars <= 64, f"pii.hash_chars must be in [4, 64], got {self.hash_chars}")
        check(0.0 < self.max_density <= 1.0, f"pii.max_density must be in (0, 1], got {self.max_density}")
        check(self.density_min_entities >= 1, f"pii.density_min_entities must be >= 1, got {self.density_min_entities}")
        check(0.0 <= self.score_threshold <= 1.0, f"pii.score_threshold must be in [0, 1], got {self.score_threshold}")
        check(self.batch_size >= 1, f"pii.batch_size must be >= 1, got {self.batch_size}")
        for region in self.phone_regions:
            check(len(region) == 2 and region.isalpha() and region.isupper(),
                  f"pii.phone_regions: {region!r} is not an ISO 3166 alpha-2 code such as US or DE")
        for pattern in self.url_patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                check(False, f"pii.url_patterns: {pattern!r} is not a valid regex: {exc}")

    def metadata_action_for(self, key: str) -> str:
        return self.metadata_fields.get(key, self.metadata_action)

    def action_for(self, entity: str) -> str:
        return self.actions.get(entity, self.default_action)

    def placeholder_for(self, entity: str) -> str:
        return self.placeholders.get(entity, PLACEHOLDERS.get(entity, f"<{entity}>"))

    @property
    def active_entities(self) -> list[str]:
        """Every entity type this configuration looks for (pattern types, then NER types when a model is set)."""
        return list(self.entities) + (list(self.ner_entities) if self.ner_model else [])
