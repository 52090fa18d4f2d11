"""The command's entry: --help without the heavy libraries, exit codes, the heap frozen before exit."""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys

import pytest

from corpusforge.cli import main as cli

HEAVY = ("apache_beam", "torch", "transformers", "presidio_analyzer", "spacy", "peft", "datasketch", "scipy")

_SCRIPT = """
import contextlib, io, json, sys
from corpusforge.cli.main import COMMANDS, main
heavy = json.loads(sys.argv[1])
seen = {}
for command in [None, *COMMANDS]:
    argv = ["--help"] if command is None else [command, "--help"]
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main(argv)
        except SystemExit:
            pass
    assert "usage: corpusforge" in out.getvalue(), (command, out.getvalue()[:200])
    seen[command or "corpusforge"] = [name for name in heavy if name in sys.modules]
print(json.dumps(seen))
"""


def test_help_imports_no_heavy_library():
    # In a fresh process: the test session itself has imported Beam and the rest long ago.
    done = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(HEAVY)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert "corpusforge" in seen and "build" in seen and "train" in seen
    # Each command's list holds what was imported up to and including its --help: all must stay empty.
    assert {command: names for command, names in seen.items() if names} == {}


def test_run_exits_with_mains_code_after_freezing_the_heap(monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "main", lambda: calls.append("main") or 3)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))  # not this test process's real heap
    with pytest.raises(SystemExit) as exit_:
        cli.run()
    assert exit_.value.code == 3 and calls == ["main", "freeze"]


def test_the_command_exits_with_the_error_code(tmp_path):
    done = subprocess.run([sys.executable, "-m", "corpusforge", "build", "--input", str(tmp_path / "none.jsonl"),
                           "--run-dir", str(tmp_path / "run")], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"corpusforge: error: input {tmp_path / 'none.jsonl'} matches no "
                                                "files; check the path or glob"]


def _help(parser, argv) -> str:
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as out, pytest.raises(SystemExit):
        parser.parse_known_args(argv)
    return out.getvalue()


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_the_command_being_run_parses_as_with_every_command(command):
    # main() registers only the subcommand it runs: the same arguments, defaults and help as with all of them.
    alone, every = cli.make_parser(only=command), cli.make_parser()
    assert cli._command([command, "--help"]) == command
    assert _help(alone, [command, "--help"]) == _help(every, [command, "--help"])
    if command == "build":
        argv = ["build", "-i", "a.jsonl", "--run-dir", "out", "--set", "dedup.enabled=false", "--runner=X"]
        (a, extra_a), (b, extra_b) = alone.parse_known_args(argv), every.parse_known_args(argv)
        assert vars(a) == vars(b) and extra_a == extra_b == ["--runner=X"]


@pytest.mark.parametrize("argv", [[], ["--help"], ["--version"], ["bogus"], ["-i", "x", "build"]])
def test_anything_but_a_command_first_gets_every_command(argv):
    assert cli._command(argv) is None


