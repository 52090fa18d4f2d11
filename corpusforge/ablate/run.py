"""``run_ablation``: identical small models trained on corpus variants at one token budget, compared on
held-out text in bits per byte.

    DIR/builds/<key>/      one run directory per distinct build config (variants with equal builds share it):
                           clean/, removed/, rejected/, stats.json, tokens/ (encoded with the shared tokenizer)
    DIR/tokenizer/         the one tokenizer, trained on every build's clean text (or --tokenizer)
    DIR/models/<key>/seed-<s>/   each trained model;  DIR/results/<key>-seed-<s>.json   its scores
    DIR/ablation.json, DIR/ablation.html

Every variant is compared with the baseline (``--baseline``, default the first variant): the paired difference
of bits per byte with an interval over seeds and one over held-out documents, and a verdict
(``corpusforge.ablate.compare``); overall, per held-out source and per language. ``--leave-one-out SECTION``
adds one variant per sub-step or rule of SECTION with just that one off (``corpusforge.ablate.leave_one_out``),
and the table of what each removes and what it costs or earns against the full configuration.

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
import secrets
import statistics
import sys
import time
from typing import Any

import numpy as np

from corpusforge.ablate import compare
from corpusforge.pipeline.stage import names_as_written
from corpusforge.ablate.heldout import check_no_overlap, heldout_keys, languages, load_heldout
from corpusforge.ablate.leave_one_out import leave_one_out
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
    heldout: str | list[str]  # JSONL/Parquet/Arrow files or directories (trainers.evaluate.read_documents)
    tokens: int  # trained tokens per model
    out_dir: str
    seeds: int = 3  # models per variant, train.seed = 1..seeds
    tokenizer: str = ""  # a tokenizer.json to use instead of training one
    max_epochs: float = 20.0  # refuse a variant whose data would repeat more often than this
    text_field: str = "text"
    progress: bool = True
    baseline: str = ""  # the variant every other is compared with; empty: the first
    leave_one_out: list[str] = dataclasses.field(default_factory=list)  # sections: one variant per part, off
    resolve: float = 0.01  # bits per byte: the difference whose budget an unresolved comparison reports

    @property
    def heldout_paths(self) -> list[str]:
        return [self.heldout] if isinstance(self.heldout, str) else list(self.heldout)


def tokens_per_step(tc: TrainConfig) -> int:
    return tc.seq_len * tc.micro_batch_size * tc.grad_accum


def check_budget(tc: TrainConfig, tokens: int) -> int:
    """The optimizer steps that train exactly ``tokens`` tokens; refuses a budget that is not whole steps."""
    per_step = tokens_per_step(tc)
    if tokens < per_step or tokens % per_step:
        # the whole budgets either side, at least one step (0 or a negative budget is no budget)
        near = sorted({max(tokens // per_step, 1) * per_step, max(-(-tokens // per_step), 1) * per_step})
        raise UserError(f"--tokens {tokens:,} is not a whole number of optimizer steps of {per_step:,} tokens "
                        f"(train.seq_len x micro_batch_size x grad_accum); use {' or '.join(f'{n:,}' for n in near)}")
    return tokens // per_step


def run_ablation(base: Config, variants: list[Variant], options: AblationOptions, beam_args: list[str] | None = None,
                 out=None) -> dict[str, Any]:
    """Build, tokenize, train and evaluate every variant; write DIR/ablation.json and DIR/ablation.html."""
    out = out or sys.stdout
    variants = list(variants)
    if options.leave_one_out:
        if not any(not v.overrides for v in variants):  # the reference each part is left out of
            variants.append(Variant(REFERENCE))
        for section in options.leave_one_out:
            variants += leave_one_out(base, section)
    if not variants:
        raise UserError("no variants: pass --variant NAME[:key=value,...] (at least two) or --variants FILE")
    check_unique(variants)
    if options.baseline and options.baseline not in {v.name for v in variants}:
        raise UserError(f"--baseline {options.baseline}: no variant of that name; name one of "
                        f"{', '.join(v.name for v in variants)}")
    if not options.resolve > 0:
        raise UserError(f"--resolve {options.resolve}: the difference to resolve must be > 0 bits per byte")
    if options.seeds < 1:
        raise UserError("--seeds must be at least 1")
    out_dir = rundir.check_run_dir(options.out_dir)
    if not files.is_local(out_dir):
        raise UserError(f"--out {out_dir}: ablate writes to a local directory; pass a local path")
    configs = {v.name: variant_config(base, v) for v in variants}  # every variant checked before any work
    steps = check_budget(base.train, options.tokens)
    from corpusforge.trainers.evaluate import Skipped, skipped_line

    skipped = Skipped()  # counts by reason, and what to pass for a missing field
    heldout = load_heldout(options.heldout_paths, options.text_field, skipped)
    if skipped:
        _say(out, f"held-out set: {skipped_line(skipped)}")
    if not heldout:
        raise UserError(f"{', '.join(options.heldout_paths)} holds no documents to evaluate on"
                        + (f" ({skipped_line(skipped)})" if skipped else ""))
    started = time.time()
    files.mkdirs(out_dir)
    with run_lock(out_dir, "ablate"):
        return _run(configs, variants, options, heldout, steps, out_dir, beam_args, out, started)


REFERENCE = "full"  # the variant --leave-one-out adds when no variant runs the configuration as it is


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
        check_no_overlap(keys_heldout, files.join(build_dir, "clean"), names[0], ", ".join(options.heldout_paths))
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

    langs = languages([d.text for d in heldout], configs[variants[0].name].quality.langid.model)
    report = _report(variants, configs, keys, results, token_counts, options, steps, tokenizer, tokenizer_sha,
                     heldout, langs, seconds, started, out_dir)
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


def _reusable_manifest(path: str) -> dict | None:
    """The token shards' manifest of an earlier ablation run, if it is one whose train split's counts can be used."""
    try:
        manifest = files.read_json(path)
    except (OSError, ValueError, RecursionError):
        return None
    splits = manifest.get("splits") if isinstance(manifest, dict) else None
    train = splits.get("train") if isinstance(splits, dict) else None
    if not isinstance(train, dict) or not all(isinstance(train.get(k), int) for k in ("documents", "tokens")):
        return None
    return manifest


def _tokens(config, build_dir: str, tokenizer: str, tokenizer_sha: str, beam_args, options, out) -> dict[str, int]:
    """The build's token shards with the shared tokenizer (reused when made with the same one)."""
    from corpusforge.tokenizer.tokenize import run_tokenize

    manifest_path, record = files.join(build_dir, "tokens", "manifest.json"), files.join(build_dir, "tokens.sha256")
    manifest = None
    if files.exists(manifest_path) and files.exists(record) and files.read_bytes(record) == tokenizer_sha.encode():
        manifest = _reusable_manifest(manifest_path)
    if manifest is None:  # none yet, made with another tokenizer, or damaged: tokenize again
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
        if previous.get("fingerprint") == fingerprint and "documents_nll" in previous["eval"]:
            _say(out, f"{label}: done before, reused")
            return previous
        if previous.get("fingerprint") == fingerprint and files.exists(previous["model"]):
            # a result from before per-document losses were kept: score the kept model again, no training
            _say(out, f"{label}: trained before; scoring its held-out documents one by one")
            tick = time.time()
            previous["eval"] = evaluate(load_model(previous["model"]), iter(heldout), per_document=True)
            seconds["evaluate"] += time.time() - tick
            files.write_json(result_path, previous)
            return previous
    build_dir = files.join(out_dir, "builds", key)
    config.output.run_dir, config.output.overwrite = build_dir, True
    config.tokenize.tokenizer = tokenizer
    _say(out, f"{label}: training {steps} steps x {tokens_per_step(config.train):,} tokens")
    tick = time.time()
    trained = train_model(config.train, config.run_paths(), resume=False, progress=options.progress)
    seconds["train"] += time.time() - tick
    tick = time.time()
    scores = evaluate(load_model(str(trained.model_dir)), iter(heldout), per_document=True)
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


