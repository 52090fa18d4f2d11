"""Input files as users' tools write them (pipeline/readers.py, corpusforge/core/input_files.py): every line end, every
Unicode encoding of a whole file, binary text columns, and errors of the environment met while reading.

Each test fails on the readers before: a JSON Lines file with CR line ends read as one malformed record, a UTF-16 or
UTF-32 file rejected line by line, a Parquet text column typed binary rejected as ``non_string_text`` row by row, and
an I/O error, a full disk or too many open files met while reading a file filed as that file's ``unreadable_file``
(the build published without it) instead of stopping the build with its one line."""
from __future__ import annotations

import bz2
import errno
import gzip
import io
import json
import lzma
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from corpusforge.core import input_files
from corpusforge.core.input_files import bounded_lines, open_decompressed
from corpusforge.pipeline.config import InputConfig
from corpusforge.pipeline.document import Document, Rejected
from corpusforge.pipeline.readers import read_file, records_from_file

COMPRESSORS = {"": lambda b: b, ".gz": lambda b: gzip.compress(b, mtime=0),
               ".zst": lambda b: zstandard.ZstdCompressor().compress(b), ".bz2": bz2.compress,
               ".xz": lambda b: lzma.compress(b)}
TEXTS = ["one \u2028 line", "two\u2029paragraphs", "next\u0085line", "caf\u00e9 \U0001F600", "tab\there \x0b\x0c"]


def _read(data: bytes, path: str, counters: dict | None = None, **spec):
    stream = open_decompressed(io.BytesIO(data), path)
    return list(records_from_file(stream, InputConfig(path=path, **spec), path, path, 1000, counters))


def _jsonl(texts, end: str, ensure_ascii: bool = False) -> str:
    return "".join(json.dumps({"id": str(i), "text": t}, ensure_ascii=ensure_ascii) + end for i, t in enumerate(texts))


# ----------------------------------------------------------------------------------------------- line ends
@pytest.mark.parametrize("suffix", list(COMPRESSORS))
@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_end_reads_one_record_a_line_and_unicode_separators_split_none(end, suffix):
    data = _jsonl(TEXTS, end).encode("utf-8")  # U+2028, U+2029, NEL written raw inside the strings
    items = _read(COMPRESSORS[suffix](data), "a.jsonl" + suffix)
    assert [(i.id, i.text) for i in items] == [(f"a/{n}", t) for n, t in enumerate(TEXTS)]


def test_mixed_line_ends_and_a_cr_at_every_chunk_boundary():
    data = (_jsonl(TEXTS[:2], "\r") + _jsonl(TEXTS[2:4], "\r\n") + _jsonl(TEXTS[4:], "\n")).encode()
    assert [i.text for i in _read(data, "a.jsonl")] == TEXTS

    class Dribble(io.RawIOBase):  # every read returns 1-3 bytes: a CRLF cut between two reads is one line end
        def __init__(self, data):
            self.data, self.at = data, 0

        def readable(self):
            return True

        def read1(self, n=-1):
            out = self.data[self.at:self.at + 1 + self.at % 3]
            self.at += len(out)
            return out

    assert list(bounded_lines(Dribble(b"a\r\nb\rc\n\rd\r\n"), 100)) == [b"a\r\n", b"b\r", b"c\n", b"\r", b"d\r\n"]
    assert list(bounded_lines(io.BytesIO(b"a" * 100 + b"\r\n" + b"b" * 101 + b"\r"), 100))[0] == b"a" * 100 + b"\r\n"


def test_text_lines_end_at_cr_too():
    items = _read("one\rtwo \u2028 still two\r\nthree\n".encode(), "a.txt", text_unit="line")
    assert [i.text for i in items] == ["one", "two \u2028 still two", "three"]


# ----------------------------------------------------------------------------------------------- encodings
ENCODINGS = ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]


@pytest.mark.parametrize("suffix", ["", ".gz", ".zst"])
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_whole_file_in_utf16_or_utf32_reads_as_in_utf8(encoding, suffix):
    data = _jsonl(TEXTS, "\r\n").encode(encoding)
    counters: dict = {}
    items = _read(COMPRESSORS[suffix](data), "a.jsonl" + suffix, counters)
    assert [(i.id, i.text) for i in items] == [(f"a/{n}", t) for n, t in enumerate(TEXTS)]
    assert counters == ({} if encoding == "utf-8-sig" else {"files_transcoded_to_utf8": 1})
    text = "Notepad's \u201cUnicode\u201d\r\nsecond line \U0001F600\r\n"
    assert [i.text for i in _read(text.encode(encoding), "n.txt")] == [text]
    assert [i.text for i in _read(text.encode(encoding), "n.txt", text_unit="line")] == [
        "Notepad's \u201cUnicode\u201d", "second line \U0001F600"]


