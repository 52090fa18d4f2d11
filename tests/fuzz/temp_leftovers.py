"""Fuzz family ``temp_leftovers``: what killed commands leave in the temporary folder, among look-alikes, reclaimed
by ``rundir.reclaim_temporary_dirs`` (which every command runs when its scope starts).

Promise (``corpusforge/core/rundir.py``, "temporary folders of ours"): a ``corpusforge-*`` folder is deleted only
when its marker (``SCOPE_MARKER``, a regular file, not a link) says corpusforge made that very folder (its name)
and names an owner that is gone: a pid no process has, a pid reused by a process started at another time, a
process killed and not yet reaped, a boot before this one. Everything else survives byte for byte: a folder
without a marker, with one garbled, foreign, naming another folder, naming a live owner (this process, with its
start time, or a real scope held by a live child process), a marker that is a link or a folder, a link named like
ours (and what it points to), a file named like ours, a folder not named like ours; and nothing outside the
temporary folder is touched through a link inside a reclaimed folder. Two reclaimers at once (threads: flock locks
are per open file, so they exclude each other as two commands do) delete each folder once, without an error.
"""
from __future__ import annotations

import collections
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import threading

FAMILY = "temp_leftovers"
TRIED: collections.Counter = collections.Counter()

GONE = ("dead", "reused", "rebooted", "zombie", "killed_scope")
KEPT = ("no_marker", "garbled", "bad_types", "foreign", "other_name", "live", "live_scope", "marker_link",
        "marker_dir", "folder_link", "plain_file", "not_ours", "huge_pid", "empty_marker")

_HOLD = """
import sys, time
from corpusforge.core import rundir
with rundir.scoped_tempfiles() as scope:
    open(scope + "/held.txt", "w").write("x")
    print(scope, flush=True)
    time.sleep(600)
"""


def _start_ticks(pid: int) -> int:
    text = pathlib.Path(f"/proc/{pid}/stat").read_text()
    return int(text[text.rfind(")") + 2:].split()[19])


def _contents(rng: random.Random, folder: pathlib.Path, outside: pathlib.Path) -> None:
    """A random tree of what libraries leave (files, folders, links out of it, a read-only empty folder)."""
    for i in range(rng.randint(0, 5)):
        kind = rng.choice(["file", "dir", "link_out", "link_in", "readonly"])
        path = folder / f"{kind}-{i}"
        if kind == "file":
            path.write_bytes(os.urandom(rng.randint(0, 300)))
        elif kind == "dir":
            path.mkdir()
            (path / "inner.bin").write_bytes(os.urandom(rng.randint(0, 100)))
            (path / "deeper").mkdir()
            (path / "deeper" / "x").write_text("x")
        elif kind == "link_out":
            path.symlink_to(outside)  # deleting it must never delete what it points to
        elif kind == "link_in":
            path.symlink_to(folder)
        else:
            path.mkdir()
            path.chmod(0o500)


def _marker(folder: pathlib.Path, owner, *, made_by: str = "corpusforge", name: str | None = None) -> None:
    from corpusforge.core import rundir

    said = {"made_by": made_by, "folder": folder.name if name is None else name, "owner": owner}
    (folder / rundir.SCOPE_MARKER).write_text(json.dumps(said))


def _snapshot(path: pathlib.Path) -> dict:
    out = {}
    for root, dirs, names in os.walk(path):
        for name in dirs + names:
            p = pathlib.Path(root) / name
            st = os.lstat(p)
            out[str(p.relative_to(path))] = (st.st_mode, os.readlink(p) if p.is_symlink() else
                                             p.read_bytes() if p.is_file() else None)
    return out