def _losses(seeds: list[dict[str, Any]]) -> np.ndarray:
    """(seeds, documents) held-out NLL in bits."""
    return np.asarray([r["eval"]["documents_nll"]["nll_bits"] for r in seeds], dtype=np.float64)


def _groups(labels: list[str]) -> dict[str, np.ndarray]:
    """Label -> the positions of the held-out documents that carry it."""
    return {label: np.flatnonzero(np.asarray(labels) == label) for label in sorted(set(labels))}


def _by_group(losses: np.ndarray, nbytes: np.ndarray, groups: dict[str, np.ndarray]) -> dict[str, list[float]]:
    """Per group, bits per byte of each seed."""
    return {g: [float(x) for x in losses[:, rows].sum(axis=1) / nbytes[rows].sum()] for g, rows in groups.items()}


def _compare_groups(a: np.ndarray, b: np.ndarray, nbytes: np.ndarray, groups: dict[str, np.ndarray],
                    options) -> dict[str, Any]:
    out = {}
    for g, rows in groups.items():
        bpb_a, bpb_b = (list(x[:, rows].sum(axis=1) / nbytes[rows].sum()) for x in (a, b))
        result = compare.compare(bpb_a, bpb_b, a[:, rows], b[:, rows], nbytes[rows], options.tokens, options.resolve)
        result.pop("needed", None)  # the budget is the overall comparison's
        out[g] = result
    return out


def _kept(funnel: list[dict[str, Any]], field: str) -> float:
    return funnel[-1][field] / funnel[0][field] if funnel and funnel[0][field] else 0.0


RULE_EFFECT = {compare.WORSE: "costs bits per byte", compare.BETTER: "earns bits per byte",
               compare.UNRESOLVED: compare.UNRESOLVED}


