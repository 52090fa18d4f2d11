"""Fuzz family ``scratch_damage``: a build whose own scratch files change under it.

Promise: a build whose scratch disk is damaged while it runs (a spilled text, near dedup's ``.near`` or line
dedup's ``.sentences`` records, a shuffle's run block: ``corpusforge.core.scratch_frames``) either ends as an
undamaged build does, byte for byte (the damaged bytes were never read again), or stops with one line naming the
scratch file and saying to run the build again (``ScratchError``): never other output, a rejection or a
traceback. A damage inside the record being read must stop it.

Each case writes a random small corpus (exact and near duplicates, repeated lines and sentences, texts under 64
bytes, texts zstd does not shrink, long ones), builds it once undamaged, counting the scratch reads, then again
with one read, chosen by the rng, preceded by one damage to that read's file on disk: a flipped bit in the
record being read or anywhere in the file, the file truncated, deleted, cut in the middle, or given bytes in the
middle or at its end. Shuffles on disk (``output.disk_shuffle_mb=0``: compressed texts and run blocks) or in
Beam's memory (every text stored as it is) by the rng too.
"""
from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import pathlib
import random
import re

FAMILY = "scratch_damage"
TRIED: collections.Counter = collections.Counter()  # cases per damage kind and per ending (bench/fuzz.py prints it)

DAMAGES = ("flip_record", "flip_file", "truncate", "delete", "cut", "insert", "append")
_ONE_LINE = re.compile(r"^corpusforge: error: (spill|shuffle) file \S+ .*run the build again")
_WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "su", "ta", "vo", "ri") for b in ("n", "s", "t", "la", "ro", "")]


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(4, 14))).capitalize() + "."


def _texts(rng: random.Random, count: int) -> list[str]:
    """Random texts with the shapes a build spills differently or dedup looks at."""
    boilerplate = [_sentence(rng) for _ in range(3)]  # lines and sentences many documents share
    texts: list[str] = []
    for _ in range(count):
        kind = rng.random()
        if texts and kind < 0.12:  # an exact duplicate
            texts.append(rng.choice(texts))
        elif texts and kind < 0.25:  # a near duplicate: one word changed
            words = rng.choice(texts).split(" ")
            words[rng.randrange(len(words))] = rng.choice(_WORDS)
            texts.append(" ".join(words))
        elif kind < 0.35:  # under 64 bytes: stored without trying zstd
            texts.append(_sentence(rng)[:rng.randrange(5, 60)])
        elif kind < 0.45:  # printable noise: zstd does not shrink it
            texts.append("".join(chr(rng.randrange(0x21, 0x7F)) for _ in range(rng.randrange(64, 400))))
        else:
            lines = [" ".join(_sentence(rng) for _ in range(rng.randrange(1, 5))) for _ in range(rng.randrange(2, 12))]
            for _ in range(rng.randrange(0, 3)):
                lines.insert(rng.randrange(len(lines) + 1), rng.choice(boilerplate))
            texts.append("\n".join(lines))
    return texts


class _Reads:
    """Wraps ``scratch_frames.read_record``: counts the reads of each kind of scratch file (its suffix: ``.txt``,
    ``.near``, ``.sentences``, ``.run``), and damages the file of read number ``at`` of kind ``kind``
    (``damage`` of ``DAMAGES``) just before it happens."""

    def __init__(self, rng: random.Random | None = None, kind: str = "", at: int = -1, damage: str = ""):
        self.rng, self.kind, self.at, self.damage = rng, kind, at, damage
        self.counts: collections.Counter = collections.Counter()
        self.damaged: tuple | None = None  # (ref, damage, detail) once done

    def __call__(self, read_record):
        def read(fd, ref, what):
            kind = os.path.splitext(ref[0])[1]
            if kind == self.kind and self.counts[kind] == self.at:
                self.damaged = (ref, self.damage, self._damage(ref))
            self.counts[kind] += 1
            return read_record(fd, ref, what)
        return read

    def _damage(self, ref) -> str:
        from corpusforge.core import scratch_frames

        rng, path = self.rng, ref[0]
        data = bytearray(pathlib.Path(path).read_bytes())
        stored = ref[3] if len(ref) > 3 else ref[2] + scratch_frames.CHECK_BYTES
        if self.damage == "delete":
            os.unlink(path)
            return "deleted"
        if self.damage in ("flip_record", "flip_file"):
            start, end = (ref[1], ref[1] + stored) if self.damage == "flip_record" else (0, len(data))
            position, mask = rng.randrange(start, end), 1 << rng.randrange(8)
            if len(ref) > 3 and position - ref[1] == 4 and mask == 0x10:
                mask = 0x01  # the one bit of a zstd frame's header that no decoder reads: not a damage
            data[position] ^= mask
            detail = f"bit {mask:#x} of byte {position:,}"
        elif self.damage == "truncate":
            size = rng.randrange(len(data))
            data, detail = data[:size], f"to {size:,} bytes"
        elif self.damage == "cut":
            start = rng.randrange(len(data))
            end = rng.randrange(start + 1, len(data) + 1)
            del data[start:end]
            detail = f"bytes {start:,}-{end:,}"
        else:
            position = len(data) if self.damage == "append" else rng.randrange(len(data))
            extra = rng.randbytes(rng.randrange(1, 64))
            data[position:position] = extra
            detail = f"{len(extra)} bytes at {position:,}"
        with open(path, "r+b") as f:  # the same file (its inode): a reader that holds it open sees the damage
            f.write(data)
            f.truncate(len(data))
        return detail


