"""A trained model as a Hugging Face transformers directory, and any model directory loaded for inference.

    export_model("runs/x/model", "exports/x")     # safetensors, config, generation config, tokenizer, card
    loaded = load_model("runs/x/model")           # or load_model("exports/x"): the same transformers model

The export loads with ``AutoModelForCausalLM`` / ``AutoModelForMaskedLM`` / ``AutoModelForSeq2SeqLM`` and
``AutoTokenizer`` and no custom code (hf_layout.py picks the class that computes exactly what ours does, or
refuses). Before the directory is moved into place, it is loaded back and its logits are checked against
corpusforge's own on a fixed input; the directory appears complete or not at all.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Any

import torch

from corpusforge.core import rundir
from corpusforge.core.run_lock import run_lock
from corpusforge.core.errors import UserError
from corpusforge.trainers import checkpoint as ckpt
from corpusforge.trainers import model_files
from corpusforge.trainers.hf_layout import match_layout, to_electra, to_transformers
from corpusforge.trainers.model import Transformer
from corpusforge.trainers.model_card import AUTO_CLASS, model_card

EXACT = 1e-4  # the largest logit difference the export accepts (float32, CPU)


@dataclasses.dataclass
class LoadedModel:
    """A transformers model and tokenizer, whichever kind of directory they came from."""

    model: Any  # transformers.PreTrainedModel, eval mode, float32
    tokenizer: Any  # transformers.PreTrainedTokenizerFast
    arch: str  # 'decoder' | 'encoder' | 'encoder_decoder'
    source: str  # 'corpusforge' (a run's model/) or 'transformers' (an export or any local checkpoint)


def directory_kind(model_dir: pathlib.Path) -> str:
    """``corpusforge`` (a run's model/ directory) or ``transformers`` (an export or any transformers checkpoint)."""
    config = model_dir / "config.json"
    if (model_dir / "finetune.json").is_file():
        raise UserError(f"{model_dir} is a fine-tuned task model; score it on labelled records with corpusforge "
                        "predict (accuracy, macro-F1), or pass its merged/ or model/ directory")
    if not config.is_file():
        what = model_files.not_a_folder(model_dir) or "holds no config.json"
        raise UserError(f"{model_dir} {what}; pass a run's model/ directory (corpusforge train) or "
                        f"an exported one (corpusforge export){model_files.run_model_hint(model_dir)}")
    data = model_files.read_json(config)
    if "model_type" in data:
        return "transformers"
    if "model" in data:
        return "corpusforge"
    raise UserError(f"{config} is neither corpusforge's nor transformers' model config")


def arch_of_config(hf_config) -> str:
    """What a transformers checkpoint is, from its config: seq2seq, a causal LM, or a masked LM."""
    if getattr(hf_config, "is_encoder_decoder", False):
        return "encoder_decoder"
    names = " ".join(getattr(hf_config, "architectures", None) or [])
    if "ForCausalLM" in names or "LMHeadModel" in names or getattr(hf_config, "is_decoder", False):
        return "decoder"
    if "ForMaskedLM" in names or "ForPreTraining" in names:
        return "encoder"
    return "decoder" if hf_config.model_type in ("gpt2", "llama") else "encoder"


def inference_device(preference: str = "cpu") -> torch.device:
    """Where inference runs: ``auto`` (CUDA when there is one), ``cpu`` or ``cuda`` (a one-line error without one)."""
    if preference == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda but no CUDA device is available; use --device auto or cpu")
    if preference not in ("auto", "cpu", "cuda"):
        raise UserError(f"--device must be auto, cpu or cuda, got {preference!r}")
    return torch.device("cuda" if preference == "cuda" or (preference == "auto" and torch.cuda.is_available()) else "cpu")


def model_device(model) -> torch.device:
    """The device of a model's weights (a transformers or peft model): where its inputs must go."""
    return next(model.parameters()).device


def load_model(model_dir: str | pathlib.Path, device: str = "cpu") -> LoadedModel:
    """A run's ``model/`` (converted in memory) or a transformers directory, with its tokenizer, its weights on
    ``device`` (``inference_device``)."""
    loaded = _load_model(model_dir)
    target = inference_device(device)
    if target.type != "cpu":
        loaded.model.to(target)
    return loaded


def _load_model(model_dir: str | pathlib.Path) -> LoadedModel:
    import transformers

    from corpusforge.tokenizer.packaging import as_transformers

    model_dir = pathlib.Path(model_dir)
    if directory_kind(model_dir) == "corpusforge":
        model, info = ckpt.load_pretrained(model_dir)
        special = info.get("special_tokens") or {}
        model_files.check_tokenizer(model_dir / "tokenizer.json")
        if _is_electra(model):  # the half with a masked-LM head: what fill-mask and evaluate can run
            tokenizer = as_transformers(str(model_dir / "tokenizer.json"), model_max_length=model.cfg.max_len)
            return LoadedModel(to_electra(model.eval(), special)[1], tokenizer, "encoder", "corpusforge")
        hf = to_transformers(model.eval(), special)
        if hf.can_generate():
            hf.generation_config = generation_config(model, special, info.get("tokenizer_vocab_size") or model.cfg.vocab_size)
        tokenizer = as_transformers(str(model_dir / "tokenizer.json"), model_max_length=model.cfg.max_len)
        return LoadedModel(hf, tokenizer, model.cfg.arch, "corpusforge")
    model_files.check_export_record(model_dir)
    with model_files.loading(model_dir):
        hf_config = transformers.AutoConfig.from_pretrained(model_dir)
    if "ElectraForPreTraining" in (getattr(hf_config, "architectures", None) or []):
        raise UserError(f"{model_dir} is an ELECTRA discriminator (one replaced-or-not logit per token, no masked-LM "
                        f"head); use its generator, {model_dir / 'generator'}, or fine-tune it with transformers")
    arch = arch_of_config(hf_config)
    auto = getattr(transformers, AUTO_CLASS[arch])
    with model_files.loading(model_dir):
        if (model_dir / model_files.WEIGHTS).exists():  # shapes against the weights' header, before allocating
            model_files.check_model_files(lambda: auto.from_config(hf_config), model_dir / model_files.WEIGHTS)
        if (model_dir / "tokenizer.json").exists():
            model_files.check_tokenizer(model_dir / "tokenizer.json")
        hf = auto.from_pretrained(model_dir, dtype=torch.float32).eval()
        tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    return LoadedModel(hf, tokenizer, arch, "transformers")


def generation_config(model: Transformer, special: dict[str, int], tokenizer_size: int):
    """What ``generate`` needs to start, stop and pad; ids the tokenizer never produces are suppressed."""
    from transformers import GenerationConfig

    cfg = model.cfg
    pad, eos, bos = special.get("pad"), special.get("eos"), special.get("bos")
    values: dict[str, Any] = {"eos_token_id": eos, "pad_token_id": pad if pad is not None else eos}
    if cfg.arch == "decoder":
        values["bos_token_id"] = bos if bos is not None else eos
    elif match_layout(cfg) == "t5":
        values["decoder_start_token_id"] = pad
    elif match_layout(cfg) == "bart":
        # Our BART decoder starts from </s> and its target begins with <s>.
        values.update(decoder_start_token_id=eos, bos_token_id=bos, forced_bos_token_id=bos)
    unused = list(range(tokenizer_size, cfg.vocab_size))  # rows added to round the vocabulary up
    if unused:
        values["suppress_tokens"] = unused
    return GenerationConfig(**{k: v for k, v in values.items() if v is not None})


def export_model(model_dir: str | pathlib.Path, out_dir: str | pathlib.Path, *, overwrite: bool = False) -> pathlib.Path:
    """Write the transformers directory of the corpusforge model in ``model_dir`` to ``out_dir``."""
    from corpusforge.tokenizer.packaging import save_transformers

    model_dir, out_dir = pathlib.Path(model_dir), pathlib.Path(out_dir)
    if directory_kind(model_dir) != "corpusforge":
        raise UserError(f"{model_dir} is already a transformers model; nothing to export")
    if out_dir.is_symlink():  # refused before anything is written through it (the lock file would be)
        raise UserError(f"{out_dir} is a symbolic link; corpusforge does not delete or write through links: remove "
                        "the link and run again")
    # a lock file alone is a killed command's (a live holder is named when export takes the lock): not content
    if out_dir.exists() and any(p.name != rundir.LOCK for p in out_dir.iterdir()):
        if not overwrite:
            raise UserError(f"{out_dir} exists and is not empty; pass --overwrite to replace it")
        # --overwrite deletes it: only an export of ours (never a home directory, a run, a model/ directory)
        if out_dir.is_symlink() or not all((out_dir / name).is_file() for name in ("corpusforge.json", "config.json")) \
                or directory_kind(out_dir) != "transformers":
            raise UserError(f"{out_dir} is not a directory that `corpusforge export` wrote, so --overwrite does not "
                            "delete it; choose a new or empty OUT_DIR")
    model, info = ckpt.load_pretrained(model_dir)
    model_files.check_tokenizer(model_dir / "tokenizer.json")
    model.eval()
    if _is_electra(model):
        return _export_electra(model, info, model_dir, out_dir)
    layout = match_layout(model.cfg)  # refuses before anything is written
    special = info.get("special_tokens") or {}
    hf = to_transformers(model, special)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(rundir.temporary_dir(f".{out_dir.name}.tmp-", str(out_dir.parent)))  # a new one, never reused
    try:
        if hf.can_generate():
            hf.generation_config = generation_config(model, special, info.get("tokenizer_vocab_size") or model.cfg.vocab_size)
        hf.save_pretrained(tmp)
        save_transformers(str(model_dir / "tokenizer.json"), str(tmp), model_max_length=model.cfg.max_len)
        (tmp / "README.md").write_text(model_card(model_dir, info, layout, model.cfg.arch, model.num_params()),
                                       encoding="utf-8")
        _publish(tmp, out_dir, info, lambda: check_export(model, tmp))
    finally:
        if tmp.exists():
            rundir.remove_temporary(str(tmp))
    return out_dir


def _is_electra(model) -> bool:
    return hasattr(model, "generator_cfg")


def _export_electra(model, info: dict, model_dir: pathlib.Path, out_dir: pathlib.Path) -> pathlib.Path:
    """ELECTRA: the discriminator (``ElectraForPreTraining``, the part kept for downstream use) in ``out_dir``, the
    generator (``ElectraForMaskedLM``) in ``out_dir/generator``; both checked against ours before the move."""
    from corpusforge.tokenizer.packaging import save_transformers

    special = info.get("special_tokens") or {}
    discriminator, generator = to_electra(model, special)  # refuses before anything is written
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(rundir.temporary_dir(f".{out_dir.name}.tmp-", str(out_dir.parent)))  # a new one, never reused
    try:
        for hf, where in ((discriminator, tmp), (generator, tmp / "generator")):
            where.mkdir(parents=True, exist_ok=True)
            hf.save_pretrained(where)
            save_transformers(str(model_dir / "tokenizer.json"), str(where), model_max_length=model.cfg.max_len)
        (tmp / "README.md").write_text(model_card(model_dir, info, "electra", "encoder",
                                                  sum(p.numel() for p in discriminator.parameters()),
                                                  auto_class="AutoModelForPreTraining"), encoding="utf-8")
        _publish(tmp, out_dir, info, lambda: check_electra_export(model, tmp), folders=("generator",))
    finally:
        if tmp.exists():
            rundir.remove_temporary(str(tmp))
    return out_dir


def _publish(tmp: pathlib.Path, out_dir: pathlib.Path, info: dict, check, folders: tuple[str, ...] = ()) -> None:
    """Finish the export written in ``tmp`` (a ``corpusforge.json`` in it and in each of its ``folders``, each
    recording every file of its folder: each folder a user can load is checked by its own record), check it against
    our model, and only then put it in ``out_dir``'s place (an earlier export there, checked by ``export_model``,
    goes first)."""
    # the export's own files' SHA-256 (not the source model's, which info carries): loading an export checks them
    for where, inner in [(tmp / folder, ()) for folder in folders] + [(tmp, folders)]:
        record = {**info, "every_file": True, "folders": list(inner),
                  "file_sha256": model_files.export_digests(where, skip=inner)}
        (where / model_files.EXPORT_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    check()
    # under out_dir's lock: an earlier export there (or a folder a fine-tuning holds) is never moved away and deleted
    # while another command writes into it; that command is named in one line
    with run_lock(str(out_dir), "export"):
        # an earlier export goes only if its marker records all it holds
        rundir.publish_dir(str(tmp), str(out_dir), locked=True)


@torch.no_grad()
def check_electra_export(model, directory: pathlib.Path) -> float:
    """Load both halves back with transformers' Auto classes; their logits must equal ours within ``EXACT``."""
    import transformers

    cfg = model.cfg
    ids = torch.randint(0, cfg.vocab_size, (2, min(cfg.max_len, 16)), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)
    mask[1, ids.size(1) // 2:] = 0
    keep = mask.bool()
    model = model.float()
    pairs = [(model.detect(ids, attention_mask=mask),
              transformers.AutoModelForPreTraining.from_pretrained(directory, dtype=torch.float32).eval()),
             (model.generator(ids, attention_mask=mask)[0],
              transformers.AutoModelForMaskedLM.from_pretrained(directory / "generator", dtype=torch.float32).eval())]
    difference = 0.0
    for ours, hf in pairs:
        difference = max(difference, float((ours[keep] - hf(input_ids=ids, attention_mask=mask).logits[keep]).abs().max()))
    if not difference <= EXACT:
        raise UserError(f"the exported ELECTRA model's logits differ from corpusforge's by {difference:.3g} "
                        f"(more than {EXACT}); the export was not written (weights of extreme size, as a damaged "
                        "model.safetensors has, do this; otherwise report it)")
    return difference


@torch.no_grad()
def check_export(model: Transformer, directory: pathlib.Path) -> float:
    """Load ``directory`` back with transformers' Auto classes and compare its logits to ``model``'s on a fixed
    input; raise if they differ by more than ``EXACT``. Returns the largest difference."""
    loaded = load_model(directory)
    cfg = model.cfg
    generator = torch.Generator().manual_seed(0)
    length = min(cfg.max_len, 16)
    ids = torch.randint(0, cfg.vocab_size, (2, length), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, length // 2:] = 0
    kwargs: dict[str, Any] = {"attention_mask": mask}
    if cfg.arch == "encoder_decoder":
        kwargs["decoder_input_ids"] = torch.randint(0, cfg.vocab_size, (2, 5), generator=generator)
    if cfg.arch == "decoder":  # padding a causal model's right end changes nothing before it
        kwargs = {}
    ours = model.float()(ids, **kwargs)[0]
    theirs = loaded.model(input_ids=ids, **kwargs).logits
    keep = mask.bool() if cfg.arch == "encoder" else slice(None)
    difference = float((ours[keep] - theirs[keep]).abs().max())
    if not difference <= EXACT:
        raise UserError(f"the exported model's logits differ from corpusforge's by {difference:.3g} "
                        f"(more than {EXACT}); the export was not written (weights of extreme size, as a damaged "
                        "model.safetensors has, do this; otherwise report it)")
    return difference
