"""The test session's temporary folder: what tests leave there (Beam's own TestPipeline and DirectRunner try
Prism first and leave a ``beam-temp*`` and two ``tmp*`` folders per pipeline; graphs built and never run leave
``beam-pipeline-temp*``) goes under pytest's own base folder, which pytest prunes, not into the machine's /tmp.
corpusforge's commands clean up after themselves (``rundir.scoped_tempfiles``); the fuzz slices check that."""
import pytest

from corpusforge.core import rundir


@pytest.fixture(autouse=True, scope="session")
def session_temporary_folder(tmp_path_factory):
    with rundir.tempfiles_in(str(tmp_path_factory.mktemp("temporary-folder"))) as folder:
        yield folder


@pytest.fixture(autouse=True)
def markers_change_only_under_their_folders_lock(monkeypatch):
    """The class "a folder's marker read, changed and written without its lock" (another command's write in between
    is lost): every marker corpusforge's own code writes in any test is written while this process holds that
    folder's run lock (``run_lock.holds``), or into a private folder this process made (``rundir.is_temporary``).
    A test's own set-up writes are not checked. Found afterwards, so no command sees an error of the test's."""
    import os
    import sys

    from corpusforge.core import files, run_lock

    write, unlocked = rundir.write_marker, []
    tests_root = os.path.dirname(os.path.abspath(__file__)) + os.sep
    here = os.path.abspath(rundir.__file__)

    def checked(run_dir, marker):
        frame = sys._getframe(1)
        while frame is not None and os.path.abspath(frame.f_code.co_filename) == here:
            frame = frame.f_back
        caller = os.path.abspath(frame.f_code.co_filename) if frame is not None else ""
        if not caller.startswith(tests_root) and files.is_local(run_dir) and os.environ.get("RANK", "0") == "0" \
                and not run_lock.holds(files.local_path(run_dir)) and not rundir.is_temporary(files.local_path(run_dir)):
            unlocked.append(f"{run_dir} (from {caller}:{frame.f_lineno})")
        return write(run_dir, marker)

    monkeypatch.setattr(rundir, "write_marker", checked)
    yield
    assert not unlocked, f"markers written without their folder's lock: {unlocked}"
