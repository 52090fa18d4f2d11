"""The run directory: where corpusforge may write, what it may delete, the swap, the lock, the leftovers."""
import contextlib
import json
import errno
import multiprocessing.util
import os
import pathlib
import subprocess
import sys
import time

import pytest

from corpusforge.core import rundir
from corpusforge.core.run_lock import claim_file, is_locked, run_lock
from corpusforge.core.errors import UserError

OUTPUTS = ("clean", "removed", "manifest.json")


@pytest.mark.parametrize("path", ["/", "//", "/.", "~", "~/", ".", "./", "..", "", "  "])
def test_refuses_root_home_cwd_and_ancestors(tmp_path, monkeypatch, path):
    work = tmp_path / "home" / "me" / "work"
    work.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home" / "me"))
    monkeypatch.chdir(work)
    with pytest.raises(UserError, match="run directory"):
        rundir.check_run_dir(path)


def test_refuses_an_ancestor_of_the_cwd_by_any_spelling(tmp_path, monkeypatch):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    for path in (str(tmp_path / "a"), str(tmp_path), f"{tmp_path}/a/b/../", str(tmp_path / "link"), "../../"):
        with pytest.raises(UserError, match="ancestor of the current directory|current directory"):
            rundir.check_run_dir(path)


def test_accepts_a_subdirectory_and_expands_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert rundir.check_run_dir("runs/x/") == "runs/x"
    assert rundir.check_run_dir("~/runs/x") == f"{tmp_path}/runs/x"
    assert rundir.check_run_dir("gs://bucket/runs/x/") == "gs://bucket/runs/x"
    with pytest.raises(UserError, match="root of a bucket"):
        rundir.check_run_dir("gs://bucket/")


def _old_build(run: pathlib.Path) -> dict:
    """A run directory as a build leaves it: outputs, and the marker naming them."""
    (run / "clean").mkdir(parents=True)
    (run / "clean" / "part-0.arrow").write_bytes(b"old clean")
    (run / "removed").mkdir()
    (run / "removed" / "part-0.arrow").write_bytes(b"old removed")
    (run / "manifest.json").write_text('{"old": true}')
    marker = {"outputs": {"clean": ["part-0.arrow"], "removed": ["part-0.arrow"], "manifest.json": None},
              "derived": {}, "scratch": [], "corpus_fingerprint": "old"}
    rundir.write_marker(str(run), marker)
    return marker


def _snapshot(run: pathlib.Path) -> dict:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def test_ownership_needs_the_marker_and_no_stray_files(tmp_path):
    run = tmp_path / "run"
    _old_build(run)
    rundir.check_owned(str(run), list(OUTPUTS))
    (run / "clean" / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="notes.txt was not written by corpusforge"):
        rundir.check_owned(str(run), list(OUTPUTS))
    (run / "clean" / "notes.txt").unlink()
    (run / rundir.MARKER).unlink()
    with pytest.raises(UserError, match="no .corpusforge-run.json"):
        rundir.check_owned(str(run), list(OUTPUTS))
    rundir.check_owned(str(tmp_path / "empty"), list(OUTPUTS))  # nothing there: nothing to own


def test_a_symlinked_output_is_refused_and_its_target_untouched(tmp_path):
    run = tmp_path / "run"
    _old_build(run)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data.txt").write_text("years of work")
    for p in (run / "clean").iterdir():
        p.unlink()
    (run / "clean").rmdir()
    (run / "clean").symlink_to(precious)
    with pytest.raises(UserError, match="symbolic link"):
        rundir.check_owned(str(run), list(OUTPUTS))
    with pytest.raises(UserError, match="symbolic link"):
        rundir.delete(str(run / "clean"))
    rundir._remove_tree(str(run / "clean"))  # removes the link, never what it points at
    assert (precious / "data.txt").read_text() == "years of work"


def _staged(run: pathlib.Path) -> pathlib.Path:
    staged = pathlib.Path(rundir.make_scratch(str(run), ".tmp-final-new"))
    (staged / "clean").mkdir(parents=True)
    (staged / "clean" / "part-0.arrow").write_bytes(b"new clean")
    (staged / "clean" / "part-1.arrow").write_bytes(b"new clean 2")
    (staged / "manifest.json").write_text('{"new": true}')  # the new build has no removed/
    return staged


