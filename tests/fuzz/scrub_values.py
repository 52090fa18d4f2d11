"""Fuzz family ``scrub_values``: values of every type around a text reach the PII scrubber.

The class: a non-string value inside a removal's details, a rejected record's detail or a document's metadata
(int, float, bool, None, nested dict / list / tuple / set / frozenset, dicts with non-str keys such as
``True`` / ``1`` / ``1.0`` / ``None`` / a tuple, str subclasses, bytes, ints past 4,300 digits, NaN and
infinities), with e-mail addresses and phone numbers planted in strings (and keys) at random depth.

The promise, checked on ``FieldScrubber`` (``details``, ``metadata`` with a random action per top-level key,
``value``: what ``ScrubRejected`` does with a detail that is no string):

- nothing raises;
- containers come back as their base type (a tuple as a tuple), the same length, keys that are no string as
  they were;
- numbers, booleans and None come back as they went in, value and type (a number that looks like a card or a
  phone is no text); the one exception is documented: in metadata under ``scrub`` a number in which the
  scrubber finds an entity, read after its key (``phone: 2025550173``), becomes the scrubbed text, which must
  then hold a placeholder and not the number's digits;
- no planted value is left in any string, bytes or key (read the canonical way, as ``tests/fuzz/pii.py`` does);
  a string with nothing planted comes back unchanged, with its type;
- ``hash`` turns every other leaf into 32 hex digits, ``keep`` leaves everything as it is.

For about one case in eight, a small real build as well (``corpusforge build``; the case's files under
``workdir``): JSON Lines documents whose metadata nests the planted values among JSON numbers (ints of up to
300 digits, NaN, Infinity), booleans and nulls, a Parquet file whose map column reads as (key, value) tuples,
documents the quality and dedup stages remove (so ``ScrubRemoved`` sees their metadata and details), and
malformed lines holding planted values (``ScrubRejected``). No planted value may appear in any file of the run
(clean/ included), and every number planted under a key that is no cue comes back in clean/ and removed/
as it went in.
"""
from __future__ import annotations

import collections
import contextlib
import io
import json
import math
import pathlib
import random
import re

FAMILY = "scrub_values"
TRIED: collections.Counter = collections.Counter()
SALT = "a-salt-of-sixteen-chars"
WORDS = ("river stone garden window paper music bridge cloud forest winter market signal harbor lantern meadow "
         "copper violet orchard").split()


class Tag(str):
    """A str subclass (an enum's value, ``numpy.str_``)."""


def _luhn(rng: random.Random, length: int = 16) -> int:
    digits = [4] + [rng.randrange(10) for _ in range(length - 2)]
    total = sum(d if i % 2 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(reversed(digits)))
    return int("".join(map(str, digits + [(10 - total % 10) % 10])))


