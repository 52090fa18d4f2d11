from corpusforge.cli.main import run

run()
