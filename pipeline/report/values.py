"""The rule values stored with records, and the thresholds of the run's config that apply to them.

Annotations (clean) and details (removed) are Arrow structs or, in runs written before typed annotations,
JSON strings; ``as_dict`` reads either. ``numeric_values`` flattens them to ``{"quality.gopher.n_words": 12.0}``
(nested keys joined with dots, nulls skipped: null means not measured). ``thresholds`` finds the config keys
of the run (``manifest.json`` ``config``) that decide on a value, by the names the config uses:
``quality.gopher.n_words`` against ``quality.gopher.min_words`` / ``max_words``, ``lang_score`` against
``quality.langid.min_score``, ``<name>_score`` against that classifier's threshold.
"""
from __future__ import annotations

import json
import math
from typing import Any, Iterator

from corpusforge.pipeline.document import annotations_of

# Details that identify a record rather than measure it: never a histogram.
NOT_VALUES = frozenset({"survivor_id", "survivor", "duplicate_of", "kept_id", "cluster_id"})


def as_dict(value: Any) -> dict[str, Any]:
    """An annotations/details cell as a dict: a struct comes as a dict already, a JSON string is parsed;
    anything else (an unreadable string, null) is an empty dict."""
    if isinstance(value, dict):  # a typed struct: nulls are values not measured, ``other`` holds the rest
        try:
            return annotations_of(value)
        except (TypeError, json.JSONDecodeError):
            return {k: v for k, v in value.items() if v is not None}
    try:
        parsed = json.loads(value or "{}")
    except (TypeError, json.JSONDecodeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def numeric_values(record: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, float]]:
    """``(dotted key, value)`` for every finite number in ``record``, nested dicts flattened."""
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from numeric_values(value, name + ".")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
                and key not in NOT_VALUES:
            yield name, float(value)


def _section(config: dict[str, Any], path: list[str]) -> dict[str, Any] | None:
    node: Any = config
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) else None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _score_thresholds(key: str, quality: dict[str, Any]) -> list[tuple[str, float]]:
    """Thresholds of the scores the quality stage annotates at the top level."""
    langid, toxicity = quality.get("langid") or {}, quality.get("toxicity") or {}
    if key == "lang_score":
        if not langid.get("enabled", True) or not langid.get("filter", True):
            return []
        score = langid.get("min_score")
        if score is None and langid.get("languages"):
            score = 0.65  # LangIdConfig.threshold: null means FineWeb's 0.65 once languages is set, else no floor
        return [("quality.langid.min_score", float(score))] if _number(score) else []
    if key == "toxicity_score":
        if not toxicity.get("enabled") or toxicity.get("mode") == "annotate" or not _number(toxicity.get("threshold")):
            return []
        return [("quality.toxicity.threshold", float(toxicity["threshold"]))]
    for classifier in quality.get("classifiers") or []:
        if key == f"{classifier.get('name')}_score" and classifier.get("mode", "threshold") == "threshold" \
                and _number(classifier.get("threshold")):
            return [(f"quality.classifiers[{classifier['name']}].threshold", float(classifier["threshold"]))]
    return []


def thresholds(key: str, config: dict[str, Any] | None) -> list[tuple[str, float]]:
    """``[(config key, threshold)]`` that decide on the value ``key``; empty when the config has none (or the
    rule is off)."""
    config = config or {}
    quality = config.get("quality") or {}
    if "." not in key:
        return _score_thresholds(key, quality)
    *path, name = key.split(".")
    if path[0] != "quality":
        path = ["quality", *path]  # values stored without the stage's name
    section = _section(config, path)
    if section is not None:
        if section.get("enabled") is False:
            return []
        where = ".".join(path)
        bare = name[2:] if name.startswith("n_") else name[4:] if name.startswith("num_") else name
        found = [(f"{where}.{candidate}", float(section[candidate]))
                 for candidate in dict.fromkeys((f"min_{name}", f"max_{name}", f"min_{bare}", f"max_{bare}"))
                 if _number(section.get(candidate))]
        if found:
            return found
    # A threshold table keyed by the value's last part: quality.repetition.top_ngram_char_frac.2
    table = _section(config, path[:-1])
    if table is not None and table.get("enabled") is not False and isinstance(table.get(path[-1]), dict) and _number(table[path[-1]].get(name)):
        return [(f"{'.'.join(path)}.{name}", float(table[path[-1]][name]))]
    return []


def flat_items(record: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` for every non-null leaf of ``record`` (what a sample card shows)."""
    for key, value in record.items():
        if isinstance(value, dict):
            yield from flat_items(value, f"{prefix}{key}.")
        elif value is not None:
            yield f"{prefix}{key}", value