class Case:
    """The values planted in one case: ``(kind, plain value)``, searched for in every output."""

    def __init__(self, rng: random.Random):
        from tests.fuzz.pii import values

        self.rng = rng
        self.planted: list[tuple[str, str]] = []
        self._values = values

    def pii(self) -> str:
        """A string holding a planted e-mail address or phone number (maybe disguised), after its cue."""
        from tests.fuzz.pii import disguise, escape

        kind = self.rng.choice(["email", "phone"])
        cue, plain = self._values(self.rng)[kind]
        value = disguise(self.rng, kind, escape(self.rng, kind, plain), line_breaks=False) \
            if self.rng.random() < 0.3 else plain
        self.planted.append((kind, plain))
        return f"{self.rng.choice(WORDS)} {cue} {value}" + self.rng.choice(["", ".", f" {self.rng.choice(WORDS)}"])

    def clean_text(self) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 4)))

    def number(self) -> int | float:
        rng = self.rng
        return rng.choice([
            lambda: rng.randint(-10, 10), lambda: rng.randint(-10 ** 6, 10 ** 6), lambda: _luhn(rng),
            lambda: rng.choice([2025550173, 12025550173, 4111111111111111, 2079460958, 71112345]),
            lambda: 10 ** rng.randint(20, 6000) + rng.randint(0, 99), lambda: -(10 ** rng.randint(65, 5000)),
            lambda: rng.random(), lambda: float(_luhn(rng)), lambda: rng.choice([math.nan, math.inf, -math.inf]),
            lambda: -0.0, lambda: 1e300, lambda: rng.uniform(-1e6, 1e6),
        ])()

    def leaf(self, hashable: bool):
        rng = self.rng
        kind = rng.choice(["number", "number", "bool", "none", "str", "str", "pii", "pii", "tag", "bytes"])
        TRIED[f"leaf {kind}"] += 1
        if kind == "number":
            return self.number()
        if kind == "bool":
            return rng.random() < 0.5
        if kind == "none":
            return None
        if kind == "str":
            return self.clean_text()
        if kind == "pii":
            return self.pii()
        if kind == "tag":
            return Tag(self.pii() if rng.random() < 0.5 else self.clean_text())
        data = (self.pii() if rng.random() < 0.6 else self.clean_text()).encode("utf-8")
        if rng.random() < 0.2:
            data += bytes([0xFF, 0xFE])  # not UTF-8
        return bytearray(data) if not hashable and rng.random() < 0.3 else data

    def key(self):
        rng = self.rng
        kind = rng.choice(["str", "str", "str", "pii", "true", "one", "float", "none", "tuple", "bytes", "int"])
        TRIED[f"key {kind}"] += 1
        return {"str": lambda: rng.choice(WORDS), "pii": self.pii, "true": lambda: True, "one": lambda: 1,
                "float": lambda: 1.0 if rng.random() < 0.5 else 2.5, "none": lambda: None,
                "tuple": lambda: (rng.choice([*WORDS, self.pii()]), rng.randint(0, 9)),
                "bytes": lambda: self.pii().encode(),
                "int": lambda: 10 ** rng.randint(1, 80)}[kind]()

    def value(self, depth: int, hashable: bool = False):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.35:
            return self.leaf(hashable)
        kind = rng.choice(["tuple", "frozenset"] if hashable else ["dict", "dict", "list", "tuple", "set", "frozenset"])
        TRIED[f"container {kind}"] += 1
        n = rng.randint(0, 4)
        if kind == "dict":
            return {self.key(): self.value(depth - 1) for _ in range(n)}
        if kind == "list":
            return [self.value(depth - 1) for _ in range(n)]
        if kind == "tuple":
            return tuple(self.value(depth - 1, hashable) for _ in range(n))
        items = [self.value(depth - 1, hashable=True) for _ in range(n)]
        return set(items) if kind == "set" else frozenset(items)

    def needles(self) -> list[str]:
        from tests.fuzz.pii import needles

        return [needle for kind, plain in self.planted for needle in needles(kind, plain)]


def _text_of(value) -> str | None:
    from corpusforge.pipeline.pii.canonical import canonical

    if isinstance(value, str):
        return canonical(str.__str__(value)).text.replace("\u00a0", " ")  # as tests/fuzz/pii.py's _plain reads
    if isinstance(value, (bytes, bytearray)):
        return canonical(bytes(value).decode("utf-8", "surrogateescape")).text.replace("\u00a0", " ")
    return None


def _clean(value) -> bool:
    """A string (or bytes) made of ``WORDS`` only: nothing planted in it."""
    text = _text_of(value)
    return text is not None and all(word in WORDS for word in text.split())


