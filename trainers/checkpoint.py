"""Checkpoints that resume exactly, and the final model in safetensors.

A checkpoint holds the model (no ``_orig_mod.``/``module.`` prefixes), optimizer, scheduler, loss scaler,
step, every rank's RNG states, the data position (examples consumed) and the config, all as tensors and plain
Python values: it loads with ``torch.load(weights_only=True)``, so a checkpoint from someone else cannot run
code. It is written to a temporary file, synced and renamed, so a crash (even SIGKILL) never leaves a
half-written checkpoint under the final name; a failed write (a full disk) removes the temporary file.
"""
from __future__ import annotations

import dataclasses
import errno
import json
import pathlib
import random
import re

import numpy as np
import torch

from corpusforge.core import rundir
from corpusforge.core.errors import UserError
from corpusforge.core.files import atomic_local_file, write_bytes_atomic
from corpusforge.trainers.model import ModelConfig, Transformer

WRAPPERS = ("_orig_mod", "_checkpoint_wrapped_module")  # torch.compile, activation checkpointing: any depth
PREFIXES = ("module.",)  # DDP: the outermost wrapper
NAME = re.compile(r"^step-(\d+)\.pt$")


def clean_state_dict(state: dict) -> dict:
    """Strip the names torch.compile, activation checkpointing and DDP add (``module._orig_mod.``, or
    ``encoder.blocks.0._orig_mod.`` for a compiled block)."""
    out = {}
    for key, value in state.items():
        parts = key.split(".")
        while parts and (parts[0] + "." in PREFIXES or parts[0] in WRAPPERS):
            parts = parts[1:]
        out[".".join(p for p in parts if p not in WRAPPERS)] = value
    return out


