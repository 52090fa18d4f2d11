"""``corpusforge demo``: the whole chain on the built-in sample, in one run directory."""
from __future__ import annotations

import pathlib
import shutil
import time

from pipeline.config import load_config

# What the demo changes from the defaults, so the small sample shows every stage at work.
DEMO_SETTINGS: dict = {
    "output": {
        "shard_target_mb": 0.25,  # several shards even from a small corpus
        "max_doc_chars": 200_000,  # the sample's oversize record is 300,000 characters
    },
}


def run_demo(args) -> int:
    from pipeline.build import run_build
    from pipeline.sample import write_sample

    run_dir = pathlib.Path(args.run_dir)
    if run_dir.exists() and any(run_dir.iterdir()):
        if "output.overwrite=true" not in args.set:
            from pipeline.errors import UserError

            raise UserError(f"{run_dir} is not empty; remove it or pass --set output.overwrite=true")
        shutil.rmtree(run_dir)
    started = time.time()
    sample = write_sample(run_dir / "sample", documents=args.documents)
    print(f"sample: {sample.records:,} records in {sample.directory} "
          f"({', '.join(f'{k} {v}' for k, v in sample.kinds.items())})", flush=True)
    base = {**DEMO_SETTINGS, "inputs": sample.inputs}
    config = load_config(args.config, [*args.set, f"output.run_dir={run_dir}"], base=base)
    run_build(config, args.beam_args)
    print(f"demo finished in {time.time() - started:.0f} s; everything is in {run_dir}/", flush=True)
    return 0
