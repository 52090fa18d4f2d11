"""Fuzz family ``graphs``: any shape of build graph runs, and gives the same bytes whether its shuffles wait on
disk or in memory.

The class: a combination of enabled stages and sub-steps, stage checkpoints, spilling, dedup join and
component modes, and shuffles on disk (``output.disk_shuffle_mb=0``, ``corpusforge/core/disk_grouping.py``)
that the runner cannot run (an empty composite left by a graph rewrite: every stage off, shuffles on disk) or
that decides differently on disk than in memory. Each case draws a small corpus (exact and near copies,
repeated lines, an e-mail) and a configuration, builds it twice (shuffles on disk, then in Beam's memory) and
checks that both succeed, the accounting balances, and the shards and counts are the same.
"""
from __future__ import annotations

import json
import pathlib
import random

FAMILY = "graphs"

LINES = ["Subscribe to our newsletter for weekly updates.", "All rights reserved.", "Click here to read more."]
WORDS = ("river stone garden window paper music bridge cloud forest engine winter market signal harbor "
         "lantern meadow copper thunder violet orbit").split()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."


def corpus(rng: random.Random, path: pathlib.Path) -> int:
    docs = []
    for i in range(rng.randint(1, 40)):
        paragraphs = [" ".join(_sentence(rng) for _ in range(rng.randint(2, 6))) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.4:
            paragraphs.append(rng.choice(LINES))
        if rng.random() < 0.1:
            paragraphs.append("Write to jane.doe@example.com for details.")
        text = "\n".join(paragraphs)
        if docs and rng.random() < 0.15:
            text = rng.choice(docs)["text"]  # an exact copy
        elif docs and rng.random() < 0.15:
            text = rng.choice(docs)["text"] + " " + _sentence(rng)  # a near copy
        docs.append({"id": f"d{i}", "text": text})
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return len(docs)


def settings(rng: random.Random) -> list[str]:
    out = [f"{stage}.enabled={rng.random() < 0.7}" for stage in ("normalize", "quality", "dedup", "pii")]
    for step in ("exact", "near", "lines", "sentences"):
        out.append(f"dedup.{step}.enabled={rng.random() < 0.7}")
    for rule in ("gopher", "repetition", "c4", "fineweb", "junk"):
        out.append(f"quality.{rule}.enabled={rng.random() < 0.7}")
    out.append(f"dedup.joins={rng.choice(['auto', 'shuffle', 'side_input', 'batches'])}")
    out.append(f"dedup.near.components={rng.choice(['auto', 'single', 'distributed'])}")
    out.append(f"output.stage_checkpoints={rng.random() < 0.3}")
    out.append(f"output.format={rng.choice(['parquet', 'arrow', 'jsonl'])}")
    out.append("pii.hash_salt=fuzz-graphs-salt-0123")  # the same hashes in both builds
    return out


def _outputs(run: pathlib.Path) -> tuple[dict, dict]:
    files = {p.relative_to(run).as_posix(): p.read_bytes()
             for sub in ("clean", "removed", "rejected") for p in sorted((run / sub).glob("part-*"))}
    stats = json.loads((run / "stats.json").read_text())
    for volatile in ("timing", "metrics"):
        stats.pop(volatile, None)
    return files, stats


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    from corpusforge.cli.main import main

    work = pathlib.Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    source = work / "in.jsonl"
    count = corpus(rng, source)
    chosen = settings(rng)
    (work / "case.json").write_text(json.dumps({"documents": count, "settings": chosen}, indent=1))
    runs = {}
    for where, threshold in (("disk", "0"), ("memory", "1000000")):
        run = work / f"run-{where}"
        flags = [x for s in chosen + [f"output.disk_shuffle_mb={threshold}"] for x in ("--set", s)]
        try:
            code = main(["build", "--input", str(source), "--run-dir", str(run), "--no-progress", *flags])
        except BaseException as error:  # noqa: BLE001 - the broken promise is the report
            raise AssertionError(f"graphs: shuffles in {where}, {chosen}: {type(error).__name__}: {error}") from error
        if code != 0:
            raise AssertionError(f"graphs: shuffles in {where}, {chosen}: exit {code}")
        runs[where] = _outputs(run)
        if not runs[where][1]["accounting"]["balanced"]:
            raise AssertionError(f"graphs: shuffles in {where}, {chosen}: the accounting does not balance")
    if runs["disk"] != runs["memory"]:
        raise AssertionError(f"graphs: {chosen}: shuffles on disk and in memory gave different outputs")