def test_swap_replaces_the_build_and_retires_the_report(tmp_path):
    run = tmp_path / "run"
    _old_build(run)
    (run / "report.html").write_text("old page")
    rundir.record_output(str(run), "report.html")
    (run / "notes.txt").write_text("the user's")
    staged = _staged(run)
    new_marker = {"outputs": {"clean": ["part-0.arrow", "part-1.arrow"], "manifest.json": None},
                  "derived": {}, "corpus_fingerprint": "new"}
    rundir.swap_in(str(run), str(staged), ("clean", "removed", "manifest.json"), new_marker, retire=("report.html",))
    assert _snapshot(run) == {
        "clean/part-0.arrow": b"new clean", "clean/part-1.arrow": b"new clean 2", "manifest.json": b'{"new": true}',
        "notes.txt": b"the user's", rundir.MARKER: (run / rundir.MARKER).read_bytes()}
    assert rundir.read_marker(str(run))["corpus_fingerprint"] == "new"
    assert rundir.leftovers(str(run)) == []


def test_a_swap_killed_at_any_step_is_undone(tmp_path, monkeypatch):
    """Kill the swap after each of its renames (and after the marker): recovery gives back the old build."""
    real_rename, real_marker = rundir._rename, rundir.write_marker
    steps = 0
    while True:
        run = tmp_path / f"run{steps}"
        _old_build(run)
        (run / "report.html").write_text("old page")
        marker = rundir.read_marker(str(run))
        marker["outputs"]["report.html"] = None
        rundir.write_marker(str(run), marker)
        before = _snapshot(run)
        staged = _staged(run)
        calls = {"n": 0}

        class Killed(BaseException):
            pass

        def counted(fn):
            def wrapper(*args):
                if calls["n"] == steps:
                    raise Killed()
                calls["n"] += 1
                return fn(*args)
            return wrapper

        monkeypatch.setattr(rundir, "_rename", counted(real_rename))
        monkeypatch.setattr(rundir, "write_marker", counted(real_marker))
        new_marker = {"outputs": {"clean": [], "manifest.json": None}, "derived": {}, "corpus_fingerprint": "new"}
        try:
            rundir.swap_in(str(run), str(staged), ("clean", "removed", "manifest.json"), new_marker,
                           retire=("report.html",))
            finished = True
        except Killed:
            finished = False
        monkeypatch.setattr(rundir, "_rename", real_rename)
        monkeypatch.setattr(rundir, "write_marker", real_marker)
        if finished:
            break
        journal = (run / rundir.JOURNAL).exists()
        note = rundir.recover(str(run))
        rundir.clean_leftovers(str(run))  # what the next command does, holding the lock
        if journal:
            assert "restored the previous outputs" in note
            assert _snapshot(run) == before, f"killed after {steps} steps"
        elif steps == 0:  # killed before the journal: the old build was never touched
            assert note is None and _snapshot(run) == before
        else:  # killed after the commit point: the new build stands, its working directories are cleared
            assert note is None and (run / "manifest.json").read_text() == '{"new": true}'
        assert rundir.leftovers(str(run)) == [] and rundir.read_marker(str(run))["scratch"] == []
        steps += 1
    # the backup recorded, 4 renames out (report.html retired), 2 in (removed/ is not in the new build), the
    # marker, the marker without the working directories, then done
    assert steps == 9


