"""Typed configuration: dataclasses loaded from YAML/TOML, overridden with ``--set key=value``, validated.

The loader is generic: it walks a dataclass's type hints, so a stage only declares its fields (with
defaults, types and a ``__post_init__`` for range checks) and gets file loading, ``--set`` overrides and
errors that name the bad key and the allowed values for free.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import pathlib
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints


def setting(default: Any = dataclasses.MISSING, help: str = "", *, factory: Any = dataclasses.MISSING,
            same_output: bool = False, secret: bool = False) -> Any:
    """The one way to declare a config field: its default (``factory`` for a mutable one) and the help line that
    docs/configuration.md, ``corpusforge config`` and the JSON Schema show. ``same_output``: the setting chooses
    only how the output is computed, so checkpoint fingerprints leave it out (``output_dict``). ``secret``: never
    written or printed (``public_dict``)."""
    metadata: dict[str, Any] = {"help": help}
    if same_output:
        metadata["same_output"] = True
    if secret:
        metadata["secret"] = True
    return dataclasses.field(default=default, default_factory=factory, metadata=metadata)


class ConfigError(ValueError):
    """A configuration problem, with the dotted key that caused it."""


# Bounds on what a config may hold, checked before anything is built from it: a config is a few hundred values,
# so these only stop input made to exhaust the machine (a YAML alias bomb, a file of gigabytes, deep nesting).
MAX_CONFIG_BYTES = 4 << 20
MAX_CONFIG_VALUES = 100_000  # scalars, lists and mappings once YAML aliases are expanded
MAX_CONFIG_DEPTH = 64


def _bounded_yaml(text: str, where: str) -> Any:
    """``yaml.safe_load(text)``, refused (``ConfigError``) when the document, with every alias expanded, holds
    more than ``MAX_CONFIG_VALUES`` values, nests deeper than ``MAX_CONFIG_DEPTH``, or refers to itself: the
    composed node graph is measured (each shared node once, memoised) before any Python object is built."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise ConfigError(f"{where}: nested deeper than {MAX_CONFIG_DEPTH} levels") from None
    if node is None:
        return None
    sizes: dict[int, int] = {}
    visiting: set[int] = set()

    def size(n, depth: int) -> int:
        if depth > MAX_CONFIG_DEPTH:
            raise ConfigError(f"{where}: nested deeper than {MAX_CONFIG_DEPTH} levels")
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in visiting:
            raise ConfigError(f"{where}: a YAML alias refers to a node that contains it (a value that would never end)")
        visiting.add(key)
        total = 1
        if isinstance(n, yaml.MappingNode):
            children = [c for pair in n.value for c in pair]
        elif isinstance(n, yaml.SequenceNode):
            children = n.value
        else:
            children = []
        for child in children:
            total += size(child, depth + 1)
            if total > MAX_CONFIG_VALUES:
                raise ConfigError(f"{where}: more than {MAX_CONFIG_VALUES:,} values once YAML aliases (*name) are "
                                  "expanded; a config holds far fewer: remove the repeated aliases")
        visiting.discard(key)
        sizes[key] = total
        return total

    size(node, 0)
    loader = yaml.SafeLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_file(path: str | pathlib.Path) -> dict[str, Any]:
    """Read a YAML (``.yaml``/``.yml``) or TOML (``.toml``) file into a dict (bounded: ``_bounded_yaml``)."""
    path = pathlib.Path(path)
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    if not path.is_file():
        raise ConfigError(f"cannot read config file {path}: not a regular file")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is {path.stat().st_size:,} bytes, more than a config can be "
                          f"({MAX_CONFIG_BYTES:,}); is it the right file?")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if path.suffix == ".toml":
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {' '.join(str(exc).split())}") from None
        except (RecursionError, ValueError) as exc:
            raise ConfigError(f"{path}: invalid TOML: {_short(exc)}") from None
        _check_plain(data, str(path))
        return data
    if path.suffix in (".yaml", ".yml", ".json"):
        import yaml

        try:
            data = _bounded_yaml(text, str(path))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
            raise ConfigError(f"{path}: invalid YAML{where}: {problem}") from None
        except (RecursionError, ValueError, TypeError, OverflowError) as exc:  # an integer past Python's digit limit
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{path}: invalid YAML: {_short(exc)}") from None
        _check_plain(data, str(path))
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections, got {type(data).__name__}")
        return data
    raise ConfigError(f"{path}: unknown config format {path.suffix!r}; use .yaml, .yml or .toml")


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "…"


