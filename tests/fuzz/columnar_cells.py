"""Fuzz family ``columnar_cells``: Parquet and Arrow IPC files whose cells may be far larger than
``output.max_record_bytes`` (docs/inputs.md, "Bounded memory"; corpusforge/core/columnar.py).

Each case writes one columnar file under ``workdir``: 1-4 row groups (Parquet) or record batches (Arrow IPC,
file or stream format) of random sizes, a text column (string or large_string), an id (int or string) and a
metadata column (string, binary or list of strings), with cells drawn among normal texts, nulls, empty and
binary values, texts over ``max_doc_chars``, and huge cells (1.5x-6x the record limit, or several MB). Parquet
is written with a random compression, dictionary encoding on or off and a small ``write_batch_size`` (pages of
at most that many values); Arrow IPC uncompressed.

Promises checked (an AssertionError names the one broken):
- every row ends once, in order, kept or rejected, and with the reason its content calls for: a row over the
  limit ``oversize_record`` (with its position), a null text ``missing_text``, binary text ``non_string_text``, an
  empty one ``empty_text``, a text over ``max_doc_chars`` ``oversize_record``; all other rows kept;
- the peak resident memory reading the file (``read_file`` in a fresh process, ``VmHWM``) stays under the bound
  docs/inputs.md gives: 4 x the largest Parquet page (pyarrow decodes a page whole), or the largest Arrow IPC
  record batch (read whole, never memory-mapped), + 2 x the limit + 4 x ``columnar.BATCH_BYTES`` + 64 MiB (the
  interpreter's and the allocators' own);
- one case in four also goes through a build: input = kept + removed + rejected, and input = the rows.
"""
from __future__ import annotations

import collections
import json
import pathlib
import random
import subprocess
import sys
import textwrap
from typing import Any

from tests.fuzz.accounted_build import accounted_build

FAMILY = "columnar_cells"

TRIED: collections.Counter = collections.Counter()

_PEAK = textwrap.dedent("""
    import json, sys
    import pyarrow, pyarrow.compute, pyarrow.ipc, pyarrow.parquet  # loaded before the baseline
    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.document import Rejected
    from corpusforge.pipeline.readers import read_file

    def status(field):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field))

    path, max_chars, max_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:  # VmHWM is this process's own peak (ru_maxrss starts at the parent's); 5 resets it to the current RSS
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = status("VmRSS:")
    except OSError:
        before = status("VmHWM:")
    items = []
    for item in read_file(path, InputConfig(path=path), max_chars=max_chars, max_bytes=max_bytes):
        if isinstance(item, Rejected):
            items.append([item.position, item.reason, item.detail, item.raw])
        else:
            items.append([item.origin[2], "kept", "", ""])
    print(json.dumps({"items": items, "grown_mb": (status("VmHWM:") - before) // 1024}))
""")


