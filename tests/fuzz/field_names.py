"""Fuzz family ``field_names``: a user's records whose text (or label) is under a name the command was not told,
read by every command that takes a field name: evaluate's and embed's reader (``read_documents``), finetune's and
predict's (``read_records`` + ``task_examples``) and, one case in five, ``corpusforge build``.

Promise: a command that finds no field of the name it was given says, in one line, which fields the records have
(the first twelve, each name as it is or escaped, never a line break) and, for a text field, a flag that names the
record's longest string field and that a shell and argparse read back as that very name (quoted where it holds a
space or a quote, ``--text-field=-x`` where argparse would take it for a flag); never only "check --text-field".

Each case draws 1-6 records sharing 1-15 field names from a pool of awkward ones (spaces, quotes, a leading dash,
``=``, accents, CJK, emoji, a newline, U+2028, a tab, the empty name, 60+ characters, names that look like flags or
numbers), values strings, numbers, nulls or lists; the field asked for is absent from every record. Written as
JSON Lines (plain or gzip) or Parquet (strings and numbers only), or CSV for finetune.
"""
from __future__ import annotations

import argparse
import collections
import csv
import gzip
import json
import pathlib
import random
import shlex

FAMILY = "field_names"
TRIED: collections.Counter = collections.Counter()

_POOL = ["body", "content", "doc id", "it's", 'say "hi"', "-x", "--text", "a=b", "données", "正文", "📄", "a\nb",
         "line\u2028sep", "tab\there", "", "x" * 70, "1", "text ", "TEXT", "metadata", "label", "-", "--", "x" * 101,
         "-a\tb", "$HOME", "a;b"]


def _name(rng: random.Random) -> str:
    if rng.random() < 0.7:
        return rng.choice(_POOL)
    return "".join(rng.choice("abcXYZ -_=\"'é\u00a0\n日") for _ in range(rng.randint(1, 12)))


def _value(rng: random.Random, columnar: bool) -> object:
    kind = rng.choice(["short", "long", "int", "null", "list"] if not columnar else ["short", "long", "int"])
    if kind == "short":
        return "w" * rng.randint(0, 5)
    if kind == "long":
        return " ".join(rng.choice(["river", "lake", "été", "水"]) for _ in range(rng.randint(3, 40)))
    if kind == "int":
        return rng.randint(-5, 10**6)
    return None if kind == "null" else ["a", 1]


def _records(rng: random.Random, asked: str, columnar: bool) -> list[dict]:
    names = list(dict.fromkeys(n for n in (_name(rng) for _ in range(rng.randint(1, 15))) if n != asked))
    if not names:
        names = ["body"]
    kinds = {name: _value(rng, columnar) for name in names}  # one type per column (Parquet needs it)
    out = []
    for _ in range(rng.randint(1, 6)):
        record = {}
        for name, example in kinds.items():
            value = _value(rng, columnar)
            if columnar and type(value) is not type(example):
                value = example
            record[name] = value
        out.append(record)
    return out


def _check_flag(detail: str, flag: str, record: dict) -> None:
    """A guessed flag names the record's longest string field, whole, as a shell and argparse read it back; where that
    field's name cannot be typed as one word (over 100 characters, not printable, ``--``) nothing is guessed (never
    the next longest: an id suggested as the text)."""
    strings = [(len(v), str(k)) for k, v in list(record.items())[:12] if isinstance(v, str) and v]
    marker = f"; name the text field with {flag}"
    best = max(strings)[1] if strings else None
    if best is None or len(best) > 100 or not best.isprintable() or best == "--":
        if best is not None:
            TRIED["no_guess_untypable"] += 1
        assert marker not in detail and f"; name yours with {flag}" in detail, detail
        return
    assert marker in detail, detail
    said = detail.split("; name the text field with ", 1)[1].split("; records have fields: ", 1)[0]
    if said.endswith(")") and " (" in said:  # the config key
        said = said.rsplit(" (", 1)[0]
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument(flag)
    assert getattr(parser.parse_args(shlex.split(said)), flag[2:].replace("-", "_")) == best, (said, best)


