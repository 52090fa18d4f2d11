"""corpusforge finetune and predict end to end, from CSV, and their one-line errors."""
import csv
import json

import pytest

from corpusforge.cli.main import main
from tests.trainers.finetune.conftest import make_base, task_records

pytest.importorskip("peft")


def write_csv(path, rows):
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_finetune_then_predict_from_csv(tmp_path, capsys):
    base = make_base(tmp_path / "model", "gpt2")
    train = write_csv(tmp_path / "train.csv", [{"sentence": r["text"], "y": r["label"], "id": r["id"]}
                                                for r in task_records("classify", 48, 0)])
    val = write_csv(tmp_path / "val.csv", [{"sentence": r["text"], "y": r["label"], "id": r["id"]}
                                            for r in task_records("classify", 16, 1)])
    out = tmp_path / "out"
    assert main(["finetune", "--model", str(base), "--task", "classify", "--train", str(train), "--validation",
                 str(val), "--text-field", "sentence", "--label-field", "y", "--method", "lora", "--epochs", "4",
                 "--batch-size", "8", "--lr", "0.01", "--lora-r", "4", "--merge", "--out", str(out),
                 "--device", "cpu", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["val_accuracy"] == 1.0 and summary["trainable_params"] < summary["total_params"] / 10
    assert {p.name for p in out.iterdir()} >= {"adapter", "merged", "base", "metrics.json", "labels.json",
                                               "finetune.json", "checkpoints"}
    preds = tmp_path / "preds.jsonl"
    assert main(["predict", "--model", str(out), "--data", str(val), "--out", str(preds)]) == 0
    scored = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert scored["accuracy"] == 1.0 and scored["predictions"] == 16
    rows = [json.loads(line) for line in preds.read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"r{i}" for i in range(16)]
    assert all(set(r) == {"id", "label", "score"} and 0.5 <= r["score"] <= 1 for r in rows)
    # --out replaces a file predict wrote (its folder's marker records it), never one of the user's: before, a
    # user's file and even --data itself were replaced by the predictions
    preds.write_text("stale\n")
    assert main(["predict", "--model", str(out), "--data", str(val), "--out", str(preds)]) == 0
    assert len(preds.read_text().splitlines()) == 16
    mine, data = tmp_path / "mine.jsonl", val.read_bytes()
    mine.write_text("precious\n")
    for target in (mine, val):
        capsys.readouterr()
        assert main(["predict", "--model", str(out), "--data", str(val), "--out", str(target)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and f"{target} exists and corpusforge did not write it" in err, err
    assert mine.read_text() == "precious\n" and val.read_bytes() == data
    assert main(["evaluate", "--model", str(out), "--data", str(val)]) == 2
    assert "fine-tuned task model; score it on labelled records with corpusforge predict" in capsys.readouterr().err


def test_errors_are_one_line(tmp_path, capsys):
    base = make_base(tmp_path / "model", "bert")
    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"text": "cat", "label": "a"}) + "\n" + json.dumps({"txt": "dog", "label": "b"}) + "\n")
    assert main(["finetune", "--model", str(base), "--train", str(train), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    # the fields the record has and the one to name (before: "has no 'text' field; name the field with --text-field
    # or fix the data", which left the user to open the file)
    assert err == (f"corpusforge: error: {train}: record 1 has no field 'text'; name the text field with --text-field "
                   "txt (finetune.text_field); records have fields: txt, label")
    train.write_text(json.dumps({"sentence": "the cat sat", "language": "en"}) + "\n")
    assert main(["finetune", "--model", str(base), "--train", str(train), "--out", str(tmp_path / "o"),
                 "--text-field", "sentence"]) == 2
    assert capsys.readouterr().err.strip() == (  # a label is no longest string: the fields, and the flag
        f"corpusforge: error: {train}: record 0 has no field 'label'; name yours with --label-field "
        "(finetune.label_field); records have fields: sentence, language")
    train.write_text(json.dumps({"text": "", "label": "a"}) + "\n")
    assert main(["finetune", "--model", str(base), "--train", str(train), "--out", str(tmp_path / "o")]) == 2
    assert "record 0 has an empty 'text' field; fill it in or drop the record" in capsys.readouterr().err
    assert main(["predict", "--model", str(base), "--data", str(train), "--out", str(tmp_path / "p.jsonl")]) == 2
    assert "not a finished `corpusforge finetune` output" in capsys.readouterr().err
    assert main(["finetune", "--model", str(base), "--train", str(train), "--out", str(tmp_path / "o"),
                 "--method", "prefix", "--merge"]) == 2
    assert "finetune.merge applies to method lora only" in capsys.readouterr().err


def test_finetune_method_elmo_then_predict(tmp_path, capsys):
    from tests.runs import train_on
    from tests.trainers.finetune.conftest import write_jsonl
    from tests.trainers.test_elmo import make_elmo_run
    from tests.trainers.test_train import config

    (tmp_path / "run").mkdir()
    run = make_elmo_run(tmp_path / "run")
    model = train_on(config(run, "train.objective=bilm", "train.max_steps=8", "train.eval_batches=1")).model_dir
    train = write_jsonl(tmp_path / "train.jsonl", task_records("classify", 48, 0))
    val = write_jsonl(tmp_path / "val.jsonl", task_records("classify", 16, 1))
    out = tmp_path / "out"
    assert main(["finetune", "--model", str(model), "--method", "elmo", "--train", str(train), "--validation",
                 str(val), "--epochs", "6", "--batch-size", "8", "--lr", "0.05", "--out", str(out),
                 "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["val_accuracy"] == 1.0 and summary["trainable_params"] == 134
    preds = tmp_path / "preds.jsonl"
    assert main(["predict", "--model", str(out), "--data", str(val), "--out", str(preds)]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["accuracy"] == 1.0


def test_progress_off_a_terminal_is_plain_lines(tmp_path, capsys):
    # stderr here is not a terminal (a CI log, a pipe): tqdm wrote its frames joined by carriage returns there
    base = make_base(tmp_path / "model", "gpt2")
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in task_records("classify", 24, 0)))
    assert main(["finetune", "--model", str(base), "--task", "classify", "--train", str(train), "--method", "lora",
                 "--epochs", "2", "--batch-size", "8", "--out", str(tmp_path / "out"), "--device", "cpu"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    epochs = [line for line in err.splitlines() if line.startswith("finetune epoch")]
    assert [line.split(":")[0] for line in epochs] == ["finetune epoch 1/2 (step 3)", "finetune epoch 2/2 (step 6)"]
    assert all(": train loss " in line for line in epochs), epochs
    assert [line for line in err.splitlines() if line.startswith("finetune: done in ")][0].endswith(
        ", epoch 2/2, loss " + err.split(", epoch 2/2, loss ")[-1].split()[0]), err
    assert "step 6 of 6" in err


def test_a_tiny_set_on_the_default_plan_prints_a_few_lines_not_one_an_epoch(tmp_path, capsys):
    # 4 records at batch 8: one step an epoch, and the default plan runs 300 of them (finetune.min_steps): one
    # progress line an epoch was 300 lines on stderr and no validation figure before the end; now one bar for
    # the run (plain lines here: a tenth of it at most every 10 s, a minute at least) and a line a validation
    base = make_base(tmp_path / "model", "gpt2")
    train, val = tmp_path / "train.jsonl", tmp_path / "val.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in task_records("classify", 4, 0)))
    val.write_text("".join(json.dumps(r) + "\n" for r in task_records("classify", 40, 1)))
    assert main(["finetune", "--model", str(base), "--task", "classify", "--train", str(train), "--validation",
                 str(val), "--method", "lora", "--batch-size", "8", "--out", str(tmp_path / "out"),
                 "--device", "cpu"]) == 0
    err = capsys.readouterr().err.splitlines()
    validations = [line for line in err if line.startswith("finetune epoch ")]
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["planned_epochs"] == 300 and len(metrics["epochs"]) >= 20
    assert 10 <= len(validations) <= 11 and validations[-1].startswith("finetune epoch 300/300 (step 300): ")
    assert all("val accuracy " in line for line in validations), validations
    assert len([line for line in err if line.startswith("finetune")]) <= 11 + 12, err
