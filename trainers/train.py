"""The training loop: token shards of a run in, a pretrained model out.

    result = train_model(config.train, config.run_paths())   # reads <run>/tokens, writes <run>/model

Under ``torchrun --nproc_per_node=N`` every process calls the same function; DDP, rank sharding and
rank-0-only logging and checkpointing follow from the environment. One optimizer step consumes a global
batch of micro_batch x grad_accum x world_size examples; each micro-batch's loss is weighted by its share
of the global batch's predicted tokens, so accumulation and DDP give the same update as one large batch.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import pathlib
import time

import torch

from corpusforge.core import rundir
from corpusforge.core.rundir import RunPaths
from corpusforge.core.run_lock import run_lock
from corpusforge.core.config_loader import to_dict
from corpusforge.core.errors import UserError
from corpusforge.trainers import checkpoint as ckpt
from corpusforge.trainers.config import TrainConfig
from corpusforge.tokenizer.token_shards import TokenShards
from corpusforge.trainers.data import (BatchPlan, ExampleStream, PackedWindows, TokenData, check_token_ids,
                                       make_loader)
from corpusforge.trainers.metrics import MetricsLog, describe_peak, peak_flops, plot_loss_curve, train_flops
from corpusforge.trainers.model import ModelConfig, Transformer
from corpusforge.trainers.model_kinds import ModelKind
from corpusforge.trainers.objectives import IGNORE, Objective
from corpusforge.trainers.registry import objective_spec
from corpusforge.trainers.parallel import (Distributed, all_gather_objects, all_reduce_sum, barrier, full_state_dict,
                                           gradient_sync, init_distributed, is_sharded, load_full_state_dict,
                                           parallelize, shutdown)
from corpusforge.trainers.schedule import load_state, warmup_then_decay
from corpusforge.trainers.vocab import Vocabulary

class TrainingDiverged(UserError):
    """The loss or gradient norm stopped being finite."""


@dataclasses.dataclass
class TrainResult:
    model_dir: pathlib.Path
    step: int
    train_loss: float | None
    eval: dict | None
    parameters: int
    tokens_per_second: float | None


# ------------------------------------------------------------------------------------------- builders

def _embedding_params(model: torch.nn.Module) -> int:
    """Parameters of the vocabulary-sized tables (token embeddings; ELMo's softmax)."""
    table = getattr(model, "tok_emb", None) or getattr(model, "softmax", None)
    return table.weight.numel() if table is not None else 0


def build_optimizer(model: torch.nn.Module, tc: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices and embeddings only (not on biases or norm weights); fused on CUDA."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": tc.optim.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    o = tc.optim
    kind = {"fused": True} if device.type == "cuda" else {"foreach": True}
    return torch.optim.AdamW(groups, lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps, **kind)


def resolve_dtype(tc: TrainConfig, device: torch.device) -> torch.dtype:
    """auto: float32 on CPU; bfloat16 where the GPU has it natively (Ampere and later), else float16 with a loss
    scaler (V100, T4: their bfloat16 is emulated and slow)."""
    if tc.dtype == "auto":
        if device.type != "cuda":
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16
    if tc.dtype == "float16" and device.type != "cuda":
        raise UserError("train.dtype float16 needs CUDA (it trains with a loss scaler); use bfloat16 or float32")
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[tc.dtype]


# ----------------------------------------------------------------------------------------- the run

def train_model(train: TrainConfig, run: RunPaths, *, resume: bool | None = None, stop_at_step: int | None = None,
                progress: bool | None = None) -> TrainResult:
    """Train on ``<run.run_dir>/tokens`` with ``train``; write ``<run.run_dir>/model``.

    ``resume`` overrides ``train.resume``; ``stop_at_step`` ends the run early at that step with a checkpoint, as an
    interruption would (the schedule still spans ``max_steps``). ``run.overwrite`` lets a run start over on top of
    an earlier run's checkpoints.
    """
    run_dir = pathlib.Path(rundir.check_run_dir(run.run_dir))
    with run_lock(str(run_dir), "train"):  # one writer per run directory (rank 0 holds it under DDP)
        rundir.check_fresh(str(run_dir), "tokens", "tokenizer")  # outputs of an earlier clean/ are refused
        dist = init_distributed(train.device)
        try:
            if dist.is_main:
                # model/ is corpusforge's only when the marker records it (a folder of the user's named model/ is
                # refused); recorded before anything is written, so a killed run's checkpoints are ours to resume
                rundir.check_owned(str(run_dir), ["model"])
                rundir.record_output(str(run_dir), "model")
            result = _train(train, run_dir, dist, resume=train.resume if resume is None else resume,
                            overwrite=run.overwrite, stop_at_step=stop_at_step,
                            progress=train.progress if progress is None else progress)
            if result.model_dir != run_dir / "model":  # --overwrite: the new run, swapped in whole on success
                if dist.is_main:
                    marker = rundir.read_marker(str(run_dir))
                    marker["outputs"]["model"] = rundir.listing(str(result.model_dir))
                    marker["derived"]["model"] = marker.get("corpus_fingerprint")
                    rundir.swap_in(str(run_dir), str(result.model_dir.parent), ("model",), marker)
                barrier(dist)
                result = dataclasses.replace(result, model_dir=run_dir / "model")
            elif dist.is_main:
                rundir.record_output(str(run_dir), "model", rundir.listing(str(run_dir / "model")))
        except BaseException:
            if dist.is_main and OVERWRITE_STAGING in (rundir.read_marker(str(run_dir)) or {}).get("scratch", []):
                rundir.delete(str(run_dir / OVERWRITE_STAGING))  # the earlier run stays as it was
            raise
        finally:
            shutdown(dist)
        return result


def _published(model_dir: pathlib.Path) -> pathlib.Path:
    """Where the model ``model_dir`` holds is once the run ends: a run started over trains in the staging folder,
    which train_model swaps in as ``RUN/model`` right after (the summary named ``RUN/.tmp-swap-train/model``, a
    folder gone by the time the user looked)."""
    return model_dir.parent.parent / "model" if model_dir.parent.name == OVERWRITE_STAGING else model_dir


# Where a run started over with output.overwrite trains until it finishes (then it replaces model/ whole); one
# name, so every process of a distributed run finds it. One writer per run directory (the lock).
OVERWRITE_STAGING = ".tmp-swap-train"


@dataclasses.dataclass
class _Window:
    """What the steps since the last log line add up to (reduced over processes when logged)."""

    loss: float = 0.0
    count: float = 0.0
    flops: float = 0.0
    tokens: float = 0.0
    metric_sums: torch.Tensor | None = None  # what the model kind's metrics are computed from (ELECTRA's)
    grad_norms: list = dataclasses.field(default_factory=list)  # one 0-d tensor per step, read when logged
    started: float = dataclasses.field(default_factory=time.perf_counter)


@dataclasses.dataclass
class _Session:
    """Everything a training run holds between steps: built by ``_setup``, advanced by ``_step``, closed by
    ``_finish``."""

    tc: TrainConfig
    dist: Distributed
    data: TokenData
    vocab: Vocabulary
    objective: Objective
    kind: ModelKind  # the model the objective trains: what it logs, how it is rebuilt
    mcfg: ModelConfig
    model: Transformer  # the unwrapped module (checkpoints, gradient clipping)
    trained: torch.nn.Module  # what the forward pass runs: DDP- and/or compile-wrapped ``model``
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler | None
    autocast: contextlib.AbstractContextManager
    plan: BatchPlan
    loader: object
    evaluator: "Evaluator | None"
    model_dir: pathlib.Path
    ckpt_dir: pathlib.Path
    log: MetricsLog | None
    peak: float | None
    bar: object
    step: int
    start_step: int
    start_position: int
    last_checkpoint: pathlib.Path | None
    window: _Window = dataclasses.field(default_factory=_Window)
    lr: float | None = None  # the learning rate of the last step taken
    train_loss: float | None = None
    tokens_per_s: float | None = None
    eval_result: dict | None = None


def _train(tc: TrainConfig, run_dir: pathlib.Path, dist: Distributed, *, resume: bool, overwrite: bool,
           stop_at_step: int | None, progress: bool) -> TrainResult:
    s = _setup(tc, run_dir, dist, resume=resume, overwrite=overwrite, progress=progress)
    end = tc.max_steps if stop_at_step is None else min(stop_at_step, tc.max_steps)
    s.trained.train()
    try:
        while s.step < end:
            _step(s)
            if s.step % tc.log_every == 0 or s.step == end:
                _log_window(s)
            if s.bar is not None:
                s.bar.update(1)
            if s.evaluator is not None and tc.eval_every and s.step % tc.eval_every == 0 and s.step != end:
                s.eval_result = s.evaluator.run(s.trained, s.autocast, s.step, s.log, unwrapped=s.model)
                if dist.is_main:
                    (s.bar.write if s.bar is not None else print)(f"step {s.step}: {s.kind.describe_eval(s.eval_result)}")
                s.window.started = time.perf_counter()  # evaluation time is not training throughput
            if s.step % tc.checkpoint_every == 0 or s.step == end:
                s.last_checkpoint = _save(s, s.step)
                s.window.started = time.perf_counter()
    except KeyboardInterrupt:
        if not dist.enabled and s.step > s.start_step and s.model_dir.parent.name == OVERWRITE_STAGING:
            # run_training deletes the staging folder on the way out: nothing of this run is there to resume
            print(f"\ninterrupted at step {s.step}: the run started over (output.overwrite) is not kept; the earlier "
                  f"model in {_published(s.model_dir)} stays as it was")
        elif not dist.enabled and s.step > s.start_step:
            path = _save(s, s.step)
            print(f"\ninterrupted: checkpoint at step {s.step} in {path}; continue with --resume")
        raise
    finally:
        if s.bar is not None:
            s.bar.close()
    return _finish(s)


def _setup(tc: TrainConfig, run_dir: pathlib.Path, dist: Distributed, *, resume: bool, overwrite: bool,
           progress: bool) -> _Session:
    """Data, vocabulary, objective and model; a fresh start, a resume from the latest checkpoint, or a refusal
    to clobber an earlier run; optimizer, schedule, loaders and the progress bar."""
    device = dist.device
    data = TokenData.from_run(run_dir)
    tokenizer_vocab = Vocabulary.from_file(data.tokenizer)
    check_token_ids(data, tokenizer_vocab.size)  # before the objective adds sentinels past the tokenizer's ids
    spec = objective_spec(tc.objective)
    vocab = spec.vocabulary(tokenizer_vocab, tc.seq_len, tc)
    objective, kind = spec.objective(vocab, tc.seq_len, tc), spec.model
    mcfg = kind.config(tc, objective, vocab)
    initial = None
    if not kind.shardable and (tc.data_parallel == "fsdp" and dist.enabled or tc.checkpoint_activations):
        raise UserError(f"objective {objective.name} ({kind.title}) has no blocks to shard or checkpoint; use "
                        "train.data_parallel=ddp and train.checkpoint_activations=false")
    if tc.init_from and not kind.init_from:
        raise UserError(f"train.init_from is not supported with objective {objective.name} (its model has no "
                        "transformers layout to start from); leave train.init_from empty")
    if tc.init_from:  # the checkpoint's architecture and weights replace the recipe's
        from corpusforge.trainers.init_from import initial_model

        initial = initial_model(tc.init_from, kind.arch, vocab.size,
                                max(tc.seq_len, objective.decoder_length), tc.model.dropout)
        mcfg = initial.cfg
    model_dir = run_dir / "model"
    ckpt_dir = model_dir / "checkpoints"
    state, model_dir = _starting_state(tc, kind, mcfg, dist, run_dir, resume=resume, overwrite=overwrite)
    ckpt_dir = model_dir / "checkpoints"

    # Model, parallelism, optimizer, schedule. Same seed on every rank: identical initial weights. The optimizer
    # is built after FSDP has sharded the parameters (it holds this process's shards).
    torch.manual_seed(tc.seed)
    model = kind.build(tc, mcfg, vocab, data.tokenizer)
    if initial is not None:
        model.load_state_dict(initial.state_dict())
    model = model.to(device)
    dtype = resolve_dtype(tc, device)
    trained = parallelize(model, dist, compile=tc.compile, data_parallel=tc.data_parallel,
                          checkpoint_activations=tc.checkpoint_activations,
                          param_dtype=dtype if dtype != torch.float32 else None)  # `model` stays unwrapped
    optimizer = build_optimizer(model, tc, device)
    scheduler = warmup_then_decay(optimizer, warmup_steps=tc.optim.warmup_steps, total_steps=tc.max_steps,
                                  decay=tc.optim.schedule, final_ratio=tc.optim.min_lr_ratio)
    scaler = torch.amp.GradScaler("cuda") if dtype == torch.float16 else None
    autocast = (torch.autocast(device_type=device.type, dtype=dtype) if dtype != torch.float32
                else contextlib.nullcontext())
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(tc.seed + dist.rank)  # dropout noise differs per rank
    step, position = 0, 0
    if state is not None:
        load_state(scheduler, state["scheduler"])
        load_full_state_dict(model, optimizer, state["model"], state["optimizer"])
        if scaler is not None and state.get("scaler"):
            scaler.load_state_dict(state["scaler"])
        step, position = state["step"], state["data_position"]
        rng = state["rng"]
        if len(rng) == dist.world_size:
            ckpt.restore_rng(rng[dist.rank])
        elif dist.is_main:
            print(f"note: the checkpoint was written by {len(rng)} processes, this run has {dist.world_size}; "
                  "data order is unchanged, dropout noise is reseeded")

    # Data: this rank's micro-batches from the global example position onwards.
    workers = tc.num_workers if tc.num_workers >= 0 else (4 if device.type == "cuda" else 0)
    train_windows = PackedWindows(TokenShards(data.splits["train"]), objective.raw_length, objective.separator,
                                  seed=tc.seed)
    plan = BatchPlan(start=position, micro_batch=tc.micro_batch_size, grad_accum=tc.grad_accum, rank=dist.rank,
                     world_size=dist.world_size)
    loader = make_loader(ExampleStream(train_windows, objective, tc.seed), plan, workers,
                         pin_memory=device.type == "cuda")
    evaluator = Evaluator.build(data, objective, kind, tc, dist) if data.splits.get("val") else None

    if dist.is_main:
        _describe(tc, objective, mcfg, model, dist, dtype, scaler is not None, train_windows.per_epoch,
                  plan.global_batch, resumed_at=step if state else None)
    log = MetricsLog(model_dir / "metrics.jsonl", resume_step=step if state else None) if dist.is_main else None
    bar = None
    if progress and dist.is_main:
        from corpusforge.core.progress import step_bar

        # A bar on a terminal; off one (CI logs, a pipe) a plain line per tenth of the steps and one at the end.
        bar = step_bar(tc.max_steps, step, label="train")
    return _Session(tc=tc, dist=dist, data=data, vocab=vocab, objective=objective, kind=kind, mcfg=mcfg, model=model,
                    trained=trained, optimizer=optimizer, scheduler=scheduler, scaler=scaler, autocast=autocast,
                    plan=plan, loader=loader, evaluator=evaluator, model_dir=model_dir, ckpt_dir=ckpt_dir, log=log,
                    peak=peak_flops(device, str(dtype).replace("torch.", "")), bar=bar, step=step,
                    start_step=step, start_position=position, last_checkpoint=ckpt.latest_checkpoint(ckpt_dir))


def _describe(tc: TrainConfig, objective: Objective, mcfg, model: torch.nn.Module, dist: Distributed,
              dtype: torch.dtype, scaled: bool, per_epoch: int, global_batch: int, resumed_at: int | None) -> None:
    """What a run trains, on what, how: three lines (and a note on a warmup longer than the run)."""
    device, nparams = dist.device, model.num_params()
    print(f"model: {mcfg.arch} ({tc.model.family or objective.family} recipe, size {tc.model.size}), "
          f"{nparams / 1e6:.2f}M parameters ({(nparams - _embedding_params(model)) / 1e6:.2f}M without "
          f"embeddings), vocab {mcfg.vocab_size}")
    print(f"objective {objective.name}: {tc.seq_len} tokens per example"
          + (f" -> {objective.decoder_length} target tokens" if objective.decoder_length else "")
          + f"; {per_epoch} examples per epoch; global batch {global_batch} "
          f"({tc.micro_batch_size} x {tc.grad_accum} accumulation x {dist.world_size} processes); "
          f"{device.type} {str(dtype).replace('torch.', '')}" + (", compiled" if tc.compile else "")
          + (", FSDP" if is_sharded(model) else ", DDP" if dist.enabled else "")
          + (", activation checkpointing" if tc.checkpoint_activations else "")
          + (f"; resuming at step {resumed_at}" if resumed_at is not None else ""))
    dtype_name = str(dtype).replace("torch.", "")
    print(f"precision {dtype_name}" + (" with a loss scaler" if scaled else "") + f"; {describe_peak(device, dtype_name)}")
    if tc.optim.warmup_steps >= tc.max_steps:
        print(f"note: train.optim.warmup_steps ({tc.optim.warmup_steps}) >= train.max_steps ({tc.max_steps}): "
              f"warmup is shortened to {max(tc.max_steps - 1, 0)} steps so the peak rate is reached")


def _starting_state(tc: TrainConfig, kind: ModelKind, mcfg, dist: Distributed, run_dir: pathlib.Path, *,
                    resume: bool, overwrite: bool) -> tuple[dict | None, pathlib.Path]:
    """The checkpoint a resume continues from (None: a fresh start) and the model directory this run writes, or a
    refusal to clobber an earlier run. Starting over is transactional, like build and tokenize: the new run
    trains in ``RUN/.tmp-swap-train/model`` and replaces the earlier one whole when it finishes; until then (and
    if it fails or is killed) the earlier run stays as it was."""
    model_dir = run_dir / "model"
    ckpt_dir = model_dir / "checkpoints"
    if dist.is_main:
        ckpt.remove_partial(ckpt_dir)  # a killed run's half-written checkpoint
    state = None
    if resume:
        latest = ckpt.latest_checkpoint(ckpt_dir)
        if latest is None:
            raise UserError(f"--resume: no checkpoint in {ckpt_dir}; start without --resume")
        state = ckpt.load_checkpoint(latest)
        if state["model_config"] != dataclasses.asdict(mcfg):
            raise UserError(f"--resume: {latest} was trained with a different model or objective configuration; "
                            "use the same train.* settings, or start a new run directory")
        kind.check_resume(state["config"], tc, latest)
        sharded = tc.data_parallel == "fsdp" and dist.enabled
        if state.get("sharded", False) != sharded:  # FSDP keys the optimizer state by name, DDP by position
            how = ("train.data_parallel=fsdp under torchrun with several processes" if state.get("sharded")
                   else "train.data_parallel=ddp (or in one process)")
            raise UserError(f"--resume: {latest} was written {'with' if state.get('sharded') else 'without'} FSDP; "
                            f"resume with {how}, as it was trained")
    elif ckpt.list_checkpoints(ckpt_dir) or (model_dir / "config.json").exists():
        if not overwrite:
            raise UserError(f"{model_dir} already holds checkpoints; pass --resume to continue, or "
                            "--overwrite (--set output.overwrite=true) to start over")
        barrier(dist)
        staging = run_dir / OVERWRITE_STAGING
        if dist.is_main:
            rundir.check_owned(str(run_dir), ["model"])
            rundir.delete(str(staging))  # a killed replacement's (refused unless the marker records it)
            rundir.make_scratch(str(run_dir), OVERWRITE_STAGING)
            print(f"note: starting over; the earlier run in {model_dir} is kept until this one finishes, then "
                  "replaced whole")
        barrier(dist)
        model_dir = staging / "model"
    return state, model_dir


def _step(s: _Session) -> None:
    """One optimizer step over ``grad_accum`` micro-batches. Nothing here waits for the device: the gradient norm
    stays a tensor until the window is logged or checkpointed (``_check_gradients``)."""
    tc, dist, w = s.tc, s.dist, s.window
    batches = [next(s.loader) for _ in range(tc.grad_accum)]
    counts = [int((b["labels"] != IGNORE).sum()) for b in batches]
    (global_count,) = all_reduce_sum([float(sum(counts))], dist)
    for i, batch in enumerate(batches):
        batch = {k: v.to(dist.device, non_blocking=True) for k, v in batch.items()}
        last = i == len(batches) - 1
        with gradient_sync(s.trained, enabled=last):
            with s.autocast:
                _, loss = s.trained(**batch)
            # The micro-batch's share of the global batch's predicted tokens (x world: DDP averages).
            weighted = loss * (counts[i] * dist.world_size / max(global_count, 1.0))
            (s.scaler.scale(weighted) if s.scaler else weighted).backward()
        w.loss += loss.detach().float() * counts[i]
        sums = s.kind.metric_sums(s.model)
        if sums is not None:
            w.metric_sums = sums if w.metric_sums is None else w.metric_sums + sums
        w.count += counts[i]
        dec = batch.get("decoder_input_ids")
        w.tokens += batch["input_ids"].numel() + (dec.numel() if dec is not None else 0)
        w.flops += train_flops(s.mcfg, batch["input_ids"].size(0), batch["input_ids"].size(1),
                               dec.size(1) if dec is not None else 0, batch["labels"].numel())
        w.flops += s.kind.extra_flops(s.model, batch)
    if s.scaler is not None:
        s.scaler.unscale_(s.optimizer)
    grad_norm = torch.nn.utils.clip_grad_norm_(s.model.parameters(), tc.optim.clip or float("inf"))
    w.grad_norms.append((grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm).detach())
    if s.scaler is not None:
        s.scaler.step(s.optimizer)
        s.scaler.update()
    else:
        s.optimizer.step()
    s.optimizer.zero_grad(set_to_none=True)
    s.lr = s.optimizer.param_groups[0]["lr"]  # the rate this step used (the scheduler moves on to the next)
    s.scheduler.step()
    s.step += 1


def _check_gradients(s: _Session) -> None:
    """Stop with TrainingDiverged if a gradient norm of the window was not finite (one host sync per log or
    checkpoint, not per step; a loss scaler skips such steps itself). Runs before anything is logged or saved,
    so no checkpoint holds weights a non-finite step touched."""
    w = s.window
    if s.scaler is not None or not w.grad_norms:
        return
    norms = torch.stack(w.grad_norms).float().cpu()
    bad = torch.nonzero(~torch.isfinite(norms)).flatten()
    if len(bad):
        at = s.step - len(norms) + int(bad[0]) + 1
        raise TrainingDiverged(
            f"the gradient norm is {float(norms[bad[0]])} at step {at}: training diverged. Lower "
            f"train.optim.lr (now {s.tc.optim.lr}), raise train.optim.warmup_steps, or check the data; the last "
            f"good checkpoint is {s.last_checkpoint or 'none'} (continue with --resume)")


def _log_window(s: _Session) -> None:
    """Check the gradients, reduce the window over processes, check the loss, write a metrics line, update the
    bar, reset."""
    _check_gradients(s)
    w = s.window
    grad_norm = float(w.grad_norms[-1]) if w.grad_norms else None
    loss_sum, count, flops, tokens = all_reduce_sum([float(w.loss), w.count, w.flops, w.tokens], s.dist)
    elapsed = max(time.perf_counter() - w.started, 1e-9)
    s.train_loss = loss_sum / max(count, 1.0)
    if not math.isfinite(s.train_loss):
        raise TrainingDiverged(f"the training loss is {s.train_loss} at step {s.step}: training diverged; "
                               f"lower train.optim.lr (now {s.tc.optim.lr}); the last good checkpoint "
                               f"is {s.last_checkpoint or 'none'}")
    s.tokens_per_s = tokens / elapsed
    metrics = _metrics(s.kind, w.metric_sums, s.dist)
    mfu = flops / elapsed / (s.peak * s.dist.world_size) if s.peak else None
    if s.dist.is_main:
        record = {"step": s.step, "split": "train", "loss": s.train_loss,
                  "lr": s.lr, "grad_norm": grad_norm, "tokens_per_s": s.tokens_per_s,
                  "examples": s.start_position + (s.step - s.start_step) * s.plan.global_batch}
        if mfu is not None:
            record["mfu"] = mfu
        record.update(metrics)
        s.log.write(record)
        if s.bar is not None:
            postfix = {"loss": f"{s.train_loss:.4f}", "tok/s": f"{s.tokens_per_s:,.0f}"}
            if mfu is not None:
                postfix["mfu"] = f"{100 * mfu:.1f}%"
            s.bar.set_postfix(postfix, refresh=False)
    s.window = _Window()


def _save(s: _Session, at_step: int) -> pathlib.Path | None:
    """A checkpoint of everything an exact resume needs (every process's RNG state included)."""
    _check_gradients(s)
    rng = all_gather_objects(ckpt.capture_rng(), s.dist)
    model_state, optimizer_state = full_state_dict(s.model, s.optimizer)  # a collective under FSDP
    path = None
    if s.dist.is_main:
        path = ckpt.save_checkpoint(s.ckpt_dir, at_step, {
            "model": ckpt.clean_state_dict(model_state), "optimizer": optimizer_state,
            "scheduler": s.scheduler.state_dict(), "scaler": s.scaler.state_dict() if s.scaler else None,
            "step": at_step, "data_position": s.start_position + (at_step - s.start_step) * s.plan.global_batch,
            "rng": rng, "config": to_dict(s.tc), "model_config": dataclasses.asdict(s.mcfg),
            "world_size": s.dist.world_size, "sharded": is_sharded(s.model)}, keep=s.tc.keep_checkpoints)
    barrier(s.dist)
    return path


def _finish(s: _Session) -> TrainResult:
    """The final evaluation, the model directory (weights, config, tokenizer) and the loss curve."""
    tc, step = s.tc, s.step
    if s.evaluator is not None:
        s.eval_result = s.evaluator.run(s.trained, s.autocast, step, s.log, unwrapped=s.model)
    final = s.model
    if is_sharded(s.model):  # gather the shards into a plain model on the main process
        model_state, _ = full_state_dict(s.model)
        if s.dist.is_main:
            final = s.kind.build(tc, s.mcfg, s.vocab, s.data.tokenizer)
            final.load_state_dict(ckpt.clean_state_dict(model_state))
    if s.dist.is_main:
        info = {"objective": s.objective.name, "family": tc.model.family or s.objective.family,
                "special_tokens": s.vocab.special_ids(), "tokenizer_vocab_size": s.vocab.size, "step": step,
                "train": to_dict(tc), **s.kind.saved_info(final)}
        ckpt.save_pretrained(final, s.model_dir, tokenizer=s.data.tokenizer, info=info)
        s.log.close()
        plot_loss_curve(s.model_dir / "metrics.jsonl", s.model_dir / "loss_curve.png",
                        title=f"{s.objective.name} / {s.mcfg.arch} {tc.model.size}")
        summary = f"step {step}: train loss {s.train_loss:.4f}" if s.train_loss is not None else f"step {step}"
        if s.eval_result:
            summary += f", {s.kind.describe_eval(s.eval_result)}"
        print(f"{summary}; model in {_published(s.model_dir)}")
    barrier(s.dist)
    return TrainResult(model_dir=s.model_dir, step=step, train_loss=s.train_loss, eval=s.eval_result,
                       parameters=s.model.num_params(), tokens_per_second=s.tokens_per_s)


def _metrics(kind: ModelKind, sums: torch.Tensor | None, dist: Distributed) -> dict:
    """The model kind's logged metrics from its sums reduced over processes (empty for a model without)."""
    return {} if sums is None else kind.metrics(all_reduce_sum(sums.tolist(), dist))


@dataclasses.dataclass
class Evaluator:
    """Loss, perplexity and accuracy of the predicted tokens (masked-token accuracy for MLM) on the fixed
    first windows of the val split, noise seeded apart from training's."""

    dataset: ExampleStream
    plan: BatchPlan
    batches: int
    dist: Distributed
    kind: ModelKind

    @classmethod
    def build(cls, data: TokenData, objective: Objective, kind: ModelKind, tc: TrainConfig, dist: Distributed
              ) -> "Evaluator | None":
        try:
            windows = PackedWindows(TokenShards(data.splits["val"]), objective.raw_length, objective.separator,
                                    seed=tc.seed, shuffle=False)
        except UserError as exc:
            if dist.is_main:
                print(f"note: no evaluation ({exc})")
            return None
        per_pass = tc.micro_batch_size * dist.world_size
        batches = max(1, min(tc.eval_batches, windows.per_epoch // per_pass))
        plan = BatchPlan(start=0, micro_batch=tc.micro_batch_size, grad_accum=batches, rank=dist.rank,
                         world_size=dist.world_size)
        return cls(ExampleStream(windows, objective, seed=tc.seed + 1), plan, batches, dist, kind)

    @torch.no_grad()
    def run(self, model: torch.nn.Module, autocast, step: int, log: MetricsLog | None, *,
            unwrapped: torch.nn.Module | None = None) -> dict:
        """``unwrapped``: the module under ``model``'s DDP/compile wrappers, where a model kind's metric sums are."""
        was_training = model.training
        model.eval()
        loader = make_loader(self.dataset, self.plan)
        total = count = correct = 0.0
        metric_sums = None
        device = self.dist.device
        for _ in range(self.batches):
            batch = {k: v.to(device) for k, v in next(loader).items()}
            with autocast:
                logits, loss = model(**batch)
            labels = batch["labels"]
            predicted = labels != IGNORE
            n = float(predicted.sum())
            total += float(loss) * n
            count += n
            correct += float(((logits.argmax(-1) == labels) & predicted).sum())
            sums = self.kind.metric_sums(unwrapped)
            if sums is not None:
                metric_sums = sums if metric_sums is None else metric_sums + sums
        total, count, correct = all_reduce_sum([total, count, correct], self.dist)
        model.train(was_training)
        loss = total / max(count, 1.0)
        result = {"step": step, "split": "val", "loss": loss}
        sums = None if metric_sums is None else all_reduce_sum(metric_sums.tolist(), self.dist)
        result.update(self.kind.evaluation(loss, correct, count, sums))
        result["tokens"] = int(count)
        if log is not None:
            log.write(result)
        return result
