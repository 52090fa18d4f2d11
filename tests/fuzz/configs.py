"""Fuzz family ``configs``: random configs and model directories, each run in a subprocess under rlimits.

Promise: whatever a config file, a ``--set`` or a model directory holds, corpusforge answers in bounded time
and memory (the subprocess runs with ``RLIMIT_AS`` and ``RLIMIT_CPU``), with exit 0 or a one-line error,
never a traceback.

A config case writes ``case.yaml`` (and the ``--set`` items in ``case.json``): YAML alias bombs of random
breadth and depth, self-referring aliases, numbers past every limit, NaN and infinities, wrong types, deep
nesting, keys that are not strings, odd Unicode (bidi controls, NUL, surrogates escaped), and random values on
real keys (``beam.options.direct_num_workers`` among them); the subprocess runs ``corpusforge config`` on it and
builds the Beam options. A model case copies a tiny model directory into the case and corrupts it (dimensions in
``config.json`` that the weights do not back, a truncated or foreign ``model.safetensors``, malformed or
panicking ``tokenizer.json``, random bytes in place of a file); the subprocess runs ``export`` and
``generate`` on it. A checkpoint case damages a training checkpoint (truncated, bytes appended or flipped
anywhere, bits flipped in one zip member's data) and loads it as ``train --resume`` does.

A changed byte in a saved model's weights or tokenizer, or in a checkpoint member's data, must be refused (exit 2):
before config.json recorded the files' SHA-256 and loading checked the zip's CRC-32, both loaded silently.
"""
from __future__ import annotations

import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile

FAMILY = "configs"

ROOT = pathlib.Path(__file__).resolve().parents[2]
MEMORY = 3 << 30  # RLIMIT_AS of the subprocess: a config or a broken model may not take more
SECONDS = 240  # wall-clock limit of one case (imports included, on a loaded machine)

KEYS = ["train.max_steps", "train.seq_len", "train.micro_batch_size", "train.model.size", "train.optim.lr",
        "tokenize.num_shards", "tokenize.val_fraction", "tokenize.batch_size", "dedup.threshold", "dedup.num_perm",
        "quality.enabled", "output.run_dir", "output.shard_format", "build.max_error_fraction", "pii.hash_salt",
        "beam.runner", "beam.options.direct_num_workers", "beam.options.direct_running_mode", "inputs",
        "tokenizer.vocab_size", "normalize.form", "finetune.epochs"]
ODD = ["\u202e", "\x00", "\ufeff", "\u200d", "é", "ｋｅｙ", "\U0001f600", "\\ud800", "${x}", "*", "&", "..", ".", ""]


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(12)
    if kind == 0:
        return rng.choice([10**30, -10**30, 2**63, 2**64 + 1, _Raw("9" * rng.randrange(20, 6000))])
    if kind == 1:
        return rng.choice([float("nan"), float("inf"), -float("inf"), 1e308, -0.0, 5e-324])
    if kind == 2:
        return rng.choice([True, False, None, "", "yes", "~", "0x10", "1e3", "null"])
    if kind == 3 and depth < 4:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 4 and depth < 4:
        return {_key(rng): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    if kind == 5:
        return "".join(rng.choice(ODD) for _ in range(rng.randrange(1, 6)))
    if kind == 6:
        return rng.choice([100000, 0, -1, 1, 2, 10**9])
    return rng.choice([1, 0.5, "a", "DirectRunner", "arrow", -3, 64])


def _key(rng: random.Random) -> str:
    return rng.choice([rng.choice(KEYS).split(".")[-1], "".join(rng.choice(ODD) for _ in range(rng.randrange(1, 4))),
                       "x" * rng.randrange(1, 300)])


class _Raw(str):
    """YAML text written as it is (an integer literal past Python's digit limit)."""


def _dump(value) -> str:
    """YAML flow text for ``value`` (JSON is YAML; floats and odd strings as YAML spells them)."""
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, float) and value != value:
        return ".nan"
    if value == float("inf"):
        return ".inf"
    if value == -float("inf"):
        return "-.inf"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {_dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_dump(v) for v in value) + "]"
    return json.dumps(value)