def test_a_record_with_bytes_its_file_encoding_cannot_decode_is_rejected_alone():
    good = _jsonl(["first"], "\n").encode("utf-16-le")
    bad = '{"text": "half an emoji '.encode("utf-16-le") + b"\x3d\xd8" + '"}\n'.encode("utf-16-le")  # lone D83D
    items = _read(good + bad + _jsonl(["third"], "\n").encode("utf-16-le"), "a.jsonl")
    assert [i.text for i in items if isinstance(i, Document)] == ["first", "third"]
    rejected = [i for i in items if isinstance(i, Rejected)]
    assert [(r.position, r.reason) for r in rejected] == [(1, "invalid_encoding")]
    assert "UTF-16-LE" in rejected[0].detail
    cut = _read(good + b"\x7b", "a.jsonl")  # an odd byte at the end: the last record's half unit
    assert [(getattr(i, "reason", None)) for i in cut] == [None, "invalid_encoding"]


def test_what_is_not_a_utf16_or_utf32_start_stays_utf8():
    file_encoding = input_files.file_encoding
    assert file_encoding(b'{"te') == "utf-8" and file_encoding(b"\xef\xbb\xbf{") == "utf-8"
    assert file_encoding("{\"".encode("utf-16-le")) == "utf-16-le"
    assert file_encoding("{".encode("utf-32-be")) == "utf-32-be"
    # binary garbage that starts with NULs: not two ASCII characters in UTF-16/32, so read (and rejected) as UTF-8
    for head in (b"\x00\x00\x00\x00", b"\x00\xff\x00\x80", b"\x80\x00\x00\x00", b"\x00\x00"):
        assert file_encoding(head) == "utf-8", head
    items = _read(b"\x00\x00\x00\x00garbage\n" + _jsonl(["kept"], "\n").encode(), "a.jsonl")
    assert [getattr(i, "reason", None) for i in items] == ["malformed_json", None]


# ---------------------------------------------------------------------------------------- binary text columns
@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary()], ids=str)
def test_a_binary_text_column_is_read_as_utf8_and_a_cell_that_is_not_is_rejected_alone(kind):
    table = pa.table({"id": pa.array([b"d1", b"d2", b"\xff", b"d4"], pa.binary()),
                      "text": pa.array(["caf\u00e9".encode(), b"caf\xe9", "\u2028 third".encode(), None], kind)})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    items = _read(sink.getvalue(), "s.parquet")
    assert [(i.id, i.text) for i in items if isinstance(i, Document)] == [("s/d1", "caf\u00e9"),
                                                                          (items[2].id, "\u2028 third")]
    assert items[2].metadata == {"id": "b'\\xff'"}  # an id that is not UTF-8 names no document: kept in metadata
    assert [(i.position, i.reason) for i in items if isinstance(i, Rejected)] == [(1, "invalid_utf8"),
                                                                                   (3, "missing_text")]
    assert "binary and not UTF-8" in items[1].detail


def test_binary_metadata_columns_as_spark_writes_strings_are_their_utf8_text():
    table = pa.table({"text": pa.array([b"a warm cat", b"a cat"], pa.binary()),
                      "url": pa.array([b"http://x/1", b"\xff\xfe"], pa.binary()),
                      "tags": pa.array([[b"en", b"web"], []], pa.list_(pa.binary())), "n": [1, 2]})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    items = _read(sink.getvalue(), "s.parquet")
    assert [i.metadata for i in items] == [{"url": "http://x/1", "tags": ["en", "web"], "n": 1},
                                           {"url": "b'\\xff\\xfe'", "tags": [], "n": 2}]  # not UTF-8: as before


# ----------------------------------------------------------------------------------------- the environment
class _FailingAfter(io.RawIOBase):
    """A file whose reads give ``data``'s first ``good`` bytes, then raise ``error``."""

    def __init__(self, data: bytes, good: int, error: BaseException):
        self.data, self.good, self.error, self.at = data, good, error, 0

    def readable(self):
        return True

    def readinto(self, target):
        if self.at >= self.good:
            raise self.error
        n = min(len(target), self.good - self.at)
        target[:n] = self.data[self.at:self.at + n]
        self.at += n
        return n


