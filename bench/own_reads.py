"""What reading corpusforge's own outputs through ordinary reads costs (docs/outputs.md, "Shards that change while
they are read"): peak RSS added and CPU seconds of each read, each in a fresh process.

- a clean shard of ``--shard-mb`` MB of text (the default ``output.shard_target_mb``), Arrow stream format: every
  batch read with its text touched (tokenize, tokenizer training, the report), and the offsets-only pass that
  tokenize plans from (``tokenizer.corpus.text_bytes``);
- token shards of ``--tokens`` million uint16 tokens (4 shards): ``TokenShards`` opened as the trainer does, then
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
    import json, sys, time
    what, paths = sys.argv[1], json.loads(sys.argv[2])
    def status(key):
        return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key)) / 1024
    import numpy as np, pyarrow as pa, pyarrow.compute as pc
    from corpusforge.core.shard_files import open_shard
    from corpusforge.tokenizer.corpus import text_bytes
    from corpusforge.tokenizer.token_shards import TokenShards
    from corpusforge.trainers.data import PackedWindows
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM, the peak RSS
    base, start = status("VmRSS:"), time.process_time()
    if what == "shard: every batch, text touched":
        n = sum(int(pc.sum(pc.utf8_length(b.column("text"))).as_py()) for b in open_shard(paths[0]).batches())
    elif what == "shard: offsets only (text_bytes)":
        n = text_bytes(paths)[1]
    elif what == "token shards: open + windows":
        windows = PackedWindows(TokenShards(paths), 1024, [0], seed=0)
        n = sum(int(windows.window(0, int(s)).sum()) for s in np.random.default_rng(0).integers(windows.per_epoch, size=int(sys.argv[3])))
    else:
        n = TokenShards(paths).max_token_id()
    print(json.dumps({"rss_mb": status("VmHWM:") - base, "cpu_s": time.process_time() - start, "n": n}))
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

    from corpusforge.core.shard_files import write_shard
    from corpusforge.tokenizer.token_shards import write_token_shards

    with tempfile.TemporaryDirectory() as work:
        shard = os.path.join(work, "part-00000-of-00001.arrow")
        text = "the cat sat on a warm mat and slept while seven owls watched " * 100  # ~6 KB
        rows = int(args.shard_mb * 1e6 / len(text))
        schema = pa.schema([pa.field("id", pa.string()), pa.field("text", pa.large_string())])
        write_shard(shard, schema, ({"id": f"doc-{i:08d}", "text": text} for i in range(rows)))
        rng = np.random.default_rng(0)
        per_doc = 1000
        docs = int(args.tokens * 1e6 / per_doc)
        documents = rng.integers(0, 60_000, size=(docs, per_doc), dtype=np.uint16)
        tokens = write_token_shards(os.path.join(work, "tokens"), documents, docs_per_shard=-(-docs // 4))
        print(f"shard {os.path.getsize(shard) / 1e6:.0f} MB ({rows:,} rows), token shards "
              f"{sum(p.stat().st_size for p in tokens) / 1e6:.0f} MB")
        for what, paths in (("shard: every batch, text touched", [shard]), ("shard: offsets only (text_bytes)", [shard]),
                            ("token shards: open + windows", [str(p) for p in tokens]),
                            ("token shards: max_token_id", [str(p) for p in tokens])):
            out = subprocess.run([sys.executable, "-c", _MEASURE, what, json.dumps(paths),
                                  str(args.windows)], capture_output=True, text=True, env={**os.environ,
                                                                                          "OMP_NUM_THREADS": "1"})
            if out.returncode:
                raise SystemExit(out.stderr)
            result = json.loads(out.stdout)
            print(f"  {what:36s} +{result['rss_mb']:7.1f} MB peak RSS  {result['cpu_s']:6.2f} CPU s")


if __name__ == "__main__":
    main()
