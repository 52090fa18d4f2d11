"""TokenShards (the trainer's reader of token shards): opening reads metadata only (each record batch's header and
its tokens' offsets), a spawned DataLoader worker reuses what the parent found, and every check of a shard that
changed or is not a token shard stays one line naming the file (docs/outputs.md, "Shards that change while they
are read")."""
import json
import os
import pickle

import numpy as np
import pyarrow as pa
import pytest

from corpusforge.core.errors import UserError
from corpusforge.tokenizer.token_shards import TokenShards, token_schema, write_token_shards


def _rchar() -> int:
    """Bytes this process's read system calls returned so far (page cache or disk)."""
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


@pytest.fixture
def docs():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 60_000, size=int(n)).tolist() for n in rng.integers(200, 800, size=3_000)]


def test_opening_reads_the_headers_and_offsets_not_the_tokens(tmp_path, docs):
    paths = write_token_shards(tmp_path, docs, docs_per_shard=1_000)
    size = sum(p.stat().st_size for p in paths)  # ~3 MB of tokens
    before = _rchar()
    shards = TokenShards(paths)
    read = _rchar() - before
    # offsets: 8 bytes a document, headers and footers a few hundred bytes a batch; the old open read every byte
    assert read < 8 * len(docs) + 600 * (len(docs) // 256 + 4 * len(paths)), (read, size)
    assert [shards.document(i).tolist() for i in range(len(docs))] == docs
    assert shards.num_tokens == sum(map(len, docs)) and shards.max_token_id() == max(map(max, docs))


def test_a_spawned_worker_reuses_the_places_instead_of_reading_the_shards_again(tmp_path, docs):
    """A DataLoader worker started by spawn or forkserver unpickles the dataset: it reopens the files, reads none."""
    paths = write_token_shards(tmp_path, docs, docs_per_shard=1_000)
    payload = pickle.dumps(TokenShards(paths))
    before = _rchar()
    worker = pickle.loads(payload)
    assert _rchar() - before < 4_096  # the old worker read every shard again (~3 MB)
    assert [worker.document(i).tolist() for i in (0, 1_500, 2_999)] == [docs[0], docs[1_500], docs[2_999]]
    assert (worker.lengths == [len(d) for d in docs]).all()


@pytest.mark.parametrize("change", ["cut", "replaced", "rewritten"])
def test_a_shard_changed_before_a_spawned_worker_reopens_it_is_one_line(tmp_path, docs, change):
    """The worker's places are the parent's: a file that is no longer the one they were read from is refused, not
    read at other places (the old worker read the new file's offsets, so its documents no longer matched the
    lengths the parent laid its windows out by)."""
    paths = write_token_shards(tmp_path / "a", docs, docs_per_shard=1_000)
    payload = pickle.dumps(TokenShards(paths))
    if change == "cut":
        os.truncate(paths[1], paths[1].stat().st_size // 2)
    elif change == "replaced":  # another tokenize's shard renamed over it
        other = write_token_shards(tmp_path / "b", docs[::-1], docs_per_shard=1_000)
        os.replace(other[1], paths[1])
    else:  # rewritten in place, same size
        data = bytearray(paths[1].read_bytes())
        data[-200:-100] = bytes(100)
        paths[1].write_bytes(bytes(data))
        os.utime(paths[1], ns=(1, 1))
    with pytest.raises(UserError) as caught:
        pickle.loads(payload)
    message = str(caught.value)
    assert message.startswith(str(paths[1])) and "\n" not in message and "corpusforge tokenize" in message
    assert ("was cut to" if change == "cut" else "was replaced or changed") in message


def _write(path, table, **options):
    with pa.ipc.new_file(str(path), table.schema, options=pa.ipc.IpcWriteOptions(**options)) as writer:
        writer.write_table(table, max_chunksize=100)
    return path


def _table(docs, tokens_type=pa.large_list(pa.uint16())):
    return pa.table({"id": [f"d{i}" for i in range(len(docs))], "tokens": pa.array(docs, tokens_type),
                     "source": [""] * len(docs)})


def test_damaged_offsets_are_caught_at_open(tmp_path, docs):
    """Offsets that do not rise, or point past the tokens, are found when the shard is opened (the headers and the
    offsets are all that opening reads), never read as other documents."""
    path = write_token_shards(tmp_path, docs[:100], docs_per_shard=100)[0]
    data = bytearray(path.read_bytes())
    offsets = np.cumsum([0] + [len(d) for d in docs[:100]]).astype("<i8").tobytes()
    at = bytes(data).index(offsets[8:64])  # the tokens' offsets buffer, past its leading 0
    data[at + 8 * 5:at + 8 * 6] = (10**9).to_bytes(8, "little")  # document 5 ends far past the tokens
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match="is not a readable token shard .*offsets do not rise within its tokens"):
        TokenShards([path])


def test_foreign_layouts_are_read_right_or_refused(tmp_path, docs):
    small = docs[:300]
    extra = _table(small).append_column("score", pa.array(np.arange(300.0))).select(["score", "id", "tokens"])
    good = {"extra columns": extra, "list<uint32>": _table(small, pa.list_(pa.uint32())),
            "no batches": _table([]).slice(0, 0)}
    for name, table in good.items():
        shards = TokenShards([_write(tmp_path / f"{name}.arrow", table)])
        assert [shards.document(i).tolist() for i in range(len(shards))] == table.column("tokens").to_pylist(), name
    refused = {
        "zstd": (_write(tmp_path / "z.arrow", _table(small), compression="zstd"), "not stored as corpusforge writes"),
        "int64 tokens": (_write(tmp_path / "i.arrow", _table(small, pa.large_list(pa.int64()))), "not large_list"),
        "other name": (_write(tmp_path / "n.arrow", _table(small).rename_columns(["id", "ids", "source"])),
                       "no 'tokens' column"),
        "dictionary": (_write(tmp_path / "d.arrow", _table(small).set_column(
            0, "id", pa.array([f"d{i}" for i in range(300)]).dictionary_encode())), "dictionary batch"),
        "stream": (tmp_path / "s.arrow", "not an Arrow IPC file"),
    }
    with pa.ipc.new_stream(str(tmp_path / "s.arrow"), token_schema("uint16")) as writer:
        writer.write_table(_table(small).cast(token_schema("uint16")))
    for name, (path, why) in refused.items():
        with pytest.raises(UserError, match=why) as caught:
            TokenShards([path])
        assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value), name


