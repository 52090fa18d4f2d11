"""A model measured on held-out text: loss, perplexity and bits per byte, overall and per source.

    loaded = load_model("runs/x/model")                       # or an export
    result = evaluate(loaded, read_documents("held-out.jsonl"))

Bits per byte is the negative log-likelihood of the text, in bits, over its UTF-8 bytes, so models with
different tokenizers compare. A decoder predicts every token of each document after a leading end-of-text
token, in disjoint windows of its maximum length (each window starts without the previous one's context).
Encoders and seq2seq models are measured on their own training objective (masked LM, T5 span corruption,
BART denoising, with the objective's default options) under a fixed seed, so the figure is deterministic;
their bits per byte is that objective's NLL over the document's bytes, comparable between models of the same
objective only.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
from typing import Any, Iterable, Iterator

import numpy as np
import torch
import torch.nn.functional as F

from corpusforge.core import columnar, rundir
from corpusforge.core.errors import UserError
from corpusforge.core.input_files import (COMPRESSIONS, Oversize, RecordError, bounded_lines, cell_string, cell_text,
                                          classify, display_path, missing_field_detail, open_decompressed, open_input,
                                          open_lines, parse_json, record_limit, seekable, uncompressed_name)
from corpusforge.trainers.export import LoadedModel, model_device

LN2 = math.log(2.0)


class Skipped(dict):
    """What reading skipped: reason -> count, as a dict, plus ``examples``: reason -> where and why of its first
    record (``data.jsonl: no field 'text'; name the text field with --text-field body; records have fields: body,
    id``), so that the one line about it says what to pass, not only how many were skipped."""

    def __init__(self) -> None:
        super().__init__()
        self.examples: dict[str, str] = {}


@dataclasses.dataclass
class Document:
    text: str
    source: str | None = None


def read_documents(data: str, text_field: str = "text", skipped: dict[str, int] | None = None,
                   max_bytes: int = 0) -> Iterator[Document]:
    """Documents of a JSONL (.jsonl, .jsonl.gz, .jsonl.zst, ...), Parquet or Arrow file, a text file (.txt: one
    document, as the build reads one by default), a directory of them (a document without a ``source`` field is
    its file's: ``notes.jsonl.gz`` -> ``notes``), or a corpusforge run (its clean shards' val split, as ``tokenize``
    assigned it; every document when the run
    has no token shards).

    Files are read with the build's error handling (``corpusforge.core.input_files``): a record the build
    would reject (malformed JSON, nested too deep, an integer too large, a line over the size limit, no
    string ``text_field``), the unread rest of a truncated or corrupt compressed file, and an entry that is
    not a regular file are skipped, counted in ``skipped`` by reason; nothing in a file raises. ``max_bytes``:
    the most bytes a record may take (``output.record_bytes``; 0: a default build's, ``record_limit(MAX_CHARS)``).
    What ``data`` names is checked when this is called, as a build checks its inputs (``rundir.check_model_input``):
    a run's entry that holds no documents (rejected/, tokens/, stats.json...) is a one-line ``UserError``."""
    skipped = Skipped() if skipped is None else skipped
    path = pathlib.Path(data)
    if path.is_dir() and (path / "clean").is_dir():
        return _run_documents(path)
    paths = sorted(p for p in path.iterdir() if not p.is_dir()) if path.is_dir() else [path]
    if not paths or not all(os.path.lexists(p) for p in paths):
        raise UserError(f"{display_path(data)} does not exist or holds no files; pass a JSONL, Parquet, Arrow or text "
                        "file, a directory of them, or a run directory")
    # checked here, when called, not when first read: a run's rejected/ or tokens/ is refused before a model loads
    cache: dict[str, str | None] = {}
    markers: dict[str, dict] = {}
    paths = [p for p in paths if rundir.check_model_input(str(p), "--data", cache, markers)]
    limit = record_limit(MAX_CHARS, max_bytes)
    return _documents_of(path, paths, text_field, skipped, limit)


def _documents_of(path: pathlib.Path, paths: list[pathlib.Path], text_field: str, skipped, limit: int):
    for p in paths:
        if not path.is_dir():
            yield from _file_documents(p, text_field, skipped, limit)
            continue
        # a folder of files: a document without a source field is its file's, as the build names sources (and
        # ablate's held-out set): the per-source table of a folder of the user's files held "all" alone
        stem = pathlib.Path(uncompressed_name(p.name)).stem
        for doc in _file_documents(p, text_field, skipped, limit):
            yield doc if doc.source is not None else Document(doc.text, stem)


def _format(path: pathlib.Path) -> str:
    name = uncompressed_name(path.name)  # the build's compressions (input_files.COMPRESSIONS), any format
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".arrow", ".feather")):
        return "arrow"
    if name.endswith(".txt"):  # one document a file, as the build reads a text file (inputs[].text_unit: file)
        return "text"
    raise UserError(f"{display_path(str(path))}: unknown format; pass .jsonl, .parquet, .arrow or .txt files, each "
                    f"plain or compressed ({', '.join(COMPRESSIONS)})")


