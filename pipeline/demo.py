"""``corpusforge demo``: the whole chain on the built-in sample, in one run directory.

sample -> build (every stage) -> tokenizer train -> tokenize -> train a debug-size GPT -> report.
"""
from __future__ import annotations

import pathlib
import shutil
import time

from pipeline.config import load_config
from pipeline.errors import UserError

# What the demo changes from the defaults, so that a small sample shows every stage at work in minutes.
DEMO_SETTINGS: dict = {
    "output": {
        "shard_target_mb": 0.25,  # several shards even from a small corpus
        "max_doc_chars": 200_000,  # the sample's oversize record is 300,000 characters
    },
    "tokenizer": {"family": "decoder", "vocab_size": 4000},
    "tokenize": {"val_fraction": 0.1},
    "train": {
        "objective": "clm", "seq_len": 128, "micro_batch_size": 8, "eval_every": 20, "eval_batches": 4,
        "log_every": 10, "checkpoint_every": 30, "model": {"size": "debug"},
        "optim": {"warmup_steps": 10},
    },
}


def run_demo(args) -> int:
    from pipeline.build import run_build
    from pipeline.report import write_report
    from pipeline.sample import write_sample
    from tokenizer.shards import run_tokenize
    from tokenizer.train import run_train as train_tokenizer
    from trainers.train import run_train as train_model

    run_dir = pathlib.Path(args.run_dir)
    overwrite = any(item.replace(" ", "") == "output.overwrite=true" for item in args.set)
    if run_dir.exists() and any(run_dir.iterdir()):
        if not overwrite:
            raise UserError(f"{run_dir} is not empty; remove it or pass --set output.overwrite=true")
        shutil.rmtree(run_dir)
    started = time.time()
    sample = write_sample(run_dir / "sample", documents=args.documents)
    print(f"sample: {sample.records:,} records in {sample.directory} "
          f"({', '.join(f'{k} {v}' for k, v in sample.kinds.items())})", flush=True)
    base = {**DEMO_SETTINGS, "inputs": sample.inputs}
    base["train"] = {**DEMO_SETTINGS["train"], "max_steps": args.steps}
    config = load_config(args.config, [*args.set, f"output.run_dir={run_dir}"], base=base)

    print("\n== 1/5 build ==", flush=True)
    run_build(config, args.beam_args)
    if config.tokenizer.enabled:
        print("\n== 2/5 tokenizer train ==", flush=True)
        report = train_tokenizer(config)
        print(f"tokenizer: {report.get('vocab_size', '?')} tokens -> {run_dir}/tokenizer/tokenizer.json", flush=True)
    if config.tokenize.enabled:
        print("\n== 3/5 tokenize ==", flush=True)
        manifest = run_tokenize(config, args.beam_args)
        splits = manifest.get("splits", {})
        print("token shards: " + ", ".join(f"{name} {s.get('tokens', 0):,} tokens" for name, s in splits.items()),
              flush=True)
    if config.train.enabled:
        print("\n== 4/5 train ==", flush=True)
        train_model(config)
    print("\n== 5/5 report ==", flush=True)
    result = write_report(str(run_dir))
    print(getattr(result, "summary", ""), flush=True)
    print(f"\ndemo finished in {time.time() - started:.0f} s; everything is in {run_dir}/ "
          f"(open {run_dir}/report.html)", flush=True)
    return 0