def test_a_shard_cut_at_a_batch_boundary_is_refused_not_read_short(tmp_path, docs):
    """The footer lists the batches: a file cut just after one of them (its footer gone) is one line, where the
    old open read the batches before the cut and gave fewer documents."""
    path = write_token_shards(tmp_path, docs[:1_000], docs_per_shard=1_000)[0]
    with pa.OSFile(str(path)) as source:  # where batch 2's message starts: after batch 1's body
        source.seek(8)
        reader = pa.ipc.MessageReader.open_stream(source)
        for _ in range(3):  # the schema, batches 0 and 1
            reader.read_next_message()
        cut = source.tell()
    os.truncate(path, cut)
    with pytest.raises(UserError, match="is not a readable token shard"):
        TokenShards([path])


def _foreign(tmp_path, name):
    """A shard of another program's layout (or damaged so), as ``name`` says."""
    small = [[1, 2, 3], [], [40_000, 5]] * 40
    tables = {
        "int64 tokens": _table(small, pa.large_list(pa.int64())),
        "int32 tokens": _table(small, pa.large_list(pa.int32())),
        "float tokens": _table(small, pa.large_list(pa.float32())),
        "uint64 tokens": _table(small, pa.large_list(pa.uint64())),
        "string tokens": _table(small).set_column(1, "tokens", pa.array([" ".join(map(str, d)) for d in small])),
        "fixed-size tokens": _table(small).set_column(1, "tokens", pa.array([(d + [0, 0, 0])[:3] for d in small],
                                                                            pa.list_(pa.uint16(), 3))),
        "nested tokens": _table(small).set_column(1, "tokens", pa.array([[d] for d in small],
                                                                         pa.large_list(pa.large_list(pa.uint16())))),
        "dictionary tokens": _table(small).set_column(1, "tokens", pa.array(
            [" ".join(map(str, d)) for d in small]).dictionary_encode()),
        "null documents": _table([None if i % 3 == 1 else d for i, d in enumerate(small)]),
        "null token ids": _table([d[:1] + [None] + d[1:] for d in small]),
        "dictionary ids": _table(small).set_column(0, "id", pa.array([f"d{i}" for i in range(len(small))])
                                                   .dictionary_encode()),
        "integer ids": _table(small).set_column(0, "id", pa.array(range(len(small)))),
        "no ids": _table(small).drop_columns(["id"]),
        "null ids": _table(small).set_column(0, "id", pa.array([None] * len(small), pa.string())),
        "two token columns": pa.Table.from_arrays([pa.array(small, pa.large_list(pa.uint16()))] * 2,
                                                  names=["tokens", "tokens"]),
    }
    if name in tables:
        return _write(tmp_path / "part-00000-of-00001.arrow", tables[name])
    path = tmp_path / "part-00000-of-00001.arrow"
    if name == "stream":
        with pa.ipc.new_stream(str(path), token_schema("uint16")) as writer:
            writer.write_table(_table(small).cast(token_schema("uint16")))
    else:
        path.write_bytes(b'{"tokens": [1, 2, 3]}\n')
    return path


