"""``corpusforge inspect``: what is in a shard, a shard directory or a run directory."""
from __future__ import annotations

import json
import pathlib
import shlex
from typing import TextIO

from corpusforge.core import rundir
from corpusforge.core.shard_files import open_shard, shard_suffix
from corpusforge.pipeline.run import output_schema
from corpusforge.core.run_lock import is_locked
from corpusforge.core.errors import UserError


def _shard_files(path: pathlib.Path) -> list[pathlib.Path]:
    if path.is_file():
        return [path]
    if not path.exists():
        raise UserError(f"{path} does not exist")
    files = _parts(path)
    if files:
        return files
    for sub in ("clean", "tokens/train", "train"):  # a run, a run's tokens/ as well as its tokens/train
        if (path / sub).is_dir():
            return _parts(path / sub)
    raise UserError(f"{path} holds no part-* shards (.arrow, .parquet, .jsonl[.zst|.gz]; nor clean/, tokens/train/ "
                    "or train/ below it)")


def _parts(directory: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in directory.glob("part-*") if shard_suffix(p.name))


def _show_leftovers(run_dir: str, out: TextIO) -> None:
    """Temporary directories that killed runs left in a run directory (none while a live command holds it)."""
    found = rundir.leftovers(run_dir)
    if not found or is_locked(run_dir):
        return
    print(f"stale temporary directories ({sum(size for _, size in found) / 1e6:.1f} MB, left by killed runs; the "
          "next build removes them):", file=out)
    for leftover, size in found:
        print(f"  {leftover}  {size / 1e6:.1f} MB  (remove: rm -r {shlex.quote(leftover)})", file=out)


def _find_tokenizer(path: pathlib.Path):
    for parent in [path, *path.parents][:4]:
        candidate = parent / "tokenizer" / "tokenizer.json"
        if candidate.exists():
            from tokenizers import Tokenizer

            return Tokenizer.from_file(str(candidate))
    return None


def _clip(value, chars: int):
    if isinstance(value, str) and len(value) > chars:
        return value[:chars] + f"... [{len(value):,} chars]"
    return value


def schema_lines(schema, indent: str = "  ") -> list[str]:
    """One line per field, a struct's fields (at any depth, inside lists and as a map's values too) indented below
    it: Arrow's one-line form of the typed annotations is ~1,500 characters. Plain text, the same on a terminal
    and in a pipe."""
    import pyarrow as pa

    lines = []

    def add(field, depth):
        kind, inner, opened = field.type, "", 0
        while True:  # the containers around a struct: list<map<string, list<struct>>>
            if pa.types.is_map(kind):  # before the lists: a map is a list of key/value structs to Arrow
                inner += f"map<{kind.key_type}, "
                kind, opened = kind.item_type, opened + 1
            elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
                inner += "large_list<" if pa.types.is_large_list(kind) else "list<"
                kind, opened = kind.value_type, opened + 1
            else:
                break
        if pa.types.is_struct(kind):
            lines.append(f"{indent * depth}{field.name}: {inner}struct{'>' * opened}")
            for child in kind:
                add(child, depth + 1)
        elif "map<" in inner:  # Arrow's form names a map's value field as Parquet wrote it: ('counts')
            lines.append(f"{indent * depth}{field.name}: {inner}{kind}{'>' * opened}")
        else:
            lines.append(f"{indent * depth}{field.name}: {field.type}")

    for field in schema:
        add(field, 1)
    return lines


def inspect_path(path: str, rows: int = 3, chars: int = 300, out: TextIO | None = None) -> None:
    import sys

    out = out or sys.stdout
    target = pathlib.Path(path)
    if target.is_dir():
        _show_leftovers(str(target), out)
    files = _shard_files(target)
    schemas = {f.parent: output_schema(str(f.parent.parent), f.parent.name) for f in files}  # one manifest read per directory
    readers = [open_shard(str(f), schemas[f.parent]) for f in files]  # no shard: a UserError naming it
    schema = next((r.schema for r in readers if r.schema.names), readers[0].schema)
    total = sum(r.num_rows for r in readers)
    size = sum(f.stat().st_size for f in files)
    print(f"{len(files)} shard(s), {total:,} rows, {size / 1e6:.2f} MB", file=out)
    print("schema:", file=out)
    for line in schema_lines(schema):
        print(line, file=out)
    tokenizer = _find_tokenizer(files[0].parent) if "tokens" in schema.names else None
    shown = 0
    for reader in readers:
        for batch in reader.batches():
            for record in batch.to_pylist():
                if shown >= rows:
                    return
                if tokenizer is not None and "tokens" in record:
                    ids = record["tokens"]
                    record["tokens"] = f"{len(ids)} tokens: {ids[:16]}..."
                    record["decoded"] = tokenizer.decode(ids)
                print(json.dumps({k: _clip(v, chars) for k, v in record.items()}, ensure_ascii=False, indent=1),
                      file=out)
                shown += 1
