"""`corpusforge --help` and every subcommand's --help answer without importing the heavy libraries."""
from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("apache_beam", "torch", "transformers", "presidio_analyzer", "spacy", "peft", "datasketch", "scipy")

_SCRIPT = """
import contextlib, io, json, sys
from corpusforge.pipeline.cli.main import COMMANDS, main
heavy = json.loads(sys.argv[1])
seen = {}
for command in [None, *COMMANDS]:
    argv = ["--help"] if command is None else [command, "--help"]
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main(argv)
        except SystemExit:
            pass
    assert "usage: corpusforge" in out.getvalue(), (command, out.getvalue()[:200])
    seen[command or "corpusforge"] = [name for name in heavy if name in sys.modules]
print(json.dumps(seen))
"""


def test_help_imports_no_heavy_library():
    # In a fresh process: the test session itself has imported Beam and the rest long ago.
    done = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(HEAVY)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert "corpusforge" in seen and "build" in seen and "train" in seen
    # Each command's list holds what was imported up to and including its --help: all must stay empty.
    assert {command: names for command, names in seen.items() if names} == {}