def test_a_swap_killed_then_moved_is_undone_where_it_now_is(tmp_path, monkeypatch):
    """The journal's temporary directories are the run directory's own: after `mv runs/a runs/b` recovery
    restores b from b's backup, and a journal naming a path elsewhere deletes nothing there."""
    run, moved = tmp_path / "a", tmp_path / "b"
    _old_build(run)
    before = _snapshot(run)
    real_rename, calls = rundir._rename, []

    def killed_after_two(*args):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(args)
        real_rename(*args)

    monkeypatch.setattr(rundir, "_rename", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        rundir.swap_in(str(run), str(_staged(run)), ("clean", "removed", "manifest.json"), {"outputs": {}})
    monkeypatch.setattr(rundir, "_rename", real_rename)
    run.rename(moved)
    assert "restored the previous outputs" in rundir.recover(str(moved))
    assert _snapshot(moved) == before and not run.exists()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not corpusforge's")
    (moved / rundir.JOURNAL).write_text(json.dumps({"staged": str(elsewhere), "backup": str(elsewhere),
                                                    "names": ["clean"], "old": ["clean"], "old_marker": None}))
    with pytest.raises(UserError, match="swap journal"):
        rundir.recover(str(moved))
    assert (elsewhere / "keep.txt").read_text() == "not corpusforge's"


def test_leftovers_listed_and_cleaned(tmp_path):
    run = tmp_path / "run"
    spill = run / ".tmp-build-abc" / "00-read" / "spill"
    spill.mkdir(parents=True)
    (spill / "x.txt").write_bytes(b"s" * 1000)
    (run / ".checkpoints" / "01-pii" / "spill").mkdir(parents=True)
    (run / ".checkpoints" / "01-pii" / "spill" / "y.txt").write_bytes(b"t" * 10)
    (run / ".checkpoints" / "00-read" / "docs").mkdir(parents=True)
    (run / "clean").mkdir()
    # Named like ours, but no marker records them: the user's, never listed or deleted
    before = _snapshot(run)
    assert rundir.leftovers(str(run)) == [] and rundir.clean_leftovers(str(run)) == []
    rundir.write_marker(str(run), {"outputs": {"clean": []}})
    assert rundir.leftovers(str(run)) == [] and rundir.clean_leftovers(str(run)) == []
    assert {k: v for k, v in _snapshot(run).items() if k != rundir.MARKER} == before
    marker = rundir.read_marker(str(run))
    marker["scratch"] = [".tmp-build-abc", ".checkpoints"]  # as make_scratch records them
    rundir.write_marker(str(run), marker)
    found = dict(rundir.leftovers(str(run)))
    assert found == {str(run / ".tmp-build-abc"): 1000, str(run / ".checkpoints" / "01-pii" / "spill"): 10}
    notes = rundir.clean_leftovers(str(run))
    assert len(notes) == 2 and all("left behind by a killed run" in n for n in notes)
    assert sorted(p.name for p in run.iterdir()) == [".checkpoints", rundir.MARKER, "clean"]
    assert (run / ".checkpoints" / "00-read" / "docs").is_dir()
    # a link in .checkpoints is not followed: the spill/ of the directory it points to is not a leftover
    (tmp_path / "mine" / "spill").mkdir(parents=True)
    (tmp_path / "mine" / "spill" / "notes.txt").write_text("the user's")
    (run / ".checkpoints" / "02-link").symlink_to(tmp_path / "mine")
    assert rundir.leftovers(str(run)) == [] and rundir.clean_leftovers(str(run)) == []
    assert (tmp_path / "mine" / "spill" / "notes.txt").read_text() == "the user's"


def test_stale_derived_outputs_are_refused_with_the_command(tmp_path):
    run = tmp_path / "run"
    _old_build(run)
    (run / "tokens").mkdir()
    rundir.record_output(str(run), "tokens", [])
    rundir.check_fresh(str(run), "tokens")
    marker = rundir.read_marker(str(run))
    marker["corpus_fingerprint"] = "rebuilt"
    rundir.write_marker(str(run), marker)
    with pytest.raises(UserError, match="earlier build.*corpusforge tokenize --overwrite"):
        rundir.check_fresh(str(run), "tokens")


HOLD = """
import sys, time
from corpusforge.core.run_lock import run_lock
with run_lock(sys.argv[1], "build"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_second_writer_is_refused_naming_the_first(tmp_path):
    run = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert is_locked(str(run))
        started = time.perf_counter()
        with pytest.raises(UserError, match=rf"in use by `corpusforge build` \(pid {holder.pid} on "):
            with run_lock(str(run), "tokenize"):
                pass
        assert time.perf_counter() - started < 1
    finally:
        holder.kill()
        holder.wait()
    # The holder died without unlocking: the kernel released its flock, the lock file is stale and taken over.
    assert not is_locked(str(run))
    with run_lock(str(run), "tokenize"):
        owner = json.loads((run / rundir.LOCK).read_text())
        assert owner["pid"] == os.getpid() and owner["command"] == "tokenize"
        with run_lock(str(run), "tokenize"):  # re-entrant within a process (demo)
            pass
    assert not (run / rundir.LOCK).exists()


def test_a_lock_file_of_a_dead_process_is_taken_over(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    import socket

    (run / rundir.LOCK).write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname(),
                                               "command": "build"}))
    with run_lock(str(run), "build"):
        pass


def test_a_refused_command_leaves_no_empty_run_directory(tmp_path):
    with pytest.raises(RuntimeError):
        with run_lock(str(tmp_path / "new"), "build"):
            raise RuntimeError("refused before writing")
    assert not (tmp_path / "new").exists()


def test_a_linked_derived_output_is_refused_even_without_a_marker(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run / "tokenizer").symlink_to(elsewhere)
    with pytest.raises(UserError, match="symbolic link"):
        rundir.check_owned(str(run), ["tokenizer"], require_marker=False)


def test_taking_the_lock_undoes_a_half_done_swap(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    _old_build(run)
    before = _snapshot(run)
    staged = _staged(run)
    real_rename = rundir._rename
    calls = []

    def killed_after_two(*args):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(args)
        real_rename(*args)

    monkeypatch.setattr(rundir, "_rename", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        rundir.swap_in(str(run), str(staged), ("clean", "removed", "manifest.json"), {"outputs": {}, "derived": {}})
    monkeypatch.undo()
    assert not (run / "clean").exists()  # half done: clean/ and removed/ moved aside
    with run_lock(str(run), "tokenize"):
        assert _snapshot(run) == {**before, rundir.LOCK: (run / rundir.LOCK).read_bytes()}
    assert "restored the previous outputs" in capsys.readouterr().err


def test_delete_and_move_go_only_by_the_marker(tmp_path):
    run = tmp_path / "run"
    _old_build(run)
    for name in (".checkpoints", ".tmp-build-x"):  # named like ours, recorded nowhere
        (run / name).mkdir()
    (run / ".checkpoints" / "01-pii" / "spill").mkdir(parents=True)
    for path in (run / ".checkpoints", run / ".checkpoints" / "01-pii" / "spill", run / ".tmp-build-x",
                 run / "clean" / "notes.txt", tmp_path / "elsewhere"):
        if not path.exists():
            path.mkdir(parents=True)
        with pytest.raises(UserError, match="not among what corpusforge recorded|not written by corpusforge|no "
                                            ".corpusforge-run.json"):
            rundir.delete(str(path))
        with pytest.raises(UserError):
            rundir.move(str(path), str(run / "clean" / "moved"))
    assert all(p.exists() for p in (run / ".checkpoints" / "01-pii" / "spill", run / ".tmp-build-x"))
    # make_scratch refuses a folder of that name it did not make, and then owns the one it makes
    with pytest.raises(UserError, match="corpusforge did not make it"):
        rundir.make_scratch(str(run), ".checkpoints")
    made = rundir.make_scratch(str(run), prefix=".tmp-build-")
    (pathlib.Path(made) / "spill").mkdir()
    rundir.delete(str(pathlib.Path(made) / "spill"))
    rundir.delete(made)
    assert not os.path.exists(made) and rundir.read_marker(str(run))["scratch"] == []
    rundir.delete(str(run / "clean" / "part-0.arrow"))  # a listed file of an output
    assert not (run / "clean" / "part-0.arrow").exists()


def test_a_link_on_the_way_is_never_followed(tmp_path):
    run = tmp_path / "run"
    _old_build(run)
    precious = tmp_path / "precious"
    (precious / "sub").mkdir(parents=True)
    (precious / "sub" / "data.txt").write_text("years of work")
    scratch = pathlib.Path(rundir.make_scratch(str(run)))
    (scratch / "link").symlink_to(precious)
    with pytest.raises(UserError, match="symbolic link"):
        rundir.delete(str(scratch / "link" / "sub"))
    rundir.delete(str(scratch))
    assert (precious / "sub" / "data.txt").read_text() == "years of work"


def test_publish_replaces_only_an_earlier_publication(tmp_path):
    out = tmp_path / "export"
    out.mkdir()
    (out / "config.json").write_text("the user's")
    tmp = pathlib.Path(rundir.temporary_dir(".export.tmp-", str(tmp_path)))
    (tmp / "config.json").write_text("new")
    with pytest.raises(UserError, match="not replaced"):
        rundir.publish_dir(str(tmp), str(out))
    assert (out / "config.json").read_text() == "the user's"
    (out / "config.json").unlink()
    rundir.publish_dir(str(tmp), str(out))  # empty: published
    tmp = pathlib.Path(rundir.temporary_dir(".export.tmp-", str(tmp_path)))
    (tmp / "config.json").write_text("newer")
    (out / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="notes.txt"):
        rundir.publish_dir(str(tmp), str(out))
    (out / "notes.txt").unlink()
    rundir.publish_dir(str(tmp), str(out))
    assert (out / "config.json").read_text() == "newer" and sorted(p.name for p in tmp_path.iterdir()) == ["export"]
    with pytest.raises(UserError, match="not made by this corpusforge process"):
        rundir.remove_temporary(str(out))


@pytest.mark.parametrize("ending", ["returns", "raises"])
def test_what_libraries_leave_in_the_temporary_folder_goes_with_the_scope(tmp_path, monkeypatch, ending):
    """scoped_tempfiles: this process's tempfile calls and a child process's TMPDIR land in one folder of ours,
    deleted when the scope ends however it ends; tempfile.tempdir and TMPDIR are as they were."""
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("TMPDIR", "/somewhere/else")
    multiprocessing.util.get_temp_dir()  # the process's own, made before (or by) the first scope: kept
    child = "import tempfile, os; d = tempfile.mkdtemp(prefix='child-'); open(os.path.join(d, 'f'), 'w').write('x')"
    with pytest.raises(RuntimeError) if ending == "raises" else contextlib.nullcontext():
        with rundir.scoped_tempfiles() as scope:
            assert scope is not None and pathlib.Path(scope).parent == scratch
            left = tempfile.mkdtemp(prefix="beam-pipeline-temp")
            fd, _ = tempfile.mkstemp()
            os.close(fd)
            os.chmod(left, 0o500)  # a folder a library made read-only inside: still removed
            subprocess.run([sys.executable, "-c", child], check=True)
            assert len(set(os.listdir(scope)) - {rundir.SCOPE_MARKER}) == 3
            if ending == "raises":
                raise RuntimeError("the command failed")
    assert [p for p in os.listdir(scratch) if scratch / p != pathlib.Path(multiprocessing.util.get_temp_dir())] == []
    assert tempfile.tempdir == str(scratch) and os.environ["TMPDIR"] == "/somewhere/else"


def test_a_scope_keeps_multiprocessing_s_process_wide_folder_usable_after_it(tmp_path, monkeypatch):
    """multiprocessing keeps one folder per process (get_temp_dir: sockets of the forkserver and the resource
    sharer), made at its first use: a scope must not delete it, or a second command in the same process (tests,
    a notebook) finds its sockets gone."""
    import multiprocessing.process
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delitem(multiprocessing.process.current_process()._config, "tempdir", raising=False)
    with rundir.scoped_tempfiles():
        folder = multiprocessing.util.get_temp_dir()  # first used by a library during the command
    assert os.path.isdir(folder) and multiprocessing.util.get_temp_dir() == folder


def test_torchs_compile_cache_stays_where_torch_puts_it_without_a_scope(tmp_path, monkeypatch):
    """torch.compile's cache is meant to outlive a command: inside a scope torch still finds its default folder
    (not one deleted with the scope, which it would recreate, outside any scope, on the next command)."""
    import tempfile

    from torch._inductor.runtime.cache_dir_utils import cache_dir, default_cache_dir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    expected = default_cache_dir()
    with rundir.scoped_tempfiles() as scope:
        assert cache_dir() == expected and not expected.startswith(scope)
    assert os.path.isdir(expected)


# ------------------------------------------------------------------ temporary folders killed commands left

def _start_ticks(pid):
    stat_line = pathlib.Path(f"/proc/{pid}/stat").read_text()
    return int(stat_line[stat_line.rfind(")") + 2:].split()[19])


def _dead_pid():
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def _marked(folder, owner, made_by="corpusforge", names=None, marker_text=None):
    """A folder as a killed command leaves it (written here by hand, not by rundir: what the marker must say)."""
    folder.mkdir()
    (folder / "beam-temp-x").mkdir()
    (folder / "beam-temp-x" / "staged.bin").write_bytes(os.urandom(64))
    (folder / "pymp-abc").mkdir()
    text = marker_text if marker_text is not None else json.dumps(
        {"made_by": made_by, "folder": names or folder.name, "owner": owner})
    (folder / rundir.SCOPE_MARKER).write_text(text)
    return folder


def _tree(path):
    return {str(p.relative_to(path)): (p.is_symlink(), p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in sorted(path.rglob("*"))}


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="process start times from /proc")
def test_reclaim_deletes_only_marked_folders_whose_owner_is_gone(tmp_path):
    """A killed command's folder goes (its marker names a dead process, or a live pid with another start time:
    a reused pid); a folder without our marker, with a foreign or unreadable one, one copied under another name,
    one whose owner lives, a link to a marked folder, a marker that is a link: all survive byte for byte."""
    temp = tmp_path / "temp"
    temp.mkdir()
    me = {"pid": os.getpid(), "start": _start_ticks(os.getpid()), "boot": None}
    dead = {"pid": _dead_pid(), "start": 1, "boot": None}
    reused = {"pid": os.getpid(), "start": _start_ticks(os.getpid()) - 1, "boot": None}
    gone = [_marked(temp / "corpusforge-killed", dead), _marked(temp / "corpusforge-reusedpid", reused)]
    outside = _marked(tmp_path / "outside", dead, names="corpusforge-link")
    (temp / "corpusforge-link").symlink_to(outside)
    (temp / "corpusforge-nomarker").mkdir()
    (temp / "corpusforge-nomarker" / "data").write_text("mine")
    _marked(temp / "corpusforge-live", me)
    _marked(temp / "corpusforge-foreign", dead, made_by="someone else")
    _marked(temp / "corpusforge-copied", dead, names="corpusforge-original")
    _marked(temp / "corpusforge-garbled", dead, marker_text='{"made_by": "corpusforge", "folder"')
    _marked(temp / "corpusforge-noowner", None)
    linked = _marked(temp / "corpusforge-linkedmarker", dead)
    (linked / rundir.SCOPE_MARKER).rename(tmp_path / "real-marker.json")
    (linked / rundir.SCOPE_MARKER).symlink_to(tmp_path / "real-marker.json")
    _marked(temp / "not-corpusforge-x", dead)  # the name is not ours
    kept = [p for p in temp.iterdir() if p not in gone]
    before = {p.name: _tree(p) for p in kept} | {"outside": _tree(outside)}
    assert sorted(rundir.reclaim_temporary_dirs(str(temp))) == sorted(str(p) for p in gone)
    assert sorted(p.name for p in temp.iterdir()) == sorted(p.name for p in kept)
    assert {p.name: _tree(p) for p in kept} | {"outside": _tree(outside)} == before


def test_a_scope_folder_is_reclaimed_once_its_process_is_killed_never_before(tmp_path):
    """A real scope (``scoped_tempfiles`` in another process): kept while that process lives (its marker locked,
    its pid alive), reclaimed by the next scope once it is SIGKILLed."""
    temp = tmp_path / "temp"
    temp.mkdir()
    child = subprocess.Popen([sys.executable, "-c", "import sys, time, tempfile\n"
                              "from corpusforge.core import rundir\n"
                              "rundir.own_process_tempfiles()\n"  # as the corpusforge command: pymp-* inside ours
                              "with rundir.scoped_tempfiles() as scope:\n"
                              "    open(tempfile.mkstemp()[1], 'w').write('x')\n"
                              "    print(scope, flush=True)\n"
                              "    time.sleep(120)\n"], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "TMPDIR": str(temp)})
    try:
        scope = pathlib.Path(child.stdout.readline().strip())
        assert scope.parent == temp and (scope / rundir.SCOPE_MARKER).is_file()
        assert rundir.reclaim_temporary_dirs(str(temp)) == [] and scope.is_dir()
        child.kill()
    finally:
        child.wait()
    assert str(scope) in rundir.reclaim_temporary_dirs(str(temp))  # with the process's own (multiprocessing's)
    assert list(temp.iterdir()) == []


_RECLAIMER = """
import sys, time
from corpusforge.core import rundir
while time.time() < float(sys.argv[2]):
    pass
