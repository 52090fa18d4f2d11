"""Configuration of tokenizer training (``tokenizer:``) and of the tokenize stage (``tokenize:``)."""
from __future__ import annotations

import dataclasses
from typing import Literal

from corpusforge.core.beam_options import BeamConfig
from corpusforge.core.config_loader import check, setting
from corpusforge.core.fault_config import FaultConfig
from corpusforge.core.rundir import RunPaths

TokenizerKind = Literal["auto", "bpe", "wordpiece", "unigram", "wordlevel"]
TokenizerFamily = Literal["encoder", "t5", "bart", "decoder", "elmo"]

# The algorithm each family gets with kind "auto": the one its reference model uses.
DEFAULT_KIND = {"encoder": "wordpiece", "t5": "unigram", "bart": "bpe", "decoder": "bpe", "elmo": "wordlevel"}


def _f(default, help: str):
    return setting(default, help)


@dataclasses.dataclass
class TokenizerConfig:
    enabled: bool = setting(True, "Train a tokenizer in `demo`/full runs.")
    family: TokenizerFamily = setting("decoder", "Model family: decides the special tokens and post-processing. encoder: [PAD] [UNK] [CLS] [SEP] [MASK] "
        "(MLM); t5: <pad> </s> <unk> + <extra_id_0..99> at the top of the vocabulary, counting down (span corruption); bart: <s> <pad> </s> <unk> <mask> "
        "(denoising); decoder: <|endoftext|> (GPT); elmo: <pad> <unk> <S> </S> (ELMo biLM, word-level).")
    kind: TokenizerKind = setting("auto", "Algorithm: bpe (byte-level, GPT-2 style, exact round trip, no unknown tokens), wordpiece (BERT style), "
        "unigram (T5 style), wordlevel (whole words, cased, as ELMo: the model's character CNN spells them). "
        "auto: wordpiece for encoder, unigram for t5, bpe for bart and decoder, wordlevel for elmo.")
    vocab_size: int = setting(32000, "Vocabulary size, special tokens and the base alphabet included.")
    min_frequency: int = setting(2, "A merge (BPE) or word piece (WordPiece) must occur this often; Unigram ignores it.")
    sample_mb: float = setting(0.0, "Train on about this many MB of text, a seeded sample of documents; 0: all of it.")
    heldout_mb: float = setting(1.0, "MB of documents held out of training to measure compression for report.json (at most 10% of the corpus).")
    seed: int = setting(0, "Seed of the document sample (which documents train, which are held out).")
    lowercase: bool = setting(True, "WordPiece: lowercase the text (BERT uncased); false keeps case (BERT cased).")
    strip_accents: bool | None = setting(None, "WordPiece: strip accents; null: do so exactly when lowercasing.")
    max_token_chars: int = setting(16, "BPE and Unigram: longest token the trainer may create, in characters (bytes for BPE); 0: no limit (BPE only).")
    batch_size: int = setting(1000, "Documents per batch streamed into the trainer.")
    input: str = setting("", "Clean shards to train on (directory, glob or file); default: <run_dir>/clean.")
    output: str = setting("", "Directory for tokenizer.json and report.json; default: <run_dir>/tokenizer.")
    model_max_length: int = setting(0, "model_max_length in tokenizer_config.json: the input length transformers warns "
                                  "about and truncates to; 0: train.seq_len of the same config. A run's model/ "
                                  "gets its model's own length.")

    def __post_init__(self) -> None:
        check(self.vocab_size >= 100, f"tokenizer.vocab_size must be >= 100, got {self.vocab_size}")
        check(self.min_frequency >= 0, f"tokenizer.min_frequency must be >= 0, got {self.min_frequency}")
        check(self.sample_mb >= 0, f"tokenizer.sample_mb must be >= 0 (0: all text), got {self.sample_mb}")
        check(self.heldout_mb >= 0, f"tokenizer.heldout_mb must be >= 0, got {self.heldout_mb}")
        check(self.batch_size >= 1, f"tokenizer.batch_size must be >= 1, got {self.batch_size}")
        check(self.max_token_chars >= 0, f"tokenizer.max_token_chars must be >= 0, got {self.max_token_chars}")
        check(self.model_max_length >= 0, f"tokenizer.model_max_length must be >= 0, got {self.model_max_length}")
        check(
            not (self.family == "decoder" and self.kind in ("wordpiece", "unigram", "wordlevel")),
            f"tokenizer.kind={self.kind} needs an unknown token, and family decoder has none; "
            "use kind bpe (or auto) for decoders",
        )
        check(
            not (self.resolved_kind == "unigram" and self.max_token_chars == 0),
            "tokenizer.max_token_chars must be > 0 for unigram (it bounds the seed pieces)",
        )

    @property
    def resolved_kind(self) -> str:
        return DEFAULT_KIND[self.family] if self.kind == "auto" else self.kind


