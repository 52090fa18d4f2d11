"""File access for local paths and any Beam filesystem (gs://, s3://, hdfs://...), with atomic writes.

Local paths take the fast route (``os`` calls, ``os.replace``); other schemes go through
``apache_beam.io.filesystems.FileSystems``, so remote workers can read the tokenizer and write shards.
"""
from __future__ import annotations

import contextlib
import json
import os
import posixpath
import stat
import uuid
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

from corpusforge.core.errors import UserError


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def local_path(path: str) -> str:
    """A local path without its ``file://`` scheme."""
    return _local(path)


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


def mkdirs(path: str) -> None:
    """Create a directory and its parents (no error if it exists)."""
    if is_local(path):
        os.makedirs(_local(path), exist_ok=True)
        return
    from apache_beam.io.filesystems import FileSystems

    if not FileSystems.exists(path):
        FileSystems.mkdirs(path)


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
    """Write ``data`` to a temporary file beside ``path``, fsync it, then rename it over ``path``.

    What was at ``path`` stays whole until the rename (nothing is deleted first); a path that is not a regular
    file (a directory, a device such as /dev/full, a link) is refused, never replaced; the temporary file is
    removed on every failure. ``private``: mode 0600 from the start (a local file)."""
    if is_local(path):
        with atomic_local_file(path, mode=0o600 if private else 0o666) as tmp:
            with open(tmp, "wb") as f:
                f.write(data)
        return
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    tmp = _temp_name(path)
    try:
        with FileSystems.create(tmp, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            f.write(data)
        FileSystems.rename([tmp], [path])  # raw-rename-ok: the atomic writer's own new temporary file
    except BaseException:
        if FileSystems.exists(tmp):
            FileSystems.delete([tmp])  # raw-delete-ok: the atomic writer's own temporary file
        raise


def write_arrow_atomic(path: str, batch: pa.RecordBatch) -> None:
    """Write one record batch as an Arrow IPC *file* at ``path``, atomically (as ``write_bytes_atomic``)."""
    if is_local(path):
        with atomic_local_file(path) as tmp:
            with pa.OSFile(tmp, "wb") as sink, ipc.new_file(sink, batch.schema) as writer:
                writer.write_batch(batch)
        return
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, batch.schema) as writer:
        writer.write_batch(batch)
    write_bytes_atomic(path, sink.getvalue().to_pybytes())


def check_writable_target(path: str) -> None:
    """Refuse to replace anything but a regular file (or nothing) at the local ``path``."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a symbolic link" if stat.S_ISLNK(mode)
                else "a device or special file")
        raise UserError(f"{path} is {kind}, not a regular file; corpusforge replaces only regular files: "
                        "choose another output path")


@contextlib.contextmanager
def atomic_local_file(path: str, mode: int = 0o666) -> Iterator[str]:
    """Yield a new temporary path beside the local ``path``; when the block succeeds, fsync what was written
    there and rename it over ``path``. The one place where corpusforge replaces a local file. ``mode``: the
    temporary file's mode from its creation (before the umask), 0o600 for a private file."""
    local = _local(path)
    check_writable_target(local)
    parent = os.path.dirname(local) or "."
    os.makedirs(parent, exist_ok=True)
    tmp = _temp_name(local)
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))  # exclusive: never someone else's
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        check_writable_target(local)  # it may have changed while the data was written
        os.replace(tmp, local)  # raw-rename-ok: its own O_EXCL temporary file over a regular file (checked)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # raw-delete-ok: its own O_EXCL temporary file
        raise
    _fsync_directory(parent)


def _fsync_directory(directory: str) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _temp_name(path: str) -> str:
    head, tail = posixpath.split(path) if not is_local(path) else os.path.split(path)
    name = f".{tail}.tmp-{uuid.uuid4().hex}"
    return posixpath.join(head, name) if not is_local(path) else os.path.join(head, name)


def escape(path: str) -> str:
    """``path`` as a glob that matches only itself: ``[``, ``*`` and ``?`` in a folder's or file's own name
    (``run[1]``) bracketed, as ``glob.escape`` does (Beam's ``FileSystems.match`` reads globs as ``fnmatch``
    does, so the same escape holds there). For joining a directory with a pattern: ``join(escape(d), "*")``."""
    import glob

    if "://" in path:
        scheme, rest = path.split("://", 1)
        return f"{scheme}://{glob.escape(rest)}"
    return glob.escape(path)


def match(pattern: str) -> list[tuple[str, int]]:
    """``(path, size_in_bytes)`` of the files matching a glob, sorted by path (a directory or file named in it
    literally: ``escape`` it first)."""
    if is_local(pattern):  # no Beam import (a second or two) for local paths
        import glob

        return sorted((p, os.path.getsize(p)) for p in glob.glob(_local(pattern)) if os.path.isfile(p))
    from apache_beam.io.filesystems import FileSystems

    result = FileSystems.match([pattern])[0]
    return sorted((m.path, m.size_in_bytes) for m in result.metadata_list)


def relative(path: str, start: str) -> str:
    """``path`` relative to the directory ``start`` when both are on the same filesystem, else ``path``."""
    if is_local(path) and is_local(start):
        return os.path.relpath(os.path.abspath(_local(path)), os.path.abspath(_local(start)))
    scheme_a, scheme_b = path.split("://", 1)[0], start.split("://", 1)[0]
    if scheme_a == scheme_b and "://" in path and "://" in start:
        return posixpath.relpath(path.split("://", 1)[1], start.split("://", 1)[1])
    return path


def sha256_of(path: str | os.PathLike) -> str:
    """The SHA-256 hex digest of a local file's bytes, read in chunks (``hashlib.file_digest``): the one file hash
    of a saved model's ``file_sha256``, an export's ``corpusforge.json`` and ``content_digest``."""
    import hashlib

    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def content_digest(path: str, hash_remote: bool = False) -> str:
    """What a file holds, for deciding whether an output made from it is stale: ``sha256:<hex>`` of a local file
    (or of a remote one with ``hash_remote``), ``size:<bytes>,mtime:<seconds>`` of a remote one (hashing a
    remote corpus would read all of it once more)."""
    import hashlib

    if is_local(path):
        return f"sha256:{sha256_of(_local(path))}"
    if hash_remote:
        from apache_beam.io.filesystems import CompressionTypes, FileSystems

        digest = hashlib.sha256()  # Beam's file objects have no readinto, which hashlib.file_digest needs
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        return f"sha256:{digest.hexdigest()}"
    from apache_beam.io.filesystems import FileSystems

    filesystem = FileSystems.get_filesystem(path)  # not ``match``: it reads ``[``, ``*``, ``?`` in a name as a glob
    return f"size:{filesystem.size(path)},mtime:{filesystem.last_updated(path)}"


def write_json(path: str, data: Any) -> None:
    """Write ``data`` as indented, key-sorted JSON, atomically (temporary file, then rename over ``path``)."""
    write_bytes_atomic(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")


def read_json(path: str) -> Any:
    return json.loads(read_bytes(path).decode("utf-8"))