def _nest(pairs: dict[str, str]) -> str:
    """Block YAML from dotted keys -> YAML texts of values."""
    tree: dict = {}
    for dotted, text in pairs.items():
        node = tree
        parts = dotted.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node[parts[-1]] = text
    lines: list[str] = []

    def walk(node: dict, indent: int) -> None:
        for key, value in node.items():
            if isinstance(value, dict):
                lines.append(" " * indent + f"{key}:")
                walk(value, indent + 2)
            else:
                lines.append(" " * indent + f"{key}: {value}")

    walk(tree, 0)
    return "\n".join(lines) + "\n"


# Each case's settings as the config will hold them (the YAML's, then each --set in order): what it must refuse
_SETTINGS: dict[str, str] = {}
# Trainer float settings among KEYS: an infinity in one is refused (config_loader.check_finite; lr=inf diverged)
TRAINER_FLOATS = ("train.optim.lr",)


def config_case(rng: random.Random) -> tuple[str, list[str]]:
    """(YAML text, --set items) of one hostile config."""
    _SETTINGS.clear()
    shape = rng.randrange(6)
    if shape == 0:  # an alias bomb: breadth ** depth strings from a few hundred bytes
        breadth, depth = rng.randrange(2, 12), rng.randrange(3, 12)
        lines = [f"a0: &a0 [{', '.join(['lol'] * breadth)}]"]
        lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * breadth)}]" for i in range(1, depth)]
        where = rng.choice(["", "beam:\n  options:\n    x: *a{last}\n", "train:\n  max_steps: *a{last}\n"])
        return "\n".join(lines) + "\n" + where.format(last=depth - 1), []
    if shape == 1:  # aliases that refer to themselves, or deep nesting
        if rng.random() < 0.5:
            return rng.choice(["a: &a [*a]\n", "a: &a {b: *a}\n", "beam:\n  options: &o {x: [*o]}\n"]), []
        n = rng.randrange(50, 3000)
        return "train: " + "[" * n + "]" * n + "\n", []
    if shape == 2:  # the bomb through --set
        breadth = rng.randrange(5, 12)
        flow = "{" + ", ".join([f"a0: &a0 [{', '.join(['x'] * breadth)}]"]
                               + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * breadth)}]" for i in range(1, 9)]) + "}"
        return "", [f"beam.options={flow}"]
    pairs = {rng.choice(KEYS): _dump(_value(rng)) for _ in range(rng.randrange(1, 6))}
    if shape == 3:
        pairs["beam.options.direct_num_workers"] = _dump(rng.choice([100000, 10**9, -5, 0, 2, "many", 2.5]))
    sets = [f"{rng.choice(KEYS)}={_dump(_value(rng))}" for _ in range(rng.randrange(3))]
    _SETTINGS.update(pairs)
    _SETTINGS.update(item.split("=", 1) for item in sets)
    text = _nest(pairs)
    if shape == 4:  # keys that are not names
        text += rng.choice(["? [a, b]\n: 1\n", "1: x\n", "null: 3\n", f"{json.dumps(''.join(ODD[:5]))}: 1\n"])
    return text, sets




def _writer_version() -> str:
    """A digest of the code that writes the cached models and checkpoints: a tree that writes them otherwise (a new
    field in config.json, say) gets a cache of its own, not files an older tree wrote."""
    import hashlib

    digest = hashlib.sha256()
    for source in ("trainers/checkpoint.py", "trainers/model.py", "trainers/model_files.py", "tests/trainers/exports.py"):
        digest.update((ROOT / source).read_bytes())
    return digest.hexdigest()[:12]


_MODEL_CACHE = pathlib.Path(tempfile.gettempdir()) / f"corpusforge-fuzz-model-{os.getuid()}-{_writer_version()}"


def _good_model(family: str = "gpt2") -> pathlib.Path:
    """A tiny intact model directory of ``family`` (gpt2, bert, t5, bart: made once per machine and user, then
    copied into each case)."""
    done = _MODEL_CACHE / family / "config.json"
    if not done.exists():
        from tests.trainers.exports import make_model_dir

        shutil.rmtree(_MODEL_CACHE / family, ignore_errors=True)
        make_model_dir(_MODEL_CACHE / family, family)
    return _MODEL_CACHE / family