@dataclasses.dataclass
class TokenizeConfig:
    enabled: bool = setting(True, "Write token shards in `demo`/full runs.")
    tokenizer: str = setting("", "tokenizer.json to encode with; default: <run_dir>/tokenizer/tokenizer.json.")
    input: str = setting("", "Clean shards to encode (directory, glob or file); default: <run_dir>/clean.")
    output: str = setting("", "Directory of the token shards and manifest.json; default: <run_dir>/tokens.")
    val_fraction: float = setting(0.01, "Share of documents in the validation split, chosen by a stable hash of the id "
                                "(raised for a small corpus: min_val_documents).")
    min_val_documents: int = setting(100, "With val_fraction > 0, the validation split holds at least this many documents, "
                                     "at most 10% of the corpus, when val_fraction gives fewer (a small corpus: 1% of "
                                     "500 documents is ~5, and bits per byte on them is noise): the documents of the "
                                     "lowest split hashes, so the same input gives the same split; 0: val_fraction alone.")
    split_seed: int = setting(0, "Seed of the split hash; the same seed and ids always give the same split (a corpus under min_val_documents / val_fraction documents: its threshold depends on all its ids).")
    batch_size: int = setting(256, "Documents per encode_batch call.")
    shard_target_mb: float = setting(256.0, "MB of clean-shard files per output shard; decides the number of shards.")
    num_shards: int = setting(0, "Fixed number of train shards (validation gets proportionally fewer, at least 1); 0: from shard_target_mb.")
    target_tokens: int = setting(0, "Token budget of the train split: each source gets target_tokens x its inputs[].weight / "
                               "(sum of weights) tokens, up-sampled by repeating whole documents or down-sampled by "
                               "dropping them (a stable hash of the id); 0: every document once (no weighting).")
    shard_tokens: int = setting(0, "Token-sized shards: about this many tokens per shard (train after the mixture's "
                              "weighting, and validation), overriding shard_target_mb and num_shards; 0: off.")
    mixture_seed: int = setting(0, "Seed of the hash that picks which documents a fractional epoch repeats or drops.")

    def __post_init__(self) -> None:
        check(0.0 <= self.val_fraction < 1.0, f"tokenize.val_fraction must be in [0, 1), got {self.val_fraction}")
        check(self.min_val_documents >= 0, f"tokenize.min_val_documents must be >= 0 (0: val_fraction alone), got "
                                           f"{self.min_val_documents}")
        check(self.batch_size >= 1, f"tokenize.batch_size must be >= 1, got {self.batch_size}")
        check(self.shard_target_mb > 0, f"tokenize.shard_target_mb must be > 0, got {self.shard_target_mb}")
        check(self.num_shards >= 0, f"tokenize.num_shards must be >= 0, got {self.num_shards}")
        check(self.shard_tokens >= 0, f"tokenize.shard_tokens must be >= 0 (0: off), got {self.shard_tokens}")
        check(self.target_tokens >= 0, f"tokenize.target_tokens must be >= 0 (0: no weighting), got {self.target_tokens}")


@dataclasses.dataclass(frozen=True)
class TokenizeRun:
    """What tokenize takes from the rest of the run: where it writes, the runner, the build's tolerance of records
    that make it raise (``build``), each source's mixture weight (from the build's ``inputs``), and from what
    size of input its shuffles wait on local disk (``output.disk_shuffle_mb``)."""

    run: RunPaths
    beam: BeamConfig
    faults: FaultConfig
    weights: dict[str, float]  # source name -> weight (tokenizer.mixture.source_weights)
    # output.disk_shuffle_mb: clean shards totalling more than this many MB are grouped on local disk, not in
    # memory, on a local runner (0: always); the token shards are the same bytes either way
    disk_shuffle_mb: float = 64.0
