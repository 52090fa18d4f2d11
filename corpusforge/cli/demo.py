"""``corpusforge demo``: the whole chain on the built-in sample, in one run directory.

sample -> build (every stage) -> tokenizer train -> tokenize -> train a debug-size GPT -> report.
"""
from __future__ import annotations

import argparse
import pathlib
import time

from corpusforge.config import load_config
from corpusforge.cli.options import BEAM_EPILOG, common_parser, overwrite_parser, run_dir_setting
from corpusforge.core import rundir
from corpusforge.core.run_lock import run_lock
from corpusforge.core.errors import UserError

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


def register(subparsers) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    demo = subparsers.add_parser(
        "demo", parents=[common_parser(), overwrite_parser()], formatter_class=fmt,
        help="Run the whole chain on the built-in sample.",
        description="Write the built-in sample (real text from Python's own documentation, with duplicates, "
                    "personal data, junk, other languages and bad records), then build, train a tokenizer, tokenize, "
                    "train a tiny model and write the report, all into one run directory.", epilog=BEAM_EPILOG)
    demo.add_argument("--run-dir", "-o", default="runs/demo", help="Where the demo writes everything; default: runs/demo.")
    demo.add_argument("--documents", type=int, default=1000, help="Upper bound on good documents in the sample; default: 1000.")
    demo.add_argument("--steps", type=int, default=60, help="Training steps of the demo model; default: 60.")
    demo.add_argument("--next-steps", action=argparse.BooleanOptionalAction, default=True,
                      help="End by printing what to run and open next (make demo prints them after its export); default: on.")
    demo.set_defaults(func=run_demo, accepts_beam_args=True)


def run_demo(args) -> int:
    run_dir = pathlib.Path(rundir.check_run_dir(args.run_dir))  # never /, ~, the current directory or above
    if getattr(args, "overwrite", False):  # as --set output.overwrite=true, for every step below
        args.set = [*args.set, "output.overwrite=true"]
    config = load_config(args.config, list(args.set))
    overwrite = config.output.overwrite  # however spelt: --overwrite, yes, True, a config file
    from corpusforge.core.beam_options import pipeline_options

    # the Beam flags before anything is written: `demo --overwrit` went to Beam, refused only after the sample
    pipeline_options(config.beam, args.beam_args)
    with run_lock(str(run_dir), "demo"):
        if run_dir.exists() and any(n.name != rundir.LOCK for n in run_dir.iterdir()):
            if not overwrite:
                raise UserError(f"{run_dir} is not empty; remove it or pass --overwrite")
            if rundir.read_marker(str(run_dir)) is None:
                raise UserError(f"{run_dir} is not empty and holds no {rundir.MARKER}, the record of what corpusforge "
                                "wrote there, so nothing in it is deleted; choose an empty or new --run-dir")
            # Only the sample is cleared here; each step replaces its own outputs (the build only on success).
            rundir.delete(str(run_dir / "sample"))  # refused unless the marker records it, whole
        return _run(args, run_dir)


def _run(args, run_dir: pathlib.Path) -> int:
    from corpusforge.pipeline.build import run_build
    from corpusforge.pipeline.report import write_report
    from corpusforge.pipeline.sample import write_sample
    from corpusforge.tokenizer.tokenize import run_tokenize
    from corpusforge.tokenizer.train import train_tokenizer
    from corpusforge.trainers.train import train_model

    started = time.time()
    sample = write_sample(run_dir / "sample", documents=args.documents)
    rundir.record_output(str(run_dir), "sample", rundir.listing(str(run_dir / "sample")), derived=False)
    print(f"sample: {sample.records:,} records in {sample.directory} "
          f"({', '.join(f'{k} {v}' for k, v in sample.kinds.items())})", flush=True)
    base = {**DEMO_SETTINGS, "inputs": sample.inputs}
    base["train"] = {**DEMO_SETTINGS["train"], "max_steps": args.steps}
    config = load_config(args.config, [*args.set, run_dir_setting(run_dir)], base=base)

    print("\n== 1/5 build ==", flush=True)
    run_build(config, args.beam_args, metrics_table=False)  # the Beam metrics: stats.json, `metrics`
    if config.tokenizer.enabled:
        print("\n== 2/5 tokenizer train ==", flush=True)
        report = train_tokenizer(config.tokenizer, config.run_paths(), seq_len=config.train.seq_len)
        print(f"tokenizer: {report.get('vocab_size', '?')} tokens -> {run_dir}/tokenizer/tokenizer.json", flush=True)
    if config.tokenize.enabled:
        print("\n== 3/5 tokenize ==", flush=True)
        manifest = run_tokenize(config.tokenize, config.tokenize_run(), args.beam_args)
        splits = manifest.get("splits", {})
        print("token shards: " + ", ".join(f"{name} {s.get('tokens', 0):,} tokens" for name, s in splits.items()),
              flush=True)
    if config.train.enabled:
        print("\n== 4/5 train ==", flush=True)
        train_model(config.train, config.run_paths())
    print("\n== 5/5 report ==", flush=True)
    result = write_report(str(run_dir))  # its terminal summary repeats the build's: the path is enough here
    print(f"report: {result.path}", flush=True)
    print(f"\ndemo finished in {time.time() - started:.0f} s; everything is in {run_dir}/", flush=True)
    if args.next_steps:
        print(next_steps(str(run_dir)), flush=True)
    return 0


def next_steps(run_dir: str, export_dir: str | None = None) -> str:
    """What to run and open after the demo, with its paths (``make demo`` prints it last, with the export)."""
    steps = [("source .venv/bin/activate", "puts `corpusforge` on this shell's PATH (once per shell)"),
             (f"{run_dir}/report.html", "open it in a browser: what each stage kept and removed, and why"),
             (f"corpusforge inspect {run_dir}", "the run's outputs, their schema and a few records"),
             ("corpusforge config --schema > corpusforge.schema.json", "for your editor (docs/configuration.md)")]
    if export_dir:
        steps.append((f'corpusforge generate --model {export_dir} --prompt "The"', "text from the exported model"))
    steps.append(("corpusforge build -c corpus.yaml", "your own corpus (README.md, 'A configuration file')"))
    width = max(len(command) for command, _ in steps)
    return "\n".join(["", "next:", *(f"  {command:<{width}}  # {why}" for command, why in steps)])


if __name__ == "__main__":  # ``python -m corpusforge.cli.demo RUN [EXPORT]``: the steps alone (make demo)
    import sys

    print(next_steps(*sys.argv[1:3]))
