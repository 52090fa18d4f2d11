"""The ``corpusforge`` command: one subcommand per step of the flow.

    corpusforge demo                        # the whole chain on the built-in sample
    corpusforge build -c corpus.yaml        # raw text -> clean shards (Parquet by default)
    corpusforge tokenizer train -c ...      # clean shards -> tokenizer.json
    corpusforge tokenize -c ...             # clean shards -> token shards
    corpusforge train -c ...                # token shards -> a pretrained model
    corpusforge export MODEL_DIR OUT_DIR    # the model as a transformers directory
    corpusforge report RUN_DIR              # an HTML report of a run
    corpusforge inspect PATH                # schema, counts and a few records of any shard
    corpusforge ablate --input RAW --eval HELDOUT --variant raw:... --variant full --tokens N --out DIR

Each module named in ``COMMANDS`` adds its subcommand through ``register(subparsers)``; this is the only
layer that imports the pipeline, tokenizer and trainers packages together.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import gc
import importlib
import logging
import os
import re
import signal
import sys
import threading
import time
import warnings
from typing import NoReturn

# command -> the module of this package that registers it (``register(subparsers)``), in --help order.
COMMANDS = {
    "demo": "demo",
    "build": "build",
    "inspect": "inspect",
    "config": "show_config",
    "quality": "quality",
    "pii": "pii",
    "tokenizer": "tokenizer",
    "tokenize": "tokenize",
    "train": "train",
    "export": "export",
    "evaluate": "evaluate",
    "generate": "generate",
    "fill-mask": "fill_mask",
    "finetune": "finetune",
    "predict": "predict",
    "embed": "embed",
    "report": "report",
    "rethreshold": "rethreshold",
    "ablate": "ablate",
}

DESCRIPTION = """\
corpusforge turns raw text into pretraining-ready data and small pretrained Transformers.

The flow: build (read, normalise, quality-filter, deduplicate, remove PII, write clean Parquet shards)
-> tokenizer train -> tokenize (token shards) -> train (encoder, seq2seq or decoder pretraining)
-> export (a transformers directory), generate, fill-mask, evaluate, embed (ELMo vectors)
-> finetune (a task: classify, tag, generate; full, LoRA, adapters, prefix, prompt), predict.
Every command reads one config file (--config) and takes --set overrides; `corpusforge demo` runs
the whole chain on a built-in sample; `corpusforge ablate` compares corpus variants by training identical
models on each. Run `corpusforge COMMAND --help` for each command's options.
"""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose mistakes (a value of the wrong type, a missing argument, an unknown command or
    choice) are one line that says where the help is: argparse's own ``error`` printed the whole usage first,
    13 lines for ``train --max-steps ten`` with the mistake on the last. Subcommands' parsers are made by
    ``add_subparsers`` with the class of their parent, so every command's are this class."""

    def format_help(self) -> str:
        # every command's help ends with examples (cli/examples.py), verbatim: each command's own formatter would
        # rewrap an epilog
        from corpusforge.cli.examples import epilog

        examples = epilog(self.prog)
        for action in self._actions:  # "default: train.max_steps" -> "default: train.max_steps = 1000": the value too
            if action.help and action.help is not argparse.SUPPRESS:
                action.help = with_config_defaults(action.help)
        return super().format_help() + (f"\n{examples}" if examples else "")

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}{_did_you_mean(message)}; see {self.prog} --help\n")


_DEFAULT_KEY = re.compile(r"[Dd]efault: ((?:train|tokenizer|tokenize|finetune)\.[a-z_]+(?:\.[a-z_]+)*)(?!\w|\.\w| = )")


def with_config_defaults(help_text: str) -> str:
    """A shortcut flag's help naming its config key (``default: train.max_steps``) with the key's built-in value
    too (``default: train.max_steps = 1000``): the help said where the default lives, not what it is, and the
    value took ``corpusforge config`` or docs/configuration.md. Computed only when help is printed (the Config's
    import costs ~0.9 s, which no other run of a command pays). A key whose default is empty is left as it is
    (its help says what empty means)."""
    found = _DEFAULT_KEY.findall(help_text)
    if not found:
        return help_text
    from corpusforge.config import Config

    defaults = Config()
    for key in found:
        value: object = defaults
        for part in key.split("."):
            value = getattr(value, part, None)
        if value not in (None, "", [], {}) and not dataclasses.is_dataclass(value):
            help_text = re.sub(rf"([Dd]efault): {re.escape(key)}(?!\w|\.\w| = )",
                               lambda m, key=key, value=value: f"{m.group(1)}: {key} = {value}", help_text)
    return help_text


