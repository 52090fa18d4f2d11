"""A build over a folder of hostile inputs (issue #35, classes 1-3): every record ends kept, removed or rejected
with a named reason, nothing hangs or exhausts memory, and the manifest names every file read."""
import gzip
import json
import os
import signal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from corpusforge.cli.main import main
from corpusforge.core.shard_files import open_shard, shard_suffix

GOOD = "A plain paragraph of ordinary English prose, long enough for every quality rule to keep it as it is"


def good(tag: str) -> str:
    return f"{GOOD}, {tag}."


def _line(record) -> bytes:
    return json.dumps(record).encode() + b"\n"


def _rows(directory):
    rows = []
    for f in sorted(directory.glob("part-*")):
        if shard_suffix(f.name):
            rows += open_shard(str(f)).read_all().to_pylist()
    return rows


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    data = tmp / "data"
    data.mkdir()
    expected = {}  # file -> records it holds, as the reader counts them
    # class 1: deep nesting that json cannot parse (and is over output.max_record_bytes), and nesting that parses but fails pickling in a later step
    # (on a record quality removes), and an integer past Python's digit limit
    (data / "deep.jsonl").write_bytes(
        b'{"text": "x", "m": ' + b"[" * 500 + b"]" * 500 + b"}\n"
        + b'{"text": "y", "m": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
        + b'{"text": "z", "n": ' + b"9" * 5000 + b"}\n" + _line({"text": good("deep")}))
    expected["deep.jsonl"] = 4
    # class 1: a Parquet row whose value Python cannot hold (a date past year 9999) among good rows
    table = pa.table({"text": [good("one"), good("two"), good("three")],
                      "when": pa.array([0, 2 ** 62, 0], pa.timestamp("ms"))})
    pq.write_table(table, data / "dates.parquet")
    expected["dates.parquet"] = 3
    # class 2: a line over output.max_record_bytes, then a good one
    (data / "long.jsonl").write_bytes(_line({"text": "w " * 200_000}) + _line({"text": good("after")}))
    expected["long.jsonl"] = 2
    # class 2: a FIFO and a link to /dev/zero: rejected by name, never read
    os.mkfifo(data / "pipe.jsonl")
    (data / "zero.jsonl").symlink_to("/dev/zero")
    expected["pipe.jsonl"] = expected["zero.jsonl"] = 1
    # class 3: a complete .zst followed by zero padding, a .gz followed by garbage: every record, then the tail
    five = b"".join(_line({"text": good(f"number {i}")}) for i in range(5))
    (data / "padded.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(five) + b"\0" * 512)
    (data / "garbage.jsonl.gz").write_bytes(gzip.compress(five, mtime=0) + b"not gzip at all\n")
    expected["padded.jsonl.zst"] = expected["garbage.jsonl.gz"] = 6
    # class 3: a file name that is not UTF-8, and names with glob characters
    (data / os.fsdecode(b"caf\xe9.jsonl")).write_bytes(_line({"text": good("latin-1 name")}))
    expected["caf\\xe9.jsonl"] = 1
    (tmp / "corpus[2024]").mkdir()
    (tmp / "corpus[2024]" / "x.jsonl").write_bytes(_line({"id": "literal", "text": good("literal")}))
    (tmp / "corpus2").mkdir()
    (tmp / "corpus2" / "y.jsonl").write_bytes(_line({"id": "globbed", "text": good("globbed")}))
    expected["x.jsonl"] = 1
    (tmp / "named").mkdir()  # a non-UTF-8 name given as the input path itself (it reaches manifest.json's config)
    named = tmp / "named" / os.fsdecode(b"na\xefve.jsonl")
    named.write_bytes(_line({"text": good("named literally")}))
    expected["na\\xefve.jsonl"] = 1
    config = tmp / "corpus.yaml"
    config.write_text(json.dumps({
        "inputs": [{"path": str(data), "name": "data"}, {"path": str(tmp / "corpus[2024]"), "name": "lit"},
                   {"path": str(named), "name": "named"}],
        "output": {"max_record_bytes": 100_000},
        "dedup": {"enabled": False}, "pii": {"enabled": False}}))
    def hung(*_):
        raise TimeoutError("the build hung (a reader blocked on the FIFO or read /dev/zero)")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(180)
    try:
        code = main(["build", "--config", str(config), "--run-dir", str(tmp / "run")])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert code == 0
    return tmp / "run", expected


def test_every_record_is_accounted_for_with_a_named_reason(hostile):
    run, expected = hostile
    stats = json.loads((run / "stats.json").read_text())
    accounting = stats["accounting"]
    assert accounting["balanced"] and accounting["input"] == sum(expected.values())
    reasons = sorted((r["path"], r["reason"]) for r in _rows(run / "rejected"))
    assert reasons == sorted([
        ("dates.parquet", "unreadable_record"),
        ("deep.jsonl", "number_too_large"), ("deep.jsonl", "oversize_record"), ("deep.jsonl", "too_deep"),
        ("garbage.jsonl.gz", "corrupt_compressed_data"), ("long.jsonl", "oversize_record"),
        ("padded.jsonl.zst", "corrupt_compressed_data"),
        ("pipe.jsonl", "not_a_regular_file"), ("zero.jsonl", "not_a_regular_file")])


def test_what_the_user_named_is_what_is_read(hostile):
    run, _ = hostile
    texts = [r["text"] for r in _rows(run / "clean")]
    assert sum(", number " in t for t in texts) == 10  # every record before the padding or garbage
    for tag in ("latin-1 name.", "named literally.", "literal."):
        assert any(t.endswith(tag) for t in texts), tag
    assert not any(t.endswith("globbed.") for t in texts)  # corpus[2024] is the folder of that name, not corpus2/
    manifest = json.loads((run / "manifest.json").read_text())
    named = {os.path.basename(f["path"]): f.get("not_read") for f in manifest["input_files"]}
    assert named == {"caf\\xe9.jsonl": None, "dates.parquet": None, "deep.jsonl": None, "garbage.jsonl.gz": None,
                     "long.jsonl": None, "padded.jsonl.zst": None, "pipe.jsonl": "a FIFO (named pipe)",
                     "zero.jsonl": "a symbolic link to a character device", "x.jsonl": None, "na\\xefve.jsonl": None}
    assert manifest["config"]["inputs"][2]["path"].endswith("/named/na\\xefve.jsonl")
