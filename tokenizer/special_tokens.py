"""The one definition of special tokens per model family, and how to read their ids back from a tokenizer.

A *family* names the kind of model a tokenizer is trained for; it decides which special tokens exist, their
order (they get the lowest ids, in this order), and the post-processing template that wraps a sequence:

=========  ==========================================================  ==============================
family     tokens (id order)                                           single sequence
=========  ==========================================================  ==============================
encoder    ``[PAD] [UNK] [CLS] [SEP] [MASK]`` (BERT, MLM)              ``[CLS] $A [SEP]``
t5         ``<pad> </s> <unk>``; ``<extra_id_99> ... <extra_id_0>``     ``$A </s>``
           at the top of the vocabulary (T5's order: sentinel 0 has
           the highest id, the rest count down)
bart       ``<s> <pad> </s> <unk> <mask>`` (denoising)                 ``<s> $A </s>``
decoder    ``<|endoftext|>`` (GPT)                                     ``$A`` (nothing added)
elmo       ``<pad> <unk> <S> </S>`` (ELMo's word-level biLM)           ``<S> $A </S>``
=========  ==========================================================  ==============================

``<mask>`` and the sentinels strip the space before them (``lstrip``, as transformers' BART and T5 tokenizers
do): a masked word's own leading space belongs to the word the model predicts, so "a <mask> b" is encoded as
training saw it, with no lone space token before the mask.

Ids are never constants: code that needs them calls :func:`read_special_tokens` on the saved
``tokenizer.json`` (the token shards' manifest carries the same mapping).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal, Mapping

Family = Literal["encoder", "t5", "bart", "decoder", "elmo"]
FAMILIES: tuple[str, ...] = ("encoder", "t5", "bart", "decoder", "elmo")

NUM_SENTINELS = 100


@dataclasses.dataclass(frozen=True)
class FamilyTokens:
    """The special tokens of one family: their order, the role each plays, and the post-processing templates."""

    family: str
    tokens: tuple[str, ...]  # in id order: the trainer lists them first, so they get ids 0..n-1
    roles: Mapping[str, str]  # role ("pad", "unk", "cls", "sep", "mask", "bos", "eos") -> token
    sentinels: tuple[str, ...] = ()  # T5 span-corruption sentinels, in order; added after training, at the top
    single: str | None = None  # TemplateProcessing template for one sequence; None: add nothing
    pair: str | None = None

    @property
    def unk(self) -> str | None:
        return self.roles.get("unk")

    @property
    def all_tokens(self) -> tuple[str, ...]:
        return self.tokens + self.sentinels

    def strips_left(self, token: str) -> bool:
        """Whether ``token`` absorbs the space before it (the mask and the sentinels)."""
        return token == self.roles.get("mask") and self.family != "encoder" or token in self.sentinels

    def added_token(self, token: str):
        """``token`` as a ``tokenizers.AddedToken`` with the flags of its role."""
        from tokenizers import AddedToken

        return AddedToken(token, special=True, lstrip=self.strips_left(token), rstrip=False, normalized=False)

    def transformers_kwargs(self) -> dict[str, Any]:
        """Keyword arguments that tell ``transformers.PreTrainedTokenizerFast`` which token plays which role."""
        kwargs: dict[str, Any] = {f"{role}_token": token for role, token in self.roles.items()}
        if self.sentinels:
            kwargs["additional_special_tokens"] = list(self.sentinels)
        return kwargs


def _t5_sentinels() -> tuple[str, ...]:
    return tuple(f"<extra_id_{i}>" for i in range(NUM_SENTINELS))


FAMILY_TOKENS: dict[str, FamilyTokens] = {
    "encoder": FamilyTokens(
        family="encoder",
        tokens=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
        roles={"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"},
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
    ),
    "t5": FamilyTokens(
        family="t5",
        tokens=("<pad>", "</s>", "<unk>"),
        roles={"pad": "<pad>", "eos": "</s>", "unk": "<unk>"},
        sentinels=_t5_sentinels(),
        single="$A </s>",
        pair="$A </s> $B:1 </s>:1",
    ),
    "bart": FamilyTokens(
        family="bart",
        tokens=("<s>", "<pad>", "</s>", "<unk>", "<mask>"),
        roles={"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>", "mask": "<mask>"},
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B:1 </s>:1",
    ),
    "decoder": FamilyTokens(
        family="decoder",
        tokens=("<|endoftext|>",),
        # GPT-2's convention: one token begins and ends documents. There is no padding token (the trainer
        # packs documents into full blocks) and no unknown token (byte-level BPE has none).
        roles={"bos": "<|endoftext|>", "eos": "<|endoftext|>"},
    ),
    "elmo": FamilyTokens(
        family="elmo",
        # ELMo's sentence boundary tokens; the biLM predicts </S> forwards and <S> backwards.
        tokens=("<pad>", "<unk>", "<S>", "</S>"),
        roles={"pad": "<pad>", "unk": "<unk>", "bos": "<S>", "eos": "</S>"},
        single="<S> $A </S>",
        pair="<S> $A </S> <S>:1 $B:1 </S>:1",
    ),
}


def family_tokens(family: str) -> FamilyTokens:
    try:
        return FAMILY_TOKENS[family]
    except KeyError:
        raise ValueError(f"unknown tokenizer family {family!r}; choose one of {', '.join(FAMILIES)}") from None


@dataclasses.dataclass(frozen=True)
class SpecialTokenIds:
    """Special-token ids as read from a saved tokenizer."""

    family: str
    ids: dict[str, int]  # role -> id, e.g. {"pad": 0, "eos": 1, "unk": 2}
    sentinel_ids: tuple[int, ...] = ()
    token_ids: dict[str, int] = dataclasses.field(default_factory=dict)  # token string -> id

    def __getitem__(self, role: str) -> int:
        return self.ids[role]

    def get(self, role: str, default: int | None = None) -> int | None:
        return self.ids.get(role, default)

    def as_mapping(self) -> dict[str, int]:
        """``{name: id}`` for the token-shard manifest: the roles, then sentinels as ``extra_id_N``."""
        out = dict(self.ids)
        out.update({f"extra_id_{i}": sid for i, sid in enumerate(self.sentinel_ids)})
        return out


def read_special_tokens(tokenizer_json: str | dict[str, Any]) -> SpecialTokenIds:
    """The family and special-token ids of a saved tokenizer.

    ``tokenizer_json`` is the path of a ``tokenizer.json`` (local, or any Beam filesystem), its text, or its
    parsed content. The family is the one whose tokens are all present as special added tokens.
    """
    data = _load_json(tokenizer_json)
    added = {t["content"]: int(t["id"]) for t in data.get("added_tokens", []) if t.get("special", False)}
    matches = [spec for spec in FAMILY_TOKENS.values() if all(tok in added for tok in spec.all_tokens)]
    # A family whose tokens are a superset of another's is the more specific match.
    matches.sort(key=lambda spec: -len(spec.all_tokens))
    if not matches:
        raise ValueError(
            "the tokenizer carries none of the known special-token sets "
            f"({', '.join(FAMILIES)}); found special tokens: {sorted(added)[:10]}"
        )
    spec = matches[0]
    return SpecialTokenIds(
        family=spec.family,
        ids={role: added[token] for role, token in spec.roles.items()},
        sentinel_ids=tuple(added[s] for s in spec.sentinels),
        token_ids={tok: added[tok] for tok in spec.all_tokens},
    )


def _load_json(source: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(source, dict):
        return source
    text = source.strip()
    if text.startswith("{"):
        return json.loads(text)
    from corpusforge.core.files import read_bytes

    return json.loads(read_bytes(source).decode("utf-8"))