def _report(variants, configs, keys, results, token_counts, options, steps, tokenizer, tokenizer_sha, heldout,
            langs, seconds, started, out_dir) -> dict[str, Any]:
    nbytes = np.asarray([len(d.text.encode("utf-8")) for d in heldout], dtype=np.float64)
    # Held-out sources are named after their files: a name holding PII is hashed as a build hashes file names
    # (Stage.name_filter, with the baseline's sections; a fresh secret, as a build's without pii.hash_salt).
    names = names_as_written(configs[variants[0].name], secrets.token_hex(16)) or (lambda name: name)
    by_source, by_language = _groups([names(d.source or "") for d in heldout]), _groups(langs)
    losses = {v.name: _losses([results[keys[v.name], s] for s in range(1, options.seeds + 1)]) for v in variants}
    baseline = options.baseline or variants[0].name
    rows = []
    for variant in variants:
        key = keys[variant.name]
        stats = files.read_json(files.join(out_dir, "builds", key, "stats.json"))
        funnel = stats.get("funnel", [])
        seeds = [results[key, s] for s in range(1, options.seeds + 1)]
        bpb = [r["eval"]["bits_per_byte"] for r in seeds]
        tokens = token_counts[key]["tokens"]
        row = {
            "name": variant.name,
            "overrides": variant.overrides,
            "stages": [row["stage"] for row in funnel][1:],
            "build": key,
            "documents": token_counts[key]["documents"],
            "tokens": tokens,
            "epochs": round(options.tokens / tokens, 3),
            "kept_fraction": _kept(funnel, "documents"),
            "kept_chars_fraction": _kept(funnel, "chars"),
            "bits_per_byte": bpb,
            "bits_per_byte_summary": _spread(bpb),
            "by_source": _by_group(losses[variant.name], nbytes, by_source),
            "by_language": _by_group(losses[variant.name], nbytes, by_language),
            "train_loss": [r["train_loss"] for r in seeds],
            "funnel": funnel,
        }
        if variant.name != baseline:
            b_bpb = [results[keys[baseline], s]["eval"]["bits_per_byte"] for s in range(1, options.seeds + 1)]
            row["vs_baseline"] = compare.compare(bpb, b_bpb, losses[variant.name], losses[baseline], nbytes,
                                                 options.tokens, options.resolve)
            row["vs_baseline_by_source"] = _compare_groups(losses[variant.name], losses[baseline], nbytes, by_source,
                                                           options)
            row["vs_baseline_by_language"] = _compare_groups(losses[variant.name], losses[baseline], nbytes,
                                                             by_language, options)
        rows.append(row)
    some = configs[variants[0].name]
    return {
        "tokens_per_model": options.tokens,
        "steps": steps,
        "seeds": list(range(1, options.seeds + 1)),
        "model": {"size": some.train.model.size, "family": some.train.model.family or some.train.objective,
                  "objective": some.train.objective, "seq_len": some.train.seq_len,
                  "parameters": next(iter(results.values()))["parameters"]},
        "tokenizer": {"path": tokenizer, "sha256": tokenizer_sha, "shared": True},
        "heldout": {"path": options.heldout_paths, "documents": len(heldout), "bytes": int(nbytes.sum()),
                    "sources": {g: {"documents": len(r), "bytes": int(nbytes[r].sum())} for g, r in by_source.items()},
                    "languages": {g: {"documents": len(r), "bytes": int(nbytes[r].sum())}
                                  for g, r in by_language.items()}},
        "baseline": baseline,
        "comparison": {"level": compare.LEVEL, "bootstrap_resamples": compare.RESAMPLES,
                       "bootstrap_seed": compare.BOOTSTRAP_SEED, "resolve": options.resolve},
        "variants": rows,
        "leave_one_out": _leave_one_out_table(variants, rows, losses, nbytes, options),
        "seconds": {k: round(v, 1) for k, v in seconds.items()} | {"total": round(time.time() - started, 1)},
        # ru_maxrss is KiB on Linux: the peak of this process (builds on the in-process runner, training, scoring)
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _leave_one_out_table(variants, rows, losses, nbytes, options) -> list[dict[str, Any]]:
    """Per left-out part: what it removes that nothing else does (the reference's kept text minus its own
    variant's, as a share of the input) and its effect, the reference against the variant without it
    (positive: the part costs bits per byte)."""
    from corpusforge.ablate.leave_one_out import PREFIX

    if not options.leave_one_out:
        return []
    reference = next(v.name for v in variants if not v.overrides)
    by_name = {r["name"]: r for r in rows}
    ref = by_name[reference]
    table = []
    for variant in variants:
        if not (variant.name.startswith(PREFIX) and len(variant.overrides) == 1):
            continue
        row = by_name[variant.name]
        effect = compare.compare(ref["bits_per_byte"], row["bits_per_byte"], losses[reference], losses[variant.name],
                                 nbytes, options.tokens, options.resolve)
        table.append({"variant": variant.name, "reference": reference, "switched_off": variant.overrides,
                      "removes_documents_fraction": row["kept_fraction"] - ref["kept_fraction"],
                      "removes_chars_fraction": row["kept_chars_fraction"] - ref["kept_chars_fraction"],
                      "effect": effect, "verdict": RULE_EFFECT[effect["verdict"]]})
    return table
