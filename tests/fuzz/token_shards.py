"""Fuzz family ``token_shards``: damaged or foreign token shards opened by ``TokenShards`` (the trainer's reader),
by ``TokenShard`` and ``TokenCorpus`` (the other readers: a shard read whole, a ``tokens/`` directory by its
manifest) and, one case in eight, by ``corpusforge train``.

Promise: a shard is read as the correct tokens or refused with one line (a ``UserError`` naming the file); never a
traceback, a signal (SIGBUS: no memory map), a hang, or other tokens given silently. "Correct" is what the file
says: pyarrow's own reading of it (``ipc.open_file(...).read_all()``, validated in full) where pyarrow reads it,
else the tokens the case wrote (a damage pyarrow refuses that leaves the tokens alone, e.g. in an ``id``). Arrow
IPC has no checksum: a flipped byte that leaves a valid file (a token id, an offset that still rises) is read as
the file says, by pyarrow and corpusforge alike. A layout corpusforge writes, or reads (other chunk sizes,
``list<uint16|uint32>``, extra columns, no batches), undamaged, must be read. A worker started by spawn (the
dataset pickled) reads what its parent does.

Each case writes the documents (random lengths, uint16 or uint32 ids) in one layout: as tokenize writes them, in
other chunk sizes, ``list`` offsets, extra columns before and after ``tokens``, no batches; or foreign: the column
renamed, another type (signed, 8 or 64 bit, float, strings, fixed-size lists), compressed (zstd, lz4),
dictionary-encoded ids, null documents or null token ids, the IPC stream format, not Arrow at all. Then one
damage: none, cut at a random point, cut at every point (a tiny shard: every length from 0 to its size), a byte
flipped in a message header or the footer, a byte flipped anywhere, or a huge length declared (a metadata length,
a body length, a row count, a buffer's length).
"""
from __future__ import annotations

import collections
import json
import os
import pathlib
import random
import subprocess
import sys
import textwrap

FAMILY = "token_shards"
TRIED: collections.Counter = collections.Counter()

_REPO = str(pathlib.Path(__file__).resolve().parents[2])
READ = ("corpusforge", "chunks", "list32", "extra_columns", "zero_batches")  # read, undamaged
FOREIGN = ("renamed", "other_type", "compressed", "dictionary", "nulls", "stream", "not_arrow")
DAMAGES = ("none", "none", "cut", "cut_every", "flip_header", "flip_header", "flip_any", "huge")

# In the child: each file opened by TokenShards (and through a pickle, as a spawned worker gets it), every document
# read; by TokenShard (read whole) and through a TokenCorpus whose manifest lists it, every document and id read;
# then pyarrow's reading of it. One JSON line a file. Any exception but a UserError ends the child: a traceback.
_READ = textwrap.dedent("""
    import json, os, pickle, sys
    sys.path.insert(0, sys.argv[2])
    import pyarrow as pa, pyarrow.ipc as ipc
    from corpusforge.core.errors import UserError
    from corpusforge.tokenizer.token_shards import TokenCorpus, TokenShard, TokenShards

    root = os.path.join(os.path.dirname(sys.argv[1]), "corpus")
    os.makedirs(root, exist_ok=True)
    for path in json.loads(open(sys.argv[1]).read()):
        out = {"path": path, "tokens": None, "error": None, "worker": None, "reference": None,
               "shard": None, "shard_error": None, "corpus": None, "corpus_error": None}
        try:
            shards = TokenShards([path])
            out["tokens"] = [shards.document(i).tolist() for i in range(len(shards))]
            worker = pickle.loads(pickle.dumps(shards))
            out["worker"] = [worker.document(i).tolist() for i in range(len(worker))]
        except UserError as exc:
            out["error"] = str(exc)
        try:
            shard = TokenShard(path)
            out["shard"] = [shard.document(i).tolist() for i in range(len(shard))]
        except UserError as exc:
            out["shard_error"] = str(exc)
        with open(os.path.join(root, "manifest.json"), "w") as f:
            json.dump({"vocab_size": 2**32, "dtype": "uint32", "special_tokens": {}, "tokenizer": "tokenizer.json",
                       "splits": {"train": {"shards": [path], "documents": 0, "tokens": 0}}}, f)
        try:
            read = list(TokenCorpus(root).split("train").documents_iter())
            if not all(isinstance(doc_id, str) for doc_id, _ in read):
                raise AssertionError(f"TokenCorpus gave ids that are not strings from {path}")
            out["corpus"] = [tokens.tolist() for _, tokens in read]
        except UserError as exc:
            out["corpus_error"] = str(exc)
        try:
            with pa.OSFile(path) as source:
                table = ipc.open_file(source).read_all()
            table.validate(full=True)
            column = table.column("tokens")
            if pa.types.is_integer(column.type.value_type):
                out["reference"] = column.to_pylist()
        except Exception:
            pass
        print(json.dumps(out), flush=True)
""")


