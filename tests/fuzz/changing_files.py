"""Fuzz family ``changing_files``: input files that another process changes between listing and reading, or
while they are read (docs/inputs.md, "A file that changes while it is read").

Each case writes one input file under ``workdir`` (JSON Lines plain, .gz, .zst, .bz2 or .xz; Parquet plain or
.zst; Arrow IPC file or stream format; WARC plain or .gz) of 1-300 records of 20-20,000 characters, then reads it
with ``read_file`` in a child process (a reader killed by a signal fails the case, not the harness) and changes
it either before the read starts or after the reader gave ``k`` records: cut to a random length, grown (random
bytes, the file again, more records), rewritten in place (a random range overwritten, or the whole file
replaced by another case's bytes), renamed over by a new file, deleted, or turned into a folder, a FIFO or a link
to ``/dev/zero``. One case in five also runs a build whose reader changes the file the same way. One in four then also changes one
of corpusforge's own outputs while it reads it back (``fuzz_own``, below: a clean shard of any format or token
shards, cut, grown, rewritten, renamed over or deleted).

Promises checked (an AssertionError names the one broken):
- the reader ends: exit 0, no signal (a memory-mapped Arrow file cut short raised SIGBUS), within 120 s (a FIFO
  never stalls it), and nothing escapes ``read_file``;
- every record ends once: positions strictly increase, each item kept or rejected with a named reason (never
  ``stage_error``);
- what was read before the change is what an undisturbed read gives;
- a change made before the read reads as the file then is (a fresh read of it; a folder, FIFO, link to a device or
  a missing file is one ``not_a_regular_file``); a change that leaves the opened file's bytes alone (renamed over,
  deleted, replaced by a folder, FIFO or link) gives exactly the undisturbed read;
- a read that a change in place stops says so: the rest is ``file_changed``, never ``unreadable_file``,
  ``truncated_compressed_file`` or ``corrupt_compressed_data`` (names for a file that was damaged when opened);
- the build's counts add up: input = kept + removed + rejected = the items its reader gave.
"""
from __future__ import annotations

import bz2
import collections
import gzip
import io
import json
import lzma
import os
import pathlib
import random
import shutil
import subprocess
import sys
import textwrap

FAMILY = "changing_files"

TRIED: collections.Counter = collections.Counter()

FORMATS = ["jsonl", "jsonl.gz", "jsonl.zst", "jsonl.bz2", "jsonl.xz", "parquet", "parquet.zst", "arrow", "arrow-stream",
           "warc", "warc.gz"]
IN_PLACE = ("truncate", "grow", "rewrite", "rewrite_all")  # the opened file's own bytes change
AWAY = ("replace", "delete", "to_dir", "to_fifo", "to_link")  # the path names something else; the bytes stay
STOPPED_WITHOUT_CHANGE = {"unreadable_file", "truncated_compressed_file", "corrupt_compressed_data"}

# In the child: ``read_items`` (below) with the change, its items printed as JSON.
_READ = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[3])
    from tests.fuzz.changing_files import read_items

    print(json.dumps(read_items(sys.argv[1], json.loads(sys.argv[2]))))
""")


def read_items(path: str, change: dict) -> list:
    """Read ``path`` with read_file, applying ``change`` after ``k`` items (k = -1: before read_file opens it; kind
    "none": no change); every item as [position, reason or "kept", id or the rejection's detail]."""
    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.document import Rejected
    from corpusforge.pipeline.readers import read_file

    items = []
    if change["k"] < 0:
        apply_change(path, change)
    for item in read_file(path, InputConfig(path=path, format=change["format"])):
        if isinstance(item, Rejected):
            items.append([item.position, item.reason, item.detail[:200]])
        else:
            items.append([item.origin[2], "kept", item.id])
        if len(items) == change["k"]:
            apply_change(path, change)
    return items


# In the child: a build (tests/fuzz/accounted_build.py) whose reader applies the change after ``k`` items; prints
# its accounting and the items the reader gave.
_BUILD = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[3])
    from corpusforge.pipeline import readers
    from tests.fuzz.accounted_build import accounted_build
    from tests.fuzz.changing_files import apply_change

    path, change, run_dir = sys.argv[1], json.loads(sys.argv[2]), sys.argv[4]
    given = [0]
    original = readers.records_from_file

    def changing(*args, **kwargs):
        for item in original(*args, **kwargs):
            given[0] += 1
            if given[0] == change["k"]:
                apply_change(path, change)
            yield item

    readers.records_from_file = changing
    base = {"inputs": [{"path": path, "format": change["format"]}], "output": {"run_dir": run_dir},
            "quality": {"enabled": False}, "dedup": {"enabled": False}, "pii": {"enabled": False}}
    result = accounted_build(base)  # raises nothing, and input = kept + removed + rejected
    print(json.dumps({"accounting": result.stats["accounting"], "given": given[0]}))
