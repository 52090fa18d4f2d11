"""One writer per run directory: ``RUN/.corpusforge.lock``, an flock that names its owner.

    with run_lock("runs/x", "build"):
        ...   # a second build, tokenize or train on runs/x fails at once, naming this one

The kernel releases an flock when its process dies, so a killed command leaves no lock that blocks the next
one; the file's pid and host catch a filesystem that ignores flock. Local run directories only.
"""
from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import json
import os
import socket
import sys
import time
from typing import Any, Iterator

from corpusforge.core import files, rundir
from corpusforge.core.errors import UserError

_held: dict[str, int] = {}


# flock itself unsupported where the folder lives (NFS without lockd, some FUSE mounts): the owner file alone tells
# whether a live process holds the folder, as on a filesystem that ignores flock
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS}
_CLAIM_WAIT_S = 30.0  # how long a claim waits for other claims of the same folder (each holds it for milliseconds)


@contextlib.contextmanager
def run_lock(run_dir: str, command: str, claim: bool = False) -> Iterator[None]:
    """Hold ``RUN/.corpusforge.lock`` while ``command`` writes to ``run_dir``: a second build, tokenize or
    train on the same directory fails at once, naming this one. The lock is an flock (released by the kernel
    when its process dies, so a killed command leaves no stale lock); the file names the owner's pid, host
    and command. Re-entrant within a process (``demo`` holds it around the commands it runs). Taking it first
    rolls back a swap that a killed rebuild left half done (``recover``). ``claim``: held only to record one file
    in the folder's marker (``claim_file``): a claim waits (up to ``_CLAIM_WAIT_S``) while another claim holds the
    folder, so commands started together (``xargs -P``, a job array) writing into one folder all run, and is
    refused at once only by a command that holds the folder for its whole run (a build); any command waits for
    a claim."""
    if not files.is_local(run_dir) or os.environ.get("RANK", "0") != "0":  # DDP: rank 0 holds it for all
        yield
        return
    created = not os.path.exists(run_dir)
    os.makedirs(run_dir, exist_ok=True)
    key = os.path.realpath(run_dir)
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    path = os.path.join(run_dir, rundir.LOCK)
    fd = _acquire(path, run_dir, claim)
    _held[key] = 1
    try:
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
                 "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        if claim:
            owner["claim"] = True
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(owner) + "\n").encode(), 0)
        os.fsync(fd)  # where flock is unsupported the file alone is the lock: other hosts must read its owner
        note = rundir.recover(run_dir)  # a rebuild killed mid-swap: every command sees the previous build whole
        if note:
            print(f"corpusforge: {note}", file=sys.stderr, flush=True)
        yield
    finally:
        del _held[key]
        with contextlib.suppress(OSError):
            mine, there = os.fstat(fd), os.lstat(path)
            # only while it is still this command's file: the folder may have been replaced meanwhile (export) and
            # another command's lock made in the new one
            if (mine.st_ino, mine.st_dev) == (there.st_ino, there.st_dev):
                os.unlink(path)  # raw-delete-ok: the lock file this command holds
        os.close(fd)
        if created:  # a command refused before writing anything leaves no empty run directory behind
            with contextlib.suppress(OSError):
                os.rmdir(run_dir)  # raw-delete-ok: only an empty directory this command created


_OWNER_WAIT_S = 1.0  # a lock taken but its owner not written yet: the holder is between two system calls
_EMPTY_STALE_S = 10.0  # an O_EXCL lock file still without an owner this long after it was made: its maker died


def _may_wait(owner: dict[str, Any] | None, claim: bool, began: float) -> bool:
    """Whether to try again for a lock ``owner`` holds: a claim holds a folder for milliseconds, so every command
    waits for one (up to ``_CLAIM_WAIT_S``); an owner not written yet is waited for briefly (a claim waits as for
    a claim); a command holding the folder for its run (a build) refuses at once."""
    waited = time.monotonic() - began
    if owner is None:
        return waited < (_CLAIM_WAIT_S if claim else _OWNER_WAIT_S)
    return bool(owner.get("claim")) and waited < _CLAIM_WAIT_S


