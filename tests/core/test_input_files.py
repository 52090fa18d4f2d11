"""corpusforge.core.input_files: what a path names, which files are opened, bounded decompression and lines,
and the one classification of a parser's exceptions (issue #35, classes 1-3)."""
import gzip
import io
import json
import os
import subprocess
import sys
import textwrap

import pytest
import zstandard

from corpusforge.core.input_files import (Oversize, RecordError, bounded_lines, check_depth, classify, display_path,
                                          list_input, open_decompressed, open_input, parse_json)


# --- class 1: any exception a parser raises on one record is that record's named rejection ------------------------
@pytest.mark.parametrize("line,reason", [
    (b'{"text": "x", "m": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "too_deep"),  # RecursionError in json
    (b'{"text": "x", "m": ' + b"[" * 500 + b"]" * 500 + b"}", "too_deep"),  # parses, but pickling fails later
    (b'{"text": "x", "n": ' + b"9" * 5000 + b"}", "number_too_large"),  # ValueError: int digit limit
    (b'{"text": "caf\xe9"}', "invalid_utf8"),
    (b'{"text": ', "malformed_json"),
    (b'{"text": "kept?", "text": "or this?"}', "duplicate_key"),  # json keeps the last value without a word
    (b'{"text": "x", "meta": {"a": [1], "a": [2]}}', "duplicate_key"),  # at any depth
    (b'{"id": 1, "text": "x", "id": "1"}', "duplicate_key"),
])
def test_every_exception_json_raises_on_a_record_is_a_named_reason(line, reason):
    with pytest.raises(RecordError) as caught:
        parse_json(line)
    assert caught.value.reason == reason


def test_a_key_given_twice_with_one_value_loses_nothing_and_is_read():
    assert parse_json(b'{"text": "x", "m": {"a": 1, "a": 1}, "text": "x"}') == {"text": "x", "m": {"a": 1}}


def test_a_table_naming_a_column_twice_is_every_row_rejected_as_duplicate_key(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.readers import read_file

    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["a cat", "a dog"]), pa.array(["b cat", "b dog"])],
                                        names=["text", "text"]), path)
    items = list(read_file(str(path), InputConfig(path=str(path)), "s", 1000))
    assert [(getattr(i, "reason", None), getattr(i, "detail", None)) for i in items] == \
        [("duplicate_key", "columns named twice: 'text'")] * 2


def test_the_nesting_limit_counts_levels_and_measures_any_depth():
    check_depth({"a": [[1]]}, 3)
    with pytest.raises(RecordError, match="too_deep"):
        check_depth({"a": [[1]]}, 2)
    value: list = []
    for _ in range(100_000):  # deeper than any recursive walk could go
        value = [value]
    with pytest.raises(RecordError, match="too_deep"):
        check_depth(value, 64)


def test_classify_names_every_kind_of_failure():
    assert classify(EOFError("cut"))[0] == "truncated_compressed_file"
    assert classify(zstandard.ZstdError("Unknown frame descriptor"))[0] == "corrupt_compressed_data"
    assert classify(gzip.BadGzipFile("Not a gzipped file"))[0] == "corrupt_compressed_data"
    assert classify(RecursionError())[0] == "too_deep"
    assert classify(MemoryError())[0] == "oversize_record"
    assert classify(KeyError("x"))[0] == "unreadable_file"


# --- class 2: memory is bounded by the configuration, not by the input ---------------------------------------------
def test_lines_longer_than_the_limit_are_skipped_to_their_end():
    data = b"short\n" + b"x" * 5000 + b"\nafter\n" + b"y" * 5000
    lines = list(bounded_lines(io.BytesIO(data), 100))
    assert lines[0] == b"short\n" and lines[2] == b"after\n"
    assert isinstance(lines[1], Oversize) and lines[1].size == 5001 and isinstance(lines[3], Oversize)
    assert list(bounded_lines(io.BytesIO(b"a" * 100 + b"\n"), 100)) == [b"a" * 100 + b"\n"]  # at the limit: kept


