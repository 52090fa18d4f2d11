"""Temporary work directories for the bench scripts: removed when the script exits, so a bench run (a 1M-document
corpus and its build: tens of GB) does not stay in /tmp. Pass a script's ``--workdir`` to keep its files."""
from __future__ import annotations

import atexit
import shutil
import tempfile


def temporary_workdir(prefix: str) -> str:
    """A new directory under the system's temporary directory, deleted (with everything in it) at exit."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path
