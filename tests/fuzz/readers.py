"""Fuzz family ``readers`` (issue #35, classes 1-3): random input trees into every reader, then a build.

Each case writes 1-6 entries under ``workdir/in``, drawn from generators of the three classes:

1. parser exceptions: JSONL of random JSON shapes (deep nesting past and below the limits, huge integers,
   1e999, lone surrogates, bad UTF-8, BOMs, random bytes, non-objects), Parquet and Arrow tables with nested,
   out-of-range and binary values, damaged columnar files, random text, WARC and HTML bytes;
2. bounded memory: lines over ``output.max_record_bytes``, FIFOs, links to /dev/zero, broken links, links to
   directories (loops);
3. what is named is read: every compression (gz, zst, bz2, xz) complete, cut short, or followed by zero
   padding or garbage; file names with glob characters, spaces, non-UTF-8 bytes; inputs named literally.

Promises checked (an AssertionError names the one broken):
- no exception escapes ``read_file`` (plain Python) or the build; evaluate's, finetune's and quality train's
  readers raise nothing but a one-line ``UserError``, and every string they return is text (encodes as UTF-8: a
  JSON ``"\\ud800"`` repaired to U+FFFD as the build repairs it);
- the build's counts add up: input = kept + removed + rejected, and input = the records ``read_file`` gives;
- every id in clean/ and removed/ is written once (raw ids repeat, differ only in type, or look like the ids
  corpusforge makes);
- every file named appears in ``manifest.json``'s ``input_files`` (or, not read, in ``rejected/`` by name);
- no record is rejected as ``stage_error`` (no later step raises on what the reader accepted) and every reason
  is a named one.
"""
from __future__ import annotations

import bz2
import collections
import dataclasses
import gzip
import io
import json
import lzma
import os
import pathlib
import random
from typing import Any, Callable, Iterator

from tests.fuzz.accounted_build import accounted_build

FAMILY = "readers"

# Cases tried per class (a case counts once for each class it holds a member of): bench/fuzz.py prints them.
TRIED: collections.Counter = collections.Counter()

REASONS = {"malformed_json", "invalid_utf8", "invalid_encoding", "not_an_object", "missing_text", "non_string_text",
           "empty_text", "rejected_record",
           "duplicate_key", "oversize_record", "too_deep", "number_too_large", "truncated_compressed_file", "corrupt_compressed_data",
           "unreadable_record", "unreadable_file", "not_a_regular_file", "warc_http_status", "warc_not_html",
           "warc_truncated", "warc_bad_encoding", "no_main_text", "html_parse_error"}


# ------------------------------------------------------------------------------------------- JSON shapes
def _nested(rng: random.Random, depth: int) -> Any:
    value: Any = rng.choice([1, "x", None, [], {}])
    for _ in range(depth):
        value = [value] if rng.random() < 0.5 else {rng.choice("abk"): value}
    return value


def _scalar(rng: random.Random) -> Any:
    return rng.choice([
        lambda: rng.randint(-2 ** 70, 2 ** 70), lambda: rng.random() * 10 ** rng.randint(-5, 300), lambda: True,
        lambda: None, lambda: "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0x80, 0x2FFF), 0, 0x202E,
                                                       0xFEFF, 0x1F600])) for _ in range(rng.randint(0, 12))),
    ])()


# Records of the file being written whose reading must reject them as ``duplicate_key`` (a key given twice with
# different values): ``_jsonl`` resets it and ``fuzz_one`` checks it on files written plainly.
_NAMED_TWICE: list[int] = [0]