def _file_documents(path: pathlib.Path, text_field: str, skipped: dict[str, int], limit: int) -> Iterator[Document]:
    def skip(reason: str, detail: str = "") -> None:
        skipped[reason] = skipped.get(reason, 0) + 1
        examples = getattr(skipped, "examples", None)  # a Skipped: the first record's detail of each reason
        if detail and examples is not None and reason not in examples:
            examples[reason] = f"{display_path(str(path))}: {detail}"

    examples = getattr(skipped, "examples", None)
    fmt = _format(path)
    try:
        raw = open_input(str(path))
    except Exception as exc:  # noqa: BLE001 - not a regular file, or unreadable: one skipped record
        skip(classify(exc)[0])
        return
    try:
        with raw:
            if fmt == "text":
                data = open_lines(raw, str(path)).read(limit + 1)  # UTF-16/32 transcoded, as the build reads it
                if len(data) > limit:
                    skip("oversize_record")
                elif not data.strip():
                    skip("empty_text")
                else:
                    text = cell_text(data)  # invalid_utf8 when the bytes are not UTF-8 (RecordError, below)
                    yield Document(text, None)
                return
            if fmt == "jsonl":
                for line in bounded_lines(open_lines(raw, str(path)), limit):
                    if isinstance(line, Oversize):
                        skip("oversize_record")
                    elif line.strip():
                        try:  # the fields named only for the first such record (~15 us each, one is shown)
                            detailed = examples is not None and "missing_text" not in examples
                            doc = _document(parse_json(line), text_field, detailed)
                        except RecordError as exc:
                            skip(exc.reason, exc.detail if exc.reason == "missing_text" else "")
                            continue
                        yield doc
                return
            # decompressed and spooled to a temporary file as the build does (x.parquet.zst was read raw)
            yield from _columnar_documents(seekable(open_decompressed(raw, str(path))), fmt, text_field, skip,
                                           limit)
    except Exception as exc:  # noqa: BLE001 - the unread rest of the file, as the build rejects it (classify)
        skip(classify(exc)[0])


def _columnar_documents(raw, fmt: str, text_field: str, skip, limit: int) -> Iterator[Document]:
    # read as the build reads (corpusforge.core.columnar): bounded batches, a row over the limit never converted
    columns = list(dict.fromkeys([text_field, "source"]))
    names: list[str] = []  # the file's columns, read_rows fills it: what a missing text column's detail names
    for row in columnar.read_rows(raw, fmt, limit, columns=columns, names=names):
        if isinstance(row, columnar.OverLimit):
            skip("oversize_record")
            continue
        text, source = row.get(text_field), row.get("source")  # no such column: each row missing_text, as in JSONL
        try:
            text = cell_text(text)  # a binary column (as Spark writes strings): UTF-8 text, invalid_utf8 otherwise
        except RecordError as exc:
            skip(exc.reason)
            continue
        if isinstance(source, (bytes, bytearray)):  # the build keeps such a record whatever its source's bytes
            source = cell_string(source)
        if isinstance(text, str) and text:
            yield Document(text, source if isinstance(source, str) else None)
        elif text_field not in names:  # no such column: every row's, so the columns the file has
            skip("missing_text", missing_field_detail(text_field, names, key=""))
        else:
            skip("missing_text", f"no text in column {text_field!r}")


MAX_CHARS = 10_000_000  # the build's default output.max_doc_chars, whose record limit applies when none is given


def _document(record: Any, text_field: str, detailed: bool = True) -> Document:
    if not isinstance(record, dict) or not isinstance(record.get(text_field), str) or not record[text_field]:
        if detailed and isinstance(record, dict) and text_field not in record:  # a wrong --text-field: name the fields
            raise RecordError("missing_text", missing_field_detail(text_field, record, key=""))
        raise RecordError("missing_text", f"no string field {text_field!r}")
    source = record.get("source")
    return Document(record[text_field], source if isinstance(source, str) else None)


