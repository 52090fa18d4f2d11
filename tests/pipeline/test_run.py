"""open_run and the dataset card: a run opened from Python and by datasets.load_dataset, offline."""
import json
import random
import shutil

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from corpusforge.cli.main import main
from corpusforge.core.dataset_card import card_configs
from corpusforge.core.errors import UserError
from corpusforge.core.shard_files import open_shard
from corpusforge.pipeline.run import open_run
from tests.tokenizer.data import make_text


def _corpus(root):
    """Documents, two of them duplicates (dedup removes one of each) and one malformed line (rejected)."""
    rng = random.Random(0)
    rows = [{"id": f"d{i:03d}", "text": make_text(rng)} for i in range(60)]
    rows += [{"id": "copy1", "text": rows[0]["text"]}, {"id": "copy2", "text": rows[1]["text"]}]
    data = root / "web.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{broken\n")
    return data


def _build(root, name, *extra):
    run = root / name
    assert main(["build", "--input", str(root / "web.jsonl"), "--run-dir", str(run), "--set", "quality.enabled=false",
                 "--set", "pii.enabled=false", "--set", "output.shard_target_mb=0.002", *extra]) == 0
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    _corpus(root)
    return {"arrow": _build(root, "arrow", "--set", "output.format=arrow"), "parquet": _build(root, "parquet"),
            "jsonl": _build(root, "jsonl", "--set", "output.format=jsonl", "--set", "output.compression=gzip")}


@pytest.fixture()
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return str(tmp_path / "hf-cache")


def _rows(directory):
    return [row for path in sorted(directory.glob("part-*")) for row in open_shard(str(path)).read_all().to_pylist()]


@pytest.mark.parametrize("fmt", ["arrow", "parquet", "jsonl"])
def test_open_run_gives_every_output_stats_and_manifest(runs, fmt):
    run = open_run(str(runs[fmt]))
    assert run.stats["accounting"] == {"input": 63, "kept": 60, "removed": 2, "rejected": 1, "balanced": True}
    assert run.manifest["rows"] == run.clean.count_rows() == 60 and run.manifest["format"]["name"] == fmt
    assert run.config["output"]["format"] == fmt
    assert isinstance(run.clean, ds.Dataset)
    assert run.clean.to_table(columns=["id", "text"]).to_pylist() == [
        {"id": r["id"], "text": r["text"]} for r in _rows(runs[fmt] / "clean")]
    removed = run.removed.to_table(filter=pc.field("stage") == "dedup")
    assert sorted(removed.column("id").to_pylist()) == ["web/d000", "web/d001"]  # the survivors: copy1, copy2
    assert run.rejected.to_table().column("reason").to_pylist() == ["malformed_json"]
    assert sorted(run.to_pandas("clean", columns=["id"])["id"]) == ["web/copy1", "web/copy2"] + [
        f"web/d{i:03d}" for i in range(2, 60)]
    assert run.tokens is None


def test_parquet_runs_scan_lazily(runs):
    clean = open_run(str(runs["parquet"])).clean
    assert isinstance(clean, ds.FileSystemDataset) and all(f.endswith(".parquet") for f in clean.files)


def test_open_run_refuses_what_is_not_a_finished_run(tmp_path, runs):
    with pytest.raises(UserError, match="does not exist; run `corpusforge build` first"):
        open_run(str(tmp_path / "nothing"))
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "manifest.json").write_text("{}")
    with pytest.raises(UserError, match="is not a finished corpusforge run"):
        open_run(str(tmp_path / "half"))
    swapping = tmp_path / "swapping"
    shutil.copytree(runs["arrow"], swapping)
    (swapping / ".corpusforge-swap.json").write_text("{}")
    with pytest.raises(UserError, match="in the middle of swapping in a new build"):
        open_run(str(swapping))


