"""Task records from a JSONL, CSV or Parquet file, and the label map.

    records = read_records("train.jsonl")                 # list of dicts, in file order
    examples = task_examples(records, config, "train.jsonl")
    labels = label_map(examples)                           # sorted label names -> ids

A record without a field the task needs is a ``UserError`` naming the file, the record and the field: a
fine-tuning set is small and curated, so a silent skip would hide a broken export of it.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import math
import pathlib
from typing import Any

from corpusforge.core import columnar, rundir
from corpusforge.core.errors import UserError
from corpusforge.core.input_files import (COMPRESSIONS, Oversize, RecordError, bounded_lines, cell_text, classify,
                                          display_path, missing_field_detail,
                                          open_decompressed, open_input, open_lines, parse_json, record_limit, seekable,
                                          uncompressed_name)
from corpusforge.trainers.finetune.config import FinetuneConfig


@dataclasses.dataclass
class Example:
    id: str
    text: Any  # classify: str; tag: list[str] of words; generate: the prompt
    pair: str | None = None  # classify: the second text of a pair
    target: Any = None  # classify: label name; tag: list of label names; generate: the response; None: unlabelled


def read_records(path: str | pathlib.Path, max_bytes: int = 0, flag: str = "--data") -> list[dict[str, Any]]:
    """Every record of a JSONL, CSV, TSV or Parquet file (each plain or compressed as the build reads it), or a
    one-line ``UserError`` naming the file, the line and the reason the build would reject it with
    (``corpusforge.core.input_files``: ``malformed_json``, ``too_deep``, ``number_too_large``, ``invalid_utf8``, a
    file cut short...). ``max_bytes``: the most bytes a record may take (``output.record_bytes``; 0:
    ``MAX_RECORD_BYTES``, a default build's). ``flag``: what named the file, for the build's check of a run's own
    outputs (``rundir.check_model_input``: a run's rejected/ or stats.json is refused naming what to pass)."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise UserError(f"{display_path(str(path))} is not a file; pass a JSONL, CSV or Parquet file of records")
    where = display_path(str(path))
    if not rundir.check_model_input(str(path), flag):
        raise UserError(f"{flag} {where} is corpusforge's own bookkeeping, not records; pass a JSONL, CSV or Parquet "
                        "file of records")
    suffix = pathlib.Path(uncompressed_name(path.name)).suffix  # the build's compressions, every format
    try:
        limit = max_bytes or MAX_RECORD_BYTES
        if suffix in (".jsonl", ".json", ".ndjson"):
            return _jsonl_records(path, where, limit)
        with open_input(str(path)) as raw:
            if suffix in (".csv", ".tsv"):
                text = io.TextIOWrapper(open_lines(raw, str(path)), encoding="utf-8-sig", newline="")
                return _csv_records(text, "\t" if suffix == ".tsv" else ",", where, limit)
            if suffix == ".parquet":  # decompressed and spooled as the build does (x.parquet.zst was read raw)
                return _parquet_records(seekable(open_decompressed(raw, str(path))), where, limit)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the parser raises: one line (classify names it)
        reason, detail = classify(exc)
        raise UserError(f"{where} cannot be read: {reason} ({detail[:160]})") from None
    raise UserError(f"{where}: unknown format {suffix!r}; use .jsonl, .csv, .tsv or .parquet, each plain or compressed "
                    f"({', '.join(COMPRESSIONS)})")


MAX_RECORD_BYTES = record_limit(10_000_000)  # the build's default output.max_record_bytes: a line, or a row


def _csv_records(text: Any, delimiter: str, where: str, limit: int) -> list[dict[str, Any]]:
    """A CSV or TSV file's records, a field as long as a JSONL line may be (``limit``, the build's record limit):
    the csv module's own limit, 131,072 characters, refused a long document that JSONL or Parquet took. Raised,
    never lowered: the limit is the process's, and a larger one set elsewhere stays."""
    csv.field_size_limit(max(csv.field_size_limit(), limit))
    reader = csv.DictReader(text, delimiter=delimiter)

    def too_long() -> UserError:
        return UserError(f"{where}:{reader.line_num} holds a field of more than {limit:,} characters, over what a "
                         "record may take; shorten or drop it, or raise output.max_record_bytes")

    out = []
    try:
        for record in reader:
            if any(isinstance(value, str) and len(value) > limit for value in record.values()):
                raise too_long()
            out.append(record)
    except csv.Error as exc:  # over the csv module's limit for the process (raised above, never lowered)
        if "field larger than field limit" not in str(exc):
            raise
        raise too_long() from None
    return out


def _parquet_records(raw: Any, where: str, limit: int) -> list[dict[str, Any]]:
    """Read as the build reads (``corpusforge.core.columnar``): bounded batches, each row measured from its
    offsets, so a row over the limit is refused before it is converted (or, alone in its row group, decoded)."""
    out = []
    for row in columnar.read_rows(raw, "parquet", limit):
        if isinstance(row, columnar.OverLimit):
            raise UserError(f"{where}: record {row.position} is {row.size:,} bytes{' encoded' if row.encoded else ''}, "
                            f"over the {limit:,} a record may take; shorten or drop it, or raise "
                            "output.max_record_bytes")
        out.append(row)
    return out


def _jsonl_records(path: pathlib.Path, where: str, limit: int) -> list[dict[str, Any]]:
    out = []
    with open_input(str(path)) as raw:
        for number, line in enumerate(bounded_lines(open_lines(raw, str(path)), limit), 1):
            if isinstance(line, Oversize):
                raise UserError(f"{where}:{number} is a line of {line.size:,} bytes or more, over the {limit:,} a record "
                                "may take; shorten or drop it, or raise output.max_record_bytes")
            if not line.strip():
                continue
            try:
                record = parse_json(line)
            except RecordError as exc:
                if exc.reason == "malformed_json":
                    raise UserError(f"{where}:{number} is not valid JSON; each line must be one JSON object") from None
                raise UserError(f"{where}:{number} cannot be read: {exc.reason} ({exc.detail[:160]})") from None
            if not isinstance(record, dict):
                raise UserError(f"{where}:{number} is not a JSON object")
            out.append(record)
    return out


def task_examples(records: list[dict[str, Any]], config: FinetuneConfig, where: str,
                  labelled: bool = True) -> list[Example]:
    """The examples of ``config.task``; ``labelled=False`` (prediction) makes the target optional and the ids
    unique: predict's output names each record by its id alone, so two records with one id (a missing id is the
    record's position, which a real id may also be) are refused in one line naming both, not written as two rows
    a join by id mixes up."""
    out = []
    seen: dict[str, int] = {}
    for position, record in enumerate(records):
        def field(role: str, required: bool = True, words: bool = False):
            """The record's field that the setting ``role`` (``label_field``...) names, as text (``_text``), or a
            list of words (``words``); NaN is missing. A missing one is named with ``role``'s flag: by the field's
            name, a generate task's response field called ``text`` was told to pass --text-field."""
            name = getattr(config, role)
            value = _cell(record.get(name), where, position, name)
            if _missing(value):
                flag = role.replace("_", "-")
                if required and isinstance(record, dict) and name not in record:  # a wrong field name, most likely
                    detail = missing_field_detail(name, record, f"--{flag}", f"finetune.{role}",
                                                  guess=role in ("text_field", "prompt_field"))
                    raise UserError(f"{where}: record {position} has {detail}")
                if required:
                    raise UserError(f"{where}: record {position} has an empty {name!r} field; fill it in or drop the "
                                    f"record, or name another field with --{flag}")
                return None
            return value if words else _text(value, where, position, name)
        ident = _cell(record.get(config.id_field), where, position, config.id_field)
        # A null, NaN or empty id is a missing one, as for every other field: the record's position (a null
        # was the id "None" for every such record).
        ident = _text(position if _missing(ident) else ident, where, position, config.id_field)
        if not labelled and seen.setdefault(ident, position) != position:
            raise UserError(f"{where}: records {seen[ident]} and {position} have the same id {ident!r} (a missing, "
                            "null, NaN or empty id is the record's position); predict's output names each record by "
                            f"its id: give each its own ({config.id_field!r} field)")
        if config.task == "classify":
            out.append(Example(ident, field("text_field"), field("text_pair_field") if config.text_pair_field else None,
                               field("label_field", labelled)))
        elif config.task == "tag":
            words = _word_list(field("tokens_field", words=True), where, position, config.tokens_field)
            tags = field("tags_field", labelled, words=True)
            if tags is not None:
                tags = [_text(t, where, position, config.tags_field, item)
                        for item, t in enumerate(_word_list(tags, where, position, config.tags_field))]
                if len(tags) != len(words):
                    raise UserError(f"{where}: record {position} has {len(words)} words and {len(tags)} tags; "
                                    "each word needs exactly one tag")
            out.append(Example(ident, [_text(w, where, position, config.tokens_field, item)
                                       for item, w in enumerate(words)], None, tags))
        else:
            out.append(Example(ident, field("prompt_field"), None, field("response_field", labelled)))
    if not out:
        raise UserError(f"{where} holds no records")
    return out


def _missing(value: Any) -> bool:
    """No value: absent, JSON ``null``, NaN (pandas' gap, which ``json.dumps`` writes as ``NaN``) or an empty
    string (an empty CSV cell, how pandas writes a gap). A CSV cell reading ``NaN`` or ``null`` is text: a CSV has
    no null, and ``NA`` or ``null`` can be a label."""
    return value is None or value == "" or (isinstance(value, float) and value != value)


def _text(value: Any, where: str, position: int, name: str, item: int | None = None) -> str:
    """A field's value (``item``: one word or tag of a list field) as the text a task uses: a string as it is, a
    number as written, a boolean as JSON and CSV spell it (``true``: one class in both); null, NaN, an infinity,
    a list or an object is no text, refused in one line rather than trained on as Python's ``str`` of it
    (``None``, ``nan``, ``['a', 'b']``). A missing field never comes here (``_missing``): a word of a list has
    no missing value, each is one position of the text."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        kind = "null"
    elif isinstance(value, float) and not math.isfinite(value):
        kind = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    elif isinstance(value, (list, tuple, dict)):
        kind = "an object" if isinstance(value, dict) else "a list"
    else:
        return str(value)  # a number, a Parquet date or decimal: as written
    place = f"field {name!r}" if item is None else f"field {name!r} item {item}"
    raise UserError(f"{where}: record {position} {place} is {kind}, not a text or a number; fix the data or "
                    "name another field")


def _word_list(value: Any, where: str, position: int, name: str) -> list:
    if isinstance(value, str):  # CSV cells: a JSON list, or words separated by spaces
        try:
            value = parse_json(value.encode("utf-8", "surrogatepass")) if value.lstrip().startswith("[") else value.split()
        except RecordError as exc:
            raise UserError(f"{where}: record {position} field {name!r} is not a JSON list of words ({exc.reason})") from None
    if not isinstance(value, (list, tuple)) or not value:
        raise UserError(f"{where}: record {position} field {name!r} must be a non-empty list of words")
    return [_cell(item, where, position, name) for item in value]  # a list<binary> column's words: their text


def _cell(value: Any, where: str, position: int, name: str) -> Any:
    """A record's value as every reader takes a text cell (``input_files.cell_text``): a binary Parquet column's
    bytes (as Spark and Hive write strings) as their UTF-8 text, not ``"b'...'"``; bytes that are not UTF-8 stop
    the command with one line, as any record the task cannot use does."""
    try:
        return cell_text(value)
    except RecordError as exc:
        raise UserError(f"{where}: record {position} field {name!r} is {exc.detail}") from None


def label_map(examples: list[Example]) -> dict[str, int]:
    """Every label of the training examples, sorted by name, numbered from 0."""
    names: set[str] = set()
    for example in examples:
        names.update(example.target if isinstance(example.target, list) else [example.target])
    if len(names) < 2:
        raise UserError(f"the training data has {len(names)} distinct label(s); classification needs at least 2")
    return {name: i for i, name in enumerate(sorted(names))}


def check_known_labels(examples: list[Example], labels: dict[str, int], where: str) -> None:
    for example in examples:
        for name in example.target if isinstance(example.target, list) else [example.target]:
            if name is not None and name not in labels:
                raise UserError(f"{where}: record {example.id!r} has label {name!r}, which the training data never "
                                f"uses (known: {', '.join(sorted(labels))})")
