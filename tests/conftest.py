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
