"""Tokenizer training from a build's clean shards with HF ``tokenizers`` primitives.

    tokenizer = new_tokenizer("bpe", "decoder")                 # normalizer, pre-tokenizer, decoder
    trainer = new_trainer("bpe", "decoder", vocab_size=32000)   # special tokens first: ids 0..n-1
    tokenizer.train_from_iterator(batches_of_texts, trainer)
    finish(tokenizer, "bpe", "decoder")                         # post-processor of the family

``train_from_shards`` does all of it on streamed Arrow shards (a seeded sample, a held-out slice for the
report) and saves ``tokenizer.json``, transformers' ``tokenizer_config.json`` (so ``AutoTokenizer`` loads the
directory with every special token in its role; see packaging.py) and ``report.json``.
"""
from __future__ import annotations

import hashlib
import heapq
import json
import logging
import os
import sys
import time
from typing import Any, Iterable, Iterator

import pyarrow.compute as pc
import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from corpusforge.core.errors import UserError
from corpusforge.core.text_guards import MAX_RUN, bounded_pieces
from corpusforge.core.progress import Progress
from corpusforge.core import files, rundir
from corpusforge.core.rundir import RunPaths
from corpusforge.core.run_lock import run_lock
from corpusforge.core.shard_files import open_shard
from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.corpus import clean_shards, stable_unit, text_bytes
from corpusforge.tokenizer.packaging import save_transformers
from corpusforge.tokenizer.special_tokens import family_tokens, read_special_tokens

log = logging.getLogger(__name__)

KINDS = ("bpe", "wordpiece", "unigram", "wordlevel")
HELDOUT_MAX_SHARE = 0.1  # the held-out sample never takes more than this share of the corpus
_SAMPLE_PURPOSE = b"cf-tok-sample"
METASPACE = "\u2581"


def new_tokenizer(kind: str, family: str, *, lowercase: bool = True, strip_accents: bool | None = None) -> Tokenizer:
    """An untrained tokenizer of ``kind`` with the normalizer, pre-tokenizer and decoder that go with it."""
    spec = family_tokens(family)
    if kind == "bpe":
        # GPT-2: no normalization, bytes mapped to printable characters, GPT-2's split regex; every byte is in
        # the base alphabet, so there is no unknown token and decode(encode(text)) == text exactly.
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        return tok
    if spec.unk is None:
        raise UserError(f"a {kind} tokenizer needs an unknown token and family {family} has none; use kind bpe")
    if kind == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token=spec.unk, continuing_subword_prefix="##", max_input_chars_per_word=100))
        tok.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=strip_accents, lowercase=lowercase
        )
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)
        return tok
    if kind == "wordlevel":
        # ELMo: whole words split at whitespace and punctuation, case kept; a word outside the vocabulary is unk.
        tok = Tokenizer(models.WordLevel(unk_token=spec.unk))
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)  # joins words with spaces, tidies punctuation
        return tok
    if kind == "unigram":
        # T5/SentencePiece style: NFKC, spaces become "▁" (prepended to the text), pieces may span punctuation.
        tok = Tokenizer(models.Unigram())
        tok.normalizer = normalizers.NFKC()
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="first", split=True)
        tok.decoder = decoders.Metaspace(replacement=METASPACE, prepend_scheme="first", split=True)
        return tok
    raise ValueError(f"unknown tokenizer kind {kind!r}; choose one of {', '.join(KINDS)}")


