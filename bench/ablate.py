"""Does the pipeline make better models? raw vs quality-only vs dedup-only vs full on the built-in sample.

    python bench/ablate.py --work /tmp/cf-ablate --documents 200 --tokens 102400 --seeds 3
    python bench/ablate.py --work /tmp/cf-ablate-builds --documents 200 --builds-only   # stage reuse, builds alone

The corpus is the built-in sample (``corpusforge.pipeline.sample``: real prose from Python's documentation,
with junk pages, exact and near duplicates, personal data, other languages and bad records). The held-out set
is the documentation paragraphs the sample does not use: clean prose of the same kind, none of it in any
variant's training text (ablate checks). ``corpusforge ablate`` runs in a subprocess; the script prints its
table, the wall time and the largest peak RSS of a process it waited for (the ablate process). Rerunning with the same
``--work`` reuses every finished build and model (resume), so pass a new directory to time a whole run.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from corpusforge.pipeline.sample import write_sample  # noqa: E402
from corpusforge.pipeline.sample.generate import _paragraphs  # noqa: E402

VARIANTS = ["raw:quality.enabled=false,dedup.enabled=false,pii.enabled=false",
            "quality-only:dedup.enabled=false,pii.enabled=false",
            "dedup-only:quality.enabled=false,pii.enabled=false",
            "full"]


def write_corpus(work: str, documents: int) -> tuple[str, str]:
    """The sample, a config reading it, and held-out documentation paragraphs the sample does not contain."""
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq
    import yaml

    sample = write_sample(os.path.join(work, "sample"), documents=documents)
    used = []
    with gzip.open(os.path.join(work, "sample", "web.jsonl.gz"), "rt", errors="replace") as handle:
        for line in handle:  # the sample holds bad records on purpose: skip what is not a JSON object
            try:
                record = json.loads(line)
            except ValueError:
                continue
            used.append(record.get("text") if isinstance(record, dict) else None)
    used += pq.read_table(os.path.join(work, "sample", "reference.parquet")).column("text").to_pylist()
    used += ipc.open_file(os.path.join(work, "sample", "archive.arrow")).read_all().column("text").to_pylist()
    seen = "\n\n".join(t for t in used if isinstance(t, str))
    heldout = os.path.join(work, "heldout.jsonl")
    with open(heldout, "w", encoding="utf-8") as handle:
        for paragraph in _paragraphs()[:-12]:  # the last 12 are the sample's plain-text notes
            if paragraph not in seen:
                handle.write(json.dumps({"text": paragraph, "source": "python-docs"}) + "\n")
    config = os.path.join(work, "corpus.yaml")
    with open(config, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"inputs": sample.inputs}, handle)
    return config, heldout


def compare_builds(config_path: str, work: str) -> None:
    """The four variants' builds alone, twice in this process: each from scratch (no stage reuse), then as
    ``ablate`` runs them (stage checkpoints, each build starting after the stages it shares with an earlier
    one). Prints both wall times and checks the clean corpora are identical."""
    import shutil

    from corpusforge.ablate.reuse import build_reusing_stages, drop_checkpoints
    from corpusforge.ablate.variants import parse_variant, variant_config
    from corpusforge.pipeline.build import run_build
    from corpusforge.config import load_config

    base = load_config(config_path, [])
    configs = [variant_config(base, parse_variant(spec)) for spec in VARIANTS]
    fingerprints, seconds = {}, {}
    for mode in ("scratch", "reuse"):
        root = os.path.join(work, f"builds-{mode}")
        shutil.rmtree(root, ignore_errors=True)
        earlier: dict = {}
        started = time.perf_counter()
        for number, config in enumerate(configs):
            config = variant_config(config, parse_variant("x"))  # a fresh copy per mode
            build_dir = os.path.join(root, str(number))
            if mode == "reuse":
                build_reusing_stages(config, build_dir, earlier, out=open(os.devnull, "w"), progress=False)
            else:
                config.output.run_dir = build_dir
                run_build(config, out=open(os.devnull, "w"), progress=False)
            manifest = json.load(open(os.path.join(build_dir, "manifest.json"), encoding="utf-8"))
            fingerprints.setdefault(number, set()).add(manifest["corpus_fingerprint"])
        drop_checkpoints(list(earlier))
        seconds[mode] = time.perf_counter() - started
    same = all(len(f) == 1 for f in fingerprints.values())
    print(f"builds of {len(configs)} variants: from scratch {seconds['scratch']:.1f} s, with stage reuse "
          f"{seconds['reuse']:.1f} s ({seconds['scratch'] / seconds['reuse']:.2f}x); clean corpora identical: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", required=True, help="Working directory (sample, held-out set, ablation).")
    parser.add_argument("--documents", type=int, default=200, help="Good documents in the sample.")
    parser.add_argument("--tokens", type=int, default=102400, help="Tokens per model (whole steps of 2,048).")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--vocab-size", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=2e-3, help="Peak learning rate (a debug model learns little in "
                                                                "a few steps at the trainer's default 3e-4).")
    parser.add_argument("--builds-only", action="store_true",
                        help="Time only the variants' builds, from scratch vs with ablate's stage reuse.")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    config, heldout = write_corpus(args.work, args.documents)
    if args.builds_only:
        return compare_builds(config, args.work)
    command = [sys.executable, "-m", "corpusforge.cli", "ablate", "-c", config, "--eval", heldout,
               "--out", os.path.join(args.work, "out"), "--tokens", str(args.tokens), "--seeds", str(args.seeds),
               "--no-progress", "--set", f"tokenizer.vocab_size={args.vocab_size}", "--set", f"train.optim.lr={args.lr}"]
    for variant in VARIANTS:
        command += ["--variant", variant]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 / 1024  # KiB -> GiB, largest child
    report = json.load(open(os.path.join(args.work, "out", "ablation.json"), encoding="utf-8"))
    print(f"{report['model']['parameters']:,}-parameter {report['model']['size']} decoder, {args.tokens:,} tokens "
          f"per model, seeds {report['seeds']}, held-out {report['heldout']['documents']} documents "
          f"({report['heldout']['bytes']:,} bytes)")
    print(f"| variant | kept documents | training tokens | epochs | bits per byte (mean) | seed std | per seed |")
    print("|---|---|---|---|---|---|---|")
    for v in report["variants"]:
        s = v["bits_per_byte_summary"]
        print(f"| {v['name']} | {100 * v['kept_fraction']:.1f} % | {v['tokens']:,} | {v['epochs']:.2f} | "
              f"{s['mean']:.4f} | {s['std']:.4f} | {', '.join(f'{b:.4f}' for b in v['bits_per_byte'])} |")
    print(f"wall {wall:.0f} s (this invocation; phases {report['seconds']}), peak RSS {peak:.2f} GiB")


if __name__ == "__main__":
    main()
