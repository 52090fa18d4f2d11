"""Fuzz family ``checkpoint_damage``: a stage checkpoint (``RUN/.checkpoints/NN-stage/``) changed after its stage
wrote it.

Promise: a build that goes on from a damaged checkpoint (``--resume`` after the build that kept it, or the next
stage of the same build) publishes the undamaged build's shards and stats byte for byte, or stops with one line
(a ``UserError``, here a ``ScratchError``) saying to run the build again; never other output, never a traceback.

Each case writes a random small corpus (``scratch_damage._texts``: exact and near duplicates, shared lines, short
texts, noise; a malformed line now and then, for rejected/), draws the output format (Arrow IPC, Parquet, JSON
Lines) and the stages (normalize, dedup, PII), builds it with ``output.stage_checkpoints`` and the checkpoints
kept (``run_build(keep_checkpoints=True)``, as ablation builds do), then draws one damage to one file of one
stage's checkpoint (a docs, removed or rejected shard, its ``_SUCCESS.json``, or a list read after it:
``facts.json``, ``docs.json`` ...): a flipped bit anywhere, cut to a
random length, deleted, bytes appended, replaced with another shard's bytes, a stray shard added beside it, or the
marker's JSON damaged; and resumes (``run_build(resume=True)``). One case in four instead damages a shard of the
stage just finished between two segments of one build (``_finish_segment`` wrapped, as
tests/pipeline/test_checkpoint_checks.py does), which must then stop, or give the same output; it then resumes.
"""
from __future__ import annotations

import collections
import contextlib
import io
import json
import pathlib
import random

from tests.fuzz.scratch_damage import _texts

FAMILY = "checkpoint_damage"
TRIED: collections.Counter = collections.Counter()  # cases per damage and ending (bench/fuzz.py prints it)

DAMAGES = ("flip", "truncate", "delete", "append", "replace", "stray", "marker", "list")
LISTS = ("facts.json", "docs.json", "removed.json", "rejected.json")  # read after the stage: the stats, the gather
MARKER_DAMAGES = ("flip", "truncate", "delete", "append", "not_json", "edit")
FORMATS = ("arrow", "parquet", "jsonl")


def _config(workdir: pathlib.Path, run: str, fmt: str, stages: dict[str, bool]):
    from corpusforge.config import load_config

    return load_config(overrides=[
        f"inputs=[{{path: '{workdir / 'in.jsonl'}', format: jsonl}}]", f"output.run_dir={workdir / run}",
        "output.stage_checkpoints=true", "output.shard_target_mb=0.002", f"output.format={fmt}",
        "output.overwrite=true", "quality.enabled=false", "build.error_allowance=1.0",
        *(f"{stage}.enabled={str(on).lower()}" for stage, on in stages.items())])


def _published(run: pathlib.Path) -> dict:
    outputs = {p.relative_to(run).as_posix(): p.read_bytes()
               for sub in ("clean", "removed", "rejected") for p in sorted((run / sub).glob("part-*"))}
    stats = json.loads((run / "stats.json").read_text())
    outputs["stats.json"] = {k: v for k, v in stats.items() if k not in ("timing", "metrics")}
    return outputs


