"""Fuzz family ``prompt_bounds``: the bound ``tokens_at_least`` puts on a long prompt's tokens (generate, predict,
fill-mask refuse a huge prompt from it before tokenising it whole) never exceeds the tokens the whole text has.

One case draws a tokenizer of each kind corpusforge builds (byte-level BPE as GPT-2 and BART, WordPiece with
BertNormalizer as BERT, Unigram with NFKC and Metaspace as T5), a limit of 1-70 positions, and 1-6 texts a little
longer than the prefix: pieces of mixed scripts (Latin, CJK, accents composed and not, compatibility characters),
runs with no space (letters, CJK, base64, minified JSON), every kind of whitespace (Python's ``\\s`` and the
tokenizers' differ: ``\\x1c``-``\\x1f``, ``\\x85``, U+2028, U+3000), control characters BERT's ``clean_text``
deletes (one between two runs of letters makes one BERT word, a 100+ character one ``[UNK]``; two cases in five
end in such a run, longer than the prefix), special tokens whole and cut at the prefix's end, as text (predict)
or not. Each bound must be at most the real count; the
tokenizers are built once a process (the first case's ``workdir``) and kept in memory.
"""
from __future__ import annotations

import collections
import pathlib
import random

FAMILY = "prompt_bounds"
TRIED: collections.Counter = collections.Counter()
_LOADED: dict = {}

_CHARS = list("abcxyzABC 0123456789.,:;!?'\"-_/{}[]()\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2028\u2029\u3000\x00\x07"
              "\u200b\ufeff我们公园散步éеé\u0301\u0308ﬁ①ｆＡ𝐀😀")
_PIECES = ["[MASK]", "<mask>", "<|endoftext|>", "</s>", "<s>", "<extra_id_0>", "[SEP]", "[CLS]", "'s", " <mask> ",
           "thecat" * 16, "c" * 40, "我们今天去公园散步了" * 5, '{"a":1,"b":[2,3]},' * 3, "QUJDREVGR0hJSktMTU5P" * 3,
           "  ", "\x1c" * 5, "e" + "\u0301" * 12]


def _loaded(workdir: pathlib.Path) -> dict:
    if not _LOADED:
        from corpusforge.trainers.export import export_model, load_model
        from tests.trainers.exports import make_model_dir

        for family in ("gpt2", "bart", "bert", "t5"):
            model_dir = make_model_dir(workdir / family / "model", family)
            _LOADED[family] = load_model(export_model(model_dir, workdir / family / "export"))
    return _LOADED


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    from corpusforge.trainers.generate import PREFIX_CHARS_PER_POSITION, prompt_ids, prompt_settings, tokens_at_least

    for family, loaded in _loaded(workdir).items():
        for _ in range(rng.randint(1, 6)):
            limit = rng.randint(1, 70)
            size = (limit + 1) * PREFIX_CHARS_PER_POSITION + rng.randint(0, 120)
            parts, length = [], 0
            while length < size:
                part = rng.choice(_PIECES) if rng.random() < 0.3 else "".join(rng.choices(_CHARS, k=rng.randint(1, 9)))
                parts.append(part * (rng.randint(2, 60) if rng.random() < 0.05 else 1))
                length += len(parts[-1])
            if rng.random() < 0.4:  # the prefix ends in one long run: letters, a deleted character, letters
                cut = rng.randint(0, len(parts))
                parts[cut:] = [rng.choice(["thecat", "ab", "x", "我们", "QUJD", '{"a":1}']) * rng.randint(1, 20),
                               rng.choice(["\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\x00", "\u200b", "\ufeff", " ", ""]),
                               rng.choice(["c", "ab", "我", "=", "é"]) * (size + rng.randint(0, 400))]
                TRIED["long tail"] += 1
            text = "".join(parts)
            as_text = rng.random() < 0.5
            settings, before = prompt_settings(loaded, as_text)
            seen = tokens_at_least(text, limit, loaded.tokenizer, settings, len(before))
            real = len(prompt_ids(loaded, text, as_text))
            TRIED["bounded" if seen else "unbounded"] += 1
            assert seen is None or seen[0] <= real, (family, limit, as_text, text, seen, real)
            seen = tokens_at_least(text, limit, loaded.tokenizer)  # fill-mask's call
            real = len(loaded.tokenizer(text)["input_ids"])
            assert seen is None or seen[0] <= real, (family, limit, "fill-mask", text, seen, real)