def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    from corpusforge.core import rundir

    temp, outside = workdir / "temp", workdir / "outside"
    temp.mkdir(parents=True)
    outside.mkdir()
    (outside / "precious.txt").write_text("never deleted")
    boot = pathlib.Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    me = {"pid": os.getpid(), "start": _start_ticks(os.getpid()), "boot": boot}
    kinds = [rng.choice(GONE + KEPT) for _ in range(rng.randint(2, 10))]
    # At most one of each (a child process each), first, the live one before the killed one: a child's own scope
    # reclaims what killed commands left when it starts, which must be the reclaim under test.
    scopes = [k for k in ("live_scope", "killed_scope") if k in kinds]
    kinds = scopes + [k for k in kinds if k not in ("live_scope", "killed_scope")]
    children, gone = [], set()
    try:
        for i, kind in enumerate(kinds):
            TRIED[kind] += 1
            folder = temp / f"corpusforge-{kind}-{i}"
            if kind in ("live_scope", "killed_scope"):
                child = subprocess.Popen([sys.executable, "-c", _HOLD], stdout=subprocess.PIPE, text=True,
                                         env={**os.environ, "TMPDIR": str(temp)})
                children.append(child)
                scope = pathlib.Path(child.stdout.readline().strip())
                if kind == "killed_scope":
                    child.kill()
                    child.wait()
                    gone.add(scope.name)
                continue
            if kind == "plain_file":
                folder.write_bytes(os.urandom(20))
                continue
            if kind == "folder_link":
                target = workdir / f"target-{i}"
                target.mkdir()
                _contents(rng, target, outside)
                _marker(target, {"pid": _dead_pid(), "start": 1, "boot": None}, name=folder.name)
                folder.symlink_to(target)
                continue
            if kind == "not_ours":
                folder = temp / f"other-{i}"
            folder.mkdir()
            _contents(rng, folder, outside)
            dead = {"pid": _dead_pid(), "start": rng.randint(0, 10**9), "boot": rng.choice([None, me["boot"]])}
            if kind in ("dead", "not_ours"):
                _marker(folder, dead)
            elif kind == "reused":
                _marker(folder, {**me, "start": me["start"] - rng.randint(1, 10**6)})
            elif kind == "rebooted":
                _marker(folder, {**me, "boot": "another-boot"})
            elif kind == "zombie":
                child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
                children.append(child)
                _marker(folder, {"pid": child.pid, "start": _start_ticks(child.pid), "boot": me["boot"]})
                child.send_signal(signal.SIGKILL)  # not reaped until the reclaim ran: a zombie holds nothing
                while _state(child.pid) != "Z":
                    pass
            elif kind == "garbled":
                text = json.dumps({"made_by": "corpusforge", "folder": folder.name, "owner": dead})
                (folder / rundir.SCOPE_MARKER).write_bytes(
                    rng.choice([text[:rng.randrange(len(text))].encode(), os.urandom(rng.randint(1, 200)),
                                b"\xff" + text.encode(), ("[" * 5000).encode()]))
            elif kind == "bad_types":
                _marker(folder, rng.choice([{"pid": str(dead["pid"])}, {"pid": -dead["pid"]}, {"pid": 0}, [1, 2],
                                            "someone", None, {"pid": dead["pid"] + 0.5}, {"start": 3}]))
            elif kind == "huge_pid":
                _marker(folder, {"pid": rng.choice([2**31, 2**40, 2**70]), "start": 1, "boot": None})
            elif kind == "foreign":
                _marker(folder, dead, made_by=rng.choice(["someone", "corpusforge2", ""]))
            elif kind == "other_name":
                _marker(folder, dead, name=rng.choice(["corpusforge-else", "", "../x", folder.name + "/"]))
            elif kind == "live":
                _marker(folder, me)
            elif kind == "marker_link":
                real = workdir / f"marker-{i}.json"
                real.write_text(json.dumps({"made_by": "corpusforge", "folder": folder.name, "owner": dead}))
                (folder / rundir.SCOPE_MARKER).symlink_to(real)
            elif kind == "marker_dir":
                (folder / rundir.SCOPE_MARKER).mkdir()
            elif kind == "empty_marker":
                (folder / rundir.SCOPE_MARKER).write_bytes(b"")
            if kind in GONE:
                gone.add(folder.name)
        kept = sorted(p.name for p in temp.iterdir() if p.name not in gone)
        before = {name: _snapshot(temp / name) if (temp / name).is_dir() and not (temp / name).is_symlink()
                  else os.lstat(temp / name).st_mode for name in kept}
        before_outside = _snapshot(workdir)
        before_outside = {k: v for k, v in before_outside.items() if not k.startswith("temp")}
        removed: list[str] = []
        errors: list[BaseException] = []

        def reclaim():
            try:
                removed.extend(rundir.reclaim_temporary_dirs(str(temp)))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=reclaim) for _ in range(rng.choice([1, 2]))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, f"reclaim raised {errors[0]!r}"
        names = sorted(pathlib.Path(p).name for p in removed)
        assert names == sorted(gone), f"reclaimed {names}, expected {sorted(gone)} (kinds {kinds})"
        assert sorted(p.name for p in temp.iterdir()) == kept
        after = {name: _snapshot(temp / name) if (temp / name).is_dir() and not (temp / name).is_symlink()
                 else os.lstat(temp / name).st_mode for name in kept}
        assert after == before, f"a folder that is not a killed command's changed (kinds {kinds})"
        after_outside = {k: v for k, v in _snapshot(workdir).items() if not k.startswith("temp")}
        assert after_outside == before_outside, "something outside the temporary folder changed"
        TRIED["reclaimed"] += len(names)
        TRIED["kept"] += len(kept)
    finally:
        for child in children:
            child.kill()
            child.wait()
        for root, dirs, _ in os.walk(workdir):  # read-only folders the case made, so that its workdir goes
            for name in dirs:
                path = os.path.join(root, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o700)


def _state(pid: int) -> str:
    text = pathlib.Path(f"/proc/{pid}/stat").read_text()
    return text[text.rfind(")") + 2:].split()[0]