def _record_line(rng: random.Random) -> bytes:
    """One JSONL line of a random shape (valid or not)."""
    kind = rng.randrange(16)
    words = " ".join(rng.choice(["the", "cat", "sat", "on", "a", "warm", "mat", "and", "slept"])
                     for _ in range(rng.randint(0, 40)))
    record: Any = {"text": words.capitalize() + "."}
    if rng.random() < 0.5:
        record["id"] = rng.choice([rng.randint(0, 50), f"id-{rng.randint(0, 50)}", None, [1], "a/b@c#1"])
    elif rng.random() < 0.5:
        record["id"] = _hostile_id(rng)
    if kind == 0:  # nesting: below, at and past the limit, up to what json.dumps (and pickle) survive
        record["meta"] = _nested(rng, rng.choice([rng.randint(1, 70), rng.randint(150, 400)]))
    elif kind == 1:  # integers past the digit limit, as text (json.dumps refuses to write them)
        return b'{"text": "' + words.encode() + b'", "n": ' + b"7" * rng.choice([4299, 4300, 4301, 9000]) + b"}\n"
    elif kind == 2:  # numbers Python's json reads oddly
        return b'{"text": "' + words.encode() + b'", "x": ' + rng.choice([b"1e999", b"-1e999", b"NaN", b"Infinity",
                                                                          b"-0", b"1" + b"0" * 400 + b".5"]) + b"}\n"
    elif kind == 3:  # lone surrogates and escapes
        return b'{"text": "a \\ud800 b \\udfff", "m": {"\\udc00": "\\ud83d"}}\n'
    elif kind == 4:  # invalid UTF-8 bytes
        return b'{"text": "caf' + bytes([rng.randint(0x80, 0xFF)]) + b'"}\n'
    elif kind == 5:  # random bytes
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 80))).replace(b"\n", b" ") + b"\n"
    elif kind == 6:  # not an object, or text of the wrong type
        record = rng.choice([[1, 2], "s", 3, None, {"text": rng.choice([3, ["a"], {"a": 1}, None, "", "  "])}])
    elif kind == 7:  # an object of metadata; as "metadata" (dolma, datatrove) merged, its keys clashing or not
        keys = [rng.choice([str(k), "source", "metadata", "id", "text", "meta", ""]) for k in range(rng.randint(0, 5))]
        record[rng.choice(["meta", "metadata"])] = {key: _scalar(rng) for key in keys}
        if rng.random() < 0.5:
            record["source"] = _scalar(rng)
    elif kind == 8:  # a BOM at the start of a line, CRLF
        return b"\xef\xbb\xbf" + json.dumps(record).encode() + b"\r\n"
    elif kind == 9:  # deep nesting written by hand (unbalanced, too)
        depth = rng.randint(50, 200_000)
        return b'{"text": "x", "m": ' + b"[" * depth + b"]" * (depth - rng.choice([0, 0, 1])) + b"}\n"
    elif kind == 12:  # text of every other JSON type
        record["text"] = rng.choice([True, False, 0, -0.0, 1.5, 10 ** 30, [], ["a", "b"], {}, {"text": "a"}])
    elif kind == 13:  # a key twice in one object (json keeps the last): text, id, or a metadata key
        key = rng.choice(["text", "id", "m"])
        first, second = rng.sample(['"a warm cat"', "7", "null", "[1]", '"x"', "{}"], 2)
        _NAMED_TWICE[0] += 1
        return (b'{"' + key.encode() + b'": ' + first.encode() + b', "text": "' + words.encode() + b' ok", "'
                + key.encode() + b'": ' + second.encode() + b"}\n")
    elif kind == 14:  # metadata keys named as corpusforge's own fields, and the keys of its shards
        for key in rng.sample(["source", "metadata", "annotations", "stage", "reason", "details", "survivor_id",
                               "origin", "position", "path", "preview", "lang", "pii_count", "", " ", "text ",
                               "Text", "__class__", "\u0000"], 4):
            record[key] = _scalar(rng)
    elif kind == 15:  # line ends of other systems and Unicode line separators, inside and between records
        text = words + rng.choice(["\u2028", "\u2029", "\u0085", "\r", "\x0b", "\x0c", "\x1c"]) + words
        return json.dumps({"text": text, "id": record.get("id")}, ensure_ascii=rng.random() < 0.5).encode(
            "utf-8", "surrogatepass") + rng.choice([b"\n", b"\r\n", b"\r", b"\n\r", "\u2028".encode()])
    return json.dumps(record, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass") + b"\n"


def _hostile_id(rng: random.Random) -> Any:
    """An id unlike the ones a well-behaved source writes: other types, values that mean the same written
    differently (``1``, ``"1"``, ``1.0``, ``True``), characters that end lines or paths, and strings shaped like
    the ids corpusforge makes (``src/1@part.jsonl#3``, ``...~9f0c...``). Drawn from a small pool, so that records
    share them."""
    return rng.choice([
        1, "1", 1.0, True, False, 0, -0.0, 2 ** 64, -(2 ** 63), 10 ** 40, 1e308, "", " ", "\u0000", "a\u0000b",
        "a\nb", "a\rb", "\u2028", "/", "../../etc/passwd", "C:\\x\\y", "folder/1", "folder/1@" + "part-0.jsonl",
        "1#0", "1@input1", "1~9f0c2a7d1e4b5c68", "%2F", "\ud800", "é", "e\u0301", {"a": 1}, [1, 2], None,
    ])


def _jsonl(rng: random.Random, classes: set) -> bytes:
    classes.add("1_parser_exceptions")
    _NAMED_TWICE[0] = 0
    lines = [_record_line(rng) for _ in range(rng.randint(0, 12))]
    if _NAMED_TWICE[0]:
        classes.add("4_named_twice")
    if rng.random() < 0.3:  # class 2: a line over output.max_record_bytes (the case sets it to 2-20 KB)
        classes.add("2_bounded_memory")
        lines.insert(rng.randint(0, len(lines)), b'{"text": "' + b"long " * rng.randint(500, 40_000) + b'"}\n')
    if rng.random() < 0.2:
        lines.append(b"\n" * rng.randint(1, 3))
    data = b"".join(lines)
    data = data[:-1] if data and rng.random() < 0.2 else data  # no newline at the end
    if rng.random() < 0.1:  # the whole file in UTF-16 or UTF-32, with a byte order mark or without
        data = data.decode("utf-8", "replace").encode(rng.choice(["utf-16", "utf-16-le", "utf-32", "utf-32-be"]))
        _NAMED_TWICE[0] = -1  # not read as UTF-8 lines: no count to expect
    return data


# --------------------------------------------------------------------------------------------- columnar
def _table(rng: random.Random):
    import pyarrow as pa

    _NAMED_TWICE[0] = 0
    n = rng.randint(0, 6)
    texts = [rng.choice(["A warm cat slept.", "", None, "x" * rng.randint(1, 50)]) for _ in range(n)]
    columns = {"text": pa.array(texts, pa.string())}
    if rng.random() < 0.4:
        return _odd_table(rng, n, texts)
    kind = rng.randrange(4)
    if kind == 0:
        columns["when"] = pa.array([rng.choice([0, 2 ** 62, -2 ** 62, None]) for _ in range(n)], pa.timestamp("ms"))
    elif kind == 1:
        depth = rng.randint(1, 40)
        value: Any = 1
        for _ in range(depth):
            value = [value]
        columns["deep"] = pa.array([value] * n)
    elif kind == 2:
        columns["blob"] = pa.array([bytes(rng.randrange(256) for _ in range(5)) for _ in range(n)], pa.binary())
    else:
        columns["n"] = pa.array([rng.randint(-2 ** 63, 2 ** 63 - 1) for _ in range(n)], pa.int64())
    return pa.table(columns)


def _odd_table(rng: random.Random, n: int, texts: list):
    """A table whose text or id column is of another type than a string (large_string, a dictionary, binary
    with bytes that are not UTF-8, a struct, a list, numbers, nulls only), or whose column names repeat."""
    import pyarrow as pa

    text = rng.choice([
        lambda: pa.array(texts, pa.large_string()),
        lambda: pa.array(texts, pa.string()).dictionary_encode(),
        lambda: pa.array([None if t is None else t.encode() + rng.choice([b"", b"\xff", b"\xc3", b"\xed\xa0\x80"])
                          for t in texts], rng.choice([pa.binary(), pa.large_binary()])),
        lambda: pa.array([{"text": t, "n": 1} for t in texts]),
        lambda: pa.array([[t, t] for t in texts], pa.list_(pa.string())),
        lambda: pa.array(list(range(n)), rng.choice([pa.int64(), pa.float64(), pa.int8()])),
        lambda: pa.nulls(n),
        lambda: pa.array([rng.choice([True, False]) for _ in range(n)]),
    ])()
    names, arrays = ["text"], [text]
    if rng.random() < 0.6:
        ids = rng.choice([
            lambda: pa.array([rng.choice([1.0, 1.5, float("nan"), float("inf"), -0.0]) for _ in range(n)]),
            lambda: pa.array([rng.choice([True, False]) for _ in range(n)]),
            lambda: pa.array([rng.choice([0, 2 ** 64 - 1, 2 ** 63]) for _ in range(n)], pa.uint64()),
            lambda: pa.array([rng.choice(["", "a\nb", "\x00", "../x", "1", "1"]) for _ in range(n)]),
            lambda: pa.array([rng.choice([b"\xff", b"1", b""]) for _ in range(n)], pa.binary()),
            lambda: pa.array([{"a": 1}] * n),
            lambda: pa.array([[1]] * n),
        ])()
        names.append("id")
        arrays.append(ids)
    if rng.random() < 0.3:  # a name twice: two text columns, two id columns: every row duplicate_key
        names.append(rng.choice(names))
        arrays.append(pa.array(texts, pa.string()))
        _NAMED_TWICE[0] = n
    if rng.random() < 0.3:
        names.append(rng.choice(["metadata", "source", "annotations", ""]))
        arrays.append(pa.array([rng.choice(["m", None]) for _ in range(n)], pa.string()))
    order = list(range(len(names)))
    rng.shuffle(order)
    return pa.Table.from_arrays([arrays[i] for i in order], names=[names[i] for i in order])


def _parquet(rng: random.Random, classes: set) -> bytes:
    import pyarrow.parquet as pq

    classes.add("1_parser_exceptions")
    sink = io.BytesIO()
    try:
        pq.write_table(_table(rng), sink)
    except Exception:  # noqa: BLE001 - a value Parquet cannot store: random bytes instead
        _NAMED_TWICE[0] = -1
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
    return _damage(rng, sink.getvalue())


def _arrow(rng: random.Random, classes: set) -> bytes:
    import pyarrow as pa

    classes.add("1_parser_exceptions")
    table = _table(rng)
    sink = io.BytesIO()
    writer = pa.ipc.new_file if rng.random() < 0.5 else pa.ipc.new_stream
    with writer(sink, table.schema) as w:
        w.write_table(table)
    return _damage(rng, sink.getvalue())


def _damage(rng: random.Random, data: bytes) -> bytes:
    roll = rng.random()
    if roll < 0.25 and data:
        _NAMED_TWICE[0] = -1  # damaged: what it holds is no longer what was written
    if roll < 0.15 and data:
        return data[: rng.randrange(len(data))]
    if roll < 0.25 and data:
        i = rng.randrange(len(data))
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
    return data


def _text(rng: random.Random, classes: set) -> bytes:
    classes.add("1_parser_exceptions")
    return bytes(rng.choice([rng.randrange(256), 10, 32, 97]) for _ in range(rng.randint(0, 400)))


def _warc(rng: random.Random, classes: set) -> bytes:
    classes.add("1_parser_exceptions")
    body = b"<html><body>" + b"<div>" * rng.randint(0, 300) + b"<p>A warm cat slept on the mat.</p></body></html>"
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + body
    record = (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://x/\r\nWARC-Record-ID: <urn:uuid:1>\r\n"
              b"Content-Type: application/http; msgtype=response\r\nContent-Length: "
              + str(len(http) + rng.choice([0, 0, -5, 40])).encode() + b"\r\n\r\n" + http + b"\r\n\r\n")
    return _damage(rng, record * rng.randint(1, 3))


def _html(rng: random.Random, classes: set) -> bytes:
    classes.add("1_parser_exceptions")
    return b"<html>" + b"<div>" * rng.randint(0, 2000) + bytes(rng.randrange(256) for _ in range(rng.randint(0, 80)))


FORMATS: dict[str, tuple[str, Callable]] = {
    "jsonl": (".jsonl", _jsonl), "parquet": (".parquet", _parquet), "arrow": (".arrow", _arrow),
    "text": (".txt", _text), "warc": (".warc", _warc), "html": (".html", _html),
}


# ------------------------------------------------------------------------------------------ compression
def _compress(rng: random.Random, data: bytes, classes: set) -> tuple[str, bytes]:
    import zstandard

    ext = rng.choice(["", "", ".gz", ".zst", ".bz2", ".xz"])
    if not ext:
        return ext, data
    classes.add("3_named_is_read")
    blob = {".gz": lambda: gzip.compress(data, mtime=0), ".zst": lambda: zstandard.ZstdCompressor().compress(data),
            ".bz2": lambda: bz2.compress(data), ".xz": lambda: lzma.compress(data)}[ext]()
    roll = rng.random()
    if roll < 0.2 and blob:
        blob = blob[: rng.randrange(len(blob))]  # cut short
    elif roll < 0.35:
        blob += b"\0" * rng.randint(1, 4096)  # zero padding
    elif roll < 0.5:
        blob += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))  # garbage
    elif roll < 0.6:
        blob += blob  # two members or frames
    return ext, blob


