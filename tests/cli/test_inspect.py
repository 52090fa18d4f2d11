"""`corpusforge inspect`: what a person reads of a shard's schema."""
from corpusforge.cli.main import main
from corpusforge.config import load_config
from corpusforge.core.shard_files import ShardFormat, write_shard
from corpusforge.pipeline.build import shard_schemas


def test_the_schema_of_a_default_build_is_one_field_a_line(tmp_path, capsys):
    # The default build's typed annotations printed as one line of Arrow's struct<...> form, ~1,500 characters
    schema = shard_schemas(load_config(None, []))["docs"]
    assert len(str(schema.field("annotations").type)) > 1000  # what was printed on one line
    (tmp_path / "clean").mkdir()
    write_shard(str(tmp_path / "clean" / "part-00000-of-00001.parquet"), schema,
                [{"id": "a", "text": "some text", "source": "s", "metadata": "{}", "annotations": None}],
                ShardFormat("parquet"))
    assert main(["inspect", str(tmp_path / "clean"), "--rows", "0"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(map(len, lines)) < 100, max(lines, key=len)
    assert "  annotations: struct" in lines and "    lang: string" in lines, out
    assert "    quality: struct" in lines and "      gopher: struct" in lines and "        n_words: int64" in lines, out
    assert "\x1b" not in out  # plain text: the same in a pipe as on a terminal


def test_a_map_of_structs_is_unfolded_as_a_struct_is(tmp_path, capsys):
    # Before: a map<string, struct<...>> column (a user's shard, as a struct is unfolded) printed on one line
    # in Arrow's form, its struct's fields not below it
    import pyarrow as pa

    inner = pa.struct([(f"field_{i:02d}_with_a_long_name", pa.int64()) for i in range(12)])
    schema = pa.schema([("id", pa.string()),
                        ("scores", pa.map_(pa.string(), inner)),
                        ("spans", pa.list_(pa.map_(pa.string(), pa.list_(inner)))),
                        ("counts", pa.map_(pa.string(), pa.int64()))])
    write_shard(str(tmp_path / "part-00000-of-00001.parquet"), schema,
                [{"id": "a", "scores": [("x", {"field_00_with_a_long_name": 1})], "spans": [], "counts": []}],
                ShardFormat("parquet"))
    assert main(["inspect", str(tmp_path), "--rows", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) < 100, max(lines, key=len)
    assert "  scores: map<string, struct>" in lines and "    field_00_with_a_long_name: int64" in lines, lines
    assert "  spans: list<map<string, list<struct>>>" in lines and "    field_11_with_a_long_name: int64" in lines, lines
    assert "  counts: map<string, int64>" in lines, lines