def _flock_works(run_dir: str) -> bool:
    """Whether ``flock`` works in ``run_dir``, tried as a shared lock on the folder itself (no file made: a probe
    file in the folder was a name a holder listing it did not know; never the lock file: a failed try there would
    have to remove a file another process may just have made its lock)."""
    fd = os.open(run_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in _NO_FLOCK:
            return False
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return True  # flock works; someone holds the folder itself
        raise
    finally:
        os.close(fd)


def _acquire(path: str, run_dir: str, claim: bool = False) -> int:
    began = time.monotonic()
    if not _flock_works(run_dir):
        return _acquire_exclusive(path, run_dir, claim, began)
    while True:
        if os.path.islink(path):
            raise UserError(f"{path} is a symbolic link; remove it and run again")
        created = not os.path.exists(path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the holder we waited for made the folder and, leaving it empty, removed it
            os.makedirs(run_dir, exist_ok=True)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            owner = _owner(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                if created:  # a lock file this attempt made and could not lock for another reason: not left
                    with contextlib.suppress(OSError):  # (busy, the file may be another's new lock: kept)
                        os.unlink(path)  # raw-delete-ok: the lock file this attempt created
                raise
            if _may_wait(owner, claim, began):
                time.sleep(0.02)
                continue
            raise FolderBusy(_busy(run_dir, owner, claim), _describe(owner)) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # the previous holder removed the file as we opened it: lock the new one
            os.close(fd)
            continue
        owner = _owner(fd)
        if owner and owner.get("host") == socket.gethostname() and _alive(owner.get("pid")) \
                and owner.get("pid") != os.getpid():
            os.close(fd)  # a live process on this host wrote it, yet the flock was free: the filesystem ignores flock
            if _may_wait(owner, claim, began):
                time.sleep(0.02)
                continue
            raise FolderBusy(f"{run_dir} is in use by {_describe(owner)}; wait for it to finish (if that process is "
                             f"not a corpusforge command, delete {path})", _describe(owner))
        return fd  # free, or left by a process that is gone: stale, taken over


def _identity(st: os.stat_result) -> tuple:
    """A file's identity across a remove and a new create: the inode number alone is reused by the next file at once."""
    return st.st_ino, st.st_ctime_ns, st.st_dev


def _acquire_exclusive(path: str, run_dir: str, claim: bool, began: float) -> int:
    """The lock where ``flock`` is unsupported: the lock file made with ``O_EXCL`` (one process succeeds) is the
    lock, until its holder removes it. A file left by a process of this host that is gone is taken over; one of
    another host, whose process cannot be looked at, is refused naming it (delete it if that command is over)."""
    while True:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass
        if os.path.islink(path):
            raise UserError(f"{path} is a symbolic link; remove it and run again")
        seen = None
        try:
            with open(path, "rb") as held:
                seen = os.fstat(held.fileno())
                owner = json.loads(held.read(4096).decode() or "null")
        except FileNotFoundError:
            continue  # its holder just removed it
        except (ValueError, OSError):
            owner = None
        if not isinstance(owner, dict):
            owner = None
        if owner is not None:
            stale = owner.get("host") == socket.gethostname() and not _alive(owner.get("pid"))
        else:  # no owner written yet; or never: its maker died between the create and the write
            stale = seen is not None and time.time() - seen.st_mtime > _EMPTY_STALE_S
        if stale:
            # only the file whose owner was read: another process may have removed it and made its own lock since
            # (a window of one stat, not of the owner's read)
            with contextlib.suppress(FileNotFoundError):
                if _identity(os.stat(path)) == _identity(seen):
                    os.unlink(path)  # raw-delete-ok: the lock file of a process that is gone
            continue
        if _may_wait(owner, claim, began):
            time.sleep(0.02)
            continue
        raise FolderBusy(f"{_busy(run_dir, owner, claim)} (this filesystem has no flock: if that command is over, "
                         f"delete {path})", _describe(owner))


class FolderBusy(UserError):
    """A folder another live command holds (``holder``: that command, described)."""

    def __init__(self, message: str, holder: str = "another command"):
        super().__init__(message)
        self.holder = holder


def _busy(run_dir: str, owner: dict[str, Any] | None, claim: bool) -> str:
    if claim:
        return (f"the folder {run_dir} of --out is in use by {_describe(owner)}; wait for it to finish, or write to "
                "another folder")
    return f"{run_dir} is in use by {_describe(owner)}; wait for it to finish, or choose another run directory"


def _owner(fd: int) -> dict[str, Any] | None:
    try:
        return json.loads(os.pread(fd, 4096, 0).decode() or "null")
    except (ValueError, OSError):
        return None


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _describe(owner: dict[str, Any] | None) -> str:
    if not owner:
        return "another corpusforge command"
    return (f"`corpusforge {owner.get('command', '?')}` (pid {owner.get('pid', '?')} on {owner.get('host', '?')}, "
            f"since {owner.get('started', '?')})")


def holds(run_dir: str) -> bool:
    """Whether this process holds ``run_dir``'s lock (``run_lock``)."""
    return os.path.realpath(run_dir) in _held


def is_locked(run_dir: str) -> bool:
    """Whether a live command holds the run directory's lock (for ``inspect``: are temp dirs stale?)."""
    path = os.path.join(run_dir, rundir.LOCK)
    if not files.is_local(run_dir) or not os.path.exists(path):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def claim_file(path: str, command: str) -> None:
    """Before ``command`` writes the one file ``path`` (predict's PREDS.jsonl, embed's Arrow file), atomically in
    place of what is there: a file already there is replaced only when its folder's marker records it (a command
    wrote it before), never a user's file, nor a link, nor the command's own input named as its output; else one
    line. The name is recorded in that marker first, so the next run may replace what this one writes. The
    marker is read, changed and written under the folder's run lock, as every command that records an output
    does: unlocked, a build on that folder recording its outputs meanwhile lost them (its marker overwritten by
    the copy read before); a command holding the folder is named in one line."""
    if not files.is_local(path):
        return
    path = os.path.abspath(files.local_path(path))
    folder, name = os.path.split(path)
    if name in (rundir.MARKER, rundir.LOCK, rundir.JOURNAL):
        raise UserError(f"{path} is a name corpusforge keeps for its own bookkeeping; choose another --out")
    os.makedirs(folder, exist_ok=True)  # recorded now: a folder the write would make would record nothing
    with run_lock(folder, command, claim=True):
        marker = rundir.read_marker(folder)
        if os.path.lexists(path) and (os.path.islink(path) or marker is None or name not in marker["outputs"]):
            raise UserError(f"{path} exists and corpusforge did not write it (the {rundir.MARKER} of its folder does "
                            "not record it), so it is not replaced; choose another --out, or move it away")
        if marker is None or name not in marker["outputs"]:
            rundir.record_output(folder, name, derived=False)
