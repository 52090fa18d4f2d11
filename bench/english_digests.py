"""Digests of a build of the sample corpus (tests/pipeline/sample_corpus.py): every clean, removed and rejected
shard and stats.json (less its timings), as test_fast_paths hashes them. Two runs print the same lines when a
change moves no decision and no byte on that corpus (the sample is English, with a few de/fr/es documents).

    .venv/bin/python bench/english_digests.py --docs 400 --out /tmp/digests.json
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corpusforge.cli.main import main  # noqa: E402
from tests.pipeline.sample_corpus import sample_corpus  # noqa: E402
from tests.pipeline.test_fast_paths import _digests  # noqa: E402


def run(docs: int) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        root, config = sample_corpus(pathlib.Path(tmp), documents=docs)
        assert main(["build", "-c", str(config), "--run-dir", str(root / "run"), "--no-progress"]) == 0
        return _digests(root / "run")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    digests = run(args.docs)
    for name, digest in sorted(digests.items()):
        print(digest[:16], name)
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(digests, indent=1, sort_keys=True))