""")

_REPO = str(pathlib.Path(__file__).resolve().parents[2])


def _text(rng: random.Random, i: int) -> str:
    words = "the cat sat on a warm mat and slept while seven owls watched quietly".split()
    size = rng.choice([20, 200, 2_000, rng.randint(20, 20_000)])
    return f"Record {i}: " + " ".join(rng.choice(words) for _ in range(size // 5 + 1))[:size]


def write_input(rng: random.Random, path: pathlib.Path, fmt: str, n: int) -> None:
    """``n`` records in format ``fmt`` (one of ``FORMATS``) at ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    texts = [_text(rng, i) for i in range(n)]
    if fmt.startswith("jsonl"):
        data = b"".join(json.dumps({"id": i, "text": t}).encode() + b"\n" for i, t in enumerate(texts))
        path.write_bytes(_compress(data, fmt.rsplit(".", 1)[-1] if "." in fmt else ""))
    elif fmt.startswith("parquet"):
        sink = io.BytesIO()
        pq.write_table(pa.table({"id": list(range(n)), "text": texts}), sink,
                       row_group_size=rng.randint(1, max(1, n)), compression=rng.choice(["none", "snappy", "zstd"]))
        data = sink.getvalue()
        path.write_bytes(zstandard.ZstdCompressor().compress(data) if fmt.endswith(".zst") else data)
    elif fmt.startswith("arrow"):
        table = pa.table({"id": list(range(n)), "text": texts})
        with (pa.ipc.new_stream if fmt == "arrow-stream" else pa.ipc.new_file)(str(path), table.schema) as writer:
            writer.write_table(table, max_chunksize=rng.randint(1, max(1, n)))
    else:
        records = []
        for i, text in enumerate(texts):
            body = f"<html><body><p>{text}</p></body></html>".encode()
            http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + body
            record = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://x/{i}\r\n"
                      f"WARC-Record-ID: <urn:uuid:{i}>\r\nContent-Type: application/http; msgtype=response\r\n"
                      f"Content-Length: {len(http)}\r\n\r\n").encode() + http + b"\r\n\r\n"
            records.append(gzip.compress(record, mtime=0) if fmt.endswith(".gz") else record)  # a member a record
        path.write_bytes(b"".join(records))
    os.utime(path, (1_600_000_000, 1_600_000_000))  # any later write moves mtime, however coarse the clock


def _compress(data: bytes, kind: str) -> bytes:
    import zstandard

    if kind == "gz":
        return gzip.compress(data, mtime=0)
    if kind == "zst":
        return zstandard.ZstdCompressor().compress(data)
    if kind == "bz2":
        return bz2.compress(data)
    if kind == "xz":
        return lzma.compress(data)
    return data


def _name(fmt: str) -> str:
    return "input.arrow" if fmt == "arrow-stream" else f"input.{fmt}"


def apply_change(path: str, change: dict) -> None:
    """Change the file at ``path`` as ``change`` says (``kind``, and the bytes or sizes drawn for it)."""
    kind = change["kind"]
    if kind == "truncate":
        os.truncate(path, change["size"])
    elif kind == "grow":
        with open(path, "ab") as f:
            f.write(bytes.fromhex(change["bytes"]) if "bytes" in change else pathlib.Path(path).read_bytes())
    elif kind == "rewrite":
        with open(path, "r+b") as f:
            f.seek(change["at"])
            f.write(bytes.fromhex(change["bytes"]))
    elif kind == "rewrite_all":  # the same file (inode), other bytes
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(pathlib.Path(change["other"]).read_bytes())
    elif kind == "replace":
        os.replace(change["other"], path)
    else:
        os.unlink(path)
        if kind == "to_dir":
            os.mkdir(path)
        elif kind == "to_fifo":
            os.mkfifo(path)
        elif kind == "to_link":
            os.symlink("/dev/zero", path)


