# Two commands do all the set-up on a fresh machine:
#   make demo   installs corpusforge into .venv and runs the whole chain on the built-in sample
#   make test   installs corpusforge with its test extras into .venv and runs the test suite
PYTHON ?= python3
VENV ?= .venv
PIP := $(VENV)/bin/pip
# torch first, pinned to the CPU build pip finds locally; pyproject's torch range accepts it, so the
# project install adds nothing (on a GPU machine, drop this line to get the CUDA build of the same range).
TORCH ?= torch==2.13.0

.PHONY: install install-test demo test clean readme constraints

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# constraints.txt pins every other package to the versions CI tested (pip freeze; `make constraints`).
CONSTRAINTS := -c constraints.txt

$(VENV)/.installed: $(VENV)/bin/python pyproject.toml constraints.txt
	$(PIP) install $(TORCH)
	$(PIP) install $(CONSTRAINTS) -e ".[query]"
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install $(CONSTRAINTS) -e ".[query,test,gcp,dask]"
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# The demo's model is tiny (debug size, 60 steps on 300 documents): its sample shows the chain works, not prose.
demo: install
	$(VENV)/bin/corpusforge demo --run-dir runs/demo --set output.overwrite=true --no-next-steps
	$(VENV)/bin/corpusforge export runs/demo/model runs/demo/export --overwrite
	@echo "A sample from the demo's tiny model (debug size, 60 training steps): word salad is expected."
	$(VENV)/bin/corpusforge generate --model runs/demo/export --prompt "The" --max-new-tokens 30 --seed 0
	@$(VENV)/bin/python -m corpusforge.cli.demo runs/demo runs/demo/export

test: install-test
	$(VENV)/bin/pytest

clean:
	rm -rf runs/demo .pytest_cache

# Regenerate docs/configuration.md, the configuration reference, from the dataclasses (tests/test_readme.py checks it).
readme: install
	$(VENV)/bin/python -m corpusforge.cli.show_config --update-reference

# Pin constraints.txt to what a fresh `make install-test` installed (corpusforge and torch left out).
constraints: install-test
	{ sed -n '1,3p' constraints.txt; $(PIP) freeze --exclude-editable | grep -v -i -E '^(corpusforge|torch)(==| @)'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
