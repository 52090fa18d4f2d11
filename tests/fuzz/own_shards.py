"""Fuzz family ``own_shards``: corpusforge's own outputs as input (docs/inputs.md, "corpusforge's own shards"),
and records whose text field is missing (the line that names the fields they have).

Each case writes one shard file under ``workdir`` as a build writes it (``document_row`` / ``removed_row`` through
``write_shard``): a clean or a removed shard (or a removed shard of an older run, without ``metadata``), Arrow, Parquet or JSON Lines (zstd, gzip or none), annotations and
details typed structs or JSON strings, of 1-12 documents whose ids and sources hold ``/``, ``@``, ``#``, spaces and
non-ASCII, whose metadata are random JSON objects (nested, keys named as corpusforge's own fields: ``metadata``,
``source``, ``annotations``, ``id``, ``text``; empty). Or, one case in four, a JSON Lines file of look-alikes: a
shard's columns plus one more, ``metadata`` an object rather than a string, a field missing, or records without
the text field at all.

Promises checked (an AssertionError names the one broken):
- every shard row is read back once, in order, as the document it was: its id and source as written, its text,
  its metadata equal to the object the build wrote (a removed row of an older run, without a metadata column:
  none), no annotations;
- a look-alike is an ordinary record: its id namespaced by the file's source, its fields in metadata;
- a record without the text field is rejected ``missing_text`` and its detail names its fields (its first 12)
  and, when one holds a string, the one holding the longest to name with ``--text-field``;
- one case in four also goes through a build (stages off): input = kept + removed + rejected = the rows written,
  and clean/ holds every document with its id, source and metadata.
"""
from __future__ import annotations

import collections
import json
import os
import pathlib
import random
from typing import Any

from tests.fuzz.accounted_build import accounted_build

FAMILY = "own_shards"

TRIED: collections.Counter = collections.Counter()

_NAMES = ["web", "wiki", "a/b", "x@y", "ümlaut", "sp ace", "#7", "s"]
_KEYS = ["url", "metadata", "source", "annotations", "id", "text", "lang", "ключ", "a.b", ""]


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["str", "int", "float", "bool", "null", "list", "dict"] if depth < 3 else ["str", "int", "null"])
    if kind == "str":
        return rng.choice(["", "x", "héllo", "🙂 emoji", "line\nend", '{"looks": "like json"}',
                           "a" * rng.randint(1, 50)])
    if kind == "int":
        return rng.randint(-10**12, 10**12)
    if kind == "float":
        return rng.choice([0.5, -1.25, 1e300])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return _object(rng, depth + 1)


