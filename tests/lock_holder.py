"""A folder's run lock held by another process, for tests of commands that must take it before they write."""
from __future__ import annotations

import contextlib
import subprocess
import sys

_HOLD = """
import sys, time
from corpusforge.core.run_lock import run_lock
with run_lock(sys.argv[1], sys.argv[2]):
    print("held", flush=True)
    time.sleep(120)
"""


@contextlib.contextmanager
def held_by_another_process(folder, command: str = "build"):
    """``folder``'s lock held by a live process running as ``command`` (for its whole run, not a claim): yields
    the holder's pid."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(folder), command], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
