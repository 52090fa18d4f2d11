"""Fuzz family ``file_conventions``: input files written the ways users' tools write them, each read as those
tools' users expect (docs/inputs.md, "Line ends, encodings, binary text columns"), and errors of the environment
met while reading one (docs/inputs.md, the table of exceptions).

Each case draws one of four classes:

1. ``line_ends``: 1-8 JSON Lines records (or text lines, or a whole text file) whose texts hold U+2028, U+2029,
   NEL, VT, FF, FS, tabs, accents and emoji, raw or escaped, each line ended by LF, CRLF or a lone CR (one end for
   the file, or each line its own), blank lines of any end between, the last line ended or not; any compression.
   Promise: every record read, once, in order, with its exact text; nothing rejected.
2. ``encodings``: the same in UTF-8, UTF-8 with a byte order mark, UTF-16 or UTF-32 (a mark, or little or big
   endian without one); in some, 1-2 records hold a code unit the encoding cannot decode (a lone surrogate, a
   value past U+10FFFF, 0xFF in UTF-8). Promise: every other record read with its exact text; exactly those
   rejected, ``invalid_encoding`` (``invalid_utf8`` in UTF-8), by position.
3. ``environment``: a JSON Lines (plain or gzip), text, Parquet or HTML file whose reads raise after a drawn number
   of bytes: an ``OSError`` with an errno of the environment (EIO, ENOSPC, EDQUOT, EMFILE, ENFILE, EACCES, EPERM,
   EROFS; a file name or none; bare or the cause of a library's error), or one of the file's own (EISDIR,
   ENOENT, an ``OSError`` without errno, ``EOFError``, a ``ValueError`` quoting an errno). Promise: an environment
   error is raised out of the reader, and the build's one line for it (``errors.resource_error``) names a file
   (the ``OSError``'s own, else the input's); the file's own error is one rejected record for the rest, the records before it read.
4. ``binary_columns``: a Parquet or Arrow IPC table whose text column is ``string``, ``binary``, ``large_binary``
   or dictionary-encoded binary, cells valid UTF-8 (odd characters too), not UTF-8, null, empty or blank, and an id
   column of strings or binary, a metadata column of UTF-8 binary (a Parquet one also read by finetune and predict,
   which must read each cell as the build does). Promise: a valid non-blank cell is a document
   with exactly that text (its metadata the binary column's text), a cell that
   is not UTF-8 ``invalid_utf8``, null ``missing_text``, blank ``empty_text``, each by position.

One case in eight of classes 1, 2 and 4 is also built (``accounted_build``): input = kept + removed + rejected = the
records written, and clean/ holds the texts read.
"""
from __future__ import annotations

import bz2
import collections
import errno
import gzip
import io
import json
import lzma
import os
import pathlib
import random
from typing import Any

from tests.fuzz.accounted_build import accounted_build

FAMILY = "file_conventions"
TRIED: collections.Counter = collections.Counter()

_ODD = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\t", "\u00e9", "\U0001F600", "\u202e", "\ufeff", " "]
_WORDS = ["the", "cat", "sat", "on", "a", "warm", "mat", "r\u00e9sum\u00e9", "\u65e5\u672c", "\u0627\u0644"]
_ENDS = ["\n", "\r\n", "\r"]
ENVIRONMENT = [errno.EIO, errno.ENOSPC, errno.EDQUOT, errno.EMFILE, errno.ENFILE, errno.EACCES, errno.EPERM,
               errno.EROFS]


def _text(rng: random.Random) -> str:
    pieces = []
    for _ in range(rng.randint(1, 12)):
        pieces.append(rng.choice(_WORDS))
        pieces.append(rng.choice(_ODD) if rng.random() < 0.3 else " ")
    return "W " + "".join(pieces) + "."  # starts with a letter: never blank, never only separators


