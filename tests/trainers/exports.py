"""Model directories as ``corpusforge train`` writes them, for each family, without training: a tokenizer of the
family's kind trained on generated text, a debug-size model with its weights randomised (norms and biases
included, so a misplaced one shows), and config.json with the special-token ids."""
from __future__ import annotations

import pathlib

import torch

from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.train import train_from_texts
from corpusforge.trainers.checkpoint import save_pretrained
from corpusforge.trainers.model import Transformer, model_config
from corpusforge.trainers.vocab import Vocabulary
from tests.trainers.conftest import make_text

# model family -> (tokenizer family, tokenizer kind, objective)
FAMILIES = {"gpt2": ("decoder", "bpe", "clm"), "bert": ("encoder", "wordpiece", "mlm"),
            "t5": ("t5", "unigram", "span"), "bart": ("bart", "bpe", "bart")}


def randomise(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * (0.5 if param.dim() == 1 else 0.1)
                        + (1.0 if param.dim() == 1 else 0.0))
    return model.eval()


def make_model_dir(directory: pathlib.Path, family: str, size: str = "debug", max_len: int = 64,
                   **overrides) -> pathlib.Path:
    tok_family, kind, objective = FAMILIES[family]
    tokenizer = train_from_texts([make_text(300, seed=1)], TokenizerConfig(family=tok_family, kind=kind,
                                                                            vocab_size=500))
    directory.mkdir(parents=True, exist_ok=True)
    tok_path = directory / "source-tokenizer.json"
    tokenizer.save(str(tok_path))
    vocab = Vocabulary.from_file(tok_path)
    vocab_size = -(-vocab.size // 64) * 64
    model = randomise(Transformer(model_config(family, size, vocab_size=vocab_size, max_len=max_len, dropout=0.0,
                                               **overrides)))
    info = {"objective": objective, "family": family, "special_tokens": vocab.special_ids(),
            "tokenizer_vocab_size": vocab.size, "step": 0, "train": {"seq_len": max_len}}
    save_pretrained(model, directory, tokenizer=tok_path, info=info)
    tok_path.unlink()
    return directory
