"""What every command shares: --config, --run-dir/-o on a run, choices from the config's own types, and
configuration errors that name the nearest valid key or value."""
import argparse

import pytest

from corpusforge.cli.main import COMMANDS, main, make_parser
from corpusforge.cli.options import choices
from corpusforge.config import load_config
from corpusforge.core.config_loader import ConfigError

# Commands that work on a run directory (ablate writes many: its --out/-o; rethreshold reads one, writes --out/-o).
RUN_COMMANDS = [["build"], ["demo"], ["tokenizer", "train"], ["tokenizer", "report"], ["tokenize"], ["train"],
                ["report"], ["rethreshold"]]


def _leaves(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaves(child, (*path, name))


def _options(parser):
    return {o for a in parser._actions for o in a.option_strings}


def test_every_command_takes_a_config_file():
    leaves = dict(_leaves(make_parser()))
    assert {path[0] for path in leaves} == set(COMMANDS)
    assert [" ".join(p) for p, parser in leaves.items() if not {"--config", "-c"} <= _options(parser)] == []


@pytest.mark.parametrize("command", RUN_COMMANDS, ids=" ".join)
def test_every_command_on_a_run_takes_run_dir(command):
    leaves = dict(_leaves(make_parser()))
    assert "--run-dir" in _options(leaves[tuple(command)])
    if command != ["report"]:  # report's -o has always been the page it writes
        assert "-o" in _options(leaves[tuple(command)])


@pytest.mark.parametrize("command", [["tokenize"], ["tokenizer", "train"], ["tokenizer", "report"], ["train"],
                                     ["report"]], ids=" ".join)
def test_run_dir_reaches_the_command(command, tmp_path, capsys):
    run = tmp_path / "elsewhere"
    assert main([*command, "--run-dir", str(run)]) == 2
    assert str(run) in capsys.readouterr().err  # the error names the run it was pointed at


def test_cli_choices_are_the_config_values():
    from corpusforge.tokenizer.config import TokenizerConfig
    from corpusforge.trainers.config import TrainConfig

    leaves = dict(_leaves(make_parser()))

    def offered(command, flag):
        return next(a.choices for a in leaves[command]._actions if flag in a.option_strings)

    assert offered(("train",), "--family") == choices(TrainConfig, "model.family")
    assert "elmo" in offered(("train",), "--family")  # the config took it; the flag did not
    assert offered(("train",), "--size") == choices(TrainConfig, "model.size")
    assert offered(("train",), "--dtype") == choices(TrainConfig, "dtype")
    assert offered(("tokenizer", "train"), "--kind") == choices(TokenizerConfig, "kind")


@pytest.mark.parametrize("override,message", [
    ("quality.gopher.min_word=80", "unknown key quality.gopher.min_word; did you mean quality.gopher.min_words?"),
    ("outptu.run_dir=x", "unknown key outptu; did you mean output?"),
    ("normalize.unicode_form=nfd", "(did you mean 'NFC'?)"),
    ("train.objective=clmm", "(did you mean 'clm'?)"),
])
def test_a_near_miss_names_the_nearest_valid_key_or_value(override, message):
    with pytest.raises(ConfigError) as error:
        load_config(overrides=[override])
    assert message in str(error.value)


def test_a_far_miss_lists_what_is_allowed():
    with pytest.raises(ConfigError, match=r"unknown key output\.zzzz; allowed keys in output: .*shard_target_mb"):
        load_config(overrides=["output.zzzz=3"])


def test_rethreshold_reads_new_thresholds_from_a_config_file(tmp_path):
    from corpusforge.cli.rethreshold import config_overrides

    config = tmp_path / "new.yaml"
    config.write_text("quality:\n  gopher: {min_words: 80}\noutput: {run_dir: x}\n")
    assert config_overrides(str(config)) == ["quality.gopher.min_words=80"]
