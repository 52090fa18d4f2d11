"""Fixtures: a small generated corpus written as clean Arrow shards."""
from __future__ import annotations

import pathlib

import pytest

from tests.tokenizer.data import make_documents, write_clean_shards


@pytest.fixture(scope="session")
def corpus_docs() -> list[dict]:
    return make_documents(600, seed=1)


@pytest.fixture(scope="session")
def clean_dir(tmp_path_factory, corpus_docs) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("run") / "clean"
    write_clean_shards(directory, corpus_docs, num_shards=3)
    return directory