# ----------------------------------------------------------------------------------------------- names
def _name(rng: random.Random, classes: set) -> str:
    stem = rng.choice(["part", "a[1]", "b*", "c?", "d e", "-x", "ünï", "日本", "[2024]", "f{1,2}", "g%20"])
    if stem in ("a[1]", "b*", "c?", "[2024]", "f{1,2}"):
        classes.add("3_named_is_read")
    if rng.random() < 0.25:
        classes.add("3_named_is_read")
        stem += os.fsdecode(bytes([rng.randint(0x80, 0xFF)]))  # not UTF-8
    return f"{stem}-{rng.randrange(1000)}"


def _special(rng: random.Random, path: pathlib.Path, classes: set) -> None:
    classes.add("2_bounded_memory")
    kind = rng.randrange(4)
    if kind == 0:
        os.mkfifo(path)
    elif kind == 1:
        path.symlink_to("/dev/zero")
    elif kind == 2:
        path.symlink_to(path.parent / "missing-target")
    else:
        path.symlink_to(path.parent)  # a loop


# ----------------------------------------------------------------------------------------------- the case
def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    from corpusforge.core.input_files import display_path
    from corpusforge.core.shard_files import open_shard, shard_suffix
    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.readers import read_file

    classes: set = set()
    folder = workdir / "in"
    folder.mkdir(parents=True)
    max_chars = rng.choice([2_000, 20_000, 1_000_000])
    max_bytes = rng.choice([0, 2_000, 20_000])
    entries, named_twice = [], {}
    for _ in range(rng.randint(1, 6)):
        fmt = rng.choice(list(FORMATS))
        ext, make = FORMATS[fmt]
        path = folder / (_name(rng, classes) + ext)
        if rng.random() < 0.1:
            _special(rng, path, classes)
        else:
            _NAMED_TWICE[0] = -1
            written = make(rng, classes)
            compression, data = _compress(rng, written, classes)
            path = path.with_name(path.name + compression)
            path.write_bytes(data)
            if fmt in ("jsonl", "parquet", "arrow") and data == written and _NAMED_TWICE[0] >= 0:
                named_twice[path] = _NAMED_TWICE[0]
        entries.append(path)
    for name in classes:
        TRIED[name] += 1
    TRIED["cases"] += 1

    # plain Python: nothing read_file meets may raise
    counts = {}
    for path in entries:
        try:
            items = list(read_file(str(path), InputConfig(path=str(path)), display_path(path.name), max_chars,
                                   max_bytes=max_bytes))
        except Exception as exc:  # noqa: BLE001 - the promise under test
            raise AssertionError(f"read_file raised on {display_path(path.name)}: {type(exc).__name__}: {exc}") from exc
        counts[path] = len(items)
        if path in named_twice:  # (such a line is under 200 bytes: no limit drawn rejects it as oversize first)
            found = sum(1 for item in items if getattr(item, "reason", None) == "duplicate_key")
            if found != named_twice[path]:
                raise AssertionError(f"{display_path(path.name)}: {named_twice[path]} records give a key twice with "
                                     f"different values, {found} rejected as duplicate_key")

    # the other commands that read data: evaluate/embed skip what they cannot read, finetune/predict and
    # quality train stop with one line (UserError), never with another exception
    from corpusforge.core.errors import UserError
    from corpusforge.pipeline.quality.classifier import read_texts
    from corpusforge.trainers.evaluate import read_documents
    from corpusforge.trainers.finetune.data import read_records

    for path in entries:
        for name, read in (("evaluate", lambda p: list(read_documents(p, "text", {}))), ("finetune", read_records),
                           ("quality train", lambda p: list(read_texts(p)))):
            try:
                records = read(str(path))
            except UserError:
                continue
            except Exception as exc:  # noqa: BLE001 - the promise under test
                raise AssertionError(f"{name} raised on {display_path(path.name)}: {type(exc).__name__}: "
                                     f"{str(exc)[:200]}") from exc
            # what they hand on is text a tokenizer, a JSON writer and a byte count take: no lone surrogate (a
            # JSON "\ud800" repaired to U+FFFD as the build repairs it, README "lone UTF-16 surrogates")
            for text in _strings(records):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise AssertionError(f"{name} read {display_path(path.name)} into a string that is not "
                                         f"text ({exc.reason}): {ascii(text[:80])}") from None
            if name == "finetune":
                _check_task_examples(records, path)

    # the build: the folder, or each entry named literally (a link to a folder named as an input is that
    # folder, read whole, so it is left out of a literal case)
    named = [p for p in entries if not (p.is_symlink() and p.is_dir())]
    literal = bool(named) and rng.random() < 0.4
    if literal:
        entries = named
    expected = sum(counts[p] for p in entries)
    inputs = [{"path": str(p), "name": f"e{i}"} for i, p in enumerate(entries)] if literal else \
        [{"path": str(folder), "name": "folder"}]
    base = {"inputs": inputs, "output": {"run_dir": str(workdir / "run"), "max_doc_chars": max_chars,
                                         "max_record_bytes": max_bytes},
            "dedup": {"enabled": rng.random() < 0.3}, "pii": {"enabled": False}}
    result = accounted_build(base, expected, "counted by read_file")
    if not result.manifest:  # every record rejected: nothing published (NothingKept), its counts checked above
        unnamed = set(result.stats["rejected"]["reasons"]) - REASONS
        if unnamed:
            raise AssertionError(f"rejected with reasons that are not named ones: {sorted(unnamed)}")
        return
    rejected = []
    for shard in sorted((workdir / "run" / "rejected").glob("part-*")):
        if shard_suffix(shard.name):
            rejected += open_shard(str(shard)).read_all().to_pylist()
    ids = collections.Counter()
    for part in ("clean", "removed"):
        for shard in sorted((workdir / "run" / part).glob("part-*")):
            if shard_suffix(shard.name):
                ids.update(open_shard(str(shard)).read_all().column("id").to_pylist())
    repeated = {i: c for i, c in ids.items() if c > 1}
    if repeated:  # README, "Document ids": ids are unique across all inputs, whatever the raw ids were
        raise AssertionError(f"ids written more than once in clean/ and removed/: {list(repeated.items())[:5]}")
    reasons = {r["reason"] for r in rejected}
    if not reasons <= REASONS:
        raise AssertionError(f"rejected with reasons that are not named ones: {sorted(reasons - REASONS)}")
    listed = {f["path"] for f in result.manifest["input_files"]}
    rejected_paths = {r["path"] for r in rejected}
    for path in entries:
        shown = display_path(str(path))
        if shown not in listed and display_path(path.name) not in rejected_paths:
            raise AssertionError(f"{shown} is neither in manifest.json's input_files nor in rejected/")


