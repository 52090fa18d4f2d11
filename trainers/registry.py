"""The objective registry: everything the trainer, the config and the CLI know about an objective.

    spec = OBJECTIVES["rtd"]
    spec.batches          # ReplacedTokens: how a window becomes an example and examples a batch (objectives.py)
    spec.family           # bert: the model recipe it trains by default
    spec.model            # ElectraKind: the model's config and module (its forward computes the loss), the
                          # metrics it logs beyond the loss, what it refuses (model_kinds.py)
    spec.export           # ElectraForPreTraining: the transformers class `corpusforge export` writes

A new objective is a batch builder in objectives.py and one entry here (and its name in ``train.objective``'s
Literal, which a test holds to this table); trainers/train.py and the CLI read the table.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from corpusforge.core.errors import UserError
from corpusforge.trainers.config import TrainConfig
from corpusforge.trainers.model_kinds import ElectraKind, ElmoKind, ModelKind
from corpusforge.trainers.objectives import (BidirectionalLM, CausalLM, Denoising, MaskedLM, Objective, PrefixLM,
                                             ReplacedTokens, SpanCorruption)
from corpusforge.trainers.vocab import Vocabulary


@dataclasses.dataclass(frozen=True)
class ObjectiveSpec:
    batches: type[Objective]  # the batch builder; its class attributes name the objective and its model family
    options: Callable[[TrainConfig], tuple]  # the config sections the batch builder takes
    model: ModelKind  # the model it trains, the loss that model's forward computes, its logged metrics
    export: str | None  # the transformers class an export loads as (None: no transformers layout)

    @property
    def name(self) -> str:
        return self.batches.name

    @property
    def family(self) -> str:
        return self.batches.family

    def objective(self, vocab: Vocabulary, seq_len: int, config: TrainConfig) -> Objective:
        return self.batches(vocab, seq_len, *self.options(config))

    def vocabulary(self, vocab: Vocabulary, seq_len: int, config: TrainConfig) -> Vocabulary:
        return self.batches.vocabulary(vocab, seq_len, *self.options(config))


ENCODER, DECODER, ENCODER_DECODER = ModelKind("encoder"), ModelKind("decoder"), ModelKind("encoder_decoder")

OBJECTIVES: dict[str, ObjectiveSpec] = {spec.name: spec for spec in (
    ObjectiveSpec(MaskedLM, lambda c: (c.mlm,), ENCODER, "AutoModelForMaskedLM"),
    ObjectiveSpec(ReplacedTokens, lambda c: (c.mlm,), ElectraKind(), "ElectraForPreTraining"),
    ObjectiveSpec(SpanCorruption, lambda c: (c.span,), ENCODER_DECODER, "AutoModelForSeq2SeqLM"),
    ObjectiveSpec(Denoising, lambda c: (c.bart,), ENCODER_DECODER, "AutoModelForSeq2SeqLM"),
    ObjectiveSpec(CausalLM, lambda c: (), DECODER, "AutoModelForCausalLM"),
    ObjectiveSpec(PrefixLM, lambda c: (), DECODER, "AutoModelForCausalLM"),
    ObjectiveSpec(BidirectionalLM, lambda c: (), ElmoKind(), None),
)}

ARCH_OF_OBJECTIVE = {name: spec.model.arch for name, spec in OBJECTIVES.items()}


def objective_spec(name: str) -> ObjectiveSpec:
    if name not in OBJECTIVES:
        raise UserError(f"unknown objective {name!r}; choose one of {', '.join(OBJECTIVES)}")
    return OBJECTIVES[name]


def build_objective(name: str, vocab: Vocabulary, seq_len: int, config: TrainConfig | None = None) -> Objective:
    return objective_spec(name).objective(vocab, seq_len, config or TrainConfig())


def prepare_vocabulary(vocab: Vocabulary, objective: str, seq_len: int, config: TrainConfig | None = None
                       ) -> Vocabulary:
    """The vocabulary an objective trains with: span corruption adds sentinels the tokenizer lacks."""
    return objective_spec(objective).vocabulary(vocab, seq_len, config or TrainConfig())
