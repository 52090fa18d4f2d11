"""``--leave-one-out SECTION``: one variant per sub-step or rule of a config section, with just that one off.

The list comes from the section's dataclasses as configured (defaults, ``-c``, ``--set``), not from a hand
list, so a new rule is ablated without an edit here:

- a **section with sub-steps** (``quality``: langid, junk, gopher, repetition, c4, fineweb, ...; ``dedup``:
  exact, near, lines, sentences) gives one variant per sub-section that is on: ``<key>.enabled=false``, or
  ``<key>.filter=false`` where the sub-section has a ``filter`` switch (language ID: documents are still
  labelled, so the rules that read the language behave as before; only its drops stop);
- a **section of rules** (``quality.junk``, ``quality.gopher``: no sub-steps) gives one variant per rule that
  is on: a ``min_``/``max_`` threshold that ``null`` turns off (``quality.gopher.min_stop_words=null``; not a
  setting that limits where rules apply, such as ``min_chars`` of language ID), each
  entry of a table of such thresholds (``quality.repetition.dup_ngram_char_frac.5=null``), and each
  ``drop_*`` / ``remove_*`` switch (``quality.junk.drop_lorem_ipsum=false``).

Variants are named ``without-<key>`` (``without-quality.junk``).
"""
from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from corpusforge.ablate.variants import VARIANT_SECTIONS, Variant
from corpusforge.core.errors import UserError

PREFIX = "without-"


def _section(config: Any, section: str) -> Any:
    node = config
    for part in section.split("."):
        if not dataclasses.is_dataclass(node) or part not in {f.name for f in dataclasses.fields(node)}:
            raise UserError(f"--leave-one-out {section}: no config section {section!r}; name one of "
                            f"{', '.join(s for s in VARIANT_SECTIONS if s != 'inputs')} or a sub-section such as "
                            "quality.junk")
        node = getattr(node, part)
    if not dataclasses.is_dataclass(node):
        raise UserError(f"--leave-one-out {section}: {section} is a setting, not a section; name a section such as "
                        "quality or quality.junk")
    return node


def _switch(node: Any) -> str | None:
    names = {f.name for f in dataclasses.fields(node)}
    for name in ("filter", "enabled"):  # filter first: language ID keeps labelling, only its drops stop
        if name in names and isinstance(getattr(node, name), bool):
            return name
    return None


def _on(node: Any) -> bool:
    """A sub-step runs and drops: its switch is on, and so is ``enabled`` where it has one beside ``filter``."""
    switch = _switch(node)
    return bool(switch) and getattr(node, switch) and getattr(node, "enabled", True) is not False


def _optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


def _gate(f: dataclasses.Field) -> bool:
    """A setting that limits where rules apply (``min_chars`` of language ID): null makes them apply more."""
    text = str(f.metadata.get("help", ""))
    return " only " in text or "not dropped" in text


def _rules(node: Any, prefix: str) -> list[tuple[str, Any]]:
    """(dotted key, the value that turns it off) of each rule of ``node`` that is on."""
    hints = typing.get_type_hints(type(node))
    out: list[tuple[str, Any]] = []
    for f in dataclasses.fields(node):
        value, tp, key = getattr(node, f.name), hints[f.name], f"{prefix}.{f.name}"
        if _optional(tp) and value is not None and f.name.startswith(("min_", "max_")) and not _gate(f):
            out.append((key, None))
        elif typing.get_origin(tp) is dict and isinstance(value, dict) and any(
                _optional(arg) for arg in typing.get_args(tp)[1:]):
            out.extend((f"{key}.{k}", None) for k, v in value.items() if v is not None)
        elif tp is bool and value is True and f.name.startswith(("drop_", "remove_")):
            out.append((key, False))
    return out


def leave_one_out(config: Any, section: str) -> list[Variant]:
    """The variants that switch off one sub-step (or, in a section without sub-steps, one rule) of
    ``section`` each; refuses a section that is off or has nothing on to switch off."""
    if section.split(".")[0] not in VARIANT_SECTIONS or section.split(".")[0] == "inputs":
        raise UserError(f"--leave-one-out {section}: a variant may change only "
                        f"{', '.join(s for s in VARIANT_SECTIONS if s != 'inputs')}; name one of them or a "
                        "sub-section such as quality.junk")
    node = _section(config, section)
    parts = section.split(".")
    for depth in range(1, len(parts) + 1):  # the section and every section above it must be on
        above = _section(config, ".".join(parts[:depth]))
        switch = _switch(above)
        if switch == "enabled" and not above.enabled:
            raise UserError(f"--leave-one-out {section}: {'.'.join(parts[:depth])} is off in the configuration; "
                            "turn it on (--set ...enabled=true) to ablate its parts")
    steps = []
    for f in dataclasses.fields(node):
        child = getattr(node, f.name)
        if dataclasses.is_dataclass(child) and _on(child):
            steps.append((f"{section}.{f.name}.{_switch(child)}", False))
    items = steps or _rules(node, section)
    if not items:
        raise UserError(f"--leave-one-out {section}: nothing in {section} is on to switch off")
    return [Variant(PREFIX + key.removesuffix(".enabled").removesuffix(".filter"), {key: value})
            for key, value in items]
