"""Decontamination: training documents that share a word n-gram (default 13) with an evaluation set.

Each eval-set file becomes a sorted array of 64-bit n-gram hashes (its name: the file name without
extensions), loaded once per worker in ``setup``; every document's n-grams are looked up with a binary
search. Words are normalised as for dedup but digits are kept ("3 + 4" and "5 + 2" differ). A text with
fewer than ``ngram`` words counts as one n-gram, so a short document equal to a short eval example matches.
"""
from __future__ import annotations

import posixpath

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from corpusforge.pipeline.dedup.common import STAGE
from corpusforge.pipeline.dedup.config import DecontaminateConfig
from corpusforge.pipeline.dedup.minhash import ngram_hashes, word_hashes
from corpusforge.pipeline.dedup.text import normalized_bytes
from corpusforge.core.errors import UserError
from corpusforge.core.input_files import (Oversize, bounded_lines, classify, display_path,
                                          open_input, open_lines, parse_json)
from corpusforge.pipeline.stage import EDITS, ERRORS, REMOVED, StageOutputs, edit, guarded, removal, split_outputs

REASON = "eval_contamination"


def text_ngrams(texts: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(hashes, counts)``: the 64-bit word n-gram hashes of each text (digits kept), back to back."""
    streams = [normalized_bytes(t, normalize_numbers=False) for t in texts]
    units, starts = word_hashes(b" ".join(streams))
    ends = np.cumsum(np.fromiter(map(len, streams), dtype=np.int64, count=len(streams)) + 1)
    lengths = np.diff(np.searchsorted(starts, ends), prepend=0)
    return ngram_hashes(units, lengths, n)


def eval_set_files(patterns: list[str]) -> list[str]:
    """The files the patterns match, sorted; a pattern that matches nothing is an error."""
    files = []
    for pattern in patterns:
        if FileSystems.exists(pattern):  # a file named literally, glob characters (``[``, ``*``, ``?``) and all
            matched = [pattern]
        else:
            matched = [m.path for r in FileSystems.match([pattern]) for m in r.metadata_list]
        if not matched:
            raise UserError(f"dedup.decontaminate.eval_sets: {pattern} matches no file")
        files.extend(matched)
    return sorted(set(files))


def eval_set_name(path: str) -> str:
    name = posixpath.basename(path)
    for ext in (".gz", ".zst", ".bz2", ".jsonl", ".json", ".txt"):
        name = name.removesuffix(ext)
    return name


# An eval-set example longer than this is refused: benchmarks hold questions and passages, not books.
MAX_EXAMPLE_BYTES = 64 << 20


def read_examples(path: str, text_field: str) -> list[str]:
    """The examples of one eval-set file: a .jsonl/.json record's ``text_field`` per line, or one example
    per non-empty line of a text file. Read as the build's inputs are (``corpusforge.core.input_files``: regular
    files only, decompressed by extension in bounded steps, a line bounded by ``MAX_EXAMPLE_BYTES``, JSON
    nesting bounded); anything wrong is a one-line error naming the file and line, since the build cannot
    decontaminate against a set it could not read whole."""
    where = f"dedup.decontaminate.eval_sets: {display_path(path)}"
    is_json = ".json" in posixpath.basename(path)
    examples, number = [], 0
    try:
        raw = open_input(path)
        with raw, open_lines(raw, path) as stream:
            for number, line in enumerate(bounded_lines(stream, MAX_EXAMPLE_BYTES), 1):
                if isinstance(line, Oversize):
                    raise UserError(f"{where}:{number}: a line of {line.size:,} bytes or more (at most "
                                    f"{MAX_EXAMPLE_BYTES >> 20} MiB: one example per line)")
                if not line.strip():
                    continue
                if not is_json:  # str.splitlines' line ends, as before (U+2028, form feed ... end an example too)
                    examples += [part for part in line.decode("utf-8").splitlines() if part.strip()]
                    continue
                record = parse_json(line)
                if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
                    raise UserError(f"{where}:{number}: no string field {text_field!r} "
                                    "(set dedup.decontaminate.text_field)")
                examples.append(record[text_field])
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - RecordError, and every other reading error (a damaged .gz, I/O)
        reason, detail = classify(exc)
        raise UserError(f"{where}{f':{number}' if number else ''}: {reason} ({detail})") from None
    return examples


def load_eval_sets(files: list[str], n: int, text_field: str) -> dict[str, np.ndarray]:
    """``{name: sorted unique n-gram hashes}``; files with the same name are pooled."""
    pooled: dict[str, list[np.ndarray]] = {}
    for path in files:
        hashes, _ = text_ngrams(read_examples(path, text_field), n)
        pooled.setdefault(eval_set_name(path), []).append(hashes)
    return {name: np.unique(np.concatenate(parts)) for name, parts in sorted(pooled.items())}


def contamination(hashes: np.ndarray, eval_sets: dict[str, np.ndarray]) -> dict[str, int]:
    """``{eval set: number of the document's n-grams found in it}`` for the sets with any."""
    found = {}
    for name, table in eval_sets.items():
        if not len(table) or not len(hashes):
            continue
        positions = np.minimum(np.searchsorted(table, hashes), len(table) - 1)
        hits = int(np.count_nonzero(table[positions] == hashes))
        if hits:
            found[name] = hits
    return found


class _DecontaminateFn(beam.DoFn):
    def __init__(self, config: DecontaminateConfig, files: list[str]):
        self.config, self.files = config, files
        self.hits = Metrics.counter(STAGE, "contaminated_documents")

    def setup(self):
        self.eval_sets = load_eval_sets(self.files, self.config.ngram, self.config.text_field)

    def process(self, doc):
        hashes, _ = text_ngrams([doc.text], self.config.ngram)
        found = contamination(hashes, self.eval_sets)
        if not found:
            yield doc
            return
        self.hits.inc()
        if self.config.action == "remove":
            yield removal(doc, STAGE, REASON, eval_sets=found)
        else:
            yield edit(STAGE, "contamination_flagged", 1)
            yield doc.annotate(contamination=found)


class Decontaminate(beam.PTransform):
    """Remove (reason ``eval_contamination``, details ``{"eval_sets": {name: n-grams}}``) or flag (annotation
    ``contamination``) documents sharing an n-gram with an evaluation set."""

    def __init__(self, config: DecontaminateConfig, fail_fast: bool = False):
        super().__init__()
        self.config, self.fail_fast = config, fail_fast
        self.files = eval_set_files(config.eval_sets)  # fail at construction, before any work

    def expand(self, docs) -> StageOutputs:
        match = guarded(_DecontaminateFn(self.config, self.files), STAGE, self.fail_fast)
        return split_outputs(
            docs | "DecontaminateMatch" >> beam.ParDo(match).with_outputs(REMOVED, EDITS, ERRORS, main="kept"),
            with_edits=True, with_errors=True)
