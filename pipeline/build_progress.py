"""The live progress display of a build (``corpusforge.core.progress`` draws it)."""
from __future__ import annotations

from corpusforge.core.beam_options import runs_locally
from corpusforge.core.progress import Progress, local_directory
from corpusforge.pipeline.readers import input_bytes


def build_progress(config, index: int, stages: list[str], segments: int, work_dir: str, options,
                   enabled: bool = True) -> Progress:
    """The display of build pipeline ``index`` (of ``segments``; one per stage with stage checkpoints).

    The first pipeline reads the inputs: its bar is input bytes read of the total, with records read and
    documents written beside it. Later ones (stage checkpoints) count the documents they write. Disabled
    (``directory`` None, nothing shown) when asked, and on runners whose workers cannot write here.
    """
    if not enabled or not runs_locally(options.get_all_options(), config.beam.runner):
        return Progress(None, "", enabled=False)
    label = "build" if segments == 1 else f"stage {'+'.join(stages) or 'read'}"
    directory = local_directory(work_dir, f"progress-{index:02d}")
    if index == 0:
        return Progress(directory, "bytes_read", input_bytes(config.inputs), unit="B", label=label,
                        extras=(("records_read", "records read"), ("rows_written", "documents written")))
    return Progress(directory, "rows_written", unit="docs", label=f"{label}: written")
