import sys

from corpusforge.pipeline.cli.main import main

sys.exit(main())