FOREIGN = ["int64 tokens", "int32 tokens", "float tokens", "uint64 tokens", "string tokens", "fixed-size tokens",
           "nested tokens", "dictionary tokens", "null documents", "null token ids", "dictionary ids", "integer ids",
           "no ids", "null ids", "two token columns", "stream", "not arrow"]


@pytest.mark.parametrize("name", FOREIGN)
def test_every_reader_refuses_a_foreign_shard_in_one_line_naming_it(tmp_path, name):
    """TokenShard (and TokenCorpus's splits, which open it) as TokenShards: another program's layout is one line
    naming the file, never a traceback (AttributeError, ArrowInvalid, KeyError, ValueError on the reader before) nor
    other numbers read as token ids (float, signed or 64-bit tokens were read before)."""
    from corpusforge.tokenizer.token_shards import TokenCorpus, TokenShard

    (tmp_path / "tokens" / "train").mkdir(parents=True)
    path = _foreign(tmp_path / "tokens" / "train", name)
    (tmp_path / "tokens" / "manifest.json").write_text(json.dumps(
        {"vocab_size": 65_000, "dtype": "uint16", "special_tokens": {"eos": 0}, "tokenizer": "../t.json",
         "splits": {"train": {"shards": [f"train/{path.name}"], "documents": 120, "tokens": 200}}}))
    readers = [lambda: TokenShard(str(path)), lambda: TokenCorpus(str(tmp_path / "tokens")).split("train").shard(0)]
    if name in ("integer ids", "no ids", "null ids"):  # TokenShards reads no id: it reads the tokens right
        shards = TokenShards([path])
        assert [shards.document(i).tolist() for i in range(len(shards))] == [[1, 2, 3], [], [40_000, 5]] * 40
    else:
        readers.append(lambda: TokenShards([path]))
    for reader in readers:
        with pytest.raises(UserError) as caught:
            reader()
        assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


@pytest.mark.parametrize("manifest", ["{", "[]", '{"splits": []}', '{"splits": {"train": []}}',
                                      '{"splits": {"train": {"shards": "part-0.arrow"}}}',
                                      '{"splits": {"train": {"shards": [3]}}}',
                                      '{"splits": {"train": {"shards": ["a.arrow"]}}, "vocab_size": "big"}',
                                      '{"splits": {"train": {"shards": ["a.arrow"]}}, "tokenizer": 7}',
                                      '{"splits": {"train": {"shards": ["a.arrow"], "documents": 1, "tokens": 1}}, '
                                      '"vocab_size": 9, "dtype": "float32", "special_tokens": {}}',
                                      b"\xff\xfe"])
def test_a_damaged_or_foreign_manifest_is_one_line_naming_it(tmp_path, manifest):
    from corpusforge.tokenizer.token_shards import TokenCorpus
    from corpusforge.trainers.data import TokenData

    (tmp_path / "tokens").mkdir()
    path = tmp_path / "tokens" / "manifest.json"
    path.write_bytes(manifest if isinstance(manifest, bytes) else manifest.encode())
    readers = [lambda: TokenCorpus(str(tmp_path / "tokens"))]
    if "float32" not in str(manifest):  # the trainer needs no dtype: it reads it from the shards
        readers.append(lambda: TokenData.from_run(tmp_path))
    for reader in readers:
        with pytest.raises(UserError) as caught:
            reader()
        assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)
