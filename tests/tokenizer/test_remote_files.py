"""The tokenize stage reads tokenizer.json from any Beam filesystem, in DoFn.setup() on the worker.

``cftest://`` (tests/beamfs.py) stands in for gs:// or s3://: nothing under it exists as a local path.
"""
from __future__ import annotations

import json
import shutil

from apache_beam.testing.test_pipeline import TestPipeline

from tests.beamfs import use_cftest
from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.tokenize import TokenizeShards
from corpusforge.tokenizer.train import train_from_shards


def _tokenize(clean, out, tokenizer):
    with TestPipeline() as p:
        _ = p | TokenizeShards(str(clean), str(out), tokenizer, val_fraction=0.1, num_shards=2)
    manifest = json.loads((out / "manifest.json").read_text())
    return manifest, {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.arrow"))}


def test_token_shards_from_a_remote_tokenizer_equal_the_local_ones(tmp_path, clean_dir):
    local = tmp_path / "tok"
    train_from_shards(TokenizerConfig(family="decoder", vocab_size=400, heldout_mb=0.01), str(clean_dir), str(local))
    root = use_cftest(tmp_path / "bucket")
    shutil.copytree(local, root / "tok")

    local_manifest, local_shards = _tokenize(clean_dir, tmp_path / "out-local", str(local / "tokenizer.json"))
    remote_manifest, remote_shards = _tokenize(clean_dir, tmp_path / "out-remote", "cftest://tok/tokenizer.json")
    assert remote_shards == local_shards and len(local_shards) == 3
    assert remote_manifest["tokenizer"] == "cftest://tok/tokenizer.json"
    assert remote_manifest["tokenizer_sha256"] == local_manifest["tokenizer_sha256"]
