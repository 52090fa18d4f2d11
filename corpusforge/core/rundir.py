"""A run directory that corpusforge owns: where it may write, what it may delete, one writer at a time.

    RUN/.corpusforge-run.json   the marker: the outputs corpusforge wrote here (with the files of each output
                                directory), the fingerprint of clean/, and the clean/ fingerprint each derived
                                output (tokenizer/, tokens/, model/, report.html) was made from
    RUN/.corpusforge.lock       held by the one command writing here (``run_lock.py``)
    RUN/.corpusforge-swap.json  a journal, present only while a rebuild swaps its outputs in

corpusforge deletes only what the marker says it wrote, refuses a run directory that is ``/``, the home
directory, the current directory or one of its ancestors, and never deletes or writes through a symbolic
link (on a remote filesystem, gs://..., there are no links to check).
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import posixpath
import shutil
import stat
import uuid
from typing import Any, Iterator

from corpusforge.core import files
from corpusforge.core.errors import UserError
from corpusforge.core.shard_files import shard_files

MARKER = ".corpusforge-run.json"


@dataclasses.dataclass(frozen=True)
class RunPaths:
    """The run directory a command writes into, and whether it may replace what an earlier command wrote there
    (``output.run_dir`` and ``output.overwrite``)."""

    run_dir: str
    overwrite: bool = False
LOCK = ".corpusforge.lock"
JOURNAL = ".corpusforge-swap.json"
# Temporary directories a command makes in the run directory; a killed command leaves them behind.
TEMP_PREFIXES = (".tmp-build-", ".tmp-final-", ".tmp-old-", ".tmp-swap-")
CHECKPOINTS = ".checkpoints"


# ------------------------------------------------------------------------------------------ where

def check_run_dir(path: str) -> str:
    """The run directory to use for ``path`` (``~`` expanded, no trailing slash), or a ``UserError`` when it is
    a directory that holds more than one run: ``/``, the home directory or an ancestor of it, the current
    directory or an ancestor of it."""
    if not path or not path.strip():
        raise UserError("the run directory is empty; set output.run_dir (or -o) to a new directory such as runs/NAME")
    if not files.is_local(path):
        scheme, rest = path.split("://", 1)
        if "/" not in rest.strip("/"):
            raise UserError(f"refusing {path} as a run directory: it is the root of a bucket; choose a folder in it, "
                            f"such as {scheme}://{rest.strip('/')}/runs/NAME")
        return path.rstrip("/")
    local = os.path.expanduser(path[len("file://"):] if path.startswith("file://") else path)
    real = os.path.realpath(local)
    cwd = os.path.realpath(os.getcwd())
    home = os.path.realpath(os.path.expanduser("~"))
    why = None
    if real == os.path.realpath(os.sep):
        why = "the root of the filesystem"
    elif real == home or _is_ancestor(real, home):
        why = "your home directory" if real == home else "an ancestor of your home directory"
    elif real == cwd or _is_ancestor(real, cwd):
        why = "the current directory" if real == cwd else "an ancestor of the current directory"
    if why:
        raise UserError(f"refusing {path} as a run directory: it is {why}, and a run directory is one that "
                        "corpusforge may fill and clear; choose a new subdirectory such as runs/NAME")
    return local.rstrip("/") or local


def _is_ancestor(directory: str, path: str) -> bool:
    return path.startswith(directory.rstrip(os.sep) + os.sep)


# ----------------------------------------------------------------------------------------- marker

def read_marker(run_dir: str) -> dict[str, Any] | None:
    path = files.join(run_dir, MARKER)
    if not files.exists(path):
        return None
    try:
        marker = files.read_json(path)
    except ValueError:
        raise UserError(f"{path} is not valid JSON; it records what corpusforge wrote in {run_dir}: restore it "
                        "or move the run directory's contents away") from None
    marker.setdefault("outputs", {})
    marker.setdefault("derived", {})
    return marker


def write_marker(run_dir: str, marker: dict[str, Any]) -> None:
    files.write_json(files.join(run_dir, MARKER), {"corpusforge_run": 1, **marker})


def record_output(run_dir: str, name: str, listed: list[str] | None = None, derived: bool = True) -> None:
    """Note in the marker that corpusforge wrote ``RUN/name`` (``listed``: the files of a directory), and,
    for a derived output, the clean/ fingerprint it was made from."""
    marker = read_marker(run_dir) or {"outputs": {}, "derived": {}}
    marker["outputs"][name] = sorted(listed) if listed is not None else None
    if derived:
        marker["derived"][name] = marker.get("corpus_fingerprint")
    else:
        marker["derived"].pop(name, None)
    write_marker(run_dir, marker)


def corpus_fingerprint(clean_dir: str) -> str:
    """SHA-256 over the clean shards' names and bytes, in order: two builds share it only if clean/ is equal."""
    digest = hashlib.sha256()
    for path, _ in shard_files(clean_dir):
        digest.update(posixpath.basename(path).encode() + b"\0")
        if files.is_local(path):
            with open(path, "rb") as f:
                while chunk := f.read(1 << 22):
                    digest.update(chunk)
        else:
            digest.update(files.read_bytes(path))
    return digest.hexdigest()