def skipped_line(skipped: dict[str, int]) -> str:
    """One line saying what reading skipped, e.g. ``skipped 2 unreadable records (truncated_compressed_file 1,
    malformed_json 1)``; empty when nothing was."""
    if not skipped:
        return ""
    total = sum(skipped.values())
    reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(skipped.items()))
    example = getattr(skipped, "examples", {}).get("missing_text")
    return (f"skipped {total} unreadable record{'s' if total != 1 else ''} ({reasons})"
            + (f"; e.g. {example}" if example else ""))


def _run_documents(run: pathlib.Path) -> Iterator[Document]:
    from corpusforge.tokenizer.corpus import clean_shards, iter_batches
    from corpusforge.tokenizer.tokenize import ShardPlan

    manifest = run / "tokens" / "manifest.json"
    plan = None
    if manifest.exists():
        header = json.loads(manifest.read_text(encoding="utf-8"))
        # the threshold tokenize used (val_fraction, or higher for a small corpus: tokenize.min_val_documents)
        threshold = header.get("val_threshold", header.get("val_fraction", 0.0))
        plan = ShardPlan(train_shards=1, val_shards=1, val_fraction=threshold,
                         split_seed=header.get("split_seed", 0), dtype=header.get("dtype", "uint16"))
    paths = [p for p, _ in clean_shards(str(run / "clean"))]
    for ids, texts, sources in iter_batches(paths, 256, ("id", "text", "source")):
        for doc_id, text, source in zip(ids, texts, sources):
            if plan is None or not plan.val_fraction or plan.assign(doc_id)[0] == "val":
                yield Document(text, source)


# ---------------------------------------------------------------------------------------------- measuring

@dataclasses.dataclass
class _Sum:
    nll: float = 0.0  # nats
    tokens: int = 0
    bytes: int = 0
    documents: int = 0

    def result(self) -> dict[str, Any]:
        loss = self.nll / self.tokens if self.tokens else float("nan")
        return {"loss": loss, "perplexity": math.exp(min(loss, 50.0)) if self.tokens else float("nan"),
                "bits_per_byte": self.nll / LN2 / self.bytes if self.bytes else float("nan"),
                "tokens": self.tokens, "bytes": self.bytes, "documents": self.documents}


def evaluate(loaded: LoadedModel, documents: Iterable[Document], *, seed: int = 0, batch_size: int = 8,
             max_documents: int | None = None, per_document: bool = False) -> dict[str, Any]:
    """Loss (mean NLL per predicted token), perplexity and bits per byte over ``documents``; ``by_source``
    when the documents carry sources. ``per_document``: also ``documents_nll``, each document's NLL in bits and
    its UTF-8 bytes in input order (``{"nll_bits": [...], "bytes": [...]}``: what a paired comparison of two
    models resamples)."""
    examples = _Examples(loaded, seed)
    total, by_source = _Sum(), {}
    pending: list[tuple[dict[str, np.ndarray], str | None, int]] = []
    doc_nll: list[float] = []  # nats, per document
    doc_bytes: list[int] = []

    def flush():
        for (nll, count), (_, source, index) in zip(_score(loaded, [e for e, _, _ in pending]), pending):
            doc_nll[index] += nll
            for bucket in (total, by_source.setdefault(source, _Sum()) if source is not None else None):
                if bucket is not None:
                    bucket.nll += nll
                    bucket.tokens += count
        pending.clear()

    for index, doc in enumerate(documents):
        if max_documents is not None and index >= max_documents:
            break
        size = len(doc.text.encode("utf-8"))
        doc_nll.append(0.0)
        doc_bytes.append(size)
        for bucket in (total, by_source.setdefault(doc.source, _Sum()) if doc.source is not None else None):
            if bucket is not None:
                bucket.bytes += size
                bucket.documents += 1
        for example in examples.of(doc.text, index):
            pending.append((example, doc.source, index))
            if len(pending) >= batch_size:
                flush()
    flush()
    if not total.documents:
        raise UserError("no documents to evaluate on (empty input, or a run whose val split is empty)")
    out = {"model": loaded.arch, "objective": examples.objective, **total.result()}
    if by_source:
        out["by_source"] = {source: s.result() for source, s in sorted(by_source.items())}
    if per_document:
        out["documents_nll"] = {"nll_bits": [n / LN2 for n in doc_nll], "bytes": doc_bytes}
    return out


