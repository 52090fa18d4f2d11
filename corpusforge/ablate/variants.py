"""Ablation variants: a name plus build-config overrides, from the command line or a config file.

    parse_variant("raw:quality.enabled=false,dedup.enabled=false")   # Variant("raw", {...})
    load_variants("variants.yaml")    # `variants:` (name -> overrides) and `sweeps:` (one key, many values)

A variant may change only what the build does (its cleaning stages and inputs): the tokenizer, the encoding and
the model are the same for every variant, or the comparison would not be one.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Any

from corpusforge.core.config_loader import ConfigError, apply_overrides, from_dict, load_file, to_dict
from corpusforge.core.errors import UserError
from corpusforge.config import Config

# The top-level config keys a variant may override: what decides the build's clean text.
VARIANT_SECTIONS = ("inputs", "normalize", "quality", "dedup", "pii")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=+-]*$")  # a directory name on every filesystem
_NEXT_KEY = re.compile(r",(?=\s*[A-Za-z_][\w.]*\s*=)")  # a comma that starts the next key=value (lists keep theirs)


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)  # dotted key -> value

    def override_strings(self) -> list[str]:
        return [f"{key}={json.dumps(value)}" for key, value in self.overrides.items()]


def parse_variant(spec: str) -> Variant:
    """``NAME`` or ``NAME:key=value,key=value``; values are YAML (``false``, ``0.8``, ``[a, b]``)."""
    from corpusforge.core.config_loader import parse_override

    name, _, rest = spec.partition(":")
    overrides: dict[str, Any] = {}
    for item in (_NEXT_KEY.split(rest) if rest.strip() else []):
        if "=" not in item:
            raise UserError(f"--variant {spec!r}: {item.strip()!r} is not key=value; write NAME:key=value,key=value")
        keys, value = parse_override(item.strip())
        overrides[".".join(keys)] = value
    return _checked(Variant(name.strip(), overrides), f"--variant {spec!r}")


def load_variants(path: str) -> list[Variant]:
    """The variants of a YAML/TOML file::

        variants:                     # name -> overrides (dotted keys or nested sections); {} = the defaults
          raw: {quality.enabled: false, dedup.enabled: false, pii.enabled: false}
          full: {}
        sweeps:                       # one variant per value: NAME-VALUE, with `set` under each
          - {name: ppl, key: quality.perplexity.max_perplexity, values: [500, 1000], set: {dedup.enabled: false}}
    """
    data = load_file(path)
    unknown = sorted(set(data) - {"variants", "sweeps"})
    if unknown:
        raise UserError(f"{path}: unknown top-level key {unknown[0]!r}; a variants file holds `variants:` and `sweeps:`")
    variants = [_checked(Variant(str(name), _flatten(overrides or {}, f"{path}: variant {name!r}")),
                         f"{path}: variant {name!r}")
                for name, overrides in (data.get("variants") or {}).items()]
    for index, sweep in enumerate(data.get("sweeps") or []):
        where = f"{path}: sweeps[{index}]"
        if not isinstance(sweep, dict) or not {"name", "key", "values"} <= set(sweep):
            raise UserError(f"{where} needs name, key and values (and optionally set)")
        base = _flatten(sweep.get("set") or {}, where)
        for value in sweep["values"]:
            variants.append(_checked(Variant(f"{sweep['name']}-{value}", {**base, str(sweep["key"]): value}), where))
    if not variants:
        raise UserError(f"{path} lists no variants (`variants:` or `sweeps:`)")
    return variants


def _flatten(overrides: Any, where: str, prefix: str = "") -> dict[str, Any]:
    if not isinstance(overrides, dict):
        raise UserError(f"{where}: overrides must be a mapping of key: value")
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        dotted = f"{prefix}{key}"
        # a nested section is flattened, except `inputs` (a list) and values of dict-typed keys under it
        if isinstance(value, dict) and dotted.split(".")[0] != "inputs":
            out.update(_flatten(value, where, dotted + "."))
        else:
            out[dotted] = value
    return out


def _checked(variant: Variant, where: str) -> Variant:
    if not _NAME.match(variant.name):
        raise UserError(f"{where}: variant name {variant.name!r} must be letters, digits and _ . = + - "
                        "(it names a directory)")
    for key in variant.overrides:
        if key.split(".")[0] not in VARIANT_SECTIONS:
            raise UserError(f"{where}: {key} is not a build setting; a variant may change only "
                            f"{', '.join(VARIANT_SECTIONS)} (the tokenizer and model are the same for every variant)")
    return variant


def check_unique(variants: list[Variant]) -> None:
    seen: set[str] = set()
    for variant in variants:
        if variant.name in seen:
            raise UserError(f"two variants are named {variant.name!r}; give each variant its own name")
        seen.add(variant.name)


def variant_config(base: Config, variant: Variant) -> Config:
    """``base`` with the variant's overrides applied and checked."""
    try:
        return from_dict(type(base), apply_overrides(to_dict(base), variant.override_strings()))
    except ConfigError as exc:
        raise UserError(f"variant {variant.name!r}: {exc}") from None


def build_key(config: Config) -> str:
    """What decides a variant's build: equal keys, one build (reused by every variant that has it)."""
    data = to_dict(config)
    relevant = {name: data[name] for name in (*VARIANT_SECTIONS, "build")}
    relevant["output"] = {k: data["output"][k] for k in ("max_doc_chars", "shard_target_mb")}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]
