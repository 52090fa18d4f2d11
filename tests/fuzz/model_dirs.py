"""Fuzz family ``model_dirs``: a folder ``corpusforge export`` or ``corpusforge finetune`` wrote, damaged.

Promise: every command that loads it (generate, fill-mask, predict through the CLI's ``main``; ``load_model``,
which evaluate, embed and ablate share) either gives exactly the undamaged folder's output, or stops with one
line (exit 2, ``corpusforge: error: ...``); never a traceback, a hang, or other output (other weights, another
generation config, another tokenizer).

The sources are made once per process (``_sources``, beside the first case's work directory): untrained debug models of the
gpt2 and bert families exported (``make_model_dir``: random weights stand in for trained ones, the files are
the same), an ELECTRA model exported (its discriminator and ``generator/``), and a LoRA classifier fine-tuned on
the gpt2 model for one epoch with ``--merge`` (``base/``, ``adapter/`` with peft's files, ``merged/``). Each case
copies one of them into ``workdir``, draws one of its files (any folder's, the records and model cards included)
and one damage: a flipped bit, a number of a JSON file changed (still valid JSON), cut short, emptied, deleted, replaced by a folder, by a link (to another file of
the copy, or to nothing) or by a FIFO; or an unexpected file added beside them (names a loader reads when it finds
them: ``adapter_config.json``, ``model.safetensors.index.json`` ...); then runs the commands that read it.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import pathlib
import random
import shutil
import signal

FAMILY = "model_dirs"

DAMAGES = ("flip", "cut", "empty", "delete", "folder", "link", "dangling", "fifo", "extra", "edit")
EXTRA_NAMES = ("adapter_config.json", "model.safetensors.index.json", "pytorch_model.bin", "added_tokens.json",
               "special_tokens_map.json", "tokenizer.model", "notes.txt", "model.safetensors")
# source -> the commands run on a copy of it: (CLI arguments with {d} for the copy, the folder load_model reads)
COMMANDS = {
    "gpt2": [["generate", "--model", "{d}", "--prompt", "the river", "--greedy", "--max-new-tokens", "4",
              "--json"]],
    "bert": [["fill-mask", "--model", "{d}", "--json", "the [MASK] river"]],
    "electra": [["fill-mask", "--model", "{d}/generator", "--json", "the [MASK] river"],
                ["fill-mask", "--model", "{d}", "--json", "the [MASK] river"]],
    "finetune": [["predict", "--model", "{d}", "--data", "{records}", "--out", "{d}.preds.jsonl"]],
}
LOADED = {"gpt2": [""], "bert": [""], "electra": ["generator"], "finetune": []}
_SOURCES: dict[str, pathlib.Path] = {}
_EXPECTED: dict[tuple, object] = {}


def _electra_model_dir(directory: pathlib.Path) -> pathlib.Path:
    import dataclasses

    from corpusforge.trainers.checkpoint import save_pretrained
    from corpusforge.trainers.electra import ReplacedTokenDetection, discriminator_config, generator_config
    from corpusforge.trainers.model import model_config
    from tests.trainers.exports import make_model_dir, randomise

    source = make_model_dir(directory.parent / "electra-tokenizer", "bert")
    info = json.loads((source / "config.json").read_text())
    d = discriminator_config(model_config("bert", "debug", vocab_size=info["model"]["vocab_size"], max_len=32,
                                          dropout=0.0))
    model = randomise(ReplacedTokenDetection(d, generator_config(d, 0.25, True), share_embeddings=True,
                                             sample_vocab_size=info["tokenizer_vocab_size"]))
    info.pop("model")
    info.update(objective="rtd", electra={"generator": dataclasses.asdict(model.generator_cfg), "share_embeddings": True,
                                          "discriminator_weight": 50.0, "sample_vocab_size": info["tokenizer_vocab_size"]})
    directory.mkdir(parents=True)
    save_pretrained(model, directory, tokenizer=source / "tokenizer.json", info=info)
    return directory


def _sources(workdir: pathlib.Path) -> dict[str, pathlib.Path]:
    """The undamaged folders, made once per process beside the first case's ``workdir`` (not in the temporary
    folder, which each fuzz slice checks is left empty: tests/fuzz/conftest.py)."""
    root = workdir.parent / f".model-dirs-sources-{os.getpid()}"
    if _SOURCES.get("root") == root:
        return _SOURCES
    _SOURCES.clear()
    _EXPECTED.clear()
    from corpusforge.trainers.export import export_model
    from corpusforge.trainers.finetune.config import FinetuneConfig
    from corpusforge.trainers.finetune.train import finetune
    from tests.trainers.exports import make_model_dir

    shutil.rmtree(root, ignore_errors=True)  # a run of this process's that stopped half-way
    root.mkdir()
    # torch's compile cache (fine-tuning imports it), process-wide: with the sources, not in the temporary folder
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(root / "torchinductor"))
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        for family in ("gpt2", "bert"):
            export_model(make_model_dir(root / f"{family}-model", family), root / family)
        export_model(_electra_model_dir(root / "electra-model"), root / "electra")
        records = root / "records.jsonl"
        rnd = random.Random(0)
        rows = [{"id": f"r{i}", "text": f"{w} {w} {w}", "label": w} for i in range(24) for w in [rnd.choice(["cat", "dog"])]]
        records.write_text("".join(json.dumps(r) + "\n" for r in rows))
        finetune(FinetuneConfig(model=str(root / "gpt2-model"), task="classify", method="lora", train=str(records),
                                out=str(root / "finetune"), epochs=1, batch_size=8, lr=1e-2, lora_r=4, merge=True,
                                progress=False))
    _SOURCES.update({name: root / name for name in COMMANDS}, records=records, root=root)
    return _SOURCES


def _run(argv: list[str]) -> tuple[int, str, str, bytes | None]:
    """``corpusforge ARGV`` in this process: (exit code, stdout, stderr, the predictions file it wrote)."""
    from corpusforge.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    preds = pathlib.Path(argv[argv.index("--out") + 1]) if "--out" in argv else None
    if preds is not None and preds.exists():
        preds.unlink()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except BaseException as exc:  # noqa: BLE001 - the promise is that nothing escapes main
        raise AssertionError(f"corpusforge {' '.join(argv)} raised {type(exc).__name__}: {exc}") from exc
    return code, out.getvalue(), err.getvalue(), preds.read_bytes() if preds is not None and preds.exists() else None


def _logits(directory: pathlib.Path):
    """load_model's logits on a fixed input, or the UserError it raised."""
    import torch

    from corpusforge.core.errors import UserError
    from corpusforge.trainers.export import load_model

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            loaded = load_model(directory)
            with torch.no_grad():
                return loaded.model(input_ids=torch.arange(5, 13).unsqueeze(0)).logits
    except UserError as exc:
        return exc


