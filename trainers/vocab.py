"""What the objectives need to know about a saved tokenizer: special-token ids, word starts, sentence ends.

Every id is read from the saved ``tokenizer.json``, never from constants: the roles through
``corpusforge.tokenizer.special_tokens.read_special_tokens`` (the one definition of each family's special tokens), and
for a tokenizer of no known family, by the usual names of each role.

    vocab = Vocabulary.from_file("runs/latest/tokenizer/tokenizer.json")
    vocab.mask, vocab.eos, vocab.sentinels, vocab.word_start[token_id]
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import re

import numpy as np

from corpusforge.core.errors import UserError

# Names each role goes by in the common conventions (RoBERTa/BART/T5, BERT, GPT-2), first match wins.
ROLE_NAMES: dict[str, tuple[str, ...]] = {
    "pad": ("<pad>", "[PAD]", "<|pad|>"),
    "unk": ("<unk>", "[UNK]", "<|unk|>"),
    "bos": ("<s>", "[CLS]", "<bos>", "<|bos|>", "<|endoftext|>"),
    "eos": ("</s>", "[SEP]", "<eos>", "<|eos|>", "<|endoftext|>"),
    "mask": ("<mask>", "[MASK]", "<|mask|>"),
}
SENTINEL = re.compile(r"^<(?:extra_id|sentinel)_(\d+)>$")
SENTENCE_FINAL = (".", "!", "?", "。", "！", "？")


# The tokenizer family (tokenizer.family: its special tokens) each model recipe (an objective's ``family``) trains on.
TOKENIZER_FAMILY = {"bert": "encoder", "gpt2": "decoder", "t5": "t5", "bart": "bart", "elmo": "elmo"}


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    size: int  # ids 0..size-1, added tokens included
    pad: int | None
    unk: int | None
    bos: int | None  # also the [CLS] of BERT-style tokenizers
    eos: int | None  # also the [SEP] of BERT-style tokenizers
    mask: int | None
    sentinels: tuple[int, ...]  # <extra_id_0>, <extra_id_1>, ... (T5 numbers them from the top of the vocab down)
    special: np.ndarray  # bool per id: a special token (never masked, never a random replacement)
    word_start: np.ndarray  # bool per id: the token begins a word (False for '##x' or a BPE piece without 'Ġ'/'▁')
    sentence_end: np.ndarray  # bool per id: the token ends a sentence ('.', '!', '?')

    @classmethod
    def from_file(cls, path: str | pathlib.Path) -> "Vocabulary":
        from tokenizers import Tokenizer

        path = pathlib.Path(path)
        if not path.exists():
            raise UserError(f"tokenizer {path} does not exist; train one first (corpusforge tokenizer) or point "
                            "tokens/manifest.json at it")
        tokenizer = Tokenizer.from_file(str(path))
        return cls.from_tokenizer(tokenizer, json.loads(path.read_text(encoding="utf-8")))

    @classmethod
    def from_tokenizer(cls, tokenizer, data: dict | None = None) -> "Vocabulary":
        data = data if data is not None else json.loads(tokenizer.to_str())
        size = tokenizer.get_vocab_size(with_added_tokens=True)
        roles, sentinels = _roles(tokenizer, data)
        special = np.zeros(size, dtype=bool)
        for added in data.get("added_tokens", []):
            if added.get("special", False) and added["id"] < size:
                special[added["id"]] = True
        for token_id in list(roles.values()) + list(sentinels.values()):
            if token_id is not None:
                special[token_id] = True
        scheme = _word_scheme(data)
        word_start = np.ones(size, dtype=bool)
        sentence_end = np.zeros(size, dtype=bool)
        for token, token_id in tokenizer.get_vocab(with_added_tokens=True).items():
            if token_id >= size or special[token_id]:
                continue
            if scheme == "wordpiece":
                word_start[token_id] = not token.startswith("##")
            elif scheme == "bytelevel":
                word_start[token_id] = token.startswith("Ġ") or not token[:1].isalnum()
            elif scheme == "metaspace":
                word_start[token_id] = token.startswith("▁") or not token[:1].isalnum()
            sentence_end[token_id] = token.lstrip("Ġ▁#").rstrip().endswith(SENTENCE_FINAL)
        ordered = tuple(sentinels[i] for i in sorted(sentinels))
        return cls(size=size, sentinels=ordered, special=special, word_start=word_start,
                   sentence_end=sentence_end, **roles)

    def require(self, *roles: str, purpose: str, recipe: str = "") -> None:
        """Raise a UserError naming the missing special tokens ``purpose`` needs and, for an objective whose model
        ``recipe`` is given, the commands that make a tokenizer with them: "retrain the tokenizer with them" left
        a user whose run's tokenizer was trained for another objective (a decoder's, the default, under ``train
        --objective mlm``) to find that ``tokenizer.family`` decides the special tokens, and that the token shards
        must be encoded again."""
        missing = [role for role in roles if getattr(self, role) is None]
        if missing:
            wanted = "; ".join(f"{role}: one of {' '.join(ROLE_NAMES[role])}" for role in missing)
            family = TOKENIZER_FAMILY.get(recipe)
            todo = (f"train one for it and encode the corpus again: corpusforge tokenizer train --family {family} "
                    "--overwrite, then corpusforge tokenize --overwrite" if family else "retrain the tokenizer with them")
            raise UserError(f"{purpose} needs special tokens the tokenizer lacks ({wanted}); {todo}")

    @property
    def random_ids(self) -> np.ndarray:
        """Ids a masked token may be replaced with: every ordinary (non-special) token."""
        return np.flatnonzero(~self.special)

    def with_sentinels(self, count: int) -> "Vocabulary":
        """This vocabulary with at least ``count`` sentinels; missing ones get new ids above ``size``.

        Like T5, sentinel 0 gets the highest id and the rest count down.
        """
        if len(self.sentinels) >= count:
            return self
        extra = count - len(self.sentinels)
        new_size = self.size + extra
        added = tuple(range(new_size - 1, self.size - 1, -1))
        grow = lambda a, value: np.concatenate([a, np.full(extra, value, dtype=bool)])  # noqa: E731
        return dataclasses.replace(self, size=new_size, sentinels=self.sentinels + added,
                                   special=grow(self.special, True), word_start=grow(self.word_start, True),
                                   sentence_end=grow(self.sentence_end, False))

    def special_ids(self) -> dict[str, int]:
        out = {role: getattr(self, role) for role in ROLE_NAMES if getattr(self, role) is not None}
        if self.sentinels:
            out["sentinel_0"] = self.sentinels[0]
            out["num_sentinels"] = len(self.sentinels)
        return out


def _roles(tokenizer, data: dict) -> tuple[dict[str, int | None], dict[int, int]]:
    """Role -> id (cls/sep count as bos/eos) and sentinel number -> id."""
    from corpusforge.tokenizer.special_tokens import read_special_tokens

    try:
        found = read_special_tokens(data)
    except ValueError:  # no known family: go by names
        roles = {role: _first_id(tokenizer, names) for role, names in ROLE_NAMES.items()}
        sentinels = {}
        for added in data.get("added_tokens", []):
            match = SENTINEL.match(added["content"])
            if match:
                sentinels[int(match.group(1))] = int(added["id"])
        return roles, sentinels
    ids = found.ids
    roles = {"pad": ids.get("pad"), "unk": ids.get("unk"), "bos": ids.get("bos", ids.get("cls")),
             "eos": ids.get("eos", ids.get("sep")), "mask": ids.get("mask")}
    return roles, dict(enumerate(found.sentinel_ids))


def _first_id(tokenizer, names: tuple[str, ...]) -> int | None:
    for name in names:
        token_id = tokenizer.token_to_id(name)
        if token_id is not None:
            return token_id
    return None


def _word_scheme(data: dict) -> str:
    """How the tokenizer marks word boundaries: 'wordpiece' (##), 'bytelevel' (Ġ), 'metaspace' (▁) or 'none'."""
    def types(node) -> list[str]:
        if not isinstance(node, dict):
            return []
        found = [node.get("type", "")]
        for child in node.get("decoders", []) + node.get("pretokenizers", []):
            found += types(child)
        return found

    found = types(data.get("decoder")) + types(data.get("pre_tokenizer"))
    model = (data.get("model") or {}).get("type", "")
    if "WordPiece" in found or model == "WordPiece":
        return "wordpiece"
    if "ByteLevel" in found:
        return "bytelevel"
    if "Metaspace" in found:
        return "metaspace"
    return "none"