def peak_read(path: pathlib.Path, max_chars: int, max_bytes: int = 0) -> tuple[list, int]:
    """``(items, grown_mb)``: what ``read_file`` gives for ``path`` (``[position, reason or "kept", detail,
    preview]`` each) and the MB its reading added to the peak resident memory of a fresh process."""
    result = subprocess.run([sys.executable, "-c", _PEAK, str(path), str(max_chars), str(max_bytes)],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise AssertionError(f"reading {path.name} failed: {result.stderr.strip()[-1500:]}")
    out = json.loads(result.stdout)
    return out["items"], out["grown_mb"]


_WORDS = "the cat sat on a warm mat and slept while seven owls watched quietly from the old oak".split()


def _words(rng: random.Random, size: int) -> str:
    """About ``size`` characters of text (ASCII, so characters are bytes); cheap for sizes of megabytes."""
    if size <= 0:
        return ""
    unit = " ".join(rng.choice(_WORDS) for _ in range(40)) + ". "
    return (unit * (size // len(unit) + 1))[:size].capitalize()


def _cell(rng: random.Random, limit: int, max_chars: int, binary: bool) -> tuple[Any, str, int]:
    """``(text value, expected end, bytes)`` of one row's text (``binary``: the text column is binary, read as its
    UTF-8 text, a quarter of the normal ones holding bytes that are not UTF-8); the other columns stay under 1 KB."""
    kind = rng.choices(["normal", "null", "empty", "long", "huge", "giant"], weights=[60, 4, 3, 4, 8, 2])[0]
    TRIED[kind] += 1
    if kind == "null":
        return None, "missing_text", 0
    if kind in ("huge", "giant"):
        size = rng.randint(int(limit * 1.5), limit * 6) if kind == "huge" else rng.randint(2 << 20, 8 << 20)
        text: Any = _words(rng, size)
        end = "oversize_record"
    elif kind == "normal":
        text = _words(rng, rng.randint(1, min(4_000, max_chars)))
        end = "kept"
    elif kind == "empty":
        text, end = rng.choice(["", "   "]), "empty_text"
    else:  # over max_doc_chars (and maybe over the limit too: the same reason)
        text, end = _words(rng, max_chars + rng.randint(1, 2_000)), "oversize_record"
    size = len(text)
    if binary:  # read as its UTF-8 text, as Spark writes strings (e237688); bytes that are no UTF-8: invalid_utf8
        text = text.encode()
        if kind == "normal" and rng.random() < 0.25:
            cut = rng.randint(0, len(text))
            text = text[:cut] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]) + text[cut:]
            end = "invalid_utf8"
            TRIED["binary invalid_utf8"] += 1
    return text, end, size


def _write(rng: random.Random, path: pathlib.Path, fmt: str, groups: list[list[dict]]) -> int:
    """Write ``groups`` of rows; the largest Parquet page's bytes (an upper bound), 0 for Arrow IPC."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    binary_text = any(isinstance(r["text"], bytes) for g in groups for r in g)
    text_type = rng.choice([pa.binary(), pa.large_binary()] if binary_text else [pa.string(), pa.large_string()])
    meta_kind = rng.choice(["string", "binary", "list"])
    meta_type = {"string": pa.string(), "binary": pa.binary(), "list": pa.list_(pa.string())}[meta_kind]
    id_type = rng.choice([pa.int64(), pa.string()])
    schema = pa.schema([("text", text_type), ("id", id_type), ("meta", meta_type)])

    def table(rows: list[dict]):
        texts = [r["text"] for r in rows]
        ids = [r["id"] if id_type == pa.int64() else f"r{r['id']}" for r in rows]
        metas = [None if r["meta"] is None else
                 r["meta"].encode() if meta_kind == "binary" else [r["meta"]] * 2 if meta_kind == "list" else r["meta"]
                 for r in rows]
        return pa.table([pa.array(texts, schema.field("text").type), pa.array(ids, id_type),
                         pa.array(metas, meta_type)], schema=schema)

    if fmt == "parquet":
        per_page = rng.choice([1, 2, 4, 8])
        options = dict(compression=rng.choice(["snappy", "zstd", "none"]), use_dictionary=rng.random() < 0.5,
                       write_batch_size=per_page)
        TRIED[f"parquet {options['compression']}"] += 1
        with pq.ParquetWriter(path, schema, **options) as writer:
            for rows in groups:
                writer.write_table(table(rows))
        page = 0
        for rows in groups:
            for start in range(0, len(rows), per_page):
                page = max(page, sum(r["bytes"] + 1_024 for r in rows[start:start + per_page]))
            if options["use_dictionary"]:  # the dictionary page: values up to 1 MiB, then the one that passed it
                page = max(page, (1 << 20) + max(r["bytes"] for r in rows))
        return page
    stream = rng.random() < 0.3
    TRIED["arrow stream" if stream else "arrow file"] += 1
    with (pa.ipc.new_stream if stream else pa.ipc.new_file)(path, schema) as writer:
        for rows in groups:
            writer.write_table(table(rows), max_chunksize=max(1, len(rows)))
    return max(sum(r["bytes"] + 1_024 for r in rows) for rows in groups)  # a record batch is read whole


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    from corpusforge.core import columnar

    workdir.mkdir(parents=True, exist_ok=True)
    max_chars = rng.choice([2_000, 20_000, 100_000])
    limit = rng.choice([64 << 10, 256 << 10, 1 << 20])  # output.max_record_bytes
    fmt = rng.choice(["parquet", "arrow"])
    binary = rng.random() < 0.1
    groups, expected, position = [], [], 0
    for _ in range(rng.randint(1, 4)):
        rows = []
        for _ in range(rng.choice([1, rng.randint(1, 40), rng.randint(40, 300)])):
            text, end, size = _cell(rng, limit, max_chars, binary)
            meta = rng.choice([None, "m", _words(rng, 200)])
            rows.append({"text": text, "id": position, "meta": meta, "bytes": size})
            expected.append([position, end])
            position += 1
        groups.append(rows)
    path = workdir / f"case.{'parquet' if fmt == 'parquet' else 'arrow'}"
    page = _write(rng, path, fmt, groups)
    TRIED["cases"] += 1

    items, grown = peak_read(path, max_chars, limit)
    got = [[position, reason] for position, reason, *_ in items]
    if got != expected:
        wrong = next(i for i, (a, b) in enumerate(zip(got + [None] * len(expected), expected)) if a != b)
        raise AssertionError(f"rows do not end as their content calls for (first difference at row {wrong}: "
                             f"{got[wrong] if wrong < len(got) else 'missing'} != {expected[wrong]}; "
                             f"{len(got)} ends for {len(expected)} rows)")
    mb = 1 << 20
    decoded = 4 * page if fmt == "parquet" else page  # a page decodes to ~3 x; an IPC batch is read once
    bound = (decoded + 2 * limit + 4 * columnar.BATCH_BYTES) // mb + 64
    if grown > bound:
        raise AssertionError(f"reading {fmt} grew peak memory {grown} MB > {bound} MB (largest "
                             f"{'page' if fmt == 'parquet' else 'record batch'} {page // mb} MB, limit {limit // 1024} KB)")

    if rng.random() < 0.25:
        _build(workdir, path, max_chars, limit, len(expected))


def _build(workdir: pathlib.Path, path: pathlib.Path, max_chars: int, limit: int, rows: int) -> None:
    TRIED["builds"] += 1
    base = {"inputs": [{"path": str(path)}], "output": {"run_dir": str(workdir / "run"), "max_doc_chars": max_chars,
                                                        "max_record_bytes": limit},
            "quality": {"enabled": False}, "dedup": {"enabled": False}, "pii": {"enabled": False}}
    accounted_build(base, rows, "rows written")
