"""``python -m corpusforge``: the same as the ``corpusforge`` command."""
import sys

from corpusforge.pipeline.cli.main import main

sys.exit(main())
