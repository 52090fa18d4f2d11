"""``python -m corpusforge``: the same as the ``corpusforge`` command."""
from corpusforge.cli.main import run

run()