def _draw_change(rng: random.Random, workdir: pathlib.Path, path: pathlib.Path, fmt: str, n: int) -> dict:
    size = path.stat().st_size
    kind = rng.choice(IN_PLACE + AWAY)
    change: dict = {"kind": kind, "format": "arrow" if fmt == "arrow-stream" else "auto"}
    if kind == "truncate":
        change["size"] = rng.choice([0, rng.randrange(max(1, size)), size // 2, max(0, size - rng.randint(1, 16))])
    elif kind == "grow":
        roll = rng.random()
        if roll < 0.4:
            change["bytes"] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 5000))).hex()
        elif roll < 0.7 and fmt.startswith("jsonl") and "." not in fmt:
            change["bytes"] = json.dumps({"id": "late", "text": "A record written while the file was read."}).encode().hex() + "0a"
        # else: the file's bytes again
    elif kind == "rewrite":
        at = rng.randrange(max(1, size))
        change["at"] = at
        change["bytes"] = bytes(rng.randrange(256) for _ in range(rng.randint(1, min(4096, max(1, size - at))))).hex()
    elif kind in ("rewrite_all", "replace"):
        other_fmt = rng.choice([fmt, rng.choice(FORMATS)])
        other = workdir / f"other.{rng.randrange(10**6)}"
        write_input(rng, other, other_fmt, rng.randint(0, 40))
        change["other"] = str(other)
        change["other_format"] = other_fmt
        if kind == "replace":  # renamed over the input by the read: a build's change needs a copy of its own
            keep = workdir / f"{other.name}.keep"
            shutil.copyfile(other, keep)
            change["other_kept"] = str(keep)
    return change


