"""Fuzz family ``broken_pipes``: a ``BrokenPipeError`` in a command, from its standard output's reader going away
(``corpusforge inspect RUN | head``) or from another pipe (a worker process's), wherever standard output goes.

Promise (``corpusforge/cli/main.py``, ``_ended_by_a_broken_pipe``): exit 141 with nothing on stderr only when
standard output is a pipe whose reader closed it; any other broken pipe is one line on stderr, exit 2; a command
whose output all arrived exits 0 with every line delivered. However the BrokenPipeError reaches the command (drawn:
as raised, wrapped in a RuntimeError as Beam wraps a DoFn's after logging it, or as a multi-process worker's text
in one), with the same ending and nothing else on stderr.

Each case runs a subprocess whose ``inspect`` command is replaced by one that prints N lines (N drawn, up to
6000 of 81 bytes: past what a pipe and Python's buffer hold), then, in one case out of two, writes to a pipe whose
reading end it closed (a worker's pipe; the ``BrokenPipeError`` a dead worker gives). Its standard output is
drawn: a pipe read to the end, a pipe whose reader stops after R lines and closes it (R < N: stdout's pipe breaks;
only when no worker pipe breaks, the case whose ending is one's choice either way being left out), a file,
/dev/null, a terminal (a pty), or closed (``>&-``).
"""
from __future__ import annotations

import os
import pathlib
import random
import subprocess
import sys

FAMILY = "broken_pipes"

SINKS = ("pipe", "head", "file", "devnull", "pty", "closed")
# How the BrokenPipeError reaches the command: as raised; wrapped as Beam wraps a DoFn's in the same process
# (RuntimeError("BrokenPipeError: ... [while running 'Step']") raised while handling it, after logging it at ERROR);
# or as a multi-process worker's reaches the runner (its text only, in a RuntimeError, logged by Beam first).
WRAPS = ("bare", "beam", "worker_text")
SCRIPT = """
import logging, os, sys
import corpusforge.cli.inspect as inspect
lines, worker, wrap = int(sys.argv[1]), sys.argv[2] == "worker", sys.argv[3]
def wrapped(exc):
    step = " [while running 'Normalize/NormalizeText/ParDo(_NormalizeFn)']"
    if wrap == "beam":
        logging.getLogger("apache_beam.runners.common").error("%s: %s%s", type(exc).__name__, exc, step, exc_info=exc)
        return RuntimeError(f"{type(exc).__name__}: {exc}{step}")
    text = f"Traceback (most recent call last):\\n  File ...\\n{type(exc).__name__}: {exc}{step}"
    logging.getLogger("apache_beam.runners.portability.local_job_service").error("Worker: %s", text)
    return RuntimeError(f"Pipeline job failed: {text}")
def act(args):
    try:
        for i in range(lines):
            print(f"{i:08d} " + "x" * 71)
        if worker:  # a pipe of this process's own whose reader is gone, as a dead worker's is
            sys.stdout.flush() if sys.stdout is not None else None
            r, w = os.pipe()
            os.close(r)
            os.write(w, b"batch")
    except BrokenPipeError as exc:
        if wrap == "bare":
            raise
        if wrap == "beam":
            raise wrapped(exc)
        raise wrapped(exc) from None
    return 0
inspect.cmd_inspect = act
from corpusforge.cli.main import main
sys.exit(main(["inspect", "anything"]))
"""


def _run(workdir: pathlib.Path, sink: str, lines: int, worker: bool, read: int, wrap: str = "bare"
         ) -> tuple[int, str, int]:
    """(exit code, stderr, lines delivered)."""
    script = workdir / "case.py"
    script.write_text(SCRIPT, encoding="utf-8")
    argv = [sys.executable, str(script), str(lines), "worker" if worker else "stdout", wrap]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    if sink in ("pipe", "head"):
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=workdir)
        got = 0
        while sink == "pipe" or got < read:
            if not proc.stdout.readline():
                break
            got += 1
        proc.stdout.close()
        err = proc.stderr.read().decode()
        return proc.wait(timeout=120), err, got
    if sink == "pty":
        import pty

        master, slave = pty.openpty()
        proc = subprocess.Popen(argv, stdout=slave, stderr=subprocess.PIPE, env=env, cwd=workdir)
        os.close(slave)
        data = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed it
                break
            if not chunk:
                break
            data += chunk
        os.close(master)
        err = proc.stderr.read().decode()
        return proc.wait(timeout=120), err, data.count(b"\n")
    if sink == "closed":
        done = subprocess.run(" ".join(f"'{a}'" for a in argv) + " >&-", shell=True, stderr=subprocess.PIPE,
                              text=True, env=env, cwd=workdir, timeout=120)
        return done.returncode, done.stderr, lines
    target = workdir / "out.txt" if sink == "file" else pathlib.Path(os.devnull)
    with open(target, "w") as out:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, text=True, env=env, cwd=workdir, timeout=120)
    delivered = (workdir / "out.txt").read_text().count("\n") if sink == "file" else lines
    return done.returncode, done.stderr, delivered


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    sink = rng.choice(SINKS)
    worker = rng.random() < 0.5
    lines = rng.choice((0, 1, 3, 200, 6000))
    if sink == "head" and worker:  # stdout's reader stays to the end: the worker's pipe is what breaks
        sink = "pipe"
    read = rng.randrange(lines) if sink == "head" and lines else 0
    if sink == "head" and lines < 2000:  # all of it fits in the pipe: stdout never breaks
        lines = 6000
        read = rng.randrange(1000)
    wrap = rng.choice(WRAPS)
    (workdir / "case.txt").write_text(f"sink={sink} lines={lines} worker={worker} read={read} wrap={wrap}\n")
    code, err, delivered = _run(workdir, sink, lines, worker, read, wrap)
    if worker:
        assert code == 2 and err.count("\n") == 1 and err.startswith("corpusforge: error: ") and "Broken pipe" in err, \
            f"a worker's broken pipe (stdout: {sink}) ended with {code} and {err!r}, not one line and exit 2"
        assert sink in ("closed", "devnull") or delivered == lines, f"{sink}: {delivered} of {lines} lines arrived"
    elif sink == "head":
        assert code == 141 and err == "", f"stdout's reader went away: ended with {code} and {err!r}, not 141 quietly"
    else:
        assert code == 0 and err == "" and delivered == lines, \
            f"{sink}: ended with {code} and {err!r}, {delivered} of {lines} lines"