def _did_you_mean(message: str) -> str:
    """`` (did you mean 'build'?)`` for an invalid choice close to an allowed one (``corpusforge buidl``)."""
    import re

    found = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)$", message)
    if not found:
        return ""
    close = difflib.get_close_matches(found.group(1), re.findall(r"'(.*?)'", found.group(2)), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def make_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser, with every subcommand, or with command ``only`` alone (the one being run:
    each other one costs its module's import and its arguments, ~0.05 s in all)."""
    parser = _Parser(prog="corpusforge", description=DESCRIPTION,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from corpusforge.pipeline import __version__

    parser.add_argument("--version", action="version", version=f"corpusforge {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command, module in COMMANDS.items():
        if only is None or command == only:
            importlib.import_module(f"{__package__}.{module}").register(subparsers)
    return parser


def _command(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names, when its first argument is one (nothing before a subcommand but
    ``--version`` and ``--help``, which take no value); None otherwise (then the parser has them all, for its
    help and its errors)."""
    first = argv[0] if argv else None
    return first if first in COMMANDS else None


def _misspelt_own_flags(parser: argparse.ArgumentParser, command: str, extra: list[str]) -> str | None:
    """The line refusing the arguments left for Beam that are near misses of the command's own flags and no Beam
    flag (``build --overwirte``); None when there are none. Beam would refuse them too, but as unknown pipeline
    options, offering its nearest flag among ~300, never the one the user meant."""
    flags = [arg.split("=", 1)[0] for arg in extra if arg.startswith("--")]
    if not flags:
        return None
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    own = [opt for action in subparsers.choices[command]._actions for opt in action.option_strings
           if opt.startswith("--")]
    near = {name: close[0] for name in flags for close in [difflib.get_close_matches(name, own, n=1, cutoff=0.8)]
            if close}
    if not near:
        return None
    from corpusforge.core.beam_options import known_flags

    beam = known_flags()
    near = {name: close for name, close in near.items() if name not in beam}
    if not near:
        return None
    return ("unknown option " + ", ".join(f"{name} (did you mean {close}?)" for name, close in near.items())
            + f"; see corpusforge {command} --help (any other --flag goes to Beam as a pipeline option)")


def _quiet_libraries() -> None:
    # Beam's optional GCP clients, absl and spaCy print warnings that say nothing to a corpus builder.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("apache_beam", "absl", "presidio-analyzer", "presidio-anonymizer"):
        logging.getLogger(name).setLevel(logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


class _Interrupt:
    """Whether Ctrl-C (SIGINT) came while the command ran."""
    seen = False


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was raised while handling, a KeyboardInterrupt: Beam catches one inside a DoFn and
    raises it again as a RuntimeError ("KeyboardInterrupt [while running 'Normalize/...']")."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


@contextlib.contextmanager
def _quiet_interrupts():
    """Ctrl-C ends the command with one line, "corpusforge: interrupted". Beam would add its own report of the
    interrupt: the DoFn's traceback logged at ERROR, and with ``direct_running_mode=multi_processing`` a
    traceback from each thread that watched a worker the same Ctrl-C ended ("Worker subprocess exited with
    return code -2"). From the interrupt on, log records are dropped, and so is an uncaught exception in another
    thread that comes within half a second of it (the worker may die before this process's handler runs). Only
    where SIGINT raises KeyboardInterrupt (not in a background job, which ignores it) and in the main thread."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return

    def on_sigint(signum, frame):
        _Interrupt.seen = True
        raise KeyboardInterrupt

    def thread_error(hook_args, report=threading.excepthook):
        for _ in range(20):
            if _Interrupt.seen:
                return
            time.sleep(0.025)
        report(hook_args)

    def after_interrupt(record: logging.LogRecord) -> bool:
        return not _Interrupt.seen

    handlers = logging.getLogger().handlers
    _Interrupt.seen = False
    signal.signal(signal.SIGINT, on_sigint)
    threading.excepthook, excepthook = thread_error, threading.excepthook
    for handler in handlers:
        handler.addFilter(after_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.excepthook = excepthook
        for handler in handlers:
            handler.removeFilter(after_interrupt)


def _reader_gone(stream) -> bool:
    """Whether ``stream`` (standard output or error) is a pipe whose reading end is closed (``| head`` had its
    lines): a write end polls as POLLERR then. Any other BrokenPipeError (a worker process's pipe) is an error to
    report."""
    import select

    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # no such stream (`>&-`: None), or not a file descriptor:
        return False  # the broken pipe is not its
    if not hasattr(select, "poll"):  # Windows: no way to ask; a broken pipe there is most likely stdout's
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _ended_by_a_broken_pipe(exc: BaseException) -> int:
    """The exit of a command that ``exc`` ended, a write to a pipe whose reader left, however it reached us: bare, or
    wrapped by Beam (a RuntimeError from the DoFn that wrote, or a multi-process worker's report of it as text).
    Standard output's or error's reader gone (``| head`` had its lines, ``2>&1 | head``): 141, as the shell reports a
    command ended by SIGPIPE, and nothing said (there is no one to say it to). Any other pipe (a worker's, a
    program's the command feeds) broke: one line, exit 2."""
    gone = [stream for stream in (sys.stdout, sys.stderr) if _reader_gone(stream)]
    if gone and not getattr(exc, "filename", None):  # a named file is not a standard stream
        for stream in gone:  # the interpreter's last flush of it would print "Exception ignored ..."
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        return 141
    import re

    step = re.search(r"\[while running '([^']*)'\]", str(exc))
    where = f" in step {step.group(1)}" if step else ""
    print(f"corpusforge: error: [Errno 32] Broken pipe{where}: a process this command writes to (a worker, or a "
          "program reading its output) ended before reading it all; run it again (--debug shows the traceback)",
          file=sys.stderr)
    return 2


@contextlib.contextmanager
def _quiet_reported_failures():
    """Beam logs a DoFn's exception at ERROR (with its traceback, and a multi-process worker's again as text) before
    it raises it to us: for the failures this command reports in one line (a broken pipe, ``_ended_by_a_broken_pipe``;
    a full disk, a denied permission, a read-only filesystem, ``resource_error``), those records are dropped."""
    from corpusforge.core.errors import said_in_one_line

    def not_said_in_one_line(record: logging.LogRecord) -> bool:
        if not record.name.startswith("apache_beam"):
            return True
        try:
            text = record.getMessage()
        except Exception:  # a record whose arguments do not format: logging reports it itself  # noqa: BLE001
            text = str(record.msg)
        return not (said_in_one_line(record.exc_info[1] if record.exc_info else None) or said_in_one_line(text))

    handlers = logging.getLogger().handlers
    for handler in handlers:
        handler.addFilter(not_said_in_one_line)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(not_said_in_one_line)


def main(argv: list[str] | None = None) -> int:
    _quiet_libraries()
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = make_parser(only=_command(argv))
    args, extra = parser.parse_known_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if args.command is None else 2
    if extra and not getattr(args, "accepts_beam_args", False):
        (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        subparsers.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    misspelt = _misspelt_own_flags(parser, args.command, extra)
    if misspelt:
        print(f"corpusforge: error: {misspelt}", file=sys.stderr)
        return 2
    args.beam_args = extra
    from corpusforge.core.config_loader import ConfigError
    from corpusforge.core import rundir
    from corpusforge.core.errors import UserError, broken_pipe, resource_error

    debug = getattr(args, "debug", False)
    try:
        # scoped_tempfiles: what libraries leave in the temporary folder goes when the command ends
        with _quiet_interrupts(), contextlib.nullcontext() if debug else _quiet_reported_failures(), \
                rundir.scoped_tempfiles():
            return int(args.func(args) or 0)
    except (UserError, ConfigError) as exc:
        if getattr(args, "debug", False):
            raise
        kind = "configuration error" if isinstance(exc, ConfigError) else "error"
        print(f"corpusforge: {kind}: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path that cannot be read or written: the user fixes the path or its permissions
        if getattr(args, "debug", False):
            raise
        # `corpusforge inspect RUN | head`: the reader has had what it wanted (or another pipe, a worker's, broke)
        if broken_pipe(exc):
            return _ended_by_a_broken_pipe(exc)
        message = resource_error(exc) or f"{exc}; check the path and its permissions (--debug shows the traceback)"
        print(f"corpusforge: error: {_one_line(message)}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # the same one line whichever process (a DataLoader worker's: trainers/data.py) ran out
        if getattr(args, "debug", False):
            raise
        said = f" ({_one_line(exc)})" if str(exc) else ""
        print(f"corpusforge: error: out of memory{said}: lower the batch size or the number of workers, or use a "
              "machine with more memory (--debug shows the traceback)", file=sys.stderr)
        return 2
    except Exception as exc:  # a full disk or a denied write inside Beam or a library: one line, not 126
        if (_Interrupt.seen or _interrupted(exc)) and not getattr(args, "debug", False):
            print("corpusforge: interrupted", file=sys.stderr)
            return 130
        if broken_pipe(exc) and not debug:  # wrapped by Beam: a RuntimeError, or a worker's as text
            return _ended_by_a_broken_pipe(exc)
        resource = resource_error(exc)
        if resource is None or getattr(args, "debug", False):
            raise
        print(f"corpusforge: error: {_one_line(resource)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("corpusforge: interrupted", file=sys.stderr)
        return 130


def run() -> None:
    """The ``corpusforge`` command (and ``python -m corpusforge``): ``main`` on the command line, then exit."""
    from corpusforge.core import lean_beam, rundir

    lean_beam.enable()  # one command, then exit: a local build imports Beam without its cloud clients
    # multiprocessing's own folder (pymp-*) inside a marked one of ours: neither Ctrl-C's os._exit below nor a
    # SIGKILL leaves it behind (the next command reclaims ours)
    rundir.own_process_tempfiles()
    code = main()
    # The process ends here. Without this, the interpreter's last garbage collection walks every object a build
    # made live (~300k: Beam's, Presidio's, spaCy's), ~0.5 s of every build's wall time. Frozen objects are skipped
    # by it: the cyclic garbage a build leaves (~29k objects, Beam's bundle processors) is then not collected, and
    # holds no file or object with a finalizer (checked). atexit handlers still run (logging flushes there).
    gc.freeze()
    if code == 130:  # interrupted: what the command cleans up is done; a thread Ctrl-C left mid-bundle would keep
        logging.shutdown()  # the interpreter's exit waiting for it for ever, so end without waiting
        rundir.end_process_tempfiles()  # the exit handlers that would remove it do not run
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


if __name__ == "__main__":
    run()