def corrupt_model(rng: random.Random, directory: pathlib.Path) -> str:
    """Corrupt the model in ``directory`` one random way; returns what was done."""
    how = rng.randrange(7)
    if how == 0:
        config = json.loads((directory / "config.json").read_text())
        # any count or size of the model section (layers, heads, buckets, segments...): a count the weights do not
        # back must be refused before a structure of that many modules is built (10^12 layers built for ever once)
        counts = [k for k, v in config["model"].items() if isinstance(v, int) and not isinstance(v, bool) or v is None]
        key = rng.choice(counts)
        config["model"][key] = rng.choice([(config["model"][key] or 1) * rng.randrange(2, 5000), 10**12, 10**6, 0, -1,
                                           "x", None])
        (directory / "config.json").write_text(json.dumps(config))
        return f"config.json model.{key} changed"
    name = rng.choice(["model.safetensors", "config.json", "tokenizer.json"])
    data = (directory / name).read_bytes()
    if how == 1:
        (directory / name).write_bytes(data[: rng.randrange(len(data))])
        return f"{name} truncated"
    if how == 2:
        (directory / name).write_bytes(rng.randbytes(rng.randrange(1, 4096)))
        return f"{name} random bytes"
    if how == 3:
        buf = bytearray(data)
        for _ in range(rng.randrange(1, 20)):
            buf[rng.randrange(len(buf))] ^= rng.randrange(1, 256)  # always another byte
        (directory / name).write_bytes(bytes(buf))
        return f"{name} bytes flipped"
    if how == 4:
        tokenizer = json.loads((directory / "tokenizer.json").read_text())
        pattern = rng.choice(["(?<=a)b(", "[", "(a*)*b" * 3, "\\", "(?P<x>a)(?P<x>b)", "a{99999999}"])
        tokenizer["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
                                      "invert": False}
        (directory / "tokenizer.json").write_text(json.dumps(tokenizer))
        return f"tokenizer.json regex {pattern!r}"
    if how == 5:
        (directory / name).unlink()
        return f"{name} missing"
    config = json.loads((directory / "config.json").read_text())
    config[rng.choice(["model", "electra", "special_tokens"])] = _value(rng)
    (directory / "config.json").write_text(json.dumps(config, default=str).replace("NaN", "1e999"))
    return "config.json section replaced"


_CHECKPOINT_CACHE = _MODEL_CACHE / "checkpoint" / "step-00000001.pt"


def _good_checkpoint() -> pathlib.Path:
    """A training checkpoint as ``train`` writes one (a model's weights, step, every RNG state), made once."""
    if not _CHECKPOINT_CACHE.exists():
        import torch

        from corpusforge.trainers import checkpoint as ckpt

        work = pathlib.Path(tempfile.mkdtemp(dir=_MODEL_CACHE.parent))
        ckpt.save_checkpoint(work, 1, {"model": {"w": torch.randn(64, 64), "b": torch.zeros(64)}, "step": 1,
                                       "position": 7, "rng": [ckpt.capture_rng()]})
        _CHECKPOINT_CACHE.parent.mkdir(parents=True, exist_ok=True)
        os.replace(work / "step-00000001.pt", _CHECKPOINT_CACHE)
        shutil.rmtree(work, ignore_errors=True)
    return _CHECKPOINT_CACHE


def member_data_offset(data: bytes | bytearray, member) -> int:
    """Where the stored data of the zip member ``member`` (a ``zipfile.ZipInfo``) starts in the archive ``data``:
    after its local header, 30 bytes, its name and its extra field, whose lengths are read from the local header,
    not the central directory (torch pads the local extra field to align tensors)."""
    at = member.header_offset
    name_len, extra_len = (int.from_bytes(data[at + k:at + k + 2], "little") for k in (26, 28))
    return at + 30 + name_len + extra_len


def corrupt_checkpoint(rng: random.Random, path: pathlib.Path) -> tuple[str, bool]:
    """Damage the training checkpoint at ``path`` one random way; returns what was done and whether the data of
    a zip member (a tensor, the pickle) changed, which loading must refuse."""
    import zipfile

    data = bytearray(path.read_bytes())
    how = rng.randrange(5)
    if how == 0:
        path.write_bytes(bytes(data[: rng.randrange(len(data))]))
        return "checkpoint truncated", False
    if how == 1:
        path.write_bytes(bytes(data) + rng.randbytes(rng.randrange(1, 512)))
        return "checkpoint with bytes appended", False
    if how == 2:  # anywhere: headers, directory, padding, data
        for _ in range(rng.randrange(1, 8)):
            data[rng.randrange(len(data))] ^= rng.randrange(1, 256)
        path.write_bytes(bytes(data))
        return "checkpoint bytes flipped anywhere", False
    with zipfile.ZipFile(path) as archive:
        members = [i for i in archive.infolist() if i.file_size]
    member = rng.choice(members)
    start = member_data_offset(data, member)
    for _ in range(rng.randrange(1, 4)):
        data[start + rng.randrange(member.file_size)] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    return f"checkpoint member {member.filename} with bits flipped", True


