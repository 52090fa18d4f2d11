"""Fuzz family ``trees``: random user trees around and inside a run directory, then corpusforge commands.

Promise: every file corpusforge did not write survives every command, byte for byte (and every link still
points where it did, its target untouched); a refusal is one line, never a traceback.

Each case plants files and folders of the user's with the names corpusforge uses for its own
(``.checkpoints``, ``.checkpoints/*/spill``, ``.tmp-build-*``, ``.tmp-swap-*``, ``manifest.json``, ``clean/``,
``tokens/``, ``model/``...) and links out to a precious folder, inside the run directory, inside the
folders a command is pointed at and beside them; then it runs a random sequence of commands on them
(build with and without stage checkpoints, ``--overwrite``, ``--resume``; tokenize into the run or into a user's
folder; ``train --overwrite``; the leftover clean-up and the marker-checked deletion itself), each with tiny
settings.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import pathlib
import random

FAMILY = "trees"

HOSTILE = [".checkpoints", ".checkpoints/00-read/spill", ".checkpoints/01-pii/spill", ".tmp-build-abc123",
           ".tmp-final-0f0f", ".tmp-old-1a2b", ".tmp-swap-9z", ".tmp-swap-train", "spill", "manifest.json",
           "stats.json", "clean", "removed", "rejected", "tokens", "tokens/train", "tokenizer", "model",
           "model/checkpoints", "sample", "report.html", "README.md", "notes", ".corpusforge-swap.json",
           "tokens/manifest.json", "model/config.json", ".hidden", "data"]
OFF = ["--set", "quality.enabled=false", "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]


# Where a name-based deletion would strike first: one of these is planted in every tree.
CRITICAL = [".checkpoints/01-pii/spill", ".checkpoints/00-read", ".tmp-build-abc123", ".tmp-swap-train",
            "model/checkpoints", "manifest.json", "tokens/train"]
# Names of corpusforge's working folders that block no command (a build still runs beside them).
GENTLE = [".tmp-build-abc123", ".tmp-final-0f0f", ".tmp-old-1a2b", ".tmp-swap-9z", ".tmp-swap-train",
          ".tmp-build-abc123/00-read/spill", "spill", "notes", ".hidden", "data", "manifest.json.bak"]


def _plant(rng: random.Random, root: pathlib.Path, precious: pathlib.Path, count: int, gentle: bool) -> None:
    """``count`` files, folders and links of the user's under ``root`` with hostile names (the first one of
    ``CRITICAL``), or (``gentle``) only names that let the commands run."""
    for number in range(count):
        names = GENTLE if gentle else CRITICAL if number == 0 else HOSTILE
        name = rng.choice(names)
        if number and rng.random() < 0.3:
            name = f"{name}/{rng.choice(names).split('/')[-1]}"
        path = root / name
        kind = rng.random()
        with contextlib.suppress(OSError):  # a name already taken by another kind of node: skip it
            if number and kind < 0.15 and not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.symlink_to(precious if rng.random() < 0.5 else precious / "data.txt")
            elif kind < 0.45 or number == 0 and "." not in name.split("/")[-1][1:]:
                path.mkdir(parents=True, exist_ok=True)
                (path / f"user-{rng.randrange(1000)}.txt").write_bytes(rng.randbytes(rng.randrange(1, 64)))
            elif not path.is_dir():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(rng.randbytes(rng.randrange(1, 64)))


def snapshot(root: pathlib.Path, mine: set[str] | None = None) -> dict[str, object]:
    """Every file (its bytes) and link (its target) under ``root``, by relative path."""
    out: dict[str, object] = {}
    for base, dirs, names in os.walk(root):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(base, d))]:
            path = os.path.join(base, name)
            rel = os.path.relpath(path, root)
            out[rel] = ("link", os.readlink(path)) if os.path.islink(path) else pathlib.Path(path).read_bytes()
    return out


def _corpus(path: pathlib.Path, rng: random.Random, documents: int) -> pathlib.Path:
    words = [f"w{n}" for n in range(300)]
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": " ".join(rng.choice(words) for _ in range(40))}) + "\n"
                            for i in range(documents)))
    return path


def _cli(argv: list[str]) -> tuple[int, str]:
    from corpusforge.cli.main import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
    return code, err.getvalue()


def _check_no_traceback(command: str, code: int, err: str) -> None:
    if "Traceback" in err or code not in (0, 2):
        raise AssertionError(f"trees: `{command}` ended with {code} and a traceback, not a one-line refusal:\n"
                             f"{err[-2000:]}")


def _tokenizer(work: pathlib.Path) -> pathlib.Path:
    from corpusforge.tokenizer.config import TokenizerConfig
    from corpusforge.tokenizer.train import train_from_texts

    path = work / "inputs" / "tokenizer.json"
    if not path.exists():
        texts = [" ".join(f"w{(n * 7 + j) % 300}" for j in range(20)) for n in range(200)]
        train_from_texts([texts], TokenizerConfig(family="decoder", kind="bpe", vocab_size=300)).save(str(path))
    return path


def _commands(rng: random.Random, work: pathlib.Path, run: pathlib.Path, outside: pathlib.Path) -> list[tuple[str, object]]:
    """A random sequence of commands, each a label and a thunk."""
    data = _corpus(work / "inputs" / "docs.jsonl", rng, rng.choice([5, 30]))
    out = []

    def build():
        extra = []
        if rng.random() < 0.5:
            extra += ["--set", "output.stage_checkpoints=true"]
        if rng.random() < 0.6:
            extra.append("--overwrite")
        if rng.random() < 0.3:
            extra.append("--resume")
        # the input: the corpus, its folder, a folder that holds the run directory (refused: the build would read
        # its own outputs), or an earlier build's clean/ inside the run directory (read before it is replaced)
        source = rng.choice([data, data, data.parent, work, run / "clean"])
        return "build " + " ".join(extra), ["build", "--input", str(source), "--run-dir", str(run), "--no-progress",
                                             *OFF, *extra]

    def tokenize():
        target = rng.choice([None, outside / "tokens-out", outside, run / "tokens"])
        extra = ["--set", f"tokenize.tokenizer={_tokenizer(work)}", "--set", "tokenize.num_shards=1"]
        if rng.random() < 0.5:
            extra += ["--set", f"tokenize.input={run / 'clean'}"]
        if target is not None:
            extra += ["--set", f"tokenize.output={target}"]
        if rng.random() < 0.6:
            extra += ["--set", "output.overwrite=true"]
        return "tokenize " + " ".join(extra), ["tokenize", "--set", f"output.run_dir={run}", *extra]

    def leftovers():
        from corpusforge.core import rundir

        return rundir.clean_leftovers(str(run)) if run.is_dir() else []

    def delete():
        from corpusforge.core import rundir
        from corpusforge.core.errors import UserError

        names = [p for p in run.rglob("*")] + [outside / n for n in HOSTILE[:6]] if run.is_dir() else []
        for path in rng.sample(names, min(3, len(names))):
            with contextlib.suppress(UserError):
                rundir.delete(str(path))

    for _ in range(rng.randrange(1, 4)):
        pick = rng.random()
        if pick < 0.45:
            out.append(("cli", build()))
        elif pick < 0.7:
            out.append(("cli", tokenize()))
        elif pick < 0.85:
            out.append(("leftovers", leftovers))
        else:
            out.append(("delete", delete))
    return out


def _train_case(rng: random.Random, work: pathlib.Path, run: pathlib.Path) -> list[tuple[str, object]]:
    """train, then train --overwrite over a tree the user salted (model/, .tmp-swap-train, ...)."""
    from tests.trainers.conftest import make_run

    make_run(run, n_train=40, n_val=8, seed=rng.randrange(100))
    settings = ["--set", f"output.run_dir={run}", "--set", "train.model.size=debug", "--set", "train.seq_len=16",
                "--set", "train.micro_batch_size=2", "--set", "train.max_steps=2",
                "--set", "train.progress=false", "--set", "train.eval_every=0"]
    return [("cli", ("train", ["train", *settings])),
            ("cli", ("train --overwrite", ["train", *settings, "--set", "output.overwrite=true"]))]


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    work = pathlib.Path(workdir)
    (work / "inputs").mkdir(parents=True, exist_ok=True)
    precious = work / "precious"
    precious.mkdir(exist_ok=True)
    (precious / "data.txt").write_bytes(b"years of work")
    # a run directory's own name may hold glob characters: every command takes it as the path named
    run, outside = work / rng.choice(("run", "run", "run", "run[1]", "run*", "r?n", "[ab]")), work / "users"
    outside.mkdir(exist_ok=True)
    train = rng.random() < 0.15
    commands = _train_case(rng, work, run) if train else _commands(rng, work, run, outside)
    if not train and rng.random() < 0.6:
        run.mkdir(exist_ok=True)
    gentle = rng.random() < 0.6
    if run.is_dir():
        _plant(rng, run, precious, rng.randrange(1, 8), gentle)
    _plant(rng, outside, precious, rng.randrange(1, 6), gentle and rng.random() < 0.5)
    (work / "case.json").write_text(json.dumps([c[1][0] if c[0] == "cli" else c[0] for c in commands], indent=1))
    users = {"run": snapshot(run) if run.is_dir() else {}, "users": snapshot(outside), "precious": snapshot(precious)}
    for kind, what in commands:
        if kind == "cli":
            label, argv = what
            code, err = _cli(argv)
            _check_no_traceback(label, code, err)
            if argv[0] == "build" and argv[argv.index("--input") + 1] == str(work):
                assert code == 2 and "holds the run directory" in err, \
                    f"{label} with the input {work} holding the run directory: exit {code}, {err[-300:]!r}"
        else:
            what()
        for name, root in (("run", run), ("users", outside), ("precious", precious)):
            now = snapshot(root) if root.is_dir() else {}
            lost = [rel for rel, value in users[name].items() if now.get(rel) != value]
            if lost:
                raise AssertionError(f"trees: after {kind} {what[0] if kind == 'cli' else ''}, files corpusforge did "
                                     f"not write were deleted or changed under {name}/: {lost[:5]}")