@pytest.mark.parametrize("fmt", ["arrow", "parquet", "jsonl"])
def test_inspect_shows_shards_of_every_format(runs, fmt, capsys):
    assert main(["inspect", str(runs[fmt]), "--rows", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{len(list((runs[fmt] / 'clean').glob('part-*')))} shard(s), 60 rows")
    assert "  text: large_string" in out  # JSON Lines carry no schema: inspect knows clean/'s
    assert '"id": "web/' in out


@pytest.mark.parametrize("fmt", ["arrow", "parquet", "jsonl"])
def test_load_dataset_of_a_run_is_the_clean_corpus_and_each_output_by_name(runs, offline, fmt):
    datasets = pytest.importorskip("datasets")
    run = str(runs[fmt])
    clean = _rows(runs[fmt] / "clean")
    assert datasets.load_dataset(run, split="train", cache_dir=offline).to_list() == clean
    removed = datasets.load_dataset(run, "removed", split="train", cache_dir=offline)
    assert sorted(removed["reason"]) == ["exact_duplicate", "exact_duplicate"]
    assert datasets.load_dataset(run, "rejected", split="train", cache_dir=offline)["reason"] == ["malformed_json"]
    streamed = datasets.load_dataset(run, split="train", streaming=True, cache_dir=offline)
    assert [row["id"] for row in streamed] == [row["id"] for row in clean]


def test_the_card_says_what_the_run_is_without_document_text(runs):
    card = (runs["arrow"] / "README.md").read_text()
    manifest = json.loads((runs["arrow"] / "manifest.json").read_text())
    assert card.startswith("---\nconfigs:\n- config_name: default\n")
    assert "| kept | 60 |" in card and "| web | 62 | 60 |" in card and "dedup: exact_duplicate (2)" in card
    assert manifest["corpus_fingerprint"] in card
    texts = [row["text"] for row in _rows(runs["arrow"] / "clean")]
    assert not any(sentence in card for text in texts for sentence in text.split(". ") if len(sentence) > 20)
    marker = json.loads((runs["arrow"] / ".corpusforge-run.json").read_text())
    assert "README.md" in marker["outputs"]


def test_every_load_in_the_card_of_a_run_without_removed_or_rejected_records_loads(tmp_path, offline):
    # a clean input of one's own has no rejected records (and here nothing removed): the card showed
    # load_dataset(RUN_DIR, "removed", split="train"), which datasets refuses on an empty split
    import functools

    datasets = pytest.importorskip("datasets")
    rng = random.Random(1)
    (tmp_path / "web.jsonl").write_text("".join(json.dumps({"id": i, "text": make_text(rng)}) + "\n"
                                                for i in range(20)))
    run = _build(tmp_path, "run", "--set", "dedup.enabled=false")
    assert open_run(str(run)).stats["accounting"] == {"input": 20, "kept": 20, "removed": 0, "rejected": 0,
                                                      "balanced": True}
    card = (run / "README.md").read_text()
    assert "`removed`, `rejected` (no records): `load_dataset` refuses an empty split" in card
    snippet = card.split("```python\n")[1].split("```")[0]
    loaded = {"load_dataset": functools.partial(datasets.load_dataset, cache_dir=offline), "RUN_DIR": str(run)}
    exec(snippet.replace("from datasets import load_dataset\n", ""), loaded)
    assert loaded["clean"].num_rows == 20 and "removed" not in loaded and "rejected" not in loaded
    assert list(datasets.load_dataset(str(run), "rejected", split="train", streaming=True, cache_dir=offline)) == []


def test_tokenize_adds_the_token_shards_to_the_card(runs, offline, tmp_path):
    datasets = pytest.importorskip("datasets")
    run = tmp_path / "run"
    shutil.copytree(runs["arrow"], run)  # the module's runs stay without tokens
    common = ["--set", f"output.run_dir={run}"]
    assert main(["tokenizer", "train", *common, "--vocab-size", "300", "--set", "tokenizer.heldout_mb=0.001"]) == 0
    assert main(["tokenize", *common, "--val-fraction", "0.2"]) == 0
    card = (run / "README.md").read_text()
    assert "config_name: tokens" in card and "tokens/train/part-*.arrow" in card and "tokens/val/part-*.arrow" in card
    tokens = datasets.load_dataset(str(run), "tokens", cache_dir=offline)
    manifest = json.loads((run / "tokens" / "manifest.json").read_text())
    assert tokens["train"].num_rows == manifest["splits"]["train"]["documents"]
    assert tokens["validation"].num_rows == manifest["splits"]["val"]["documents"]
    assert datasets.load_dataset(str(run), split="train", cache_dir=offline).column_names[:2] == ["id", "text"]
    opened = open_run(str(run))
    assert opened.tokens["train"].count_rows() == manifest["splits"]["train"]["documents"]


def test_token_shards_join_the_card_only_beside_arrow_clean_shards(tmp_path):
    """datasets reads every config of a card with the reader of the first config's files."""
    for fmt, suffix in (("arrow", ".arrow"), ("parquet", ".parquet")):
        run = tmp_path / fmt
        for directory in ("clean", "tokens/train", "tokens/val"):
            (run / directory).mkdir(parents=True)
        (run / "clean" / f"part-00000-of-00001{suffix}").write_bytes(b"")
        (run / "tokens" / "train" / "part-00000-of-00001.arrow").write_bytes(b"")
        (run / "tokens" / "val" / "part-00000-of-00001.arrow").write_bytes(b"")
        names = [c["config_name"] for c in card_configs(str(run), tokens=True)]
        assert names == (["default", "tokens"] if fmt == "arrow" else ["default"])


def test_inspect_a_runs_tokens_folder(tmp_path, capsys):
    # `corpusforge inspect RUN/tokens` said it "holds no part-* shards": its shards are in train/ and val/.
    import pyarrow as pa

    split = tmp_path / "run" / "tokens" / "train"
    split.mkdir(parents=True)
    table = pa.table({"id": ["web/1"], "tokens": pa.array([[5, 6, 7]], pa.list_(pa.uint16()))})
    with pa.ipc.new_stream(str(split / "part-00000-of-00001.arrow"), table.schema) as writer:
        writer.write_table(table)
    assert main(["inspect", str(tmp_path / "run" / "tokens")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 shard(s), 1 rows") and '"id": "web/1"' in out
