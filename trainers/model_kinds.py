"""The kinds of model an objective trains: a ``Transformer``, ELECTRA's generator + discriminator, ELMo's biLM.

A kind builds the model's config and module (whose ``forward`` returns ``(logits, loss)``: the objective's loss),
says what the model logs beyond the loss, what it cannot do (start from a transformers checkpoint, be sharded)
and what config.json needs to rebuild it. The objective registry (registry.py) names one kind per objective;
the training loop asks the kind and never the objective's name.
"""
from __future__ import annotations

import dataclasses
import pathlib

import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.config import TrainConfig
from corpusforge.trainers.model import FAMILIES, ModelConfig, Transformer, model_config
from corpusforge.trainers.objectives import Objective
from corpusforge.trainers.vocab import Vocabulary

_ELMO_ONLY = ("the elmo family trains with objective bilm and bilm needs the elmo family; set "
              "train.objective=bilm with train.model.family unset (or elmo), or choose another objective")


def padded_vocab_size(tc: TrainConfig, vocab: Vocabulary) -> int:
    """The vocabulary rounded up to ``train.model.vocab_multiple``."""
    return -(-vocab.size // tc.model.vocab_multiple) * tc.model.vocab_multiple


class ModelKind:
    """A Transformer of one architecture (``encoder``, ``decoder``, ``encoder_decoder``) from a family's recipe."""

    init_from = True  # can start from a transformers checkpoint (train.init_from)
    shardable = True  # has blocks that FSDP shards and activation checkpointing wraps

    def __init__(self, arch: str, title: str = ""):
        self.arch, self.title = arch, title or f"{arch} Transformer"

    def config(self, tc: TrainConfig, objective: Objective, vocab: Vocabulary):
        """The objective's family recipe at the configured size, with the config's overrides."""
        m = tc.model
        family = m.family or objective.family
        if family == "elmo":
            raise UserError(_ELMO_ONLY)
        arch = FAMILIES[family]["arch"]
        if arch != self.arch:
            raise UserError(f"train.model.family {family} is an {arch} model; objective {objective.name} needs an "
                            f"{self.arch} (e.g. family {objective.family}), or leave train.model.family unset")
        pairs = objective.pairs  # both NSP and SOP train the pooled pair classifier
        try:
            return model_config(family, m.size, vocab_size=padded_vocab_size(tc, vocab),
                                max_len=max(tc.seq_len, objective.decoder_length), position=m.position,
                                norm=m.norm, norm_position=m.norm_position, activation=m.activation,
                                tie_embeddings=m.tie_embeddings, bias=m.bias, d_model=m.d_model,
                                n_layers=m.n_layers, n_heads=m.n_heads, d_ff=m.d_ff, dropout=m.dropout,
                                num_segments=2 if pairs else 0, sentence_head=pairs)
        except ValueError as exc:
            raise UserError(f"train.model: {exc}") from None

    def build(self, tc: TrainConfig, mcfg, vocab: Vocabulary, tokenizer: pathlib.Path | None = None
              ) -> torch.nn.Module:
        return Transformer(mcfg)

    def check_resume(self, saved: dict, tc: TrainConfig, checkpoint: pathlib.Path) -> None:
        """Refuse to resume ``checkpoint`` (whose ``train`` config is ``saved``) where the model config alone does
        not show that the run changed."""

    def extra_flops(self, model: torch.nn.Module, batch: dict) -> float:
        """Training FLOPs of a batch beyond the model config's own pass."""
        return 0.0

    def metric_sums(self, model: torch.nn.Module) -> torch.Tensor | None:
        """The sums the model's last forward left behind for ``metrics`` (None: it logs the loss only)."""
        return None

    def metrics(self, sums: list[float]) -> dict:
        """Logged metrics from ``metric_sums`` added up over steps and processes."""
        return {}

    def evaluation(self, loss: float, correct: float, count: float, sums: list[float] | None) -> dict:
        """An evaluation's metrics beyond its loss: perplexity and accuracy of the predicted tokens."""
        import math

        return {"ppl": math.exp(min(loss, 50.0)), "accuracy": correct / max(count, 1.0)}

    def describe_eval(self, result: dict) -> str:
        return f"val loss {result['loss']:.4f} (ppl {result['ppl']:.2f}, accuracy {result['accuracy']:.3f})"

    def saved_info(self, model: torch.nn.Module) -> dict:
        """What config.json needs beyond the model config to rebuild the model."""
        return {}


class ElectraKind(ModelKind):
    """ELECTRA: the recipe is the discriminator's; the generator is derived from it (trainers/electra.py)."""

    init_from = False

    def __init__(self):
        super().__init__("encoder", "ELECTRA")

    def config(self, tc, objective, vocab):
        from corpusforge.trainers.electra import discriminator_config

        return discriminator_config(super().config(tc, objective, vocab))

    def build(self, tc, mcfg, vocab, tokenizer=None):
        from corpusforge.trainers.electra import ReplacedTokenDetection, generator_config

        return ReplacedTokenDetection(mcfg, generator_config(mcfg, tc.rtd.generator_fraction, tc.rtd.share_embeddings),
                                      share_embeddings=tc.rtd.share_embeddings,
                                      discriminator_weight=tc.rtd.discriminator_weight, sample_vocab_size=vocab.size)

    def check_resume(self, saved, tc, checkpoint):
        """The generator and the loss weight are not in the discriminator's config: a generator of another width
        would not load; another weight would silently change the objective mid-run."""
        from corpusforge.core.config_loader import to_dict

        was = saved.get("rtd", {})
        changed = [f"train.rtd.{key} was {was.get(key)}, now {value}" for key, value in to_dict(tc.rtd).items()
                   if was.get(key) != value]
        if changed:
            raise UserError(f"--resume: {checkpoint} was trained with other ELECTRA settings ({'; '.join(changed)}); "
                            "resume with the checkpoint's train.rtd.* settings, or start a new run directory")

    def extra_flops(self, model, batch):
        from corpusforge.trainers.metrics import train_flops

        ids = batch["input_ids"]  # the generator's pass
        return train_flops(model.generator_cfg, ids.size(0), ids.size(1), 0, batch["labels"].numel())

    def metric_sums(self, model):
        return getattr(model, "detection_sums", None)

    def metrics(self, sums):
        from corpusforge.trainers.electra import detection_metrics

        return detection_metrics(sums)

    def evaluation(self, loss, correct, count, sums):
        """The loss mixes two halves, so its exponential is no perplexity: each half by itself."""
        return {**self.metrics(sums), "generator_accuracy": correct / max(count, 1.0)}

    def describe_eval(self, result):
        return (f"val loss {result['loss']:.4f} (generator MLM loss {result['generator_loss']:.4f}, accuracy "
                f"{result['generator_accuracy']:.3f}; discriminator loss {result['discriminator_loss']:.4f}, "
                f"accuracy {result['discriminator_accuracy']:.3f} with {result['replaced_share']:.3f} replaced)")

    def saved_info(self, model):
        return {"electra": {"generator": dataclasses.asdict(model.generator_cfg),
                            "share_embeddings": model.share_embeddings,
                            "discriminator_weight": model.discriminator_weight,
                            "sample_vocab_size": model.sample_vocab_size}}


class ElmoKind(ModelKind):
    """ELMo's biLM: character CNN and LSTMs, its character table spelled from the tokenizer."""

    init_from = False
    shardable = False

    def __init__(self):
        super().__init__("bilm", "ELMo's LSTMs")

    def config(self, tc, objective, vocab):
        from corpusforge.trainers.elmo import elmo_config

        if (tc.model.family or objective.family) != "elmo":
            raise UserError(_ELMO_ONLY)
        try:
            return elmo_config(tc.model.size, vocab_size=padded_vocab_size(tc, vocab), max_len=tc.seq_len,
                               dropout=tc.model.dropout)
        except ValueError as exc:
            raise UserError(f"train.model.size: {exc}") from None

    def build(self, tc, mcfg, vocab, tokenizer=None):
        from tokenizers import Tokenizer

        from corpusforge.trainers.elmo import BiLM, spell

        model = BiLM(mcfg)
        if tokenizer is not None:
            tok = Tokenizer.from_file(str(tokenizer))
            words = [tok.id_to_token(i) or "" for i in range(mcfg.vocab_size)]
            table = spell(words, tok.id_to_token(vocab.bos) if vocab.bos is not None else None,
                          tok.id_to_token(vocab.eos) if vocab.eos is not None else None, mcfg.max_chars)
            model.tokens.spellings.copy_(table)
        return model
