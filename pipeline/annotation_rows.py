"""A document's annotations (and a removal's details) as typed rows: values without their keys.

After the quality stage a document's ``annotations`` is a nested dict of ~60 keys (``lang``, ``lang_score``,
``quality.{length,junk,gopher,repetition,c4,fineweb}.*``, ``pii_count``, ``pii_entities.*``): ~1.1 KB as Beam's
``FastPrimitivesCoder`` writes it, of which the keys are ~0.8 KB, and decoding it makes every key a new string.
The keys are known before the pipeline runs: they are the fields the build's stages declare
(``Stage.annotation_fields`` / ``detail_fields``, gathered by ``build.shard_schemas``). ``Rows`` holds those
fields; ``document_coder`` writes a dict whose keys are in the declared order as a row, the tuple
``(shape, value, value, ...)``:

- ``shape`` names which declared fields the dict holds, and for each declared struct among them whether its
  value is ``None``, another value, or a dict of that struct's fields (recursively); its values are the row's
  remaining items, flattened in key order. The shape is a string that describes itself against the declared
  fields, with a digest of those fields in front: every worker process that holds the same ``Rows`` (it travels
  inside the coder) decodes it the same, whatever it has seen before, and one holding other fields refuses it.
- a dict whose keys are not the declared ones in their order (an undeclared value, keys added in another order)
  is no row: the coder writes it as a dict, as before. A value that is not a dict where a struct is declared, or
  a dict of other keys there, is carried as it is.

Decoding gives the same dict: the same keys in the same order and the same values (the values are written by
``FastPrimitivesCoder`` as before). One difference: a key that is a ``str`` subclass equal to a declared name
comes back a ``str``, whatever the process has coded before (the cached encoders, found by an equal key tuple,
take it, so the first dict that shows a shape must too: else the bytes would depend on the order a worker saw
its dicts in).

Each shape is compiled once per process into two straight-line functions (an encoder that checks the dict's
keys as it reads its values, a decoder that is one dict display). Generated code, as ``collections.namedtuple``
and ``dataclasses`` make theirs, because it is what makes a row cheaper than the dict: a loop over a
shape's fields in Python costs more than Beam's compiled dict coding saves (``bench/coder.py``).
"""
from __future__ import annotations

import hashlib
import threading
from typing import Any

# At most this many shapes (and key tuples) are kept compiled per process; past it the caches start again.
_CACHE = 256
# Encoders tried for one top-level key tuple (most recently added first) before the shape is worked out again.
_TRIES = 4
_NONE, _OTHER = 0, 1  # a declared struct's value: None, or anything that is not a dict of its fields


def _fields_of(kind, top: bool) -> tuple | None:
    """A pyarrow struct type as ``((name, fields of a struct-typed field or None), ...)``; None: not a struct,
    or one whose names repeat. The top struct's ``other`` (JSON of undeclared values) is no field of a row."""
    import pyarrow as pa

    from corpusforge.pipeline.document import OTHER

    if kind is None or not pa.types.is_struct(kind):
        return None
    fields = tuple((f.name, _fields_of(f.type, False)) for f in kind if not (top and f.name == OTHER))
    return fields if len({name for name, _ in fields}) == len(fields) else None


