"""Files corpusforge wrote and reads back, cut short by another process while they are read (docs/outputs.md,
"Shards that change while they are read"). Each read runs in a child process: a memory-mapped shard cut short
killed the reader with SIGBUS (signal 7), which Python cannot catch and which would kill pytest itself."""
import json
import pathlib
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from corpusforge.core.shard_files import ShardFormat, write_shard
from corpusforge.tokenizer.token_shards import write_token_shards

REPO = str(pathlib.Path(__file__).resolve().parents[2])
SCHEMA = pa.schema([pa.field("id", pa.string()), pa.field("text", pa.large_string())])
ROWS = [{"id": f"doc-{i:05d}", "text": f"text {i} " * 200} for i in range(6000)]  # ~10 MB: many pages past the cut

# In the child: open the shard, read its first batch, cut the file to half (as another process would), read on.
# Prints {"rows": rows read, "error": the UserError's line or None}.
_SHARD = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[2])
    from corpusforge.core.errors import UserError
    from corpusforge.core.shard_files import open_shard

    path, rows, error = sys.argv[1], 0, None
    try:
        reader = open_shard(path)
        for index, batch in enumerate(reader.batches()):
            if index == 0:
                os.truncate(path, os.path.getsize(path) // 2)
            rows += len(batch.column("text").to_pylist())  # every value touched
    except UserError as exc:
        error = str(exc)
    print(json.dumps({"rows": rows, "error": error}))
""")

# In the child: open the token shards as the trainer does, cut each to half, read every document.
_TOKENS = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[2])
    from corpusforge.core.errors import UserError
    from corpusforge.tokenizer.token_shards import TokenShards

    paths, tokens, error = json.loads(sys.argv[1]), 0, None
    try:
        shards = TokenShards(paths)
        for path in paths:
            os.truncate(path, os.path.getsize(path) // 2)
        for i in range(len(shards)):
            tokens += int(shards.document(i).sum() > -1) and len(shards.document(i))
    except UserError as exc:
        error = str(exc)
    print(json.dumps({"tokens": tokens, "error": error}))
""")


def _child(script: str, *args: str) -> dict:
    result = subprocess.run([sys.executable, "-c", script, *args, REPO], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (f"the reader died ({'signal ' + str(-result.returncode) if result.returncode < 0 else result.returncode}): "
                                    f"{result.stderr[-800:]}")
    return json.loads(result.stdout)


@pytest.mark.parametrize("fmt", ["arrow", "arrow-file", "parquet"])
def test_a_shard_cut_short_while_it_is_read_is_one_line_not_sigbus(tmp_path, fmt):
    path = tmp_path / ("part-00000-of-00001.parquet" if fmt == "parquet" else "part-00000-of-00001.arrow")
    if fmt == "arrow-file":  # token shards and older builds' clean shards are IPC files
        with pa.ipc.new_file(str(path), SCHEMA) as writer:
            writer.write_table(pa.Table.from_pylist(ROWS, SCHEMA), max_chunksize=1024)
    else:
        write_shard(str(path), SCHEMA, ROWS, ShardFormat(fmt), row_group_bytes=1 << 20)
    out = _child(_SHARD, str(path))  # before: killed by signal 7 (SIGBUS), the shard memory-mapped
    assert 0 < out["rows"] < len(ROWS)  # the first batches were read; the cut stopped the rest
    assert out["error"].startswith(str(path)) and "cut from" in out["error"] and "\n" not in out["error"]
    assert "rebuild" in out["error"]


def test_token_shards_cut_short_while_training_reads_them_are_one_line_not_sigbus(tmp_path):
    paths = write_token_shards(tmp_path, [[i % 60000] * 400 for i in range(6000)], docs_per_shard=3000)
    out = _child(_TOKENS, json.dumps([str(p) for p in paths]))  # before: killed by signal 7 (SIGBUS)
    assert 0 < out["tokens"] < 6000 * 400
    assert out["error"].startswith(str(paths[0])) and "was cut to" in out["error"] and "\n" not in out["error"]
    assert "corpusforge tokenize" in out["error"]