def _subparsers(parser, name="corpusforge"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                yield f"{name} {command}", sub
                yield from _subparsers(sub, f"{name} {command}")


def test_every_option_with_a_default_shows_it_in_its_help():
    # README: "`corpusforge COMMAND --help` explains each option and its default". An option whose default is a
    # value (not "not given": None, False, [] or suppressed) says it, in its own words or by the formatter's.
    missing = []
    for name, sub in _subparsers(cli.make_parser()):
        for action in sub._actions:
            default = action.default
            if (not action.option_strings or isinstance(action, (argparse._HelpAction, argparse._VersionAction))
                    or default in (None, False, [], "", argparse.SUPPRESS)):
                continue
            if "default" not in sub._get_formatter()._format_action(action).lower():
                missing.append(f"{name} {action.option_strings[0]} (default {default!r})")
    assert not missing, "options whose --help does not show their default: " + ", ".join(missing)


def test_no_help_says_a_default_that_means_not_given():
    # ArgumentDefaultsHelpFormatter printed "(default: None)" for required options such as --model, and
    # "(default: False)" / "(default: [])" for switches and lists: 16 such notes said nothing.
    noise = [f"{name}: {note}" for name, sub in _subparsers(cli.make_parser())
             for note in ("(default: None)", "(default: False)", "(default: [])")
             if note in " ".join(sub.format_help().split())]
    assert not noise, noise


def test_a_reader_that_stops_early_gets_no_error(tmp_path):
    # `corpusforge inspect RUN | head` printed "corpusforge: error: [Errno 32] Broken pipe; check the path and
    # its permissions" once head had its lines.
    import pyarrow as pa
    import pyarrow.parquet as pq

    shard = tmp_path / "part-00000-of-00001.parquet"
    pq.write_table(pa.table({"id": [str(i) for i in range(3000)], "text": ["word " * 40] * 3000}), shard)
    done = subprocess.run(f"{sys.executable} -m corpusforge inspect {shard} --rows 3000 | head -n 2",
                          shell=True, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert len(done.stdout.splitlines()) == 2
    assert done.stderr == "", done.stderr


def test_a_broken_pipe_that_is_not_stdout_is_reported(tmp_path):
    # A worker's pipe breaking raises the same BrokenPipeError as a closed `| head`: that one ended with 141 and
    # said nothing, as if the command had finished its output.
    script = ("import sys\n"
              "import corpusforge.cli.inspect as inspect\n"
              "def broken(args):\n"
              "    raise BrokenPipeError(32, 'Broken pipe')\n"
              "inspect.cmd_inspect = broken\n"
              "from corpusforge.cli.main import main\n"
              "sys.exit(main(['inspect', 'anything']))\n")
    with open(tmp_path / "out.txt", "w") as out:
        done = subprocess.run([sys.executable, "-c", script], stdout=out, stderr=subprocess.PIPE, text=True,
                              timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("corpusforge: error: [Errno 32] Broken pipe") and done.stderr.count("\n") == 1


_INTERRUPTED_BUILD = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as on a terminal (a background job ignores SIGINT)
import corpusforge.pipeline.normalize.stage as stage
real = stage.normalize_and_count
def interrupted(*args, **kwargs):  # Ctrl-C while a DoFn runs
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
    return real(*args, **kwargs)
stage.normalize_and_count = interrupted
from corpusforge.cli.main import run
sys.argv = ["corpusforge", "build", "--input", sys.argv[1], "--run-dir", sys.argv[2], "--no-progress",
            "--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]
run()
"""


_INTERRUPT_LEAVING_A_THREAD = """
import os, signal, sys, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)
import corpusforge.pipeline.normalize.stage as stage
def interrupted(*args, **kwargs):  # a thread the interrupt leaves waiting for ever (a bundle's, Beam's pool's)
    threading.Thread(target=threading.Event().wait).start()
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
stage.normalize_and_count = interrupted
from corpusforge.cli.main import run
sys.argv = ["corpusforge", "build", "--input", sys.argv[1], "--run-dir", sys.argv[2], "--no-progress",
            "--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]
run()
"""


def test_ctrl_c_ends_the_process_whatever_threads_it_left(tmp_path):
    # Once a build printed "corpusforge: interrupted" and then hung: the interpreter's exit waits for every
    # non-daemon thread, and one the interrupt left in the middle of a bundle never ends.
    # It ends with os._exit, which skips multiprocessing's removal of its own folder: a pymp-* folder was left in
    # the temporary folder by every Ctrl-C; now nothing is.
    data = tmp_path / "docs.jsonl"
    data.write_text('{"text": "one document about rivers and hills"}\n')
    temp = tmp_path / "temp"
    temp.mkdir()
    try:
        done = subprocess.run([sys.executable, "-c", _INTERRUPT_LEAVING_A_THREAD, str(data), str(tmp_path / "run")],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path,
                              env={**os.environ, "TMPDIR": str(temp)})
    except subprocess.TimeoutExpired:
        pytest.fail("the interrupted command did not exit")
    assert (done.returncode, done.stderr.splitlines()[-1:]) == (130, ["corpusforge: interrupted"]), done.stderr[-3000:]
    assert list(temp.iterdir()) == []


def test_ctrl_c_in_a_build_is_one_line(tmp_path):
    # Beam catches the KeyboardInterrupt inside the DoFn, logs it with a traceback and raises it again as a
    # RuntimeError("KeyboardInterrupt [while running 'Normalize/...']"): ~300 lines and exit code 1 were printed.
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(f'{{"text": "document {i} about rivers and hills"}}\n' for i in range(20)))
    done = subprocess.run([sys.executable, "-c", _INTERRUPTED_BUILD, str(data), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert (done.returncode, done.stderr.splitlines()[-1:]) == (130, ["corpusforge: interrupted"]), done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr[-3000:]
    assert not (tmp_path / "run" / "clean").exists()


_BEAM_BROKEN_PIPE = """
import os, sys
extra = sys.argv[3:]
import corpusforge.pipeline.normalize.stage as stage
def broken(*args, **kwargs):  # a DoFn writing to a pipe whose reader left: its own, or standard output's
    if os.environ.get("NO_SPACE"):  # or to a full disk
        raise OSError(28, "No space left on device", "/data/out.bin")
    if os.environ.get("TO_STDOUT"):
        while True:
            print("x" * 80)
    r, w = os.pipe()
    os.close(r)
    os.write(w, b"x")
stage.normalize_and_count = broken
from corpusforge.cli.main import run
sys.argv = ["corpusforge", "build", "--input", sys.argv[1], "--run-dir", sys.argv[2], "--no-progress",
            "--set", "build.fail_fast=true", "--set", "quality.enabled=false", "--set", "dedup.enabled=false",
            "--set", "pii.enabled=false", *extra]
run()
"""


def test_a_broken_pipe_inside_beam_is_one_line_or_a_quiet_141(tmp_path):
    # Beam wraps a DoFn's BrokenPipeError in a RuntimeError ("BrokenPipeError: [Errno 32] Broken pipe [while running
    # 'Normalize/...']") after logging it with its traceback: ~120 lines and exit 1, whichever pipe broke.
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(f'{{"text": "document {i} about rivers and hills"}}\n' for i in range(20)))
    script = tmp_path / "case.py"
    script.write_text(_BEAM_BROKEN_PIPE)
    with open(tmp_path / "out.txt", "w") as out:  # another pipe broke: one line naming the step, exit 2
        done = subprocess.run([sys.executable, str(script), str(data), str(tmp_path / "run")], stdout=out,
                              stderr=subprocess.PIPE, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-3000:]
    assert done.stderr.startswith("corpusforge: error: [Errno 32] Broken pipe in step Normalize/")
    # standard output's reader left (`| head -n 1`) while a DoFn wrote to it: exit 141, nothing said
    done = subprocess.run(f"{sys.executable} {script} {data} {tmp_path / 'run2'} | head -n 1", shell=True,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "TO_STDOUT": "1"}, executable="/bin/bash")
    assert done.stdout.count("\n") == 1 and done.stderr == "", done.stderr[-3000:]
    status = subprocess.run(f"set -o pipefail; {sys.executable} {script} {data} {tmp_path / 'run3'} | head -n 1",
                            shell=True, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "TO_STDOUT": "1"}, executable="/bin/bash")
    assert status.returncode == 141, status.stderr[-3000:]


def test_a_broken_pipe_in_a_beam_worker_process_is_one_line(tmp_path):
    # With direct_running_mode=multi_processing the worker prints the failed bundle's traceback to its stderr and
    # the runner logs it twice more before raising a RuntimeError holding it as text: ~270 lines, exit 1.
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(f'{{"text": "document {i} about rivers and hills"}}\n' for i in range(20)))
    site = tmp_path / "site"
    site.mkdir()  # the worker is another interpreter: it breaks its pipe through sitecustomize
    (site / "sitecustomize.py").write_text(
        "import os\n"
        "import corpusforge.pipeline.normalize.stage as stage\n"
        "def broken(*args, **kwargs):\n"
        "    r, w = os.pipe()\n"
        "    os.close(r)\n"
        "    os.write(w, b'x')\n"
        "stage.normalize_and_count = broken\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    with open(tmp_path / "out.txt", "w") as out:
        done = subprocess.run([sys.executable, "-m", "corpusforge", "build", "--input", str(data), "--run-dir",
                               str(tmp_path / "run"), "--no-progress", "--set", "build.fail_fast=true",
                               "--set", "quality.enabled=false", "--set", "dedup.enabled=false",
                               "--set", "pii.enabled=false", "--direct_running_mode=multi_processing",
                               "--direct_num_workers=2"], stdout=out, stderr=subprocess.PIPE, text=True, timeout=300,
                              cwd=tmp_path, env=env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-3000:]
    assert done.stderr.startswith("corpusforge: error: [Errno 32] Broken pipe in step Normalize/")


def test_a_full_disk_inside_beam_is_one_line_without_beams_log_of_it(tmp_path):
    # The one line came after Beam's ERROR log of the DoFn's exception and its traceback (12 lines).
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(f'{{"text": "document {i} about rivers and hills"}}\n' for i in range(20)))
    script = tmp_path / "case.py"
    script.write_text(_BEAM_BROKEN_PIPE)
    done = subprocess.run([sys.executable, str(script), str(data), str(tmp_path / "run")], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env={**os.environ, "NO_SPACE": "1"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-3000:]
    assert done.stderr.startswith("corpusforge: error: /data/out.bin: no space left on the device")


@pytest.mark.parametrize("argv, line", [
    (["train", "--max-steps", "ten"],
     "corpusforge train: error: argument --max-steps: invalid int value: 'ten'; see corpusforge train --help"),
    (["generate", "--prompt", "x"],
     "corpusforge generate: error: the following arguments are required: --model; see corpusforge generate --help"),
    (["inspect", "a", "b"], "corpusforge inspect: error: unrecognized arguments: b; see corpusforge inspect --help"),
    (["tokenizer", "show"], "corpusforge tokenizer: error: argument SUBCOMMAND: invalid choice: 'show' (choose from "
                            "'train', 'report'); see corpusforge tokenizer --help"),
    (["train", "--objective", "clmm"], "corpusforge train: error: argument --objective: invalid choice: 'clmm' (choose "
     "from 'mlm', 'rtd', 'span', 'bart', 'clm', 'prefixlm', 'bilm') (did you mean 'clm'?); see corpusforge train --help"),
])
def test_a_command_line_mistake_is_one_line_naming_the_help(capsys, argv, line):
    # argparse printed the whole usage before the mistake: 13 lines for train, the mistake on the last
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [line]


def test_a_misspelt_command_is_one_line_with_the_nearest(capsys):
    with pytest.raises(SystemExit):
        cli.main(["buidl"])
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("corpusforge: error: argument COMMAND: invalid choice: 'buidl'")
    assert line.endswith("(did you mean 'build'?); see corpusforge --help")


def _leaf_parsers(parser):
    """Every command a user runs, by its prog ("corpusforge tokenizer train"): parsers with no subcommands."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {parser.prog: parser}
    return {prog: leaf for sub in subs for child in sub.choices.values() for prog, leaf in _leaf_parsers(child).items()}


def _example_argv(line):
    """The arguments of an example line: shell comments, a pipe's writer and a redirection left out."""
    import shlex

    words = shlex.split(line, comments=True)
    if "|" in words:
        words = words[len(words) - words[::-1].index("|"):]
    if ">" in words:
        words = words[:words.index(">")]
    assert words[0] == "corpusforge", line
    return words[1:]


def test_every_commands_help_ends_with_examples_that_parse(capsys):
    from corpusforge.cli.examples import EXAMPLES

    parser = cli.make_parser()
    leaves = _leaf_parsers(parser)
    assert len(leaves) >= 20
    # each command a user runs shows examples in its --help (only ablate had any)
    assert [prog for prog, leaf in leaves.items()
            if "\n  corpusforge " not in "\n" + leaf.format_help().partition("\nExamples:\n")[2]] == []
    assert set(EXAMPLES) <= set(leaves)
    for prog, lines in EXAMPLES.items():
        for line in lines:
            if line.startswith("#"):
                continue
            argv = _example_argv(line)
            args, extra = cli.make_parser().parse_known_args(argv)  # one line and exit 2 if a flag is gone
            assert args.func is not None and f"corpusforge {' '.join(argv[:len(prog.split()) - 1])}" == prog, line
            assert not extra or getattr(args, "accepts_beam_args", False), line
            assert cli._misspelt_own_flags(parser, args.command, extra) is None, line


def test_no_number_flag_takes_nan_infinity_or_a_seed_no_generator_takes(capsys):
    """Every float flag of every command refuses NaN and infinities, and every seed flag what numpy and torch
    refuse (a negative seed, one past 2**32 - 1), in argparse's one line naming the flag, before anything loads.
    Before: generate --temperature nan raised ValueError, --temperature inf RuntimeError (probability tensor),
    --seed 10**24 OverflowError, each a traceback after the model had loaded."""
    checked = []
    for name, sub in _subparsers(cli.make_parser()):
        for action in sub._actions:
            if not action.option_strings or action.type is None:
                continue
            flag = action.option_strings[-1]
            kind = getattr(action.type, "__name__", "")
            if kind in ("float", "finite", "bound") or action.dest.endswith("seed"):
                values = ["-1", str(2**32)] if action.dest.endswith("seed") else \
                    ["nan", "-inf"] if kind == "bound" else ["nan", "inf", "-inf"]
                for value in values:
                    with pytest.raises(SystemExit) as info:
                        cli.main([*name.split()[1:], flag, value])
                    err = capsys.readouterr().err
                    assert info.value.code == 2 and len(err.splitlines()) == 1, (name, flag, value, err)
                    assert f"argument {flag}" in err, (name, flag, value, err)
                checked.append(f"{name} {flag}")
    assert {"corpusforge generate --temperature", "corpusforge generate --seed", "corpusforge evaluate --seed",
            "corpusforge embed --gamma", "corpusforge ablate --resolve"} <= set(checked), checked


def test_an_upper_bound_flag_takes_infinity_for_none():
    # ablate --max-epochs inf meant "never refuse a repeat" (ablate.run compares tokens / t > max_epochs); the
    # finite-number check refused it
    parser = cli.make_parser()
    args = parser.parse_args(["ablate", "--out", "x", "--eval", "e.txt", "--tokens", "2048", "--max-epochs", "inf"])
    assert args.max_epochs == float("inf")


def test_a_shortcut_flags_help_says_its_default_value():
    # `finetune --help` gave no default for --epochs, --batch-size, --max-length, --lora-r, ... ("Passes over the
    # training records."), and train's, tokenize's and tokenizer's said where the default lives, not what it is
    # ("default: train.max_steps"): the value took `corpusforge config` or docs/configuration.md.
    import re

    from corpusforge.cli import finetune
    from corpusforge.config import Config

    defaults = Config()
    silent, unvalued = [], []
    for name, sub in _subparsers(cli.make_parser()):
        sub.format_help()  # the values are filled in when help is shown
        for action in sub._actions:
            if not action.option_strings or not action.help:
                continue
            text = " ".join(action.help.split())
            if name.endswith("finetune") and action.dest in finetune._SHORTCUTS and action.nargs != 0:
                value = getattr(defaults.finetune, finetune._SHORTCUTS[action.dest])
                if value not in (None, "", []) and "default" not in text.lower():
                    silent.append(f"{name} {action.option_strings[0]}")
            for key in re.findall(r"[Dd]efault: ((?:train|tokenizer|tokenize|finetune)\.[\w.]*\w)(?!\w|\.\w| =)", text):
                value = defaults
                for part in key.split("."):
                    value = getattr(value, part)
                if value not in (None, "", []):
                    unvalued.append(f"{name} {action.option_strings[0]}: {key}")
    assert not silent, "finetune flags whose --help gives no default: " + ", ".join(silent)
    assert not unvalued, "flags whose --help names a key but not its value: " + ", ".join(unvalued)
    help_text = " ".join(cli.make_parser("train")._subparsers._group_actions[0].choices["train"].format_help().split())
    assert "Optimizer steps; default: train.max_steps = 1000." in help_text
