"""Reading a model or tokenizer directory someone handed us: one line naming the file, never a traceback, and
nothing allocated for a model that its weights do not back.

Every command that loads a model (generate, fill-mask, evaluate, export, embed, finetune, predict, and
train.init_from) reads it through ``loading`` and, before it builds anything, ``check_model_files``:

- ``config.json`` and ``tokenizer.json`` are parsed here (``read_json``), so a malformed one is
  "<path>: not valid JSON ...", not a ``JSONDecodeError`` from deep inside transformers;
- the weights file's header is read with ``safetensors.safe_open`` (no tensor is read): a truncated or
  foreign file is refused, and the sizes ``config.json`` asks for are compared with the tensors the file
  holds *before* the model is built: a config whose dimensions disagree (824 GB asked of a 1 MB file)
  is refused instead of allocated;
- anything else a loader raises (a tokenizer whose regex makes the Rust side panic, a shape transformers
  rejects) becomes one line naming the directory (``loading``);
- a model corpusforge saved records the SHA-256 of its weights and tokenizer in ``config.json``
  (``file_digests``): a copy with any byte changed is refused (``check_file_digests``). safetensors holds no
  checksum and a changed byte of a tensor loads and generates without a sign. An export carries a
  ``corpusforge.json`` in each of its folders recording every file in it (``check_export_record``): a changed,
  missing or added file is refused; a transformers directory from elsewhere has no record and is read as it is.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import pathlib
from typing import Any, Iterator

from corpusforge.core.errors import UserError
from corpusforge.core.files import sha256_of

WEIGHTS = "model.safetensors"


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:160] + "…"


@contextlib.contextmanager
def loading(path: str | pathlib.Path, what: str = "model") -> Iterator[None]:
    """Whatever goes wrong while the block reads the model or tokenizer at ``path``: one ``UserError`` line
    naming it. ``BaseException``: the tokenizers library's Rust panics arrive as ``PanicException``, which
    is not an ``Exception``; Ctrl-C and exit pass through."""
    try:
        yield
    except (UserError, KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except MemoryError:
        raise UserError(f"{path}: loading this {what} ran out of memory; check its config.json sizes") from None
    except BaseException as exc:  # noqa: BLE001 - see the docstring
        raise UserError(f"{path}: cannot load this {what} ({type(exc).__name__}: {_short(exc)}); check that it is a "
                        f"whole, unmodified {what} directory (re-export or re-train it)") from None


def not_a_folder(directory: str | pathlib.Path) -> str | None:
    """What a model path is when it is no folder (``does not exist``, ``is a file, not a model folder``, ``is a
    link that leads to no folder``), to say instead of "holds no config.json"; None for a folder."""
    path = pathlib.Path(directory)
    if path.is_dir():
        return None
    if path.is_symlink():
        return "is a link that leads to no folder"
    if path.exists():
        return "is a file, not a model folder"
    return "does not exist"


def run_model_hint(directory: str | pathlib.Path) -> str:
    """``"; it is a run directory: pass RUN/model"`` when ``directory`` holds no config.json but its ``model/``
    does (every command's -o is the run, so ``export RUN OUT`` and ``--model RUN`` are the newcomer's first try)."""
    model = pathlib.Path(directory) / "model"
    return f"; {directory} is a run directory: pass {model}" if (model / "config.json").is_file() else ""


def read_json(path: str | pathlib.Path, what: str = "config.json") -> dict[str, Any]:
    """A JSON object from ``path``, or one line naming it."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise UserError(f"{path} does not exist or is not a file; pass a model directory with its {what}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise UserError(f"{path}: not valid JSON ({_short(exc)}); restore the {what} of this model") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object, got {type(data).__name__}; restore the {what} of this model")
    return data