ENVIRONMENT = [errno.EIO, errno.ENOSPC, errno.EMFILE, errno.ENFILE, errno.EACCES, errno.EPERM, errno.EROFS,
               errno.EDQUOT]


def _failing_read(error: BaseException, fmt: str = "jsonl"):
    data = _jsonl(["first", "second", "third"], "\n").encode()
    path = f"/data/in/part.{fmt}"
    stream = io.BufferedReader(_FailingAfter(data, len(data) // 2, error), 8)
    return list(records_from_file(stream, InputConfig(path=path), path, "part." + fmt, 1000))


@pytest.mark.parametrize("code", ENVIRONMENT, ids=errno.errorcode.get)
def test_an_environment_error_while_reading_is_raised_naming_the_file_not_filed_as_the_files(code):
    with pytest.raises(OSError) as raised:
        _failing_read(OSError(code, os.strerror(code)))
    assert raised.value.errno == code and raised.value.filename == "/data/in/part.jsonl"
    wrapped = RuntimeError("a library's wrapper")
    wrapped.__cause__ = OSError(code, os.strerror(code))
    with pytest.raises(OSError):
        _failing_read(wrapped)


@pytest.mark.parametrize("error", [IsADirectoryError(errno.EISDIR, "Is a directory"), OSError("no errno"),
                                   OSError(errno.ENOENT, "gone"), EOFError("cut"), ValueError("[Errno 5] quoted")],
                         ids=repr)
def test_what_is_the_files_own_stays_its_rejection(error):
    items = _failing_read(error)
    assert isinstance(items[0], Document) and isinstance(items[-1], Rejected)
    assert items[-1].reason in ("unreadable_file", "truncated_compressed_file") and items[-1].position == 1


@pytest.mark.parametrize("code", [errno.EACCES, errno.EMFILE, errno.EIO], ids=errno.errorcode.get)
def test_an_environment_error_opening_a_file_is_raised_not_rejected(code, tmp_path, monkeypatch):
    from corpusforge.pipeline import readers

    path = tmp_path / "a.jsonl"
    path.write_text('{"text": "x"}\n')

    def refuse(name):
        raise OSError(code, os.strerror(code), name)

    monkeypatch.setattr(readers, "open_input", refuse)
    with pytest.raises(OSError) as raised:
        list(read_file(str(path), InputConfig(path=str(path))))
    assert raised.value.errno == code


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "html"])
def test_an_io_error_while_reading_an_input_stops_the_build_with_its_one_line(fmt, tmp_path, capsys, monkeypatch):
    from corpusforge.cli.main import main
    from corpusforge.pipeline import readers

    data = tmp_path / "in"
    data.mkdir()
    (data / "a.jsonl").write_text("".join(json.dumps({"text": f"document {i} about rivers"}) + "\n" for i in range(30)))
    pq.write_table(pa.table({"text": [f"row {i} about hills" for i in range(30)]}), data / "b.parquet")
    (data / "c.html").write_text("<html><body><p>A page about lakes and the hills around them.</p></body></html>")
    target = {"jsonl": "a.jsonl", "parquet": "b.parquet", "html": "c.html"}[fmt]
    real = readers.open_input

    def failing(path):
        raw = real(path)
        if not path.endswith(target):
            return raw
        body = raw.read()
        raw.close()
        return io.BufferedReader(_FailingAfter(body, len(body) // 3, OSError(errno.EIO, "Input/output error")))

    monkeypatch.setattr(readers, "open_input", failing)
    code = main(["build", "--input", str(data), "--run-dir", str(tmp_path / "run"), "--no-progress",
                 "--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"corpusforge: error: {data / target}: input/output error"), err
    assert err.count("\n") == 1
    assert not (tmp_path / "run" / "clean").exists()  # nothing published without the file's records


# ------------------------------------------------------------------------------------- every command that reads
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32-be"])
@pytest.mark.parametrize("end", ["\r", "\r\n"], ids=["CR", "CRLF"])
def test_every_command_that_reads_lines_reads_these_files_as_the_build(encoding, end, tmp_path):
    from corpusforge.pipeline.dedup.decontaminate import read_examples
    from corpusforge.pipeline.quality.classifier import read_texts
    from corpusforge.trainers.evaluate import read_documents
    from corpusforge.trainers.finetune.data import read_records

    texts = ["first \u2028 record", "second caf\u00e9", "third \U0001F600"]
    path = tmp_path / "data.jsonl"
    path.write_bytes(_jsonl(texts, end).encode(encoding))
    skipped: dict = {}
    assert [d["text"] if isinstance(d, dict) else d.text for d in read_documents(str(path), "text", skipped)] == texts
    assert not skipped
    assert [r["text"] for r in read_records(str(path))] == texts
    assert list(read_texts(path)) == texts
    assert read_examples(str(path), "text") == texts
    csv = tmp_path / "data.csv"
    csv.write_bytes(("text,label" + end + "".join(f"{t},1{end}" for t in texts)).encode(encoding))
    assert [r["text"] for r in read_records(str(csv))] == texts


def test_a_full_temporary_folder_while_copying_a_compressed_parquet_names_that_folder_not_the_input(tmp_path,
                                                                                                  monkeypatch):
    import tempfile

    path = tmp_path / "t.parquet.zst"  # zstd cannot seek: copied to a temporary file (gzip, bz2, xz seek)
    sink = io.BytesIO()
    pq.write_table(pa.table({"text": ["a warm cat"] * 10}), sink)
    path.write_bytes(zstandard.ZstdCompressor().compress(sink.getvalue()))
    real = tempfile.SpooledTemporaryFile

    class FullDisk:
        def __init__(self, *args, **kwargs):
            self.spool = real(*args, **kwargs)

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):
            self.spool.close()

    monkeypatch.setattr(tempfile, "SpooledTemporaryFile", FullDisk)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    with pytest.raises(OSError) as raised:
        list(read_file(str(path), InputConfig(path=str(path))))
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(tmp_path / "scratch")


def test_evaluate_and_quality_train_read_a_binary_text_column_as_the_build(tmp_path):
    from corpusforge.pipeline.quality.classifier import read_texts
    from corpusforge.trainers.evaluate import read_documents

    path = tmp_path / "spark.parquet"
    pq.write_table(pa.table({"text": pa.array([b"a warm cat", b"caf\xe9", "r\u00e9sum\u00e9".encode()], pa.binary())}),
                   path)
    skipped: dict = {}
    assert [d.text for d in read_documents(str(path), "text", skipped)] == ["a warm cat", "r\u00e9sum\u00e9"]
    assert skipped == {"invalid_utf8": 1}
    assert list(read_texts(path)) == ["a warm cat", "r\u00e9sum\u00e9"]


def test_evaluate_counts_a_document_whose_binary_source_is_not_utf8_as_the_build_keeps_it(tmp_path):
    # Before: a source cell of bytes that are not UTF-8 skipped the whole document as invalid_utf8, where the
    # build keeps it (a source column is the record's metadata there: its bytes written as str gives them)
    from corpusforge.trainers.evaluate import read_documents

    path = tmp_path / "spark.parquet"
    pq.write_table(pa.table({"text": pa.array([b"a warm cat", b"a cold dog"], pa.binary()),
                             "source": pa.array([b"caf\xe9", b"web"], pa.binary())}), path)
    skipped: dict = {}
    docs = list(read_documents(str(path), "text", skipped))
    assert [(d.text, d.source) for d in docs] == [("a warm cat", "b'caf\\xe9'"), ("a cold dog", "web")]
    assert skipped == {}


def test_quality_train_counts_the_binary_cells_that_are_not_utf8_and_says_so(tmp_path, capsys):
    # Before: quality train dropped them without a word (trained on fewer examples than given, silently)
    from corpusforge.cli.main import main
    from corpusforge.pipeline.quality.classifier import read_texts

    good, bad = tmp_path / "good.parquet", tmp_path / "bad.parquet"
    pq.write_table(pa.table({"text": pa.array([f"fine prose number {i} about rivers".encode() for i in range(9)]
                                              + [b"caf\xe9 au lait"], pa.binary())}), good)
    pq.write_table(pa.table({"text": pa.array([f"buy cheap pills {i} now".encode() for i in range(8)]
                                              + [b"\xff\xfe", b"\xc3"], pa.binary())}), bad)
    skipped: dict = {}
    assert len(list(read_texts(good, skipped=skipped))) == 9 and skipped == {"invalid_utf8": 1}
    assert main(["quality", "train", "-p", str(good), "-n", str(bad), "-o", str(tmp_path / "q.bin"),
                 "--epoch", "1", "--dim", "16", "--bucket", "1000"]) == 0  # dim 8: fastText diverged (NaN) at every rate
    out = capsys.readouterr().out
    assert "skipped 3 examples whose text is not UTF-8 (invalid_utf8: 1 positive, 2 negative)" in out, out
