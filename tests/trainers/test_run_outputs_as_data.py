"""The model-side commands (evaluate, embed, finetune, predict) read a run's entries by the build's rule
(``rundir.check_model_input``, the same ``rundir.not_documents`` the build's readers use): a run's documents are
read, an entry that holds no documents is refused in one line naming what to pass, before any model loads."""
import json

import pytest

from corpusforge.cli.main import main
from corpusforge.core import rundir
from corpusforge.core.errors import UserError
from corpusforge.trainers.evaluate import read_documents
from corpusforge.trainers.finetune.data import read_records


def make_run(tmp_path):
    """A run directory as a build leaves it: clean/ and rejected/ recorded in its marker."""
    run = tmp_path / "run"
    for name, row in (("clean", {"id": "a", "text": "a kept document"}),
                      ("rejected", {"reason": "malformed_json", "path": "x.jsonl", "preview": "{oops"})):
        (run / name).mkdir(parents=True)
        (run / name / "part-00000-of-00001.jsonl").write_text(json.dumps(row) + "\n")
        rundir.record_output(str(run), name, ["part-00000-of-00001.jsonl"])
    return run


@pytest.mark.parametrize("entry", ["rejected", "rejected/part-00000-of-00001.jsonl"])
def test_a_runs_rejected_records_are_refused_as_data_naming_what_to_pass(tmp_path, entry):
    # Before: evaluate --data RUN/rejected read every row, each skipped as missing_text, and measured nothing.
    run = make_run(tmp_path)
    with pytest.raises(UserError, match=r"--data .*rejected.* is not documents: .*run/rejected/part-00000-of-00001"
                                        r"\.jsonl holds rejected input records.*; pass its documents, .*run/clean") as info:
        read_documents(str(run / entry))
    assert "\n" not in str(info.value)
    assert [d.text for d in read_documents(str(run / "clean"))] == ["a kept document"]


def test_finetune_and_predict_refuse_a_runs_rejected_shard(tmp_path):
    run = make_run(tmp_path)
    with pytest.raises(UserError, match=r"finetune\.train .* is not documents: .* holds rejected input records"):
        read_records(run / "rejected" / "part-00000-of-00001.jsonl", flag="finetune.train")


@pytest.mark.parametrize("command", ["evaluate", "embed", "predict"])
def test_the_refusal_comes_before_the_model_loads(tmp_path, capsys, command):
    run = make_run(tmp_path)
    data = run / "rejected" / ("part-00000-of-00001.jsonl" if command == "predict" else "")  # predict: a file
    extra = {"embed": ["--out", str(tmp_path / "v.arrow")], "predict": ["--out", str(tmp_path / "p.jsonl")]}
    assert main([command, "--model", str(tmp_path / "no-model"), "--data", str(data), *extra.get(command, [])]) == 2
    err = capsys.readouterr().err
    assert "holds rejected input records" in err and err.count("\n") == 1, err
    assert not (tmp_path / rundir.MARKER).exists()  # --out claimed nothing for a refused command (predict did)


def test_the_marker_a_command_left_in_a_users_folder_is_not_read_as_data(tmp_path):
    # predict --out data/preds.jsonl leaves data/.corpusforge-run.json: evaluate --data data/ read it as JSON
    # Lines, one record skipped as missing_text; the build skips it as bookkeeping, and so does evaluate now.
    from corpusforge.core.run_lock import claim_file

    data = tmp_path / "data"
    data.mkdir()
    (data / "held-out.jsonl").write_text(json.dumps({"text": "a held-out document"}) + "\n")
    claim_file(str(data / "preds.jsonl"), "predict")
    (data / "preds.jsonl").write_text(json.dumps({"id": "a", "text": "predicted"}) + "\n")
    skipped = {}
    assert [d.text for d in read_documents(str(data), skipped=skipped)] == ["a held-out document", "predicted"]
    assert skipped == {}


@pytest.mark.parametrize("through", ["folder", "parent", "file", "up from a link"])
def test_a_link_to_a_runs_entry_is_the_entry(tmp_path, through):
    # Every path a name can resolve to: a link to the folder (LINK -> RUN/rejected), to the run above it, or to
    # the shard itself. Before, only a link that was the file itself was followed: LINK/part-0.jsonl read the
    # rejected rows (evaluate: each skipped as missing_text; finetune: trained on them).
    run = make_run(tmp_path)
    link = tmp_path / "link"
    shard = "part-00000-of-00001.jsonl"
    target, named = {"folder": (run / "rejected", link / shard), "parent": (run, link / "rejected" / shard),
                     "file": (run / "rejected" / shard, link),
                     # LINK/.. is the folder above LINK's target, as the kernel reads it (not LINK's own parent)
                     "up from a link": (run / "clean", tmp_path / "link" / ".." / "rejected" / shard)}[through]
    link.symlink_to(target)
    with pytest.raises(UserError, match="holds rejected input records"):
        read_records(named, flag="--train")
    with pytest.raises(UserError, match="holds rejected input records"):
        read_documents(str(named))
    clean = tmp_path / "clean-link"
    clean.symlink_to(run / "clean")
    assert [d.text for d in read_documents(str(clean))] == ["a kept document"]