def check_sections(data: dict[str, Any], path: str | pathlib.Path, types: dict[str, type | tuple[type, ...]]) -> None:
    """Every section of ``data`` that ``types`` names, when present, of its type (a mapping of str to int for
    ``dict[str, int]``-like sections is checked by its users): one line naming the file and the section, so no
    later step meets an ``int`` where it reads a mapping."""
    for key, expected in types.items():
        if key in data and data[key] is not None and not isinstance(data[key], expected):
            names = " or ".join(t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,)))
            raise UserError(f"{path}: section {key!r} is of type {type(data[key]).__name__}, expected {names}; restore the "
                            "config.json of this model (re-export or re-train it)")


DIGESTED = ("model.safetensors", "tokenizer.json")  # the files whose SHA-256 a saved model's config.json records
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def file_digests(files: dict[str, bytes]) -> dict[str, str]:
    """``{name: SHA-256 hex}`` of the files about to be written, for ``config.json``'s ``file_sha256``."""
    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


def check_file_digests(directory: str | pathlib.Path, recorded: Any, record: str = "config.json") -> None:
    """Refuse a file of a saved model whose bytes are not the ones it was saved with: ``recorded`` is the
    ``file_sha256`` section of ``record`` (``config.json`` of a model ``train`` saved, ``corpusforge.json`` of an
    export; None for a model saved before it was recorded: nothing to compare), names relative to ``directory``.
    A missing file is left to whoever reads it (its own one line). Reads each file once, ~1 s per GB."""
    if recorded is None:
        return
    directory = pathlib.Path(directory)
    _check_digest_section(directory, recorded, record)
    for name, expected in sorted(recorded.items()):
        path = directory / name
        if not path.is_file():
            continue
        try:
            digest = sha256_of(path)
        except OSError as exc:
            raise UserError(f"{path}: cannot read it ({exc.strerror or exc}); check the model directory's "
                            "permissions") from None
        if digest != expected:
            raise UserError(f"{path} is not the file this model was saved with (its SHA-256 differs from the one "
                            f"{record} records): the copy is damaged; copy the model again, or re-export or "
                            "re-train it")


def _check_digest_section(directory: pathlib.Path, recorded: Any, record: str) -> None:
    if not isinstance(recorded, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and _SHA256.match(v) and k and not pathlib.PurePath(k).is_absolute()
            and ".." not in pathlib.PurePath(k).parts for k, v in recorded.items()):
        raise UserError(f"{directory / record}: section 'file_sha256' must map file names to SHA-256 hex digests; "
                        f"restore the {record} of this model (re-export or re-train it)")


EXPORT_RECORD = "corpusforge.json"  # what `corpusforge export` writes in every folder of a transformers layout
UNRECORDED = ("README.md",)  # a model card: read by people, never by a loader, and theirs to edit


def folder_files(directory: str | pathlib.Path, skip: tuple[str, ...] = ()) -> list[str]:
    """Every name under ``directory`` (relative, ``/``-separated, depth first) a loader could read: files, and
    whatever else stands where one could (a FIFO, a link to a folder or to nothing), folders walked, except hidden
    names (``.corpusforge-run.json``), ``README.md``, the top's ``corpusforge.json`` and the ``skip`` folders."""
    directory = pathlib.Path(directory)
    out = []
    for path in sorted(directory.iterdir()):
        name = path.name
        if name.startswith(".") or name in UNRECORDED or name in skip or name == EXPORT_RECORD:
            continue
        if path.is_dir() and not path.is_symlink():
            out += [f"{name}/{inner}" for inner in folder_files(path)]
        else:
            out.append(name)
    return out