def capture_rng() -> dict:
    """Every RNG state as tensors and plain values (what ``weights_only`` loading accepts)."""
    version, mt_state, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = {"python": [version, list(mt_state), gauss],
             "numpy": {"kind": str(kind), "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                       "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict) -> None:
    version, mt_state, gauss = state["python"]
    random.setstate((version, tuple(mt_state), gauss))
    n = state["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"],
                         n["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(directory: str | pathlib.Path, step: int, state: dict, keep: int = 2) -> pathlib.Path:
    """Write ``step-XXXXXXXX.pt`` atomically and delete all but the newest ``keep``. A failed write (full disk,
    permission, read-only filesystem) leaves no temporary file and raises a UserError naming the path."""
    directory = pathlib.Path(directory)
    path = directory / f"step-{step:08d}.pt"
    writer = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with atomic_local_file(str(path)) as tmp, open(tmp, "wb") as handle:  # synced, renamed; removed on failure
            writer = _Writer(handle)
            torch.save(state, writer)
            handle.flush()
    except BaseException as exc:
        # torch.save turns a failed write into a RuntimeError ("unexpected pos"); the OSError is the cause.
        cause = exc if isinstance(exc, OSError) else getattr(writer, "error", None)
        if cause is None:
            raise
        raise UserError(f"could not write the checkpoint {path}: {cause.strerror or cause}"
                        f"{_WHAT_TO_DO.get(cause.errno, '')}") from exc
    for old in list_checkpoints(directory)[:-keep]:
        rundir.delete(old)
    return path


class _Writer:
    """A file handle for torch.save that keeps the OSError of a failed write (torch reports another error)."""

    def __init__(self, handle):
        self.handle, self.error = handle, None

    def write(self, data) -> int:
        try:
            return self.handle.write(data)
        except OSError as exc:
            self.error = exc
            raise

    def flush(self) -> None:
        self.handle.flush()


_WHAT_TO_DO = {
    errno.ENOSPC: "; free space on that disk (or lower train.keep_checkpoints), then continue with --resume",
    errno.EDQUOT: "; the disk quota is exhausted: free space, then continue with --resume",
    errno.EACCES: "; the directory is not writable: fix its permissions or choose another --run-dir",
    errno.EROFS: "; the filesystem is read-only: choose another --run-dir",
}


def remove_partial(directory: str | pathlib.Path) -> list[pathlib.Path]:
    """Delete the temporary files a killed run left mid-write (``.step-*.pt.tmp-*``); never a checkpoint."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    partial = [p for p in directory.iterdir() if p.name.startswith(".step-") and ".pt.tmp-" in p.name]
    for p in partial:
        rundir.delete(p)
    return partial


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
    """A checkpoint's contents, loaded with ``weights_only=True``: tensors and plain values only, never code.

    Its bytes are checked first against the CRC-32 that torch's zip archive records for each member: torch's
    reader does not check them, so a checkpoint with one changed bit in a tensor resumed without a sign and the
    run went on from other weights than the ones it saved."""
    import pickle
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"{path} is not a readable checkpoint ({detail}); delete it and resume from an earlier one, "
                        "or start a new run directory") from None
    if damaged is not None:
        raise UserError(f"{path} is damaged: its member {damaged} does not match the CRC-32 written with it; delete "
                        "the file and resume from an earlier checkpoint, or start a new run directory")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise UserError(f"refusing to load {path}: it holds Python objects other than tensors and plain values, "
                        "which could run code (not a checkpoint corpusforge wrote); delete it or start a new run "
                        "directory") from exc
    except RuntimeError as exc:  # not a zip archive torch wrote: truncated, corrupt or another format
        raise UserError(f"{path} is not a readable checkpoint ({str(exc).splitlines()[0]}); delete it and resume "
                        "from an earlier one, or start a new run directory") from exc


FINAL_FILES = ("model.safetensors", "tokenizer.json", "config.json")  # config.json last: it marks the model done


def save_pretrained(model: Transformer, directory: str | pathlib.Path, *, tokenizer: str | pathlib.Path | None,
                    info: dict) -> pathlib.Path:
    """``model.safetensors`` + ``tokenizer.json`` (and transformers' ``tokenizer_config.json``) + ``config.json``
    (architecture, objective, special tokens), each written atomically with the umask's permissions;
    ``config.json`` comes last, so a directory with it holds a whole model. A failed write (a full disk) is a
    UserError naming the directory."""
    from safetensors.torch import save

    directory = pathlib.Path(directory)
    # Tied embeddings share one parameter (the output layer reuses tok_emb.weight); ELECTRA's generator registers
    # the discriminator's embeddings under its own names too: each tensor is written once, under its first name.
    state, seen = {}, set()
    for k, v in clean_state_dict(model.state_dict()).items():
        if v.data_ptr() not in seen:
            seen.add(v.data_ptr())
            state[k] = v.detach().contiguous().cpu()
    from corpusforge.trainers.model_files import file_digests

    files = {"model.safetensors": save(state, metadata={"format": "pt"})}
    try:
        if tokenizer is not None:
            files["tokenizer.json"] = pathlib.Path(tokenizer).read_bytes()
        for name, data in files.items():
            write_bytes_atomic(str(directory / name), data)
        if tokenizer is not None:
            _tokenizer_config(directory, model.cfg.max_len)
        # What loading compares the files with: a changed byte of a tensor otherwise loads without a sign.
        config = {"model": dataclasses.asdict(model.cfg), **info, "file_sha256": file_digests(files)}
        write_bytes_atomic(str(directory / "config.json"), (json.dumps(config, indent=2) + "\n").encode("utf-8"))
    except OSError as exc:
        raise UserError(f"could not write the model to {directory}: {exc.strerror or exc}"
                        f"{_WHAT_TO_DO.get(exc.errno, '')}") from exc
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


# The sections of a saved model's config.json (save_pretrained) that loading, export and generation read.
SAVED_SECTIONS = {"model": dict, "objective": str, "family": str, "special_tokens": dict, "tokenizer_vocab_size": int,
                  "step": int, "train": dict, "electra": dict, "file_sha256": dict}


def load_pretrained(directory: str | pathlib.Path, device: str = "cpu") -> tuple[Transformer, dict]:
    """The model saved by ``save_pretrained`` and its config.json. A malformed config.json, weights that are
    truncated or of other shapes than config.json says: one line naming the file, checked on the ``meta``
    device before anything is allocated (``corpusforge.trainers.model_files``)."""
    from safetensors.torch import load_model

    from corpusforge.trainers import model_files

    directory = pathlib.Path(directory)
    config = model_files.read_json(directory / "config.json")
    if not isinstance(config.get("model"), dict):
        raise UserError(f"{directory / 'config.json'}: no \"model\" section; not a model corpusforge saved")
    model_files.check_sections(config, directory / "config.json", SAVED_SECTIONS)
    model_files.check_file_digests(directory, config.get("file_sha256"))
    special = config.get("special_tokens") or {}
    if not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in special.items()):
        raise UserError(f"{directory / 'config.json'}: section 'special_tokens' must map token names to ids; restore "
                        "the config.json of this model (re-export or re-train it)")

    def build():
        if config["model"].get("arch") == "bilm":  # ELMo
            from corpusforge.trainers.elmo import BiLM, ElmoConfig

            return BiLM(ElmoConfig(**{**config["model"], "filters": tuple(map(tuple, config["model"]["filters"]))}))
        if "electra" in config:  # objective rtd: generator + discriminator
            from corpusforge.trainers.electra import ReplacedTokenDetection

            e = config["electra"]
            return ReplacedTokenDetection(typed(config["model"]), typed(e["generator"]),
                                          share_embeddings=e["share_embeddings"],
                                          discriminator_weight=e["discriminator_weight"],
                                          sample_vocab_size=e["sample_vocab_size"])
        return Transformer(typed(config["model"]))

    def typed(fields):  # types and allowed values as the dataclass declares them, not whatever the JSON holds
        from corpusforge.core.config_loader import from_dict

        return from_dict(ModelConfig, fields, "config.json model")

    with model_files.loading(directory):
        model_files.check_model_files(build, directory / "model.safetensors", directory / "config.json")
        model = build()
        load_model(model, str(directory / "model.safetensors"), device=device)
    bad = next((name for name, p in model.named_parameters() if not torch.isfinite(p).all()), None)
    if bad is not None:
        raise UserError(f"{directory / 'model.safetensors'}: {bad} holds NaN or infinite values; the file is damaged "
                        "(copy it again) or the run diverged (train it again)")
    return model.to(device), config