def _strings(value: Any) -> Iterator[str]:
    """Every string in what a reader returned (documents, records, their keys and values)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))


def _check_task_examples(records: list, path: pathlib.Path) -> None:
    """finetune's and predict's examples of what ``read_records`` read: each text the record's own (a string, a
    number as written, a boolean as JSON spells it), its id the same (missing, null, NaN or empty: its
    position), every word and tag of a tag record the same, or one ``UserError``; never Python's ``str`` of
    null, a list, an object or NaN (``None``, ``['a']``, ``nan``), which fine-tuning took for the text before."""
    import math

    from corpusforge.core.errors import UserError
    from corpusforge.core.input_files import display_path
    from corpusforge.trainers.finetune.config import FinetuneConfig
    from corpusforge.trainers.finetune.data import task_examples

    def as_text(raw: Any) -> str | None:
        """The text a value stands for, or None where it is none (null, NaN, an infinity, a list, an object)."""
        usable = isinstance(raw, (str, bool, int)) or (isinstance(raw, float) and math.isfinite(raw))
        return None if not usable else raw if isinstance(raw, str) else json.dumps(raw) if isinstance(raw, bool) \
            else str(raw)

    def one(record: dict, config: FinetuneConfig, labelled: bool) -> Any:
        """The record's one example, or None where it is refused (in one line)."""
        try:
            example, = task_examples([record], config, display_path(path.name), labelled=labelled)
            return example
        except UserError as exc:
            if "\n" in str(exc):
                raise AssertionError(f"finetune's examples of {display_path(path.name)}: an error of many lines") \
                    from None
            return None

    # one record at a time: one refused record stops a whole file, and would hide what the others became
    for record in records:
        example = one(record, FinetuneConfig(), False)
        if example is None:
            continue
        raw = record.get("text")
        if as_text(raw) is None or example.text != as_text(raw):
            raise AssertionError(f"finetune took {ascii(raw)[:80]} of {display_path(path.name)} for the text "
                                 f"{ascii(example.text)[:80]}")
        ident = record.get("id")  # missing, null, NaN or empty: the position (a null id was "None")
        missing = ident is None or ident == "" or (isinstance(ident, float) and ident != ident)
        if example.id != ("0" if missing else as_text(ident)):
            raise AssertionError(f"finetune took the id {ascii(ident)[:80]} of {display_path(path.name)} for "
                                 f"{ascii(example.id)[:80]}")
    # tag: every value a record holds (null, NaN, lists, objects, numbers, booleans...) as its words and tags;
    # each word is its text, or the record is refused in one line (a null word was the word "None")
    for record in records:
        words = list(record.values())
        example = one({"tokens": words, "tags": words}, FinetuneConfig(task="tag"), True) if words else None
        if example is not None and (example.text != [as_text(w) for w in words] or example.target != example.text):
            raise AssertionError(f"finetune took the words {ascii(words)[:80]} of {display_path(path.name)} for "
                                 f"{ascii(example.text)[:80]}")
