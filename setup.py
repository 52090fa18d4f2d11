"""Shim for runners that stage the package with `--setup_file=./setup.py` (Dataflow); metadata lives in pyproject.toml."""
from setuptools import setup

setup()
