"""User-provided Parquet and Arrow files outside the build (``evaluate``'s held-out text, fine-tuning records)
read as the build reads them (``corpusforge.core.columnar.read_rows``, docs/inputs.md "Every command that reads
data"): a row over the record limit skipped (evaluate) or refused in one line (fine-tuning), never converted;
peak memory measured in a fresh process, as tests/pipeline/test_readers_columnar.py does."""
import json
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusforge.core.errors import UserError
from corpusforge.trainers.evaluate import read_documents
from corpusforge.trainers.finetune.data import read_records

MB = 1 << 20
HUGE = 96 * MB

_PEAK = textwrap.dedent("""
    import json, sys
    import pyarrow, pyarrow.compute, pyarrow.ipc, pyarrow.parquet  # loaded before the baseline
    from corpusforge.core.errors import UserError
    from corpusforge.trainers.evaluate import read_documents
    from corpusforge.trainers.finetune.data import read_records

    def status(field):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field))

    path, command, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if limit:  # a lower record limit than the default (a line's of text of 10M characters: 61 MB)
        import corpusforge.trainers.evaluate as evaluate, corpusforge.trainers.finetune.data as data
        evaluate.MAX_CHARS, data.MAX_RECORD_BYTES = (limit - (1 << 20)) // 6, limit
    try:  # VmHWM is this process's own peak; 5 resets it to the current RSS
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = status("VmRSS:")
    except OSError:
        before = status("VmHWM:")
    if command == "evaluate":
        skipped = {}
        out = {"texts": [d.text for d in read_documents(path, skipped=skipped)], "skipped": skipped}
    else:
        try:
            out = {"records": len(read_records(path))}
        except UserError as exc:
            out = {"error": str(exc)}
    out["grown_mb"] = (status("VmHWM:") - before) // 1024
    print(json.dumps(out))
""")


def _peak(path, command, limit=0):
    result = subprocess.run([sys.executable, "-c", _PEAK, str(path), command, str(limit)], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-1500:]
    return json.loads(result.stdout)