def _build(config, **kwargs) -> tuple[BaseException | None, str]:
    """Run the build; (the exception it raised or None, what it printed)."""
    from corpusforge.pipeline import build

    printed = io.StringIO()
    try:
        with contextlib.redirect_stderr(printed), contextlib.redirect_stdout(printed):
            build.run_build(config, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the promise is about which exceptions escape
        return exc, printed.getvalue()
    return None, printed.getvalue()


def _files(stage: pathlib.Path) -> list[pathlib.Path]:
    return [p for kind in ("docs", "removed", "rejected") for p in sorted((stage / kind).glob("part-*"))]


def _damage(rng: random.Random, stage: pathlib.Path, damage: str, others: list[pathlib.Path]) -> tuple[str, bool]:
    """Do ``damage`` to one file of the checkpoint in ``stage``; say what was done, and whether a shard's bytes
    (or the set of shards) changed: the checkpoint may then never be used as it is."""
    shards = _files(stage)
    if damage == "marker" or not shards:
        path, how = stage / "_SUCCESS.json", rng.choice(MARKER_DAMAGES)
    elif damage == "list":
        path = rng.choice([stage / name for name in LISTS if (stage / name).exists()])
        how = rng.choice(("flip", "truncate", "delete", "append", "edit"))
    else:
        path, how = rng.choice(shards), damage
    data = bytearray(path.read_bytes())
    if how == "delete":
        path.unlink()
        return f"{path} deleted", path.suffix != ".json"
    if how == "stray":
        stray = path.with_name(f"part-{rng.randrange(100, 99999):05d}-stray{''.join(path.suffixes)}")
        stray.write_bytes(rng.choice([bytes(data), rng.randbytes(rng.randrange(0, 200))]))
        return f"{stray} added", True
    if how == "flip" and data:
        position, mask = rng.randrange(len(data)), 1 << rng.randrange(8)
        data[position] ^= mask
        detail = f"bit {mask:#x} of byte {position:,} flipped"
    elif how in ("truncate", "flip"):
        size = rng.randrange(len(data)) if data else 0
        data, detail = data[:size], f"cut to {size:,} bytes"
    elif how == "append":
        extra = rng.randbytes(rng.randrange(1, 64))
        data += extra
        detail = f"{len(extra)} bytes appended"
    elif how == "replace":
        source = rng.choice([p for p in others if p != path] or [path])
        data, detail = bytearray(source.read_bytes()), f"replaced by {source.name} of {source.parent}"
    elif how == "not_json":
        data, detail = bytearray(rng.choice([b"", b"{", b"[]", b"null", b"\xff\xfe", b'{"shards": 3}'])), "not the JSON written"
    elif path.name != "_SUCCESS.json":  # edit a list: one count changed, the JSON still valid
        listed = json.loads(data)
        if listed:
            row = rng.choice(listed)
            if isinstance(row, dict):
                row[rng.choice(sorted(row))] = rng.choice([0, 1, 7])
            else:
                row[1] += rng.choice([-1, 1])
        data, detail = bytearray(json.dumps(listed).encode()), "one count changed"
    else:  # edit: one recorded number changed, the JSON still valid
        marker = json.loads(data)
        kind = rng.choice(sorted(marker.get("shards") or {"docs": {}}))
        names = sorted((marker.get("shards") or {}).get(kind) or {})
        if names:
            name, field = rng.choice(names), rng.randrange(2)
            marker["shards"][kind][name][field] += rng.choice([-1, 1])
            detail = f"recorded {('size', 'CRC-32')[field]} of {kind}/{name} changed"
        else:
            marker["fingerprint"] = "0" * 16
            detail = "fingerprint changed"
        data = bytearray(json.dumps(marker).encode())
    changed = path.suffix != ".json" and bytes(data) != path.read_bytes()
    path.write_bytes(bytes(data))  # in place (the same inode): published shards linked to it change as well
    return f"{path}: {detail}", changed


def _ending(exc: BaseException | None, printed: str, outputs, expected: dict, what: str) -> str:
    """'same output' or 'stopped', or raise AssertionError naming the broken promise."""
    from corpusforge.core.errors import UserError

    if exc is None:
        if outputs != expected:
            changed = sorted(k for k in expected.keys() | outputs.keys() if expected.get(k) != outputs.get(k))
            raise AssertionError(f"checkpoint_damage: a build from a damaged checkpoint published other output "
                                 f"({changed[:6]}); {what}")
        return "same output"
    message = str(exc)
    if not isinstance(exc, UserError) or "\n" in message or "run the build again" not in message:
        import traceback
        raise AssertionError(f"checkpoint_damage: a build from a damaged checkpoint raised "
                             f"{type(exc).__name__}, not one line saying to run it again; {what}:\n"
                             + "".join(traceback.format_exception(exc))[-3000:])
    return "stopped"


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    from corpusforge.pipeline import build

    texts = _texts(rng, rng.randrange(25, 60))
    lines = [json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)]
    for _ in range(rng.choice([0, 0, 1, 2])):  # malformed lines: rejected/ shards in the read stage's checkpoint
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(['{"id": "x", "text": \n', "not json\n", '{"id": 3}\n']))
    (workdir / "in.jsonl").write_text("".join(lines))
    fmt = rng.choice(FORMATS)
    stages = {"dedup": rng.random() < 0.8, "pii": rng.random() < 0.3}
    config = _config(workdir, "run", fmt, stages)
    between = rng.random() < 0.25
    damage = rng.choice(DAMAGES)
    (workdir / "case.txt").write_text(f"format {fmt}, stages {stages}, {'between segments' if between else 'resume'}, "
                                      f"{damage}\n")
    exc, printed = _build(config, keep_checkpoints=True)
    if exc is not None:
        raise AssertionError(f"checkpoint_damage: the undamaged build raised {exc!r}:\n{printed[-2000:]}")
    expected = _published(workdir / "run")
    checkpoints = workdir / "run" / ".checkpoints"
    stages_dirs = sorted(p for p in checkpoints.iterdir() if (p / "_SUCCESS.json").exists())
    others = [f for s in stages_dirs for f in _files(s)]
    done: list = []  # [what was done, whether a shard changed]
    between = between and len(stages_dirs) > 1
    if between:
        finish = build._finish_segment
        at = rng.randrange(len(stages_dirs))

        def finish_then_damage(segment, seconds, **kwargs):
            finish(segment, seconds, **kwargs)
            if segment.index == at:
                done.extend(_damage(rng, pathlib.Path(segment.directory), damage, others))

        build._finish_segment = finish_then_damage
        try:
            exc, printed = _build(_config(workdir, "again", fmt, stages))
        finally:
            build._finish_segment = finish
        what = f"format {fmt}, stages {stages}, between segments {at} and {at + 1}: {done}"
        (workdir / "case.txt").write_text(what + "\n")
        again = workdir / "again"
        ending = _ending(exc, printed, None if exc else _published(again), expected, what)
        TRIED[f"between {damage}: {ending}"] += 1
        if exc is None:
            if done[1]:
                raise AssertionError(f"checkpoint_damage: the next stage used a damaged checkpoint; {what}")
            return
        config = _config(workdir, "again", fmt, stages)  # run again with --resume, as the line says
    else:
        stage = rng.choice(stages_dirs)
        done.extend(_damage(rng, stage, damage, others))
        what = f"format {fmt}, stages {stages}, checkpoint of {stage.name} damaged: {done}"
        (workdir / "case.txt").write_text(what + "\n")
    exc, printed = _build(config, resume=True, keep_checkpoints=True)
    ending = _ending(exc, printed, None if exc else _published(pathlib.Path(config.output.run_dir)), expected,
                     what + " (resumed)")
    if between and exc is not None:
        raise AssertionError(f"checkpoint_damage: resuming after the one line still stopped: {exc}; {what}")
    if not between and exc is None and done[1] and f"stage {stage.name.split('-', 1)[1]} done" not in printed:
        raise AssertionError(f"checkpoint_damage: --resume used a damaged checkpoint without rebuilding it; {what}")
    TRIED[f"{'between, then resumed' if between else 'resumed'} {damage}: {ending}"] += 1