def _build(workdir: pathlib.Path, name: str, flags: list[str], reads: _Reads) -> tuple[int, str, dict]:
    from corpusforge.cli.main import main
    from corpusforge.core import scratch_frames

    run = workdir / name
    original = scratch_frames.read_record
    scratch_frames.read_record = reads(original)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["build", "-c", str(workdir / "corpus.yaml"), "--run-dir", str(run), *flags])
    finally:
        scratch_frames.read_record = original
    outputs = {}
    if code == 0:
        outputs = {p.relative_to(run).as_posix(): p.read_bytes()
                   for sub in ("clean", "removed", "rejected") for p in sorted((run / sub).glob("part-*"))}
        stats = json.loads((run / "stats.json").read_text())
        outputs["stats.json"] = {k: v for k, v in stats.items() if k not in ("timing", "metrics")}
    return code, err.getvalue(), outputs


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    texts = _texts(rng, rng.randrange(30, 80))
    (workdir / "in.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n"
                                              for i, t in enumerate(texts)))
    (workdir / "corpus.yaml").write_text(f"inputs:\n  - {{path: '{workdir / 'in.jsonl'}', format: jsonl}}\n"
                                         "output:\n  shard_target_mb: 0.002\n")
    on_disk = rng.random() < 0.7
    flags = ["--set", "pii.enabled=false", "--set", "quality.enabled=false"]
    if on_disk:
        flags += ["--set", "output.disk_shuffle_mb=0"]
    counted = _Reads()
    code, err, expected = _build(workdir, "undamaged", flags, counted)
    if code != 0 or not counted.counts:
        raise AssertionError(f"scratch_damage: the undamaged build ended with {code} after {dict(counted.counts)} "
                             f"scratch reads:\n{err[-2000:]}")
    kind = rng.choice(sorted(counted.counts))  # each kind of scratch file alike, however often it is read
    reads = _Reads(rng, kind, rng.randrange(counted.counts[kind]), rng.choice(DAMAGES))
    code, err, outputs = _build(workdir, "damaged", flags, reads)
    what = (f"shuffles {'on disk' if on_disk else 'in memory'}, {reads.kind} read {reads.at} of "
            f"{dict(counted.counts)} damaged: {reads.damaged}")
    (workdir / "case.txt").write_text(what + "\n")
    errors = [line for line in err.splitlines() if line.startswith("corpusforge: error: ")]
    if code == 0:
        if outputs != expected:
            changed = sorted(k for k in expected.keys() | outputs.keys() if expected.get(k) != outputs.get(k))
            raise AssertionError(f"scratch_damage: a damaged build succeeded with other output ({changed}); {what}")
        if reads.damaged is not None and reads.damaged[1] == "flip_record":
            raise AssertionError(f"scratch_damage: a flipped bit in the record being read went unnoticed; {what}")
        TRIED[f"{kind} {reads.damage}: same output"] += 1
    elif code == 2 and len(errors) == 1 and _ONE_LINE.match(errors[0]) and "Traceback" not in err:
        TRIED[f"{kind} {reads.damage}: stopped"] += 1
    else:
        raise AssertionError(f"scratch_damage: a damaged build ended with {code}, not the one line saying to run it "
                             f"again; {what}:\n{err[-2000:]}")