def _argv(template: list[str], d: pathlib.Path) -> list[str]:
    return [a.format(d=d, records=_SOURCES["records"]) for a in template]


def _expected(source: str, key) -> object:
    """What the undamaged source gives (computed on a copy of it, once)."""
    if (source, key) not in _EXPECTED:
        clean = _SOURCES["root"] / f"clean-{source}-{key}" / source
        shutil.copytree(_SOURCES[source], clean, symlinks=True)
        if isinstance(key, int):
            code, out, err, preds = _run(_argv(COMMANDS[source][key], clean))
            _EXPECTED[source, key] = (code, out.replace(str(clean), "{d}"), preds)
        else:
            _EXPECTED[source, key] = _logits(clean / key)
    return _EXPECTED[source, key]


def _damage(rng: random.Random, d: pathlib.Path) -> str:
    """One damage to one file of the copy ``d``; says what was done."""
    files = sorted(p for p in d.rglob("*") if p.is_file() and not p.is_symlink())
    damage = rng.choice(DAMAGES)
    path = rng.choice(files)
    name = path.relative_to(d).as_posix()
    if damage == "extra":
        folder = rng.choice(sorted({p.parent for p in files}))
        extra = folder / rng.choice(EXTRA_NAMES)
        if extra.exists():
            extra = folder / "notes.txt"
        other = rng.choice(files)
        extra.write_bytes(other.read_bytes() if rng.random() < 0.7 else bytes(rng.randrange(256) for _ in range(64)))
        return f"added {extra.relative_to(d)} (the bytes of {other.relative_to(d)} or random)"
    data = path.read_bytes()
    if damage == "edit":  # a number of a JSON file changed, the file still valid JSON (as a hand edit leaves it)
        jsons = [f for f in files if f.suffix == ".json" and _numbers(json.loads(f.read_bytes()))]
        path = rng.choice(jsons)
        value = json.loads(path.read_bytes())
        keys = rng.choice(_numbers(value))
        inner = value
        for key in keys[:-1]:
            inner = inner[key]
        old = inner[keys[-1]]
        inner[keys[-1]] = old + rng.choice([1, -1, 2]) if isinstance(old, int) else old * rng.choice([10.0, 0.1, -1.0])
        path.write_text(json.dumps(value, indent=2))
        return f"edited {path.relative_to(d)}: {'/'.join(map(str, keys))} {old} -> {inner[keys[-1]]}"
    if damage == "flip":
        if not data:
            damage = "delete"
        else:
            at, bit = rng.randrange(len(data)), rng.randrange(8)
            path.write_bytes(data[:at] + bytes([data[at] ^ (1 << bit)]) + data[at + 1:])
            return f"flipped bit {bit} of byte {at} of {name}"
    if damage == "cut":
        size = rng.randrange(len(data)) if data else 0
        path.write_bytes(data[:size])
        return f"cut {name} to {size} bytes"
    if damage == "empty":
        path.write_bytes(b"")
        return f"emptied {name}"
    path.unlink()
    if damage == "folder":
        path.mkdir()
        return f"replaced {name} by a folder"
    if damage == "link":
        target = rng.choice([f for f in files if f != path] or files)
        os.symlink(os.path.relpath(target, path.parent), path)
        return f"replaced {name} by a link to {target.relative_to(d)}"
    if damage == "dangling":
        os.symlink("nowhere", path)
        return f"replaced {name} by a link to nothing"
    if damage == "fifo":
        os.mkfifo(path)
        return f"replaced {name} by a FIFO"
    return f"deleted {name}"