def new_trainer(kind: str, family: str, vocab_size: int = 32000, min_frequency: int = 2,
                max_token_chars: int = 16, show_progress: bool = False) -> trainers.Trainer:
    """The trainer for ``kind``, with the family's special tokens listed first (they get ids 0..n-1).
    ``show_progress``: the trainer's own bars on stderr (reading, counting, merges), for a terminal."""
    spec = family_tokens(family)
    special = [spec.added_token(tok) for tok in spec.tokens]
    if spec.sentinels:  # added on top of the trained vocabulary by finish()
        if vocab_size <= len(spec.all_tokens):
            raise UserError(f"tokenizer.vocab_size must be > {len(spec.all_tokens)} for family {family} "
                            f"({len(spec.sentinels)} sentinels + {len(spec.tokens)} special tokens), got {vocab_size}")
        vocab_size -= len(spec.sentinels)
    if kind == "bpe":
        minimum = len(special) + 256
        if vocab_size < minimum:
            raise UserError(f"tokenizer.vocab_size must be >= {minimum} for byte-level BPE with family {family} "
                            f"(256 bytes + {len(special)} special tokens), got {vocab_size}")
        return trainers.BpeTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special, show_progress=show_progress,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), max_token_length=max_token_chars or None,
        )
    if kind == "wordpiece":
        return trainers.WordPieceTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special, show_progress=show_progress,
            limit_alphabet=1000, continuing_subword_prefix="##",
        )
    if kind == "wordlevel":
        return trainers.WordLevelTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special,
                                         show_progress=show_progress)
    if kind == "unigram":
        return trainers.UnigramTrainer(
            vocab_size=vocab_size, special_tokens=special, unk_token=spec.unk, show_progress=show_progress,
            max_piece_length=max_token_chars, shrinking_factor=0.75, n_sub_iterations=2,
        )
    raise ValueError(f"unknown tokenizer kind {kind!r}; choose one of {', '.join(KINDS)}")


def finish(tokenizer: Tokenizer, kind: str, family: str) -> Tokenizer:
    """Add the sentinels at the top of the vocabulary (T5's order: ``<extra_id_0>`` last, with the highest id)
    and set the family's post-processor (e.g. ``[CLS] $A [SEP]``) once the special tokens have ids."""
    spec = family_tokens(family)
    if spec.sentinels:
        tokenizer.add_special_tokens([spec.added_token(tok) for tok in reversed(spec.sentinels)])
    ids = {tok: tokenizer.token_to_id(tok) for tok in spec.all_tokens}
    missing = [tok for tok, i in ids.items() if i is None]
    if missing:
        raise RuntimeError(f"the trained vocabulary lacks the special tokens {missing}")
    template = None
    if spec.single:
        named = {part.split(":")[0] for part in f"{spec.single} {spec.pair}".split()}
        used = [tok for tok in spec.tokens if tok in named]
        template = processors.TemplateProcessing(
            single=spec.single, pair=spec.pair, special_tokens=[(tok, ids[tok]) for tok in used]
        )
    if kind == "bpe":
        byte_level = processors.ByteLevel(trim_offsets=False)
        tokenizer.post_processor = processors.Sequence([byte_level, template]) if template else byte_level
    else:
        tokenizer.post_processor = template
    return tokenizer


def train_from_texts(batches: Iterable[list[str]], cfg: TokenizerConfig, length: int | None = None,
                     show_progress: bool = False) -> Tokenizer:
    """Train on batches of texts (an iterator is consumed once, never held in memory) and finish. ``length``
    (the number of texts, if known) gives the trainer's progress bar an ETA."""
    kind = cfg.resolved_kind
    tok = new_tokenizer(kind, cfg.family, lowercase=cfg.lowercase, strip_accents=cfg.strip_accents)
    trainer = new_trainer(kind, cfg.family, cfg.vocab_size, cfg.min_frequency, cfg.max_token_chars, show_progress)
    tok.train_from_iterator(_bounded(batches), trainer=trainer, length=length)
    return finish(tok, kind, cfg.family)


def _bounded(batches: Iterable[list[str]]) -> Iterator[list[str]]:
    """Each batch with every text that holds a run of more than ``MAX_RUN`` characters without a space (or of
    spaces) cut into pieces without one (``text_guards.bounded_pieces``): the trainers are super-linear in the
    length of one word, and no ordinary word is that long, so ordinary text reaches them unchanged."""
    for batch in batches:
        if any(len(text) > MAX_RUN for text in batch):
            batch = [piece for text in batch for piece in bounded_pieces(text)]
        yield batch