DRIVER = r"""
import json, resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
resource.setrlimit(resource.RLIMIT_CPU, (int(sys.argv[2]), int(sys.argv[2])))
from corpusforge.cli.main import main
codes = []
for argv in json.loads(sys.argv[3]):
    if argv[0] == "load-checkpoint":  # what `train --resume` does with the newest checkpoint
        from corpusforge.core.errors import UserError
        from corpusforge.trainers.checkpoint import load_checkpoint
        try:
            load_checkpoint(argv[1])
            codes.append(0)
        except UserError as exc:
            print(f"corpusforge: error: {exc}", file=sys.stderr)
            codes.append(2)
        continue
    codes.append(main(argv))
    if argv[0] == "config" and codes[-1] == 0:  # and the Beam options it makes
        from corpusforge.config import load_config
        from corpusforge.core.beam_options import pipeline_options
        from corpusforge.core.errors import UserError
        try:
            pipeline_options(load_config(argv[2], argv[4::2]).beam)  # argv: config -c FILE --set S ...
        except UserError as exc:
            print(f"corpusforge: error: {exc}", file=sys.stderr)
            codes[-1] = 2
sys.exit(max(codes))
"""


def run_case(work: pathlib.Path, commands: list[list[str]]) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(MEMORY), str(SECONDS), json.dumps(commands)],
                          cwd=work, capture_output=True, text=True, timeout=SECONDS + 30,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return proc.returncode, proc.stderr


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    work = pathlib.Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    must_refuse = False
    draw = rng.random()
    if draw < 0.06:  # a training checkpoint (the seeds' other cases as they were before it was added)
        path = work / "checkpoints" / "step-00000001.pt"
        path.parent.mkdir()
        shutil.copyfile(_good_checkpoint(), path)
        what, must_refuse = corrupt_checkpoint(rng, path)
        commands = [["load-checkpoint", str(path)]]
    elif draw < 0.25:
        model = work / "model"
        shutil.copytree(_good_model(rng.choice(["gpt2", "gpt2", "bert", "t5", "bart"])), model)
        what = corrupt_model(rng, model)
        # config.json records the SHA-256 of the weights and tokenizer: a changed byte in either is refused
        must_refuse = what in ("model.safetensors bytes flipped", "tokenizer.json bytes flipped")
        commands = [rng.choice([["export", str(model), str(work / "export")],
                                ["generate", "--model", str(model), "--prompt", "hi", "--max-new-tokens", "2"],
                                ["fill-mask", "a [MASK] b", "--model", str(model)]])]
    else:
        text, sets = config_case(rng)
        (work / "case.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")
        what = f"case.yaml ({len(text.encode('utf-8', 'surrogateescape')):,} bytes), --set {sets}"
        must_refuse = any(_SETTINGS.get(key) in (".inf", "-.inf") for key in TRAINER_FLOATS)
        commands = [["config", "-c", str(work / "case.yaml"), *[x for s in sets for x in ("--set", s)]]]
    (work / "case.json").write_text(json.dumps({"what": what, "commands": commands}, indent=1))
    try:
        code, err = run_case(work, commands)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"configs: {what}: no answer within {SECONDS + 30} s") from None
    if code < 0 or code in (137, 152) or "MemoryError" in err or "Killed" in err:
        raise AssertionError(f"configs: {what}: killed by its limits (exit {code}): it exhausts time or memory\n{err[-1500:]}")
    errors = [line for line in err.splitlines() if line.strip()]
    if "Traceback" in err or code not in (0, 2) or len([e for e in errors if "error" in e.lower()]) > len(commands):
        raise AssertionError(f"configs: {what}: exit {code}, not a one-line error:\n{err[-3000:]}")
    if must_refuse and code != 2:
        raise AssertionError(f"configs: {what}: exit {code}: a file with changed bytes or an infinite trainer "
                             f"setting was used, not refused\n{err[-1500:]}")