class Row:
    """Codes the dicts of one declared struct (a build's annotations, or its removals' details) as rows."""

    def __init__(self, fields: tuple, label: str):
        self.fields = fields
        self.label = label
        self.prefix = label[0] + hashlib.sha1(repr(fields).encode()).hexdigest()[:6] + ":"  # in every row
        self._setup()

    def _setup(self) -> None:
        self._encoders: dict[tuple, list] = {}  # top-level keys -> compiled encoders; [] when no row holds them
        self._decoders: dict[str, Any] = {}
        # every encoder compiled, by shape: more than _TRIES shapes of one key tuple in turn (a struct None in some
        # dicts, a dict in others) are worked out again (~10 us), not compiled again (~200 us)
        self._compiled: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"fields": self.fields, "label": self.label, "prefix": self.prefix}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._setup()

    def __eq__(self, other):
        return type(other) is Row and other.prefix == self.prefix and other.fields == self.fields

    def __hash__(self):
        return hash(self.prefix)

    def encode(self, values: dict) -> tuple | dict:
        """``values`` as a row, or ``values`` itself when it is no row of these fields (or empty)."""
        if not values:
            return values
        keys = tuple(values)
        encoders = self._encoders.get(keys)
        if encoders is not None:
            for encoder in encoders:
                row = encoder(values)
                if row is not None:
                    return row
            if not encoders:
                return values
        shape: list[int] = []
        if not _describe(values, self.fields, shape):
            self._remember(keys, None)
            return values
        name = self.prefix + ",".join(map(str, shape))
        encoder = self._compiled.get(name)  # a shape met before, pushed out of the _TRIES of its keys
        if encoder is None:
            encoder = _compile_encoder(name, self.fields, shape)
            with self._lock:
                if len(self._compiled) >= _CACHE:
                    self._compiled.clear()
                self._compiled[name] = encoder
        self._remember(keys, encoder)
        return encoder(values)

    def _remember(self, keys: tuple, encoder) -> None:
        with self._lock:
            if len(self._encoders) >= _CACHE:
                self._encoders.clear()
            encoders = self._encoders.get(keys)
            if encoder is None:
                self._encoders[keys] = encoders or []
            else:
                self._encoders[keys] = [encoder, *(encoders or [])][:_TRIES]

    def decode(self, row: tuple) -> dict:
        decoder = self._decoders.get(row[0])
        if decoder is None:
            shape = row[0]
            if type(shape) is not str or not shape.startswith(self.prefix):
                raise ValueError(f"a row of shape {shape!r} was not written for the {self.label} fields of this "
                                 f"coder ({self.prefix!r}): it was encoded by another build's coder")
            decoder = _compile_decoder(self.fields, [int(code) for code in shape[len(self.prefix):].split(",")])
            with self._lock:
                if len(self._decoders) >= _CACHE:
                    self._decoders.clear()
                self._decoders[shape] = decoder
        return decoder(row)


def _mask(values: dict, fields: tuple) -> int | None:
    """Which of ``fields`` ``values`` holds, as bits, when its keys are some of them in their order; else None."""
    mask, at = 0, -1
    names = [name for name, _ in fields]
    for key in values:
        if not isinstance(key, str):  # a str subclass too: the cached encoders (keyed by equal tuples) take it
            return None
        try:
            position = names.index(key, at + 1)
        except ValueError:
            return None
        mask |= 1 << position
        at = position
    return mask


def _describe(values: Any, fields: tuple, shape: list[int]) -> bool:
    """Append the shape codes of ``values`` against ``fields`` (mask + 2, then one code per declared struct it
    holds, depth first) to ``shape``; False when it is no dict of them."""
    mask = _mask(values, fields) if type(values) is dict else None
    if mask is None:
        return False
    shape.append(mask + 2)
    for position, (name, sub) in enumerate(fields):
        if mask >> position & 1 and sub is not None:
            value = values[name]
            if value is None:
                shape.append(_NONE)
            elif not _describe(value, sub, shape):
                shape.append(_OTHER)
    return True


def _is_other(value: Any, fields: tuple) -> bool:
    """``value`` is neither None nor a dict of ``fields`` (the shape code _OTHER)."""
    return value is not None and (type(value) is not dict or _mask(value, fields) is None)


def _walk(fields: tuple, shape: list[int]):
    """Yield the shape's nodes depth first: (mask, [(name, sub fields, code or None)...]) consumed in order."""
    codes = iter(shape)

    def node(fields, code):
        mask = code - 2
        present = [(name, sub) for position, (name, sub) in enumerate(fields) if mask >> position & 1]
        if mask < 0 or mask >> len(fields):
            raise ValueError("a row shape that does not fit its fields")
        children = []
        for name, sub in present:
            if sub is None:
                children.append((name, None, None))
            else:
                child = next(codes)
                children.append((name, sub, node(sub, child) if child > _OTHER else child))
        return children

    tree = node(fields, next(codes))
    if next(codes, None) is not None:
        raise ValueError("a row shape longer than its fields")
    return tree