def _object(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    return {rng.choice(_KEYS) + str(rng.randint(0, 2) or ""): _value(rng, depth) for _ in range(rng.randint(0, 4))}


def _documents(rng: random.Random) -> list:
    from corpusforge.pipeline.document import Document

    docs = []
    for i in range(rng.randint(1, 12)):
        source = rng.choice(_NAMES)
        doc_id = f"{source}/{rng.choice(['d', 'id@f.jsonl', 'x#3', 'ü'])}{i}"
        text = rng.choice(["A document about rivers.", "Ein Text über Flüsse.", "línea\r\nuno", "x" * 300]) + f" {i}"
        annotations = {"lang": rng.choice(["en", "de"]), "lang_score": 0.5} if rng.random() < 0.7 else {}
        docs.append(Document(id=doc_id, text=text, source=source, metadata=_object(rng), annotations=annotations))
    return docs


def _write_shard(rng: random.Random, path_base: pathlib.Path, docs: list, removed: bool) -> pathlib.Path:
    import pyarrow as pa

    from corpusforge.core.shard_files import ShardFormat, write_shard
    from corpusforge.pipeline.document import Removed, document_row, document_schema, removed_row, removed_schema

    name = rng.choice(["arrow", "parquet", "jsonl"])
    fmt = ShardFormat(name, "none" if name == "arrow" else rng.choice(["auto", "gzip", "none"]))
    typed = rng.random() < 0.5
    annotations = pa.struct([pa.field("lang", pa.string()), pa.field("lang_score", pa.float64()),
                             pa.field("other", pa.string())]) if typed else None
    details = pa.struct([pa.field("survivor_id", pa.string()), pa.field("other", pa.string())]) if typed else None
    TRIED[f"{removed or 'clean'} {name} {'typed' if typed else 'json'}"] += 1
    path = path_base.with_name(f"part-00000-of-00001{fmt.suffix}")
    if removed:
        rows = [removed_row(Removed(doc, "dedup", "exact_duplicate", {"survivor_id": "web/x"}), annotations, details)
                for doc in docs]
        schema = removed_schema(annotations, details)
        if removed == "old removed":  # a run written before removed/ kept metadata: no such column
            schema = schema.remove(schema.get_field_index("metadata"))
            rows = [{key: value for key, value in row.items() if key != "metadata"} for row in rows]
        write_shard(str(path), schema, rows, fmt)
    else:
        write_shard(str(path), document_schema(annotations), [document_row(doc, annotations) for doc in docs], fmt)
    return path


def _lookalikes(rng: random.Random, path: pathlib.Path) -> list[tuple[dict, str]]:
    """JSON Lines records that are not shard rows: ``(record, kind)``."""
    records = []
    for i in range(rng.randint(1, 8)):
        row = {"id": f"r{i}", "text": f"Text number {i}.", "source": "web", "metadata": json.dumps({"k": i}),
               "annotations": {}}
        kind = rng.choice(["extra", "object_metadata", "no_annotations", "no_text"])
        if kind == "extra":
            row["extra"] = "x"
        elif kind == "object_metadata":
            row["metadata"] = {"k": i}
        elif kind == "no_annotations":
            del row["annotations"]
        else:
            row = {f"f{j}": rng.choice(["long " * rng.randint(1, 9), 7, None]) for j in range(rng.randint(0, 15))}
        TRIED[f"lookalike {kind}"] += 1
        records.append((row, kind))
    path.write_text("".join(json.dumps(r) + "\n" for r, _ in records), encoding="utf-8")
    return records


def _check_missing_text(record: dict, detail: str) -> None:
    names = [str(k)[:40] for k in list(record)[:12]]
    if names and f"records have fields: {', '.join(names)}" not in detail:
        raise AssertionError(f"missing_text detail does not name the fields {names}: {detail!r}")
    strings = [(len(v), k) for k, v in list(record.items())[:12] if isinstance(v, str) and v]
    if strings and f"--text-field {max(strings)[1]} " not in detail:
        raise AssertionError(f"missing_text detail does not name the longest string field: {detail!r}")


# The entries of a run directory laid out as a build, tokenize, train and a build keeping its checkpoints leave
# them (recorded in the marker as those commands record them), and what each must do as an input.
_RUN_ENTRIES = {"clean": "read", "removed": "read", "sample": "read", "rejected": "refused", "tokens": "refused",
                "model": "refused", ".checkpoints": "refused", ".tmp-build-x": "refused", "manifest.json": "refused",
                "stats.json": "refused", "README.md": "refused", "report.html": "refused", "mine": "read"}
# Folders named as an output of some command (tokenize's splits, tokenizer train, ablate): recorded in the marker
# or not, at random per case; read when the marker does not record it (the user's own), refused when it does.
_NAMED_LIKE_OUTPUTS = ("train", "val", "tokenizer", "models")


def _fake_run(rng: random.Random, run: pathlib.Path, empty_clean: bool) -> dict[str, str]:
    """A run directory with each of ``_RUN_ENTRIES`` (``mine``: a folder of the user's own, unrecorded) and of
    ``_NAMED_LIKE_OUTPUTS`` (each recorded or not), its shards in a random output format; clean/ with no row when
    ``empty_clean``. Returns what each entry must do as an input ("read" or "refused")."""
    from corpusforge.core import rundir
    from corpusforge.core.shard_files import ShardFormat, write_shard
    from corpusforge.pipeline.document import (REJECTED_SCHEMA, Rejected, Removed, document_row, document_schema,
                                               rejected_row, removed_row, removed_schema)

    name = rng.choice(["arrow", "parquet", "jsonl"])
    fmt = ShardFormat(name, "none" if name == "arrow" else rng.choice(["auto", "none"]))
    docs = _documents(rng)
    part = f"part-00000-of-00001{fmt.suffix}"
    for folder in ("clean", "removed", "rejected", "tokens/train", "model", ".checkpoints/00-read", ".tmp-build-x",
                   "sample", "mine"):
        (run / folder).mkdir(parents=True)
    write_shard(str(run / "clean" / part), document_schema(), [] if empty_clean else [document_row(d) for d in docs], fmt)
    write_shard(str(run / "removed" / part), removed_schema(), [removed_row(Removed(d, "dedup", "x")) for d in docs], fmt)
    write_shard(str(run / "rejected" / part), REJECTED_SCHEMA,
                [rejected_row(Rejected("web", "d.jsonl", i, "malformed_json", "x", '{"text": "not a doc')) for i in range(3)],
                fmt)
    (run / "tokens" / "train" / "part-00000-of-00001.arrow").write_bytes(b"\0" * 16)
    (run / "model" / "model.safetensors").write_bytes(b"\0" * 16)
    (run / ".checkpoints" / "00-read" / "docs.jsonl").write_text('{"text": "spilled text"}\n')
    (run / ".tmp-build-x" / "docs.jsonl").write_text('{"text": "half written"}\n')
    (run / "sample" / "web.jsonl").write_text('{"text": "A sample document."}\n')
    (run / "mine" / "notes.jsonl").write_text('{"text": "My own notes kept beside the run."}\n')
    for name_ in ("manifest.json", "stats.json"):
        (run / name_).write_text(json.dumps({"accounting": {"input": len(docs), "kept": 0 if empty_clean else len(docs),
                                                            "removed": len(docs), "rejected": 3}}))
    (run / "README.md").write_text("---\nconfigs: []\n---\n")
    (run / "report.html").write_text("<html></html>")
    expected = dict(_RUN_ENTRIES)
    for name_ in _NAMED_LIKE_OUTPUTS:
        (run / name_).mkdir()
        (run / name_ / "a.jsonl").write_text('{"text": "A folder of my own named like an output."}\n')
        expected[name_] = "refused" if rng.random() < 0.5 else "read"
    rundir.write_marker(str(run), {"outputs": {name_: rundir.listing(str(run / name_)) if (run / name_).is_dir() else None
                                               for name_, does in expected.items()
                                               if name_ not in ("mine", ".checkpoints", ".tmp-build-x")
                                               and (does == "refused" or name_ not in _NAMED_LIKE_OUTPUTS)},
                                   "derived": {}, "scratch": [".checkpoints", ".tmp-build-x"]})
    return expected


def paths_case(rng: random.Random, workdir: pathlib.Path) -> None:
    """Every path a corpusforge output can be passed by: the run directory, each entry, a glob over it, one shard
    of rejected/, a folder holding the run, a copy of a rejected/ shard out of it (each row rejected as
    ``rejected_record``). Each is read (its files all in clean/, removed/, sample/ or the user's
    own, a folder named like an output the marker does not record among them) or refused before any work, in one line saying what to pass instead; a run whose clean/ holds no row is
    said to be so when it is all the input."""
    from corpusforge.core.errors import UserError
    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.readers import check_inputs

    run = workdir / "runs" / rng.choice(["run", "r un", "ü #1"])
    empty_clean = rng.random() < 0.3
    expected = _fake_run(rng, run, empty_clean)
    if rng.random() < 0.2:  # a rejected/ shard copied out of its run: no marker tells it, its rows do
        from corpusforge.pipeline.readers import read_file

        TRIED["path copy of rejected"] += 1
        shard = next((run / "rejected").iterdir())
        copy = workdir / "copied" / shard.name
        copy.parent.mkdir()
        copy.write_bytes(shard.read_bytes())
        items = list(read_file(str(copy), InputConfig(path=str(copy))))
        if len(items) != 3 or any(getattr(item, "reason", None) != "rejected_record" for item in items):
            raise AssertionError(f"a copied rejected/ shard's rows read as {items!r}")
        return
    # two cases in five name (a file of) a folder named like an output: read or refused by what the marker records
    if rng.random() < 0.4:
        entry, kind = rng.choice(_NAMED_LIKE_OUTPUTS), rng.choice(["entry", "file", "pair"])
    else:
        entry = rng.choice(sorted(expected))
        kind = rng.choice(["entry", "entry", "file", "run", "glob", "glob files", "parent", "pair"])
    TRIED[f"path {kind}"] += 1
    paths = {"entry": [run / entry], "run": [run], "parent": [run.parent],
             "glob": [run / "*"], "glob files": [run / "*" / "part-*"],
             "pair": [run / "clean", run / entry]}.get(kind)
    if kind == "file":
        files = sorted(p for p in (run / entry).rglob("*") if p.is_file()) if (run / entry).is_dir() else [run / entry]
        paths = [rng.choice(files)]
    reached = set()
    for path in paths:
        target = path if "*" not in str(path) else None
        if target is None:
            reached |= {"manifest.json", "stats.json", "README.md", "report.html"} if kind == "glob" else \
                {"clean", "removed", "rejected"}
        elif target == run.parent or target == run:
            reached |= set(expected)
        else:
            reached.add(target.relative_to(run).parts[0])
    refused = sorted(name for name in reached if expected[name] == "refused")
    if rng.random() < 0.25 and "glob" not in kind:  # named through a link to it or to a folder above it
        TRIED["path through a link"] += 1
        paths = [_through_link(rng, workdir, path, run.parent) for path in paths]
    try:
        listed = check_inputs([InputConfig(path=str(p)) for p in paths])
    except UserError as exc:
        line = str(exc)
        if "\n" in line:
            raise AssertionError(f"{kind} {entry}: a refusal of more than one line: {line!r}")
        if refused:
            if f"--input {run}/clean" not in line:
                raise AssertionError(f"{kind} {[str(p) for p in paths]}: refused without naming the run's documents: "
                                     f"{line!r}")
            return
        if empty_clean and reached <= {"clean"}:
            if "is a corpusforge output that holds no documents" not in line or f"--input {run}/removed" not in line:
                raise AssertionError(f"an empty clean/ refused without saying so: {line!r}")
            return
        raise AssertionError(f"{kind} {[str(p) for p in paths]} (reaching {sorted(reached)}) refused: {line!r}")
    if refused:
        raise AssertionError(f"{kind} {[str(p) for p in paths]} reaches {refused} and was not refused: "
                             f"{[f for _, found in listed for f in found][:5]}")
    if empty_clean and reached == {"clean"}:
        raise AssertionError(f"{kind} {[str(p) for p in paths]}: an empty clean/ alone was not refused")
    for _, found in listed:
        for name in found:
            top = pathlib.Path(os.path.realpath(name)).relative_to(run.resolve()).parts[0]
            if expected[top] != "read":
                raise AssertionError(f"{name} listed as input")


def _through_link(rng: random.Random, workdir: pathlib.Path, path: pathlib.Path, top: pathlib.Path) -> pathlib.Path:
    """``path`` named through a new link to it or to one of its folders up to ``top`` (``LINK/part-0.jsonl`` with
    ``LINK -> RUN/rejected``): every name a path can resolve to is the path (a link above the file was not
    followed before: a run's rejected rows were read as documents)."""
    ancestors = [path, *[a for a in path.parents if a == top or top in a.parents]]
    target = rng.choice(ancestors)
    links = workdir / "links"
    links.mkdir(exist_ok=True)
    link = links / f"to-{len(list(links.iterdir()))}-{target.name}"  # a file's link keeps its extension (its format)
    below = sorted(p for p in target.iterdir() if p.is_dir() and not p.is_symlink()) if target.is_dir() else []
    if below and rng.random() < 0.3:  # LINK/.. with LINK -> a folder in target: the kernel goes up from the target
        TRIED["path up from a link"] += 1
        link.symlink_to(rng.choice(below))
        return link / ".." / path.relative_to(target)
    link.symlink_to(target)
    return link / path.relative_to(target) if target != path else link


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    from corpusforge.pipeline.config import InputConfig
    from corpusforge.pipeline.document import Document, Rejected
    from corpusforge.pipeline.readers import read_file

    if rng.random() < 0.3:
        paths_case(rng, workdir)
        return
    if rng.random() < 0.25:
        path = workdir / "look.jsonl"
        records = _lookalikes(rng, path)
        items = list(read_file(str(path), InputConfig(path=str(path))))
        if len(items) != len(records):
            raise AssertionError(f"{len(records)} records read as {len(items)} items")
        for (record, kind), item in zip(records, items):
            if kind == "no_text":
                if not isinstance(item, Rejected) or item.reason != "missing_text":
                    raise AssertionError(f"a record without text read as {item!r}")
                _check_missing_text(record, item.detail)
            elif not isinstance(item, Document) or item.id != f"look/{record['id']}" or item.source != "look":
                raise AssertionError(f"a look-alike ({kind}) was read as a shard row: {item!r}")
        return
    removed = rng.choice(["removed", "old removed"]) if rng.random() < 0.4 else ""
    docs = _documents(rng)
    path = _write_shard(rng, workdir / "shard", docs, removed)
    items = list(read_file(str(path), InputConfig(path=str(path))))
    if len(items) != len(docs):
        raise AssertionError(f"{len(docs)} rows read as {len(items)} items: {items[:3]!r}")
    for doc, item in zip(docs, items):
        if not isinstance(item, Document):
            raise AssertionError(f"the row of {doc.id!r} was rejected: {item!r}")
        want = {} if removed == "old removed" else doc.metadata
        got = (item.id, item.source, item.text, item.metadata, item.annotations)
        if got != (doc.id, doc.source, doc.text, want, {}):
            raise AssertionError(f"read back as {got!r}, written as {(doc.id, doc.source, doc.text, want, {})!r}")
    if rng.random() < 0.25 and len({doc.id for doc in docs}) == len(docs):
        TRIED["built"] += 1
        run = workdir / "run"
        base = {"inputs": [{"path": str(path)}], "output": {"run_dir": str(run), "format": "jsonl"},
                "quality": {"enabled": False}, "dedup": {"enabled": False}, "pii": {"enabled": False},
                "normalize": {"enabled": False}}
        result = accounted_build(base, len(docs))
        if result.stats["accounting"]["kept"] != len(docs):
            raise AssertionError(f"a build of {len(docs)} shard rows kept {result.stats['accounting']}")
        rows = []
        for shard in sorted((run / "clean").glob("part-*")):
            from corpusforge.core.shard_files import open_shard
            rows += open_shard(str(shard)).read_all().to_pylist()
        got = sorted((r["id"], r["source"], json.loads(r["metadata"])) for r in rows)
        want_rows = sorted((d.id, d.source, {} if removed == "old removed" else d.metadata) for d in docs)
        if got != want_rows:
            raise AssertionError(f"the build's clean rows differ from the shard's documents: {got[:2]!r}")
