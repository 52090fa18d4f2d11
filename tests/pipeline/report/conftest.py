import contextlib
import io

import pytest

from pipeline import cli
from tests.pipeline.report.rundir import write_run


def _with_report_command(mp) -> None:
    """Until the lead lists pipeline.report.cli in COMMAND_MODULES, add it (a no-op afterwards)."""
    if "pipeline.report.cli" not in cli.COMMAND_MODULES:
        mp.setattr(cli, "COMMAND_MODULES", [*cli.COMMAND_MODULES, "pipeline.report.cli"])


@pytest.fixture(autouse=True)
def report_command(monkeypatch):
    _with_report_command(monkeypatch)


@pytest.fixture(scope="session")
def full_run(tmp_path_factory):
    """The one full report of a hand-written run (figures cost a few CPU seconds), written through the CLI:
    (run directory, page, what the command printed)."""
    run = write_run(tmp_path_factory.mktemp("report") / "run")
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(printed):
        _with_report_command(mp)
        assert cli.main(["report", str(run)]) == 0
    return run, (run / "report.html").read_text(encoding="utf-8"), printed.getvalue()
