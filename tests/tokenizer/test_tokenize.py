import argparse
import hashlib
import json
import os
import pathlib
import shutil

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from tokenizers import Tokenizer

from corpusforge.config import load_config
from corpusforge.core.fault_config import FaultConfig
from corpusforge.core.errors import UserError
from corpusforge.core.shard_files import ShardFormat, open_shard, write_shard
from corpusforge.pipeline.document import DOCUMENT_SCHEMA
from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.token_shards import TokenCorpus, token_dtype
from corpusforge.tokenizer.tokenize import Chunk, ShardPlan, TokenizeShards, encode_documents, shard_batch
from tests.runs import tokenize_on
from corpusforge.tokenizer.train import train_from_shards
from tests.tokenizer.data import make_documents, write_clean_shards


@pytest.fixture(scope="module")
def tokenizer_path(tmp_path_factory, clean_dir) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("tok")
    train_from_shards(TokenizerConfig(family="decoder", vocab_size=500, heldout_mb=0.01), str(clean_dir), str(directory))
    return directory / "tokenizer.json"


def _run(clean, out, tokenizer, **kwargs):
    with TestPipeline() as p:
        _ = p | TokenizeShards(str(clean), str(out), str(tokenizer), **kwargs)
    return json.loads((out / "manifest.json").read_text())