class _Sample:
    """Streams a seeded sample of the clean shards' texts into training; keeps the small held-out slice."""

    def __init__(self, paths: list[str], cfg: TokenizerConfig, total_bytes: int) -> None:
        self.paths, self.cfg = paths, cfg
        self.heldout_share = min(HELDOUT_MAX_SHARE, cfg.heldout_mb * 1e6 / total_bytes) if total_bytes else 0.0
        train_bytes = total_bytes * (1.0 - self.heldout_share)
        self.fraction = 1.0 if cfg.sample_mb == 0 or not train_bytes else min(1.0, cfg.sample_mb * 1e6 / train_bytes)
        self.heldout: list[str] = []
        self.documents = self.chars = self.bytes = 0

    def batches(self) -> Iterator[list[str]]:
        lo, span = self.heldout_share, 1.0 - self.heldout_share
        for path in self.paths:
            reader = open_shard(path)
            for batch in reader.batches():
                for start in range(0, batch.num_rows, self.cfg.batch_size):
                    chunk = batch.slice(start, self.cfg.batch_size)
                    ids = chunk.column("id").to_pylist()
                    texts = chunk.column("text")
                    keep = []
                    for i, doc_id in enumerate(ids):
                        u = stable_unit(doc_id, self.cfg.seed, _SAMPLE_PURPOSE)
                        if u < lo:
                            self.heldout.append(texts[i].as_py())
                        elif (u - lo) / span < self.fraction:
                            keep.append(i)
                    if not keep:
                        continue
                    selected = texts if len(keep) == len(ids) else texts.take(keep)
                    self.documents += len(keep)
                    self.bytes += int(pc.sum(pc.binary_length(selected)).as_py() or 0)
                    out = selected.to_pylist()
                    self.chars += sum(map(len, out))
                    yield out


def _counted(sample: _Sample, shown: Progress) -> Iterator[list[str]]:
    seen = 0
    for batch in sample.batches():
        shown.add(documents=len(batch), bytes=sample.bytes - seen)
        seen = sample.bytes
        yield batch


def train_from_shards(cfg: TokenizerConfig, input_path: str, output_dir: str, progress: bool = False, *,
                      model_max_length: int | None = None) -> dict[str, Any]:
    """Train on the clean shards at ``input_path``; write tokenizer.json, tokenizer_config.json, report.json.

    ``model_max_length``: what tokenizer_config.json records (default ``cfg.model_max_length``; 0 or None: none,
    and transformers then assumes no limit).

    ``progress``: on a terminal, the trainer's own bars (sample read with ETA, then word counts and merges);
    otherwise a plain line every 10 s on stderr with the sample bytes read of the expected total."""
    paths = [p for p, _ in clean_shards(input_path)]
    documents, total_bytes = text_bytes(paths)
    if documents == 0:
        raise UserError(f"the clean shards at {input_path} hold no documents; nothing to train a tokenizer on")
    sample = _Sample(paths, cfg, total_bytes)
    kind = cfg.resolved_kind
    log.info("training a %s tokenizer (%s) on %d shards, %.1f MB of text", kind, cfg.family, len(paths), total_bytes / 1e6)
    started = time.perf_counter()
    share = (1.0 - sample.heldout_share) * sample.fraction  # of the corpus that the sample is expected to take
    terminal = progress and sys.stderr.isatty()
    shown = Progress(None, "bytes", int(total_bytes * share), unit="B", extras=(("documents", "documents"),),
                     label="tokenizer sample", enabled=progress and not terminal, estimated=True)
    with shown:
        tok = train_from_texts(_counted(sample, shown), cfg, length=int(documents * share), show_progress=terminal)
    seconds = time.perf_counter() - started
    if sample.documents == 0:
        raise UserError("the sample for tokenizer training is empty; raise tokenizer.sample_mb")

    text = tok.to_str(pretty=True)
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    report = {
        "kind": kind,
        "family": cfg.family,
        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
        "requested_vocab_size": cfg.vocab_size,
        "min_frequency": cfg.min_frequency,
        "seed": cfg.seed,
        "special_tokens": read_special_tokens(_added_tokens(tok)).as_mapping(),
        "training": {
            "shards": len(paths), "documents": sample.documents, "chars": sample.chars, "bytes": sample.bytes,
            "sample_fraction": round(sample.fraction, 6), "seconds": round(seconds, 3),
        },
        "heldout": measure(tok, sample.heldout, kind),
        "longest_tokens": longest_tokens(tok, kind),
        "tokenizer_sha256": sha,
        "tokenizers_version": tokenizers.__version__,
    }
    files.write_bytes_atomic(files.join(output_dir, "tokenizer.json"), text.encode("utf-8"))
    save_transformers(files.join(output_dir, "tokenizer.json"), output_dir, keep_tokenizer_json=True,
                      model_max_length=model_max_length or cfg.model_max_length or None)
    files.write_bytes_atomic(files.join(output_dir, "report.json"), _dumps(report).encode("utf-8"))
    return report


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "report.json")


