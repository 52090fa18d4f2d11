"""Records a build writes to its own scratch disk and reads back, each checked as it is read back.

A build keeps scratch on local disk and reads it back by reference: spilled texts and near and line dedup's
signature and sentence tables (``pipeline/spill.py``), and the runs of the shuffles that wait on disk
(``corpusforge.core.disk_grouping``). A reference is ``(path, offset, length)`` or ``(path, offset, length,
stored)``, ``length`` the payload's length in bytes either way; the record it points at is one of two kinds:

- stored (three fields): the payload as it is, then its CRC-32 (4 bytes, little-endian), started from the
  record's offset so that a record read from another place (bytes cut out before it) does not pass: ``length +
  4`` bytes on disk. ``zlib.crc32`` (the standard library) takes ~0.5 us per 2 KB text (``python -m timeit -s
  "import zlib; t = bytes(2048)" "zlib.crc32(t)"``); with the copy and the call, a 2 KB spilled text costs ~1 us
  more to write (2.0 -> 3.1 us) and to read back (1.2 -> 2.3 us): ~9 us a document in a normalize + dedup build,
  which writes each text ~2 times and reads it ~6 (~1.5 % of its CPU; whole builds measure the same within their
  noise). xxhash's XXH3 is ~7x faster but no core dependency (only the ``query`` extra's ``datasets`` brings it);
  a zstd frame around a payload zstd does not shrink costs a compression (~9 us per 2 KB). A CRC-32 catches
  every change of up to 32 bits in a row, and any other but once in 2^32.
- compressed (four fields, ``stored`` its size on disk): one zstd frame (``zstandard``, a core dependency) with
  its checksum (XXH64's low 32 bits). The length in the frame's header is checked against the reference's
  before anything is decompressed: a flipped bit there once asked ``zstandard`` for 2 EB of memory
  (``MemoryError``, not this module's error).

Whatever way a record fails to come back (its file gone, shorter than the reference, a byte changed, bytes
inserted before it), ``read_record`` raises a ``ScratchError``: one line naming the file and saying to run the
build again, never other bytes, a traceback or a document's rejection. Bytes added after a file's last record
are never read, so they change nothing.
"""
from __future__ import annotations

import os
import threading
import zlib

import zstandard

from corpusforge.core.errors import ScratchError

CHECK_BYTES = 4  # a stored record's CRC-32
# Payloads shorter than this are stored without trying zstd: a frame costs ~13 bytes (header and checksum) and
# ~0.3 us, and so short a text seldom shrinks by more.
SHORTEST_COMPRESSED = 64
_WRITE_BYTES = 4 * 1024 * 1024

ScratchRef = tuple
_local = threading.local()  # one zstd decompressor per thread: they are not thread-safe


def compressor(level: int):
    """A function that makes a zstd frame, with its checksum, of a payload (``write_records``' ``compress``)."""
    return zstandard.ZstdCompressor(level=level, write_checksum=True).compress


def write_records(fd: int, path: str, offset: int, payloads, compress=None) -> tuple[list[ScratchRef], int]:
    """Writes ``payloads`` (bytes each) in one write at ``offset``, the end of the open file ``fd`` (``path``),
    each as a record of its own; returns their references and the bytes written. ``compress`` (from
    ``compressor``): a payload of ``SHORTEST_COMPRESSED`` bytes or more goes as a zstd frame where that is
    shorter than storing it."""
    refs, records, start, pending = [], [], offset, offset
    for data in payloads:
        length = len(data)
        frame = compress(data) if compress is not None and length >= SHORTEST_COMPRESSED else None
        if frame is not None and len(frame) < length + CHECK_BYTES:
            records.append(frame)
            refs.append((path, offset, length, len(frame)))
            offset += len(frame)
        else:
            records += (data, zlib.crc32(data, offset & 0xFFFFFFFF).to_bytes(CHECK_BYTES, "little"))
            refs.append((path, offset, length))
            offset += length + CHECK_BYTES
        if offset - pending >= _WRITE_BYTES:  # a shuffle's run: its blocks in writes of a few MB, not one
            _write_all(fd, records)
            records, pending = [], offset
    _write_all(fd, records)
    return refs, offset - start


def _write_all(fd: int, records: list) -> None:
    data = b"".join(records)
    written = os.write(fd, data)
    if written < len(data):  # os.write may write less than it is given
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view):]


def open_file(path: str, what: str) -> int:
    """A read-only file descriptor of the scratch file ``path`` (``what`` it is, for the error: "spill file")."""
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise ScratchError(f"{what} {path} is gone (was the build's work directory deleted while it ran?): run the "
                           "build again") from None
    except OSError as exc:
        raise ScratchError(f"{what} {path} cannot be read ({exc.strerror}): run the build again") from None


def read_record(fd: int, ref: ScratchRef, what: str) -> bytes:
    """The payload of the record ``ref`` points at, read from ``fd`` (its file, open); a ``ScratchError``
    (``what`` names the file) where it does not come back as it was written."""
    if len(ref) == 3:
        path, offset, length = ref
        stored = length + CHECK_BYTES
    else:
        path, offset, length, stored = ref
    try:
        record = os.pread(fd, stored, offset)
    except OSError as exc:
        raise ScratchError(f"{what} {path} cannot be read at offset {offset:,} ({exc.strerror}): run the build "
                           "again, and check the disk that holds the run directory if it happens again") from None
    if len(record) != stored:
        raise ScratchError(f"{what} {path} is truncated: {len(record):,} of {stored:,} bytes at offset {offset:,} "
                           "(was the build's work directory changed while it ran, or its disk full?): run the build "
                           "again")
    if len(ref) == 3:
        data = record[:length]
        if zlib.crc32(data, offset & 0xFFFFFFFF) == int.from_bytes(record[length:], "little"):
            return data
        problem = "its CRC-32 differs"
    else:
        data, problem = _decompressed(record, length)
        if problem is None:
            return data
    raise ScratchError(f"{what} {path} is damaged at offset {offset:,} ({problem}): run the build again, and check "
                       "the disk that holds the run directory if it happens again")


def read(ref: ScratchRef, what: str) -> bytes:
    """``read_record`` of a file opened for this one read."""
    fd = open_file(ref[0], what)
    try:
        return read_record(fd, ref, what)
    finally:
        os.close(fd)


def _decompressed(frame: bytes, length: int) -> tuple[bytes | None, str | None]:
    """A zstd frame's payload and None, or None and what is wrong with it."""
    try:
        size = zstandard.frame_content_size(frame)
        if size != length:  # before decompressing: zstandard allocates what the header says
            return None, f"its frame holds {size:,} bytes, not {length:,}"
        try:
            decompress = _local.decompress
        except AttributeError:
            decompress = _local.decompress = zstandard.ZstdDecompressor().decompress
        data = decompress(frame, allow_extra_data=False)  # one frame: bytes after it are no part of the payload
    except zstandard.ZstdError as exc:
        return None, str(exc)
    return (data, None) if len(data) == length else (None, f"{len(data):,} bytes, not {length:,}")
