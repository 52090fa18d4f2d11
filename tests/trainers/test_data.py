import numpy as np
import pyarrow as pa
import pytest
import torch

from corpusforge.tokenizer.token_shards import TokenShards, write_token_shards
from corpusforge.core.errors import UserError
from corpusforge.trainers.data import BatchPlan, ExampleStream, PackedWindows, TokenData, worker_errors
from corpusforge.trainers.registry import build_objective


@pytest.fixture(scope="module")
def shards(tiny_run):
    return TokenShards(TokenData.from_run(tiny_run).splits["train"])


def test_manifest_and_zero_copy_documents(tiny_run, shards):
    data = TokenData.from_run(tiny_run)
    assert data.tokenizer.name == "tokenizer.json" and len(data.splits["train"]) == 3
    assert len(shards) == 300
    doc = shards.document(5)
    assert not doc.flags.owndata and doc.dtype == np.uint16  # a view into the memory map
    table = pa.ipc.open_file(pa.memory_map(str(data.splits["train"][0]))).read_all()
    assert doc.tolist() == table.column("tokens")[5].as_py()


def test_uint32_shards(tmp_path):
    docs = [[70000, 1, 2], [3, 80000]]
    shards = TokenShards(write_token_shards(tmp_path, docs, dtype="uint32"))
    assert [shards.document(i).tolist() for i in range(2)] == docs


def test_windows_are_the_separator_joined_stream(shards):
    windows = PackedWindows(shards, 50, [65535], seed=0, shuffle=False)
    stream = np.concatenate([np.r_[shards.document(i), 65535] for i in range(len(shards))])
    assert windows.per_epoch == len(stream) // 50
    for slot in range(windows.per_epoch):
        assert (windows.window(0, slot) == stream[slot * 50: (slot + 1) * 50]).all()


def test_shuffle_is_deterministic_per_epoch_and_covers_every_window(shards):
    a = PackedWindows(shards, 64, [2], seed=3)
    b = PackedWindows(shards, 64, [2], seed=3)
    epoch0 = [a.window(0, s).tolist() for s in range(a.per_epoch)]
    assert epoch0 == [b.window(0, s).tolist() for s in range(b.per_epoch)]
    assert epoch0 != [a.window(1, s).tolist() for s in range(a.per_epoch)]
    total = sum(len(w) for w in epoch0)
    assert total == a.per_epoch * 64
    # Every token of the stream except the tail that does not fill a window appears once per epoch.
    tokens = np.bincount(np.concatenate(epoch0), minlength=65536)
    everything = np.bincount(np.concatenate([shards.document(i) for i in range(len(shards))]), minlength=65536)
    assert (tokens[3:] <= everything[3:]).all() and tokens[3:].sum() >= everything[3:].sum() - 64 - 2 * len(shards)


def test_batch_plans_shard_the_same_global_batches_across_ranks():
    single = BatchPlan(start=40, micro_batch=8, grad_accum=1)
    ranks = [BatchPlan(start=40, micro_batch=2, grad_accum=2, rank=r, world_size=2) for r in range(2)]
    it, its = single.micro_batches(), [r.micro_batches() for r in ranks]
    for _ in range(5):
        expected = next(it)
        got = sorted(i for r in its for _ in range(2) for i in next(r))
        assert got == expected


def test_example_noise_depends_on_position_not_on_who_reads_it(tiny_run, shards, vocab):
    objective = build_objective("mlm", vocab, 64)
    windows = PackedWindows(shards, objective.raw_length, objective.separator, seed=1)
    stream = ExampleStream(windows, objective, seed=1)
    again = ExampleStream(PackedWindows(shards, objective.raw_length, objective.separator, seed=1), objective, seed=1)
    n = windows.per_epoch
    for index in (0, 7, n + 7):
        assert (stream[index]["labels"] == again[index]["labels"]).all()
    # The same window in the next epoch is masked afresh (dynamic masking).
    fixed = ExampleStream(PackedWindows(shards, objective.raw_length, objective.separator, seed=1, shuffle=False),
                          objective, seed=1)
    first, second = fixed[7], fixed[n + 7]
    assert (np.where(first["labels"] >= 0, first["labels"], first["input_ids"])
            == np.where(second["labels"] >= 0, second["labels"], second["input_ids"])).all()
    assert not (first["labels"] == second["labels"]).all()


def test_data_loader_workers_give_the_same_batches(tiny_run, shards, vocab):
    from corpusforge.trainers.data import make_loader

    objective = build_objective("clm", vocab, 32)
    stream = ExampleStream(PackedWindows(shards, objective.raw_length, objective.separator, seed=1), objective, 1)
    plan = BatchPlan(start=13, micro_batch=4, grad_accum=1)
    a, b = make_loader(stream, plan, num_workers=0), make_loader(stream, plan, num_workers=1)
    for _ in range(3):
        x, y = next(a), next(b)
        assert all((x[k] == y[k]).all() for k in x)


def test_every_data_loader_is_built_by_make_loader():
    """make_loader gives a worker's UserError back its own one line (worker_errors); a DataLoader built elsewhere
    would give the user torch's re-raise, the worker's traceback as the message."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    built = [str(path.relative_to(root)) for package in ("corpusforge", "pipeline", "tokenizer", "trainers")
             for path in sorted((root / package).rglob("*.py")) if "DataLoader(" in path.read_text(encoding="utf-8")]
    assert built == ["trainers/data.py"]


class _Raises(torch.utils.data.Dataset):
    def __init__(self, exc):
        self.exc = exc

    def __len__(self):
        return 4

    def __getitem__(self, index):
        raise self.exc


@pytest.mark.parametrize("exc", [OSError(5, "Input/output error", "/data/part-0.arrow"),
                                 OSError(28, "No space left on device", "/data/o'brien: part-0.arrow"),
                                 UserError("part-0.arrow was cut to 100 bytes while it was read: rebuild it")])
def test_an_exception_in_a_data_loader_worker_keeps_its_type_and_one_line_message(exc):
    """torch re-raises a worker's exception as its type with the worker's whole traceback as the message;
    ``worker_errors`` gives it back its own message, whatever the type (the CLI prints it as one line)."""
    loader = torch.utils.data.DataLoader(_Raises(exc), batch_size=2, num_workers=1)
    with pytest.raises(type(exc)) as info:
        next(worker_errors(iter(loader)))
    assert str(info.value) == str(exc) and "Traceback" not in str(info.value)
    # errno and the file name too: a full disk in a worker is the CLI's "no space left" line naming the file
    assert getattr(info.value, "errno", None) == getattr(exc, "errno", None)
    assert getattr(info.value, "filename", None) == getattr(exc, "filename", None)
