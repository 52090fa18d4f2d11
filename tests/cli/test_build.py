"""End to end: the `corpusforge build` command on a small corpus with every kind of bad record."""
import gzip
import json

import pyarrow as pa
import pytest

from corpusforge.core.shard_files import open_shard, shard_files, shard_suffix
from corpusforge.cli.main import main


def _corpus(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    good = [{"id": f"g{i:03d}", "text": f"Document number {i} talks about topic {i % 5}.\n\nIt has two paragraphs."}
            for i in range(40)]
    lines = [json.dumps(r).encode() + b"\n" for r in good[:30]]
    lines += [b"{broken\n", b'{"text": "\xff\xfe"}\n', b'{"id": "x"}\n', b'{"text": 1}\n', b'{"text": ""}\n',
              json.dumps({"text": "y" * 5000}).encode() + b"\n"]
    (data / "web.jsonl.gz").write_bytes(gzip.compress(b"".join(lines), mtime=0))
    (data / "more.jsonl").write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in good[30:]))
    blob = gzip.compress(b"".join(json.dumps(r).encode() + b"\n" for r in good) * 20, mtime=0)
    (data / "cut.jsonl.gz").write_bytes(blob[: len(blob) // 3])
    config = tmp_path / "corpus.yaml"
    config.write_text(
        f"inputs:\n  - path: {data}/*.jsonl*\noutput:\n  shard_target_mb: 0.001\n  max_doc_chars: 4000\n"
        "quality: {enabled: false}\ndedup: {enabled: false}\npii: {enabled: false}\n")
    return config


def _build(config, run_dir, *extra):
    return main(["build", "--config", str(config), "--run-dir", str(run_dir), *extra])


def _table(directory):
    files = sorted(p for p in directory.glob("part-*") if shard_suffix(p.name))
    return pa.concat_tables([open_shard(str(f)).read_all() for f in files]), files


OFF_STAGES = ["--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]

FORMATS = {"parquet": [], "arrow": ["--set", "output.format=arrow"], "jsonl": ["--set", "output.format=jsonl"]}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("build")
    config = _corpus(tmp_path)
    assert _build(config, tmp_path / "run1") == 0
    assert _build(config, tmp_path / "run2", "--direct_num_workers=2", "--direct_running_mode=multi_threading") == 0
    return tmp_path, config


@pytest.fixture(scope="module")
def formats(built):
    """The same build in each output format, twice: in process and with two worker threads."""
    tmp_path, config = built
    runs = {"parquet": (tmp_path / "run1", tmp_path / "run2")}  # the default format
    for name in ("arrow", "jsonl"):
        runs[name] = (tmp_path / f"{name}1", tmp_path / f"{name}2")
        assert _build(config, runs[name][0], *FORMATS[name]) == 0
        assert _build(config, runs[name][1], *FORMATS[name], "--direct_num_workers=2",
                      "--direct_running_mode=multi_threading") == 0
    return runs


def test_shards_manifest_and_stats(built):
    tmp_path, _ = built
    run = tmp_path / "run1"
    table, files = _table(run / "clean")
    manifest = json.loads((run / "manifest.json").read_text())
    stats = json.loads((run / "stats.json").read_text())
    assert len(files) > 1 and [s["file"] for s in manifest["shards"]] == [f.name for f in files]
    assert manifest["rows"] == table.num_rows == stats["accounting"]["kept"]
    assert manifest["schema"]["text"] == "large_string"
    acc = stats["accounting"]
    assert acc["balanced"] and acc["input"] == acc["kept"] + acc["removed"] + acc["rejected"]
    assert stats["rejected"]["reasons"] == {
        "empty_text": 1, "invalid_utf8": 1, "malformed_json": 1, "missing_text": 1, "non_string_text": 1,
        "oversize_record": 1, "truncated_compressed_file": 1}
    rejected, _ = _table(run / "rejected")
    assert sorted(rejected.column("reason").to_pylist()) == sorted(
        r for r, n in stats["rejected"]["reasons"].items() for _ in range(n))
    assert not list(run.glob(".tmp-*"))


@pytest.mark.parametrize("name,suffix", [("arrow", ".arrow"), ("parquet", ".parquet"), ("jsonl", ".jsonl.zst")])
def test_output_is_byte_identical_across_runs_and_worker_counts(formats, name, suffix):
    for sub in ("clean", "rejected", "removed"):
        one = sorted((formats[name][0] / sub).glob("part-*"))
        two = sorted((formats[name][1] / sub).glob("part-*"))
        assert one and all(f.name.endswith(suffix) for f in one)
        assert [f.name for f in one] == [f.name for f in two]
        assert all(a.read_bytes() == b.read_bytes() for a, b in zip(one, two))


@pytest.mark.parametrize("name,compression", [("arrow", "none"), ("jsonl", "zstd")])
def test_every_format_holds_the_same_records(formats, name, compression):
    for sub in ("clean", "rejected", "removed"):
        parquet, _ = _table(formats["parquet"][0] / sub)
        other, _ = _table(formats[name][0] / sub)
        assert other.to_pylist() == parquet.to_pylist()
    manifest = json.loads((formats[name][0] / "manifest.json").read_text())
    assert manifest["format"] == {"name": name, "compression": compression}
    assert manifest["corpus_fingerprint"] != json.loads((formats["parquet"][0] / "manifest.json").read_text())[
        "corpus_fingerprint"]


def test_refuses_to_overwrite_unless_asked(built, capsys):
    tmp_path, config = built
    before = (tmp_path / "run1" / "stats.json").read_text()
    assert _build(config, tmp_path / "run1") == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert (tmp_path / "run1" / "stats.json").read_text() == before
    assert _build(config, tmp_path / "run1", "--overwrite") == 0


def test_bad_config_and_missing_input_stop_before_work(tmp_path, capsys):
    assert main(["build", "--set", "output.shard_target_mb=-1", "--run-dir", str(tmp_path / "r")]) == 2
    assert "output.shard_target_mb must be > 0" in capsys.readouterr().err
    assert main(["build", "--input", str(tmp_path / "none*.jsonl"), "--run-dir", str(tmp_path / "r"),
                 "--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]) == 2
    assert "matches no files" in capsys.readouterr().err
    assert not (tmp_path / "r" / "clean").exists()


def test_arrow_shards_open_in_datasets_polars_and_duckdb(formats):
    run = formats["arrow"][0]
    rows = json.loads((run / "manifest.json").read_text())["rows"]
    shards = sorted((run / "clean").glob("part-*"))
    datasets = pytest.importorskip("datasets")
    assert sum(datasets.Dataset.from_file(str(f)).num_rows for f in shards) == rows  # IPC streams, memory-mapped
    assert datasets.Dataset.from_file(str(shards[0]))[0] == open_shard(str(shards[0])).read_all().to_pylist()[0]
    polars = pytest.importorskip("polars")
    assert sum(polars.read_ipc_stream(f).height for f in shards) == rows
    # DuckDB reads Arrow through pyarrow (its own arrow extension would need a download).
    duckdb = pytest.importorskip("duckdb")
    clean = pa.concat_tables(pa.ipc.open_stream(pa.memory_map(str(f))).read_all() for f in shards)
    assert duckdb.connect().execute("SELECT count(*), count(DISTINCT id) FROM clean").fetchone() == (rows, rows)


def test_default_shards_open_natively_in_datasets_pyarrow_duckdb_and_polars(formats):
    run = formats["parquet"][0]  # built without output.format: the default
    rows = json.loads((run / "manifest.json").read_text())["rows"]
    pattern = str(run / "clean" / "*.parquet")
    import pyarrow.dataset as pads

    assert pads.dataset(str(run / "clean"), format="parquet").count_rows() == rows
    datasets = pytest.importorskip("datasets")
    assert datasets.load_dataset("parquet", data_files=pattern, split="train").num_rows == rows
    duckdb = pytest.importorskip("duckdb")
    assert duckdb.connect().execute(f"SELECT count(*), count(DISTINCT id) FROM '{pattern}'").fetchone() == (rows, rows)
    polars = pytest.importorskip("polars")
    assert polars.scan_parquet(pattern).select(polars.len()).collect().item() == rows
def test_hostile_encodings_do_not_sink_a_build(tmp_path):
    """A lone surrogate escape and BOM-marked CRLF files (plain and gzip) build, and the repair is counted."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_bytes(b'{"id": "1", "text": "abc \\ud800 def. It ends here."}\n')
    bom = b"\xef\xbb\xbf" + b'{"id": "2", "text": "first of two."}\r\n{"id": "3", "text": "second."}\r\n'
    (data / "b.jsonl").write_bytes(bom)
    (data / "c.jsonl.gz").write_bytes(gzip.compress(bom.replace(b'"2"', b'"4"').replace(b'"3"', b'"5"'), mtime=0))
    assert main(["build", "--input", str(data / "*.jsonl*"), "--run-dir", str(tmp_path / "run"),
                 "--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]) == 0
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    assert stats["accounting"]["kept"] == 5 and stats["accounting"]["rejected"] == 0
    assert stats["edits"]["read"] == {"lone_surrogates_repaired": 1}
    table, _ = _table(tmp_path / "run" / "clean")
    assert "abc \ufffd def. It ends here." in table.column("text").to_pylist()


def test_duplicate_ids_across_files_never_confuse_dedup(tmp_path):
    """Two files of one source reuse ids 1 and 2; b's "1" copies a's "2". Exact dedup removes that copy and
    nothing else (before ids were namespaced, the verdict for id web/2 removed b's unique text too)."""
    texts = {"A": "Alpha text about rivers and mills and the town.", "B": "Beta text about bridges over water.",
             "C": "Gamma text about markets on the other side."}
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_text(json.dumps({"id": "1", "text": texts["A"]}) + "\n"
                                  + json.dumps({"id": "2", "text": texts["B"]}) + "\n")
    (data / "b.jsonl").write_text(json.dumps({"id": "1", "text": texts["B"]}) + "\n"
                                  + json.dumps({"id": "2", "text": texts["C"]}) + "\n")
    config = tmp_path / "corpus.yaml"
    config.write_text(f"inputs:\n  - {{path: '{data}/*.jsonl', name: web}}\n"
                      "quality: {enabled: false}\npii: {enabled: false}\n"
                      "dedup: {near: {enabled: false}, lines: {enabled: false}}\n")
    assert _build(config, tmp_path / "run") == 0
    clean, _ = _table(tmp_path / "run" / "clean")
    removed, _ = _table(tmp_path / "run" / "removed")
    assert sorted(clean.column("text").to_pylist()) == sorted(texts.values())
    assert len(set(clean.column("id").to_pylist())) == 3
    assert removed.column("text").to_pylist() == [texts["B"]]
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    assert stats["edits"]["read"] == {"id_collisions": 4}


def test_manifest_records_the_language_id_model_used(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"text": "The river runs through the old town and past the mill. " * 5}) + "\n")
    assert main(["build", "--input", str(data), "--run-dir", str(tmp_path / "run"),
                 "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]) == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    (lid,) = manifest["models"]
    assert lid["role"] == "quality.langid.model" and lid["name"] == "lid.176.ftz"
    assert lid["size"] > 100_000 and len(lid["sha256"]) == 64


@pytest.mark.parametrize("name", ["null", "yes", "a: b"])
def test_a_run_directory_named_like_a_yaml_value_stays_a_path(tmp_path, monkeypatch, name):
    # --run-dir went into --set unquoted: `-o null` failed ("expected a string, got None"), `-o 'a: b'` too.
    data = tmp_path / "docs.jsonl"
    data.write_text('{"text": "one document about rivers"}\n')
    monkeypatch.chdir(tmp_path)
    assert main(["build", "--input", str(data), "--run-dir", name, "--set", "quality.enabled=false",
                 "--set", "dedup.enabled=false", "--set", "pii.enabled=false", "--no-progress"]) == 0
    assert (tmp_path / name / "clean").is_dir()


@pytest.mark.parametrize("name", ["run[1]", "run*", "what?", "[ab]"])
def test_a_run_directory_and_input_named_with_glob_characters_are_the_paths_named(tmp_path, name):
    # write_shard took a shard's size from FileSystems.match, which read "run[1]/clean/part-..." as a glob that
    # matches nothing: IndexError on the first shard. Every name a folder can have is a path, not a pattern.
    folder = tmp_path / name
    folder.mkdir()
    data = folder / f"docs{name}.jsonl"
    data.write_text("".join(json.dumps({"id": f"d{i}", "text": f"Document {i} about rivers and hills."}) + "\n"
                            for i in range(3)))
    config = tmp_path / "corpus.yaml"
    config.write_text(f"inputs:\n  - path: {json.dumps(str(data))}\n"
                      "quality: {enabled: false}\ndedup: {enabled: false}\npii: {enabled: false}\n")
    run_dir = folder / "out"
    assert _build(config, run_dir, "--no-progress") == 0
    table, files = _table(run_dir / "clean")
    assert sorted(i.rsplit("/", 1)[1] for i in table.column("id").to_pylist()) == ["d0", "d1", "d2"] and files
    stats = json.loads((run_dir / "stats.json").read_text())
    assert stats["accounting"]["kept"] == 3 and stats["accounting"]["rejected"] == 0
    # the folder's shards as every later command lists them, and the dataset card's configs (both globbed it)
    assert [path for path, _ in shard_files(str(run_dir / "clean"))] == [str(f) for f in files]
    assert "clean/part-*" in (run_dir / "README.md").read_text()


def test_the_demo_keeps_a_run_directory_named_like_a_yaml_value(tmp_path, monkeypatch):
    import corpusforge.pipeline.build as build

    seen = {}

    def stop(config, *args, **kwargs):  # the demo's config is all this test needs: no build
        seen["run_dir"] = config.output.run_dir
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "run_build", stop)
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--run-dir", "null", "--documents", "5", "--no-next-steps"]) == 130
    assert seen["run_dir"] == "null"


def test_input_files_with_another_text_field(tmp_path, capsys):
    # A first build of one's own JSONL: every record rejected as missing_text, and nothing said what to do
    # (`build -i` had no way to name the field but a config file).
    data = tmp_path / "mine.jsonl"
    data.write_text("".join(json.dumps({"doc_id": i, "content": f"Document {i} is about rivers."}) + "\n"
                            for i in range(4)))
    off = ["--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]
    # then the build said "kept: 0" and exited 0; now every record rejected is a failed build (one line, exit 2)
    assert main(["build", "-i", str(data), "-o", str(tmp_path / "a"), "--no-progress", *off]) == 2
    err = capsys.readouterr().err
    # the line names the fields the records have and the one to name (before: only "no field 'text'")
    assert "every one of the 4 input records was rejected (missing_text 4; e.g. mine.jsonl record 0: no field " \
           "'text'; name the text field with --text-field content (inputs[].text_field); records have fields: " \
           "doc_id, content); nothing was published" in err and err.count("\n") == 1, err
    assert not (tmp_path / "a").exists()
    assert main(["build", "-i", str(data), "--text-field", "content", "-o", str(tmp_path / "b"), "--no-progress",
                 *off]) == 0
    assert "kept: 4" in capsys.readouterr().out
    assert main(["build", "--text-field", "content", "-o", str(tmp_path / "c"), *off]) == 2
    assert "--text-field names the text field of the --input files" in capsys.readouterr().err


def test_one_input_file_with_another_text_field_is_named_in_the_summary(tmp_path, capsys):
    # A folder of one's own files, one of them a Parquet table whose text column is `content`: its records were
    # counted "rejected input: missing_text 3" and nothing more (the hint showed only when most of the input was
    # rejected), so the build said nothing of which file, which fields, which flag.
    import pyarrow.parquet as pq

    data = tmp_path / "my data"
    data.mkdir()
    (data / "notes.jsonl").write_text("".join(json.dumps({"text": f"Note {i} is about rivers and lakes."}) + "\n"
                                              for i in range(5)))
    pq.write_table(pa.table({"uid": ["a", "b", "c"], "content": ["one text", "two texts", "three"]}),
                   data / "ref.parquet")
    off = ["--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]
    assert main(["build", "-i", str(data), "-o", str(tmp_path / "run"), "--no-progress", *off]) == 0
    out = capsys.readouterr().out
    assert "kept: 5" in out and "rejected input: missing_text 3" in out, out
    assert "  (missing_text 3; e.g. ref.parquet record 0: no field 'text'; name the text field with --text-field " \
           "content (inputs[].text_field); records have fields: uid, content)" in out, out


def test_input_files_with_another_id_field(tmp_path, capsys):
    # `build -i articles.parquet --text-field body` kept doc_id in metadata and gave every record a derived id:
    # naming the id field took a config file
    data = tmp_path / "mine.jsonl"
    data.write_text("".join(json.dumps({"doc_id": f"article-{i}", "content": f"Document {i} is about rivers."}) + "\n"
                            for i in range(4)))
    off = ["--no-progress", "--set", "quality.enabled=false", "--set", "dedup.enabled=false",
           "--set", "pii.enabled=false"]
    assert main(["build", "-i", str(data), "--text-field", "content", "--id-field", "doc_id", "-o",
                 str(tmp_path / "b"), *off]) == 0
    rows = _table(tmp_path / "b" / "clean")[0].to_pylist()
    assert sorted(row["id"] for row in rows) == [f"mine/article-{i}" for i in range(4)]  # namespaced by source
    assert all("doc_id" not in (row["metadata"] or {}) for row in rows)
    capsys.readouterr()
    assert main(["build", "--id-field", "doc_id", "-o", str(tmp_path / "c"), *off]) == 2
    assert "--id-field names the id field of the --input files" in capsys.readouterr().err


def test_a_json_file_of_one_array_of_records_is_named_with_what_to_do(tmp_path, capsys):
    # json.dump(list) or pandas' orient="records": one line, one record that is not an object, the whole file
    # rejected as not_an_object ("got list") with nothing saying why
    data = tmp_path / "records.json"
    data.write_text(json.dumps([{"id": i, "text": f"Document {i} about cats."} for i in range(5)]))
    off = ["--no-progress", "--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]
    # alone, its one record rejected is the whole input: no build, one line saying what to do
    assert main(["build", "--input", str(data), "--run-dir", str(tmp_path / "run"), *off]) == 2
    assert "was rejected (not_an_object 1; e.g. records.json record 0: expected a JSON object, got an array); " \
           "nothing was published. JSON Lines holds one object per line" in capsys.readouterr().err
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"id": "g", "text": "A document about dogs."}) + "\n")
    assert main(["build", "--input", str(data), "--input", str(good), "--run-dir", str(tmp_path / "run"), *off]) == 0
    out = capsys.readouterr().out
    assert "  rejected input: not_an_object 1\n  (not_an_object: JSON Lines holds one object per line; a file " \
           "holding one array of records is not JSON Lines: write it one object per line, e.g. jq -c '.[]' " \
           "data.json > data.jsonl; e.g. records.json record 0: expected a JSON object, got an array)\n" in out, out
    (rejected,) = _table(tmp_path / "run" / "rejected")[0].to_pylist()
    assert rejected["detail"] == "expected a JSON object, got an array"


@pytest.mark.parametrize("layout", ["inside", "same", "linked run", "linked input"])
def test_a_run_directory_an_input_folder_holds_is_refused_before_any_work(tmp_path, capsys, layout):
    # Before: `-i data --run-dir data/run` built, and its rebuild (--overwrite) read the first build's manifest,
    # stats and shards as input: 30 records in, then 718 (657 rejected as malformed_json / not_an_object).
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_text('{"text": "one document about rivers"}\n')
    run, named = {"inside": (data / "run", data), "same": (data, data),
                  "linked run": (tmp_path / "link", data), "linked input": (data / "run", tmp_path / "in")}[layout]
    if layout == "linked run":
        run.symlink_to(data / "run", target_is_directory=True)
    if layout == "linked input":
        named.symlink_to(data, target_is_directory=True)
    before = sorted(p.name for p in data.rglob("*"))
    assert main(["build", "--input", str(named), "--run-dir", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds the run directory" in err and "choose a run directory" in err, err
    assert sorted(p.name for p in data.rglob("*")) == before  # nothing written


def test_an_input_inside_the_run_directory_is_read(tmp_path):
    # the reverse is allowed: an earlier build's removed/ as the input of a rebuild into the same run directory
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"text": f"Document {i} about the river, the mill and the sheep. " * 4})
                            + "\n" for i in range(3)))
    off = ["--set", "dedup.enabled=false", "--set", "pii.enabled=false", "--set", "quality.enabled=false",
           "--no-progress"]
    run = tmp_path / "run"
    assert main(["build", "--input", str(data), "--run-dir", str(run), *off]) == 0
    assert main(["build", "--input", str(run / "clean"), "--run-dir", str(run), "--overwrite", *off]) == 0
    assert json.loads((run / "stats.json").read_text())["accounting"]["input"] == 3


def _lines(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_build_that_reads_no_usable_record_fails_and_publishes_nothing(tmp_path, capsys):
    # A build whose every record is rejected (every line malformed, the text in another field), or whose inputs
    # hold no record, exited 0 with "kept: 0" and replaced the run directory's build with an empty one.
    off = ["--no-progress", "--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]
    good = _lines(tmp_path / "good.jsonl", [{"id": i, "text": f"Document {i} about owls."} for i in range(3)])
    run = tmp_path / "run"
    assert main(["build", "-i", str(good), "-o", str(run), *off]) == 0
    before = (run / "manifest.json").read_bytes()
    capsys.readouterr()
    malformed = tmp_path / "notes.jsonl"
    malformed.write_text("first note\nsecond note\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    named = tmp_path / "a\nb\u2028.jsonl"  # a name that would break the one line
    named.write_text('{"body": "x"}\n')
    cases = {named: "was rejected (missing_text 1; e.g. a\\nb\\u2028.jsonl record 0: no field 'text'; name the text "
                    "field with --text-field body (inputs[].text_field); records have fields: body)",
             malformed: "every one of the 2 input records was rejected (malformed_json 2; e.g. notes.jsonl record 0: "
                        "Expecting value: line 1 column 1 (char 0)); nothing was published. A file read as JSON Lines",
             empty: "the inputs hold no records (every file is empty or blank); nothing was published"}
    for path, said in cases.items():
        assert main(["build", "-i", str(path), "-o", str(run), "--overwrite", *off]) == 2, path
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1 and "Traceback" not in err, err
        assert (run / "manifest.json").read_bytes() == before  # the previous build stays whole
    # from Python: NothingKept, a UserError that carries the counts stats.json would have held
    from corpusforge.pipeline.build import NothingKept, run_build
    from corpusforge.config import load_config
    import io
    config = load_config(None, ["quality.enabled=false", "dedup.enabled=false", "pii.enabled=false"],
                         base={"inputs": [{"path": str(malformed)}], "output": {"run_dir": str(tmp_path / "r2")}})
    with pytest.raises(NothingKept) as raised:
        run_build(config, out=io.StringIO(), progress=False)
    assert raised.value.stats["accounting"] == {"input": 2, "kept": 0, "removed": 0, "rejected": 2, "balanced": True}


def test_a_warc_file_of_no_http_response_is_named_a_wet_or_wat_extract(tmp_path, capsys):
    # Common Crawl's WET/WAT extracts (conversion or metadata records only) named .warc.gz: every record is
    # skipped, so no record was read; the line said "the inputs hold no records (every file is empty)" (review)
    import io as _io
    from warcio.warcwriter import WARCWriter

    path = tmp_path / "CC-MAIN-0001.warc.wet.gz"
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for i in range(3):
            writer.write_record(writer.create_warc_record(f"https://example.org/{i}", "conversion",
                                                          payload=_io.BytesIO(f"Plain text {i}.".encode()),
                                                          warc_content_type="text/plain"))
    warc = tmp_path / "CC-MAIN-0001.warc.gz"
    path.rename(warc)
    assert main(["build", "-i", str(warc), "-o", str(tmp_path / "run"), "--no-progress", "--set", "pii.enabled=false"]) == 2
    err = capsys.readouterr().err
    assert ("the WARC inputs hold 3 records and none is an HTTP response (conversion 3); nothing was published. "
            "corpusforge reads WARC response records: give the crawl's .warc.gz files, not its WET or WAT extracts"
            in err and err.count("\n") == 1), err
    assert not (tmp_path / "run" / "clean").exists()


def test_input_files_this_user_cannot_read_stop_the_build_before_it_starts(tmp_path, capsys, monkeypatch):
    # EACCES stops a build when a worker opens the file (an environment error, not a record's): hours in, and
    # once per file. Said before any work, naming every such file (found by review). Tests run as root, whom
    # permissions do not stop: os.access is asked as the build asks it.
    import os as _os
    from corpusforge.core import input_files

    files = [_lines(tmp_path / f"part-{i}.jsonl", [{"id": i, "text": f"Document {i} about owls."}]) for i in range(5)]
    denied = {str(files[1]), str(files[2]), str(files[3]), str(files[4])}
    real = _os.access
    monkeypatch.setattr(input_files.os, "access", lambda path, mode: path not in denied and real(path, mode))
    code = main(["build", "-i", str(tmp_path / "part-*.jsonl"), "-o", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert ("cannot read 4 input files (permission denied): " in err and "part-1.jsonl" in err and "and 1 more; make "
            "them readable (chmod) or leave them out of --input / inputs[].path" in err and err.count("\n") == 1), err
    assert not (tmp_path / "run" / "clean").exists()


def test_a_build_whose_stages_removed_everything_is_published_with_a_warning(tmp_path, capsys):
    # the stages' decisions are the config's: published (removed/ says why), exit 0, and said plainly
    data = _lines(tmp_path / "short.jsonl", [{"id": i, "text": f"owl {i}"} for i in range(4)])
    assert main(["build", "-i", str(data), "-o", str(tmp_path / "run"), "--no-progress", "--set", "dedup.enabled=false",
                 "--set", "pii.enabled=false"]) == 0
    captured = capsys.readouterr()
    assert "kept: 0   removed: 4" in captured.out, captured.out
    warnings = [line for line in captured.err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and warnings[0].startswith("warning: no document was kept: the stages removed 4 ("), captured.err
    assert "quality " in warnings[0] and "Loosen the rules" in warnings[0], warnings
    assert _table(tmp_path / "run" / "removed")[0].num_rows == 4


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_a_build_of_an_earlier_builds_clean_shards_keeps_every_document_as_it_was(tmp_path, fmt):
    # Before: `build --input RUN/clean` read a shard's row as a user record: its id namespaced again
    # (part-00000-of-00001/web/g0), its source the shard's file name, its metadata the JSON string nested under
    # "metadata", and source and annotations moved into metadata.
    data = tmp_path / "web.jsonl"
    words = ["river", "mill", "sheep", "valley", "stone", "bridge", "winter", "harvest", "market", "church",
             "forest", "lantern", "orchard", "weaver", "ferry", "granary", "meadow", "smithy", "tavern", "well"]
    texts = [" ".join(words[(i * 7 + k * k * 3 + k) % 20] for k in range(30)) + "." for i in range(12)]
    data.write_text("".join(json.dumps({"id": f"g{i}", "text": texts[i],
                                        "url": f"https://example.org/{i}", "metadata": {"lang_hint": "en", "n": i}})
                            + "\n" for i in range(12)))
    settings = ["--no-progress", "--set", f"output.format={fmt}", "--set", "pii.enabled=false",
                "--set", "quality.enabled=false"]  # dedup on: its annotations must come out the same
    first, second = tmp_path / "first", tmp_path / "second"
    assert main(["build", "-i", str(data), "-o", str(first), *settings]) == 0
    assert main(["build", "-i", str(first / "clean"), "-o", str(second), *settings]) == 0
    before = sorted(_table(first / "clean")[0].to_pylist(), key=lambda row: row["id"])
    after = sorted(_table(second / "clean")[0].to_pylist(), key=lambda row: row["id"])
    assert len(before) >= 8  # near duplicates among the twelve removed the first time
    assert after == before  # ids, sources, texts, metadata, and annotations the same settings recompute the same
    assert json.loads(before[3]["metadata"]) == {"url": "https://example.org/3", "lang_hint": "en", "n": 3}


def test_a_build_of_an_earlier_builds_removed_shards_reads_their_documents(tmp_path):
    # RUN/removed (a removed row: id, source, stage, reason, details, text, annotations): its earlier verdict is
    # dropped and this build decides again; with dedup off, every removed duplicate is kept under its own id
    data = tmp_path / "web.jsonl"
    data.write_text("".join(json.dumps({"id": f"g{i}", "text": "The same document about the river and the mill."})
                            + "\n" for i in range(4)))
    off = ["--no-progress", "--set", "quality.enabled=false", "--set", "pii.enabled=false"]
    assert main(["build", "-i", str(data), "-o", str(tmp_path / "first"), *off]) == 0
    assert main(["build", "-i", str(tmp_path / "first" / "removed"), "-o", str(tmp_path / "second"), *off,
                 "--set", "dedup.enabled=false"]) == 0
    rows = _table(tmp_path / "second" / "clean")[0].to_pylist()
    assert sorted(row["id"] for row in rows) == ["web/g1", "web/g2", "web/g3"]
    assert {row["source"] for row in rows} == {"web"} and {row["metadata"] for row in rows} == {"{}"}


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_a_removed_document_keeps_its_metadata_and_reads_back_with_it(tmp_path, fmt):
    # Before: removed/ held no metadata column, so `build --input RUN/removed` gave back the documents with
    # metadata {} (their url, their record's own metadata object lost); clean/ kept them for the same documents
    data = tmp_path / "web.jsonl"
    data.write_text("".join(json.dumps({"id": f"g{i}", "text": "The same document about the river and the mill.",
                                        "url": f"https://example.org/{i}", "metadata": {"n": i}}) + "\n"
                            for i in range(3)))
    off = ["--no-progress", "--set", f"output.format={fmt}", "--set", "quality.enabled=false",
           "--set", "pii.enabled=false"]
    assert main(["build", "-i", str(data), "-o", str(tmp_path / "first"), *off]) == 0
    removed = sorted(_table(tmp_path / "first" / "removed")[0].to_pylist(), key=lambda row: row["id"])
    assert [json.loads(row["metadata"]) for row in removed] == [{"url": f"https://example.org/{i}", "n": i}
                                                                 for i in (1, 2)]
    assert main(["build", "-i", str(tmp_path / "first" / "removed"), "-o", str(tmp_path / "second"), *off,
                 "--set", "dedup.enabled=false"]) == 0
    rows = sorted(_table(tmp_path / "second" / "clean")[0].to_pylist(), key=lambda row: row["id"])
    assert [(row["id"], json.loads(row["metadata"])) for row in rows] == [
        (f"web/g{i}", {"url": f"https://example.org/{i}", "n": i}) for i in (1, 2)]


def test_a_run_directory_as_input_is_refused_with_what_to_name(tmp_path, capsys):
    # Before: `build --input RUN` read clean/, removed/, rejected/ and README.md alike as input documents
    data = _lines(tmp_path / "d.jsonl", [{"text": f"Document {i} about owls and the barn."} for i in range(3)])
    off = ["--no-progress", "--set", "quality.enabled=false", "--set", "dedup.enabled=false",
           "--set", "pii.enabled=false"]
    assert main(["build", "-i", str(data), "-o", str(tmp_path / "run"), *off]) == 0
    capsys.readouterr()
    assert main(["build", "-i", str(tmp_path / "run"), "-o", str(tmp_path / "again"), *off]) == 2
    err = capsys.readouterr().err
    assert f"is a corpusforge run directory; read its documents with --input {tmp_path / 'run'}/clean" in err
    assert err.count("\n") == 1 and not (tmp_path / "again").exists()


@pytest.fixture(scope="module")
def own_run(tmp_path_factory):
    """A finished run with clean/, removed/ and rejected/ shards, a tokens output and stage checkpoints recorded
    in its marker as tokenize and a build that keeps checkpoints record them, and a demo's sample."""
    from corpusforge.core import rundir

    root = tmp_path_factory.mktemp("own")
    data = root / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"g{i}", "text": f"Document {i % 3} about owls and the barn."}) + "\n"
                            for i in range(6)) + "{broken\n")
    run = root / "run"
    assert main(["build", "-i", str(data), "-o", str(run), "--no-progress", "--set", "quality.enabled=false",
                 "--set", "pii.enabled=false"]) == 0
    for name, files in (("tokens", {"train/part-00000-of-00001.arrow": b"tokens", "manifest.json": b"{}"}),
                        ("sample", {"web.jsonl": b'{"text": "A sample document about owls."}\n'})):
        for rel, content in files.items():
            (run / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (run / name / rel).write_bytes(content)
        rundir.record_output(str(run), name, rundir.listing(str(run / name)), derived=False)
    work = rundir.make_scratch(str(run), rundir.CHECKPOINTS, private=True)
    (run / ".checkpoints" / "00-read").mkdir()
    (run / ".checkpoints" / "00-read" / "docs.jsonl").write_text('{"text": "spilled"}\n')
    assert work.endswith(".checkpoints")
    return run


OFF = ["--no-progress", "--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]


@pytest.mark.parametrize("named,shown,why", [
    ("*", "README.md", "is what the run records about itself"),
    ("rejected", "rejected/part-00000-of-00001.parquet", "holds rejected input records"),
    ("rejected/part-00000-of-00001.parquet", "rejected/part-00000-of-00001.parquet", "holds rejected input records"),
    ("*/part-*", "rejected/part-00000-of-00001.parquet", "holds rejected input records"),
    ("stats.json", "stats.json", "is what the run records about itself"),
    ("tokens", "tokens/manifest.json", "holds token ids"),
    (".checkpoints", ".checkpoints/00-read/docs.jsonl", "is a working folder of a corpusforge command"),
])
def test_every_path_to_a_runs_outputs_other_than_its_documents_is_refused_before_any_work(
        own_run, tmp_path, capsys, named, shown, why):
    # Before: a glob over RUN, RUN/rejected (or one of its shards), RUN/tokens, a checkpoint folder were read:
    # rejected records, stats and tokens became documents (or rejected records), a build was published
    capsys.readouterr()
    assert main(["build", "-i", str(own_run / named), "-o", str(tmp_path / "again"), *OFF]) == 2
    err = capsys.readouterr().err
    assert f"of the corpusforge run {own_run} that are not its documents ({own_run / shown} {why}" in err, err
    assert f"read its documents with --input {own_run}/clean (and {own_run}/removed" in err, err
    assert err.count("\n") == 1 and not (tmp_path / "again").exists()


def test_a_folder_holding_a_run_is_refused_too(own_run, tmp_path, capsys):
    capsys.readouterr()
    assert main(["build", "-i", str(own_run.parent), "-o", str(tmp_path / "again"), *OFF]) == 2
    err = capsys.readouterr().err
    assert (f"of the corpusforge run {own_run} that are not its documents ({own_run}/rejected/part-00000-of-00001.parquet "
            "holds rejected input records" in err and err.count("\n") == 1), err


@pytest.mark.parametrize("named", ["clean", "removed", "clean/*", "sample", "{clean,removed}"])
def test_a_runs_documents_and_a_demos_sample_are_still_read(own_run, tmp_path, named):
    if named == "{clean,removed}":
        inputs = ["-i", str(own_run / "clean"), "-i", str(own_run / "removed")]
    else:
        inputs = ["-i", str(own_run / named)]
    assert main(["build", *inputs, "-o", str(tmp_path / "again"), *OFF]) == 0


def test_a_build_on_a_runs_empty_clean_says_it_holds_no_documents_and_what_to_do(tmp_path, capsys):
    # Before: "the inputs hold no records (every file is empty or blank)", as for a user's empty file
    data = _lines(tmp_path / "short.jsonl", [{"id": i, "text": f"owl {i}"} for i in range(4)])
    assert main(["build", "-i", str(data), "-o", str(tmp_path / "run"), "--no-progress", "--set", "dedup.enabled=false",
                 "--set", "pii.enabled=false"]) == 0
    capsys.readouterr()
    assert main(["build", "-i", str(tmp_path / "run" / "clean"), "-o", str(tmp_path / "again"), *OFF]) == 2
    err = capsys.readouterr().err
    assert (f"input {tmp_path / 'run' / 'clean'} is a corpusforge output that holds no documents: the build that "
            "wrote it kept none of its 4 input records (removed 4, rejected 0" in err), err
    assert f"--input {tmp_path / 'run' / 'removed'}" in err and err.count("\n") == 1, err
    assert not (tmp_path / "again").exists()


def test_a_copy_of_a_rejected_shard_is_rejected_as_what_it_is_not_as_a_missing_text_field(own_run, tmp_path, capsys):
    # Out of its run (no marker above it), a rejected/ shard's rows were rejected as missing_text, and the line told
    # to pass --text-field raw: the previews of input a build could not read would then be built as documents
    import shutil

    copy = tmp_path / "copied.parquet"
    shutil.copy(own_run / "rejected" / "part-00000-of-00001.parquet", copy)
    capsys.readouterr()
    assert main(["build", "-i", str(copy), "-o", str(tmp_path / "again"), *OFF]) == 2
    err = capsys.readouterr().err
    assert "every one of the 1 input records was rejected (rejected_record 1; e.g. " in err, err
    assert "--text-field raw" not in err and "not documents: fix the files their path column names" in err, err
    assert err.count("\n") == 1 and not (tmp_path / "again").exists()


def test_an_empty_clean_of_a_build_that_wrote_no_removed_names_only_the_files_it_read(tmp_path, capsys):
    # output.write_removed: false leaves no removed/ to read again: the line must not send the user there
    data = _lines(tmp_path / "short.jsonl", [{"id": i, "text": f"owl {i}"} for i in range(3)])
    assert main(["build", "-i", str(data), "-o", str(tmp_path / "run"), "--no-progress", "--set", "dedup.enabled=false",
                 "--set", "pii.enabled=false", "--set", "output.write_removed=false"]) == 0
    capsys.readouterr()
    assert main(["build", "-i", str(tmp_path / "run" / "clean"), "-o", str(tmp_path / "again"), *OFF]) == 2
    err = capsys.readouterr().err
    assert "is a corpusforge output that holds no documents" in err and "/removed" not in err, err
    assert f"build from the files it read ({tmp_path / 'run'}/manifest.json's input_files)" in err, err


def test_a_tokenize_output_folder_of_its_own_is_refused_as_token_ids(tmp_path, capsys):
    # tokenize.output elsewhere records its manifest.json, train/ and val/ in a marker of its own (tokenize.py)
    from corpusforge.core import rundir

    tokens = tmp_path / "tokens"
    for rel in ("train/part-00000-of-00001.arrow", "val/part-00000-of-00001.arrow"):
        (tokens / rel).parent.mkdir(parents=True, exist_ok=True)
        (tokens / rel).write_bytes(b"\0" * 8)
    (tokens / "manifest.json").write_text("{}")
    for name in ("manifest.json", "train", "val"):
        rundir.record_output(str(tokens), name, derived=False)
    assert main(["build", "-i", str(tokens / "train"), "-o", str(tmp_path / "again"), *OFF]) == 2
    err = capsys.readouterr().err
    assert f"({tokens}/train/part-00000-of-00001.arrow holds token ids, not text); read documents from a run's " \
           "clean/ folder, or from the files they came from" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("folder", ["train", "val", "tokens", "model", "models", "tokenizer"])
def test_a_users_own_folder_named_like_an_output_the_marker_does_not_record_is_read(tmp_path, folder):
    # Before: refused by its name alone ("holds token ids", "holds a model") whenever any marker sat above it,
    # though the build's marker records only README.md, clean, manifest.json, rejected, removed and stats.json
    data = _lines(tmp_path / "a.jsonl", [{"id": f"g{i}", "text": f"Document {i} about owls and the barn."}
                                         for i in range(3)])
    run = tmp_path / "r1"
    assert main(["build", "-i", str(data), "-o", str(run), *OFF]) == 0
    (run / folder).mkdir()
    (run / folder / "a.jsonl").write_bytes(data.read_bytes())
    assert main(["build", "-i", str(run / folder / "a.jsonl"), "-o", str(tmp_path / "b3"), *OFF]) == 0
    assert json.loads((tmp_path / "b3" / "stats.json").read_text())["accounting"]["input"] == 3


def test_a_runs_recorded_output_is_still_refused_by_what_the_marker_records(tmp_path, capsys):
    # the same train/ is refused once the marker records it (a tokenize run's split)
    from corpusforge.core import rundir

    data = _lines(tmp_path / "a.jsonl", [{"id": "g0", "text": "Document about owls and the barn."}])
    run = tmp_path / "r1"
    assert main(["build", "-i", str(data), "-o", str(run), *OFF]) == 0
    (run / "train").mkdir()
    (run / "train" / "a.jsonl").write_bytes(data.read_bytes())
    rundir.record_output(str(run), "train", rundir.listing(str(run / "train")), derived=False)
    capsys.readouterr()
    assert main(["build", "-i", str(run / "train" / "a.jsonl"), "-o", str(tmp_path / "b3"), *OFF]) == 2
    err = capsys.readouterr().err
    assert f"({run}/train/a.jsonl holds token ids, not text)" in err and err.count("\n") == 1, err


def test_an_input_whose_run_marker_cannot_be_looked_for_stops_before_any_work(own_run, tmp_path, monkeypatch, capsys):
    # Before: an exists that raised counted as "no marker": the run's rejected/ was read as input
    from corpusforge.core import files
    from corpusforge.core import rundir

    real = files.exists

    def exists(path):
        if path.startswith(str(own_run)) and path.endswith(rundir.MARKER):
            raise OSError("transient remote error")
        return real(path)

    monkeypatch.setattr(files, "exists", exists)
    capsys.readouterr()
    assert main(["build", "-i", str(own_run / "rejected"), "-o", str(tmp_path / "again"), *OFF]) == 2
    err = capsys.readouterr().err
    assert (f"cannot tell whether input {own_run}/rejected/part-00000-of-00001.parquet lies in a corpusforge run: "
            f"looking for {own_run}/rejected/{rundir.MARKER} failed (OSError: transient remote error)" in err), err
    assert err.count("\n") == 1 and not (tmp_path / "again").exists()


def test_a_folder_where_a_command_wrote_one_file_is_still_the_users_input(tmp_path):
    """predict --out data/preds.jsonl records its file in data/'s marker; a build of data/ afterwards was refused as
    "a corpusforge run directory" (and with the file named, as "the corpusforge run data"). A build run stays
    refused."""
    from corpusforge.core.run_lock import claim_file

    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_text(json.dumps({"id": "a", "text": "A document about rivers and hills."}) + "\n")
    claim_file(str(data / "preds.jsonl"), "predict")
    (data / "preds.jsonl").write_text(json.dumps({"id": "a", "text": "predicted: rivers"}) + "\n")
    run = tmp_path / "run"
    assert main(["build", "--input", str(data), "--run-dir", str(run), "--no-progress", *OFF_STAGES]) == 0
    stats = json.loads((run / "stats.json").read_text())
    assert stats["accounting"]["kept"] == 2 and stats["accounting"]["rejected"] == 0
    assert main(["build", "--input", str(run), "--run-dir", str(tmp_path / "again"), "--no-progress",
                 *OFF_STAGES]) == 2


def test_a_build_that_rejects_most_of_its_input_warns_on_one_line_and_still_publishes(tmp_path, capsys):
    # 702 of 703 records name their text "content": the one record with "text" is published (exit 0: it is a
    # corpus), and one plain warning: line says how many were rejected, why, and what to do
    records = [{"id": i, "content": f"Record {i} says something about owls and their habits."} for i in range(702)]
    data = _lines(tmp_path / "mostly.jsonl", records + [{"id": 702, "text": "The one record whose text is in text."}])
    assert main(["build", "-i", str(data), "-o", str(tmp_path / "run"), "--no-progress", "--set", "dedup.enabled=false",
                 "--set", "pii.enabled=false", "--set", "quality.enabled=false"]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, err
    assert warnings[0].startswith("warning: 702 of the 703 input records (99.9%) were rejected (missing_text 702; e.g. "
                                  ), warnings
    assert "--text-field content" in warnings[0] and "only 1 kept" in warnings[0], warnings
    assert _table(tmp_path / "run" / "clean")[0].num_rows == 1


def test_a_build_that_rejects_a_minority_prints_no_warning(tmp_path, capsys):
    # one file of four with the wrong field: the summary details it; under half rejected is not a warning
    good = [{"id": i, "text": f"Record {i} says something about owls and their habits."} for i in range(3)]
    data = _lines(tmp_path / "some.jsonl", good + [{"id": 3, "content": "Text under another name."}])
    assert main(["build", "-i", str(data), "-o", str(tmp_path / "run"), "--no-progress", "--set", "dedup.enabled=false",
                 "--set", "pii.enabled=false", "--set", "quality.enabled=false"]) == 0
    captured = capsys.readouterr()
    assert "rejected: 1" in captured.out and "warning:" not in captured.err, captured
