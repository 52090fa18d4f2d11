"""The model commands end to end on a trained run: export (with the card from the run's manifests), generate,
evaluate, and their one-line errors."""
import json

import pytest

from corpusforge.cli.main import main
from tests.trainers.conftest import make_run

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from tests.trainers.test_train import config
    from tests.runs import train_on

    run_dir = make_run(tmp_path_factory.mktemp("run"), n_train=120, n_val=20)
    train_on(config(run_dir, "train.objective=clm", "train.max_steps=4", "train.eval_every=0"))
    # What a build leaves beside the model (the fields the card reads).
    (run_dir / "manifest.json").write_text(json.dumps({
        "corpusforge_version": "0.1.0", "rows": 140, "bytes": 52_000, "stages": ["normalize", "quality", "dedup"],
        "config": {"inputs": [{"name": "web", "path": "data/web.jsonl"}, {"name": "books", "path": "b.parquet"}]}}))
    (run_dir / "stats.json").write_text(json.dumps({
        "accounting": {"input": 150, "kept": 140, "removed": 8, "rejected": 2},
        "removed": {"by_stage": {"dedup": {"total": 8}}}}))
    return run_dir


def test_export_writes_a_directory_transformers_loads_with_a_card_from_the_manifests(run, tmp_path, capsys):
    out = tmp_path / "export"
    assert main(["export", str(run / "model"), str(out)]) == 0
    model = transformers.AutoModelForCausalLM.from_pretrained(out)
    assert type(model).__name__ == "GPT2LMHeadModel"
    card = (out / "README.md").read_text()
    assert "pipeline_tag: text-generation" in card and "`web`, `books`" in card
    assert "150 read, 140 kept, 8 removed, 2 rejected" in card and "dedup 8" in card
    assert "train 120 documents" in card  # from tokens/manifest.json
    assert json.loads((out / "generation_config.json").read_text())["eos_token_id"] == 2
    # The run's own model directory loads in AutoTokenizer too, with the model's length.
    tok = transformers.AutoTokenizer.from_pretrained(run / "model")
    assert tok.model_max_length == 32 and tok.eos_token == "</s>" and tok.pad_token == "<pad>"
    assert main(["export", str(run / "model"), str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_generate_and_evaluate_commands_print_json(run, tmp_path, capsys):
    assert main(["generate", "--model", str(run / "model"), "--prompt", "The cat", "--prompt", "A dog",
                 "--greedy", "--max-new-tokens", "5", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["prompt"] for r in rows] == ["The cat", "A dog"] and all("completion" in r for r in rows)
    data = tmp_path / "held-out.jsonl"
    data.write_text(json.dumps({"text": "The cat sleeps under the tree.", "source": "web"}) + "\n")
    assert main(["evaluate", "--model", str(run / "model"), "--data", str(data), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {"loss", "bits_per_byte", "tokens", "bytes"} <= set(result) and result["bytes"] == 30
    assert main(["evaluate", "--model", str(run / "model"), "--data", str(run)]) == 2  # no clean shards here
    assert main(["fill-mask", "--model", str(run / "model"), "a <mask>"]) == 2
    assert "needs an encoder" in capsys.readouterr().err
    assert main(["generate", "--model", str(tmp_path), "--prompt", "x"]) == 2
    assert "no config.json" in capsys.readouterr().err


def test_prompts_file_and_fill_mask_json(run, tmp_path, capsys):
    from tests.trainers.exports import make_model_dir

    prompts = tmp_path / "prompts.txt"
    prompts.write_text("The cat\n\nA dog\n")
    assert main(["generate", "--model", str(run / "model"), "--prompts", str(prompts), "--max-new-tokens", "3",
                 "--top-k", "5", "--seed", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("The cat") and lines[1].startswith("A dog")
    bert = make_model_dir(tmp_path / "bert", "bert")
    assert main(["fill-mask", "--model", str(bert), "the cat [MASK] over the house.", "--top-k", "4", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 4 and all({"token_str", "score"} <= set(r) for r in rows)
    assert rows == sorted(rows, key=lambda r: -r["score"])


def test_evaluate_reads_what_the_build_reads_with_its_error_handling(run, tmp_path, capsys):
    # issue #36: the demo's own sample/truncated.jsonl.gz ended evaluate in a 30-line EOFError; a record the
    # build rejects (bad JSON, too deep, a FIFO) is skipped by evaluate, and one line says so
    import gzip
    import os

    from corpusforge.pipeline.sample import write_sample

    sample = write_sample(tmp_path / "sample", documents=60).directory
    (sample / "deep.jsonl").write_bytes(b'{"text": "x", "m": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    os.mkfifo(sample / "pipe.jsonl")
    cut = gzip.compress(b'{"text": "The cat sleeps."}\n' * 200, mtime=0)
    (sample / "zz.jsonl.gz").write_bytes(cut[: len(cut) // 2])
    capsys.readouterr()
    assert main(["evaluate", "--model", str(run / "model"), "--data", str(sample), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["documents"] > 50
    [line] = err.strip().splitlines()
    assert line.startswith(
        "skipped 9 unreadable records (invalid_utf8 1, malformed_json 1, missing_text 3, not_a_regular_file 1, "
        "too_deep 1, truncated_compressed_file 2); e.g. "), line
    assert line.endswith("web.jsonl.gz: no string field 'text'"), line  # the first record without text, named


@pytest.mark.parametrize("argv", [["export", "{run}", "{out}"], ["generate", "--model", "{run}", "--prompt", "x"],
                                  ["evaluate", "--model", "{run}", "--data", "{out}"],
                                  ["embed", "--model", "{run}", "--data", "{out}", "--out", "{out}/e.arrow"]])
def test_a_run_directory_given_as_the_model_names_its_model_folder(tmp_path, capsys, argv):
    # every other command's -o is the run, so `export RUN OUT` is a newcomer's first try
    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    (run / "model" / "config.json").write_text("{}")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.jsonl").write_text('{"text": "x"}\n')
    assert main([a.format(run=run, out=tmp_path / "out") for a in argv]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"corpusforge: error: {run} holds no config.json; ")
    assert line.endswith(f"; {run} is a run directory: pass {run / 'model'}"), line
