from corpusforge.pipeline.cli.main import run

run()
