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