# What to rerun when a derived output is older than clean/.
RERUN = {
    "tokenizer": "corpusforge tokenizer train --set output.overwrite=true",
    "tokens": "corpusforge tokenize --set output.overwrite=true",
    "model": "corpusforge train --set output.overwrite=true",
}


def check_fresh(run_dir: str, *names: str) -> None:
    """Refuse a derived output made from an earlier clean/ (the marker says which clean/ each came from)."""
    marker = read_marker(run_dir)
    if not marker or not marker.get("corpus_fingerprint"):
        return
    for name in names:
        made_from = marker["derived"].get(name, marker["corpus_fingerprint"])
        if made_from != marker["corpus_fingerprint"] and files.exists(files.join(run_dir, name)):
            raise UserError(f"{files.join(run_dir, name)} was made from an earlier build of {run_dir}/clean, "
                            f"not the current one; rerun `{RERUN[name]}` (with -c/--set as before)")


# -------------------------------------------------------------------------------------- ownership

def check_owned(run_dir: str, names: list[str], require_marker: bool = True) -> None:
    """Refuse unless every existing ``RUN/name`` is one corpusforge wrote: listed in the marker, not a link,
    and (for a directory with a file list) holding no file that corpusforge did not write. Without
    ``require_marker``, a run directory with no marker passes (the caller has its own proof, such as the
    token manifest listing its shards)."""
    existing = [n for n in names if _lexists(files.join(run_dir, n))]
    if not existing:
        return
    for name in existing:  # with or without a marker: never write or delete through a link
        path = files.join(run_dir, name)
        if files.is_local(path) and os.path.islink(path):
            raise UserError(f"{path} is a symbolic link; corpusforge does not delete or write through links: "
                            "remove the link and run again")
    marker = read_marker(run_dir)
    if marker is None and not require_marker:
        return
    if marker is None:
        raise UserError(f"{run_dir} holds {', '.join(existing)} but no {MARKER}, the record of what corpusforge "
                        "wrote there, so nothing in it is deleted; move those out of the way (or choose an empty "
                        "run directory) and run again")
    for name in existing:
        path = files.join(run_dir, name)
        if name not in marker["outputs"]:
            raise UserError(f"{path} is not one of the outputs corpusforge recorded in {run_dir}/{MARKER}; move it "
                            "out of the way and run again")
        if not files.is_local(path):
            continue
        listed = marker["outputs"][name]
        if listed is not None and os.path.isdir(path):
            stray = _first_unlisted(path, set(listed))
            if stray:
                raise UserError(f"{stray} was not written by corpusforge; move it out of {path} and run again "
                                "(corpusforge replaces only the files it wrote)")


def _first_unlisted(directory: str, listed: set[str]) -> str | None:
    for root, dirs, names in os.walk(directory):  # os.walk does not follow links
        for name in sorted(names + [d for d in dirs if os.path.islink(os.path.join(root, d))]):
            rel = os.path.relpath(os.path.join(root, name), directory)
            if rel not in listed:
                return os.path.join(root, name)
    return None


def listing(directory: str) -> list[str]:
    """The files under a directory, relative to it (for the marker)."""
    if not files.is_local(directory):
        return [files.relative(p, directory) for p, _ in files.match(files.join(directory, "*"))]
    out = []
    for root, _, names in os.walk(directory):
        out += [os.path.relpath(os.path.join(root, n), directory) for n in names]
    return sorted(out)


def _lexists(path: str) -> bool:
    return os.path.lexists(path) if files.is_local(path) else files.exists(path)