def _check_plain(data: Any, where: str) -> None:
    """Refuse what a config cannot hold and later steps would choke on: keys that are not strings (YAML allows
    ``? [a, b]`` or ``1: x``), NaN, and integers too large to mean anything (past 2**63)."""
    stack = [(data, where)]
    while stack:
        value, key = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise ConfigError(f"{key}: the key {k!r} is not a string; config keys are names")
                stack.append((v, f"{key}.{k}" if key != where else k))
        elif isinstance(value, list):
            stack.extend((v, f"{key}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, float) and value != value:
            raise ConfigError(f"{key}: NaN is not a value a setting can take")
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 1 << 63:
            raise ConfigError(f"{key}: {str(value)[:20]}… is too large for any setting (at most 2**63 - 1)")


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"dedup.threshold=0.8"`` -> ``(["dedup", "threshold"], 0.8)``; the value is parsed as YAML."""
    import yaml

    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. --set dedup.threshold=0.8")
    key, _, raw = item.partition("=")
    key = key.strip()
    if not key:
        raise ConfigError(f"--set {item!r}: the key is empty")
    if len(item) > MAX_CONFIG_BYTES:
        raise ConfigError(f"--set {key}: the value is longer than a config can be ({MAX_CONFIG_BYTES:,} bytes)")
    try:
        value = _bounded_yaml(raw, f"--set {key}") if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    except (RecursionError, ValueError, TypeError, OverflowError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"--set {key}: {_short(exc)}") from None
    _check_plain(value, f"--set {key}")
    return key.split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    data = json.loads(json.dumps(data))  # deep copy of plain data
    for item in overrides:
        keys, value = parse_override(item)
        node = data
        for depth, key in enumerate(keys[:-1]):
            child = node.get(key)
            if child is None:
                child = node[key] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"--set {item!r}: {'.'.join(keys[: depth + 1])} is not a section")
            node = child
        node[keys[-1]] = value
    return data


def _type_name(tp: Any) -> str:
    if get_origin(tp) is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    return getattr(tp, "__name__", str(tp))


def _convert(value: Any, tp: Any, key: str) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        options = get_args(tp)
        if value is None:
            if type(None) in options:
                return None
            raise ConfigError(f"{key}: may not be null")
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(value, option, key)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{key}: {value!r} matches none of {_type_name(tp)}")
    if origin is Literal:
        allowed = get_args(tp)
        if value not in allowed:
            near = closest(str(value), [str(a) for a in allowed])
            raise ConfigError(f"{key}: {value!r} is not allowed; choose one of {', '.join(map(repr, allowed))}"
                              + (f" (did you mean {near!r}?)" if near is not None else ""))
        return value
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a section (mapping), got {value!r}")
        return from_dict(tp, value, key)
    if origin in (list, tuple, typing.Sequence):
        args = get_args(tp) or (Any,)
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        items = [_convert(v, args[0], f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        kt, vt = get_args(tp) or (str, Any)
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        return {str(k): _convert(v, vt, f"{key}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in tp)
            raise ConfigError(f"{key}: {value!r} is not allowed; choose one of {allowed}") from None
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads 3e-4 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{key}: expected a number, got {value!r}")
    if tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{key}: expected a string, got {value!r}")
    return value


# Every seed setting (a field named ``seed`` or ``*_seed``, any section) is what every generator it reaches takes:
# numpy's refuse a negative seed (train.seed=-1 raised in a DataLoader worker), numpy's legacy RandomState
# (datasketch's permutations: dedup.near.seed) and scikit-learn's random_state one past 32 bits. The two seeds that
# only key a hash (``HASH_KEY_SEEDS``: 8 signed bytes) take any 64-bit integer, negative ones included.
SEED_MAX = 2**32 - 1
HASH_KEY_SEEDS = ("split_seed", "mixture_seed")


def seed_range(name: str) -> tuple[int, int, str]:
    """``(lowest, highest, in words)`` of the seed setting or flag ``name``."""
    if name in HASH_KEY_SEEDS:
        return -2**63, 2**63 - 1, "from -2**63 to 2**63 - 1"
    return 0, SEED_MAX, "from 0 to 2**32 - 1"


def from_dict(cls: type, data: dict[str, Any], prefix: str = "") -> Any:
    """Build dataclass ``cls`` from ``data``; unknown keys, wrong types and seeds outside ``seed_range``
    raise ``ConfigError``."""
    hints = get_type_hints(cls)  # each field resolved in the module of the class that declares it
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = f"{prefix}." if prefix else ""
        near = closest(str(unknown[0]), list(fields))
        if near is not None:
            raise ConfigError(f"unknown key {where}{unknown[0]}; did you mean {where}{near}?")
        raise ConfigError(
            f"unknown key {where}{unknown[0]}; allowed keys{' in ' + prefix if prefix else ''}: "
            + ", ".join(sorted(fields))
        )
    kwargs = {}
    for name, value in data.items():
        key = f"{prefix}.{name}" if prefix else name
        kwargs[name] = _convert(value, hints[name], key)
        if (name == "seed" or name.endswith("_seed")) and isinstance(kwargs[name], int):
            lowest, highest, words = seed_range(name)
            if not lowest <= kwargs[name] <= highest:
                raise ConfigError(f"{key} must be an integer {words}, got {kwargs[name]}")
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:
        where = f"{prefix}: " if prefix else ""
        raise ConfigError(f"{where}{exc}") from None


def closest(word: str, choices: list[str]) -> str | None:
    """The choice nearest to a mistyped ``word`` (difflib's ratio, at least 0.6; case ignored), or None."""
    import difflib

    lowered = {c.lower(): c for c in choices}
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


def to_dict(obj: Any, *, outputs_only: bool = False) -> Any:
    """A dataclass as plain, JSON-ready data (the inverse of ``from_dict``); ``outputs_only``: without the fields
    marked ``same_output`` (see ``output_dict``)."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_dict(getattr(obj, f.name), outputs_only=outputs_only) for f in dataclasses.fields(obj)
                if not (outputs_only and f.metadata.get("same_output"))}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v, outputs_only=outputs_only) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v, outputs_only=outputs_only) for k, v in obj.items()}
    if isinstance(obj, enum.Enum):
        return obj.value
    return obj


# A field declared with ``metadata={"same_output": True, ...}`` chooses only how a stage computes (dedup.joins,
# dedup.near.components): every value gives the same output, so checkpoint fingerprints leave it out.
def output_dict(obj: Any) -> Any:
    """``to_dict`` without the fields marked ``same_output``: what a stage's output depends on."""
    return to_dict(obj, outputs_only=True)


# A field declared with ``metadata={"secret": True, ...}`` (pii.hash_salt) is never written or printed: what
# stands in its place says whether it was set, and with which fingerprint.
REDACTED_PREFIX = "<secret"
_FINGERPRINT_LABEL = b"corpusforge secret fingerprint v1"


def fingerprint(secret: str) -> str:
    """An HMAC-SHA256 of a fixed label keyed with ``secret`` (16 hex digits): equal secrets give equal
    fingerprints, so two runs can be compared, but finding the secret from it means guessing the secret
    itself (a keyed MAC, not a hash of something short). Keying with the secret, rather than hashing it
    beside a domain tag, also keeps it unrelated to the salted hashes the secret itself makes."""
    import hashlib
    import hmac

    return hmac.new(secret.encode("utf-8"), _FINGERPRINT_LABEL, hashlib.sha256).hexdigest()[:16]


def redacted(secret: str) -> str:
    """What is written in place of a secret: ``""`` when unset, else a marker with its fingerprint."""
    return f"{REDACTED_PREFIX} set, fingerprint hmac-sha256:{fingerprint(secret)}>" if secret else ""


def public_dict(obj: Any) -> Any:
    """``to_dict`` with every secret field redacted: for manifest.json, the report and ``corpusforge config``."""
    if dataclasses.is_dataclass(obj):
        return {f.name: redacted(getattr(obj, f.name)) if f.metadata.get("secret") else public_dict(getattr(obj, f.name))
                for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [public_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: public_dict(v) for k, v in obj.items()}
    return to_dict(obj)


def check_not_redacted(value: str, key: str) -> None:
    """A secret copied back from a manifest or ``corpusforge config`` is the marker, not the secret."""
    check(not value.startswith(REDACTED_PREFIX),
          f"{key} holds the redacted marker that manifest.json and `corpusforge config` print instead of the "
          f"secret; set the real value (or leave it empty)")


def check(condition: bool, message: str) -> None:
    """For ``__post_init__`` range checks: raise a ConfigError with ``message`` unless ``condition``."""
    if not condition:
        raise ConfigError(message)


def check_finite(section: Any, name: str) -> None:
    """Refuse, in one line, an infinity in any float setting of ``section`` (a config dataclass, its nested
    sections too; ``name``: its dotted name). NaN never gets here (``_check_plain``); an infinity is a YAML and
    ``--set`` value (``.inf``, ``inf``) that passes every range check written as ``> 0`` or ``>= 0`` and means no
    setting of a trainer: ``train.optim.lr=inf`` diverged to NaN, and a span of infinite mean length is never
    drawn. Called once by a section's top ``__post_init__`` for all its floats, rather than in each check."""
    import math
    import typing

    hints = typing.get_type_hints(type(section))
    for item in dataclasses.fields(section):
        value = getattr(section, item.name)
        if dataclasses.is_dataclass(value):
            check_finite(value, f"{name}.{item.name}")
        elif hints[item.name] is float and isinstance(value, float):
            check(math.isfinite(value), f"{name}.{item.name} must be a finite number, got {value}")


def field_docs(cls: type) -> list[tuple[str, str, str, str]]:
    """``(key, type, default, help)`` for every leaf field, help from ``field(metadata={"help": ...})``."""
    rows = []

    def walk(c: type, prefix: str) -> None:
        h = get_type_hints(c)
        for f in dataclasses.fields(c):
            tp = h[f.name]
            key = f"{prefix}{f.name}"
            if dataclasses.is_dataclass(tp):
                walk(tp, key + ".")
                continue
            item = get_args(tp)[0] if get_origin(tp) is list and get_args(tp) else None
            if item is not None and dataclasses.is_dataclass(item):
                rows.append((key, f"list[{item.__name__}]", "[]", f.metadata.get("help", "")))
                walk(item, key + "[].")
                continue
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                default = f.default_factory()  # type: ignore[misc]
            else:
                default = "(required)"
            rows.append((key, _type_label(tp), json.dumps(to_dict(default)) if default != "(required)" else default,
                         f.metadata.get("help", "")))

    walk(cls, "")
    return rows


def _type_label(tp: Any) -> str:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return " | ".join(_type_label(a) for a in get_args(tp))
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if origin in (list, tuple):
        return f"list[{_type_label(get_args(tp)[0])}]" if get_args(tp) else "list"
    if origin is dict:
        return "mapping"
    if tp is type(None):
        return "null"
    return getattr(tp, "__name__", str(tp))


def json_schema(cls: type, title: str = "") -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of dataclass ``cls``: every field with its type, allowed values, default
    and help (``description``), unknown keys refused, so an editor checks a config file as it is typed. Range
    checks in ``__post_init__`` are not in it; loading the file still runs them."""
    schema = _schema_of(cls)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **({"title": title} if title else {}), **schema}


def _schema_of(tp: Any) -> dict[str, Any]:
    origin = get_origin(tp)
    if tp is Any:
        return {}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema_of(a) for a in get_args(tp)]}
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if dataclasses.is_dataclass(tp):
        hints = get_type_hints(tp)
        properties = {}
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            prop = _schema_of(hints[f.name])
            if f.metadata.get("help"):
                prop["description"] = f.metadata["help"]
            if f.default is not dataclasses.MISSING:
                default = to_dict(f.default)
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                default = to_dict(f.default_factory())  # type: ignore[misc]
            else:
                default = dataclasses.MISSING
            if default is not dataclasses.MISSING and not f.metadata.get("secret"):
                try:
                    json.dumps(default)
                    prop["default"] = default
                except TypeError:
                    pass
            properties[f.name] = prop
        required = [f.name for f in dataclasses.fields(tp) if f.init and f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING]  # type: ignore[misc]
        out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
        if tp.__doc__ and not tp.__doc__.startswith(f"{tp.__name__}("):
            out["description"] = " ".join(tp.__doc__.split())
        if required:
            out["required"] = required
        return out
    if origin in (list, tuple, typing.Sequence):
        args = get_args(tp)
        return {"type": "array", **({"items": _schema_of(args[0])} if args else {})}
    if origin is dict:
        args = get_args(tp)
        return {"type": "object", **({"additionalProperties": _schema_of(args[1])} if len(args) == 2 else {})}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if tp is type(None):
        return {"type": "null"}
    # YAML 1.1 reads 3e-4 (no dot) as a string, which the loader takes as a number: so may the schema
    return {bool: {"type": "boolean"}, int: {"type": "integer"}, float: {"anyOf": [{"type": "number"}, {"type": "string", "pattern": "^[-+]?[0-9.]+[eE][-+]?[0-9]+$"}]},
            str: {"type": "string"}}.get(tp, {})