def _same(a, b) -> bool:
    """Value and type, NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


class Checker:
    def __init__(self, case: Case):
        self.needles = case.needles()
        self.case = case

    def leaks(self, text: str | None, where: str) -> None:
        if text is None:
            return
        for needle in self.needles:
            assert needle not in text, f"a planted value left the scrubber at {where}: {needle!r} in {text[:200]!r}"

    def key(self, before, after, where: str) -> None:
        """A dict key: strings (and bytes) hashed where they hold PII, else as they were; tuples walked; any other
        key as it was."""
        if isinstance(before, (tuple, frozenset)):
            assert type(after) is type(before) and len(after) == len(before), \
                f"{where}: key {before!r:.80} came back as {after!r:.80}"
            if isinstance(before, tuple):
                for k, k2 in zip(before, after):
                    self.key(k, k2, where)
            else:
                for k2 in after:
                    self.leaks(_text_of(k2), f"{where} key")
            return
        if isinstance(before, (str, bytes)):
            self.leaks(_text_of(after), f"{where} key")
            if _clean(before):
                assert after is before, f"{where}: key {before!r} without PII came back as {after!r}"
            return
        assert after is before, f"{where}: key {before!r:.60} came back as {after!r:.60}"

    def check(self, before, after, mode: str, where: str) -> None:
        """``after`` keeps the promise for ``before`` under ``mode`` (keep, hash, scrub, text)."""
        if mode == "keep":
            assert after is before, f"{where}: keep changed {before!r:.80} into {after!r:.80}"
            return
        if isinstance(before, dict):
            assert type(after) is dict and len(after) == len(before), f"{where}: the dict came back as {after!r:.120}"
            for (k, v), (k2, v2) in zip(before.items(), after.items()):
                self.key(k, k2, where)
                self.check(v, v2, mode, f"{where}[{k!r:.40}]")
            return
        if isinstance(before, (list, tuple)):
            kind = list if isinstance(before, list) else tuple
            assert type(after) is kind and len(after) == len(before), \
                f"{where}: {kind.__name__} came back as {after!r:.120}"
            for i, (v, v2) in enumerate(zip(before, after)):
                self.check(v, v2, mode, f"{where}[{i}]")
            return
        if isinstance(before, (set, frozenset)):
            kind = frozenset if isinstance(before, frozenset) else set
            assert type(after) is kind and len(after) <= len(before), \
                f"{where}: {kind.__name__} came back as {after!r:.120}"
            for item in after:
                self.leaks(_text_of(item), f"{where} member")
            for item in before:
                if mode == "text" and (item is None or isinstance(item, (bool, int, float))):
                    assert any(x is item for x in after), f"{where}: member {item!r:.60} lost"
            return
        self.leaf(before, after, mode, where)

    def leaf(self, before, after, mode: str, where: str) -> None:
        if before is None or isinstance(before, bool):
            assert after is before, f"{where}: {before!r} came back as {after!r}"
            return
        if mode == "hash":
            assert type(after) is str and re.fullmatch("[0-9a-f]{32}", after), f"{where}: not hashed: {after!r:.80}"
            return
        if isinstance(before, (int, float)):
            if _same(before, after):
                return
            # only metadata numbers may be scrubbed, and only into a placeholder without their digits
            assert mode == "metadata", f"{where}: the number {before!r:.60} came back as {after!r:.60}"
            assert isinstance(after, str) and "<" in after, \
                f"{where}: the number {before!r:.60} came back as {after!r:.60}"
            digits = "".join(c for c in repr(before) if c.isdigit())
            assert digits not in after, f"{where}: {before!r} scrubbed into {after!r} keeps its digits"
            TRIED["metadata number scrubbed"] += 1
            return
        if isinstance(before, (str, bytes, bytearray)):
            self.leaks(_text_of(after), where)
            base = str if isinstance(before, str) else type(before)
            assert isinstance(after, base), f"{where}: {type(before).__name__} came back as {type(after).__name__}"
            if _clean(before):  # no planted value in it: nothing to replace (our words hold no digit, "@" or ":")
                assert after is before, f"{where}: {before!r:.80} without PII came back as {after!r:.80}"
            return
        assert after is before, f"{where}: {before!r:.60} came back as {after!r:.60}"


def check_functions(rng: random.Random, case: Case) -> None:
    from corpusforge.pipeline.pii.config import PIIConfig
    from corpusforge.pipeline.pii.fields import ID_DETAILS, FieldScrubber
    from corpusforge.pipeline.pii.scrubber import Scrubber

    depth = rng.randint(1, 6)
    # a removal's details: top-level keys are a stage's names, some of them ids
    details = {rng.choice([*WORDS, *ID_DETAILS]): case.value(depth) for _ in range(rng.randint(1, 5))}
    metadata = {rng.choice(WORDS) + str(i): case.value(depth) for i in range(rng.randint(1, 5))}
    loose = case.value(depth)  # a rejected record's detail that is no string, or metadata that is no dict
    actions = {key: rng.choice(["scrub", "scrub", "hash", "keep"]) for key in metadata}
    fields = FieldScrubber(Scrubber(PIIConfig(hash_salt=SALT, metadata_fields=actions)))
    checker = Checker(case)

    out = fields.details(details)
    assert type(out) is dict and list(out) == list(details), f"details keys changed: {list(out)}"
    for key, value in details.items():
        checker.check(value, out[key], "text", f"details[{key!r}]")
    out = fields.metadata(metadata)
    assert type(out) is dict and len(out) == len(metadata)
    for (key, value), (key2, value2) in zip(metadata.items(), out.items()):
        assert key2 == key
        mode = {"scrub": "metadata"}.get(actions[key], actions[key])
        checker.check(value, value2, mode, f"metadata[{key!r}]")
    checker.check(loose, fields.value(loose), "text", "value")
    TRIED["function cases"] += 1


# ------------------------------------------------------------------------------------------ a real build
INNOCENT_KEYS = ("n", "count", "score", "flag", "big", "ratio")


def _innocent(rng: random.Random):
    """A number (or bool / null) under a key that is no cue: it must come back as it went in."""
    return rng.choice([lambda: rng.randint(-99, 10 ** 6), lambda: 10 ** rng.randint(65, 300), lambda: rng.random(),
                       lambda: math.nan, lambda: math.inf, lambda: True, lambda: None, lambda: -0.5])()


def _json_value(case: Case, rng: random.Random, depth: int, innocents: list, path: tuple):
    if depth <= 0 or rng.random() < 0.3:
        kind = rng.choice(["pii", "str", "innocent"])
        if kind == "pii":
            return case.pii()
        if kind == "str":
            return case.clean_text()
        value = _innocent(rng)
        innocents.append((path, value))
        return value
    if rng.random() < 0.5:
        return [_json_value(case, rng, depth - 1, innocents, path + (i,)) for i in range(rng.randint(1, 3))]
    out = {}
    for i in range(rng.randint(1, 3)):
        key = rng.choice(INNOCENT_KEYS) + str(i)
        out[key] = _json_value(case, rng, depth - 1, innocents, path + (key,))
    return out


def _at(value, path: tuple):
    for step in path:
        value = value[step]
    return value


def build_case(rng: random.Random, case: Case, workdir: pathlib.Path) -> dict[str, list]:
    """Writes the case's inputs under ``workdir/input``; returns ``{id: [(path, number)]}`` of planted numbers."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.fuzz.pii import PROSE

    data = workdir / "input"
    data.mkdir(parents=True, exist_ok=True)
    lines, innocents = [], {}
    for n in range(rng.randint(3, 6)):
        found: list = []
        metadata = {f"m{i}": _json_value(case, rng, rng.randint(1, 4), found, (f"m{i}",))
                    for i in range(rng.randint(1, 3))}
        kind = rng.choice(["kept", "short", "duplicate"])
        text = {"kept": f"{PROSE} Document {n}. {PROSE[:rng.randint(0, 150)]}", "short": f"Tiny note {n}.",
                "duplicate": PROSE}[kind]
        TRIED[f"build doc {kind}"] += 1
        doc_id = f"doc{n}"
        innocents[doc_id] = found
        lines.append(json.dumps({"id": doc_id, "text": text, **metadata}))
    for n in range(rng.randint(0, 2)):  # malformed lines with planted values: rejected/ holds their preview
        lines.append('{"id": "bad' + str(n) + '", "meta": ' + json.dumps([case.pii(), 7, None]) + ', "text": ')
    rng.shuffle(lines)
    (data / "json.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = []
    for n in range(rng.randint(1, 3)):  # a map column reads as a list of (key, value) tuples
        pairs = [(rng.choice(WORDS) + str(i), case.pii() if rng.random() < 0.6 else case.clean_text())
                 for i in range(rng.randint(1, 3))]
        rows.append({"id": f"p{n}", "text": f"{PROSE} Parquet row {n}." if rng.random() < 0.7 else f"Tiny {n}.",
                     "headers": pairs, "count": n})
        innocents[f"p{n}"] = [(("count",), n)]
    schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("headers", pa.map_(pa.string(), pa.string())),
                        ("count", pa.int64())])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), data / "table.parquet")
    TRIED["build cases"] += 1
    return innocents


