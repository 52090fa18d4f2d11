"""Package layout: the repository's ``pipeline/``, ``tokenizer/`` and ``trainers/`` folders install as
``corpusforge.pipeline``, ``corpusforge.tokenizer`` and ``corpusforge.trainers`` (nothing generic lands at the top
of site-packages). Metadata lives in pyproject.toml; runners that stage the package with
``--setup_file=./setup.py`` (Dataflow) use this file too."""
from setuptools import find_packages, setup

FOLDERS = ("pipeline", "tokenizer", "trainers")

setup(
    packages=find_packages(include=["corpusforge", "corpusforge.*"])
    + [f"corpusforge.{name}" for name in find_packages(include=[f"{f}*" for f in FOLDERS])],
    package_dir={"corpusforge": "corpusforge", **{f"corpusforge.{folder}": folder for folder in FOLDERS}},
    # The report's Jinja2 templates (the page, its macros, CSS and script) are files the installed package reads.
    package_data={"corpusforge.pipeline.report": ["templates/*.html", "templates/*.css", "templates/*.js"]},
)
