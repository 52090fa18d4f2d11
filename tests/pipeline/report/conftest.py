import contextlib
import io

import pytest

from corpusforge.cli import main as cli
from tests.pipeline.report.rundir import write_run


@pytest.fixture(scope="session")
def full_run(tmp_path_factory):
    """The one full report of a hand-written run (figures cost a few CPU seconds), written through the CLI:
    (run directory, page, what the command printed)."""
    run = write_run(tmp_path_factory.mktemp("report") / "run")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli.main(["report", str(run)]) == 0
    return run, (run / "report.html").read_text(encoding="utf-8"), printed.getvalue()
