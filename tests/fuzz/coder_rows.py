"""Fuzz family ``coder_rows``: annotations and removal details coded as typed rows (``annotation_rows``) come back
as pickling gives them, in bytes that do not depend on what the process coded before.

One case draws declared struct types (the build's annotations and details: nested structs, names that need
escaping, ``other``) and dicts around them: the declared keys or some of them, in their order or not, undeclared
keys, ``None`` or a leaf where a struct is declared, ``OrderedDict``, keys that are ``str`` subclasses, and
values of every kind ``FastPrimitivesCoder`` and its pickle fallback meet (bool, -0.0, NaN, ints past 64 bits,
bytes, tuples, dicts with non-str keys). Each ``Document``, ``Removed`` and ``Documents`` batch goes through
``DocumentCoder`` holding those ``Rows`` (and through the reference coder): decoded, it must equal the pickled
round trip (types, key order, float bits; a ``str`` subclass key may come back a ``str``); encoded by a coder
that has coded nothing before (a new worker), it must give the same bytes.
"""
from __future__ import annotations

import collections
import pathlib
import pickle
import random

FAMILY = "coder_rows"

_NAMES = ["a", "b", "c", "it's", "x\\y", "\u00e9", "", "other", "0", "lang"]


class _Key(str):
    """A str subclass (``numpy.str_`` is one)."""


def _struct(rng: random.Random, depth: int):
    import pyarrow as pa

    fields = []
    for name in rng.sample(_NAMES, rng.randrange(5)):
        if depth < 3 and rng.random() < 0.4:
            fields.append(pa.field(name, _struct(rng, depth + 1)))
        else:
            fields.append(pa.field(name, rng.choice([pa.int64(), pa.float64(), pa.string(), pa.bool_()])))
    return pa.struct(fields)


def _leaf(rng: random.Random):
    return rng.choice([None, True, False, 0, 1, -0.0, 0.0, float("nan"), float("inf"), 2 ** 70, -2 ** 63, 2 ** 63,
                       "s", _Key("k"), (1, 2), [1, "x"], {"k": 1}, {1: 2}, {True: 1}, b"by", 1.5])


def _value(rng: random.Random, kind):
    import pyarrow as pa

    if not pa.types.is_struct(kind):
        return _leaf(rng)
    draw = rng.random()
    if draw < 0.1:
        return None
    if draw < 0.15:
        return _leaf(rng)
    values = {}
    for field in kind:
        if rng.random() < 0.8:
            values[_Key(field.name) if rng.random() < 0.05 else field.name] = _value(rng, field.type)
    if rng.random() < 0.1:
        values["undeclared"] = 1
    if rng.random() < 0.1:
        items = list(values.items())
        rng.shuffle(items)
        values = dict(items)
    return collections.OrderedDict(values) if rng.random() < 0.05 else values


def _state(value):
    """What tells two values apart: types, key order, float bits (a str subclass key counted as its str)."""
    from corpusforge.pipeline.document import Document, Removed

    if isinstance(value, (Document, Removed)):
        return type(value).__name__, [(k, _state(v)) for k, v in value.__dict__.items()]
    if isinstance(value, dict):
        return type(value).__name__, [(str(k) if isinstance(k, str) else _state(k), _state(v))
                                      for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [_state(v) for v in value]
    if isinstance(value, float):
        return "float", repr(value)
    return type(value).__name__, value


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    from corpusforge.pipeline.annotation_rows import Rows
    from corpusforge.pipeline.document import Document, Removed
    from corpusforge.pipeline.document_coder import DocumentCoder, Documents, _DocumentFallbackCoderReference

    annotations_type, details_type = _struct(rng, 0), _struct(rng, 0)
    cases = []
    for _ in range(20):
        annotations, details = _value(rng, annotations_type), _value(rng, details_type)
        doc = Document("id", "text", "web", {}, annotations if isinstance(annotations, dict) else {})
        cases += [doc, Removed(doc, "stage", "reason", details if isinstance(details, dict) else {}),
                  Documents([doc, doc])]
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "case.pickle").write_bytes(pickle.dumps((annotations_type, details_type, cases)))
    rows = Rows(annotations_type, details_type)
    coder, reference = DocumentCoder(rows=rows), DocumentCoder(_DocumentFallbackCoderReference(rows))
    for number, value in enumerate(cases):
        want = _state(pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL)))
        encoded = coder.encode(value)
        for name, one in (("coder", coder), ("reference coder", reference)):
            back = _state(one.decode(one.encode(value)))
            assert back == want, f"case {number}: the {name} decoded {back!r}, pickling gives {want!r}"
        assert reference.encode(value) == encoded, f"case {number}: the reference coder wrote other bytes"
        fresh = pickle.loads(pickle.dumps(coder))  # a worker that has coded nothing yet
        assert fresh.encode(value) == encoded, (f"case {number}: a fresh coder wrote other bytes than one that "
                                                "coded the earlier cases (bytes depend on a process's history)")