def _compress(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    import zstandard

    ext = rng.choice(["", "", ".gz", ".zst", ".bz2", ".xz"])
    return ext, {"": lambda: data, ".gz": lambda: gzip.compress(data, mtime=0),
                 ".zst": lambda: zstandard.ZstdCompressor().compress(data), ".bz2": lambda: bz2.compress(data),
                 ".xz": lambda: lzma.compress(data)}[ext]()


def _lines(rng: random.Random, texts: list[str], fmt: str) -> str:
    """The records (JSON Lines) or lines (text) of ``texts``, with line ends and blank lines drawn."""
    one_end = rng.choice(_ENDS) if rng.random() < 0.6 else None
    out = []
    for index, text in enumerate(texts):
        line = json.dumps({"id": f"r{index}", "text": text}, ensure_ascii=rng.random() < 0.3) if fmt == "jsonl" \
            else text
        out.append(line + (one_end or rng.choice(_ENDS)))
        if rng.random() < 0.15:
            out.append(rng.choice(_ENDS))  # a blank line
    data = "".join(out)
    if rng.random() < 0.3:
        data = data.rstrip("\r\n")  # the last line without its end
    return data


def _text_line(rng: random.Random) -> str:
    # a text line holds no CR or LF (they end it); it must not be blank once its end is cut
    return _text(rng).replace("\x0b", " ").replace("\x0c", " ")


def _read(path: pathlib.Path, **spec) -> list:
    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.readers import read_file

    try:
        return list(read_file(str(path), InputConfig(path=str(path), **spec), path.name, 100_000))
    except Exception as exc:  # noqa: BLE001 - the promise under test
        raise AssertionError(f"read_file raised on {path.name}: {type(exc).__name__}: {exc}") from exc


def _outcome(items: list) -> list:
    """``(position, text)`` of each document, ``(position, reason)`` of each rejection, in order."""
    from corpusforge.pipeline.document import Rejected

    return [(i.position, i.reason) if isinstance(i, Rejected) else (i.origin[2], i.text) for i in items]


def _expect(path: pathlib.Path, items: list, expected: list, what: str) -> None:
    got = [(item[1] if isinstance(item, tuple) else item) for item in _outcome(items)]
    if got != expected:
        raise AssertionError(f"{path.name} ({what}): read {got[:6]!r}..., expected {expected[:6]!r}...")


# ------------------------------------------------------------------------------------------------ classes
def _line_ends(rng: random.Random, folder: pathlib.Path) -> tuple[pathlib.Path, list, dict]:
    fmt = rng.choice(["jsonl", "jsonl", "text_line", "text_file"])
    if fmt == "jsonl":
        texts = [_text(rng) for _ in range(rng.randint(1, 8))]
        data, spec, expected = _lines(rng, texts, "jsonl"), {}, texts
    elif fmt == "text_line":
        texts = [_text_line(rng) for _ in range(rng.randint(1, 8))]
        data, spec, expected = _lines(rng, texts, "text"), {"text_unit": "line"}, texts
    else:
        data = _lines(rng, [_text_line(rng) for _ in range(rng.randint(1, 8))], "text")
        spec, expected = {}, [data]
    ext, blob = _compress(rng, data.encode("utf-8"))
    path = folder / f"lines-{rng.randrange(1000)}.{'jsonl' if fmt == 'jsonl' else 'txt'}{ext}"
    path.write_bytes(blob)
    _expect(path, _read(path, **spec), expected, f"line ends {fmt}")
    return path, expected, spec


_ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
_BAD_UNIT = {"utf-16-le": b"\x3d\xd8", "utf-16-be": b"\xd8\x3d", "utf-32-le": b"\x00\x00\x11\x00",
             "utf-32-be": b"\x00\x11\x00\x00", "utf-8": b"\xff"}


def _encodings(rng: random.Random, folder: pathlib.Path) -> tuple[pathlib.Path, list, dict]:
    encoding = rng.choice(_ENCODINGS)
    fmt = rng.choice(["jsonl", "jsonl", "text_line", "text_file"])
    count = rng.randint(1, 8)
    texts = [_text(rng) if fmt == "jsonl" else _text_line(rng) for _ in range(count)]
    order = encoding if encoding in _BAD_UNIT else {"utf-16": "utf-16-le", "utf-32": "utf-32-le",
                                                    "utf-8-sig": "utf-8"}[encoding]  # Python writes LE with a mark
    bad = set(rng.sample(range(count), rng.randint(1, min(2, count)))) if fmt != "text_file" and rng.random() < 0.4 \
        else set()
    end = rng.choice(_ENDS)
    mark = {"utf-8-sig": b"\xef\xbb\xbf", "utf-16": b"\xff\xfe", "utf-32": b"\xff\xfe\x00\x00"}.get(encoding, b"")
    parts = [mark]
    for index, text in enumerate(texts):
        line = json.dumps({"id": f"r{index}", "text": text}, ensure_ascii=False) if fmt == "jsonl" else text
        body = line.encode(order)
        if index in bad:  # a unit the encoding cannot decode, inside the record's text
            cut = len(body) - len(('."}' if fmt == "jsonl" else ".").encode(order))
            body = body[:cut] + _BAD_UNIT[order] + body[cut:]
        parts.append(body + end.encode(order))
    data = b"".join(parts)
    if fmt == "jsonl":
        spec: dict = {}
        reason = "invalid_utf8" if order == "utf-8" else "invalid_encoding"
        expected = [reason if i in bad else t for i, t in enumerate(texts)]
    elif fmt == "text_line":
        spec = {"text_unit": "line"}
        reason = "invalid_utf8" if order == "utf-8" else "invalid_encoding"
        expected = [reason if i in bad else t for i, t in enumerate(texts)]
    else:
        spec, expected = {}, ["".join(t + end for t in texts)]
    ext, blob = _compress(rng, data)
    path = folder / f"enc-{encoding}-{rng.randrange(1000)}.{'jsonl' if fmt == 'jsonl' else 'txt'}{ext}"
    path.write_bytes(blob)
    _expect(path, _read(path, **spec), expected, f"{encoding} {fmt}, {len(bad)} bad")
    return path, expected, spec


class _Failing(io.RawIOBase):
    def __init__(self, data: bytes, good: int, error: BaseException):
        self.data, self.good, self.error, self.at = data, good, error, 0

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        if self.at >= self.good:
            raise self.error
        n = min(len(target), self.good - self.at, 1 + self.at % 97)  # short reads, as a pipe or a network gives
        target[:n] = self.data[self.at:self.at + n]
        self.at += n
        return n


def _error(rng: random.Random) -> tuple[BaseException, int | None]:
    """An exception to raise while reading, and its errno when it is the environment's (None: the file's own)."""
    if rng.random() < 0.6:
        code = rng.choice(ENVIRONMENT)
        exc: BaseException = OSError(code, os.strerror(code), *(["/elsewhere/x"] if rng.random() < 0.3 else []))
        if rng.random() < 0.3:
            wrapper = RuntimeError(f"a library failed: {exc}")
            wrapper.__cause__ = exc
            exc = wrapper
        return exc, code
    return rng.choice([lambda: IsADirectoryError(errno.EISDIR, "Is a directory"), lambda: OSError("no errno"),
                       lambda: FileNotFoundError(errno.ENOENT, "gone"), lambda: EOFError("cut"),
                       lambda: ValueError(f"[Errno {errno.EIO}] quoted by a record")])(), None


def _environment(rng: random.Random, folder: pathlib.Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from corpusforge.core.input_files import open_decompressed
    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.document import Document, Rejected
    from corpusforge.pipeline.readers import records_from_file

    fmt = rng.choice(["jsonl", "jsonl.gz", "txt", "parquet", "html"])
    texts = [_text(rng) for _ in range(rng.randint(1, 20))]
    if fmt.startswith("jsonl"):
        data = "".join(json.dumps({"text": t}) + "\n" for t in texts).encode()
        data = gzip.compress(data, mtime=0) if fmt.endswith(".gz") else data
    elif fmt == "parquet":
        sink = io.BytesIO()
        pq.write_table(pa.table({"text": texts}), sink)
        data = sink.getvalue()
    elif fmt == "txt":
        data = "\n".join(texts).encode()
    else:
        data = ("<html><body>" + "".join(f"<p>{t}</p>" for t in texts) + "</body></html>").encode()
    exc, code = _error(rng)
    good = rng.randrange(len(data))
    path = f"/data/in/part-{rng.randrange(100)}.{fmt}"
    stream = open_decompressed(io.BufferedReader(_Failing(data, good, exc), rng.choice([1, 64, 8192])), path)
    items: list = []
    try:
        for item in records_from_file(stream, InputConfig(path=path), path, os.path.basename(path), 100_000):
            items.append(item)
    except Exception as raised:  # noqa: BLE001 - the promise under test
        if code is None:
            raise AssertionError(f"{fmt}: the file's own {type(exc).__name__} escaped the reader: "
                                 f"{raised!r}") from raised
        # the build's one line is resource_error's: it must name a file (an OSError's own name, else the input's)
        from corpusforge.core.errors import environment_error, resource_error

        line = resource_error(raised)
        if not environment_error(raised) or line is None or str(line).startswith("a file"):
            raise AssertionError(f"{fmt}: errno {code} was raised as {raised!r}: its line {line} names no file") \
                from raised
        return
    if code is not None:
        raise AssertionError(f"{fmt}: errno {errno.errorcode[code]} after {good} bytes was not raised: "
                             f"{[getattr(i, 'reason', 'doc') for i in items][-3:]}")
    if not items or not isinstance(items[-1], Rejected) or items[-1].reason == "stage_error":
        raise AssertionError(f"{fmt}: the file's own {type(exc).__name__} after {good} bytes did not reject the rest: "
                             f"{[getattr(i, 'reason', 'doc') for i in items][-3:]}")
    if any(isinstance(i, Document) and i.text not in texts and fmt != "html" for i in items):
        raise AssertionError(f"{fmt}: a document read before the error is not one written")


def _binary_columns(rng: random.Random, folder: pathlib.Path) -> tuple[pathlib.Path, list, dict]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = rng.randint(1, 12)
    cells: list = []
    expected: list = []
    for _ in range(n):
        kind = rng.choices(["valid", "invalid", "null", "blank"], [6, 2, 1, 1])[0]
        if kind == "valid":
            text = _text(rng)
            cells.append(text.encode("utf-8"))
            expected.append(text)
        elif kind == "invalid":
            cells.append(_text(rng).encode("utf-8") + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80abc"]))
            expected.append("invalid_utf8")
        elif kind == "null":
            cells.append(None)
            expected.append("missing_text")
        else:
            cells.append(rng.choice([b"", b" ", "\u2028".encode(), b"\t\n"]))
            expected.append("empty_text")
    column_type = rng.choice(["string", "binary", "large_binary", "dictionary"])
    if column_type == "string":  # a string column cannot hold bytes that are not UTF-8: those cells are dropped
        keep = [i for i, e in enumerate(expected) if e != "invalid_utf8"]
        cells, expected = [cells[i] for i in keep], [expected[i] for i in keep]
        column = pa.array([None if c is None else c.decode() for c in cells], pa.string())
    elif column_type == "dictionary":
        column = pa.array(cells, pa.binary()).dictionary_encode()
    else:
        column = pa.array(cells, getattr(pa, column_type)())
    ids = pa.array([f"d{i}".encode() for i in range(len(cells))], rng.choice([pa.binary(), pa.string()])) \
        if rng.random() < 0.5 and column_type != "string" else pa.array([f"d{i}" for i in range(len(cells))])
    urls = [f"http://x/{i}/\u00e9".encode() for i in range(len(cells))]  # a metadata column typed binary, as Spark
    table = pa.table({"id": ids, "text": column, "url": pa.array(urls, rng.choice([pa.binary(), pa.string()])
                                                                  if column_type != "string" else pa.binary())})
    fmt = rng.choice(["parquet", "arrow"])
    path = folder / f"cols-{column_type}-{rng.randrange(1000)}.{fmt}"
    if fmt == "parquet":
        pq.write_table(table, path)
    else:
        with pa.ipc.new_file(str(path), table.schema) as writer:
            writer.write_table(table)
    items = _read(path)
    _expect(path, items, expected, f"{column_type} column")
    docs = [i for i in items if not hasattr(i, "reason")]
    if any(not d.id.endswith(f"/d{d.origin[2]}") for d in docs):
        raise AssertionError(f"{path.name}: a binary id column's UTF-8 ids not used: {[d.id for d in docs][:3]}")
    if any(d.metadata != {"url": f"http://x/{d.origin[2]}/\u00e9"} for d in docs):
        raise AssertionError(f"{path.name}: a binary metadata column not read as its text: {docs[0].metadata}")
    if fmt == "parquet":
        _finetune_reads_the_same(path, expected)
    return path, expected, {}


def _finetune_reads_the_same(path: pathlib.Path, expected: list) -> None:
    """finetune and predict (``trainers/finetune/data.py``) read a Parquet file's cells as the build does
    (``input_files.cell_text``): a valid cell is an example of that text and id, one not UTF-8 one line naming
    the record and the field (they stop on a bad record; the build rejects it alone)."""
    from corpusforge.core.errors import UserError
    from corpusforge.trainers.finetune.config import FinetuneConfig
    from corpusforge.trainers.finetune.data import read_records, task_examples

    TRIED["finetune reads"] += 1
    for position, (record, want) in enumerate(zip(read_records(path), expected)):
        if want == "invalid_utf8":
            try:
                task_examples([record], FinetuneConfig(), path.name, labelled=False)
            except UserError as exc:
                if "field 'text' is binary and not UTF-8" not in str(exc):
                    raise AssertionError(f"{path.name}: finetune's line for a cell not UTF-8: {exc}") from None
                continue
            raise AssertionError(f"{path.name}: finetune took record {position}, not UTF-8, as text")
        if want in ("missing_text", "empty_text"):
            continue
        (example,) = task_examples([record], FinetuneConfig(), path.name, labelled=False)
        if (example.id, example.text) != (f"d{position}", want):
            raise AssertionError(f"{path.name}: finetune read record {position} as {(example.id, example.text)!r}")


CLASSES = {"1_line_ends": _line_ends, "2_encodings": _encodings, "3_environment": _environment,
           "4_binary_columns": _binary_columns}


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    name = rng.choice(sorted(CLASSES))
    TRIED[name] += 1
    TRIED["cases"] += 1
    folder = workdir / "in"
    folder.mkdir(parents=True)
    made = CLASSES[name](rng, folder)
    if made is None or rng.random() >= 1 / 8:
        return
    TRIED["builds"] += 1
    path, expected, spec = made
    inputs = [{"path": str(path), "name": "f", **spec}]
    base = {"inputs": inputs, "output": {"run_dir": str(workdir / "run"), "max_doc_chars": 100_000},
            "normalize": {"enabled": False}, "quality": {"enabled": False}, "dedup": {"enabled": False},
            "pii": {"enabled": False}}
    accounted_build(base, len(expected), "written")
    from corpusforge.core.shard_files import open_shard, shard_suffix

    texts = []
    for shard in sorted((workdir / "run" / "clean").glob("part-*")):
        if shard_suffix(shard.name):
            texts += open_shard(str(shard)).read_all().column("text").to_pylist()
    wanted = sorted(e for e in expected if e not in ("invalid_utf8", "invalid_encoding", "missing_text", "empty_text"))
    if sorted(texts) != wanted:
        raise AssertionError(f"{path.name}: clean/ holds {sorted(texts)[:4]!r}..., read {wanted[:4]!r}...")
