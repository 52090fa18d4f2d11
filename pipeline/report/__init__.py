"""``corpusforge report``: one self-contained HTML page about a run, and a terminal summary.

    from corpusforge.pipeline.report import write_report
    result = write_report("runs/demo")          # writes runs/demo/report.html
    print(result.summary)

``collect`` gathers what exists in the run directory (build stats and shards, tokenizer report, token
shards, training metrics); ``page.render`` turns it into HTML with matplotlib figures embedded as PNGs.
"""
from __future__ import annotations

import dataclasses
import posixpath

__all__ = ["ReportResult", "write_report"]


@dataclasses.dataclass
class ReportResult:
    path: str
    bytes: int
    summary: str


def write_report(run_dir: str, output: str | None = None, *, sample_rows: int = 20_000, top_reasons: int = 8,
                 per_reason: int = 3, text_chars: int = 600, tokenizer_dir: str | None = None,
                 model_dir: str | None = None) -> ReportResult:
    """Write ``output`` (default ``RUN_DIR/report.html``); returns its path, size and the terminal summary."""
    from corpusforge.core import rundir
    from corpusforge.core.errors import UserError
    from corpusforge.core.run_lock import FolderBusy, run_lock
    from corpusforge.pipeline.report.collect import collect
    from corpusforge.pipeline.report.page import render
    from corpusforge.pipeline.report.summary import summary

    # The page shows what it finds in the run directory: refuse outputs made from an earlier clean/.
    rundir.check_fresh(run_dir, *(name for name, given in (("tokenizer", tokenizer_dir), ("tokens", None),
                                                           ("model", model_dir)) if given is None))
    data = collect(run_dir, sample_rows=sample_rows, top_reasons=top_reasons, per_reason=per_reason,
                   text_chars=text_chars, tokenizer_dir=tokenizer_dir, model_dir=model_dir)
    page = render(data, per_reason=per_reason).encode("utf-8")
    in_run = output is None
    output = output or posixpath.join(data.run_dir, "report.html")
    if not in_run:
        _write_atomic(output, page)
        return ReportResult(output, len(page), summary(data, output))
    # RUN's marker is read, changed and written under RUN's lock, as a claim (held for milliseconds): a command
    # recording its outputs meanwhile would otherwise lose them. While a command holds RUN for its whole run (a
    # training of hours), a page the marker already records as made from this clean/ is replaced without touching the
    # marker; a first page then needs the marker changed: refused in one line
    try:
        with run_lock(run_dir, "report", claim=True):
            _write_in_run(run_dir, output, page, record=True)
    except FolderBusy as busy:
        marker = rundir.read_marker(run_dir)
        if marker is not None and not _recorded_as_fresh(marker):
            raise UserError(f"{run_dir} is in use by {busy.holder} and its marker does not record a report.html yet; "
                            "run report again when that command ends, or write the page elsewhere with --output "
                            "FILE") from None
        _write_in_run(run_dir, output, page, record=False)
    return ReportResult(output, len(page), summary(data, output))


def _recorded_as_fresh(marker: dict) -> bool:
    """Whether ``marker`` records RUN/report.html as made from the clean/ it records (recording it again changes
    nothing)."""
    return "report.html" in marker["outputs"] and marker["derived"].get("report.html") == marker.get("corpus_fingerprint")


def _write_in_run(run_dir: str, output: str, page: bytes, record: bool) -> None:
    from corpusforge.core import rundir

    rundir.check_owned(run_dir, ["report.html"])  # RUN/report.html is replaced only when the marker records it
    _write_atomic(output, page)
    if record and rundir.read_marker(run_dir) is not None:  # a rebuild then retires this page with the old clean/
        rundir.record_output(run_dir, "report.html")


def _write_atomic(path: str, data: bytes) -> None:
    """Temporary file, fsync, rename (any Beam filesystem): a reader never sees half a page, and a path that
    is not a regular file (a directory, /dev/full) is refused rather than replaced."""
    from corpusforge.core import files
    from corpusforge.core.errors import UserError, resource_error

    try:
        files.write_bytes_atomic(path, data)
    except OSError as exc:
        raise (resource_error(exc, path, "the report") or UserError(f"cannot write the report to {path}: {exc}")) from exc
