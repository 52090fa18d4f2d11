"""Fuzz family ``worker_exceptions``: an exception raised inside a DataLoader worker process while
``corpusforge train`` reads its batches (``trainers/data.py``: ``worker_errors``).

Promise: the command ends as it would had the same exception been raised in the main process (``num_workers=0``):
the same exit code and the same one line on stderr (a full disk names the file and says to free space; a
``UserError`` is its own message; out of memory is one line), or, for an exception that is a bug (a
``ValueError``), the same type with the same message escaping ``main`` (the traceback the main process gives),
never torch's re-raise with the worker's traceback as its message. A worker that dies without a word
(``KeyboardInterrupt`` in it alone, the kernel's out-of-memory killer) is one line, exit 2 or 130.

Each case draws an exception class and its arguments: an ``OSError`` with one of ``ERRNOS`` and a file name
drawn to be awkward (quotes, colons, `` -> ``, spaces, non-ASCII; none, one or two names), ``MemoryError`` with or
without a message, ``UnicodeDecodeError`` over one byte or a range, ``ValueError``, ``UserError``,
``KeyboardInterrupt``; ``corpusforge train`` (its ``train_model`` replaced by a loop over a loader whose dataset
raises it) runs once with the worker and once without, and the two endings are compared.

Second promise (``stage_case``, after each loader case): errors of the environment are not errors of a record
(``corpusforge/core/faults.py``). An exception raised in a build stage's per-record step (normalize's, in-process
DirectRunner) on 1-3 drawn records of 12 is drawn as an environment error (an ``OSError`` with ``ENVIRONMENT`` errno
and an awkward file name or none, directly or as the cause of a library's ``RuntimeError``; a ``ScratchError``) or
a content error (``ValueError`` whose text may quote an errno, ``UnicodeDecodeError``, ``MemoryError``, an
``OSError`` without errno or with ``ENOENT``, ``RecursionError``). An environment error stops the build: exit 2, one
line (the file named, or the run directory for an ``OSError`` without one; the broken-pipe line for EPIPE; the
``ScratchError``'s own message), and no clean/ published. A content error rejects exactly the records that raised
(``stage_error``) and keeps the others: exit 0.
"""
from __future__ import annotations

import contextlib
import errno
import io
import os
import pathlib
import random

FAMILY = "worker_exceptions"

ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.EMFILE)
PIECES = ("part-0", "o'brien", 'say "hi"', "a:b", " -> ", "été", "x y", "\\", "data", "'", ": '")


def _name(rng: random.Random, workdir: pathlib.Path) -> str:
    return str(workdir / "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4)))) + ".arrow"


def _exception(rng: random.Random, workdir: pathlib.Path) -> BaseException:
    from corpusforge.core.errors import UserError

    kind = rng.choice(("oserror", "oserror", "oserror", "memory", "unicode", "value", "user", "interrupt"))
    if kind == "oserror":
        code = rng.choice(ERRNOS)
        names = [_name(rng, workdir) for _ in range(rng.choice((0, 1, 1, 2)))]
        args = (code, os.strerror(code), *names[:1], *((None, names[1]) if len(names) == 2 else ()))
        return OSError(*args)
    if kind == "memory":
        return MemoryError(*rng.choice(((), ("cannot allocate 8 GiB",))))
    if kind == "unicode":
        start = rng.randrange(5)
        end = start + rng.choice((1, 1, 3))
        return UnicodeDecodeError(rng.choice(("utf-8", "ascii")), bytes([0xff]) * (end + 2), start, end,
                                  rng.choice(("invalid start byte", "unexpected end of data")))
    if kind == "value":
        return ValueError(rng.choice(("bad window", "x: y\nsecond line", "")))
    if kind == "user":
        return UserError(f"{_name(rng, workdir)} was cut to 100 bytes while it was read: rebuild it")
    return KeyboardInterrupt()


class _Raises:
    """A map-style dataset whose every item raises ``exc``."""

    def __init__(self, exc: BaseException):
        self.exc = exc

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int):
        raise self.exc


def _ending(exc: BaseException, workers: int, workdir: pathlib.Path) -> tuple:
    """``corpusforge train`` whose batches come from a loader raising ``exc`` in ``workers`` processes:
    ("exit", code, stderr) or ("raised", type, message)."""
    import torch

    import corpusforge.trainers.train as train_module
    from corpusforge.cli.main import main
    from corpusforge.trainers.data import worker_errors

    def train_model(train, run, **kwargs):
        batches = iter(torch.utils.data.DataLoader(_Raises(exc), batch_size=2, num_workers=workers))
        try:
            for _ in worker_errors(batches):
                pass
        finally:  # now, not when the traceback that holds it is collected
            getattr(batches, "_shutdown_workers", lambda: None)()

    real, err = train_module.train_model, io.StringIO()
    train_module.train_model = train_model
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["train", "--run-dir", str(workdir / "run"), "--no-progress"])
    except BaseException as raised:  # noqa: BLE001 - compared with the main process's ending
        return "raised", type(raised), str(raised)
    finally:
        train_module.train_model = real
    return "exit", code, err.getvalue()


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    loader_case(rng, workdir)
    stage_case(random.Random(rng.random()), workdir)