def check_build(rng: random.Random, case: Case, workdir: pathlib.Path) -> None:
    from corpusforge.cli.main import main
    from corpusforge.core.shard_files import open_shard
    from tests.fuzz.pii import run_outputs

    innocents = build_case(rng, case, workdir)
    out = workdir / "out"
    (workdir / "corpus.yaml").write_text(
        f"inputs:\n  - {{path: '{workdir / 'input'}'}}\ndedup:\n  near: {{enabled: false}}\n"
        f"pii:\n  hash_salt: {SALT}\n", encoding="utf-8")
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        code = main(["build", "-c", str(workdir / "corpus.yaml"), "--run-dir", str(out)])
    assert code == 0, f"the build failed: {sink.getvalue()[-2000:]}"
    outputs = run_outputs(out)
    outputs["console"] = sink.getvalue()
    leaks = [f"{needle!r} in {name}" for needle in case.needles() for name, text in outputs.items() if needle in text]
    assert not leaks, "personal data left the scrubber:\n" + "\n".join(leaks)
    seen = collections.Counter()
    for part in ("clean", "removed"):  # removed/ holds no metadata: its details and text were searched above
        for path in sorted((out / part).glob("*")):
            for row in open_shard(str(path)).read_all().to_pylist():
                raw_id = row["id"].rpartition("/")[2]
                seen[part] += 1
                if part == "clean":
                    metadata = json.loads(row["metadata"])
                    for where, number in innocents.get(raw_id, []):
                        got = _at(metadata, where)
                        assert _same(got, number), f"clean/ {raw_id} {where}: {number!r:.60} came back as {got!r:.60}"
                        TRIED["build numbers kept"] += 1
    assert sum(seen.values()) == len(innocents), f"{len(innocents)} documents in, {dict(seen)} out"
    TRIED["build docs removed"] += seen["removed"]


def fuzz_one(rng: random.Random, workdir: pathlib.Path, build: bool | None = None) -> None:
    """One case: the scrubber's functions on random values; with ``build`` (default: one case in eight) a build."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    case = Case(rng)
    check_functions(rng, case)
    if build if build is not None else rng.random() < 0.125:
        check_build(rng, case, workdir)
