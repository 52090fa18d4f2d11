"""Tokenize's shuffles on local disk (``corpusforge.core.disk_grouping``) for a large input: the same bytes."""
import pathlib

import pytest

from corpusforge.config import load_config
from corpusforge.core import disk_grouping
from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.tokenize import shuffle_dir
from corpusforge.tokenizer.train import train_from_shards
from tests.runs import tokenize_on


@pytest.fixture(scope="module")
def tokenizer_path(tmp_path_factory, clean_dir) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("tok")
    train_from_shards(TokenizerConfig(family="decoder", vocab_size=500, heldout_mb=0.01), str(clean_dir), str(directory))
    return directory / "tokenizer.json"


@pytest.fixture
def written_runs(monkeypatch) -> list:
    """Every record a disk shuffle writes to its run files (the in-process DirectRunner runs the DoFns here)."""
    records = []
    write = disk_grouping._WriteRuns.process

    def counted(self, record):
        records.append(record)
        yield from write(self, record)

    monkeypatch.setattr(disk_grouping._WriteRuns, "process", counted)
    return records


def _outputs(tokens: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(tokens)): p.read_bytes() for p in sorted(tokens.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("settings", [
    ["tokenize.num_shards=3"],
    # token-sized shards and a mixture: the chunks wait on disk for the plan, the quota's keys are gathered
    ["tokenize.shard_tokens=4000", "tokenize.target_tokens=30000"],
], ids=["planned", "token-sized"])
def test_a_large_input_groups_on_disk_into_the_same_bytes(tmp_path, clean_dir, tokenizer_path, written_runs,
                                                           settings):
    base = [f"tokenize.input={clean_dir}", f"tokenize.tokenizer={tokenizer_path}", "tokenize.val_fraction=0.1",
            *settings]
    memory = tmp_path / "memory"
    tokenize_on(load_config(None, [f"output.run_dir={memory}", "output.disk_shuffle_mb=1000", *base]),
                progress=False)
    assert not written_runs  # a corpus under the threshold: Beam's own shuffle
    disk = tmp_path / "disk"
    manifest = tokenize_on(load_config(None, [f"output.run_dir={disk}", "output.disk_shuffle_mb=0", *base]),
                           progress=False)
    shards = {key for (key, value) in written_runs if value is not None and isinstance(key, tuple)}
    # every encoded chunk went through the run files, keyed by its shard
    assert shards and all(split in ("train", "val") for split, _ in shards)
    assert _outputs(memory / "tokens") == _outputs(disk / "tokens")
    assert manifest["splits"]["train"]["documents"] > 0
    if any(s.startswith("tokenize.target_tokens") for s in settings):  # a fractional epoch: a quota was cut
        epochs = manifest["sources"]["generated"]["epochs"]
        assert epochs % 1 and len(manifest["splits"]["train"]["shards"]) > 1
    assert not [p for p in disk.iterdir() if p.name.startswith(".tmp-")]  # the run files went with the staging


def test_shuffles_wait_on_disk_only_for_a_large_input_on_a_local_runner():
    assert shuffle_dir(65_000_000, 64.0, True, "/r/.tmp-swap-x") == "/r/.tmp-swap-x/.shuffle"
    assert shuffle_dir(64_000_000, 64.0, True, "/r/.tmp-swap-x") is None  # small: Beam's in-memory shuffle
    assert shuffle_dir(10, 0.0, True, "/r/.tmp-swap-x") == "/r/.tmp-swap-x/.shuffle"  # 0: always
    assert shuffle_dir(10**12, 0.0, False, "/r/.tmp-swap-x") is None  # Dataflow, Spark, Flink: their own shuffle
    assert shuffle_dir(10**12, 0.0, True, None) is None  # no local staging directory (a remote output)
