"""Errors a user can act on. The CLI prints them as one line, without a traceback unless --debug."""
from __future__ import annotations

import errno
import re


class UserError(Exception):
    """A problem the user can fix (missing input, bad option, missing optional dependency...)."""


class WorkerError(Exception):
    """The worker cannot run a step at all, whatever the record (a model loaded on first use that does not
    load). Never a record's dead letter (``corpusforge.core.faults`` re-raises it): it fails the run,
    as an exception in ``DoFn.setup`` does."""


class ScratchError(UserError, WorkerError):
    """A build's scratch disk (a spilled text, a shuffle run) that cannot be read back: gone, truncated or damaged.
    No record's fault, whichever record read it: never a dead letter (a ``WorkerError``), it stops the build with
    its one line (a ``UserError``) saying to run it again."""


def environment_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the environment's trouble, not a record's: a ``WorkerError`` (a ``ScratchError`` too), or
    an ``OSError`` with one of ``ENVIRONMENT_ERRNOS`` (a full disk, a denied permission, a read-only filesystem, a
    broken pipe, too many open files, an I/O error), itself or anywhere in its chain (``__cause__``,
    ``__context__``). Only exception objects are looked at, never their text: a record's text quoted in a message
    (``ValueError("... [Errno 28] ...")``) stays that record's error. ``MemoryError`` is not one: it is raised
    on one huge record (docs/inputs.md: a hostile record is rejected, it does not stop a build)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, WorkerError) or isinstance(current, OSError) and current.errno in ENVIRONMENT_ERRNOS:
            return True
        current = current.__cause__ or current.__context__
    return False


def missing_dependency(module: str, pip_name: str, purpose: str) -> UserError:
    return UserError(f"{purpose} needs the '{module}' package: pip install {pip_name}")


# errno -> what the user does about it. These are the resource errors a run meets on a healthy machine.
_ADVICE = {
    errno.ENOSPC: "no space left on the device: free some space, or write to a directory on another disk",
    errno.EDQUOT: "disk quota exceeded: free some space, or write to a directory on another disk",
    errno.EACCES: "permission denied: make it writable (or readable) for this user, or choose another path",
    errno.EPERM: "operation not permitted: check the owner and permissions, or choose another path",
    errno.EROFS: "read-only filesystem: choose a directory on a writable filesystem",
    errno.EMFILE: "too many open files in this process: raise the limit (ulimit -n) or use fewer workers",
    errno.ENFILE: "too many open files on this machine: close other programs' files or raise the system's limit",
    errno.EIO: "input/output error: the disk or filesystem failed; check it (dmesg) and run again",
}
# The errnos that say the machine, a disk, a filesystem or the process is in trouble, whatever the data: a step
# that raises one would raise it on every record after (``environment_error``). A broken pipe (EPIPE) is the
# command's own one line (``broken_pipe``). Not ENOENT: a name that is not there is often the data's (a path a
# record names) and keeps the dead-letter rule.
ENVIRONMENT_ERRNOS = frozenset(_ADVICE) | {errno.EPIPE}
# Beam re-raises a worker's exception as text inside its own; the errno survives only in that text.
# repr() quotes a file name holding ' with double quotes.
_ERRNO_IN_TEXT = re.compile(r"\[Errno (\d+)\][^:]*(?::\s*(?:'([^']+)'|\"([^\"]+)\"))?")


def resource_error(exc: BaseException, path: str | None = None, what: str = "") -> UserError | None:
    """A one-line ``UserError`` naming the path and what to do, for a full disk, a denied permission or a
    read-only filesystem anywhere in ``exc``'s chain (or its text, as Beam wraps it); None for other errors."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not link for link in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    # the OSError itself first, wherever it is in the chain: its file name as it is (Beam's wrapper above it
    # quotes it as text, which a name holding a quote does not survive)
    for link in chain:
        if isinstance(link, OSError) and link.errno in _ADVICE:
            return _message(link.errno, link.filename or path, what)
    for link in chain:
        match = _ERRNO_IN_TEXT.search(str(link))
        if match and int(match.group(1)) in _ADVICE:
            named = match.group(2) or match.group(3)
            return _message(int(match.group(1)), named or path, what)
    return None


def _message(code: int, path: str | None, what: str) -> UserError:
    where = f" writing {what}" if what else ""
    return UserError(f"{path or 'a file'}{where}: {_ADVICE[code]} (--debug shows the traceback)")


# A pipe whose reader left (errno EPIPE): Python's BrokenPipeError, or its text inside a wrapper's (Beam re-raises a
# DoFn's exception as ``RuntimeError("BrokenPipeError: [Errno 32] Broken pipe [while running 'Step']")`` in the same
# process, and a multi-process worker's as text in its own).
_BROKEN_PIPE_IN_TEXT = re.compile(rf"BrokenPipeError\b|\[Errno {errno.EPIPE}\]")


def broken_pipe(exc: BaseException | str | None) -> bool:
    """Whether ``exc`` (an exception, or a log message's text) is, wraps or reports a write to a pipe or socket whose
    reader is gone (EPIPE): anywhere in its chain (``__cause__``, ``__context__``) or in the text of a link of it."""
    if isinstance(exc, str):
        return bool(_BROKEN_PIPE_IN_TEXT.search(exc))
    seen: set[int] = set()
    current = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, BrokenPipeError) or isinstance(current, OSError) and current.errno == errno.EPIPE:
            return True
        if _BROKEN_PIPE_IN_TEXT.search(str(current)):
            return True
        current = current.__cause__ or current.__context__
    return False


def said_in_one_line(exc: BaseException | str | None) -> bool:
    """Whether the ``corpusforge`` command reports ``exc`` (an exception, or a log message's text about one) in one
    line of its own, so that a library's log of it with its traceback (Beam's, before it raises it) only buries that
    line: a broken pipe, or a full disk, a denied permission, a read-only filesystem."""
    if exc is None:
        return False
    return broken_pipe(exc) or resource_error(Exception(exc) if isinstance(exc, str) else exc) is not None