class _Examples:
    """One document as the examples its model is scored on (the decoder's windows, or the objective's)."""

    def __init__(self, loaded: LoadedModel, seed: int) -> None:
        from corpusforge.trainers.vocab import Vocabulary

        self.tokenizer, self.arch, self.seed = loaded.tokenizer, loaded.arch, seed
        self.length = int(getattr(loaded.model.config, "n_positions", 0)
                          or getattr(loaded.model.config, "max_position_embeddings", 0)
                          or self.tokenizer.model_max_length)
        self.vocab = Vocabulary.from_tokenizer(self.tokenizer.backend_tokenizer)
        config = loaded.model.config
        self.objective = {"decoder": "clm", "encoder": "mlm"}.get(
            self.arch, "span" if config.model_type == "t5" else "bart")

    def of(self, text: str, index: int) -> Iterator[dict[str, np.ndarray]]:
        # split_special_tokens: held-out text is data, encoded as in pretraining (a literal "</s>" is text)
        body = np.asarray(self.tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"],
                          dtype=np.int64)
        rng = np.random.default_rng([self.seed, index])
        if self.objective == "clm":
            start = self.vocab.bos if self.vocab.bos is not None else self.vocab.eos
            if start is None:
                raise UserError("the tokenizer has no beginning- or end-of-text token to start a document with")
            stream = np.r_[start, body]
            for i in range(0, len(stream) - 1, self.length):
                window = stream[i: i + self.length + 1]
                yield {"input_ids": window[:-1], "labels": window[1:]}
            return
        yield from getattr(self, f"_{self.objective}")(body, rng)

    def _mlm(self, body, rng):
        from corpusforge.trainers.objectives import mask_tokens

        step = self.length - 2
        for i in range(0, max(len(body), 1), step):
            ids = np.r_[self.vocab.bos, body[i: i + step], self.vocab.eos].astype(np.int64)
            inputs, labels = mask_tokens(ids, rng, self.vocab)
            yield {"input_ids": inputs, "labels": labels}

    def _span(self, body, rng):
        from corpusforge.trainers.objectives import span_corrupt, span_corruption_lengths

        raw, _ = span_corruption_lengths(min(self.length, 512))
        sentinels = np.asarray(self.vocab.sentinels)
        pad = self.vocab.pad if self.vocab.pad is not None else 0
        for i in range(0, max(len(body), 1), raw):
            inputs, targets = span_corrupt(body[i: i + raw], rng, sentinels, self.vocab.eos)
            yield {"input_ids": inputs, "decoder_input_ids": np.r_[pad, targets[:-1]], "labels": targets}

    def _bart(self, body, rng):
        from corpusforge.trainers.objectives import bart_noise

        step = self.length - 2
        for i in range(0, max(len(body), 1), step):
            target = np.r_[self.vocab.bos, body[i: i + step], self.vocab.eos].astype(np.int64)
            source = bart_noise(target, rng, self.vocab)[: self.length]
            yield {"input_ids": source, "decoder_input_ids": np.r_[self.vocab.eos, target[:-1]], "labels": target}


@torch.no_grad()
def _score(loaded: LoadedModel, examples: list[dict[str, np.ndarray]]) -> list[tuple[float, int]]:
    """(summed NLL in nats, predicted tokens) of each example, in one padded batch."""
    if not examples:
        return []
    pad = loaded.tokenizer.pad_token_id or 0

    def stack(key, value):
        width = max(len(e[key]) for e in examples)
        out = torch.full((len(examples), width), value, dtype=torch.long)
        for row, e in enumerate(examples):
            out[row, : len(e[key])] = torch.as_tensor(e[key])
        return out

    inputs = {"input_ids": stack("input_ids", pad)}
    inputs["attention_mask"] = (torch.arange(inputs["input_ids"].size(1))[None, :]
                                < torch.tensor([len(e["input_ids"]) for e in examples])[:, None]).long()
    if "decoder_input_ids" in examples[0]:
        inputs["decoder_input_ids"] = stack("decoder_input_ids", pad)
    labels = stack("labels", -100)
    device = model_device(loaded.model)
    inputs, labels = {k: v.to(device) for k, v in inputs.items()}, labels.to(device)
    logits = loaded.model(**inputs).logits.float()
    nll = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100, reduction="none").sum(dim=1)
    counts = (labels != -100).sum(dim=1)
    return [(float(n), int(c)) for n, c in zip(nll, counts)]
