"""A run directory that corpusforge owns: where it may write, what it may delete, one writer at a time.

    RUN/.corpusforge-run.json   the marker: the outputs corpusforge wrote here (with the files of each output
                                directory), the fingerprint of clean/, and the clean/ fingerprint each derived
                                output (tokenizer/, tokens/, model/, report.html) was made from
    RUN/.corpusforge.lock       held by the one command writing here (``run_lock.py``)
    RUN/.corpusforge-swap.json  a journal, present only while a rebuild swaps its outputs in

corpusforge deletes only what the marker says it wrote, refuses a run directory that is ``/``, the home
directory, the current directory or one of its ancestors, and never deletes or writes through a symbolic
link (on a remote filesystem, gs://..., there are no links to check).

This module is the one place that deletes, renames or replaces anything (``tests/core/test_deletion_rule.py``
fails on a raw deletion elsewhere). ``delete`` and ``move`` walk up from the path to the nearest marker and go
on only when the path's top folder there is one the marker records: an output (``outputs``) or a working
directory corpusforge made (``scratch``: ``.tmp-*``, ``.checkpoints``, recorded before it is created). A
folder merely *named* like one of ours (``.checkpoints``, ``.tmp-build-x``, ``spill``, ``manifest.json``) in
a directory whose marker does not record it is refused with one line, never deleted. Temporary files and
folders made outside any run directory (``temporary_dir``) are deleted only by the process that made them, but a
command's temporary folder (``scoped_tempfiles``), which holds a marker of its own naming that process, is
deleted by a later command once that process is gone (``reclaim_temporary_dirs``).
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
import tempfile
import uuid
from typing import Any, Iterator

from corpusforge.core import files
from corpusforge.core.dataset_card import CARD
from corpusforge.core.errors import UserError
from corpusforge.core.input_files import display_path
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


def check_outside_inputs(run_dir: str, inputs: list[tuple[str, list[str]]]) -> None:
    """``UserError`` when an input would read the run directory's own files: ``inputs`` holds each input path as
    named with the files its listing found. An input folder that is the run directory or holds it (``-i data
    --run-dir data/run``), or a glob that reaches into it, would read the build's outputs as input (a rebuild
    with ``--overwrite`` its previous ones: manifest, stats, shards, rejected lines, as documents). An input named
    inside the run directory (``-i run/removed``) is read before any output is replaced, and is allowed."""
    if not files.is_local(run_dir):
        return
    run = os.path.realpath(os.path.expanduser(_strip_scheme(run_dir)))
    for named, listed in inputs:
        if not files.is_local(named):
            continue
        real = os.path.realpath(os.path.expanduser(_strip_scheme(named)))
        if real != run and _is_ancestor(run, real):
            continue
        holds = real == run or (os.path.isdir(real) and _is_ancestor(real, run))
        if not holds and not os.path.lexists(_strip_scheme(named)):  # a glob: where do its matches lie?
            holds = any(_is_ancestor(run, os.path.realpath(_strip_scheme(path))) for path in listed)
        if holds:
            raise UserError(f"the input {named} holds the run directory {run_dir}: the build would read its own "
                            f"outputs as input; choose a run directory outside {named}")


def _strip_scheme(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def _is_ancestor(directory: str, path: str) -> bool:
    return path.startswith(directory.rstrip(os.sep) + os.sep)


# ----------------------------------------------------------------------------------------- marker

def read_marker(run_dir: str) -> dict[str, Any] | None:
    path = files.join(run_dir, MARKER)
    if not files.exists(path):
        return None
    try:
        marker = files.read_json(path)
    except (ValueError, OSError, RecursionError):
        raise UserError(f"{path} is not valid JSON; it records what corpusforge wrote in {run_dir}: restore it "
                        "or move the run directory's contents away") from None
    if not isinstance(marker, dict) or not isinstance(marker.setdefault("outputs", {}), dict) \
            or not isinstance(marker.setdefault("derived", {}), dict) \
            or not isinstance(marker.setdefault("scratch", []), list):
        raise UserError(f"{path} is not a marker corpusforge wrote; it records what corpusforge wrote in {run_dir}: "
                        "restore it or move the run directory's contents away")
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


def fingerprint_of(clean_dir: str) -> str:
    """The fingerprint of the clean/ folder an output is made from: the one its run's marker records when it
    is a run's clean/ (the build computed it), else computed from its shards."""
    if files.is_local(clean_dir):
        clean_dir = os.path.normpath(files.local_path(clean_dir))
    parent = _parent(clean_dir.rstrip("/"))
    if posixpath.basename(clean_dir.rstrip("/")) == "clean" and files.exists(files.join(parent, MARKER)):
        with contextlib.suppress(UserError):
            marker = read_marker(parent) or {}
            if "clean" in marker["outputs"] and marker.get("corpus_fingerprint"):
                return marker["corpus_fingerprint"]
    return corpus_fingerprint(clean_dir)


def same_path(a: str, b: str) -> bool:
    """``a`` and ``b`` name the same place (local: after resolving links and ``..``)."""
    if files.is_local(a) and files.is_local(b):
        return os.path.realpath(files.local_path(a)) == os.path.realpath(files.local_path(b))
    return a.rstrip("/") == b.rstrip("/")


_DENIED = ("403", "forbidden", "accessdenied", "access denied", "permissiondenied", "permission denied")


