"""fastText quality classifiers (GPT-3 / DCLM style): training with a held-out split, scoring, Pareto keep rule.

Positive examples are the text you want more of (e.g. reference prose), negatives are random web text.
``train_classifier`` writes ``__label__<pos>``/``__label__<neg>`` lines, trains ``fasttext.train_supervised``
on a shuffled split, reports precision/recall/F1 of the positive label on the held-out part and saves the model.
"""
from __future__ import annotations

import dataclasses
import hashlib
import pathlib
import random
import re
import tempfile
from typing import Iterable, Iterator

from corpusforge.core import files
from corpusforge.core.errors import UserError
from corpusforge.core.input_files import COMPRESSIONS, display_path, uncompressed_name
from corpusforge.pipeline.quality.langid import load_fasttext_model
from corpusforge.pipeline.quality.text import words

_SPACES = re.compile(r"\s+")


def prepare(text: str) -> str:
    """The text as the classifier sees it, in training and scoring alike: lower case, tokens split by spaces."""
    return " ".join(words(text.lower()))


def read_texts(path: str | pathlib.Path, text_field: str = "text", skipped: dict[str, int] | None = None
               ) -> Iterator[str]:
    """Texts from a file or a directory of files: ``.txt`` (one example per non-empty line), ``.jsonl``
    (``text_field`` of each object), ``.arrow`` or ``.parquet`` (the ``text_field`` column; a run's shards in any
    output format among them), each plain or compressed as the build reads it (``input_files.COMPRESSIONS``),
    Parquet and Arrow read as the build reads them (``columnar.read_rows``: bounded batches, never memory-mapped).
    A binary cell that is not UTF-8 (which the build rejects as ``invalid_utf8``) is no example: counted in
    ``skipped`` by that reason, for the command to say so."""
    skipped = {} if skipped is None else skipped
    path = pathlib.Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and _format(p) is not None)
        if not files:
            raise UserError(f"{path} holds no .txt, .jsonl, .arrow or .parquet files (plain or "
                            f"{', '.join(COMPRESSIONS)})")
    elif path.is_file():
        files = [path]
    else:
        raise UserError(f"{path} does not exist")
    for f in files:
        try:
            yield from _file_texts(f, text_field, skipped)
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001 - any parser's exception: one line (the readers' classify)
            from corpusforge.core.input_files import classify

            reason, detail = classify(exc)
            raise UserError(f"{display_path(str(f))} cannot be read: {reason} ({detail[:160]})") from None


# A training line longer than this is refused: a classifier learns from documents, not from one endless line.
MAX_LINE_BYTES = 64 << 20


def _file_texts(f: pathlib.Path, text_field: str, skipped: dict[str, int]) -> Iterator[str]:
    from corpusforge.core.input_files import (Oversize, RecordError, bounded_lines, open_decompressed, open_input,
                                              parse_json, seekable, utf8_stream)

    fmt = _format(f) or "text"  # a file named alone is read as text lines whatever its name
    with open_input(str(f)) as raw:  # regular files only (a FIFO would block)
        stream = open_decompressed(raw, str(f))  # the build's decompression (a .parquet.zst was read raw)
        if fmt in ("arrow", "parquet"):
            yield from _columnar_texts(seekable(stream), fmt, f, text_field, skipped)
            return
        lines = bounded_lines(utf8_stream(stream)[0], MAX_LINE_BYTES)  # UTF-16/32 too; a line's memory bounded
        for n, line in enumerate(lines, 1):
            if isinstance(line, Oversize):
                raise UserError(f"{display_path(str(f))}:{n}: a line of {line.size:,} bytes or more (at most "
                                f"{MAX_LINE_BYTES >> 20} MiB: one training document per line)")
            if not line.strip():
                continue
            if fmt != "jsonl":
                yield line.decode("utf-8").rstrip("\r\n")
                continue
            try:
                record = parse_json(line)
            except RecordError as exc:
                raise UserError(f"{display_path(str(f))}:{n}: not a JSON object ({exc.reason})") from None
            value = record.get(text_field) if isinstance(record, dict) else None
            if isinstance(value, str) and value.strip():
                yield value


_FORMATS = {".txt": "text", ".jsonl": "jsonl", ".arrow": "arrow", ".parquet": "parquet"}


def _format(path: pathlib.Path) -> str | None:
    """The format of a training file by its name, a compression extension left out; None: not a training file."""
    name = uncompressed_name(path.name)
    return next((fmt for ext, fmt in _FORMATS.items() if name.endswith(ext)), None)


def _columnar_texts(source, fmt: str, path: pathlib.Path, text_field: str, skipped: dict[str, int]
                    ) -> Iterator[str]:
    """The ``text_field`` column of a Parquet or Arrow file, read as the build reads it (``columnar.read_rows``):
    a row over ``MAX_LINE_BYTES`` is refused in one line, never converted."""
    from corpusforge.core import columnar
    from corpusforge.core.input_files import RecordError, cell_text

    for row in columnar.read_rows(source, fmt, MAX_LINE_BYTES, columns=[text_field]):
        if isinstance(row, columnar.OverLimit):
            raise UserError(f"{display_path(str(path))}: record {row.position} is {row.size:,} bytes (at most "
                            f"{MAX_LINE_BYTES >> 20} MiB: one training document per record)")
        if text_field not in row:
            raise UserError(f"{display_path(str(path))} has no column {text_field!r}; pass --text-field")
        try:
            value = cell_text(row[text_field])  # a binary text column (as Spark writes strings) read as the build does
        except RecordError as exc:  # not UTF-8: not a training text, but counted (the build rejects it so)
            skipped[exc.reason] = skipped.get(exc.reason, 0) + 1
            continue
        if isinstance(value, str) and value.strip():
            yield value