def remove_tree(path: str) -> None:
    """Delete a file or a directory tree that corpusforge made; links inside are removed, never followed."""
    if files.is_local(path):
        if os.path.islink(path) or not os.path.isdir(path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        else:
            shutil.rmtree(path)
        return
    if files.exists(path):
        from apache_beam.io.filesystems import FileSystems

        FileSystems.delete([path])


# ------------------------------------------------------------------------------------------- swap

def _rename(source: str, dest: str) -> None:
    if files.is_local(source):
        os.rename(source, dest)
    else:
        from apache_beam.io.filesystems import FileSystems

        FileSystems.rename([source], [dest])


def swap_in(run_dir: str, staged: str, names: tuple[str, ...], marker: dict[str, Any],
            retire: tuple[str, ...] = ()) -> None:
    """Move the outputs ``names`` from ``staged`` into ``run_dir``, replacing the old ones, and write the new
    ``marker``. The old outputs (and ``retire``: outputs that the new ones make stale, such as report.html)
    move aside first and are deleted only after the new ones are in place. A journal records the swap, so a
    process killed half way is undone by ``recover``: the previous build comes back whole."""
    backup = files.join(run_dir, f".tmp-old-{uuid.uuid4().hex[:12]}")
    present = [n for n in (*names, *retire) if _lexists(files.join(run_dir, n))]
    journal = {"staged": staged, "backup": backup, "names": list(names) + list(retire), "old": present,
               "old_marker": read_marker(run_dir)}
    files.write_json(files.join(run_dir, JOURNAL), journal)
    files.mkdirs(backup)
    for name in present:
        _rename(files.join(run_dir, name), files.join(backup, name))
    for name in names:
        if _lexists(files.join(staged, name)):
            _rename(files.join(staged, name), files.join(run_dir, name))
    write_marker(run_dir, marker)
    remove_tree(files.join(run_dir, JOURNAL))  # the commit point: from here on the new build stands
    remove_tree(backup)
    remove_tree(staged)


def temp_dir(run_dir: str, purpose: str = "swap") -> str:
    """A new temporary directory name in ``run_dir``: ``swap`` and ``final`` for outputs that ``swap_in`` then
    moves into place, ``build`` for a build's work (a killed command leaves them to ``clean_leftovers``)."""
    prefix = f".tmp-{purpose}-"
    if prefix not in TEMP_PREFIXES:
        raise ValueError(f"no temporary directory for {purpose!r}")
    return files.join(run_dir, f"{prefix}{uuid.uuid4().hex[:12]}")


def prepare_outputs(run_dir: str, names: tuple[str, ...], overwrite: bool) -> None:
    """Refuse to replace existing outputs unless asked to, and, when asked, unless corpusforge wrote them (the
    run directory's marker lists them). Nothing is deleted here: the new outputs replace the old ones only
    when they are complete (``swap_in``)."""
    existing = [files.join(run_dir, n) for n in names if files.exists(files.join(run_dir, n))]
    if existing and not overwrite:
        raise UserError(f"{run_dir} already holds a build ({', '.join(posixpath.basename(e) for e in existing)}); "
                        "choose another output.run_dir or pass --overwrite")
    check_owned(run_dir, list(names))
    files.mkdirs(run_dir)


def corpus_marker(run_dir: str, final: str, names: tuple[str, ...], fingerprint: str
                  ) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The run directory's marker once the corpus outputs ``names`` staged in ``final`` (a build, a rethreshold)
    are swapped in, and the old outputs it makes stale and retires (report.html; tokenizer/, tokens/ and model/
    stay, marked stale by the fingerprint ``check_fresh`` compares)."""
    marker = read_marker(run_dir) or {"outputs": {}, "derived": {}}
    for name in names:
        path = posixpath.join(final, name)
        if files.exists(path):
            marker["outputs"][name] = listing(path) if name in ("clean", "removed", "rejected") else None
        else:
            marker["outputs"].pop(name, None)
    changed = marker.get("corpus_fingerprint") != fingerprint  # an identical rebuild makes nothing stale
    marker["corpus_fingerprint"] = fingerprint
    retire = tuple(n for n in ("report.html",) if changed and n in marker["outputs"]
                   and is_regular(posixpath.join(run_dir, n)))
    for name in retire:
        marker["outputs"].pop(name)
        marker["derived"].pop(name, None)
    return marker, retire


def derived_marker(run_dir: str, name: str, listed: list[str], from_clean: bool) -> dict[str, Any]:
    """The run directory's marker once the output ``name`` (tokenizer/, tokens/) with the files ``listed`` is
    swapped in: made from this run's clean/ (``from_clean``), it records the corpus fingerprint it derives from;
    made from other input, none (``check_fresh`` has nothing to compare)."""
    marker = read_marker(run_dir) or {"outputs": {}, "derived": {}}
    marker["outputs"][name] = listed
    if from_clean:
        marker["derived"][name] = marker.get("corpus_fingerprint")
    else:
        marker["derived"].pop(name, None)
    return marker


def recover(run_dir: str) -> str | None:
    """Undo a swap that a killed process left half done (the old outputs go back); a note for the user."""
    path = files.join(run_dir, JOURNAL)
    if not files.exists(path):
        return None
    journal = files.read_json(path)
    staged, backup = _own_temp(run_dir, journal["staged"], path), _own_temp(run_dir, journal["backup"], path)
    if not all(isinstance(n, str) and n == posixpath.basename(n) not in ("", ".", "..") for n in journal["names"]):
        raise UserError(f"{path} is not a swap journal corpusforge wrote (its names are not outputs); move it away "
                        "and check the run directory's outputs")
    files.mkdirs(staged)
    for name in journal["names"]:
        current, old = files.join(run_dir, name), files.join(backup, name)
        moved_out = _lexists(old)
        if _lexists(current) and (moved_out or name not in journal["old"]):
            _rename(current, files.join(staged, name))  # the new one, moved in before the kill
        if moved_out:
            _rename(old, current)
    if journal.get("old_marker") is not None:
        write_marker(run_dir, journal["old_marker"])
    elif files.exists(files.join(run_dir, MARKER)):
        remove_tree(files.join(run_dir, MARKER))
    remove_tree(path)
    remove_tree(backup)
    remove_tree(staged)
    return f"restored the previous outputs of {run_dir}: a rebuild was killed while it swapped them"


def _own_temp(run_dir: str, recorded: Any, journal: str) -> str:
    """A temporary directory the journal names, as the child of ``run_dir`` it was made as: the journal may
    hold the path by which the run directory was reached before it was moved or copied, and recovery must
    never rename from or delete anything outside the run directory."""
    name = posixpath.basename(str(recorded).rstrip("/"))
    if not name.startswith(TEMP_PREFIXES) or "/" in name or os.sep in name:
        raise UserError(f"{journal} is not a swap journal corpusforge wrote (it names {recorded}); move it away "
                        "and check the run directory's outputs")
    return files.join(run_dir, name)


# ----------------------------------------------------------------------------------- stage checkpoints
# RUN/.checkpoints/ holds a build's stage checkpoints (output.stage_checkpoints): one directory per segment of
# stages, NN-<stages>/, complete once it holds SEGMENT_DONE, and the build's RUN_SECRET (owner-only).

RUN_SECRET = "run_secret"
SEGMENT_DONE = "_SUCCESS.json"


def checkpoints_dir(run_dir: str) -> str:
    return posixpath.join(run_dir, CHECKPOINTS)


def segment_dir(checkpoints: str, index: int, stages: list[str]) -> str:
    """The directory of the ``index``-th segment (running ``stages``) under ``checkpoints``."""
    return posixpath.join(checkpoints, f"{index:02d}-{'-'.join(stages) or 'read'}")


def link_checkpoints(source_run: str, run_dir: str, segments: list[tuple[str, str]]) -> None:
    """Replace the stage checkpoints of ``run_dir`` (local) by hard links to ``source_run``'s run secret and to
    its ``segments`` (``(their directory, our directory)`` pairs): the build then resumes after them, with the
    same secret, so its output is that of a build from scratch."""
    work_dir = checkpoints_dir(run_dir)
    shutil.rmtree(work_dir, ignore_errors=True)
    os.makedirs(work_dir, mode=0o700)
    os.link(os.path.join(checkpoints_dir(source_run), RUN_SECRET), os.path.join(work_dir, RUN_SECRET))
    for theirs, ours in segments:
        shutil.copytree(theirs, ours, copy_function=os.link)


def drop_checkpoints(run_dir: str) -> None:
    """Delete ``run_dir``'s stage checkpoints (local): they hold text from before the PII stage."""
    shutil.rmtree(checkpoints_dir(run_dir), ignore_errors=True)


# ---------------------------------------------------------------------------------------- leftovers

def leftovers(run_dir: str) -> list[tuple[str, int]]:
    """Temporary directories of killed commands in ``run_dir`` (and spilled text in .checkpoints), with sizes."""
    if not files.is_local(run_dir) or not os.path.isdir(run_dir):
        return []
    found = [os.path.join(run_dir, n) for n in sorted(os.listdir(run_dir)) if n.startswith(TEMP_PREFIXES)]
    checkpoints = os.path.join(run_dir, CHECKPOINTS)
    if os.path.isdir(checkpoints) and not os.path.islink(checkpoints):
        found += [os.path.join(checkpoints, n, "spill") for n in sorted(os.listdir(checkpoints))
                  if not os.path.islink(os.path.join(checkpoints, n))  # never delete through a link
                  and os.path.isdir(os.path.join(checkpoints, n, "spill"))]
    return [(p, _size(p)) for p in found]


def _size(path: str) -> int:
    if os.path.islink(path) or not os.path.isdir(path):
        return os.lstat(path).st_size
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def clean_leftovers(run_dir: str) -> list[str]:
    """Delete the leftovers of killed commands (call it holding the lock: no live command owns them); one
    line per directory removed, for the user."""
    notes = []
    for path, size in leftovers(run_dir):
        remove_tree(path)
        notes.append(f"removed {path} ({size / 1e6:.1f} MB), left behind by a killed run")
    return notes


def is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False
