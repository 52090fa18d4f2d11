"""``run_ablation``: identical small models trained on corpus variants at one token budget, compared on
held-out text in bits per byte.

    DIR/builds/<key>/      one run directory per distinct build config (variants with equal builds share it):
                           clean/, removed/, rejected/, stats.json, tokens/ (encoded with the shared tokenizer)
    DIR/tokenizer/         the one tokenizer, trained on every build's clean text (or --tokenizer)
    DIR/models/<key>/seed-<s>/   each trained model;  DIR/results/<key>-seed-<s>.json   its scores
    DIR/ablation.json, DIR/ablation.html

Every step checks for its finished output first (a build's manifest.json, tokens/manifest.json, a result
whose fingerprint matches), so a rerun with the same arguments redoes nothing and an interrupted one
continues where it stopped.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import resource
import statistics
import sys
import time
from typing import Any

from corpusforge.ablate.heldout import check_no_overlap, heldout_keys
from corpusforge.ablate.reuse import build_reusing_stages, drop_checkpoints
from corpusforge.ablate.variants import Variant, build_key, check_unique, variant_config
from corpusforge.core import files, rundir
from corpusforge.core.shard_files import is_shard
from corpusforge.core.config_loader import to_dict
from corpusforge.core.errors import UserError
from corpusforge.core.run_lock import run_lock
from corpusforge.config import Config
from corpusforge.trainers.config import TrainConfig


# What an ablation changes from the defaults (the config base of `corpusforge ablate`): a vocabulary and batch
# that suit debug-size models on small corpora; every document trains (the held-out set is the measure, so
# tokenize keeps no val split); no evaluation during training.
ABLATION_DEFAULTS: dict[str, Any] = {
    "tokenizer": {"family": "decoder", "vocab_size": 8000},
    "tokenize": {"val_fraction": 0.0},
    "train": {"objective": "clm", "seq_len": 128, "micro_batch_size": 16, "eval_every": 0, "log_every": 50,
              "optim": {"warmup_steps": 20}},
}


@dataclasses.dataclass
class AblationOptions:
    heldout: str  # JSONL/Parquet/Arrow file or directory (trainers.evaluate.read_documents)
    tokens: int  # trained tokens per model
    out_dir: str
    seeds: int = 3  # models per variant, train.seed = 1..seeds
    tokenizer: str = ""  # a tokenizer.json to use instead of training one
    max_epochs: float = 20.0  # refuse a variant whose data would repeat more often than this
    text_field: str = "text"
    progress: bool = True


def tokens_per_step(tc: TrainConfig) -> int:
    return tc.seq_len * tc.micro_batch_size * tc.grad_accum


def check_budget(tc: TrainConfig, tokens: int) -> int:
    """The optimizer steps that train exactly ``tokens`` tokens; refuses a budget that is not whole steps."""
    per_step = tokens_per_step(tc)
    if tokens < per_step or tokens % per_step:
        low, high = max(tokens // per_step, 1) * per_step, -(-tokens // per_step) * per_step
        raise UserError(f"--tokens {tokens:,} is not a whole number of optimizer steps of {per_step:,} tokens "
                        f"(train.seq_len x micro_batch_size x grad_accum); use {low:,} or {high:,}")
    return tokens // per_step


def run_ablation(base: Config, variants: list[Variant], options: AblationOptions, beam_args: list[str] | None = None,
                 out=None) -> dict[str, Any]:
    """Build, tokenize, train and evaluate every variant; write DIR/ablation.json and DIR/ablation.html."""
    from corpusforge.trainers.evaluate import read_documents

    out = out or sys.stdout
    if not variants:
        raise UserError("no variants: pass --variant NAME[:key=value,...] (at least two) or --variants FILE")
    check_unique(variants)
    if options.seeds < 1:
        raise UserError("--seeds must be at least 1")
    out_dir = rundir.check_run_dir(options.out_dir)
    if not files.is_local(out_dir):
        raise UserError(f"--out {out_dir}: ablate writes to a local directory; pass a local path")
    configs = {v.name: variant_config(base, v) for v in variants}  # every variant checked before any work
    steps = check_budget(base.train, options.tokens)
    heldout = list(read_documents(options.heldout, options.text_field))
    if not heldout:
        raise UserError(f"{options.heldout} holds no documents to evaluate on")
    started = time.time()
    files.mkdirs(out_dir)
    with run_lock(out_dir, "ablate"):
        return _run(configs, variants, options, heldout, steps, out_dir, beam_args, out, started)


def _say(out, message: str) -> None:
    print(f"ablate: {message}", file=out, flush=True)


def _run(configs, variants, options, heldout, steps, out_dir, beam_args, out, started) -> dict[str, Any]:
    from corpusforge.pipeline.build import run_build

    keys = {name: build_key(config) for name, config in configs.items()}
    builds = list(dict.fromkeys(keys.values()))  # distinct, in variant order
    seconds: dict[str, float] = {"build": 0.0, "tokenizer": 0.0, "tokenize": 0.0, "train": 0.0, "evaluate": 0.0}
    keys_heldout = heldout_keys(d.text for d in heldout)
    checkpointed: dict[str, Any] = {}  # build dir -> config, for builds whose stage checkpoints are kept
    for number, key in enumerate(builds, 1):
        names = [n for n in keys if keys[n] == key]
        build_dir = files.join(out_dir, "builds", key)
        if files.exists(files.join(build_dir, "manifest.json")):
            _say(out, f"build {number}/{len(builds)} ({', '.join(names)}): done before, reused")
        else:
            _say(out, f"build {number}/{len(builds)} ({', '.join(names)}) -> {build_dir}")
            tick = time.time()
            config = configs[names[0]]
            if len(builds) > 1:  # each keeps its stage checkpoints so a later one starts after those they share
                build_reusing_stages(config, build_dir, checkpointed, beam_args, out, options.progress)
            else:
                config.output.run_dir, config.output.overwrite = build_dir, True
                run_build(config, beam_args, out=out, progress=options.progress)
            seconds["build"] += time.time() - tick
        check_no_overlap(keys_heldout, files.join(build_dir, "clean"), names[0], options.heldout)
    drop_checkpoints(list(checkpointed))

    tick = time.time()
    tokenizer = options.tokenizer or _shared_tokenizer(configs[variants[0].name], out_dir, builds, options, out)
    seconds["tokenizer"] += time.time() - tick
    tokenizer_sha = hashlib.sha256(files.read_bytes(tokenizer)).hexdigest()

    token_counts: dict[str, dict[str, int]] = {}
    for key in builds:
        name = next(n for n in keys if keys[n] == key)
        tick = time.time()
        token_counts[key] = _tokens(configs[name], files.join(out_dir, "builds", key), tokenizer, tokenizer_sha,
                                    beam_args, options, out)
        seconds["tokenize"] += time.time() - tick
        _check_enough(name, token_counts[key]["tokens"], options)

    heldout_digest = _digest(heldout)
    results: dict[tuple[str, int], dict[str, Any]] = {}
    total = len(builds) * options.seeds
    for number, (key, seed) in enumerate(((k, s) for k in builds for s in range(1, options.seeds + 1)), 1):
        names = [n for n in keys if keys[n] == key]
        label = f"model {number}/{total} ({', '.join(names)}, seed {seed})"
        results[key, seed] = _trained(configs[names[0]], key, seed, steps, tokenizer, tokenizer_sha, heldout,
                                      heldout_digest, options, out_dir, seconds, out, label)

    report = _report(variants, configs, keys, results, token_counts, options, steps, tokenizer, tokenizer_sha,
                     heldout, seconds, started, out_dir)
    files.write_json(files.join(out_dir, "ablation.json"), report)
    from corpusforge.ablate.page import render

    files.write_bytes_atomic(files.join(out_dir, "ablation.html"), render(report).encode("utf-8"))
    _say(out, f"finished in {time.time() - started:.0f} s: {out_dir}/ablation.json, {out_dir}/ablation.html")
    return report


def _shared_tokenizer(config, out_dir: str, builds: list[str], options, out) -> str:
    """One tokenizer for every variant, trained on the clean text of every build (each build's documents
    once), so no variant is measured with a vocabulary fitted to another's text only."""
    from corpusforge.tokenizer.train import train_from_shards

    directory = files.join(out_dir, "tokenizer")
    path, record = files.join(directory, "tokenizer.json"), files.join(directory, "builds.json")
    if files.exists(path) and files.exists(record):
        if files.read_json(record) == sorted(builds):
            _say(out, f"tokenizer: done before, reused ({path})")
            return path
        raise UserError(f"{path} was trained on the builds of another set of variants; use a new --out, or pass "
                        f"--tokenizer {path} to keep it")
    # The clean shards of exactly these builds, seen through links in one directory (the trainer reads one location).
    staging = files.join(out_dir, ".tokenizer-input")
    rundir.delete(staging)  # refused unless the marker records it as corpusforge's
    rundir.make_scratch(out_dir, ".tokenizer-input")
    for key in builds:
        clean = files.join(out_dir, "builds", key, "clean")
        for shard in sorted(os.listdir(clean)):
            if is_shard(shard):
                os.symlink(os.path.abspath(files.join(clean, shard)), files.join(staging, f"{key}-{shard}"))
    _say(out, f"tokenizer: training one {config.tokenizer.resolved_kind} tokenizer of {config.tokenizer.vocab_size:,} "
              f"tokens on the clean text of {len(builds)} build(s)")
    try:
        train_from_shards(config.tokenizer, staging, directory, progress=options.progress,
                          model_max_length=config.tokenizer.model_max_length or config.train.seq_len)
    finally:
        rundir.delete(staging)
    files.write_json(record, sorted(builds))
    return path


