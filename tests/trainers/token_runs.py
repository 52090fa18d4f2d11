"""A run directory made by hand for trainer tests and benches: a WordPiece tokenizer trained on ``texts`` in
RUN/tokenizer, the texts' token shards in RUN/tokens/{train,val} and RUN/tokens/manifest.json, as tokenize writes
them (the last ``val_docs`` texts are the validation split)."""
from __future__ import annotations

import hashlib
import json
import pathlib


def write_wordpiece_token_run(run: pathlib.Path, texts: list[str], vocab_size: int, val_docs: int) -> pathlib.Path:
    """RUN/tokenizer/tokenizer.json, after writing the token shards and their manifest."""
    from corpusforge.tokenizer.config import TokenizerConfig
    from corpusforge.tokenizer.token_shards import write_token_shards
    from corpusforge.tokenizer.train import train_from_texts
    from corpusforge.trainers.vocab import Vocabulary

    tokenizer = train_from_texts([texts], TokenizerConfig(family="encoder", kind="wordpiece", vocab_size=vocab_size))
    tok_path = run / "tokenizer" / "tokenizer.json"
    tok_path.parent.mkdir(parents=True)
    tokenizer.save(str(tok_path))
    vocab = Vocabulary.from_file(tok_path)
    encoded = [e.ids for e in tokenizer.encode_batch(texts)]
    splits = {}
    for name, docs in (("train", encoded[:-val_docs]), ("val", encoded[-val_docs:])):
        paths = write_token_shards(run / "tokens" / name, docs, docs_per_shard=4000)
        splits[name] = {"shards": [f"{name}/{p.name}" for p in paths], "documents": len(docs),
                        "tokens": sum(map(len, docs))}
    (run / "tokens" / "manifest.json").write_text(json.dumps({
        "tokenizer": "../tokenizer/tokenizer.json", "tokenizer_sha256": hashlib.sha256(tok_path.read_bytes()).hexdigest(),
        "vocab_size": vocab.size, "dtype": "uint16", "special_tokens": vocab.special_ids(), "splits": splits}))
    return tok_path
