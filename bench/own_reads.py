"""What reading corpusforge's own outputs through ordinary reads costs (docs/outputs.md, "Shards that change while
they are read"): peak RSS added, CPU seconds and bytes read (``rchar`` of ``/proc/self/io``: every byte a read
system call returned, from the page cache or the disk) of each read, each in a fresh process.

- a clean shard of ``--shard-mb`` MB of text (the default ``output.shard_target_mb``), Arrow stream format: every
  batch read with its text touched (tokenize, tokenizer training, the report); the counts that tokenizer training
  plans from (``tokenizer.corpus.text_bytes``: documents and text bytes); tokenize's own counts before it encodes
  (``_documents``, the progress total, and ``_PlanUnits``, the units of work: rows per record batch), of the Arrow
  shard and of the same rows in Parquet;
- token shards of ``--tokens`` million uint16 tokens (4 shards): ``TokenShards`` opened as the trainer does (alone,
  and then pickled and unpickled as a DataLoader worker started by spawn or forkserver receives it), then
  ``--windows`` windows of 1,024 tokens at random places (``PackedWindows``), and ``max_token_id``.

    python bench/own_reads.py     # this tree (to compare with another commit, check it out and run it again)

Peak RSS: the process's high-water mark reset (``/proc/self/clear_refs``) after the imports, minus the RSS then.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

REPO = pathlib.Path(__file__).resolve().parents[1]

_MEASURE = textwrap.dedent("""
    import json, pickle, sys, time
    what, paths = sys.argv[1], json.loads(sys.argv[2])
    def status(key):
        return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key)) / 1024
    def rchar():
        return next(int(l.split()[1]) for l in open("/proc/self/io") if l.startswith("rchar:"))
    import numpy as np, pyarrow as pa, pyarrow.compute as pc
    from corpusforge.core.shard_files import open_shard
    from corpusforge.tokenizer.corpus import text_bytes
    from corpusforge.tokenizer.token_shards import TokenShards
    from corpusforge.tokenizer.tokenize import _documents, _PlanUnits
    from corpusforge.trainers.data import PackedWindows
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM, the peak RSS
    base, start, read = status("VmRSS:"), time.process_time(), rchar()
    if what == "shard: every batch, text touched":
        n = sum(int(pc.sum(pc.utf8_length(b.column("text"))).as_py()) for b in open_shard(paths[0]).batches())
    elif what == "shard: offsets only (text_bytes)":
        n = text_bytes(paths)[1]
    elif what.startswith("tokenize: rows"):
        n = _documents(paths)
    elif what.startswith("tokenize: units"):
        n = len(list(_PlanUnits(4096).process(paths[0])))
    elif what == "token shards: open":
        n = len(TokenShards(paths))
    elif what == "token shards: open + spawned worker":
        n = len(pickle.loads(pickle.dumps(TokenShards(paths))))
    elif what == "token shards: open + windows":
        windows = PackedWindows(TokenShards(paths), 1024, [0], seed=0)
        n = sum(int(windows.window(0, int(s)).sum()) for s in np.random.default_rng(0).integers(windows.per_epoch, size=int(sys.argv[3])))
    else:
        n = TokenShards(paths).max_token_id()
    print(json.dumps({"rss_mb": status("VmHWM:") - base, "cpu_s": time.process_time() - start, "n": n,
                      "read_mb": (rchar() - read) / 1e6}))
""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shard-mb", type=float, default=128.0)
    parser.add_argument("--tokens", type=float, default=100.0, help="millions of tokens")
    parser.add_argument("--windows", type=int, default=20_000)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    import numpy as np
    import pyarrow as pa

    from corpusforge.core.shard_files import ShardFormat, write_shard
    from corpusforge.tokenizer.token_shards import write_token_shards

    with tempfile.TemporaryDirectory() as work:
        shard = os.path.join(work, "part-00000-of-00001.arrow")
        text = "the cat sat on a warm mat and slept while seven owls watched " * 100  # ~6 KB
        rows = int(args.shard_mb * 1e6 / len(text))
        schema = pa.schema([pa.field("id", pa.string()), pa.field("text", pa.large_string())])
        write_shard(shard, schema, ({"id": f"doc-{i:08d}", "text": text} for i in range(rows)))
        parquet = os.path.join(work, "part-00000-of-00001.parquet")
        write_shard(parquet, schema, ({"id": f"doc-{i:08d}", "text": text} for i in range(rows)), ShardFormat("parquet"))
        rng = np.random.default_rng(0)
        per_doc = 1000
        docs = int(args.tokens * 1e6 / per_doc)
        documents = rng.integers(0, 60_000, size=(docs, per_doc), dtype=np.uint16)
        tokens = write_token_shards(os.path.join(work, "tokens"), documents, docs_per_shard=-(-docs // 4))
        print(f"shard {os.path.getsize(shard) / 1e6:.0f} MB ({rows:,} rows), token shards "
              f"{sum(p.stat().st_size for p in tokens) / 1e6:.0f} MB")
        tokens = [str(p) for p in tokens]
        for what, paths in (("shard: every batch, text touched", [shard]), ("shard: offsets only (text_bytes)", [shard]),
                            ("tokenize: rows (_documents), arrow", [shard]), ("tokenize: rows (_documents), parquet", [parquet]),
                            ("tokenize: units (_PlanUnits), arrow", [shard]), ("tokenize: units (_PlanUnits), parquet", [parquet]),
                            ("token shards: open", tokens), ("token shards: open + spawned worker", tokens),
                            ("token shards: open + windows", tokens), ("token shards: max_token_id", tokens)):
            out = subprocess.run([sys.executable, "-c", _MEASURE, what, json.dumps(paths),
                                  str(args.windows)], capture_output=True, text=True, env={**os.environ,
                                                                                          "OMP_NUM_THREADS": "1"})
            if out.returncode:
                raise SystemExit(out.stderr)
            result = json.loads(out.stdout)
            print(f"  {what:38s} +{result['rss_mb']:7.1f} MB peak RSS  {result['cpu_s']:6.2f} CPU s  "
                  f"{result['read_mb']:8.1f} MB read")


if __name__ == "__main__":
    main()
