"""Open a run directory from Python: its manifest, stats and shards.

    run = open_run("runs/latest")
    run.stats["documents"]["kept"]
    run.clean().to_table(columns=["id", "text"])        # a pyarrow dataset of RUN/clean
"""
from __future__ import annotations

import dataclasses
import posixpath
from typing import Any

from corpusforge.pipeline.core import files
from corpusforge.pipeline.core.errors import UserError


@dataclasses.dataclass(frozen=True)
class Run:
    path: str

    def _json(self, name: str) -> dict[str, Any]:
        path = posixpath.join(self.path, name)
        if not files.exists(path):
            raise UserError(f"{self.path} has no {name}; run `corpusforge build` first")
        return files.read_json(path)

    @property
    def manifest(self) -> dict[str, Any]:
        return self._json("manifest.json")

    @property
    def stats(self) -> dict[str, Any]:
        return self._json("stats.json")

    def dataset(self, name: str):
        """``clean``, ``removed``, ``rejected``, ``tokens/train`` or ``tokens/val`` as a pyarrow dataset."""
        import pyarrow.dataset as ds

        directory = posixpath.join(self.path, name)
        if not files.exists(directory):
            raise UserError(f"{directory} does not exist")
        return ds.dataset(directory, format="arrow")

    def clean(self):
        return self.dataset("clean")

    def removed(self):
        return self.dataset("removed")


def open_run(path: str) -> Run:
    if not files.exists(path):
        raise UserError(f"run directory {path} does not exist")
    return Run(path.rstrip("/") or "/")