def _huge(size):
    unit = "A sentence that a huge cell repeats. "
    return (unit * (size // len(unit) + 1))[:size]


def _huge_file(path, fmt):
    texts = ["fine text number %d" % i for i in range(40)]
    texts[20] = _huge(HUGE)
    table = pa.table({"text": texts, "label": ["a", "b"] * 20})
    if fmt == "parquet":  # the huge cell alone in its row group, as an export of one row group per shard writes it
        with pq.ParquetWriter(path, table.schema) as writer:
            for start, stop in ((0, 20), (20, 21), (21, 40)):
                writer.write_table(table.slice(start, stop - start))
    else:  # one record batch of ~96 MB, uncompressed
        with pa.ipc.new_file(path, table.schema) as writer:
            writer.write_table(table)


LOWER = 16 * MB  # a record limit a 96 MB Parquet cell is over 4 times: rejected from the footer, never decoded


@pytest.mark.parametrize("fmt, limit", [("arrow", 0), ("parquet", LOWER)])
def test_evaluate_skips_a_huge_cell_without_reading_it(tmp_path, fmt, limit):
    path = tmp_path / f"held-out.{fmt}"
    _huge_file(path, fmt)
    out = _peak(path, "evaluate", limit)
    assert out["texts"] == ["fine text number %d" % i for i in range(40) if i != 20]
    assert out["skipped"] == {"oversize_record": 1}
    # before: the whole batch decoded and converted, whatever the limit (+431 MB Parquet, +194 MB Arrow); an Arrow
    # file over columnar.MAP_ABOVE is memory-mapped, its huge row never touched (read whole: +135 MB)
    assert out["grown_mb"] < 64, f"evaluate reading a {HUGE // MB} MB {fmt} cell grew peak memory {out['grown_mb']} MB"
    print(f"{fmt}: +{out['grown_mb']} MB")


def test_evaluate_skips_a_parquet_cell_over_the_default_limit_whose_page_it_must_decode(tmp_path):
    path = tmp_path / "held-out.parquet"
    _huge_file(path, "parquet")  # 96 MB: over the default 61 MB limit, under 4 x it, so pyarrow decodes its page
    out = _peak(path, "evaluate")
    assert out["texts"] == ["fine text number %d" % i for i in range(40) if i != 20]  # before: kept, converted
    assert out["skipped"] == {"oversize_record": 1}
    assert out["grown_mb"] < 4 * HUGE // MB, out["grown_mb"]  # the page decoded whole: ~3 x (+335 MB; was +434)


def test_finetune_refuses_a_huge_parquet_record_in_one_line_without_reading_it(tmp_path):
    path = tmp_path / "train.parquet"
    _huge_file(path, "parquet")
    out = _peak(path, "finetune", LOWER)
    assert "train.parquet: record 20 is " in out.get("error", ""), out
    assert "\n" not in out["error"] and "a record may take" in out["error"]
    # before: pq.read_table(...).to_pylist(), the whole file at once, whatever the limit (+431 MB)
    assert out["grown_mb"] < 64, f"reading a {HUGE // MB} MB Parquet record grew peak memory {out['grown_mb']} MB"
    out = _peak(path, "finetune")  # the default limit (61 MB): refused too, after pyarrow decodes its page
    assert "train.parquet: record 20 is 100,663,297 bytes, over the 61,048,576" in out.get("error", ""), out


def test_a_record_over_the_limit_among_others_in_a_row_group_is_refused_with_its_position(tmp_path, monkeypatch):
    from corpusforge.trainers.finetune import data

    path = tmp_path / "train.parquet"
    pq.write_table(pa.table({"text": ["ok", "x" * 5_000, "fine"], "label": ["a", "b", "a"]}), path)
    monkeypatch.setattr(data, "MAX_RECORD_BYTES", 1_000)
    with pytest.raises(UserError, match=r"train.parquet: record 1 is 5,001 bytes, over the 1,000 a record may take"):
        read_records(path)
    skipped = {}
    assert [d.text for d in read_documents(str(path), skipped=skipped)] == ["ok", "x" * 5_000, "fine"]  # 61 MB limit


def _normal_table(n=3_000):
    return pa.table({
        "text": [None if i % 97 == 0 else "" if i % 89 == 0 else f"document {i} " * (1 + i % 7) for i in range(n)],
        "source": [None if i % 5 == 0 else f"src{i % 3}" for i in range(n)],
        "label": pa.array([f"l{i % 4}" for i in range(n)]).dictionary_encode(),
        "tokens": [[f"w{j}" for j in range(i % 5)] for i in range(n)],
        "score": [i / 7 for i in range(n)],
        "id": list(range(n)),
    })


def test_normal_parquet_and_arrow_files_read_as_before(tmp_path):
    table = _normal_table()
    parquet = tmp_path / "records.parquet"
    pq.write_table(table, parquet, row_group_size=700)
    arrow = tmp_path / "records.arrow"
    with pa.ipc.new_file(arrow, table.schema) as writer:
        writer.write_table(table, max_chunksize=1_000)
    # fine-tuning records: what pq.read_table(...).to_pylist() gave
    assert read_records(parquet) == pq.read_table(parquet).to_pylist()
    # evaluate: what the batches of 1,024 rows gave (a string text kept, with a string source or None)
    expected = [(r["text"], r["source"]) for r in table.to_pylist() if r["text"]]
    for path in (parquet, arrow):
        skipped = {}
        assert [(d.text, d.source) for d in read_documents(str(path), skipped=skipped)] == expected
        assert skipped == {"missing_text": table.num_rows - len(expected)}


def test_a_columnar_file_without_the_text_column_is_missing_text_as_in_jsonl(tmp_path):
    """Was one "unreadable_file" skip (a UserError swallowed by the file's guard), so the CLI's "check --text-field"
    hint, given for missing_text, never showed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from corpusforge.trainers.evaluate import read_documents

    pq.write_table(pa.table({"content": ["hello world"] * 5}), tmp_path / "held.parquet")
    (tmp_path / "held.jsonl").write_text('{"content": "hello world"}\n' * 5)
    for name in ("held.parquet", "held.jsonl"):
        skipped: dict[str, int] = {}
        assert list(read_documents(str(tmp_path / name), "text", skipped)) == []
        assert skipped == {"missing_text": 5}, name


def _compressed(path, ext):
    """``path`` compressed as ``path`` + ``ext`` by the codec the build's readers decompress it with."""
    import bz2
    import gzip
    import lzma

    import zstandard

    data = path.read_bytes()
    codec = {".gz": lambda d: gzip.compress(d, mtime=0), ".zst": zstandard.ZstdCompressor().compress,
             ".bz2": bz2.compress, ".xz": lzma.compress}[ext]
    out = path.with_name(path.name + ext)
    out.write_bytes(codec(data))
    return out


@pytest.mark.parametrize("ext", [".gz", ".zst", ".bz2", ".xz"])
def test_compressed_columnar_files_read_as_the_build_reads_them(tmp_path, ext):
    """Every compression the build's readers accept (input_files.COMPRESSIONS), in evaluate and fine-tuning
    alike. Before, x.parquet.zst went to pyarrow undecompressed: evaluate skipped it (unreadable_file), fine-tuning
    failed ("cannot be read")."""
    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.readers import read_file

    table = _normal_table(200)
    parquet = tmp_path / "records.parquet"
    pq.write_table(table, parquet, row_group_size=70)
    arrow = tmp_path / "records.arrow"
    with pa.ipc.new_stream(arrow, table.schema) as writer:
        writer.write_table(table, max_chunksize=64)
    expected = [(r["text"], r["source"]) for r in table.to_pylist() if r["text"]]
    for plain in (parquet, arrow):
        path = _compressed(plain, ext)
        skipped = {}
        assert [(d.text, d.source) for d in read_documents(str(path), skipped=skipped)] == expected, path.name
        assert skipped == {"missing_text": table.num_rows - len(expected)}, path.name
        # the build reads the same records from it
        build = [getattr(item, "reason", "kept") for item in read_file(str(path), InputConfig(path=str(path)))]
        assert build.count("kept") == len(expected), path.name
    assert read_records(parquet.with_name(parquet.name + ext)) == table.to_pylist()  # fine-tuning records


def test_a_compression_no_reader_accepts_is_refused_in_one_line_saying_what_to_do(tmp_path):
    path = tmp_path / "records.parquet.lz4"
    path.write_bytes(b"\x04\x22\x4d\x18 not read")
    with pytest.raises(UserError, match=r"unknown format '\.lz4'; use .*\.parquet, each plain or compressed \(\.gz, "
                                        r"\.zst, \.bz2, \.xz\)"):
        read_records(path)
    with pytest.raises(UserError, match=r"unknown format; pass .*each plain or compressed \(\.gz, \.zst, \.bz2, \.xz\)"):
        list(read_documents(str(path)))


def test_the_record_limit_is_output_max_record_bytes_in_every_command_that_reads_user_files(tmp_path, monkeypatch):
    """evaluate, embed, finetune and predict had a fixed limit of 61 MB (a default build's), no setting."""
    import argparse

    from corpusforge.cli.main import main
    from corpusforge.cli.options import record_bytes
    from corpusforge.trainers.finetune import train

    long_text = "word " * 1_000  # a record of ~5 KB
    jsonl = tmp_path / "held.jsonl"
    jsonl.write_text(json.dumps({"text": long_text, "label": "a"}) + "\n" + json.dumps({"text": "short", "label": "b"}) + "\n")
    parquet = tmp_path / "held.parquet"
    pq.write_table(pa.table({"text": [long_text, "short"], "label": ["a", "b"]}), parquet)
    for path in (jsonl, parquet):
        skipped = {}
        assert [d.text for d in read_documents(str(path), skipped=skipped, max_bytes=2_000)] == ["short"]
        assert skipped == {"oversize_record": 1}
        assert len(list(read_documents(str(path)))) == 2  # the default limit: 61 MB
        with pytest.raises(UserError, match="over the 2,000 a record may take; shorten or drop it, or raise "
                                            "output.max_record_bytes"):
            read_records(path, max_bytes=2_000)
        assert len(read_records(path)) == 2
    # the commands take it from --config / --set, as the build does (0: from output.max_doc_chars)
    assert record_bytes(argparse.Namespace(config=None, set=["output.max_record_bytes=2000"])) == 2_000
    assert record_bytes(argparse.Namespace(config=None, set=["output.max_doc_chars=1000"])) == 6_000 + (1 << 20)
    assert record_bytes(argparse.Namespace(config=None, set=[])) == 6 * 10_000_000 + (1 << 20)
    seen = []
    monkeypatch.setattr(train, "finetune", lambda config, limit=0: seen.append(limit) or {})
    with pytest.raises(Exception):  # the stub's metrics hold nothing to print
        main(["finetune", "--model", "m", "--train", str(jsonl), "--out", str(tmp_path / "out"),
              "--set", "output.max_record_bytes=2000"])
    assert seen == [2_000]


def test_evaluate_with_a_wrong_text_field_names_the_fields_the_records_have(tmp_path, capsys):
    """evaluate (and embed, ablate's held-out set) said "skipped 5 unreadable records (missing_text 5); check
    --text-field": which field to name was left to opening the file; the build's line names the fields."""
    from corpusforge.cli.main import main
    from corpusforge.trainers.evaluate import Skipped, skipped_line

    pq.write_table(pa.table({"uid": ["a"] * 5, "content": ["hello world"] * 5}), tmp_path / "held.parquet")
    (tmp_path / "held.jsonl").write_text('{"doc_id": 1, "body": "hello world"}\n' * 5)
    skipped = Skipped()
    assert list(read_documents(str(tmp_path / "held.jsonl"), "text", skipped)) == []
    assert skipped == {"missing_text": 5}
    assert skipped_line(skipped) == (
        f"skipped 5 unreadable records (missing_text 5); e.g. {tmp_path / 'held.jsonl'}: no field 'text'; name the "
        "text field with --text-field body; records have fields: doc_id, body")
    skipped = Skipped()
    assert list(read_documents(str(tmp_path / "held.parquet"), "text", skipped)) == []
    assert skipped.examples == {"missing_text": f"{tmp_path / 'held.parquet'}: no field 'text'; name yours with "
                                                "--text-field; records have fields: uid, content"}
    # the commands' one line (evaluate, embed), through the context manager they share, without a model to load
    from corpusforge.cli.options import reporting_skipped
    from corpusforge.core.errors import UserError as Error

    skipped = Skipped()
    with pytest.raises(Error) as caught:
        with reporting_skipped(skipped):
            if not list(read_documents(str(tmp_path / "held.jsonl"), "text", skipped)):
                raise Error("no documents to evaluate on")
    assert str(caught.value).endswith("--text-field body; records have fields: doc_id, body") and "\n" not in str(caught.value)


def test_a_text_file_is_one_document_as_the_build_reads_it(tmp_path):
    """evaluate --data FOLDER of a folder the build reads (JSON Lines beside .txt notes, one document a file by
    default) stopped on the first .txt: "unknown format; pass .jsonl, .parquet or .arrow files"."""
    from corpusforge.trainers.evaluate import Skipped

    folder = tmp_path / "my corpus"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"text": "A record about rivers."}\n')
    (folder / "notes.txt").write_text("A note.\nIts second line.\n")
    (folder / "utf16.txt").write_bytes("Überall Wasser.\n".encode("utf-16"))
    (folder / "blank.txt").write_text("  \n")
    (folder / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    skipped = Skipped()
    docs = list(read_documents(str(folder), skipped=skipped))
    assert [d.text for d in docs] == ["A record about rivers.", "A note.\nIts second line.\n", "Überall Wasser.\n"]
    assert skipped == {"empty_text": 1, "invalid_utf8": 1}
    assert [d.text for d in read_documents(str(folder / "notes.txt"))] == ["A note.\nIts second line.\n"]


def test_documents_of_a_folder_are_each_files_source_unless_they_name_one(tmp_path):
    """evaluate --data FOLDER ("per source") printed "all" alone for a folder of the user's files, whose records
    carry no source field: ablate's held-out set and the build name a source by its file, evaluate did not."""
    (tmp_path / "notes.jsonl.gz").write_bytes(__import__("gzip").compress(b'{"text": "A note on lakes."}\n'))
    pq.write_table(pa.table({"text": ["web page", "reference"], "source": ["web", None]}), tmp_path / "ref.parquet")
    (tmp_path / "essay.txt").write_text("An essay.")
    got = [(d.text, d.source) for d in read_documents(str(tmp_path))]
    assert got == [("An essay.", "essay"), ("A note on lakes.", "notes"), ("web page", "web"), ("reference", "ref")]
    assert [d.source for d in read_documents(str(tmp_path / "essay.txt"))] == [None]  # one file: its records' own sources only


def test_evaluates_table_keeps_each_source_on_one_line_and_shows_the_largest():
    # A folder's files are its sources: a name holding a line break split a row, an ESC reached the terminal, and
    # 300 files printed 303 lines.
    from corpusforge.cli.evaluate import source_table

    row = {"documents": 1, "tokens": 5, "bytes": 20, "loss": 1.0, "perplexity": 2.7, "bits_per_byte": 1.2}
    by_source = {f"f{i:03d}": dict(row, documents=i) for i in range(300)}
    by_source["two\nlines"] = dict(row, documents=1000)
    by_source["evil\x1b[31mRED"] = dict(row, documents=999)
    lines = source_table(dict(row, documents=300, by_source=by_source))
    assert len(lines) == 1 + 1 + 20 + 1
    assert all(line.isprintable() for line in lines)
    assert lines[2].startswith("evil\\x1b[31mRED") and lines[-1].startswith("... and 282 more sources")
    assert any(line.startswith("f299 ") for line in lines) and not any(line.startswith("f200 ") for line in lines)
