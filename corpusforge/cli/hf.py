"""What the commands that run transformers share: its progress bars and advice off (the CLI has its own)."""
from __future__ import annotations


def quiet_transformers() -> None:
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