print(len(rundir.reclaim_temporary_dirs(sys.argv[1])))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="process start times from /proc")
def test_two_commands_reclaiming_at_once_each_folder_goes_once_without_an_error(tmp_path):
    temp = tmp_path / "temp"
    temp.mkdir()
    dead = {"pid": _dead_pid(), "start": 1, "boot": None}
    for i in range(60):
        _marked(temp / f"corpusforge-{i:03d}", dead)
    start = time.time() + 3
    reclaimers = [subprocess.Popen([sys.executable, "-c", _RECLAIMER, str(temp), str(start)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [r.communicate(timeout=120) for r in reclaimers]
    assert [r.returncode for r in reclaimers] == [0, 0] and all(err == "" for _, err in results), results
    assert sum(int(out) for out, _ in results) == 60 and list(temp.iterdir()) == []


def test_a_marker_that_cannot_be_looked_for_stops_in_one_line_naming_it(tmp_path, monkeypatch):
    # Before: exists raising (a remote error, a denied prefix) was taken as "no marker here": the walk went on and
    # a run's rejected/ or stats.json below it was read as input
    from corpusforge.core import files

    shard = tmp_path / "run" / "rejected" / "part-00000-of-00001.parquet"
    shard.parent.mkdir(parents=True)
    shard.write_bytes(b"x")
    real = files.exists

    def exists(path):
        if path.startswith(str(tmp_path / "run")) and path.endswith(rundir.MARKER):
            raise OSError("503 Service Unavailable:\n  backend error")
        return real(path)

    monkeypatch.setattr(files, "exists", exists)
    with pytest.raises(UserError) as caught:
        rundir.run_above(str(shard))
    line = str(caught.value)
    assert "\n" not in line and f"cannot tell whether input {shard} lies in a corpusforge run" in line, line
    assert f"looking for {tmp_path / 'run' / 'rejected' / rundir.MARKER} failed (OSError: 503 Service Unavailable: " \
           "backend error)" in line, line


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied"), OSError("403 Forbidden: no access"),
                                   type("AccessDenied", (Exception,), {})("s3 says no")])
def test_a_folder_this_user_may_not_read_ends_the_marker_walk(tmp_path, monkeypatch, error):
    """A user whose access starts at a prefix (gs://bucket/data/) may not look at the bucket's root: that is no
    run of theirs, not a reason to stop; a marker below it is still found."""
    from corpusforge.core import files

    data = tmp_path / "bucket" / "data" / "a.jsonl"
    data.parent.mkdir(parents=True)
    data.write_text("{}\n")
    real = files.exists
    denied = str(tmp_path / "bucket")

    def exists(path):
        if path.endswith(rundir.MARKER) and not path.startswith(denied + "/data"):
            raise error
        return real(path)

    monkeypatch.setattr(files, "exists", exists)
    assert rundir.run_above(str(data)) is None
    (data.parent / rundir.MARKER).write_text("{}")
    assert rundir.run_above(str(data)) == str(data.parent)


def test_a_file_claimed_in_a_folder_that_does_not_exist_yet_can_be_replaced_by_the_next_run(tmp_path):
    # predict --out preds/p.jsonl: the folder did not exist, so nothing was recorded and the second run was refused
    # ("exists and corpusforge did not write it")
    out = tmp_path / "preds" / "p.jsonl"
    claim_file(str(out), "predict")
    out.write_text("{}\n")
    claim_file(str(out), "predict")  # the same command again: replaces what it wrote
    user = tmp_path / "preds" / "mine.jsonl"
    user.write_text("years of work\n")
    with pytest.raises(UserError, match="corpusforge did not write it"):
        claim_file(str(user), "predict")


@pytest.mark.parametrize("name", [rundir.MARKER, rundir.LOCK, rundir.JOURNAL])
def test_a_file_is_never_claimed_under_corpusforges_own_names(tmp_path, name):
    # predict --out .corpusforge-run.json wrote its predictions over the marker it had just made
    with pytest.raises(UserError, match="keeps for its own bookkeeping"):
        claim_file(str(tmp_path / name), "predict")


@pytest.mark.parametrize("command", ["predict", "embed"])
def test_a_file_is_claimed_under_its_folders_run_lock(tmp_path, capsys, command):
    # predict/embed --out RUN/x recorded x in RUN's marker without the run lock: a build of RUN recording its
    # outputs meanwhile lost them (the marker read before was written back over them). Now a command holding the
    # folder is named in one line, and the marker is not touched.
    from corpusforge.cli.main import main

    run = tmp_path / "run"
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "x"}\n')
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code = main([command, "--model", str(tmp_path / "no-model"), "--data", str(data),
                     "--out", str(run / "out.jsonl")])
        err = capsys.readouterr().err
        assert code != 0 and f"in use by `corpusforge build` (pid {holder.pid} on " in err, err
        assert err.count("\n") == 1
        assert not (run / rundir.MARKER).exists()
    finally:
        holder.kill()
        holder.wait()


