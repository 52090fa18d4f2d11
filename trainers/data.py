"""Token shards in, batches out: Arrow token shards, packing, per-epoch shuffle, rank sharding, exact resume.

The tokenize stage writes ``tokens/{train,val}/part-*.arrow`` (Arrow IPC files, ``id: string,
tokens: large_list<uint16|uint32>``) and ``tokens/manifest.json``. The trainer reads them with ``TokenShards``:
each document's offsets in memory, its tokens read from the file (``os.pread``) when a window needs them; no
memory map, so a shard cut short while training reads it is one line, not SIGBUS.

The documents of a split, in an order shuffled per epoch, joined by the objective's separator, form one
stream cut into windows of ``objective.raw_length``; the windows are visited in a second per-epoch
shuffle. Window ``i`` of the whole run (epoch ``i // windows_per_epoch``) is a pure function of
(seed, i), and so is its noise, so the data position is one integer: the number of windows consumed.
"""
from __future__ import annotations

import dataclasses
import pathlib
import re
from typing import Iterator, Sequence

import numpy as np
import torch

from corpusforge.core.errors import UserError
from corpusforge.tokenizer.token_shards import TokenShards, read_manifest
from corpusforge.trainers.objectives import Objective


class PackedWindows:
    """Fixed-length windows of the separator-joined document stream, reshuffled every epoch."""

    def __init__(self, shards: TokenShards, raw_length: int, separator: Sequence[int], seed: int,
                 shuffle: bool = True):
        self.shards, self.raw_length, self.seed, self.shuffle = shards, raw_length, seed, shuffle
        self.separator = np.asarray(separator, dtype=np.int64)
        total = shards.num_tokens + len(self.separator) * len(shards)
        self.per_epoch = total // raw_length
        if self.per_epoch == 0:
            raise UserError(f"the split has {total} tokens, fewer than one window of {raw_length}; add data or "
                            "lower train.seq_len")
        self._layout: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None

    def layout(self, epoch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Document order, cumulative stream ends, and window order of ``epoch`` (cached)."""
        if self._layout is None or self._layout[0] != epoch:
            rng = np.random.default_rng([self.seed, epoch, 0x5EED])
            n = len(self.shards)
            order = rng.permutation(n) if self.shuffle else np.arange(n)
            ends = np.cumsum(self.shards.lengths[order] + len(self.separator))
            windows = rng.permutation(self.per_epoch) if self.shuffle else np.arange(self.per_epoch)
            self._layout = (epoch, order, ends, windows)
        return self._layout[1:]

    def window(self, epoch: int, slot: int) -> np.ndarray:
        """The raw tokens (int64) of the ``slot``-th window visited in ``epoch``."""
        order, ends, windows = self.layout(epoch)
        start = int(windows[slot]) * self.raw_length
        stop = start + self.raw_length
        out = np.empty(self.raw_length, dtype=np.int64)
        d = int(np.searchsorted(ends, start, side="right"))
        filled, sep = 0, len(self.separator)
        while filled < self.raw_length:
            doc = self.shards.document(int(order[d]))
            piece_start = int(ends[d - 1]) if d else 0  # stream position of this document's first token
            offset = start + filled - piece_start
            if offset < len(doc):
                take = min(len(doc) - offset, self.raw_length - filled)
                out[filled: filled + take] = doc[offset: offset + take]
                filled += take
                offset += take
            if filled < self.raw_length and offset >= len(doc):
                s = offset - len(doc)
                take = min(sep - s, self.raw_length - filled)
                out[filled: filled + take] = self.separator[s: s + take]
                filled += take
            d += 1
        return out


class ExampleStream(torch.utils.data.Dataset):
    """Example ``i`` of the run: window ``i`` (across epochs) through the objective, with noise seeded by
    (seed, epoch, slot)."""

    def __init__(self, windows: PackedWindows, objective: Objective, seed: int):
        self.windows, self.objective, self.seed = windows, objective, seed

    def __len__(self) -> int:  # the stream is endless; this is one epoch
        return self.windows.per_epoch

    def __getitem__(self, index: int) -> dict:
        epoch, slot = divmod(int(index), self.windows.per_epoch)
        rng = np.random.default_rng([self.seed, epoch, slot])
        tokens = self.windows.window(epoch, slot)
        other = None
        if self.objective.needs_other:  # next-sentence prediction: a random window of the same epoch
            other = self.windows.window(epoch, int(rng.integers(self.windows.per_epoch)))
        return self.objective.example(tokens, rng, other)


@dataclasses.dataclass
class BatchPlan:
    """Which examples each rank's micro-batches hold. Step ``s`` after ``start`` consumes the global examples
    ``start + s*G .. start + (s+1)*G`` (G = micro x accum x world); rank r takes the r-th equal part, in
    ``accum`` micro-batches. The same global batch whatever the world size."""

    start: int
    micro_batch: int
    grad_accum: int
    rank: int = 0
    world_size: int = 1

    @property
    def global_batch(self) -> int:
        return self.micro_batch * self.grad_accum * self.world_size

    def micro_batches(self) -> Iterator[list[int]]:
        step = 0
        per_rank = self.micro_batch * self.grad_accum
        while True:
            base = self.start + step * self.global_batch + self.rank * per_rank
            for m in range(self.grad_accum):
                first = base + m * self.micro_batch
                yield list(range(first, first + self.micro_batch))
            step += 1


class PlanSampler(torch.utils.data.Sampler):
    def __init__(self, plan: BatchPlan):
        self.plan = plan

    def __iter__(self):
        return self.plan.micro_batches()


def make_loader(dataset: ExampleStream, plan: BatchPlan, num_workers: int = 0, pin_memory: bool = False):
    """An endless iterator of this rank's micro-batches (dicts of tensors), starting at ``plan.start``.

    The loader gets a generator of its own: by default it would draw a seed from torch's global RNG, which
    would shift the dropout noise of a resumed run. A ``UserError`` raised in a worker process (a token shard
    cut while read) reaches the caller as its own one line (``worker_errors``).
    """
    return worker_errors(iter(torch.utils.data.DataLoader(
        dataset, batch_sampler=PlanSampler(plan), collate_fn=dataset.objective.collate, num_workers=num_workers,
        pin_memory=pin_memory, persistent_workers=False, prefetch_factor=4 if num_workers else None,
        generator=torch.Generator().manual_seed(dataset.seed))))


def worker_errors(batches: Iterator) -> Iterator:
    """``batches`` (a DataLoader's iterator), with each exception a worker process (or the pin-memory thread)
    raised given back its own message (a ``UserError``, an ``OSError``: whatever the CLI prints as one line).

    torch sends a worker's exception to the main process as its type and its formatted traceback, and raises
    ``type(msg)`` there (``torch.utils.data._utils.ExceptionWrapper.reraise``), msg being "Caught UserError in
    DataLoader worker process 0.\nOriginal Traceback (most recent call last): ...", the worker's traceback whose
    last line is ``corpusforge.core.errors.UserError: <the message>``. The user would get that traceback on one
    line; this raises the same type with the message alone, from torch's (``--debug`` shows the worker's
    traceback). torch offers no hook for it: the worker's exception object never crosses the process boundary.
    What the message says of the exception is put back too (``_rebuilt``): an ``OSError``'s errno and file names,
    so a full disk in a worker is the CLI's same "no space left" line naming the file; a type torch cannot build
    from one string (``UnicodeDecodeError``), which it re-raises as a ``RuntimeError``, is rebuilt as itself; a
    worker that died without a word (killed: out of memory) is one line.
    """
    try:
        yield from batches
    except Exception as exc:  # noqa: BLE001 - any type torch re-raised from a worker: the CLI prints it as one line
        if isinstance(exc, RuntimeError) and str(exc).startswith("DataLoader worker (pid"):
            # killed (the kernel's out-of-memory killer) or ended without a word: no traceback to give back
            raise UserError(f"{_short(exc)}; a worker killed by the system has usually run out of memory: lower "
                            "train.num_workers or train.micro_batch_size (--debug shows the traceback)") from exc
        found = _worker_message(exc)
        if found is None:
            raise
        kind, message = found
        try:
            again = _rebuilt(kind, message)
        except Exception:  # noqa: BLE001 - a type that takes other arguments (torch falls back the same way)
            raise exc from None
        raise again from exc


def _worker_message(exc: BaseException) -> tuple[type, str] | None:
    """The type and message of the exception torch re-raised as ``exc`` from a worker's traceback; None when
    ``exc`` is not one (raised in this process: with ``num_workers=0``). A type torch could not build from one
    string (``UnicodeDecodeError``) arrives as a ``RuntimeError`` whose text names it; builtins are found by
    that name."""
    import builtins

    text, kind = str(exc), type(exc)
    caught = text.split(" in ", 1)[0].removeprefix("Caught ") if text.startswith("Caught ") else None
    if caught is None or "\nOriginal Traceback" not in text:
        return None
    if caught != kind.__name__:
        kind = getattr(builtins, caught, None) if kind is RuntimeError else None
        if not (isinstance(kind, type) and issubclass(kind, BaseException)):
            return None
    # traceback's last line: "module.QualName: message", or "QualName" alone for an empty message (MemoryError);
    # chained exceptions come before it
    name = kind.__qualname__ if kind.__module__ in ("__main__", "builtins") else f"{kind.__module__}.{kind.__qualname__}"
    body = text.rstrip("\n")
    if body.endswith(f"\n{name}"):
        return kind, ""
    _, found, message = body.rpartition(f"\n{name}: ")
    return (kind, message) if found else None


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split()).rstrip(".")


_OS_ERROR = re.compile(r"\[Errno (-?\d+)\] (.*)", re.S)
_UNDECODABLE = re.compile(r"'(.+)' codec can't decode (?:byte 0x([0-9a-f]{2}) in position (\d+)|bytes in position "
                          r"(\d+)-(\d+)): (.*)", re.S)


def _rebuilt(kind: type, message: str) -> BaseException:
    """``kind`` raised again with a worker's ``message``, and what that message says of it: an ``OSError``'s
    errno, strerror and file names (``[Errno 28] No space left on device: '/x'``), so that the one line the CLI
    prints for a full disk (``corpusforge.core.errors.resource_error``) and every ``exc.errno`` test see what a
    main-process error would give; a ``UnicodeDecodeError``'s codec, position and reason (it cannot be built from
    one string)."""
    if issubclass(kind, OSError):
        found = _OS_ERROR.fullmatch(message)
        if found:
            code, rest = int(found.group(1)), found.group(2)
            for at in [i for i in range(len(rest)) if rest.startswith(": ", i)]:
                names = _literal_names(rest[at + 2:])
                if names is not None:
                    return kind(code, rest[:at], *names)
            return kind(code, rest)
    if issubclass(kind, UnicodeDecodeError):
        found = _UNDECODABLE.fullmatch(message)
        if found:
            codec, byte, position, start, end, reason = found.groups()
            start, end = (int(position), int(position) + 1) if byte else (int(start), int(end) + 1)
            data = bytes(end) if not byte else bytes(start) + bytes.fromhex(byte)
            return kind(codec, data, start, end, reason)
    return kind(message) if message else kind()


def _literal_names(text: str) -> tuple | None:
    """``'a'`` or ``'a' -> 'b'`` (how an OSError prints its file names, each a Python literal) as ("a",) or
    ("a", None, "b"); None when ``text`` is not that."""
    import ast

    def name(piece: str):
        try:
            value = ast.literal_eval(piece)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        return value if isinstance(value, (str, bytes)) else None

    if name(text) is not None:
        return (name(text),)
    for at in [i for i in range(len(text)) if text.startswith(" -> ", i)]:
        first, second = name(text[:at]), name(text[at + 4:])
        if first is not None and second is not None:
            return first, None, second
    return None


# ----------------------------------------------------------------------------------------- manifest

@dataclasses.dataclass
class TokenData:
    """A run's ``tokens/``: the shard paths of each split and the tokenizer they were written with."""

    root: pathlib.Path
    tokenizer: pathlib.Path
    splits: dict[str, list[pathlib.Path]]
    manifest: dict

    @classmethod
    def from_run(cls, run_dir: str | pathlib.Path) -> "TokenData":
        run_dir = pathlib.Path(run_dir)
        root = run_dir / "tokens"
        manifest_path = root / "manifest.json"
        if not manifest_path.exists():
            raise UserError(f"{manifest_path} not found: tokenize the corpus first (corpusforge tokenize) or set "
                            "output.run_dir to a run that has tokens/")
        manifest = read_manifest(str(manifest_path))
        if not isinstance(manifest.get("tokenizer", ""), str) or not isinstance(manifest.get("tokenizer_sha256", ""), str):
            raise UserError(f"{manifest_path}: its tokenizer is not a path; run `corpusforge tokenize` again")
        tokenizer = _resolve(manifest.get("tokenizer", "../tokenizer/tokenizer.json"), root, run_dir)
        splits = {}
        for name, split in (manifest.get("splits") or {}).items():
            shards = [_resolve(s, root, run_dir, root / name) for s in split.get("shards", [])]
            if not shards:
                shards = sorted((root / name).glob("part-*.arrow"))
            splits[name] = shards
        if not splits.get("train"):
            raise UserError(f"{manifest_path} lists no train shards")
        expected = manifest.get("tokenizer_sha256")
        if expected and tokenizer.exists():
            import hashlib

            actual = hashlib.sha256(tokenizer.read_bytes()).hexdigest()
            if actual != expected:
                raise UserError(f"{tokenizer} is not the tokenizer the shards were written with (sha256 differs); "
                                "re-run the tokenize stage")
        return cls(root=root, tokenizer=tokenizer, splits=splits, manifest=manifest)


def _resolve(path: str, *bases: pathlib.Path) -> pathlib.Path:
    p = pathlib.Path(path)
    if p.is_absolute():
        return p
    for base in bases:
        if (base / p).exists():
            return (base / p).resolve()
    return (bases[0] / p).resolve()


def check_token_ids(data: TokenData, vocab_size: int) -> None:
    """Refuse token shards whose ids the model's vocabulary cannot embed (a raw IndexError on CPU, a device-side
    assert on CUDA): the manifest's vocab_size must be the tokenizer's, and no id may reach ``vocab_size``."""
    manifest = data.root / "manifest.json"
    declared = data.manifest.get("vocab_size")
    if declared is not None and int(declared) != vocab_size:
        raise UserError(f"{manifest} says vocab_size {declared} but {data.tokenizer} has {vocab_size} tokens: the "
                        "shards were written with another tokenizer; re-run the tokenize stage")
    for name, paths in data.splits.items():
        if not paths:
            continue
        largest = TokenShards(paths).max_token_id()
        if largest >= vocab_size:
            raise UserError(f"the {name} token shards of {manifest} hold token id {largest}, beyond the vocabulary "
                            f"of {vocab_size} tokens of {data.tokenizer}; re-run the tokenize stage with this "
                            "tokenizer")