def _denied(exc: BaseException) -> bool:
    """Whether looking for a marker failed because this user may not read that folder (a remote store names it in
    the error's type or text: 403, Forbidden, AccessDenied, PermissionDenied). A user whose access starts at
    ``gs://bucket/data/`` may not read ``gs://bucket/`` at all; a run's marker sits beside outputs the same user
    reads, so a denied folder holds no run of theirs (and a rejected/ shard read by mistake is still rejected row by
    row: ``rejected_record``). Any other error (a transient one) stops the command: the answer is not known."""
    if isinstance(exc, PermissionError):
        return True
    text = f"{type(exc).__name__} {exc}".lower()
    return any(word in text for word in _DENIED)


def run_above(path: str, cache: dict[str, str | None] | None = None) -> str | None:
    """The nearest directory holding a marker at or above the folder of ``path`` (a file): a run directory, or a
    folder whose outputs a command records there (``tokenize.output``); None when there is none. ``cache`` (folder
    -> answer) makes the walk once per folder for many files. A local path is taken where it resolves: a link to a
    file, or a link anywhere above it (``LINK/part-0.jsonl`` with ``LINK -> RUN/rejected``), where it points, so no
    name of a run's entry escapes its run by a link. A folder whose marker cannot be looked for (``exists`` raises
    a remote error) stops the command in one line naming it: taken as "no marker", a run's rejected/ or stats would
    be read as documents; a folder this user may not read (``_denied``) ends the walk: no run lies there."""
    cache = {} if cache is None else cache
    if files.is_local(path):
        path = _resolved(files.local_path(path), cache)
    walked, directory, found = [], _parent(path), None
    while True:
        if directory in cache:
            found = cache[directory]
            break
        walked.append(directory)
        marker = files.join(directory, MARKER)
        try:
            if files.exists(marker):
                found = directory
                break
        except Exception as exc:  # noqa: BLE001 - any filesystem's error: whether a run lies above is not known
            if _denied(exc):  # a prefix this user may not read (a bucket's root): no run of theirs lies there
                break
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())
            raise UserError(f"cannot tell whether input {display_path(path)} lies in a corpusforge run: looking for "
                            f"{display_path(marker)} failed ({reason[:300]}); check the path and that this folder "
                            "can be read, then run again") from None
        above = _parent(directory)
        if above == directory:
            break
        directory = above
    for directory in walked:
        cache[directory] = found
    return found


def _resolved(path: str, cache: dict) -> str:
    """``os.path.realpath(path)``, its folder's resolved once per folder (``cache``, under a key no folder has: a
    NUL is in no path): ~20 us a file's path otherwise, as much as the rest of the walk for a folder of many files."""
    folder, name = os.path.split(path)
    if name in ("", ".", ".."):  # the path ends in a folder step: resolved whole
        return os.path.realpath(path)
    # not abspath first: it drops "LINK/.." as text, where the kernel goes up from LINK's target
    key = "\0real:" + (folder if os.path.isabs(folder) else os.getcwd() + "\0" + folder)
    real = cache.get(key)
    if real is None:
        real = cache[key] = os.path.realpath(folder or ".")
    path = os.path.join(real, name)
    return os.path.realpath(path) if os.path.islink(path) else path


def relative_parts(path: str, directory: str) -> list[str]:
    """``path``'s parts below ``directory`` (``run_above``'s answer): ``["rejected", "part-00000-of-00001.parquet"]``."""
    if files.is_local(path):
        path = os.path.realpath(files.local_path(path))
    return _parts(path, directory)


def is_build_marker(marker: dict) -> bool:
    """Whether a marker is a build's (it records clean/ or a corpus fingerprint), not only files a command wrote
    into a folder (``run_lock.claim_file``) or a ``tokenize.output`` folder's."""
    return "clean" in marker.get("outputs", {}) or bool(marker.get("corpus_fingerprint"))


# What of a run is read as input (docs/inputs.md, "corpusforge's own outputs as input"), for the build's readers
# (pipeline.readers) and the model-side commands' (evaluate, embed, finetune, predict: ``check_model_input``): the
# documents a run kept or removed are read back as they were; every other entry the marker of a run (or of a folder a
# command records its outputs in, as tokenize.output) records is refused before any work, in one line naming what it
# holds and what to pass. Told by the marker above the file (run_above) and what it records, not by the names alone:
# a user's folder named rejected/ with no marker above, or train/ in a build's run, is read.
DOCUMENT_OUTPUTS = ("clean", "removed")
_READ_AS_INPUT = frozenset({*DOCUMENT_OUTPUTS, "sample"})  # sample/: the input `corpusforge demo` writes for its build
_TOKENS = "holds token ids, not text"
_HOLDS = {"rejected": "holds rejected input records, a reason and a short preview each, not documents",
          "tokens": _TOKENS, "train": _TOKENS, "val": _TOKENS,
          "tokenizer": "holds a tokenizer, not documents", "model": "holds a model, not documents",
          "models": "holds models, not documents"}
_RECORDS = frozenset({"manifest.json", "stats.json", CARD, "report.html"})
BOOKKEEPING = frozenset({MARKER, LOCK, JOURNAL})  # corpusforge's own names, recorded or not
UNREADABLE_MARKER = "unreadable"  # a markers entry's key: the marker is not JSON, what it records is not known


