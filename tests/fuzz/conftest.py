"""Every fuzz slice also checks that nothing is left in the temporary folder (``rundir.scoped_tempfiles``), as
``bench/fuzz.py``'s long mode does for every case."""
import multiprocessing.util
import os
import tempfile

import pytest


@pytest.fixture(autouse=True)
def empty_temporary_folder(tmp_path_factory, monkeypatch):
    multiprocessing.util.get_temp_dir()  # the process's own (sockets), kept until it exits: made before the first case
    temp = tmp_path_factory.mktemp("temporary-folder")
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setenv("TMPDIR", str(temp))
    yield
    left = sorted(os.listdir(temp))
    assert not left, f"left in the temporary folder: {left[:5]}"