_PEAK = textwrap.dedent("""
    import resource, sys
    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.readers import read_file
    path = sys.argv[1]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    items = [(getattr(i, "reason", "kept"), getattr(i, "position", None)) for i in
             read_file(path, InputConfig(path=path), max_chars=100_000)]
    print(items, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
""")
HUGE = 256 << 20  # one line of 256 MiB, a few hundred KB compressed


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_a_huge_compressed_line_is_rejected_with_memory_bounded_by_the_limit(tmp_path, suffix):
    path = tmp_path / f"bomb.jsonl{suffix}"
    chunk = b"a" * (1 << 20)
    with open(path, "wb") as raw:
        out = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if suffix == ".gz" else \
            zstandard.ZstdCompressor().stream_writer(raw)
        out.write(b'{"text": "fine document"}\n{"text": "')
        for _ in range(HUGE // len(chunk)):
            out.write(chunk)
        out.write(b'"}\n{"text": "after the bomb"}\n')
        out.close()
    assert path.stat().st_size < 2 << 20
    result = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    items, grown_mb = result.stdout.rsplit(" ", 1)
    assert items == "[('kept', None), ('oversize_record', 1), ('kept', None)]"
    assert int(grown_mb) < 48, f"peak RSS grew {grown_mb} MB reading a {HUGE >> 20} MB line"


def test_only_regular_files_are_opened(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "nothing")
    for name, kind in (("pipe.jsonl", "FIFO"), ("zero.jsonl", "symbolic link to a character device"),
                       ("gone.jsonl", "broken symbolic link")):
        with pytest.raises(RecordError, match=kind) as caught:
            open_input(str(tmp_path / name))  # returns at once: never blocks on the FIFO, never reads /dev/zero
        assert caught.value.reason == "not_a_regular_file"
    (tmp_path / "real.jsonl").write_bytes(b"{}\n")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "real.jsonl")
    with open_input(str(tmp_path / "link.jsonl")) as f:
        assert f.read() == b"{}\n"


# --- class 3: what the user named is what is read, all of it --------------------------------------------------------
def test_a_path_that_exists_is_read_literally_even_with_glob_characters(tmp_path):
    (tmp_path / "a[1].jsonl").write_bytes(b"{}\n")
    (tmp_path / "a1.jsonl").write_bytes(b"{}\n")
    (tmp_path / "corpus[2024]").mkdir()
    (tmp_path / "corpus[2024]" / "x.jsonl").write_bytes(b"{}\n")
    (tmp_path / "corpus2").mkdir()
    (tmp_path / "corpus2" / "y.jsonl").write_bytes(b"{}\n")
    assert [f.path for f in list_input(str(tmp_path / "a[1].jsonl"))[1]] == [str(tmp_path / "a[1].jsonl")]
    root, files = list_input(str(tmp_path / "corpus[2024]"))
    assert root == str(tmp_path / "corpus[2024]") and [f.path for f in files] == [str(tmp_path / "corpus[2024]" / "x.jsonl")]
    # a path that does not exist is a glob, as before
    assert [f.path for f in list_input(str(tmp_path / "a[0-9].jsonl"))[1]] == [str(tmp_path / "a1.jsonl")]


def test_a_directory_lists_links_to_directories_without_following_them(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_bytes(b"{}\n")
    (tmp_path / "data" / "loop").symlink_to(tmp_path / "data")
    assert [f.path for f in list_input(str(tmp_path / "data"))[1]] == [str(tmp_path / "data" / "a.jsonl"),
                                                                         str(tmp_path / "data" / "loop")]


@pytest.mark.parametrize("tail", [b"\0" * 4096, b"garbage after the last frame"])
def test_a_complete_zst_followed_by_padding_keeps_every_record(tail):
    records = b"".join(json.dumps({"text": f"doc {i} " * 50}).encode() + b"\n" for i in range(3000))
    blob = zstandard.ZstdCompressor().compress(records[:50_000]) + zstandard.ZstdCompressor().compress(records[50_000:])
    stream = open_decompressed(io.BytesIO(blob + tail), "a.jsonl.zst")
    lines = []
    with pytest.raises(zstandard.ZstdError):
        for line in stream:
            lines.append(line)
    assert b"".join(lines) == records


def test_a_truncated_zst_raises_eof_after_what_it_holds():
    records = b"".join(json.dumps({"text": f"doc {i}"}).encode() + b"\n" for i in range(2000))
    blob = zstandard.ZstdCompressor().compress(records)
    stream = open_decompressed(io.BytesIO(blob[:-5]), "a.jsonl.zst")
    with pytest.raises(EOFError):
        stream.read()


def test_a_file_name_that_is_not_utf8_renders_safely(tmp_path):
    name = os.fsdecode(b"caf\xe9.jsonl")
    (tmp_path / name).write_bytes(b"{}\n")
    assert display_path(name) == "caf\\xe9.jsonl"
    display_path(name).encode("utf-8")
    assert [f.path for f in list_input(str(tmp_path))[1]] == [str(tmp_path / name)]