def _tokens(config, build_dir: str, tokenizer: str, tokenizer_sha: str, beam_args, options, out) -> dict[str, int]:
    """The build's token shards with the shared tokenizer (reused when made with the same one)."""
    from corpusforge.tokenizer.tokenize import run_tokenize

    manifest_path, record = files.join(build_dir, "tokens", "manifest.json"), files.join(build_dir, "tokens.sha256")
    if files.exists(manifest_path) and files.exists(record) and files.read_bytes(record).decode() == tokenizer_sha:
        manifest = files.read_json(manifest_path)
    else:
        _say(out, f"tokenize {build_dir}")
        config.output.run_dir, config.output.overwrite = build_dir, True
        config.tokenize.tokenizer = tokenizer
        manifest = run_tokenize(config.tokenize, config.tokenize_run(), beam_args, progress=options.progress)
        files.write_bytes_atomic(record, tokenizer_sha.encode())
    train = manifest["splits"]["train"]
    return {"documents": int(train["documents"]), "tokens": int(train["tokens"])}


def _digest(documents) -> str:
    """The held-out set by content (a file or a directory alike): a changed set re-scores every model."""
    digest = hashlib.sha256()
    for doc in documents:
        digest.update(json.dumps([doc.text, doc.source]).encode("utf-8"))
    return digest.hexdigest()