@dataclasses.dataclass
class TrainResult:
    model_path: str
    n_train: int
    n_valid: int
    precision: float
    recall: float
    f1: float
    accuracy: float

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _train_and_save(kwargs: dict, path: str, errors) -> None:
    import fasttext

    try:
        fasttext.train_supervised(**kwargs).save_model(path)
        errors.put(None)
    except RuntimeError as exc:
        errors.put(str(exc))


def _train_in_fresh_process(kwargs: dict, path: str) -> str | None:
    """Train and save in a spawned process; returns fastText's error message, or None on success."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    errors = context.Queue()
    process = context.Process(target=_train_and_save, args=(kwargs, path, errors))
    process.start()
    process.join()
    if process.exitcode != 0:
        return f"training process exited with code {process.exitcode}"
    return errors.get()


def train_classifier(
    positives: Iterable[str],
    negatives: Iterable[str],
    output: str | pathlib.Path,
    *,
    positive_label: str = "hq",
    negative_label: str = "lq",
    valid_fraction: float = 0.1,
    seed: int = 0,
    epoch: int = 5,
    lr: float = 0.1,
    word_ngrams: int = 2,
    dim: int = 64,
    min_count: int = 1,
    bucket: int = 200_000,
    threads: int = 1,
    quantize: bool = False,
) -> TrainResult:
    """Train a fastText classifier, evaluate it on a held-out split, save it to ``output``."""
    if not 0.0 < valid_fraction < 1.0:
        raise UserError(f"valid_fraction must be between 0 and 1, got {valid_fraction}")
    examples = [(positive_label, prepare(t)) for t in positives] + [(negative_label, prepare(t)) for t in negatives]
    examples = [(lab, t) for lab, t in examples if t]
    n_pos = sum(1 for lab, _ in examples if lab == positive_label)
    if n_pos < 2 or len(examples) - n_pos < 2:
        raise UserError(f"need at least 2 positive and 2 negative examples, got {n_pos} and {len(examples) - n_pos}")
    random.Random(seed).shuffle(examples)
    n_valid = max(1, int(len(examples) * valid_fraction))
    valid, train = examples[:n_valid], examples[n_valid:]

    import fasttext

    output = pathlib.Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        train_file = pathlib.Path(tmp) / "train.txt"
        train_file.write_text("".join(f"__label__{lab} {t}\n" for lab, t in train), encoding="utf-8")
        # fastText raises "Encountered NaN" when training diverges (its maintainers: the learning rate is too
        # high), and, seen here, at random on small inputs in a process that already trained or loaded a model,
        # where retrying in the same process fails again. So each try trains in a fresh process; the rate halves
        # every two tries.
        model_file = pathlib.Path(tmp) / "model.bin"  # (fastText's seed is a C int: seed + attempt below 2**31)
        for attempt in range(8):
            rate = lr * 0.5 ** (attempt // 2)
            kwargs = dict(input=str(train_file), epoch=epoch, lr=rate, wordNgrams=word_ngrams, dim=dim,
                          minCount=min_count, bucket=bucket, thread=threads, seed=(seed + attempt) % 2**31, verbose=0)
            error = _train_in_fresh_process(kwargs, str(model_file))
            if error is None:
                break
            if "NaN" not in error or attempt == 7:
                raise UserError(f"fastText training failed at lr={rate:g}: {error}; "
                                "try a lower --lr or more training data")
        model = fasttext.load_model(str(model_file))
    if quantize:
        model.quantize(retrain=False)
    with files.atomic_local_file(str(output)) as tmp:  # a model a build may be reading is never half written
        model.save_model(tmp)

    labels, _ = model.predict([t for _, t in valid], k=1)
    predicted = [lab[0].removeprefix("__label__") if len(lab) else "" for lab in labels]
    truth = [lab for lab, _ in valid]
    tp = sum(1 for p, t in zip(predicted, truth) if p == positive_label and t == positive_label)
    fp = sum(1 for p, t in zip(predicted, truth) if p == positive_label and t != positive_label)
    fn = sum(1 for p, t in zip(predicted, truth) if p != positive_label and t == positive_label)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    accuracy = sum(1 for p, t in zip(predicted, truth) if p == t) / len(truth)
    return TrainResult(str(output), len(train), len(valid), precision, recall, f1, accuracy)


class QualityClassifier:
    """Scores texts with a fastText classifier: the probability of ``label``."""

    def __init__(self, model_path: str, label: str):
        self.model = load_fasttext_model(model_path, "quality classifier model")
        self.label = f"__label__{label}"
        if self.label not in self.model.get_labels():
            known = ", ".join(lab.removeprefix("__label__") for lab in self.model.get_labels())
            raise UserError(f"classifier {model_path} has no label {label!r}; its labels are: {known}")

    def score(self, texts: list[str]) -> list[float]:
        if not texts:
            return []
        labels, probs = self.model.predict([prepare(t) for t in texts], k=-1)
        out = []
        for labs, ps in zip(labels, probs):
            value = 0.0
            for lab, p in zip(labs, ps):
                if lab == self.label:
                    value = min(1.0, float(p))
                    break
            out.append(value)
        return out


def pareto_keep(score: float, alpha: float, doc_id: str, seed: int = 0) -> bool:
    """GPT-3's rule: keep if ``pareto(alpha) > 1 - score``, drawn from a generator seeded by the document id,
    so a document gets the same decision on every run and every worker. (numpy's ``pareto`` is Lomax:
    ``paretovariate - 1``.)"""
    digest = hashlib.blake2b(f"{seed}\x00{doc_id}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    draw = random.Random(int.from_bytes(digest, "big")).paretovariate(alpha) - 1.0
    return draw > 1.0 - score