def not_documents(run: str, top: str, markers: dict[str, dict]) -> str | None:
    """Why the entry ``top`` of the run directory ``run`` is not read as input (the end of a sentence naming it),
    or None: it is read (a run's documents, the demo's sample, a file of the user's own that no marker records).
    ``markers``: run -> its marker, filled as read (``UNREADABLE_MARKER``: not JSON)."""
    if top in _READ_AS_INPUT:
        return None
    marker = markers.get(run)
    if marker is None:
        try:
            marker = markers[run] = read_marker(run) or {}
        except UserError:  # a marker that is not JSON: what it records is not known, the names still are
            marker = markers[run] = {UNREADABLE_MARKER: True}
    if top in marker.get("scratch", ()) or top == CHECKPOINTS or top.startswith(".tmp-"):
        return "is a working folder of a corpusforge command (stage checkpoints, outputs being written), not documents"
    if top in BOOKKEEPING:
        return "is what the run records about itself, not documents"
    # An output's name says what it holds only when the marker records it as corpusforge's: a user's own train/
    # or manifest.json beside a build's outputs is theirs and read (an unreadable marker: the names are all known).
    if top not in marker.get("outputs", {}) and not marker.get(UNREADABLE_MARKER):
        return None
    if top in _HOLDS:
        return _HOLDS[top]
    if top in _RECORDS:
        return "is what the run records about itself, not documents"
    if top in marker.get("outputs", {}) and is_build_marker(marker):
        return "is one of its outputs that hold no documents"
    return None  # a file a command wrote into a folder of the user's (predict --out, embed --out): read as any is


def check_model_input(path: str, flag: str, cache: dict[str, str | None] | None = None,
                      markers: dict[str, dict] | None = None) -> bool:
    """Whether a model-side command (evaluate, embed, finetune, predict) reads the file ``path`` its ``flag`` named
    (or listed in the folder it named), by the build's own rule (``not_documents``): True, read it; False, skip it
    (the marker of a folder of the user's where a command wrote a file: bookkeeping, no input); a run's entry that
    holds no documents (rejected/, tokens/, stats.json...) is a one-line ``UserError`` naming what it holds and what
    to pass: its rows were each skipped (``evaluate --data RUN/rejected``: every one ``missing_text``), or a
    training file's first one refused for a field it lacks. ``cache`` and ``markers``: kept across a folder's
    files, each run's marker read once."""
    markers = {} if markers is None else markers
    run = run_above(path, cache)
    if run is None:
        return True
    parts = relative_parts(path, run) or [""]
    why = not_documents(run, parts[0], markers)
    if why is None:
        return True
    if parts[0] in BOOKKEEPING and not markers[run].get(UNREADABLE_MARKER) and not is_build_marker(markers[run]):
        return False
    shown = display_path(run.rstrip("/"))
    if "clean" in markers[run].get("outputs", {}):
        advice = f"pass its documents, {shown}/clean (or {shown}/removed), or a file of your own"
    else:
        advice = "pass a run's clean/ folder, or a file of your own"
    raise UserError(f"{flag} {display_path(path)} is not documents: {'/'.join([shown, *parts])} {why}; {advice}")


def check_not_a_run(directory: str, setting: str) -> None:
    """Refuse ``directory`` as a separate output folder when it is a build's run directory (its manifest.json
    is the build's, not ours to replace)."""
    marker = read_marker(directory) if files.exists(files.join(directory, MARKER)) else None
    if marker and is_build_marker(marker):
        raise UserError(f"{setting} {directory} is a build's run directory; set it to a folder of its own (or leave "
                        "it empty for the run directory's default)")


