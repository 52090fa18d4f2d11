"""The test session's temporary folder: what tests leave there (Beam's own TestPipeline and DirectRunner try
Prism first and leave a ``beam-temp*`` and two ``tmp*`` folders per pipeline; graphs built and never run leave
``beam-pipeline-temp*``) goes under pytest's own base folder, which pytest prunes, not into the machine's /tmp.
corpusforge's commands clean up after themselves (``rundir.scoped_tempfiles``); the fuzz slices check that."""
import multiprocessing.util
import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def session_temporary_folder(tmp_path_factory):
    multiprocessing.util.get_temp_dir()  # the process's own (sockets), kept until it exits: made where it was
    folder = str(tmp_path_factory.mktemp("temporary-folder"))
    saved = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = folder
    yield folder
    tempfile.tempdir = saved[0]
    if saved[1] is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved[1]
