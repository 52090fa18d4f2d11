"""What the quality stage keeps of each kind of document in the built-in sample (``sample_kind``), with the
defaults and with the defaults before issue 39 (language-ID floor 0.65 with every language kept, duplicated
n-gram rules on). Dedup and PII are off, so each figure is the quality stage's own.

    python bench/sample_kinds.py --documents 1000 --work /tmp/cf-kinds
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.ablate_defaults import BEFORE_39  # noqa: E402
from corpusforge.config import load_config  # noqa: E402
from corpusforge.pipeline.build import run_build  # noqa: E402
from corpusforge.pipeline.run import open_run  # noqa: E402
from corpusforge.pipeline.sample.generate import write_sample  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    sample = write_sample(os.path.join(args.work, "sample"), documents=args.documents)
    before = [f"{key}={json.dumps(value)}" for key, value in BEFORE_39.items()]
    kinds: dict[str, str] = {}
    for name, extra in (("all", ["quality.enabled=false"]), ("before-39", before), ("defaults", [])):
        run = os.path.join(args.work, name)
        config = load_config(None, ["dedup.enabled=false", "pii.enabled=false", f"output.run_dir={run}",
                                    "output.overwrite=true"] + extra, base={"inputs": sample.inputs})
        run_build(config, out=open(os.devnull, "w"), progress=False)
        built = open_run(run)
        if name == "all":
            table = built.clean.to_table(columns=["id", "metadata"])
            for doc_id, metadata in zip(table.column("id").to_pylist(), table.column("metadata").to_pylist()):
                meta = json.loads(metadata) if isinstance(metadata, str) else (metadata or {})
                kinds[doc_id] = str(meta.get("sample_kind") or "note")
            continue
        kept = collections.Counter(kinds[i] for i in built.clean.to_table(columns=["id"]).column("id").to_pylist())
        removed = built.removed.to_table(columns=["id", "reason"])
        reasons: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        for doc_id, reason in zip(removed.column("id").to_pylist(), removed.column("reason").to_pylist()):
            reasons[kinds[doc_id]][reason] += 1
        print(name)
        for kind in sorted(set(kept) | set(reasons)):
            gone = sum(reasons[kind].values())
            why = ", ".join(f"{r} {n}" for r, n in reasons[kind].most_common())
            print(f"  {kind:<16} kept {kept[kind]:>4} of {kept[kind] + gone:>4}  {why}")


if __name__ == "__main__":
    main()