def _check_enough(name: str, tokens: int, options) -> None:
    if tokens <= 0 or options.tokens / tokens > options.max_epochs:
        epochs = options.tokens / tokens if tokens else float("inf")
        raise UserError(f"variant {name!r} has {tokens:,} training tokens: --tokens {options.tokens:,} would repeat "
                        f"them {epochs:.1f} times (--max-epochs {options.max_epochs:g}); lower --tokens, raise "
                        "--max-epochs or give the variant more data")


def _trained(config, key: str, seed: int, steps: int, tokenizer: str, tokenizer_sha: str, heldout, heldout_digest,
             options, out_dir: str, seconds: dict[str, float], out, label: str) -> dict[str, Any]:
    """Train and evaluate one model (or read its result when it was made with the same everything)."""
    from corpusforge.trainers.evaluate import evaluate
    from corpusforge.trainers.export import load_model
    from corpusforge.trainers.train import train_model

    config.train.seed, config.train.max_steps = seed, steps
    config.train.checkpoint_every = steps  # one checkpoint, at the end
    train_settings = {k: v for k, v in to_dict(config.train).items() if k not in ("progress", "resume")}
    fingerprint = hashlib.sha256(json.dumps(
        {"build": key, "tokenizer": tokenizer_sha, "train": train_settings, "heldout": heldout_digest,
         "heldout_documents": len(heldout)}, sort_keys=True).encode()).hexdigest()
    result_path = files.join(out_dir, "results", f"{key}-seed-{seed}.json")
    if files.exists(result_path):
        previous = files.read_json(result_path)
        if previous.get("fingerprint") == fingerprint:
            _say(out, f"{label}: done before, reused")
            return previous
    build_dir = files.join(out_dir, "builds", key)
    config.output.run_dir, config.output.overwrite = build_dir, True
    config.tokenize.tokenizer = tokenizer
    _say(out, f"{label}: training {steps} steps x {tokens_per_step(config.train):,} tokens")
    tick = time.time()
    trained = train_model(config.train, config.run_paths(), resume=False, progress=options.progress)
    seconds["train"] += time.time() - tick
    tick = time.time()
    scores = evaluate(load_model(str(trained.model_dir)), iter(heldout))
    seconds["evaluate"] += time.time() - tick
    model_dir = files.join(out_dir, "models", key, f"seed-{seed}")
    rundir.record_output(out_dir, "models", derived=False)  # recorded before anything is written there
    rundir.delete(model_dir)
    files.mkdirs(os.path.dirname(model_dir))
    rundir.move(str(trained.model_dir), model_dir)  # keep every seed's model; the next seed trains into build/model
    result = {"fingerprint": fingerprint, "seed": seed, "steps": trained.step, "train_loss": trained.train_loss,
              "parameters": trained.parameters, "model": model_dir, "eval": scores}
    files.write_json(result_path, result)
    _say(out, f"{label}: {scores['bits_per_byte']:.4f} bits per byte on the held-out set")
    return result