def export_digests(directory: str | pathlib.Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """``{relative name: SHA-256}`` of every file under ``directory`` (``folder_files``) that a model directory
    about to be published holds, for its ``corpusforge.json`` (or a fine-tune's ``finetune.json``): a changed
    ``config.json``, ``generation_config.json``, tokenizer or adapter setting changes what the model computes as
    surely as a changed weight."""
    directory = pathlib.Path(directory)
    return {name: sha256_of(directory / name) for name in folder_files(directory, skip)}


def check_every_file(directory: str | pathlib.Path, recorded: Any, record: str = EXPORT_RECORD,
                     skip: tuple[str, ...] = ()) -> None:
    """``directory`` holds the files ``recorded`` (``export_digests``) and nothing else a loader could read: each a
    regular file with its recorded SHA-256. A missing file (transformers would fall back to defaults: no
    ``generation_config.json``, no ``tokenizer_config.json``), an unrecorded one (an ``adapter_config.json`` makes
    transformers load an adapter; a ``model.safetensors.index.json`` other weights), a folder, a FIFO or a dangling
    link where a file was: one line."""
    directory = pathlib.Path(directory)
    _check_digest_section(directory, recorded, record)
    try:
        found = folder_files(directory, skip)
    except OSError as exc:
        raise UserError(f"{directory}: cannot list it ({exc.strerror or exc}); check the model directory's "
                        "permissions") from None
    for name in found:
        if name not in recorded:
            raise UserError(f"{directory / name} is not a file this model was saved with ({record} does not record "
                            "it): remove it, or copy the model again, or re-export or re-train it")
    for name in sorted(recorded):
        path = directory / name
        if not path.is_file():
            state = "missing" if not os.path.lexists(path) else "not a regular file"
            raise UserError(f"{path} is {state}, but {record} records it: the copy is damaged or incomplete; copy "
                            "the model again, or re-export or re-train it")
    check_file_digests(directory, recorded, record)


def check_export_record(directory: str | pathlib.Path) -> None:
    """A transformers directory ``corpusforge export`` wrote: its files against its ``corpusforge.json`` (any other
    transformers directory has no record and is read as it is). Every folder an export writes has its own record
    listing every file in it (``every_file``: ``check_every_file``); a record written before that (no
    ``every_file``) lists the weights and tokenizer of the export and of its folders, and a folder of such an
    export loaded on its own (an ELECTRA ``generator/``) is checked against the entries under its name in the
    parent's record."""
    directory = pathlib.Path(directory)
    record = directory / EXPORT_RECORD
    if os.path.lexists(record):
        data = read_json(record, EXPORT_RECORD)
        if data.get("every_file") is True:
            folders = data.get("folders") or []
            if not isinstance(folders, list) or not all(isinstance(f, str) and f and "/" not in f for f in folders):
                raise UserError(f"{record}: section 'folders' must list folder names; restore the {EXPORT_RECORD} "
                                "of this model (re-export it)")
            check_every_file(directory, data.get("file_sha256"), EXPORT_RECORD, skip=tuple(folders))
        else:
            check_file_digests(directory, data.get("file_sha256"), EXPORT_RECORD)
        return
    parent_record = directory.resolve().parent / EXPORT_RECORD
    if not parent_record.is_file():
        return
    try:  # the folder's own files are what is checked: a parent record that is not an export's says nothing of them
        parent = read_json(parent_record, EXPORT_RECORD)
    except UserError:
        return
    name = directory.resolve().name
    if parent.get("every_file") is True:  # an export that writes a record in each of its folders
        if name in (parent.get("folders") or []):
            raise UserError(f"{record} is missing, but {parent_record} says the export wrote one there: the copy is "
                            "damaged or incomplete; copy the model again, or re-export it")
        return
    recorded = parent.get("file_sha256")
    if not isinstance(recorded, dict):
        return
    recorded = {key: digest for key, digest in recorded.items() if isinstance(key, str) and key.startswith(f"{name}/")}
    if recorded:
        check_file_digests(parent_record.parent, recorded, EXPORT_RECORD)


def weights_header(path: str | pathlib.Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """``{tensor name: (shape, dtype)}`` from a safetensors file's header, without reading a tensor; a truncated
    or foreign file is refused in one line."""
    from safetensors import safe_open

    path = pathlib.Path(path)
    if not path.is_file():
        raise UserError(f"{path} does not exist; the model directory has no weights (re-train or re-export it)")
    try:
        with safe_open(str(path), framework="pt") as f:
            return {name: (tuple(f.get_slice(name).get_shape()), str(f.get_slice(name).get_dtype()))
                    for name in f.keys()}
    except BaseException as exc:  # noqa: BLE001 - safetensors raises its own error types, and panics
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise UserError(f"{path}: not a readable safetensors file ({_short(exc)}); it may be truncated: copy or "
                        "re-export the model again") from None


_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2}


def check_weights(model, path: str | pathlib.Path, config_path: str | pathlib.Path | None = None,
                  header: dict[str, tuple[tuple[int, ...], str]] | None = None) -> None:
    """Refuse when ``model`` (built on the ``meta`` device: shapes only, nothing allocated) disagrees with the
    weights at ``path``: a tensor of another shape, or (names aside, for a transformers layout) far more
    parameters than the file holds. ``config_path`` is named as the file to fix."""
    if header is None:
        header = weights_header(path)  # a freshly built model: its names carry no compile or DDP wrapper prefixes
    expected = {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}
    config = config_path or pathlib.Path(path).with_name("config.json")
    for name, (shape, _) in sorted(header.items()):
        if name in expected and expected[name] != shape:
            raise UserError(f"{config} disagrees with {path}: {name} is {list(shape)} in the weights but "
                            f"{list(expected[name])} by the config; restore the model's config.json")
    stored = sum(_numel(shape) for shape, _ in header.values())
    asked = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    if asked > 2 * stored + (1 << 20):
        raise UserError(f"{config} asks for a model of {asked:,} parameters but {path} holds {stored:,}; restore the "
                        "model's config.json (nothing was allocated)")


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def meta_model(build):
    """``build()`` on the ``meta`` device: the model's shapes without its memory."""
    import torch

    with torch.device("meta"):
        return build()


class _PastBudget(UserError):
    pass


def check_model_files(build, path: str | pathlib.Path, config_path: str | pathlib.Path | None = None) -> None:
    """``check_weights`` of the model ``build()`` makes, built on the ``meta`` device under a budget the weights at
    ``path`` set: the meta device allocates no tensor, but building still costs time and memory per module, so a
    config.json that asks for 10^12 layers would build for ever before any shape is compared. Every parameter the
    build registers is counted (a hook on ``register_parameter``, this thread only); past twice the file's tensors
    (tied weights are stored once, registered twice) the build stops with one line. Sizes (d_model, vocab_size) cost
    nothing on ``meta``: ``check_weights`` compares them."""
    import threading

    import torch

    header = weights_header(path)
    stored = sum(_numel(shape) for shape, _ in header.values())
    max_tensors = 2 * len(header) + 64
    config = config_path or pathlib.Path(path).with_name("config.json")
    owner, seen = threading.get_ident(), [0]

    def count(module, name, param):
        if param is None or threading.get_ident() != owner:
            return None
        seen[0] += 1
        if seen[0] > max_tensors:
            raise _PastBudget(f"{config} describes a model of more than {max_tensors:,} weight tensors, but {path} "
                              f"holds {len(header):,} ({stored:,} parameters); restore the model's config.json "
                              "(nothing was allocated)")
        return None

    handle = torch.nn.modules.module.register_module_parameter_registration_hook(count)
    try:
        model = meta_model(build)
    finally:
        handle.remove()
    check_weights(model, path, config_path, header=header)


def check_tokenizer(path: str | pathlib.Path):
    """The ``tokenizers.Tokenizer`` at ``path`` (a tokenizer.json), loaded and tried on a short text, or one
    line naming it: malformed JSON, an unknown model, a pre-tokenizer regex the Rust side cannot compile or
    panics on."""
    from tokenizers import Tokenizer

    path = pathlib.Path(path)
    read_json(path, "tokenizer.json")
    with loading(path, "tokenizer"):
        tokenizer = Tokenizer.from_file(str(path))
        tokenizer.encode("Hello, world. 12 34")
    return tokenizer
