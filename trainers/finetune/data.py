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
import json
import pathlib
from typing import Any

from corpusforge.core.errors import UserError
from corpusforge.trainers.finetune.config import FinetuneConfig


@dataclasses.dataclass
class Example:
    id: str
    text: Any  # classify: str; tag: list[str] of words; generate: the prompt
    pair: str | None = None  # classify: the second text of a pair
    target: Any = None  # classify: label name; tag: list of label names; generate: the response; None: unlabelled


def read_records(path: str | pathlib.Path) -> list[dict[str, Any]]:
    path = pathlib.Path(path)
    if not path.is_file():
        raise UserError(f"{path} is not a file; pass a JSONL, CSV or Parquet file of records")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        out = []
        with path.open(encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    raise UserError(f"{path}:{number} is not valid JSON; each line must be one JSON object") from None
                if not isinstance(record, dict):
                    raise UserError(f"{path}:{number} is not a JSON object")
                out.append(record)
        return out
    if suffix in (".csv", ".tsv"):
        with path.open(encoding="utf-8-sig", newline="") as handle:
            return list(csv.DictReader(handle, delimiter="\t" if suffix == ".tsv" else ","))
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    raise UserError(f"{path}: unknown format {suffix!r}; use .jsonl, .csv, .tsv or .parquet")


def task_examples(records: list[dict[str, Any]], config: FinetuneConfig, where: str,
                  labelled: bool = True) -> list[Example]:
    """The examples of ``config.task``; ``labelled=False`` (prediction) makes the target optional."""
    out = []
    for position, record in enumerate(records):
        def field(name: str, required: bool = True):
            value = record.get(name)
            if value is None or value == "":
                if required:
                    raise UserError(f"{where}: record {position} has no {name!r} field; name the field with "
                                    f"--{_flag(name, config)} or fix the data")
                return None
            return value
        ident = str(record.get(config.id_field, position))
        if config.task == "classify":
            label = field(config.label_field, labelled)
            out.append(Example(ident, str(field(config.text_field)),
                               str(field(config.text_pair_field)) if config.text_pair_field else None,
                               None if label is None else str(label)))
        elif config.task == "tag":
            words = _word_list(field(config.tokens_field), where, position, config.tokens_field)
            tags = field(config.tags_field, labelled)
            if tags is not None:
                tags = [str(t) for t in _word_list(tags, where, position, config.tags_field)]
                if len(tags) != len(words):
                    raise UserError(f"{where}: record {position} has {len(words)} words and {len(tags)} tags; "
                                    "each word needs exactly one tag")
            out.append(Example(ident, [str(w) for w in words], None, tags))
        else:
            response = field(config.response_field, labelled)
            out.append(Example(ident, str(field(config.prompt_field)), None,
                               None if response is None else str(response)))
    if not out:
        raise UserError(f"{where} holds no records")
    return out


def _word_list(value: Any, where: str, position: int, name: str) -> list:
    if isinstance(value, str):  # CSV cells: a JSON list, or words separated by spaces
        value = json.loads(value) if value.lstrip().startswith("[") else value.split()
    if not isinstance(value, (list, tuple)) or not value:
        raise UserError(f"{where}: record {position} field {name!r} must be a non-empty list of words")
    return list(value)


def _flag(name: str, config: FinetuneConfig) -> str:
    for key in ("text_field", "text_pair_field", "label_field", "tokens_field", "tags_field", "prompt_field",
                "response_field"):
        if getattr(config, key) == name:
            return key.replace("_", "-")
    return "set finetune.id-field"


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
