"""Checkpoints that resume exactly, and the final model in safetensors.

A checkpoint holds the model (no ``_orig_mod.``/``module.`` prefixes), optimizer, scheduler, loss scaler,
step, every rank's RNG states, the data position (examples consumed) and the config. It is written to a
temporary file and renamed, so a crash never leaves a half-written checkpoint under the final name.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import random
import re
import shutil

import numpy as np
import torch

from corpusforge.trainers.model import ModelConfig, Transformer

PREFIXES = ("_orig_mod.", "module.")
NAME = re.compile(r"^step-(\d+)\.pt$")


def clean_state_dict(state: dict) -> dict:
    """Strip the key prefixes torch.compile and DDP add (also when nested: ``module._orig_mod.``)."""
    out = {}
    for key, value in state.items():
        changed = True
        while changed:
            changed = False
            for prefix in PREFIXES:
                if key.startswith(prefix):
                    key, changed = key[len(prefix):], True
        out[key] = value
    return out


def capture_rng() -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(directory: str | pathlib.Path, step: int, state: dict, keep: int = 2) -> pathlib.Path:
    """Write ``step-XXXXXXXX.pt`` atomically and delete all but the newest ``keep``."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"step-{step:08d}.pt"
    tmp = directory / f".{path.name}.tmp-{os.getpid()}"
    torch.save(state, tmp)
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    for old in list_checkpoints(directory)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def list_checkpoints(directory: str | pathlib.Path) -> list[pathlib.Path]:
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def latest_checkpoint(directory: str | pathlib.Path) -> pathlib.Path | None:
    found = list_checkpoints(directory)
    return found[-1] if found else None


def load_checkpoint(path: str | pathlib.Path) -> dict:
    # Our own files; RNG states hold numpy arrays, which weights_only loading refuses.
    return torch.load(path, map_location="cpu", weights_only=False)


def save_pretrained(model: Transformer, directory: str | pathlib.Path, *, tokenizer: str | pathlib.Path | None,
                    info: dict) -> pathlib.Path:
    """``model.safetensors`` + ``config.json`` (architecture, objective, special tokens) + ``tokenizer.json`` and
    transformers' ``tokenizer_config.json``."""
    from safetensors.torch import save_model

    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / ".model.safetensors.tmp"
    save_model(model, str(tmp), metadata={"format": "pt"})  # handles the tied embedding/output weight
    os.replace(tmp, directory / "model.safetensors")
    config = {"model": dataclasses.asdict(model.cfg), **info}
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if tokenizer is not None:
        shutil.copyfile(tokenizer, directory / "tokenizer.json")
        _tokenizer_config(directory, model.cfg.max_len)
    return directory / "model.safetensors"


def _tokenizer_config(directory: pathlib.Path, max_len: int) -> None:
    """transformers' tokenizer_config.json beside tokenizer.json, so AutoTokenizer loads the model directory
    with its special tokens and model_max_length (a tokenizer of no known family gets none)."""
    from corpusforge.tokenizer.packaging import save_transformers
    from corpusforge.tokenizer.special_tokens import read_special_tokens

    try:
        read_special_tokens(str(directory / "tokenizer.json"))
    except ValueError:
        return
    save_transformers(str(directory / "tokenizer.json"), str(directory), model_max_length=max_len,
                      keep_tokenizer_json=True)


def load_pretrained(directory: str | pathlib.Path, device: str = "cpu") -> tuple[Transformer, dict]:
    """The model saved by ``save_pretrained`` and its config.json."""
    from safetensors.torch import load_model

    directory = pathlib.Path(directory)
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    model = Transformer(ModelConfig(**config["model"]))
    load_model(model, str(directory / "model.safetensors"), device=device)
    return model.to(device), config