def loader_case(rng: random.Random, workdir: pathlib.Path) -> None:
    exc = _exception(rng, workdir)
    (workdir / "case.txt").write_text(f"{exc!r} filename={getattr(exc, 'filename', None)!r} "
                                          f"filename2={getattr(exc, 'filename2', None)!r}\n", encoding="utf-8")
    in_worker = _ending(exc, 1, workdir)
    if in_worker[0] == "raised":
        assert "Traceback" not in in_worker[2] and "DataLoader worker" not in in_worker[2], \
            f"{exc!r} in a worker escaped with the worker's traceback as its message: {in_worker[2][:300]!r}"
    if isinstance(exc, KeyboardInterrupt):  # the worker alone died: no word from it to give back
        assert in_worker[0] == "exit" and in_worker[1] in (2, 130) and len(in_worker[2].splitlines()) == 1, \
            f"a worker that died was not one line: {in_worker!r}"
        return
    in_main = _ending(exc, 0, workdir)
    assert in_worker == in_main, f"{exc!r} raised in a DataLoader worker ends as {in_worker!r}, in the main " \
                                 f"process as {in_main!r}"
    if in_main[0] == "exit" and in_main[1] == 2:
        assert len(in_main[2].splitlines()) == 1, f"{exc!r}: not one line: {in_main[2]!r}"


# ----------------------------------------------------------------------------------------- a build stage's step
ENVIRONMENT = (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EMFILE, errno.ENFILE,
               errno.EIO, errno.EPIPE)
# what the one line says for each errno (corpusforge/core/errors.py), written here again as the oracle
SAID = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
        errno.EACCES: "permission denied", errno.EPERM: "operation not permitted", errno.EROFS: "read-only filesystem",
        errno.EMFILE: "too many open files in this process", errno.ENFILE: "too many open files on this machine",
        errno.EIO: "input/output error"}
DOCUMENTS = 12


def _stage_exception(rng: random.Random, workdir: pathlib.Path) -> tuple[BaseException, bool]:
    """``(exception, is the environment's)``."""
    from corpusforge.core.errors import ScratchError

    kind = rng.choice(("oserror", "oserror", "wrapped", "scratch", "value", "unicode", "memory", "plain_os",
                       "enoent", "recursion"))
    if kind in ("oserror", "wrapped"):
        code = rng.choice(ENVIRONMENT)
        name = rng.choice((None, _name(rng, workdir)))
        error = OSError(code, os.strerror(code), *((name,) if name else ()))
        if kind == "wrapped":
            wrapper = RuntimeError(rng.choice(("could not open the cache", "tokenizer failed")))
            wrapper.__cause__ = error
            return wrapper, True
        return error, True
    if kind == "scratch":
        return ScratchError(f"spilled text {_name(rng, workdir)} is gone: run the build again"), True
    if kind == "value":
        return ValueError(rng.choice(("bad text", "quoted: [Errno 28] No space left on device: '/x'", ""))), False
    if kind == "unicode":
        return UnicodeDecodeError("utf-8", b"\xff\xfe", 0, 1, "invalid start byte"), False
    if kind == "memory":
        return MemoryError(*rng.choice(((), ("cannot allocate 8 GiB",)))), False
    if kind == "plain_os":
        return OSError(rng.choice(("Not a gzipped file (b'xx')", "Invalid data stream"))), False
    if kind == "enoent":
        return FileNotFoundError(errno.ENOENT, "No such file or directory", _name(rng, workdir)), False
    return RecursionError("maximum recursion depth exceeded"), False


def _folded(text: str) -> str:
    return " ".join(text.split())


def stage_case(rng: random.Random, workdir: pathlib.Path) -> None:
    import json

    import corpusforge.pipeline.normalize.stage as normalize_stage
    from corpusforge.cli.main import main

    exc, environment = _stage_exception(rng, workdir)
    raising = set(rng.sample(range(DOCUMENTS), rng.randint(1, 3)))
    (workdir / "stage_case.txt").write_text(f"{exc!r} cause={exc.__cause__!r} records={sorted(raising)}\n",
                                            encoding="utf-8")
    data = workdir / "docs.jsonl"
    data.write_text("".join(json.dumps({"text": f"document {i} about rivers and hills"}) + "\n"
                            for i in range(DOCUMENTS)), encoding="utf-8")
    run = workdir / f"run-{rng.randrange(10**9)}"
    real = normalize_stage.normalize_and_count

    def normalize_and_count(text, config):
        if int(text.split()[1]) in raising:
            raise exc
        return real(text, config)

    err = io.StringIO()
    normalize_stage.normalize_and_count = normalize_and_count
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["build", "--input", str(data), "--run-dir", str(run), "--no-progress",
                         "--set", "quality.enabled=false", "--set", "dedup.enabled=false",
                         "--set", "pii.enabled=false"])
    finally:
        normalize_stage.normalize_and_count = real
    said = err.getvalue()
    case = f"{exc!r} (cause {exc.__cause__!r}) on records {sorted(raising)}"
    if not environment:
        assert code == 0, f"{case}: a content error failed the build: {said[-500:]!r}"
        stats = json.loads((run / "stats.json").read_text(encoding="utf-8"))
        assert stats["rejected"]["reasons"] == {"stage_error": len(raising)}, f"{case}: {stats['rejected']}"
        return
    assert code == 2 and said.count("\n") == 1 and said.startswith("corpusforge: error: "), \
        f"{case}: an environment error was not the build's one line: exit {code}, {said[-800:]!r}"
    assert not (run / "clean").exists(), f"{case}: the build published without the records"
    cause = exc.__cause__ or exc
    # the command's one line folds every run of whitespace into one space (cli.main._one_line): an awkward file
    # name ("a  b", a tab) is said so (seed 1141 case 11)
    if not isinstance(cause, OSError):  # the ScratchError's own line
        assert _folded(str(exc)) in said, f"{case}: {said!r}"
    elif cause.errno == errno.EPIPE:
        assert said.startswith("corpusforge: error: [Errno 32] Broken pipe"), f"{case}: {said!r}"
    else:
        where = cause.filename or str(run)
        assert said.startswith(_folded(f"corpusforge: error: {where}: {SAID[cause.errno]}")), f"{case}: {said!r}"
