"""Every fuzz slice also checks that nothing is left in the temporary folder (``rundir.scoped_tempfiles``), as
``bench/fuzz.py``'s long mode does for every case."""
import os

import pytest

from corpusforge.core import rundir


@pytest.fixture(autouse=True)
def empty_temporary_folder(tmp_path_factory):
    temp = tmp_path_factory.mktemp("temporary-folder")
    with rundir.tempfiles_in(str(temp), rundir.lasting_caches()):  # caches (torch.compile's) stay where they last
        yield
    left = sorted(os.listdir(temp))
    assert not left, f"left in the temporary folder: {left[:5]}"