def train_tokenizer(cfg: TokenizerConfig, run: RunPaths, *, seq_len: int | None = None, progress: bool = True
                    ) -> dict[str, Any]:
    """``corpusforge tokenizer train``: paths from the run directory, refuse to overwrite unless asked. In a
    local run directory the new files are written beside the old ones and swapped in together on success.
    ``seq_len``: the length the model will train at (``train.seq_len``), recorded unless
    ``tokenizer.model_max_length`` is set (with neither, transformers records 1e30 and never truncates)."""
    run_dir = rundir.check_run_dir(run.run_dir)
    input_path = cfg.input or files.join(run_dir, "clean")
    output_dir = cfg.output or files.join(run_dir, "tokenizer")
    target = files.join(output_dir, "tokenizer.json")
    max_length = cfg.model_max_length or seq_len
    with run_lock(run_dir, "tokenizer train"):
        if files.exists(target) and not run.overwrite:
            raise UserError(f"{target} exists; pass --overwrite (--set output.overwrite=true) to replace it")
        in_run = not cfg.output or rundir.same_path(output_dir, files.join(run_dir, "tokenizer"))
        # Who records the files: the run directory (RUN/tokenizer), or, for tokenizer.output elsewhere, that
        # folder's own marker. Nothing unrecorded is replaced.
        owner_dir, names = (run_dir, ("tokenizer",)) if in_run else (output_dir, TOKENIZER_FILES)
        if not in_run:
            rundir.check_not_a_run(output_dir, "tokenizer.output")
        # tokenizer.output elsewhere is a folder of its own: its marker is read, changed and written under its own
        # lock (another command recording an output there meanwhile would lose it); RUN's is held already
        with run_lock(owner_dir, "tokenizer train"):
            rundir.check_owned(owner_dir, list(names))
            if in_run:
                _check_only_tokenizer_files(output_dir)
            made_from = rundir.fingerprint_of(input_path)  # tokenize and train refuse it once clean/ changes
            if not files.is_local(owner_dir):
                for name in names:  # recorded before anything is written
                    rundir.record_output(owner_dir, name, derived=False)
                report = train_from_shards(cfg, input_path, output_dir, progress=progress, model_max_length=max_length)
                marker = rundir.read_marker(owner_dir)
                marker["derived"].update({name: made_from for name in names})
                rundir.write_marker(owner_dir, marker)
                return report
            staging = rundir.make_scratch(owner_dir)
            try:
                report = train_from_shards(cfg, input_path, files.join(staging, "tokenizer") if in_run else staging,
                                           progress=progress, model_max_length=max_length)
            except BaseException:
                rundir.delete(staging)
                raise
            marker = rundir.read_marker(owner_dir)
            for name in names:
                marker["outputs"][name] = list(TOKENIZER_FILES) if name == "tokenizer" else None
                marker["derived"][name] = made_from
            rundir.swap_in(owner_dir, staging, names, marker)
            return report


def _check_only_tokenizer_files(directory: str) -> None:
    """Refuse to replace a tokenizer directory holding files that ``tokenizer train`` does not write."""
    if not os.path.isdir(directory):
        return
    stray = [n for n in sorted(os.listdir(directory)) if n not in TOKENIZER_FILES and ".tmp-" not in n]
    if stray:
        raise UserError(f"{os.path.join(directory, stray[0])} was not written by corpusforge tokenizer train; move it "
                        f"out of {directory} and run again")


def _added_tokens(tok: Tokenizer) -> dict[str, Any]:
    """The ``added_tokens`` part of a tokenizer.json, without serialising the whole vocabulary."""
    return {"added_tokens": [{"id": i, "content": t.content, "special": t.special}
                             for i, t in sorted(tok.get_added_tokens_decoder().items())]}


def load_transformers(tokenizer_json: str):
    """``transformers.PreTrainedTokenizerFast`` for a saved ``tokenizer.json``, special-token roles set."""
    from corpusforge.tokenizer.packaging import as_transformers

    return as_transformers(tokenizer_json)


# --- the report -------------------------------------------------------------------------------------------