# What to rerun when a derived output is older than clean/.
RERUN = {
    "tokenizer": "corpusforge tokenizer train --overwrite",
    "tokens": "corpusforge tokenize --overwrite",
    "model": "corpusforge train --overwrite",
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
        return [files.relative(p, directory) for p, _ in files.match(files.join(files.escape(directory), "*"))]
    out = []
    for root, _, names in os.walk(directory):
        out += [os.path.relpath(os.path.join(root, n), directory) for n in names]
    return sorted(out)


def _lexists(path: str) -> bool:
    return os.path.lexists(path) if files.is_local(path) else files.exists(path)


def _remove_tree(path: str) -> None:
    """Delete a file or a directory tree (no ownership check: callers in this module have made it); links
    inside are removed, never followed."""
    if files.is_local(path):
        path = files.local_path(path)
        if os.path.islink(path) or not os.path.isdir(path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        else:
            shutil.rmtree(path)
        return
    if files.exists(path):
        from apache_beam.io.filesystems import FileSystems

        FileSystems.delete([path])


def _parent(path: str) -> str:
    if files.is_local(path):
        return os.path.dirname(path)
    scheme, rest = path.split("://", 1)
    return f"{scheme}://{posixpath.dirname(rest.rstrip('/'))}" if "/" in rest.strip("/") else path


def _parts(path: str, base: str) -> list[str]:
    rel = os.path.relpath(path, base) if files.is_local(path) else posixpath.relpath(
        path.split("://", 1)[1], base.split("://", 1)[1])
    return [p for p in rel.replace(os.sep, "/").split("/") if p not in ("", ".")]


def owner(path: str) -> tuple[str, dict[str, Any], list[str]]:
    """``(directory, its marker, path's parts below it)`` for the nearest directory above ``path`` holding a
    marker that records ``path``'s top folder there as corpusforge's (an output or a scratch directory), or a
    one-line ``UserError``: a path no marker records is never deleted, replaced or renamed."""
    path = str(path)
    if files.is_local(path):
        path = os.path.abspath(files.local_path(path))
    directory = _parent(path)
    while True:
        if files.exists(files.join(directory, MARKER)):
            marker = read_marker(directory)
            parts = _parts(path, directory)
            top = parts[0] if parts else ""
            if not parts or ".." in parts or not (top in marker["outputs"] or top in marker["scratch"]):
                raise UserError(f"{path} is not among what corpusforge recorded in {files.join(directory, MARKER)}, "
                                "so it is not deleted or replaced; move it out of the way and run again")
            if files.is_local(path):  # never through a link: each folder between the marker and the path
                step = directory
                for part in parts[:-1]:
                    step = os.path.join(step, part)
                    if os.path.islink(step):
                        raise UserError(f"{step} is a symbolic link; corpusforge does not delete or write through "
                                        "links: remove the link and run again")
            listed = marker["outputs"].get(top)
            if listed is not None and len(parts) > 1:  # a file of an output that lists its files
                rel = "/".join(parts[1:])
                if rel not in listed and not any(name.startswith(rel + "/") for name in listed):
                    raise UserError(f"{path} was not written by corpusforge (not listed in "
                                    f"{files.join(directory, MARKER)}); move it out of the way and run again")
            return directory, marker, parts
        above = _parent(directory)
        if above == directory:
            raise UserError(f"{path} is in no directory that corpusforge recorded as its own (no {MARKER} above it "
                            "lists it), so it is not deleted or replaced; move it out of the way and run again")
        directory = above


def delete(path: str) -> None:
    """The one deletion: remove the file or tree ``path`` when a marker records it as corpusforge's
    (``owner``); a whole output must hold nothing corpusforge did not write (``check_owned``). A scratch
    directory deleted whole is forgotten by its marker. Nothing there: nothing to do."""
    path = str(path)
    if not _lexists(files.local_path(path) if files.is_local(path) else path):
        return
    directory, marker, parts = owner(path)
    if len(parts) == 1 and parts[0] in marker["outputs"]:
        check_owned(directory, parts)
    _remove_tree(path)
    if len(parts) == 1 and parts[0] in marker["scratch"]:
        forget_scratch(directory, parts[0])


def move(source: str, dest: str) -> None:
    """Rename ``source`` to ``dest`` (replacing a file there), both recorded as corpusforge's (``owner``)."""
    source, dest = str(source), str(dest)
    owner(source)
    owner(dest)
    if files.is_local(dest) and _lexists(files.local_path(dest)) and not os.path.isfile(files.local_path(dest)):
        raise UserError(f"{dest} exists and is not a file; corpusforge does not move anything over it")
    if files.is_local(source):
        os.replace(files.local_path(source), files.local_path(dest))
    else:
        _rename(source, dest)


def make_scratch(run_dir: str, name: str | None = None, prefix: str = ".tmp-swap-", private: bool = False) -> str:
    """Record ``RUN/name`` (default: ``prefix`` + a random suffix) as a working directory of corpusforge's in
    the marker, then create it (mode 0700 with ``private``); returns its path. A folder of that name that
    the marker does not record (the user's own ``.checkpoints``) is refused, never reused or deleted."""
    name = name or f"{prefix}{uuid.uuid4().hex[:12]}"
    path = files.join(run_dir, name)
    marker = read_marker(run_dir) or {"outputs": {}, "derived": {}, "scratch": []}
    if name not in marker["scratch"]:
        if _lexists(files.local_path(path) if files.is_local(path) else path):
            raise UserError(f"{path} exists but corpusforge did not make it ({MARKER} does not record it), so it "
                            "is neither used nor deleted; move it out of the way and run again")
        marker["scratch"].append(name)
        files.mkdirs(run_dir)
        write_marker(run_dir, marker)
    elif files.is_local(path) and os.path.islink(path):
        raise UserError(f"{path} is a symbolic link; corpusforge does not delete or write through links: remove "
                        "the link and run again")
    if private:
        files.make_private_dir(path)
    else:
        files.mkdirs(path)
    return path


def forget_scratch(run_dir: str, name: str) -> None:
    marker = read_marker(run_dir)
    if marker is not None and name in marker["scratch"]:
        marker["scratch"].remove(name)
        if not marker["scratch"] and not marker["outputs"] and not marker.get("corpus_fingerprint"):
            _remove_tree(files.join(run_dir, MARKER))  # it recorded only that: a failed first command leaves nothing
        else:
            write_marker(run_dir, marker)


_MADE_HERE: set[str] = set()  # temporary paths this process created itself (mkdtemp: exclusive), outside runs


def temporary_dir(prefix: str, parent: str | None = None) -> str:
    """A new directory (``tempfile.mkdtemp``: exclusive, never an existing one) that only this process may
    delete, with ``remove_temporary``."""
    path = tempfile.mkdtemp(prefix=prefix, dir=parent)
    _MADE_HERE.add(os.path.abspath(path))
    return path


def temporary_file(prefix: str, suffix: str = "") -> tuple[int, str]:
    """``(fd, path)`` of a new temporary file (``tempfile.mkstemp``) that only this process may delete."""
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix)
    _MADE_HERE.add(os.path.abspath(path))
    return fd, path


@contextlib.contextmanager
def tempfiles_in(path: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """While open, this process's ``tempfile`` and the ``TMPDIR`` of the processes it starts name ``path`` (and
    ``env`` is set); afterwards both are as they were. multiprocessing's own folder (the forkserver's and resource
    sharer's sockets), which it makes once per process and keeps until the process exits, is made before, where it
    would have been: made inside, a later command in the same process (tests, a notebook) would find it gone."""
    import multiprocessing.util

    multiprocessing.util.get_temp_dir()
    saved_tempdir = tempfile.tempdir
    saved_env = {name: os.environ.get(name) for name in ("TMPDIR", *(env or {}))}
    tempfile.tempdir = path
    os.environ.update(env or {}, TMPDIR=path)
    try:
        yield path
    finally:
        tempfile.tempdir = saved_tempdir
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def scoped_tempfiles(prefix: str = "corpusforge-") -> Iterator[str | None]:
    """While open, whatever this process (``tempfile``) and the processes it starts (``TMPDIR``) put in the
    temporary folder goes into one new folder of ours (``tempfiles_in``), deleted with all it holds when the block
    ends, however it ends. Libraries leave their own there: Beam a directory per Pipeline object, removed only when
    the pipeline runs (one per build whose graph construction failed), the PortableRunner's staging files, a job
    server's ``beam-temp`` root when it fails to start, torch's elastic launcher its ``torchelastic_``
    directories; tracking each library's names would miss the next one. Yields the folder, or None (and changes
    nothing) when the temporary folder cannot be written: a command that needs it then says so itself."""
    reclaim_temporary_dirs()  # what killed commands left (their markers say so)
    try:
        path = _scope_dir(prefix)
    except OSError:
        yield None
        return
    # What is meant to outlive a command stays where it would be without the scope: torch's compile cache (its
    # default, torch/_inductor/runtime/cache_dir_utils.py: the temporary folder's torchinductor_<user>, which
    # torch then writes into TORCHINDUCTOR_CACHE_DIR for the rest of the process).
    kept = {name: value for name, value in lasting_caches().items() if name not in os.environ}
    try:
        with tempfiles_in(path, kept):
            yield path
    finally:
        with contextlib.suppress(OSError):  # a file a library made read-only: reclaimed once this process is gone
            _release_scope(path)


# ------------------------------------------------------------------------------ temporary folders of ours
# A command's temporary folder (scoped_tempfiles) holds a marker, SCOPE_MARKER, written by the process that made
# it, naming the folder and that process (pid, start time, boot), and locked (flock) by that process while it
# lives: the kernel drops the lock however the process ends, SIGKILL included. A command killed before its scope
# ended leaves the folder behind; the next command reclaims it (``reclaim_temporary_dirs``): only a folder of
# ours by name prefix *and* marker, never through a link, never one whose marker is missing, foreign, names
# another folder, is locked, or names a process still alive (its pid alive with the same start time: a reused
# pid does not count). Two commands starting at once: the one holding the marker's lock deletes, the other
# skips; the marker goes last, so a reclaimer killed midway leaves a folder the next one reclaims.

SCOPE_MARKER = ".corpusforge-temporary.json"
SCOPE_PREFIX = "corpusforge-"
_SCOPE_LOCKS: dict[str, int] = {}  # folder -> this process's open, locked descriptor of its marker


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _start_time(pid: int) -> tuple[str, int] | None:
    """``(state, start time in clock ticks since boot)`` of process ``pid`` (Linux ``/proc``), None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat_line = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = stat_line[stat_line.rfind(")") + 2:].split()  # the name, in parentheses, may hold spaces
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def _process_identity() -> dict[str, Any]:
    started = _start_time(os.getpid())
    return {"pid": os.getpid(), "start": started[1] if started else None, "boot": _boot_id()}


def _owner_alive(owner: Any) -> bool:
    """Whether the process a marker names may still run (in doubt: yes)."""
    pid = owner.get("pid") if isinstance(owner, dict) else None
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid < 2**31:  # a pid_t
        return True  # not a marker we wrote: never reclaimed
    boot = _boot_id()
    if owner.get("boot") is not None and boot is not None and owner["boot"] != boot:
        return False  # the machine rebooted since: every process of then is gone
    try:
        os.kill(owner["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    except OSError:
        return True
    now = _start_time(owner["pid"])
    if now is None:
        return True
    state, start = now
    if state == "Z":
        return False  # killed, not yet reaped: it holds nothing any more
    return not (isinstance(owner.get("start"), int) and owner["start"] != start)  # a reused pid is another process


def _scope_dir(prefix: str) -> str:
    """``temporary_dir(prefix)`` with our marker in it, locked until ``_release_scope``."""
    path = temporary_dir(prefix)
    try:
        fd = os.open(os.path.join(path, SCOPE_MARKER), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        remove_temporary(path)
        raise
    _SCOPE_LOCKS[path] = fd
    # locked before the marker says anything: a reclaimer that opens it first reads it empty, so not ours
    _lock(fd, blocking=True)
    os.write(fd, json.dumps({"made_by": "corpusforge", "folder": os.path.basename(path),
                             "owner": _process_identity()}).encode())
    return path


def _lock(fd: int, blocking: bool) -> bool:
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the owner's pid and start time alone tell
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except OSError:
        return False
    return True


def _release_scope(path: str) -> None:
    """Delete a folder ``_scope_dir`` made (once), then drop its marker's lock, held meanwhile so that no reclaimer
    starts on it. What cannot be deleted (a file a library made read-only) stays, marked: reclaimed once this
    process is gone."""
    fd = _SCOPE_LOCKS.pop(path, None)
    if fd is None:
        return
    try:
        folder = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW)
        try:
            _remove_scope_contents(folder)
        finally:
            os.close(folder)
        os.rmdir(path)
        _MADE_HERE.discard(os.path.abspath(path))
    finally:
        os.close(fd)


_PROCESS_SCOPES: list[str] = []


def own_process_tempfiles() -> str | None:
    """For a process that runs one command and then exits (the ``corpusforge`` command): multiprocessing's own
    folder (``pymp-*``: the forkserver's and resource sharer's sockets), which it makes once per process and
    removes only at a normal exit, is made inside a marked folder of ours, which goes after it. An exit that skips
    multiprocessing's removal leaves nothing of its own: ``os._exit`` after Ctrl-C (``end_process_tempfiles``
    first) and SIGKILL (the next command reclaims ours, ``reclaim_temporary_dirs``). The folder, or None when
    multiprocessing's was made before (it stays where it is) or the temporary folder cannot be written."""
    import multiprocessing.util

    reclaim_temporary_dirs()
    try:
        path = _scope_dir(SCOPE_PREFIX + "process-")
    except OSError:
        return None
    saved = tempfile.tempdir
    tempfile.tempdir = path
    try:
        made = multiprocessing.util.get_temp_dir()
    finally:
        tempfile.tempdir = saved
    if os.path.dirname(made) != path:
        _release_scope(path)
        return None
    _PROCESS_SCOPES.append(path)
    # at a normal exit, after multiprocessing removed its own folder (its exit priority, -100, runs first)
    multiprocessing.util.Finalize(None, _release_scope, args=(path,), exitpriority=-200)
    return path


def end_process_tempfiles() -> None:
    """Delete ``own_process_tempfiles``' folder now: the process is about to end without its exit handlers
    (``os._exit``)."""
    while _PROCESS_SCOPES:
        with contextlib.suppress(OSError):
            _release_scope(_PROCESS_SCOPES.pop())


def reclaim_temporary_dirs(parent: str | None = None) -> list[str]:
    """Delete the temporary folders (``SCOPE_PREFIX``, in ``parent``: the temporary folder) that killed corpusforge
    processes left: only those whose marker says corpusforge made them and whose owner is gone. The folders
    removed."""
    parent = parent or tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(parent) if n.startswith(SCOPE_PREFIX)]
    except OSError:
        return []
    removed = []
    for name in sorted(names):
        with contextlib.suppress(OSError):
            if _reclaim_one(parent, name):
                removed.append(os.path.join(parent, name))
    return removed