def _numbers(value, at=()) -> list[tuple]:
    """The key paths of every number (not a bool) in a parsed JSON value."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _numbers(v, at + (k,))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _numbers(v, at + (i,))]
    return [at] if isinstance(value, (int, float)) and not isinstance(value, bool) and at else []


class _Hung(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: int):
    def ring(signum, frame):
        raise _Hung

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    import torch

    from corpusforge.core.errors import UserError

    _sources(workdir)
    source = rng.choice(sorted(COMMANDS))
    d = workdir / source
    shutil.copytree(_SOURCES[source], d, symlinks=True)
    shutil.copy(_SOURCES["records"], workdir / "records.jsonl")
    what = _damage(rng, d)
    (workdir / "case.txt").write_text(f"{source}: {what}\n")
    try:
        with _deadline(120):
            for i, template in enumerate(COMMANDS[source]):
                argv = _argv(template, d)
                code, out, err, preds = _run(argv)
                expected_code, expected_out, expected_preds = _expected(source, i)
                if code == 2:
                    lines = err.strip().splitlines()
                    assert len(lines) == 1 and lines[0].startswith("corpusforge: error: "), \
                        f"{source} ({what}): corpusforge {' '.join(template)} exited 2 without one error line: {err!r}"
                    continue
                assert code == expected_code == 0, \
                    f"{source} ({what}): corpusforge {' '.join(template)} exited {code}: {err[-500:]!r}"
                assert out.replace(str(d), "{d}") == expected_out and preds == expected_preds, \
                    f"{source} ({what}): corpusforge {' '.join(template)} printed another output than the undamaged copy"
            for folder in LOADED[source]:
                got, expected = _logits(d / folder), _expected(source, folder)
                if isinstance(got, UserError):
                    assert "\n" not in str(got), f"{source} ({what}): load_model's error is not one line: {got}"
                    continue
                assert not isinstance(expected, UserError) and torch.equal(got, expected), \
                    f"{source} ({what}): load_model gave other logits than the undamaged copy"
    except _Hung:
        raise AssertionError(f"{source} ({what}): a command hung (2 minutes)") from None
