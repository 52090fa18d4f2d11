"""Input files that another process changes while they are read (docs/inputs.md, "A file that changes while it
is read"). Each read runs in a child process (tests/fuzz/changing_files.py, ``read_in_child``), so a reader
killed by a signal fails the test instead of pytest: a memory-mapped Arrow IPC file cut short raised SIGBUS."""
import gzip
import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from tests.fuzz.changing_files import STOPPED_WITHOUT_CHANGE, read_in_child

N = 600
WORDS = "the cat sat on a warm mat and slept while seven owls watched quietly from an old oak".split()


def _texts():
    # words in a random order, so the compressed files are large too: the reader is far from their end at the cut
    rng = random.Random(0)
    return [" ".join(rng.choice(WORDS) for _ in range(400)) for _ in range(N)]


def _write(path, fmt):
    texts = _texts()
    table = pa.table({"id": list(range(N)), "text": texts})
    if fmt in ("arrow-file", "arrow-stream"):
        with (pa.ipc.new_file if fmt == "arrow-file" else pa.ipc.new_stream)(str(path), table.schema) as writer:
            writer.write_table(table, max_chunksize=50)
    elif fmt == "parquet":
        pq.write_table(table, path, row_group_size=50)
    else:
        data = b"".join(json.dumps({"id": i, "text": t}).encode() + b"\n" for i, t in enumerate(texts))
        path.write_bytes(gzip.compress(data) if fmt == "jsonl.gz" else zstandard.ZstdCompressor().compress(data))
    os.utime(path, (1_600_000_000, 1_600_000_000))


@pytest.mark.parametrize("fmt", ["arrow-file", "arrow-stream", "parquet", "jsonl.gz", "jsonl.zst"])
def test_a_file_cut_short_while_it_is_read_rejects_its_rest_as_file_changed(tmp_path, fmt):
    path = tmp_path / ("input.arrow" if fmt.startswith("arrow") else f"input.{fmt}")
    _write(path, fmt)
    items = read_in_child(path, {"kind": "truncate", "size": path.stat().st_size // 2, "k": 1, "format": "auto"})
    # before: SIGBUS (Arrow IPC, memory-mapped), or the rest rejected as unreadable_file / truncated_compressed_file
    kept = [i for i in items if i[1] == "kept"]
    assert kept and [i[0] for i in kept] == list(range(len(kept)))  # what was read before the cut is kept, in order
    assert items[-1][1] == "file_changed" and items[-1][0] == len(kept), items[-1]
    assert "cut from" in items[-1][2] and "read it again once nothing writes to it" in items[-1][2]
    assert len(items) == len(kept) + 1 and not STOPPED_WITHOUT_CHANGE & {i[1] for i in items}


@pytest.mark.parametrize("kind", ["replace", "delete", "to_fifo"])
def test_an_arrow_file_renamed_over_or_deleted_while_read_reads_whole(tmp_path, kind):
    path = tmp_path / "input.arrow"
    _write(path, "arrow-file")
    other = tmp_path / "other.arrow"
    other.write_bytes(b"not arrow")
    items = read_in_child(path, {"kind": kind, "other": str(other), "k": 1, "format": "auto"})
    assert [i[1] for i in items] == ["kept"] * N  # the opened file's bytes are read, not what the path names now
