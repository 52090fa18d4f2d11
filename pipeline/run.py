"""A finished run directory from Python: its outputs as pyarrow datasets, its manifest, stats and config.

    run = open_run("runs/latest")
    run.stats["accounting"]["kept"]
    run.clean.to_table(columns=["id", "text"])            # pyarrow.dataset.Dataset of RUN/clean
    run.removed.to_table(filter=pc.field("reason") == "gopher_short_doc").to_pandas()
    run.to_pandas("rejected")
    run.tokens["train"].count_rows()                       # when tokenize ran

Parquet shards are scanned lazily (a filter or column selection reads only what it needs); local Arrow stream
shards are memory-mapped, so only the pages a scan touches are read (the one map of corpusforge's own outputs left:
don't rewrite a run such a dataset is open on, docs/outputs.md); JSON Lines shards (and remote Arrow shards) are
read into memory when an output is first used.
"""
from __future__ import annotations

import functools
import posixpath
from typing import Any

import pyarrow as pa

from corpusforge.core import files, rundir
from corpusforge.core.errors import UserError
from corpusforge.core.shard_files import open_shard, shard_files, shard_suffix
from corpusforge.pipeline.document import DOCUMENT_SCHEMA, REJECTED_SCHEMA, REMOVED_SCHEMA

SCHEMAS = {"clean": DOCUMENT_SCHEMA, "removed": REMOVED_SCHEMA, "rejected": REJECTED_SCHEMA}


def output_schema(run_path: str, name: str, manifest: dict[str, Any] | None = None) -> pa.Schema | None:
    """The Arrow schema of output ``name`` (clean, removed, rejected) of the run in ``run_path``: the one its
    manifest records (typed annotations and details follow the build's config), else the plain one of runs
    written before typed annotations. What types a JSON Lines shard's columns."""
    if manifest is None:
        path = posixpath.join(run_path, "manifest.json")
        manifest = files.read_json(path) if files.exists(path) else {}
    recorded = (manifest.get("arrow_schemas") or {}).get(name)
    if recorded:
        import base64

        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(recorded)))
    return SCHEMAS.get(name)


class Run:
    """A finished build in ``path`` (open it with ``open_run``). Outputs are read on first use."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"Run({self.path!r})"

    def _json(self, name: str) -> dict[str, Any]:
        return files.read_json(posixpath.join(self.path, name))

    @functools.cached_property
    def manifest(self) -> dict[str, Any]:
        return self._json("manifest.json")

    @functools.cached_property
    def stats(self) -> dict[str, Any]:
        return self._json("stats.json")

    @property
    def config(self) -> dict[str, Any]:
        """The build's configuration as manifest.json records it (``pii.hash_salt`` only as "set")."""
        return self.manifest["config"]

    @functools.cached_property
    def clean(self):
        return self.dataset("clean")

    @functools.cached_property
    def removed(self):
        """Removed documents (None when the build ran with ``output.write_removed: false``)."""
        return self.dataset("removed") if files.exists(posixpath.join(self.path, "removed")) else None

    @functools.cached_property
    def rejected(self):
        """Rejected input records (None when the build ran with ``output.write_rejected: false``)."""
        return self.dataset("rejected") if files.exists(posixpath.join(self.path, "rejected")) else None

    @functools.cached_property
    def tokens(self) -> dict[str, Any] | None:
        """``{"train": dataset, "val": dataset}`` of the token shards, or None before ``corpusforge tokenize``."""
        if not files.exists(posixpath.join(self.path, "tokens", "manifest.json")):
            return None
        return {split: self.dataset(f"tokens/{split}") for split in ("train", "val")
                if files.exists(posixpath.join(self.path, "tokens", split))}

    def dataset(self, name: str):
        """``clean``, ``removed``, ``rejected``, ``tokens/train`` or ``tokens/val`` as a ``pyarrow.dataset.Dataset``."""
        import pyarrow.dataset as ds

        directory = posixpath.join(self.path, name)
        paths = [path for path, _ in shard_files(directory)] if files.exists(directory) else []
        if not paths:
            raise UserError(f"{directory} holds no shards")
        if shard_suffix(paths[0]) == ".parquet":
            return ds.dataset(paths, format="parquet")
        schema = output_schema(self.path, name, self.manifest)
        readers = [open_shard(path, schema, mapped=True) for path in paths]  # kept by the caller: see below
        if all(r.kind == "ipc-file" for r in readers):
            return ds.dataset(paths, format="ipc")  # Arrow IPC files: token shards, and clean/ of older builds
        schema = next((r.schema for r in readers if r.schema.names), readers[0].schema)
        # Arrow streams (memory-mapped when local: no copy) and JSON Lines (read): one in-memory dataset. The one
        # memory map of corpusforge's own outputs left (docs/outputs.md): the caller keeps the dataset of the whole
        # output, which read would be all in memory; a shard cut short while it is mapped raises SIGBUS.
        return ds.dataset(pa.Table.from_batches([b for r in readers for b in r.batches()], schema=schema))

    def to_pandas(self, name: str = "clean", columns: list[str] | None = None):
        """One output as a pandas DataFrame (all of it in memory: select ``columns`` for a big run)."""
        return self.dataset(name).to_table(columns=columns).to_pandas()


def open_run(path: str) -> Run:
    """The finished run in ``path``; a ``UserError`` saying what to do when it is not one."""
    run_dir = path.rstrip("/") or "/"
    if not files.exists(run_dir):
        raise UserError(f"run directory {path} does not exist; run `corpusforge build` first")
    if files.exists(files.join(run_dir, rundir.JOURNAL)):
        raise UserError(f"{path} is in the middle of swapping in a new build (or one was killed doing so); wait for "
                        "the build to finish, or run the build again, which rolls the cut swap back")
    marker = rundir.read_marker(run_dir)
    if not marker or "clean" not in marker.get("outputs", {}) or not files.exists(files.join(run_dir, "manifest.json")):
        raise UserError(f"{path} is not a finished corpusforge run (no {rundir.MARKER} listing clean/, or no "
                        "manifest.json); run `corpusforge build` with output.run_dir there first")
    return Run(run_dir)
