"""``python -m corpusforge``: the same as the ``corpusforge`` command."""
from corpusforge.pipeline.cli.main import run

run()
