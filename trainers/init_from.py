"""``train --init-from HF_DIR``: start pretraining from a local transformers checkpoint (an export of ours, or
any GPT-2, Llama, BERT, T5 or BART checkpoint whose options our model computes exactly).

    model = initial_model("exports/x", objective, vocab, dropout=0.1)

The architecture comes from the checkpoint (``train.model.*`` does not apply); the run's tokenizer must be
the checkpoint's, so that token ids mean the same thing.
"""
from __future__ import annotations

import dataclasses
import pathlib

from corpusforge.core.errors import UserError
from corpusforge.trainers.hf_layout import build_model, from_transformers, model_config_from_hf
from corpusforge.trainers.model import Transformer

AUTO_CLASS = {"decoder": "AutoModelForCausalLM", "encoder": "AutoModelForMaskedLM",
              "encoder_decoder": "AutoModelForSeq2SeqLM"}


def initial_model(hf_dir: str, arch: str, vocab_size: int, length: int, dropout: float) -> Transformer:
    """Our model with the weights of the transformers checkpoint in ``hf_dir``, checked against what the run
    needs: an ``arch`` model, at least ``vocab_size`` embedding rows, ``length`` positions."""
    import transformers

    directory = pathlib.Path(hf_dir)
    config_path = directory / "config.json"
    from corpusforge.trainers import model_files

    if not config_path.is_file() or "model_type" not in model_files.read_json(config_path):
        raise UserError(f"train.init_from: {hf_dir} is not a transformers checkpoint directory (config.json with a "
                        "model_type); for a corpusforge run use --resume, or export it first (corpusforge export)")
    model_files.check_export_record(directory)
    with model_files.loading(directory):
        hf_config = transformers.AutoConfig.from_pretrained(directory)
    cfg = model_config_from_hf(hf_config)  # refuses a layout we cannot compute exactly
    build_model(cfg)  # and an option this model lacks, before the weights are read
    if cfg.arch != arch:
        raise UserError(f"train.init_from: {hf_dir} holds a {hf_config.model_type} ({cfg.arch}) model; the objective "
                        f"trains an {arch} model")
    if vocab_size > cfg.vocab_size:
        raise UserError(f"train.init_from: the run's tokenizer has {vocab_size} tokens, the checkpoint's embedding "
                        f"{cfg.vocab_size}; tokenize with the checkpoint's tokenizer "
                        f"(--set tokenize.tokenizer={directory / 'tokenizer.json'})")
    if cfg.position != "relative" and length > cfg.max_len:
        raise UserError(f"train.init_from: the checkpoint has {cfg.max_len} positions, the run needs {length}; "
                        f"lower train.seq_len")
    auto = getattr(transformers, AUTO_CLASS[arch])
    with model_files.loading(directory):
        if (directory / model_files.WEIGHTS).exists():  # shapes against the weights' header, before allocating
            model_files.check_model_files(lambda: auto.from_config(hf_config), directory / model_files.WEIGHTS)
        hf = auto.from_pretrained(directory, dtype="float32")
    model = from_transformers(hf)
    if dropout != cfg.dropout:
        model = _with_dropout(model, dropout)
    return model


def _with_dropout(model: Transformer, dropout: float) -> Transformer:
    fresh = Transformer(dataclasses.replace(model.cfg, dropout=dropout))
    fresh.load_state_dict(model.state_dict())
    return fresh