def expected_round_trip(tok: Tokenizer, kind: str, text: str) -> str:
    """What ``decode(encode(text))`` should give: the text itself for byte-level BPE, the normalized text for
    Unigram, the normalized text without whitespace for WordPiece (its decoder re-spaces punctuation)."""
    if kind == "bpe":
        return text
    normalized = tok.normalizer.normalize_str(text) if tok.normalizer else text
    return "".join(normalized.split()) if kind in ("wordpiece", "wordlevel") else normalized


def round_trips(tok: Tokenizer, kind: str, text: str, decoded: str) -> bool:
    got = "".join(decoded.split()) if kind in ("wordpiece", "wordlevel") else decoded
    return got == expected_round_trip(tok, kind, text)


def measure(tok: Tokenizer, texts: list[str], kind: str, batch_size: int = 256) -> dict[str, Any]:
    """Compression, unknown-token share and round-trip share of ``tok`` on ``texts`` (no special tokens added)."""
    unk_id = _unk_id(tok)
    tokens = unk = exact = 0
    previous = tok.encode_special_tokens
    tok.encode_special_tokens = True  # document text is data: "<|endoftext|>" in a text is not a control token
    try:
        for start in range(0, len(texts), batch_size):
            chunk = texts[start:start + batch_size]
            encs = tok.encode_batch(chunk, add_special_tokens=False)
            id_lists = [e.ids for e in encs]
            tokens += sum(map(len, id_lists))
            if unk_id is not None:
                unk += sum(ids.count(unk_id) for ids in id_lists)
            decoded = tok.decode_batch(id_lists, skip_special_tokens=False)
            exact += sum(round_trips(tok, kind, t, d) for t, d in zip(chunk, decoded))
    finally:
        tok.encode_special_tokens = previous
    chars = sum(map(len, texts))
    size = sum(len(t.encode("utf-8")) for t in texts)
    return {
        "documents": len(texts),
        "chars": chars,
        "bytes": size,
        "tokens": tokens,
        "chars_per_token": round(chars / tokens, 4) if tokens else None,
        "bytes_per_token": round(size / tokens, 4) if tokens else None,
        "unk_share": round(unk / tokens, 6) if tokens else None,
        "round_trip_share": round(exact / len(texts), 6) if texts else None,
    }


def _unk_id(tok: Tokenizer) -> int | None:
    """The id the model emits for unknown input; None for byte-level BPE, which has no unknown input."""
    model = tok.model
    if isinstance(model, (models.WordPiece, models.WordLevel)):
        return tok.token_to_id(model.unk_token)
    if isinstance(model, models.Unigram):
        unk = [t for t in ("[UNK]", "<unk>") if tok.token_to_id(t) is not None]
        return tok.token_to_id(unk[0]) if unk else None
    return None


def token_surface(token: str, kind: str) -> bytes:
    """The bytes a vocabulary entry stands for (byte-level characters mapped back, ``##``/``▁`` resolved)."""
    if kind == "bpe":
        table = _byte_decoder()
        return bytes(table[ch] for ch in token)
    if kind == "wordpiece":
        return (token[2:] if token.startswith("##") else token).encode("utf-8")
    return token.replace(METASPACE, " ").encode("utf-8")


def longest_tokens(tok: Tokenizer, kind: str, top: int = 10) -> list[dict[str, Any]]:
    special = set(tok.get_added_tokens_decoder())
    vocab = [(token, idx) for token, idx in tok.get_vocab(with_added_tokens=False).items() if idx not in special]
    # Byte-level BPE maps each byte to one character: the token's length is its surface's, no table needed.
    def size(token: str) -> int:
        return len(token) if kind == "bpe" else len(token_surface(token, kind))

    longest = heapq.nsmallest(top, vocab, key=lambda item: (-size(item[0]), item[1]))
    rows = [(idx, token, token_surface(token, kind)) for token, idx in longest]
    return [{"id": idx, "token": token, "text": surface.decode("utf-8", "replace"), "bytes": len(surface)}
            for idx, token, surface in rows]


_BYTE_DECODER: dict[str, int] | None = None


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte -> printable-character table, inverted."""
    global _BYTE_DECODER
    if _BYTE_DECODER is None:
        bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
        cs = bs[:]
        n = 0
        for b in range(256):
            if b not in bs:
                bs.append(b)
                cs.append(256 + n)
                n += 1
        _BYTE_DECODER = {chr(c): b for b, c in zip(bs, cs)}
    return _BYTE_DECODER


def _dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
