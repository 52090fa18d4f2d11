"""The top layer: the ``corpusforge`` command (one module per command) and the run's whole configuration."""