def _documents(rng: random.Random, tiny: bool) -> tuple[list[list[int]], str]:
    dtype = rng.choice(["uint16", "uint32"])
    top = 65_535 if dtype == "uint16" else 2**32 - 1
    count = rng.randint(1, 4) if tiny else rng.choice([1, rng.randint(2, 50), rng.randint(50, 600)])
    longest = 6 if tiny else rng.choice([5, 60, 700])
    docs = [[rng.randint(0, top) for _ in range(rng.randint(0, longest))] for _ in range(count)]
    return docs, dtype


def _table(docs: list[list[int]], tokens_type):
    import pyarrow as pa

    return pa.table({"id": pa.array([f"doc-{i:06d}" for i in range(len(docs))], pa.string()),
                     "tokens": pa.array(docs, tokens_type), "source": pa.array([""] * len(docs), pa.string())})


def _write(path: pathlib.Path, table, chunk: int, **options) -> None:
    import pyarrow as pa

    with pa.ipc.new_file(str(path), table.schema, options=pa.ipc.IpcWriteOptions(**options)) as writer:
        writer.write_table(table, max_chunksize=chunk)


def write_layout(rng: random.Random, path: pathlib.Path, docs: list[list[int]], dtype: str, layout: str) -> None:
    """``docs`` as a token shard at ``path`` in ``layout``."""
    import numpy as np
    import pyarrow as pa

    from corpusforge.tokenizer.token_shards import token_schema, write_token_shards

    value = pa.uint16() if dtype == "uint16" else pa.uint32()
    chunk = rng.choice([1, 3, 256, 10_000])
    if layout == "corpusforge":
        written = write_token_shards(path.parent / "w", docs, docs_per_shard=len(docs) + 1, dtype=dtype)[0]
        os.replace(written, path)
        os.rmdir(path.parent / "w")
    elif layout == "chunks":
        _write(path, _table(docs, pa.large_list(value)).cast(token_schema(dtype)), chunk)
    elif layout == "list32":
        _write(path, _table(docs, pa.list_(value)), chunk)
    elif layout == "extra_columns":
        table = _table(docs, pa.large_list(value))
        extras = {"score": pa.array(np.arange(len(docs), dtype=np.float64)),
                  "tags": pa.array([[str(i)] * (i % 3) for i in range(len(docs))], pa.list_(pa.string())),
                  "meta": pa.array([{"n": i, "s": "x" * (i % 5)} for i in range(len(docs))]),
                  "nothing": pa.nulls(len(docs))}
        for name in rng.sample(sorted(extras), rng.randint(1, 4)):
            at = rng.randint(0, table.num_columns)
            table = table.add_column(at, name, extras[name])
        _write(path, table, chunk)
    elif layout == "zero_batches":
        docs.clear()
        with pa.ipc.new_file(str(path), token_schema(dtype)):
            pass
    elif layout == "renamed":
        _write(path, _table(docs, pa.large_list(value)).rename_columns(["id", rng.choice(["input_ids", "Tokens", "ids"]), "source"]), chunk)
    elif layout == "other_type":
        kind = rng.choice([pa.large_list(pa.int64()), pa.large_list(pa.int32()), pa.list_(pa.uint8()),
                           pa.large_list(pa.float32()), pa.large_list(pa.uint64()), "strings", "fixed"])
        if kind == "strings":
            table = _table(docs, pa.large_list(value)).set_column(1, "tokens", pa.array([" ".join(map(str, d)) for d in docs]))
        elif kind == "fixed":
            width = max([len(d) for d in docs] + [1])
            table = _table(docs, pa.large_list(value)).set_column(1, "tokens", pa.array(
                [d + [0] * (width - len(d)) for d in docs], pa.list_(value, width)))
        else:
            bound = {pa.list_(pa.uint8()): 256, pa.large_list(pa.float32()): 1 << 24,
                     pa.large_list(pa.int32()): 1 << 31}.get(kind)  # what the type holds exactly
            bounded = [[t % bound for t in d] for d in docs] if bound else docs
            table = _table(bounded, kind)
        _write(path, table, chunk)
    elif layout == "compressed":
        _write(path, _table(docs, pa.large_list(value)), chunk, compression=rng.choice(["zstd", "lz4"]))
    elif layout == "dictionary":
        table = _table(docs, pa.large_list(value))
        _write(path, table.set_column(0, "id", table.column("id").dictionary_encode()), chunk)
    elif layout == "nulls":
        with_nulls = [None if i % 3 == 1 else d for i, d in enumerate(docs)] if rng.random() < 0.5 or len(docs) < 2 \
            else [d[:1] + [None] + d[1:] for d in docs]
        _write(path, pa.table({"id": [f"doc-{i}" for i in range(len(docs))], "tokens": pa.array(with_nulls, pa.large_list(value))}), chunk)
    elif layout == "stream":
        with pa.ipc.new_stream(str(path), token_schema(dtype)) as writer:
            writer.write_table(_table(docs, pa.large_list(value)).cast(token_schema(dtype)))
    else:  # not Arrow: JSON Lines, or random bytes
        path.write_bytes(rng.choice([json.dumps(docs).encode(), bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))]))