CLAIM = """
import errno, sys
import corpusforge.core.run_lock as run_lock_module
from corpusforge.core.run_lock import claim_file
from corpusforge.core.errors import UserError
if sys.argv[2:] == ["no-flock"]:
    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")
    run_lock_module.fcntl.flock = no_flock
sys.stdin.readline()  # all start claiming together
try:
    claim_file(sys.argv[1], "predict")
    print("ok", flush=True)
except UserError as exc:
    print("refused", exc, flush=True)
"""


@pytest.mark.parametrize("flock", ["flock", "no-flock"])
def test_commands_writing_into_one_folder_together_all_claim_their_files(tmp_path, flock):
    # `xargs -P 8 corpusforge predict ... --out preds/$f`: each claim holds the folder's lock for milliseconds,
    # and took it without waiting, so some of eight were refused as "in use by corpusforge predict" (3 of 8 in
    # the review's run). A claim now waits for another claim (a build still refuses at once: the test above).
    folder = tmp_path / "preds"
    # no-flock: where flock is unsupported the lock file made with O_EXCL is the lock (a first version without it
    # lost 8 of 80 marker entries over 10 such runs: two claims each saw no owner and both wrote the marker)
    procs = [subprocess.Popen([sys.executable, "-c", CLAIM, str(folder / f"p{i}.jsonl"), flock], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for i in range(8)]
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outs = [proc.communicate(timeout=120)[0].strip() for proc in procs]
    assert outs == ["ok"] * 8, outs
    assert sorted(rundir.read_marker(str(folder))["outputs"]) == [f"p{i}.jsonl" for i in range(8)]


HOLD_CLAIM = """
import sys, time
from corpusforge.core.run_lock import run_lock
with run_lock(sys.argv[1], "predict", claim=True):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_a_claim_waits_for_another_claim_and_not_for_a_build(tmp_path):
    folder = tmp_path / "preds"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_CLAIM, str(folder), "1.0"], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.perf_counter()
        claim_file(str(folder / "mine.jsonl"), "embed")  # waited for the other claim, then claimed
        assert time.perf_counter() - started > 0.3
        assert "mine.jsonl" in rundir.read_marker(str(folder))["outputs"]
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("code", [errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS])
def test_a_folder_where_flock_is_unsupported_is_claimed_by_the_owner_file(tmp_path, monkeypatch, code):
    # NFS without lockd (ENOLCK), some FUSE mounts: flock raised, predict/embed --out failed and left
    # .corpusforge.lock behind. The owner file alone tells whether a live process holds the folder, as on a
    # filesystem that ignores flock.
    import corpusforge.core.run_lock as run_lock_module

    def no_flock(fd, op):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(run_lock_module.fcntl, "flock", no_flock)
    folder = tmp_path / "preds"
    claim_file(str(folder / "p.jsonl"), "predict")
    assert list(rundir.read_marker(str(folder))["outputs"]) == ["p.jsonl"]
    assert not (folder / rundir.LOCK).exists()
    with run_lock(str(tmp_path / "run"), "build"):
        assert json.loads((tmp_path / "run" / rundir.LOCK).read_text())["pid"] == os.getpid()
    assert not (tmp_path / "run" / rundir.LOCK).exists()


def test_a_lock_that_fails_otherwise_leaves_no_lock_file(tmp_path, monkeypatch):
    import corpusforge.core.run_lock as run_lock_module

    def broken(fd, op):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(run_lock_module.fcntl, "flock", broken)
    folder = tmp_path / "preds"
    with pytest.raises(OSError):
        claim_file(str(folder / "p.jsonl"), "predict")
    assert not (folder / rundir.LOCK).exists()


def test_where_flock_is_unsupported_a_lock_file_left_without_an_owner_is_taken_over(tmp_path, monkeypatch):
    # A command killed between making the O_EXCL lock file and writing its owner left an empty file: every later
    # command was refused (a claim after 30 s of waiting) until it was deleted by hand.
    import corpusforge.core.run_lock as run_lock_module

    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(run_lock_module.fcntl, "flock", no_flock)
    run = tmp_path / "run"
    run.mkdir()
    (run / rundir.LOCK).write_text("")
    old = time.time() - 60
    os.utime(run / rundir.LOCK, (old, old))
    started = time.perf_counter()
    with run_lock(str(run), "build"):
        assert json.loads((run / rundir.LOCK).read_text())["pid"] == os.getpid()
    assert time.perf_counter() - started < 2
    assert sorted(os.listdir(run)) == []  # nothing of the lock's left behind (no probe file either)


def test_a_lock_released_in_a_folder_replaced_meanwhile_leaves_the_new_folders_lock_file(tmp_path):
    # export replaces its out_dir while holding its lock (the lock file goes with the old folder): another command's
    # lock file made in the new folder meanwhile was unlinked when export let go, and a third command took the folder
    # beside the second
    from corpusforge.core.run_lock import run_lock

    folder = tmp_path / "out"
    with run_lock(str(folder), "export"):
        os.rename(folder, tmp_path / "aside")
        folder.mkdir()
        (folder / rundir.LOCK).write_text("another command's")
    assert (folder / rundir.LOCK).read_text() == "another command's"