def read_in_child(path: pathlib.Path, change: dict | None) -> list:
    """The items ``read_file`` gives for ``path`` in a fresh process, ``change`` applied as it says."""
    try:
        result = subprocess.run([sys.executable, "-c", _READ, str(path), json.dumps(change), _REPO],
                                capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the reader stalled (over 120 s) on {path.name} changed {change}") from None
    if result.returncode != 0:
        how = f"killed by signal {-result.returncode}" if result.returncode < 0 else f"exit {result.returncode}"
        raise AssertionError(f"the reader died ({how}) on {path.name} changed {change}: {result.stderr.strip()[-800:]}")
    return json.loads(result.stdout)


def check_items(items: list, what: str) -> None:
    from tests.fuzz.readers import REASONS

    positions = [item[0] for item in items]
    if any(b <= a for a, b in zip(positions, positions[1:])):
        raise AssertionError(f"{what}: positions do not strictly increase (a record counted twice?): {positions[:50]}")
    reasons = {item[1] for item in items} - {"kept"}
    if not reasons <= REASONS | {"file_changed"}:
        raise AssertionError(f"{what}: rejected with reasons that are not named ones: {sorted(reasons - REASONS)}")


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    fmt = rng.choice(FORMATS)
    n = rng.randint(1, 300)
    path = workdir / _name(fmt)
    write_input(rng, path, fmt, n)
    pristine = workdir / "pristine"
    shutil.copyfile(path, pristine)
    change = _draw_change(rng, workdir, path, fmt, n)
    before = rng.random() < 0.25
    TRIED[fmt] += 1
    TRIED[f"{change['kind']} {'before' if before else 'during'}"] += 1

    # The undisturbed read runs here, not in a child: nothing changes the file under it, and a child's imports (Beam,
    # with the readers) are ~2 CPU-s, most of a case's cost. The JSON round trip gives the child's item types.
    undisturbed = json.loads(json.dumps(read_items(str(path), {"k": 0, "kind": "none", "format": change["format"]})))
    check_items(undisturbed, "undisturbed read")
    change["k"] = -1 if before else rng.randint(1, max(1, len(undisturbed)))
    items = read_in_child(path, change)
    when = "before the read" if before else f"after {change['k']} items"
    what = f"{fmt} {change['kind']} {when}"
    check_items(items, what)

    if before:
        if change["kind"] in ("delete", "to_dir", "to_fifo", "to_link"):
            if [i[1] for i in items] != ["not_a_regular_file"]:
                raise AssertionError(f"{what}: expected one not_a_regular_file, got {items[:5]}")
        else:  # the file as it is now, read fresh
            fresh = read_in_child(path, {"k": 0, "kind": "none", "format": change["format"]})
            if items != fresh:
                raise AssertionError(f"{what}: the read differs from a fresh read of the changed file")
    else:
        k = change["k"]
        if items[:k] != undisturbed[:k]:
            raise AssertionError(f"{what}: the records read before the change differ from an undisturbed read")
        if change["kind"] in AWAY and items != undisturbed:
            raise AssertionError(f"{what}: the opened file's bytes did not change, yet the read differs from an "
                                 f"undisturbed one ({len(items)} items, {len(undisturbed)} undisturbed)")
        if change["kind"] in IN_PLACE:
            wrong = [i for i in items[k:] if i[1] in STOPPED_WITHOUT_CHANGE]
            if wrong:
                raise AssertionError(f"{what}: a read stopped by the change is rejected as {wrong[0][1]}, not "
                                     f"file_changed: {wrong[0]}")
            TRIED["stopped: file_changed"] += any(i[1] == "file_changed" for i in items)

    if rng.random() < 0.2 and not before:
        _build(rng, workdir, pristine, fmt, change)
    if rng.random() < 0.25:  # drawn last: the cases above stay what they were for every seed
        fuzz_own(rng, workdir)


def _build(rng: random.Random, workdir: pathlib.Path, pristine: pathlib.Path, fmt: str, change: dict) -> None:
    TRIED["builds"] += 1
    folder = workdir / "build"
    folder.mkdir()
    path = folder / _name(fmt)
    shutil.copyfile(pristine, path)
    if change["kind"] in ("rewrite_all", "replace"):
        other = workdir / "other-for-build"
        shutil.copyfile(change.get("other_kept", change["other"]), other)
        change = {**change, "other": str(other)}
    try:
        result = subprocess.run([sys.executable, "-c", _BUILD, str(path), json.dumps(change), _REPO,
                                 str(workdir / "run")], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the build stalled (over 300 s) on {fmt} changed {change}") from None
    if result.returncode != 0:
        raise AssertionError(f"the build failed (exit {result.returncode}) on {fmt} changed {change}: "
                             f"{result.stderr.strip()[-800:]}")
    out = json.loads(result.stdout.strip().splitlines()[-1])
    accounting, given = out["accounting"], out["given"]
    if given < change["k"]:
        raise AssertionError(f"the build's reader gave {given} records, fewer than the {change['k']} to change after")
    if accounting["input"] != given:
        raise AssertionError(f"the build counted {accounting['input']} input records, its reader gave {given}")


# ---------------------------------------------------------------------------------------------- own outputs
# Files corpusforge wrote and reads back (docs/outputs.md, "Shards that change while they are read"): a clean shard
# (``write_shard``, every format) read by ``open_shard``, or token shards read by ``TokenShards`` as the trainer
# does, changed after the reader gave ``k`` batches (documents) in a child process. Promises: the reader ends (no
# signal: a memory-mapped shard cut short raised SIGBUS; within 120 s); what it gave before the change is what an
# undisturbed read gives; it ends whole or with one UserError line naming the file, never another exception; a
# change that leaves the opened file's bytes alone (renamed over, deleted) reads exactly as undisturbed, and a
# cut that stops the read is a UserError.

OWN_KINDS = ["arrow", "parquet", "tokens"] * 2 + ["jsonl", "jsonl.zst", "jsonl.gz"]  # the mapped ones twice as often
OWN_CHANGES = ("truncate",) * 4 + ("grow", "rewrite", "rewrite_all", "replace", "delete")  # a cut: SIGBUS before

_OWN_READ = textwrap.dedent("""
    import hashlib, json, sys
    sys.path.insert(0, sys.argv[3])
    from corpusforge.core.errors import UserError
    from tests.fuzz.changing_files import apply_change

    paths, change = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    items, error, before, batches = [], None, None, 0  # before: the items given before the change (a batch in hand counts)
    try:
        if change["own"] == "tokens":
            from corpusforge.tokenizer.token_shards import TokenShards
            shards = TokenShards(paths)
            for i in range(len(shards)):
                if i == change["k"]:
                    apply_change(paths[change["file"]], change)
                    before = len(items)
                items.append(hashlib.sha1(shards.document(i).tobytes()).hexdigest()[:12])
        else:
            import pyarrow.compute as pc
            from corpusforge.core.shard_files import open_shard
            for b, batch in enumerate(open_shard(paths[0]).batches()):
                if b == change["k"]:
                    apply_change(paths[0], change)  # the batch in hand was read before: its texts are touched after
                lengths = pc.utf8_length(batch.column("text")).to_pylist()  # every text touched
                items += [f"{i}:{n}" for i, n in zip(batch.column("id").to_pylist(), lengths)]
                if b == change["k"]:
                    before = len(items)
                batches = b + 1
    except UserError as exc:
        error = str(exc)
    print(json.dumps({"items": items, "error": error, "before": len(items) if before is None else before,
                      "batches": len(items) if change["own"] == "tokens" else batches}))
""")


def _write_own(rng: random.Random, directory: pathlib.Path, kind: str) -> list[pathlib.Path]:
    """One clean shard of ``kind``'s format, or 1-3 token shards, of random size, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    if kind == "tokens":
        import numpy as np

        from corpusforge.tokenizer.token_shards import write_token_shards

        seed = rng.randrange(2**32)
        lengths = np.random.default_rng(seed).integers(1, rng.choice([50, 2_000]), size=rng.randint(1, 3_000))
        docs = [np.random.default_rng([seed, i]).integers(0, 60_000, size=int(n)).tolist() for i, n in enumerate(lengths)]
        return write_token_shards(directory, docs, docs_per_shard=max(1, -(-len(docs) // rng.randint(1, 3))),
                                  dtype=rng.choice(["uint16", "uint32"]))
    import pyarrow as pa

    from corpusforge.core.shard_files import ShardFormat, write_shard

    name, _, codec = kind.partition(".")
    fmt = ShardFormat(name, {"zst": "zstd", "gz": "gzip"}.get(codec, "auto"))
    schema = pa.schema([pa.field("id", pa.string()), pa.field("text", pa.large_string())])
    rows = [{"id": f"doc-{i:05d}", "text": _text(rng, i)[:2_000]} for i in range(rng.randint(1, 2_500))]
    path = directory / f"part-00000-of-00001{fmt.suffix}"
    write_shard(str(path), schema, rows, fmt, row_group_bytes=rng.choice([1 << 16, 1 << 20, 64 << 20]))
    return [path]


def _read_own(paths: list[pathlib.Path], change: dict) -> dict:
    try:
        result = subprocess.run([sys.executable, "-c", _OWN_READ, json.dumps([str(p) for p in paths]),
                                 json.dumps(change), _REPO], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the reader of corpusforge's own {change['own']} stalled (over 120 s), changed {change}"
                             ) from None
    if result.returncode != 0:
        how = f"killed by signal {-result.returncode}" if result.returncode < 0 else f"exit {result.returncode}"
        raise AssertionError(f"the reader of corpusforge's own {change['own']} died ({how}), changed {change}: "
                             f"{result.stderr.strip()[-800:]}")
    return json.loads(result.stdout)


def fuzz_own(rng: random.Random, workdir: pathlib.Path) -> None:
    """One case of an own output changed while corpusforge reads it back (see above)."""
    kind = rng.choice(OWN_KINDS)
    paths = _write_own(rng, workdir / "own", kind)
    TRIED[f"own {kind}"] += 1
    undisturbed = _read_own(paths, {"own": kind, "k": -1, "kind": "none"})
    if undisturbed["error"]:
        raise AssertionError(f"own {kind}: an undisturbed read failed: {undisturbed['error']}")
    target = rng.randrange(len(paths))
    size = paths[target].stat().st_size
    change: dict = {"own": kind, "kind": rng.choice(OWN_CHANGES), "file": target}
    if change["kind"] == "truncate":
        change["size"] = rng.choice([0, rng.randrange(max(1, size)), size // 2, max(0, size - rng.randint(1, 16))])
    elif change["kind"] == "grow":
        change["bytes"] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 5000))).hex()
    elif change["kind"] == "rewrite":
        change["at"] = at = rng.randrange(max(1, size))
        change["bytes"] = bytes(rng.randrange(256) for _ in range(rng.randint(1, min(4096, max(1, size - at))))).hex()
    elif change["kind"] in ("rewrite_all", "replace"):
        change["other"] = str(_write_own(rng, workdir / f"other-{rng.randrange(10**6)}", kind)[0])
    change["k"] = rng.randrange(max(1, undisturbed["batches"]))  # a batch (a document of token shards)
    TRIED[f"own {change['kind']}"] += 1
    out = _read_own(paths, change)
    what = f"own {kind} {change['kind']} after {change['k']}"
    error, items, whole = out["error"], out["items"], undisturbed["items"]
    if error is not None and ("\n" in error or not any(error.startswith(str(p)) for p in paths)):
        raise AssertionError(f"{what}: the error is not one line naming the file: {error[:300]!r}")
    if items[:out["before"]] != whole[:out["before"]]:
        raise AssertionError(f"{what}: what was read before the change differs from an undisturbed read")
    if change["kind"] in ("replace", "delete") and (items != whole or error):
        raise AssertionError(f"{what}: the opened file's bytes did not change, yet the read differs ({error})")
    if change["kind"] == "truncate" and error is None and items != whole:
        raise AssertionError(f"{what}: a cut read ended without an error and gave other items "
                             f"({len(items)} of {len(whole)})")
    TRIED["own: stopped with one line"] += error is not None