def _direct(tokenizer_path, text):
    tok = Tokenizer.from_file(str(tokenizer_path))
    tok.encode_special_tokens = True
    return tok.encode(text, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def tokens_dir(tmp_path_factory, clean_dir, tokenizer_path):
    out = tmp_path_factory.mktemp("tokens")
    _run(clean_dir, out, tokenizer_path, val_fraction=0.1, num_shards=3, batch_size=32, rows_per_unit=64)
    return out


# --- the split ---------------------------------------------------------------------------------------------


def test_split_and_shard_come_from_a_fixed_hash_of_the_id():
    plan = ShardPlan(train_shards=4, val_shards=2, val_fraction=0.5, split_seed=0, dtype="uint16")
    # Frozen values: a change here moves documents between splits of existing runs.
    assert [plan.assign(i) for i in ("doc-000000", "doc-000001", "a", "é", "x1", "x2")] == [
        ("train", 1), ("train", 3), ("val", 0), ("train", 2), ("val", 0), ("train", 0)]


def test_split_fraction_is_respected_and_monotonic():
    ids = [f"doc-{i}" for i in range(20000)]
    small = ShardPlan(8, 1, 0.05, 0, "uint16")
    large = ShardPlan(3, 2, 0.20, 0, "uint16")
    val_small = {i for i in ids if small.assign(i)[0] == "val"}
    val_large = {i for i in ids if large.assign(i)[0] == "val"}
    assert abs(len(val_small) / len(ids) - 0.05) < 0.01
    assert abs(len(val_large) / len(ids) - 0.20) < 0.015
    # Raising the fraction only moves documents from train to val; shard counts never change the split.
    assert val_small <= val_large
    assert val_small == {i for i in ids if ShardPlan(1, 5, 0.05, 0, "uint16").assign(i)[0] == "val"}
    other_seed = {i for i in ids if ShardPlan(8, 1, 0.05, 9, "uint16").assign(i)[0] == "val"}
    assert other_seed != val_small


def test_plan_sizes_shards_from_the_input():
    plan = ShardPlan.for_input(1000e6, 0.01, 0, "uint16", shard_target_mb=256)
    assert (plan.train_shards, plan.val_shards) == (4, 1)
    assert ShardPlan.for_input(10, 0.0, 0, "uint16").keys() == [("train", 0)]
    fixed = ShardPlan.for_input(10, 0.2, 0, "uint16", num_shards=8)
    assert (fixed.train_shards, fixed.val_shards) == (8, 2)
    assert token_dtype(65_535) == "uint16" and token_dtype(65_536) == "uint32"


# --- pure encoding and shard layout -----------------------------------------------------------------------


def test_encode_documents_groups_direct_encodings_by_shard(tokenizer_path):
    tok = Tokenizer.from_file(str(tokenizer_path))
    docs = make_documents(40, seed=8)
    plan = ShardPlan(3, 1, 0.2, 0, "uint16")
    chunks = encode_documents(tok, [d["id"] for d in docs], [d["text"] for d in docs], plan)
    seen = {}
    for key, chunk in chunks.items():
        assert chunk.tokens.dtype == np.uint16
        starts = np.concatenate([[0], np.cumsum(chunk.lengths)])
        for j, doc_id in enumerate(chunk.ids):
            assert plan.assign(doc_id) == key
            seen[doc_id] = chunk.tokens[starts[j]:starts[j + 1]].tolist()
    assert seen == {d["id"]: tok.encode(d["text"], add_special_tokens=False).ids for d in docs}


def test_shard_batch_sorts_by_id_and_keeps_each_documents_tokens():
    a = Chunk(["d3", "d1"], np.array([2, 1]), np.array([30, 31, 10], np.uint32))
    b = Chunk(["d2"], np.array([0]), np.array([], np.uint32))
    batch = shard_batch([a, b, Chunk(["d0"], np.array([3]), np.array([1, 2, 70000], np.uint32))], "uint32")
    assert batch.schema.field("tokens").type == pa.large_list(pa.uint32())
    assert batch.column("id").to_pylist() == ["d0", "d1", "d2", "d3"]
    assert batch.column("tokens").to_pylist() == [[1, 2, 70000], [10], [], [30, 31]]
    empty = shard_batch([], "uint16")
    assert empty.num_rows == 0 and empty.schema.field("tokens").type == pa.large_list(pa.uint16())


# --- the Beam stage ----------------------------------------------------------------------------------------


def _clean_texts(clean_dir):
    out = {}
    for path in sorted(pathlib.Path(clean_dir).glob("*.arrow")):
        for row in ipc.open_file(pa.memory_map(str(path))).read_all().to_pylist():
            out[row["id"]] = row["text"]
    return out


def test_token_shards_equal_direct_encoding(tokens_dir, clean_dir, tokenizer_path):
    texts = _clean_texts(clean_dir)
    tok = Tokenizer.from_file(str(tokenizer_path))
    corpus = TokenCorpus(str(tokens_dir))
    seen = {}
    for split in ("train", "val"):
        for shard in corpus.split(split):
            ids = shard.ids.to_pylist()
            assert ids == sorted(ids)
            assert shard.tokens.dtype == np.uint16
            for doc_id, tokens in shard.documents():
                assert doc_id not in seen
                seen[doc_id] = split
                assert tokens.tolist() == tok.encode(texts[doc_id], add_special_tokens=False).ids
    assert set(seen) == set(texts)
    plan = ShardPlan(3, 1, 0.1, 0, "uint16")
    assert all(plan.assign(doc_id)[0] == split for doc_id, split in seen.items())


def test_manifest_describes_the_shards(tokens_dir, tokenizer_path):
    manifest = json.loads((tokens_dir / "manifest.json").read_text())
    assert manifest["tokenizer_sha256"] == hashlib.sha256(tokenizer_path.read_bytes()).hexdigest()
    assert (tokens_dir / manifest["tokenizer"]).resolve() == tokenizer_path.resolve()
    assert manifest["vocab_size"] == 500 and manifest["dtype"] == "uint16"
    assert manifest["special_tokens"] == {"bos": 0, "eos": 0} and manifest["family"] == "decoder"
    train, val = manifest["splits"]["train"], manifest["splits"]["val"]
    assert train["shards"] == [f"train/part-0000{i}-of-00003.arrow" for i in range(3)]
    assert val["shards"] == ["val/part-00000-of-00001.arrow"]
    assert train["documents"] + val["documents"] == 600
    corpus = TokenCorpus(str(tokens_dir))
    for name, entry in (("train", train), ("val", val)):
        split = corpus.split(name)
        assert [len(s) for s in split] == entry["shard_documents"]
        assert [s.num_tokens for s in split] == entry["shard_tokens"]
        assert sum(entry["shard_tokens"]) == entry["tokens"]
    assert not list(tokens_dir.rglob(".*tmp*"))  # temporary files were all renamed


def test_output_is_byte_identical_across_runs_batching_and_workers(tmp_path, tokens_dir, clean_dir, tokenizer_path):
    # Same documents, written as differently cut input shards and encoded in other batch sizes and units.
    resharded = tmp_path / "clean"
    docs = [{"id": i, "text": t, "source": "generated", "metadata": "{}", "annotations": "{}"}
            for i, t in reversed(list(_clean_texts(clean_dir).items()))]
    write_clean_shards(resharded, docs, num_shards=2, batch_rows=77)
    out = tmp_path / "tokens"
    with beam.Pipeline(options=beam.options.pipeline_options.PipelineOptions(
            ["--direct_running_mode=multi_threading", "--direct_num_workers=2"])) as p:
        _ = p | TokenizeShards(str(resharded), str(out), str(tokenizer_path), val_fraction=0.1, num_shards=3,
                               batch_size=7, rows_per_unit=50)
    before = sorted(p.relative_to(tokens_dir) for p in tokens_dir.rglob("*.arrow"))
    assert before == sorted(p.relative_to(out) for p in out.rglob("*.arrow"))
    for rel in before:
        assert (tokens_dir / rel).read_bytes() == (out / rel).read_bytes()
    m1, m2 = (json.loads((d / "manifest.json").read_text()) for d in (tokens_dir, out))
    assert m1["splits"] == m2["splits"]


def test_special_token_text_in_documents_is_encoded_as_text(tmp_path, tokenizer_path):
    docs = [{"id": "a", "text": "before <|endoftext|> after", "source": "s", "metadata": "{}", "annotations": "{}"}]
    write_clean_shards(tmp_path / "clean", docs, num_shards=1)
    _run(tmp_path / "clean", tmp_path / "tokens", tokenizer_path, val_fraction=0.0)
    shard = TokenCorpus(str(tmp_path / "tokens")).split("train").shard(0)
    tokens = shard.document(0).tolist()
    assert 0 not in tokens  # <|endoftext|> is id 0; the text spells it but does not become it
    assert tokens == _direct(tokenizer_path, docs[0]["text"])
    assert Tokenizer.from_file(str(tokenizer_path)).decode(tokens) == docs[0]["text"]


def test_every_planned_shard_is_written_even_when_empty(tmp_path, tokenizer_path):
    docs = make_documents(3, seed=2)
    write_clean_shards(tmp_path / "clean", docs, num_shards=1)
    manifest = _run(tmp_path / "clean", tmp_path / "tokens", tokenizer_path, val_fraction=0.3, num_shards=6)
    shards = manifest["splits"]["train"]["shards"] + manifest["splits"]["val"]["shards"]
    assert len(shards) == 6 + 3 and all((tmp_path / "tokens" / s).exists() for s in shards)
    assert manifest["splits"]["train"]["documents"] + manifest["splits"]["val"]["documents"] == 3
    assert 0 in manifest["splits"]["train"]["shard_documents"]
    empty = TokenCorpus(str(tmp_path / "tokens")).split("train")
    assert sum(len(s) for s in empty) == manifest["splits"]["train"]["documents"]


def test_reader_reads_each_shard_once_without_a_memory_map(tokens_dir):
    """A shard is read (a memory map cut short by another process raises SIGBUS: tests/core/test_own_files_cut.py),
    once: ``tokens`` and ``offsets`` are views of the batch read, no more copies."""
    corpus = TokenCorpus(str(tokens_dir))
    allocated = pa.total_allocated_bytes()
    split = corpus.split("train")
    shards = list(split)
    assert pa.total_allocated_bytes() - allocated <= sum(os.path.getsize(p) for p in split.paths)
    for shard in shards:
        assert not shard.tokens.flags.owndata and not shard.tokens.flags.writeable
        assert shard.offsets.dtype == np.int64 and shard.offsets[0] == 0 and len(shard.offsets) == len(shard) + 1
        assert shard.offsets[-1] == len(shard.tokens)
    assert corpus.special_tokens["eos"] == 0
    assert corpus.tokenizer_path.endswith("tokenizer.json")


def test_a_token_shard_stored_otherwise_is_refused_not_read_wrong(tokens_dir, tmp_path):
    """TokenShards reads a document's tokens at their place in the file: a shard whose tokens are elsewhere (written
    compressed, by pyarrow with other options) is one line, never other bytes read as tokens."""
    from corpusforge.tokenizer.token_shards import TokenShards

    path = sorted((tokens_dir / "train").glob("*.arrow"))[0]
    with pa.OSFile(str(path)) as source:
        table = pa.ipc.open_file(source).read_all()
    copy = tmp_path / path.name
    with pa.ipc.new_file(str(copy), table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_table(table)
    assert len(TokenShards([str(path)])) == table.num_rows
    with pytest.raises(UserError, match="not stored as corpusforge writes them"):
        TokenShards([str(copy)])


def test_run_tokenize_refuses_to_overwrite_unless_asked(tmp_path, clean_dir, tokenizer_path):
    run = tmp_path / "run"
    settings = [f"output.run_dir={run}", f"tokenize.input={clean_dir}", f"tokenize.tokenizer={tokenizer_path}",
                "tokenize.num_shards=2", "tokenize.val_fraction=0.05"]
    manifest = tokenize_on(load_config(None, settings))
    assert manifest["splits"]["train"]["shards"] == ["train/part-00000-of-00002.arrow", "train/part-00001-of-00002.arrow"]
    with pytest.raises(UserError, match="output.overwrite=true"):
        tokenize_on(load_config(None, settings))
    manifest = tokenize_on(load_config(None, settings + ["tokenize.num_shards=1", "output.overwrite=true"]))
    # The earlier plan's shards are gone, not left beside the new ones.
    assert sorted(p.name for p in (run / "tokens" / "train").iterdir()) == ["part-00000-of-00001.arrow"]
    with pytest.raises(UserError, match="tokenizer train"):
        tokenize_on(load_config(None, [f"output.run_dir={tmp_path / 'empty'}"]))


def test_cli_trains_and_tokenizes(tmp_path, clean_dir, capsys):
    from corpusforge.cli import tokenize as tokenize_command
    from corpusforge.cli import tokenizer as tokenizer_command

    parser = argparse.ArgumentParser(prog="corpusforge")
    commands = parser.add_subparsers(dest="command")
    tokenizer_command.register(commands)
    tokenize_command.register(commands)
    run = tmp_path / "run"

    def call(*argv):
        args, extra = parser.parse_known_args(list(argv))
        args.beam_args = extra
        return args.func(args)

    common = ["--set", f"output.run_dir={run}", "--set", f"tokenizer.input={clean_dir}",
              "--set", f"tokenize.input={clean_dir}"]
    assert call("tokenizer", "train", *common, "--family", "encoder", "--vocab-size", "300",
                "--set", "tokenizer.heldout_mb=0.01") == 0
    assert "wordpiece tokenizer for encoder models" in capsys.readouterr().out
    assert call("tokenizer", "report", *common) == 0
    assert "chars/token" in capsys.readouterr().out
    assert call("tokenize", *common, "--val-fraction", "0.25", "--direct_num_workers=1") == 0
    assert "val:" in capsys.readouterr().out
    manifest = json.loads((run / "tokens" / "manifest.json").read_text())
    assert manifest["family"] == "encoder" and manifest["special_tokens"]["mask"] == 4
    assert manifest["tokenizer"] == "../tokenizer/tokenizer.json"


def test_a_failed_overwrite_keeps_the_old_token_shards(tmp_path, clean_dir, tokenizer_path, monkeypatch):
    from corpusforge.tokenizer import tokenize as tokenize_module

    run = tmp_path / "run"
    settings = [f"output.run_dir={run}", f"tokenize.input={clean_dir}", f"tokenize.tokenizer={tokenizer_path}",
                "tokenize.num_shards=2", "tokenize.val_fraction=0.05"]
    tokenize_on(load_config(None, settings))
    before = {p: p.read_bytes() for p in sorted((run / "tokens").rglob("*")) if p.is_file()}

    def full_disk(self, element, *side_inputs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tokenize_module._WriteShard, "process", full_disk)
    with pytest.raises(UserError, match="no space left on the device"):
        tokenize_on(load_config(None, settings + ["tokenize.num_shards=1", "output.overwrite=true"]))
    assert {p: p.read_bytes() for p in sorted((run / "tokens").rglob("*")) if p.is_file()} == before
    assert not [p for p in run.iterdir() if p.name.startswith(".tmp-")]
    monkeypatch.undo()
    (run / "tokens" / "train" / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="notes.txt was not written by corpusforge"):
        tokenize_on(load_config(None, settings + ["output.overwrite=true"]))
    (run / "tokens" / "train" / "notes.txt").unlink()
    manifest = tokenize_on(load_config(None, settings + ["tokenize.num_shards=1", "output.overwrite=true"]))
    assert sorted(p.name for p in (run / "tokens" / "train").iterdir()) == ["part-00000-of-00001.arrow"]
    assert manifest["tokenizer"] == os.path.relpath(tokenizer_path, run / "tokens")


# --- fault isolation -----------------------------------------------------------------------------------------
def test_a_document_whose_encoding_raises_is_left_out_and_listed_without_its_text(
        tmp_path, clean_dir, tokenizer_path, corpus_docs, monkeypatch):
    from corpusforge.tokenizer import tokenize

    victim = sorted(corpus_docs, key=lambda d: d["id"])[7]
    original = tokenize.encode_documents

    def buggy(tokenizer, ids, texts, plan):
        if victim["id"] in ids:
            raise RuntimeError(f"cannot encode {victim['text'][:60]!r}")
        return original(tokenizer, ids, texts, plan)

    monkeypatch.setattr(tokenize, "encode_documents", buggy)
    manifest = _run(clean_dir, tmp_path / "tokens", tokenizer_path, val_fraction=0.1, num_shards=2, batch_size=32)
    errors = manifest["stage_errors"]
    assert errors["documents"] == 1 and errors["by_type"] == {"RuntimeError": 1}
    assert errors["records"] == [{"id": victim["id"], "detail": "tokenize: RuntimeError: cannot encode '…'"}]
    assert sum(s["documents"] for s in manifest["splits"].values()) == len(corpus_docs) - 1  # only it is missing
    assert victim["text"][:40] not in (tmp_path / "tokens" / "manifest.json").read_text()
    # more than build.max_error_fraction of the documents: the run fails and the shards are not marked complete
    # within build.error_allowance (default 5): one document does not fail the run
    from corpusforge.core import rundir

    rundir.record_output(str(tmp_path), "tokens", derived=False)  # as run_tokenize records them (only then deleted)
    tokenize.check_token_errors(manifest, FaultConfig(), str(tmp_path / "tokens" / "manifest.json"))
    assert (tmp_path / "tokens" / "manifest.json").exists()
    with pytest.raises(UserError, match=r"1 of 600 documents .* build.max_error_fraction=0.001 \(and build.error_allowance=0\)"):
        tokenize.check_token_errors(manifest, FaultConfig(error_allowance=0), str(tmp_path / "tokens" / "manifest.json"))
    assert not (tmp_path / "tokens" / "manifest.json").exists()


def test_a_tokenize_whose_every_document_raises_fails_and_publishes_nothing(tmp_path, tokenizer_path, monkeypatch):
    # Before: 3 documents, all raising, are within build.error_allowance (5): exit 0 with empty token shards,
    # while a build whose every record is rejected publishes nothing (NothingKept)
    from corpusforge.tokenizer import tokenize

    clean = tmp_path / "clean"
    write_clean_shards(clean, make_documents(3), num_shards=1)

    def broken(tokenizer, ids, texts, plan):
        raise RuntimeError("a tokenizer bug")

    monkeypatch.setattr(tokenize, "encode_documents", broken)
    run = tmp_path / "run"
    settings = [f"output.run_dir={run}", f"tokenize.input={clean}", f"tokenize.tokenizer={tokenizer_path}"]
    with pytest.raises(UserError) as raised:
        tokenize_on(load_config(None, settings), progress=False)
    message = str(raised.value)
    assert message.startswith("every one of the 3 documents could not be tokenized (RuntimeError 3); nothing was "
                              "published") and "\n" not in message, message
    assert not (run / "tokens").exists()
    assert not run.exists() or not [p for p in run.iterdir() if p.name.startswith(".tmp-")]  # no staging left


def test_an_environment_error_while_encoding_one_document_stops_tokenize_not_leaves_the_document_out(
        tmp_path, clean_dir, tokenizer_path, corpus_docs, monkeypatch):
    # errors of the environment are not errors of a record (corpusforge/core/faults.py): before, the document was
    # left out as a stage error of type OSError and the shards written without it
    from corpusforge.core.errors import resource_error
    from corpusforge.tokenizer import tokenize

    victim = sorted(corpus_docs, key=lambda d: d["id"])[7]
    original = tokenize.encode_documents

    def full_disk(tokenizer, ids, texts, plan):
        if victim["id"] in ids:
            raise OSError(28, "No space left on device", "/scratch/tokens.tmp")
        return original(tokenizer, ids, texts, plan)

    monkeypatch.setattr(tokenize, "encode_documents", full_disk)
    with pytest.raises(Exception) as raised:
        _run(clean_dir, tmp_path / "tokens", tokenizer_path, val_fraction=0.1, num_shards=2, batch_size=32)
    assert str(resource_error(raised.value)).startswith("/scratch/tokens.tmp: no space left on the device")
    assert not (tmp_path / "tokens" / "manifest.json").exists()


def test_fail_fast_tokenize_fails_on_the_first_document_that_raises(tmp_path, clean_dir, tokenizer_path, monkeypatch):
    from corpusforge.tokenizer import tokenize

    def broken(tokenizer, ids, texts, plan):
        raise RuntimeError("planted tokenizer bug")

    monkeypatch.setattr(tokenize, "encode_documents", broken)
    with pytest.raises(Exception, match="planted tokenizer bug"):
        _run(clean_dir, tmp_path / "tokens", tokenizer_path, fail_fast=True)
    assert not (tmp_path / "tokens" / "manifest.json").exists()


@pytest.mark.parametrize("fmt", [ShardFormat("arrow"), ShardFormat("parquet"), ShardFormat("jsonl", "gzip")],
                         ids=lambda f: f.suffix)
def test_clean_shards_in_every_output_format_give_the_same_token_shards(tmp_path, tokens_dir, clean_dir,
                                                                        tokenizer_path, fmt):
    clean = tmp_path / "clean"
    clean.mkdir()
    for n, path in enumerate(sorted(clean_dir.glob("*.arrow"))):
        rows = open_shard(str(path)).read_all().to_pylist()
        write_shard(str(clean / f"part-{n:05d}-of-00003{fmt.suffix}"), DOCUMENT_SCHEMA, rows, fmt, row_group_bytes=20_000)
    out = tmp_path / "tokens"
    _run(clean, out, tokenizer_path, val_fraction=0.1, num_shards=3, batch_size=32, rows_per_unit=64)
    shards = sorted(p.relative_to(tokens_dir) for p in tokens_dir.rglob("*.arrow"))
    assert shards == sorted(p.relative_to(out) for p in out.rglob("*.arrow"))
    assert all((tokens_dir / rel).read_bytes() == (out / rel).read_bytes() for rel in shards)


# --- the marker decides what is replaced; outputs of another clean/ are refused --------------------------------
def test_tokenize_output_at_a_users_folder_never_replaces_its_files(tmp_path, clean_dir, tokenizer_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "manifest.json").write_text('{"the": "user\'s"}')
    (mine / "notes.txt").write_text("mine")
    settings = [f"output.run_dir={tmp_path / 'run'}", f"tokenize.input={clean_dir}", f"tokenize.output={mine}",
                f"tokenize.tokenizer={tokenizer_path}", "tokenize.num_shards=1", "output.overwrite=true"]
    with pytest.raises(UserError, match="no .corpusforge-run.json"):
        tokenize_on(load_config(None, settings))
    assert (mine / "manifest.json").read_text() == '{"the": "user\'s"}' and sorted(p.name for p in mine.iterdir()) == [
        "manifest.json", "notes.txt"]
    # a folder of its own: written, recorded in its marker, then replaced whole by an overwrite
    out = tmp_path / "tokens-elsewhere"
    settings[2] = f"tokenize.output={out}"
    tokenize_on(load_config(None, settings[:-1]))
    assert (out / "manifest.json").exists() and (out / ".corpusforge-run.json").exists()
    (out / "train" / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="notes.txt was not written by corpusforge"):
        tokenize_on(load_config(None, settings))
    (out / "train" / "notes.txt").unlink()
    tokenize_on(load_config(None, settings))
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]


def test_tokens_of_another_clean_are_refused_whatever_flags_made_them(tmp_path, clean_dir, tokenizer_path):
    """build, tokenizer train and tokenize with --input RUN/clean, rebuild from other input: train refuses."""
    from corpusforge.core import rundir

    run = tmp_path / "run"
    shutil.copytree(clean_dir, run / "clean")
    rundir.write_marker(str(run), {"outputs": {"clean": rundir.listing(str(run / "clean"))},
                                   "corpus_fingerprint": rundir.corpus_fingerprint(str(run / "clean"))})
    settings = [f"output.run_dir={run}", f"tokenize.input={run / 'clean'}", f"tokenize.tokenizer={tokenizer_path}",
                "tokenize.num_shards=1"]
    tokenize_on(load_config(None, settings))
    rundir.check_fresh(str(run), "tokens")  # made from this clean/
    marker = rundir.read_marker(str(run))  # a rebuild from other input: clean/ and its fingerprint change
    marker["corpus_fingerprint"] = "another build"
    rundir.write_marker(str(run), marker)
    with pytest.raises(UserError, match="earlier build.*corpusforge tokenize --overwrite"):
        rundir.check_fresh(str(run), "tokens")


def _rchar() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


@pytest.mark.parametrize("fmt", ["arrow", "arrow-file", "parquet", "jsonl"])
def test_rows_and_text_bytes_are_counted_from_metadata(tmp_path, fmt):
    """Tokenize's progress total (``_documents``) and units of work (``_PlanUnits``), and tokenizer training's
    ``text_bytes``, equal a full read's counts; of an Arrow shard they read the batches' headers and two offsets
    of each batch's text, not the text (the old counts read every batch whole)."""
    from corpusforge.core.shard_files import ShardFormat, write_shard
    from corpusforge.tokenizer.corpus import text_bytes
    import pyarrow.compute as pc

    from corpusforge.tokenizer.tokenize import _documents, _PlanUnits

    schema = pa.schema([pa.field("id", pa.string()), pa.field("text", pa.large_string())])
    rows = [{"id": f"doc-{i:05d}", "text": "wörds and 🙂 " * (i % 300 + 1)} for i in range(3_000)]
    path = tmp_path / ("part-00000-of-00001" + (".arrow" if fmt.startswith("arrow") else ShardFormat(fmt).suffix))
    if fmt == "arrow-file":
        with pa.ipc.new_file(str(path), schema) as writer:
            writer.write_table(pa.Table.from_pylist(rows, schema), max_chunksize=700)
    else:
        write_shard(str(path), schema, rows, ShardFormat(fmt), row_group_bytes=1 << 20)
    table = open_shard(str(path)).read_all()
    expected = (table.num_rows, int(pc.sum(pc.binary_length(table.column("text"))).as_py()))
    before = _rchar()
    assert text_bytes([str(path)]) == expected and _documents([str(path)]) == len(rows)
    units = list(_PlanUnits(256).process(str(path)))
    read = _rchar() - before
    assert sum(stop - start for _, _, start, stop in units) == len(rows)
    if fmt.startswith("arrow"):  # a ~10 MB shard: headers and offsets are a few KB
        assert read < 64 * 1024, (read, path.stat().st_size)


def test_a_clean_shard_changed_after_tokenize_planned_its_units_is_one_line(tmp_path, tokenizer_path):
    """Units are planned from the batches' headers and encoded from the batches read later: a batch that no longer
    has the rows its header had is one line, not a unit sliced short (its documents silently left out)."""
    from corpusforge.tokenizer.tokenize import ShardPlan, _EncodeUnits, _PlanUnits

    schema = pa.schema([pa.field("id", pa.string()), pa.field("text", pa.large_string())])
    path = tmp_path / "part-00000-of-00001.arrow"
    write_shard(str(path), schema, [{"id": f"d{i:05d}", "text": f"text {i}"} for i in range(2_000)])
    units = list(_PlanUnits(256).process(str(path)))
    write_shard(str(path), schema, [{"id": f"d{i:05d}", "text": f"text {i}"} for i in range(1_500)])
    encode = _EncodeUnits(str(tokenizer_path), ShardPlan.for_input(1_000, 0.1, 0, "uint16", num_shards=1), 64)
    encode.setup()
    with pytest.raises(UserError, match=r"record batch 1 has 476 rows, not the 512 or more its header said"):
        for unit in units:
            list(encode.process(unit))


def test_a_small_corpus_gets_a_validation_split_big_enough_to_measure(tmp_path, clean_dir, corpus_docs, tokenizer_path):
    # val_fraction 0.01 of 600 documents sent ~6 documents to val (bits per byte on them is noise); the default
    # tokenize.min_val_documents (100) raises it to 10% of the corpus here, 60: the 60 lowest split hashes
    from corpusforge.tokenizer.config import TokenizeConfig
    from corpusforge.tokenizer.tokenize import split_unit

    cfg = TokenizeConfig(input=str(clean_dir), tokenizer=str(tokenizer_path), output=str(tmp_path / "a"), num_shards=2)
    assert cfg.val_fraction == 0.01 and cfg.min_val_documents == 100
    with TestPipeline() as p:
        _ = p | TokenizeShards.from_config(cfg, str(tmp_path))
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["splits"]["val"]["documents"] == 60, manifest["splits"]
    lowest = sorted(corpus_docs, key=lambda d: split_unit(d["id"], 0))[:60]
    val = open_shard(str(tmp_path / "a" / "val" / "part-00000-of-00001.arrow")).read_all().column("id").to_pylist()
    assert sorted(val) == sorted(d["id"] for d in lowest)
    plan = ShardPlan(1, 1, manifest["val_threshold"], 0, "uint16")  # what evaluate reads back
    assert {d["id"] for d in corpus_docs if plan.assign(d["id"])[0] == "val"} == {d["id"] for d in lowest}
    assert manifest["val_fraction"] == 0.01 and manifest["min_val_documents"] == 100
    # the same input, the same bytes; 0 is the fraction alone (~6 here)
    cfg.output = str(tmp_path / "b")
    with TestPipeline() as p:
        _ = p | TokenizeShards.from_config(cfg, str(tmp_path))
    for rel in ("val/part-00000-of-00001.arrow", "train/part-00000-of-00002.arrow"):
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()
    cfg.output, cfg.min_val_documents = str(tmp_path / "c"), 0
    with TestPipeline() as p:
        _ = p | TokenizeShards.from_config(cfg, str(tmp_path))
    fraction_alone = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert fraction_alone["splits"]["val"]["documents"] < 20 and fraction_alone["val_threshold"] == 0.01


def test_tokenize_output_elsewhere_is_written_under_that_folders_lock(tmp_path, clean_dir, tokenizer_path):
    """tokenize.output outside the run is a folder with its own marker: tokenize held only the run's lock and read,
    changed and wrote that marker unguarded (a second command writing there lost its record, or both wrote shards
    into one folder). Now it holds the folder's lock too."""
    from tests.lock_holder import held_by_another_process

    out = tmp_path / "tokens-elsewhere"
    settings = [f"output.run_dir={tmp_path / 'run'}", f"tokenize.input={clean_dir}", f"tokenize.output={out}",
                f"tokenize.tokenizer={tokenizer_path}", "tokenize.num_shards=1"]
    with held_by_another_process(out, "tokenize") as pid:
        with pytest.raises(UserError, match=rf"in use by `corpusforge tokenize` \(pid {pid} on "):
            tokenize_on(load_config(None, settings), progress=False)
    assert not (out / "manifest.json").exists() and not (out / ".corpusforge-run.json").exists()
    tokenize_on(load_config(None, settings), progress=False)
    assert (out / "manifest.json").is_file() and not (out / ".corpusforge.lock").exists()
