"""Scratch records (corpusforge/core/scratch_frames.py): every way a record's file can change after it was
written ends in one line naming the file and saying to run the build again, or in the record as written."""
import os
import random

import pytest

from corpusforge.core import scratch_frames
from corpusforge.core.errors import ScratchError

_RNG = random.Random(38)
PAYLOADS = {
    "empty": b"",
    "short": b"a short text",  # under SHORTEST_COMPRESSED: stored without trying zstd
    "incompressible": bytes(_RNG.getrandbits(8) for _ in range(300)),  # zstd does not shrink it: stored
    "compressible": b"a text that compresses " * 20,  # a zstd frame
}


def _written(tmp_path, compress: bool):
    """Every payload written after a first record (so that offsets are not 0), and the references."""
    path = str(tmp_path / "records.txt")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        first, size = scratch_frames.write_records(fd, path, 0, [b"first record"])
        refs, written = scratch_frames.write_records(fd, path, size, list(PAYLOADS.values()),
                                                     scratch_frames.compressor(1) if compress else None)
    finally:
        os.close(fd)
    assert os.path.getsize(path) == size + written
    return path, dict(zip(PAYLOADS, refs))


def _stored_length(ref) -> int:
    return ref[3] if len(ref) > 3 else ref[2] + scratch_frames.CHECK_BYTES


def _refused(ref, match: str = "") -> str:
    with pytest.raises(ScratchError) as raised:
        scratch_frames.read(ref, "spill file")
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"spill file {ref[0]} ") and message.endswith(
        ("run the build again", "if it happens again")), message
    assert match in message
    return message


@pytest.mark.parametrize("compress", [False, True])
def test_records_read_back_as_written(tmp_path, compress):
    path, refs = _written(tmp_path, compress)
    assert {name: scratch_frames.read(ref, "spill file") for name, ref in refs.items()} == PAYLOADS
    kinds = {name: len(ref) for name, ref in refs.items()}
    assert kinds == {"empty": 3, "short": 3, "incompressible": 3, "compressible": 4 if compress else 3}


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("name", list(PAYLOADS))
def test_every_flipped_bit_of_a_record_is_refused(tmp_path, compress, name):
    """Each bit of the record (payload, CRC-32, or zstd frame: header, blocks, checksum), and whole bytes: refused,
    except the one bit of a zstd frame's header that no decoder reads (the payload comes back as written)."""
    path, refs = _written(tmp_path, compress)
    ref = refs[name]
    original = open(path, "rb").read()
    unread = []
    for position in range(ref[1], ref[1] + _stored_length(ref)):
        for mask in (1, 2, 4, 8, 16, 32, 64, 128, 0xFF):
            damaged = bytearray(original)
            damaged[position] ^= mask
            with open(path, "wb") as f:
                f.write(damaged)
            try:
                data = scratch_frames.read(ref, "spill file")
            except ScratchError:
                _refused(ref, "is damaged at offset")
            else:
                assert data == PAYLOADS[name], (position, mask)
                unread.append((position - ref[1], mask))
    assert unread == ([(4, 0x10)] if len(ref) > 3 else []), unread  # the frame header descriptor's unused bit


def test_a_flipped_length_in_a_frame_header_is_refused_not_a_memory_error(tmp_path):
    """The bit that made the frame's header ask for ~2 EB: zstandard raised MemoryError before it was checked."""
    path, refs = _written(tmp_path, compress=True)
    ref = refs["compressible"]
    damaged = bytearray(open(path, "rb").read())
    damaged[ref[1] + 4] ^= 0x80  # the frame header's descriptor: an 8-byte content size
    with open(path, "wb") as f:
        f.write(damaged)
    _refused(ref, "is damaged at offset")


@pytest.mark.parametrize("compress", [False, True])
def test_truncated_missing_and_shifted_files_are_refused(tmp_path, compress):
    path, refs = _written(tmp_path, compress)
    original = open(path, "rb").read()
    for name, ref in refs.items():
        end = ref[1] + _stored_length(ref)
        for size in range(ref[1], end):  # cut anywhere in the record
            with open(path, "wb") as f:
                f.write(original[:size])
            _refused(ref, "is truncated")
        for where, extra in [(0, b"x"), (ref[1], b"\0" * 3), (ref[1] + 1, b"inserted bytes")]:  # bytes inserted
            with open(path, "wb") as f:
                f.write(original[:where] + extra + original[where:])
            _refused(ref)
    with open(path, "wb") as f:  # bytes added after the last record are never read
        f.write(original + b"appended")
    assert {name: scratch_frames.read(ref, "spill file") for name, ref in refs.items()} == PAYLOADS
    os.unlink(path)
    _refused(refs["short"], "is gone")


def test_a_record_of_the_same_length_cut_out_before_another_is_refused(tmp_path):
    """Near dedup's signatures are records of one length, one after another: cut one out, and the next one's
    reference points at the one after it, whose CRC-32 matches its own bytes but not that offset."""
    path = str(tmp_path / "signatures.near")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    refs, _ = scratch_frames.write_records(fd, path, 0, [bytes([i]) * 32 for i in range(3)])
    os.close(fd)
    data = open(path, "rb").read()
    size = 32 + scratch_frames.CHECK_BYTES
    with open(path, "wb") as f:
        f.write(data[size:] + b"\0" * size)  # the first record cut out; the file as long as before
    _refused(refs[1], "is damaged")
