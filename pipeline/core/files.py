"""File access for local paths and any Beam filesystem (gs://, s3://, hdfs://...), with atomic writes.

Local paths take the fast route (memory maps, ``os.replace``); other schemes go through
``apache_beam.io.filesystems.FileSystems``, so remote workers can read the tokenizer and write shards.
"""
from __future__ import annotations

import json
import os
import posixpath
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def join(base: str, *parts: str) -> str:
    if is_local(base):
        return os.path.join(base, *parts)
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.join(base, *parts)


def exists(path: str) -> bool:
    if is_local(path):
        return os.path.exists(_local(path))
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.exists(path)


def read_bytes(path: str) -> bytes:
    if is_local(path):
        with open(_local(path), "rb") as f:
            return f.read()
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read()


def make_private_dir(path: str) -> None:
    """Create the directory ``path`` (and its parents) with mode 0700, or tighten it to 0700 if it exists: what
    it holds (spilled text, checkpoints from before the PII stage) is for the owner only. Other filesystems
    (gs://, s3://) have no modes; their buckets' access rules apply."""
    if not is_local(path):
        from apache_beam.io.filesystems import FileSystems

        if not FileSystems.exists(path):
            FileSystems.mkdirs(path)
        return
    local = _local(path)
    os.makedirs(local, mode=0o700, exist_ok=True)
    os.chmod(local, 0o700)  # makedirs' mode is filtered by the umask and ignored for an existing directory


def write_bytes_atomic(path: str, data: bytes, private: bool = False) -> None:
    """Write ``data`` to a temporary name beside ``path``, then rename it over ``path``; ``private``: mode
    0600 from the start (a local file)."""
    tmp = _temp_name(path)
    if is_local(path):
        local, local_tmp = _local(path), _local(tmp)
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        try:
            mode = 0o600 if private else 0o666  # 0666: what open() asks for, before the umask
            with os.fdopen(os.open(local_tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(local_tmp, local)
        finally:
            if os.path.exists(local_tmp):
                os.remove(local_tmp)
        return
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    with FileSystems.create(tmp, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(data)
    FileSystems.rename([tmp], [path])


def write_arrow_atomic(path: str, batch: pa.RecordBatch) -> None:
    """Write one record batch as an Arrow IPC *file* at ``path``, atomically."""
    if is_local(path):
        local = _local(path)
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        tmp = _local(_temp_name(path))
        try:
            with pa.OSFile(tmp, "wb") as sink, ipc.new_file(sink, batch.schema) as writer:
                writer.write_batch(batch)
            os.replace(tmp, local)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        return
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, batch.schema) as writer:
        writer.write_batch(batch)
    write_bytes_atomic(path, sink.getvalue().to_pybytes())


def _temp_name(path: str) -> str:
    head, tail = posixpath.split(path) if not is_local(path) else os.path.split(path)
    name = f".{tail}.tmp-{uuid.uuid4().hex}"
    return posixpath.join(head, name) if not is_local(path) else os.path.join(head, name)


def open_arrow(path: str) -> ipc.RecordBatchFileReader:
    """An Arrow IPC file reader: memory-mapped (zero copy) for local files, streamed for remote ones."""
    if is_local(path):
        return ipc.open_file(pa.memory_map(_local(path), "r"))
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    return ipc.open_file(pa.PythonFile(FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)))


def match(pattern: str) -> list[tuple[str, int]]:
    """``(path, size_in_bytes)`` of the files matching a glob, sorted by path."""
    if is_local(pattern):  # no Beam import (a second or two) for local paths
        import glob

        return sorted((p, os.path.getsize(p)) for p in glob.glob(_local(pattern)) if os.path.isfile(p))
    from apache_beam.io.filesystems import FileSystems

    result = FileSystems.match([pattern])[0]
    return sorted((m.path, m.size_in_bytes) for m in result.metadata_list)


def arrow_shards(location: str) -> list[tuple[str, int]]:
    """The ``.arrow`` files of a directory, or the files a glob or single path names: ``(path, size)``."""
    if any(ch in location for ch in "*?["):
        return match(location)
    if is_local(location) and os.path.isdir(_local(location)):
        return match(os.path.join(location, "*.arrow"))
    if not is_local(location) and not exists(location):
        return match(location.rstrip("/") + "/*.arrow")
    return match(location)


def relative(path: str, start: str) -> str:
    """``path`` relative to the directory ``start`` when both are on the same filesystem, else ``path``."""
    if is_local(path) and is_local(start):
        return os.path.relpath(os.path.abspath(_local(path)), os.path.abspath(_local(start)))
    scheme_a, scheme_b = path.split("://", 1)[0], start.split("://", 1)[0]
    if scheme_a == scheme_b and "://" in path and "://" in start:
        return posixpath.relpath(path.split("://", 1)[1], start.split("://", 1)[1])
    return path


def remove_paths(paths: list[str]) -> None:
    """Delete files or directory trees that exist (used to clear an output before overwriting it)."""
    import shutil

    existing = [p for p in paths if exists(p)]
    for p in existing:
        if is_local(p):
            local = _local(p)
            if os.path.isdir(local):
                shutil.rmtree(local)
            else:
                os.remove(local)
    remote = [p for p in existing if not is_local(p)]
    if remote:
        from apache_beam.io.filesystems import FileSystems

        FileSystems.delete(remote)


def write_json(path: str, data: Any) -> None:
    """Write ``data`` as indented, key-sorted JSON, atomically (temporary file, then rename over ``path``)."""
    write_bytes_atomic(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")


def read_json(path: str) -> Any:
    return json.loads(read_bytes(path).decode("utf-8"))