def _spread(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values)}


def _report(variants, configs, keys, results, token_counts, options, steps, tokenizer, tokenizer_sha, heldout,
            seconds, started, out_dir) -> dict[str, Any]:
    rows = []
    for variant in variants:
        key = keys[variant.name]
        stats = files.read_json(files.join(out_dir, "builds", key, "stats.json"))
        funnel = stats.get("funnel", [])
        seeds = [results[key, s] for s in range(1, options.seeds + 1)]
        bpb = [r["eval"]["bits_per_byte"] for r in seeds]
        sources = sorted({s for r in seeds for s in r["eval"].get("by_source", {})})
        tokens = token_counts[key]["tokens"]
        rows.append({
            "name": variant.name,
            "overrides": variant.overrides,
            "stages": [row["stage"] for row in funnel][1:],
            "build": key,
            "documents": token_counts[key]["documents"],
            "tokens": tokens,
            "epochs": round(options.tokens / tokens, 3),
            "kept_fraction": funnel[-1]["documents"] / funnel[0]["documents"] if funnel and funnel[0]["documents"] else 0.0,
            "kept_chars_fraction": funnel[-1]["chars"] / funnel[0]["chars"] if funnel and funnel[0]["chars"] else 0.0,
            "bits_per_byte": bpb,
            "bits_per_byte_summary": _spread(bpb),
            "by_source": {src: [r["eval"]["by_source"][src]["bits_per_byte"] for r in seeds] for src in sources},
            "train_loss": [r["train_loss"] for r in seeds],
            "funnel": funnel,
        })
    some = configs[variants[0].name]
    return {
        "tokens_per_model": options.tokens,
        "steps": steps,
        "seeds": list(range(1, options.seeds + 1)),
        "model": {"size": some.train.model.size, "family": some.train.model.family or some.train.objective,
                  "objective": some.train.objective, "seq_len": some.train.seq_len,
                  "parameters": next(iter(results.values()))["parameters"]},
        "tokenizer": {"path": tokenizer, "sha256": tokenizer_sha, "shared": True},
        "heldout": {"path": options.heldout, "documents": len(heldout),
                    "bytes": sum(len(d.text.encode("utf-8")) for d in heldout)},
        "variants": rows,
        "seconds": {k: round(v, 1) for k, v in seconds.items()} | {"total": round(time.time() - started, 1)},
        # ru_maxrss is KiB on Linux: the peak of this process (builds on the in-process runner, training, scoring)
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