def _headers(data: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` of the magic, each message's framing and metadata, and the footer, in an Arrow IPC file's
    bytes (found by the framing alone, not by the parser under test)."""
    ranges = [(0, 8)] if data[:6] == b"ARROW1" else []
    at = 8 if ranges else 0
    while at + 8 <= len(data) and data[at:at + 4] == b"\xff\xff\xff\xff":
        length = int.from_bytes(data[at + 4:at + 8], "little", signed=True)
        if length <= 0 or at + 8 + length > len(data):
            break
        ranges.append((at, at + 8 + length))
        body = _body_length(data[at + 8:at + 8 + length])
        if body is None:
            break
        at += 8 + length + body
    if data[-6:] == b"ARROW1" and len(data) >= 10:
        footer = int.from_bytes(data[-10:-6], "little")
        ranges.append((max(0, len(data) - 10 - footer), len(data)))
    return ranges or [(0, len(data))]


def _body_length(meta: bytes) -> int | None:
    import pyarrow as pa

    try:
        message = pa.ipc.read_message(pa.py_buffer(b"\xff\xff\xff\xff" + len(meta).to_bytes(4, "little") + meta
                                                   + bytes(1 << 20)))  # the body, as zeros, up to 1 MB
        return message.body.size if message.body is not None else 0
    except Exception:
        return None


def damage(rng: random.Random, path: pathlib.Path, kind: str) -> list[pathlib.Path]:
    """``path`` damaged as ``kind``; the files to open (cut_every: one a length)."""
    data = path.read_bytes()
    if kind == "cut":
        path.write_bytes(data[:rng.randrange(max(1, len(data)))])
    elif kind == "cut_every":
        cuts = []
        for size in range(len(data)):
            cut = path.with_name(f"{path.stem}-cut{size:05d}.arrow")
            cut.write_bytes(data[:size])
            cuts.append(cut)
        return cuts
    elif kind in ("flip_header", "flip_any") and data:
        lo, hi = rng.choice(_headers(data)) if kind == "flip_header" else (0, len(data))
        at = rng.randrange(lo, max(lo + 1, hi))
        changed = bytearray(data)
        changed[at] ^= rng.choice([1, 2, 4, 8, 16, 32, 64, 128, rng.randint(1, 255)])
        path.write_bytes(bytes(changed))
    elif kind == "huge" and data:
        changed = bytearray(data)
        ranges = _headers(data)
        lo, hi = rng.choice(ranges)
        huge = rng.choice([2**31 - 1, 2**32 - 1, 2**62, 2**63 - 1, 10**12])
        values = [int.from_bytes(data[i:i + 8], "little") for i in range(lo, max(lo, hi - 7), 8)]
        targets = [i for i in range(lo, max(lo, hi - 7)) if 0 < int.from_bytes(data[i:i + 8], "little") < 2**24]
        if rng.random() < 0.3 or not targets:  # a message's metadata length
            starts = [s for s, e in ranges if data[s:s + 4] == b"\xff\xff\xff\xff"] or [lo]
            s = rng.choice(starts)
            changed[s + 4:s + 8] = min(huge, 2**31 - 1).to_bytes(4, "little")
        else:  # a length inside a header: rows, a node's length, a buffer's offset or length, a body length
            i = rng.choice(targets)
            changed[i:i + 8] = huge.to_bytes(8, "little")
        del values
        path.write_bytes(bytes(changed))
    return [path]


def read_shards(paths: list[pathlib.Path], timeout: int = 120) -> list[dict]:
    """Each file through TokenShards in a child process (see ``_READ``)."""
    listing = paths[0].parent / "read.json"  # thousands of paths: too many for a command line
    listing.write_text(json.dumps([str(p) for p in paths]))
    try:
        result = subprocess.run([sys.executable, "-c", _READ, str(listing), _REPO],
                                capture_output=True, text=True, timeout=timeout, env={**os.environ, "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        raise AssertionError(f"TokenShards hung (over {timeout} s) on {paths[0]}") from None
    if result.returncode != 0:
        how = f"killed by signal {-result.returncode}" if result.returncode < 0 else f"exit {result.returncode}"
        raise AssertionError(f"a reader of token shards died ({how}) on a shard: {result.stderr.strip()[-1500:]}")
    return [json.loads(line) for line in result.stdout.splitlines()]


def check(out: dict, docs: list[list[int]], must_read: bool, what: str) -> None:
    _check_reader(out, docs, must_read, what)
    for reader in ("shard", "corpus"):  # TokenShard, and TokenCorpus through it: read as the file says, or one line
        error, tokens = out[f"{reader}_error"], out[reader]
        label = {"shard": "TokenShard", "corpus": "TokenCorpus"}[reader]
        if error is not None:
            if "\n" in error or not error.startswith(out["path"]):
                raise AssertionError(f"{what}: {label}'s error is not one line naming the file: {error[:300]!r}")
            if must_read:
                raise AssertionError(f"{what}: {label} refused a shard corpusforge reads: {error}")
            TRIED[f"{reader} refused"] += 1
            continue
        expected = out["reference"] if out["reference"] is not None else docs
        if tokens != expected or (out["tokens"] is not None and tokens != out["tokens"]):
            raise AssertionError(f"{what}: {label} read {len(tokens)} documents that are not the file's "
                                 "(or not TokenShards')")
        TRIED[f"{reader} read"] += 1


def _check_reader(out: dict, docs: list[list[int]], must_read: bool, what: str) -> None:
    path, error, tokens = out["path"], out["error"], out["tokens"]
    if error is not None:
        if "\n" in error or not error.startswith(path):
            raise AssertionError(f"{what}: the error is not one line naming the file: {error[:300]!r}")
        if must_read:
            raise AssertionError(f"{what}: a shard corpusforge reads was refused: {error}")
        TRIED["refused"] += 1
        return
    expected = out["reference"] if out["reference"] is not None else docs
    if tokens != expected:
        raise AssertionError(f"{what}: read {len(tokens)} documents that are not the file's "
                             f"({'pyarrow reads ' + str(len(expected)) if out['reference'] is not None else 'as written'})")
    if out["worker"] != tokens:
        raise AssertionError(f"{what}: a spawned worker read other tokens than its parent")
    TRIED["read"] += 1


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    if rng.random() < 0.125:
        return fuzz_train(rng, workdir)
    kind = rng.choice(DAMAGES)
    layout = rng.choice(READ + FOREIGN)
    docs, dtype = _documents(rng, tiny=kind == "cut_every")
    path = workdir / "part-00000-of-00001.arrow"
    write_layout(rng, path, docs, dtype, layout)
    paths = damage(rng, path, kind)
    TRIED[f"{layout} {kind}"] += 1
    for out in read_shards(paths):
        check(out, docs, layout in READ and kind == "none", f"{layout} shard, {kind} ({out['path']})")


_TRAIN = ["train", "--size", "debug", "--seq-len", "32", "--batch-size", "8", "--max-steps", "2", "--no-progress",
          "--set", "train.eval_every=0"]


def fuzz_train(rng: random.Random, workdir: pathlib.Path) -> None:
    """A tiny run whose first train shard is one case's (the run's own documents, so that their ids fit the
    vocabulary): ``corpusforge train`` must train, or stop with exit 2 and one line; where TokenShards refuses the
    shard, train must stop naming it."""
    from tests.trainers.conftest import make_run

    run = make_run(workdir / "run", n_train=300, n_val=40, seed=rng.randrange(1000))
    path = sorted((run / "tokens" / "train").glob("part-*.arrow"))[0]
    from corpusforge.tokenizer.token_shards import TokenShards

    shards = TokenShards([path])
    docs = [shards.document(i).tolist() for i in range(len(shards))]
    shards.close()
    kind = rng.choice(["none", "cut", "flip_header", "flip_any", "huge"])
    layout = rng.choice(READ[:-1] + FOREIGN)  # no empty shard: its manifest would lie
    write_layout(rng, path, docs, "uint16", layout)
    damage(rng, path, kind)
    TRIED[f"train {layout} {kind}"] += 1
    read = read_shards([path])[0]
    check(read, docs, layout in READ and kind == "none", f"train: {layout} shard, {kind}")
    try:
        result = subprocess.run([sys.executable, "-m", "corpusforge", *_TRAIN, "--run-dir", str(run)], cwd=_REPO,
                                capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        raise AssertionError(f"train: {layout} shard, {kind}: corpusforge train hung (over 300 s)") from None
    lines = result.stderr.strip().splitlines()
    if result.returncode not in (0, 2) or (result.returncode == 2 and len(lines) != 1):
        raise AssertionError(f"train: {layout} shard, {kind}: exit {result.returncode}, not 0 or one line: "
                             f"{result.stderr.strip()[-1500:]}")
    if read["error"] is not None and (result.returncode != 2 or str(path) not in lines[0]):
        raise AssertionError(f"train: {layout} shard, {kind}: TokenShards refuses it ({read['error']}) but train "
                             f"{'trained' if result.returncode == 0 else 'said ' + lines[0]!r}")
    TRIED["train " + ("stopped" if result.returncode else "trained")] += 1