def _reclaim_one(parent: str, name: str) -> bool:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW
    try:
        folder = os.open(os.path.join(parent, name), flags)  # never through a link
    except OSError:
        return False
    try:
        info = os.fstat(folder)
        if not stat.S_ISDIR(info.st_mode) or (hasattr(os, "geteuid") and info.st_uid != os.geteuid()):
            return False
        try:
            marker = os.open(SCOPE_MARKER, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
        except OSError:
            return False  # no marker (a folder merely named like ours, or one its maker has not marked yet)
        try:
            if not stat.S_ISREG(os.fstat(marker).st_mode) or not _lock(marker, blocking=False):
                return False  # its owner (or another reclaimer) holds it
            # still the marker in that folder (a reclaimer before us may have deleted both) and the folder still
            # the one at that name
            here = os.lstat(os.path.join(parent, name))
            if (os.stat(SCOPE_MARKER, dir_fd=folder, follow_symlinks=False).st_ino != os.fstat(marker).st_ino
                    or (here.st_dev, here.st_ino) != (info.st_dev, info.st_ino)):
                return False
            try:
                said = json.loads(os.read(marker, 65536).decode())
            except (ValueError, RecursionError):  # garbled, not UTF-8, nested past the parser: not ours
                return False
            if (not isinstance(said, dict) or said.get("made_by") != "corpusforge" or said.get("folder") != name
                    or _owner_alive(said.get("owner"))):
                return False
            _remove_scope_contents(folder)
            os.rmdir(os.path.join(parent, name))
            return True
        finally:
            os.close(marker)
    finally:
        os.close(folder)


def _remove_scope_contents(folder: int) -> None:
    """Delete what the open directory ``folder`` (a scope folder) holds, its marker last: whoever is stopped
    midway leaves a folder still marked, which the next command reclaims. Links are removed, never followed."""
    for entry in os.listdir(folder):
        if entry == SCOPE_MARKER:
            continue
        if stat.S_ISDIR(os.stat(entry, dir_fd=folder, follow_symlinks=False).st_mode):
            shutil.rmtree(entry, dir_fd=folder)
        else:
            os.unlink(entry, dir_fd=folder)
    os.unlink(SCOPE_MARKER, dir_fd=folder)


def lasting_caches() -> dict[str, str]:
    """Environment variables naming caches that libraries keep in the temporary folder across processes, each
    set to where the library would put it (torch's inductor: ``default_cache_dir``, replicated so that a command
    that never compiles does not import torch for it)."""
    import getpass
    import re

    try:
        user = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    user = re.sub(r'[\\/:*?"<>|]', "_", user)
    return {"TORCHINDUCTOR_CACHE_DIR": os.path.join(tempfile.gettempdir(), "torchinductor_" + user)}


def claim_new_dir(path: str) -> str:
    """Create the directory ``path``, which must not exist (``os.mkdir``: exclusive), as one that only this
    process may delete (``remove_temporary``)."""
    path = os.path.abspath(str(path))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.mkdir(path)
    _MADE_HERE.add(path)
    return path


def is_temporary(path: str) -> bool:
    return os.path.abspath(str(path)) in _MADE_HERE


def remove_temporary(path: str) -> None:
    """Delete what ``temporary_dir``/``temporary_file`` made in this process; anything else is refused."""
    key = os.path.abspath(str(path))
    if key not in _MADE_HERE:
        raise UserError(f"{path} was not made by this corpusforge process, so it is not deleted")
    _remove_tree(key)
    _MADE_HERE.discard(key)


def publish_dir(tmp: str, out_dir: str, locked: bool = False) -> None:
    """Put the local directory ``tmp`` (made by ``temporary_dir`` in this process) at ``out_dir``, with a
    marker listing its files. An earlier ``out_dir`` is replaced only when it is empty or its own marker
    records everything in it (an earlier publication); it is moved aside first and deleted once the new one is
    in place. Anything else there is refused with one line and left as it was. ``locked``: the caller holds
    ``out_dir``'s run lock (its lock file goes with the old folder)."""
    tmp, out_dir = os.path.abspath(str(tmp)), os.path.abspath(str(out_dir))
    if tmp not in _MADE_HERE:
        raise UserError(f"{tmp} was not made by this corpusforge process; nothing was published")
    if os.path.islink(out_dir):
        raise UserError(f"{out_dir} is a symbolic link; corpusforge does not delete or write through links: remove "
                        "the link and run again")
    aside = None
    if os.path.lexists(out_dir):
        # the lock file is this command's when it holds out_dir (``locked``: the caller's run_lock): it goes with
        # the folder
        ours = (LOCK,) if locked and os.path.isdir(out_dir) else ()
        present = sorted(n for n in os.listdir(out_dir) if n not in ours) if os.path.isdir(out_dir) else [None]
        if present and (None in present or read_marker(out_dir) is None):
            raise UserError(f"{out_dir} exists and holds files corpusforge did not record there (no {MARKER}), so it "
                            "is not replaced; choose a new or empty directory")
        if present:
            check_owned(out_dir, [n for n in present if n not in (MARKER, LOCK)])
        if present or ours:
            aside = f"{tmp}.old"
            os.rename(out_dir, aside)
        else:
            os.rmdir(out_dir)  # empty: nothing of anyone's is lost
    write_marker(tmp, {"outputs": {n: (listing(os.path.join(tmp, n)) if os.path.isdir(os.path.join(tmp, n)) else None)
                                   for n in sorted(os.listdir(tmp))}, "derived": {}, "scratch": []})
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp made it 0700; a published directory has the umask's mode
    os.rename(tmp, out_dir)
    _MADE_HERE.discard(tmp)
    if aside is not None:
        _remove_tree(aside)


# ------------------------------------------------------------------------------------------- swap

def _rename(source: str, dest: str) -> None:
    if files.is_local(source):
        os.rename(source, dest)
    else:
        from apache_beam.io.filesystems import FileSystems

        FileSystems.rename([source], [dest])


def swap_in(run_dir: str, staged: str, names: tuple[str, ...], marker: dict[str, Any],
            retire: tuple[str, ...] = ()) -> None:
    """Move the outputs ``names`` from ``staged`` (a scratch directory of ``run_dir``, ``make_scratch``) into
    ``run_dir``, replacing the old ones, and write the new ``marker``. The old outputs (and ``retire``: outputs
    that the new ones make stale, such as report.html) move aside first and are deleted only after the new ones
    are in place. A journal records the swap, so a process killed half way is undone by ``recover``: the
    previous build comes back whole."""
    current = read_marker(run_dir)
    staged_name = posixpath.basename(str(staged).rstrip("/"))
    if current is None or staged_name not in current["scratch"] or files.join(run_dir, staged_name) != staged:
        raise UserError(f"{staged} is not a working directory corpusforge recorded in {run_dir}; nothing was swapped")
    for name in (*names, *retire):
        if _lexists(files.join(run_dir, name)) and name not in current["outputs"]:
            raise UserError(f"{files.join(run_dir, name)} is not one of the outputs corpusforge recorded in "
                            f"{run_dir}/{MARKER}; move it out of the way and run again")
    backup_name = f".tmp-old-{uuid.uuid4().hex[:12]}"
    backup = files.join(run_dir, backup_name)
    current["scratch"].append(backup_name)
    write_marker(run_dir, current)
    present = [n for n in (*names, *retire) if _lexists(files.join(run_dir, n))]
    journal = {"staged": staged, "backup": backup, "names": list(names) + list(retire), "old": present,
               "old_marker": current}
    files.write_json(files.join(run_dir, JOURNAL), journal)
    files.mkdirs(backup)
    for name in present:
        _rename(files.join(run_dir, name), files.join(backup, name))
    for name in names:
        if _lexists(files.join(staged, name)):
            _rename(files.join(staged, name), files.join(run_dir, name))
    marker = {**marker, "scratch": list(current["scratch"])}
    write_marker(run_dir, marker)
    _remove_tree(files.join(run_dir, JOURNAL))  # the commit point: from here on the new build stands
    _remove_tree(backup)
    _remove_tree(staged)
    marker["scratch"] = [n for n in marker["scratch"] if n not in (backup_name, staged_name)]
    write_marker(run_dir, marker)


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


def derived_marker(run_dir: str, name: str, listed: list[str], made_from: str | None) -> dict[str, Any]:
    """The run directory's marker once the output ``name`` (tokenizer/, tokens/) with the files ``listed`` is
    swapped in, recording the fingerprint of the clean/ it was made from (``fingerprint_of`` its input, whatever
    flags named it), which ``check_fresh`` compares with the run's."""
    marker = read_marker(run_dir) or {"outputs": {}, "derived": {}, "scratch": []}
    marker["outputs"][name] = listed
    if made_from is not None:
        marker["derived"][name] = made_from
    else:
        marker["derived"].pop(name, None)
    return marker


def recover(run_dir: str) -> str | None:
    """Undo a swap that a killed process left half done (the old outputs go back); a note for the user."""
    path = files.join(run_dir, JOURNAL)
    if not files.exists(path):
        return None
    try:
        journal = files.read_json(path)
        staged, backup = _own_temp(run_dir, journal["staged"], path), _own_temp(run_dir, journal["backup"], path)
        names, old, old_marker = journal["names"], journal["old"], journal.get("old_marker")
    except (ValueError, KeyError, TypeError, OSError, RecursionError):
        raise UserError(f"{path} is not a swap journal corpusforge wrote; move it away and check the run "
                        "directory's outputs") from None
    if not isinstance(names, list) or not all(isinstance(n, str) and n == posixpath.basename(n) not in ("", ".", "..")
                                              for n in names):
        raise UserError(f"{path} is not a swap journal corpusforge wrote (its names are not outputs); move it away "
                        "and check the run directory's outputs")
    recorded = (read_marker(run_dir) or {}).get("scratch", [])
    for temp in (staged, backup):
        if posixpath.basename(temp) not in recorded and _lexists(temp):
            raise UserError(f"{path} names {temp}, which corpusforge did not record as its own in {MARKER}; move the "
                            "journal away and check the run directory's outputs")
    files.mkdirs(staged)
    for name in names:
        current, moved = files.join(run_dir, name), files.join(backup, name)
        moved_out = _lexists(moved)
        if _lexists(current) and (moved_out or name not in old):
            _rename(current, files.join(staged, name))  # the new one, moved in before the kill
        if moved_out:
            _rename(moved, current)
    if isinstance(old_marker, dict):
        write_marker(run_dir, old_marker)
    elif files.exists(files.join(run_dir, MARKER)):
        _remove_tree(files.join(run_dir, MARKER))
    _remove_tree(path)
    _remove_tree(backup)
    _remove_tree(staged)
    for temp in (staged, backup):
        forget_scratch(run_dir, posixpath.basename(temp))
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
    same secret, so its output is that of a build from scratch. Only a ``.checkpoints`` the marker records is
    replaced (a folder of the user's of that name is refused)."""
    delete(checkpoints_dir(run_dir))
    work_dir = make_scratch(run_dir, CHECKPOINTS, private=True)
    os.link(os.path.join(checkpoints_dir(source_run), RUN_SECRET), os.path.join(work_dir, RUN_SECRET))
    for theirs, ours in segments:
        shutil.copytree(theirs, ours, copy_function=os.link)


def drop_checkpoints(run_dir: str) -> None:
    """Delete ``run_dir``'s stage checkpoints (local, recorded in its marker): they hold text from before the
    PII stage."""
    delete(checkpoints_dir(run_dir))


# ---------------------------------------------------------------------------------------- leftovers

def leftovers(run_dir: str) -> list[tuple[str, int]]:
    """Working directories of killed commands in ``run_dir`` (and spilled text in .checkpoints), with sizes:
    only those the marker records as corpusforge's (``scratch``), never one merely named like them."""
    if not files.is_local(run_dir) or not os.path.isdir(run_dir):
        return []
    try:
        marker = read_marker(run_dir)
    except UserError:
        return []
    if marker is None:
        return []
    found = [os.path.join(run_dir, n) for n in sorted(marker["scratch"]) if isinstance(n, str) and n != CHECKPOINTS
             and n == os.path.basename(n) and os.path.lexists(os.path.join(run_dir, n))]
    checkpoints = os.path.join(run_dir, CHECKPOINTS)
    if CHECKPOINTS in marker["scratch"] and os.path.isdir(checkpoints) and not os.path.islink(checkpoints):
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
        delete(path)
        notes.append(f"removed {path} ({size / 1e6:.1f} MB), left behind by a killed run")
    marker = read_marker(run_dir) if files.is_local(run_dir) and os.path.isdir(run_dir) else None
    if marker and any(not os.path.lexists(os.path.join(run_dir, n)) for n in marker["scratch"]):
        marker["scratch"] = [n for n in marker["scratch"] if os.path.lexists(os.path.join(run_dir, n))]
        write_marker(run_dir, marker)  # forget working directories a killed command had already deleted
    return notes


def is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False