def _check_fields_named(text: str, record: dict, cut: bool = False) -> None:
    """One line naming the record's first twelve fields (each cut at 40 characters, escaped where not printable);
    ``cut``: a rejected record's detail, which the build keeps to 300 characters: what is there is their start."""
    assert "\n" not in text and "\r" not in text and "\u2028" not in text, text
    listed = ", ".join((str(k)[:40] if str(k)[:40].isprintable() else repr(str(k)[:40])[1:-1])
                       for k in list(record)[:12]) + (", ..." if len(record) > 12 else "")
    assert "records have fields: " in text, text
    shown = text.split("records have fields: ", 1)[1]
    if cut:
        shown = shown.removesuffix(")")
        assert listed.startswith(shown) and len(shown) >= min(len(listed), 20), (shown, listed)
    else:
        assert shown == listed, (shown, listed)


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    from corpusforge.core.errors import UserError
    from corpusforge.trainers.evaluate import Skipped, read_documents, skipped_line
    from corpusforge.trainers.finetune.config import FinetuneConfig
    from corpusforge.trainers.finetune.data import read_records, task_examples

    asked = rng.choice(["text", "body", "content", "sentence"])
    fmt = rng.choice(["jsonl", "jsonl.gz", "parquet", "csv"])
    TRIED[fmt] += 1
    records = _records(rng, asked, columnar=fmt in ("parquet", "csv"))
    path = workdir / f"data.{fmt}"
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        if "" in records[0] or len(set(records[0])) != len(records[0]):
            records = [{(k or "blank"): v for k, v in r.items()} for r in records]
        pq.write_table(pa.Table.from_pylist(records), path)
    elif fmt == "csv":
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(list(records[0]))
            writer.writerows([["" if v is None else v for v in r.values()] for r in records])
        records = [{k: ("" if v is None else str(v)) for k, v in r.items()} for r in records]  # as csv reads them
    else:
        lines = "".join(json.dumps(r, ensure_ascii=rng.random() < 0.5) + "\n" for r in records).encode("utf-8")
        path.write_bytes(gzip.compress(lines) if fmt.endswith(".gz") else lines)

    if fmt != "csv":  # evaluate, embed, ablate's held-out set
        skipped = Skipped()
        assert list(read_documents(str(path), asked, skipped)) == []
        assert skipped == {"missing_text": len(records)}, skipped
        line = skipped_line(skipped)
        _check_fields_named(line.split(str(path), 1)[1], records[0])
        if fmt != "parquet":  # a Parquet file's columns carry no values to guess from
            _check_flag(line, "--text-field", records[0])

    if fmt in ("csv", "jsonl") and not any(isinstance(v, (list, dict)) for r in records for v in r.values()):
        TRIED["finetune"] += 1
        field = rng.choice(["text", "label"])
        config = FinetuneConfig(text_field=asked if field == "text" else next(iter(records[0])) or "x",
                                label_field=asked if field == "label" else next(iter(records[0])) or "x")
        try:
            task_examples(read_records(path), config, str(path))
        except UserError as exc:
            message = str(exc)
            if "has no field" in message:
                _check_fields_named(message, records[0])
                if field == "text":
                    _check_flag(message.split(": record ", 1)[1], "--text-field", records[0])
            else:  # the other field was empty or not text in a record: said so, one line
                assert "\n" not in message, message
        else:
            raise AssertionError(f"finetune read records without a {asked!r} field")

    if fmt == "jsonl" and rng.random() < 0.2 and any(isinstance(v, str) and v for v in records[0].values()):
        TRIED["build"] += 1
        _build(workdir, path, asked, records)


def _build(workdir: pathlib.Path, path: pathlib.Path, asked: str, records: list[dict]) -> None:
    import contextlib
    import io

    from corpusforge.cli.main import main

    good = workdir / "good.jsonl"
    good.write_text(json.dumps({asked: "A document about rivers and lakes."}) + "\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["build", "-i", str(path), "-i", str(good), "--text-field", asked, "-o", str(workdir / "run"),
                     "--no-progress", "--set", "quality.enabled=false", "--set", "dedup.enabled=false",
                     "--set", "pii.enabled=false"])
    assert code == 0, out.getvalue()
    (line,) = [l for l in out.getvalue().splitlines() if l.startswith("  (missing_text")]
    _check_fields_named(line, records[0], cut=True)
    _check_flag(line, "--text-field", records[0])