def _compile_encoder(shape_name: str, fields: tuple, shape: list[int]):
    """``def encode(values)``: the row of a dict of this shape (its top-level keys already compared), or None."""
    tree = _walk(fields, shape)
    lines, out, constants = [], [], {"_is_other": _is_other, "SHAPE": shape_name}
    count = iter(range(1 << 30))

    def visit(var: str, children: list, indent: str) -> None:
        if all(sub is None for _, sub, _ in children):  # values only: no unpacking into names
            out.append(f"*{var}.values()")
            return
        names = [f"v{next(count)}" for _ in children]
        lines.append(f"{indent}{', '.join(names)}, = {var}.values()")
        for name, (_, sub, child) in zip(names, children):
            if sub is None:
                out.append(name)
            elif child == _NONE:
                lines.append(f"{indent}if {name} is not None: return None")
            elif child == _OTHER:
                constants[f"F{name}"] = sub
                lines.append(f"{indent}if not _is_other({name}, F{name}): return None")
                out.append(name)
            else:
                keys = f"K{name}"
                constants[keys] = tuple(key for key, _, _ in child)
                lines.append(f"{indent}if type({name}) is not dict or tuple({name}) != {keys}: return None")
                visit(name, child, indent)

    visit("values", tree, "    ")
    source = "def encode(values):\n" + "\n".join(lines) + f"\n    return (SHAPE, {''.join(v + ', ' for v in out)})\n"
    exec(source, constants)  # noqa: S102 - generated from declared field names (repr'd), see the module docstring
    return constants["encode"]


def _compile_decoder(fields: tuple, shape: list[int]):
    """``def decode(row)``: the dict of a row of this shape, as one dict display."""
    tree = _walk(fields, shape)
    count = iter(range(1 << 30))
    values: list[str] = []

    def display(children: list) -> str:
        items = []
        for key, sub, child in children:
            if sub is None or child == _OTHER:
                values.append(f"x{next(count)}")
                items.append(f"{key!r}: {values[-1]}")
            elif child == _NONE:
                items.append(f"{key!r}: None")
            else:
                items.append(f"{key!r}: {display(child)}")
        return "{" + ", ".join(items) + "}"

    body = display(tree)
    source = f"def decode(row):\n    _, {''.join(v + ', ' for v in values)}= row\n    return {body}\n"
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # noqa: S102 - keys are repr'd str literals; see the module docstring
    return namespace["decode"]


class Rows:
    """The declared fields of a build's annotations and removal details, carried by its document coder (pickled
    with it: only the fields travel; each process compiles its own shapes). Equal fields, equal ``Rows``."""

    def __init__(self, annotations=None, details=None):
        """``annotations`` / ``details``: pyarrow struct types (``document.struct_type``), or None."""
        fields = _fields_of(annotations, True)
        self.annotations = Row(fields, "annotations") if fields else None
        fields = _fields_of(details, True)
        self.details = Row(fields, "details") if fields else None

    @classmethod
    def of_schemas(cls, schemas: dict) -> "Rows":
        """From ``build.shard_schemas``: the removed shards' schema holds both structs."""
        removed = schemas.get("removed")
        if removed is None:
            return cls()
        names = removed.names
        return cls(removed.field("annotations").type if "annotations" in names else None,
                   removed.field("details").type if "details" in names else None)

    def __eq__(self, other):
        return type(other) is Rows and (self.annotations, self.details) == (other.annotations, other.details)

    def __hash__(self):
        return hash((self.annotations, self.details))

    def __bool__(self):
        return self.annotations is not None or self.details is not None
