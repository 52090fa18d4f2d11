"""``finetune``: a pretrained model trained on a task, with validation metrics and checkpoints.

    result = finetune(FinetuneConfig(model="runs/x/model", task="classify", method="lora", train=..., out=...))

OUT/ holds ``labels.json``, ``metrics.json`` (rewritten after each validation), ``checkpoints/step-N.pt`` (N = the
epoch of the latest; every epoch with an explicit ``epochs``, on the default plan at most about 20 a run:
the trainable weights, AdamW and scheduler state, every RNG and the plan, so ``resume`` continues exactly), the
result (``model/``, ``adapter/``, ``merged/``) and, written last, ``finetune.json``, which marks the output
complete. A run's ``model/`` is first exported to ``OUT/base`` (exactly, with export's logit check), so the
adapter always has its base beside it.
"""
from __future__ import annotations

import dataclasses
import math
import pathlib
import time
from typing import Any

import torch

from corpusforge.core import files, rundir
from corpusforge.core.errors import UserError
from corpusforge.core.run_lock import run_lock
from corpusforge.trainers import checkpoint as ckpt
from corpusforge.trainers import model_files
from corpusforge.trainers.finetune.config import DEFAULT_EPOCHS, FinetuneConfig
from corpusforge.trainers.finetune.baseline import bag_of_words_baseline
from corpusforge.trainers.finetune.data import check_known_labels, label_map, read_records, task_examples
from corpusforge.trainers.finetune.encode import IGNORE, collate, encode, pad_id
from corpusforge.trainers.finetune.defaults import model_width
from corpusforge.trainers.finetune.elmo import is_bilm
from corpusforge.trainers.finetune.methods import (apply_method, arch_of, check_method, count_parameters,
                                                   save_result, takes_segments, task_model)
from corpusforge.trainers.finetune.metrics import classification_metrics
from corpusforge.trainers.schedule import load_state, warmup_then_decay


def prepare_base(model_dir: str, out: pathlib.Path, resume: bool = False) -> pathlib.Path:
    """A transformers directory of the pretrained model: ``model_dir`` itself, or its export in OUT/base. A start
    exports it again: a base/ left by a start that failed may be another --model's (``resume``: the run's own)."""
    from corpusforge.trainers.export import directory_kind, export_model

    path = pathlib.Path(model_dir)
    if directory_kind(path) == "transformers" or is_bilm(path):  # an ELMo biLM has no transformers layout: used as it is
        return path.resolve()
    base = out / "base"
    if not resume or not (base / "config.json").is_file():
        export_model(path, base, overwrite=True)
    return base


def input_length(config: FinetuneConfig, tokenizer) -> int:
    """Tokens per record: ``max_length``, at most the model's positions less the virtual tokens that prompt and
    prefix tuning put in front (they take position ids too)."""
    limit = min(config.max_length, tokenizer.model_max_length or config.max_length)
    if config.method in ("prompt", "prefix"):
        limit -= config.num_virtual_tokens
    if limit < 8:
        raise UserError(f"--num-virtual-tokens {config.num_virtual_tokens} leaves {limit} of the model's "
                        f"{tokenizer.model_max_length} positions for the text; use fewer virtual tokens")
    return limit


def _device(choice: str) -> torch.device:
    if choice == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda but no CUDA device is visible; use --device cpu")
    return torch.device("cuda" if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()) else "cpu")


OUTPUTS = ("base", "labels.json", "checkpoints", "metrics.json", "model", "adapter", "merged", "finetune.json")


def finetune(config: FinetuneConfig, max_record_bytes: int = 0) -> dict[str, Any]:
    """Fine-tune ``config.model`` on ``config.train``; ``max_record_bytes``: the most bytes one record of the
    data files may take (``output.record_bytes``; 0: a default build's)."""
    for key in ("model", "train", "out"):
        if not getattr(config, key):
            raise UserError(f"finetune needs --{key} (or finetune.{key} in the config)")
    # One writer per OUT, as per run directory: a second fine-tuning into it (or a predict claiming a file there)
    # would interleave checkpoints and lose what OUT's marker records
    with run_lock(str(config.out), "finetune"):
        return _finetune(config, max_record_bytes)


def _finetune(config: FinetuneConfig, max_record_bytes: int) -> dict[str, Any]:
    import transformers

    if config.early_stopping and not config.validation:
        raise UserError("--early-stopping needs --validation records to tell a better epoch; pass them or drop it")
    out = pathlib.Path(config.out)
    if (out / "finetune.json").exists() and not config.resume:
        raise UserError(f"{out} already holds a finished fine-tuning; choose another --out or delete it")
    # OUT's marker, base/ and labels.json are what a start that failed before its first epoch leaves (on its data,
    # its model): the same command runs again. Anything else (a checkpoint, a result) is a run to resume.
    present = {p.name for p in out.iterdir()} if out.is_dir() else set()
    if not config.resume and present - {rundir.MARKER, rundir.LOCK, "base", "labels.json"}:
        raise UserError(f"{out} already holds a fine-tuning run or other files; pass --resume to continue it, or "
                        "choose another --out")
    check_method(config.model, config.method)
    out.mkdir(parents=True, exist_ok=True)
    # What fine-tuning writes in OUT, recorded in OUT's marker before it is written: only these are ever replaced
    marker = rundir.read_marker(str(out)) or {"outputs": {}, "derived": {}, "scratch": []}
    marker["outputs"].update({name: None for name in OUTPUTS if name not in marker["outputs"]})
    rundir.write_marker(str(out), marker)
    torch.manual_seed(config.seed)
    base = prepare_base(config.model, out, config.resume)
    with model_files.loading(base):  # a malformed or panicking model or tokenizer: one line naming it
        if (base / "tokenizer.json").exists():
            model_files.check_tokenizer(base / "tokenizer.json")
        arch = arch_of(base)
        tokenizer = transformers.AutoTokenizer.from_pretrained(base)
    train_examples = task_examples(read_records(config.train, max_record_bytes, "finetune.train"), config,
                                   config.train)
    val_examples = (task_examples(read_records(config.validation, max_record_bytes, "finetune.validation"), config,
                                  config.validation)
                    if config.validation else [])
    labels = label_map(train_examples) if config.task != "generate" else None
    if labels:
        check_known_labels(val_examples, labels, config.validation)
    pad = pad_id(tokenizer)
    max_length = config.max_length if arch == "bilm" else input_length(config, tokenizer)  # LSTMs: no positions
    extra = dict(segments=takes_segments(base),
                 virtual_tokens=config.num_virtual_tokens if config.method == "prompt" and config.task == "tag" else 0)
    train_rows = encode(train_examples, tokenizer, config.task, arch, labels, max_length, **extra)
    val_rows = encode(val_examples, tokenizer, config.task, arch, labels, max_length, **extra)

    device = _device(config.device)
    torch.manual_seed(config.seed)  # the task head's initialisation
    with model_files.loading(base):
        model = apply_method(task_model(base, config.task, labels, pad), config, config.task).to(device)
    trainable, total = count_parameters(model)
    params = [p for p in model.parameters() if p.requires_grad]
    lr = config.learning_rate(model_width(base))
    decay = [p for p in params if p.dim() >= 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                   {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                                  lr=lr)
    steps_per_epoch = math.ceil(len(train_rows) / config.batch_size)
    latest = ckpt.latest_checkpoint(out / "checkpoints") if config.resume else None
    if config.resume and latest is None:
        raise UserError(f"--resume: {out}/checkpoints holds no checkpoint; run without --resume to start")
    state = ckpt.load_checkpoint(latest) if latest is not None else None
    epochs = config.planned_epochs(steps_per_epoch)
    every, checkpoint_every = config.schedule(epochs, len(train_rows), len(val_rows))
    if state is not None:  # the plan (and so the schedule) is the run's own: re-planned, it resumed into another
        # a checkpoint without its plan is from before min_steps, when 3 epochs was the default
        planned = int(state.get("planned_epochs") or config.epochs or DEFAULT_EPOCHS)
        if config.epochs and config.epochs != planned:
            raise UserError(f"--resume: the run in {out} was planned for {planned} epochs; resume it without --epochs "
                            f"(or with --epochs {planned})")
        # one without its intervals is from before the bounded validations: it validated every epoch
        epochs = planned
        every, checkpoint_every = (int(state.get(k) or 1) for k in ("evaluate_every", "checkpoint_every"))
    total_steps = steps_per_epoch * epochs
    warmup_steps = int(config.warmup_ratio * total_steps)
    scheduler = warmup_then_decay(optimizer, warmup_steps=warmup_steps,
                                  total_steps=total_steps, decay="linear", final_ratio=0.0)

    files.write_json(str(out / "labels.json"), labels or {})
    summary: dict[str, Any] = {"learning_rate": lr, "planned_epochs": epochs, "optimizer_steps": total_steps,
                               "evaluate_every": every, "checkpoint_every": checkpoint_every,
                               "warmup_steps": warmup_steps}
    if config.task == "classify" and val_examples:
        summary["baseline"] = {"name": "tfidf_logistic_regression",
                               **bag_of_words_baseline(train_examples, val_examples, labels, config.seed)}
    history: list[dict[str, Any]] = []
    best: dict[str, Any] | None = None  # {"epoch", "trainable"}: the best epoch by validation so far
    start_epoch = 1
    if state is not None:
        named = dict(model.named_parameters())
        for name, value in state["trainable"].items():
            named[name].data.copy_(value)
        load_state(scheduler, state["scheduler"])
        optimizer.load_state_dict(state["optimizer"])
        ckpt.restore_rng(state["rng"])
        history, start_epoch = list(state["history"]), int(state["epoch"]) + 1
        best = state.get("best")
        if best is not None and "trainable" not in best:  # the best epoch was the latest: stored once
            best = {"epoch": best["epoch"], "trainable": state["trainable"]}

    # Validation, the best-epoch choice and metrics.json come every ``every`` epochs, a checkpoint every
    # ``checkpoint_every`` (a multiple of it), both after the last: a resumed run starts after the latest checkpoint
    # and trains (and validates) the epochs since again, on the same plan
    loss_sum, batches, seconds = 0.0, 0, 0.0  # the training since the latest validation
    # One bar (or plain lines off a terminal) for the whole run, and a line with the first validation's figures and
    # then those of one validation a tenth of the run (metrics.json holds all): one bar per epoch printed 300 lines
    # for a tiny set's 300 one-step epochs, and no validation figure until the end
    from corpusforge.core.progress import step_bar

    bar = (step_bar(total_steps, (start_epoch - 1) * steps_per_epoch, label="finetune") if config.progress
           else None)
    for epoch in range(start_epoch, epochs + 1):
        if _stop_early(config, history, best, steps_per_epoch, warmup_steps):
            break
        started = time.perf_counter()
        epoch_loss = _train_epoch(model, train_rows, config, pad, device, optimizer, scheduler, epochs, epoch, bar=bar)
        seconds += time.perf_counter() - started
        loss_sum, batches = loss_sum + epoch_loss * steps_per_epoch, batches + steps_per_epoch
        if epoch % every and epoch != epochs:
            continue
        row = {"epoch": epoch, "step": epoch * steps_per_epoch, "train_loss": loss_sum / max(batches, 1),
               "seconds": round(seconds, 3)}
        loss_sum, batches, seconds = 0.0, 0, 0.0
        if val_rows:
            row.update(evaluate_rows(model, val_rows, config.task, pad, device, len(labels or {}),
                                     config.batch_size))
        history.append(row)
        if bar is not None and (10 * epoch // epochs > 10 * history[-2]["epoch"] // epochs if len(history) > 1
                                else True):  # the first validation, then one a tenth of the plan: ~11 lines a run
            bar.write(_validation_line(row, epochs))
        weights = {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}
        if val_rows and (best is None or _score(row, config.task) > _score(_row(history, best["epoch"]), config.task)):
            best = {"epoch": epoch, "trainable": weights}
        files.write_json(str(out / "metrics.json"), _metrics(config, history, trainable, total, summary, None))
        if epoch % checkpoint_every and epoch != epochs:
            continue
        state = {"epoch": epoch, "planned_epochs": epochs, "evaluate_every": every,
                 "checkpoint_every": checkpoint_every, "history": history, "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "rng": ckpt.capture_rng(), "trainable": weights,
                 "best": best if best is None or best["epoch"] != epoch else {"epoch": epoch}}
        ckpt.save_checkpoint(out / "checkpoints", epoch, state, keep=1)

    if bar is not None:
        bar.close()
    kept = history[-1]["epoch"] if history else 0
    if config.keep == "best" and best is not None:
        kept = best["epoch"]
        named = dict(model.named_parameters())
        for name, value in best["trainable"].items():
            named[name].data.copy_(value)
    model = model.cpu().eval()
    for name in ("model", "adapter", "merged"):
        rundir.delete(str(out / name))
    written = save_result(model, out, config, tokenizer)
    info = {"task": config.task, "method": config.method, "arch": arch, "labels": labels,
            "base": "base" if base == out / "base" else str(base), "pad_token_id": pad,
            "segments": extra["segments"], "max_length": max_length, "outputs": written,
            "config": dataclasses.asdict(config),
            # what predict compares the result's files with: a changed byte, a missing or an added file is refused
            "every_file": True, "file_sha256": {f"{w}/{name}": digest for w in written
                            for name, digest in model_files.export_digests(out / w).items()}}
    metrics = _metrics(config, history, trainable, total, summary, kept)
    files.write_json(str(out / "metrics.json"), metrics)
    files.write_json(str(out / "finetune.json"), info)
    return metrics


def _score(row: dict[str, Any], task: str) -> tuple[float, float]:
    """What ``keep=best`` maximises: the task's accuracy, then the lower validation loss."""
    accuracy = row.get("val_token_accuracy" if task == "generate" else "val_accuracy", 0.0)
    return accuracy, -row.get("val_loss", 0.0)


def _row(history: list[dict[str, Any]], epoch: int) -> dict[str, Any]:
    return next(r for r in history if r["epoch"] == epoch)


def _stop_early(config: FinetuneConfig, history: list[dict[str, Any]], best: dict[str, Any] | None,
                steps_per_epoch: int, warmup_steps: int) -> bool:
    """Whether ``early_stopping`` validations since the best one found none better, counting only those taken after
    the warmup: during it the rate is still rising, and a run of 4 records (one step an epoch, 18 steps of warmup)
    stopped with patience 2 at epoch 3, at a sixth of its rate, having learned nothing."""
    if not (config.early_stopping and best is not None):
        return False
    since = [r for r in history if r["epoch"] > best["epoch"] and r["epoch"] * steps_per_epoch > warmup_steps]
    return len(since) >= config.early_stopping


def _metrics(config, history, trainable, total, summary, kept) -> dict[str, Any]:
    """metrics.json: per epoch, the parameters, the learning rate used, the kept epoch (None while training) and
    its validation figures, and for classify the bag-of-words baseline with ``beats_baseline`` and a warning
    when the model does not beat it."""
    out = {"task": config.task, "method": config.method, "trainable_params": trainable, "total_params": total,
           "trainable_share": trainable / total, **summary, "epochs": history}
    if kept is None:
        return out
    row = next((r for r in history if r["epoch"] == kept), {})
    out["kept_epoch"] = kept
    out["kept"] = {k: v for k, v in row.items() if k.startswith("val_")}
    out["stopped_early"] = bool(history) and history[-1]["epoch"] < summary["planned_epochs"]
    out["warnings"] = []
    if "baseline" in summary and "val_accuracy" in row:
        out["beats_baseline"] = row["val_accuracy"] > summary["baseline"]["val_accuracy"]
        if not out["beats_baseline"]:
            out["warnings"].append(
                f"the fine-tuned model (validation accuracy {row['val_accuracy']:.3f}) does not beat the bag-of-words "
                f"baseline (TF-IDF + logistic regression, {summary['baseline']['val_accuracy']:.3f}) on the same "
                f"split after {_ran(summary, history)}: "
                "train longer (--epochs, or --set finetune.min_steps=N)"
                f"{', try --method full' if config.method not in ('full', 'elmo') else ''}, or pretrain the model "
                "further")
    return out


def _ran(summary: dict[str, Any], history: list[dict[str, Any]]) -> str:
    """The optimizer steps and epochs a run took (early stopping may end it before its plan)."""
    planned, ran = summary["planned_epochs"], history[-1]["epoch"] if history else 0
    steps = summary["optimizer_steps"] * ran // max(planned, 1)
    return f"{steps:,} optimizer steps ({ran} epochs" + (f" of the {planned} planned)" if ran < planned else ")")


def _validation_line(row: dict[str, Any], epochs: int) -> str:
    """``finetune epoch 30/300 (step 30): train loss 0.6931, val loss 0.6512, val accuracy 0.750``."""
    figures = [f"train loss {row['train_loss']:.4f}"]
    figures += [f"{key.replace('_', ' ')} {value:.4f}" if key == "val_loss" else f"{key.replace('_', ' ')} {value:.3f}"
                for key, value in row.items() if key.startswith("val_") and isinstance(value, float)]
    return f"finetune epoch {row['epoch']}/{epochs} (step {row['step']:,}): {', '.join(figures)}"


def _train_epoch(model, rows, config, pad, device, optimizer, scheduler, epochs, epoch, bar=None) -> float:
    """One epoch's optimizer steps; ``bar``: the run's step bar (``step_bar``: a bar on a terminal, plain lines
    elsewhere), or None."""
    model.train()
    order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(config.seed * 1000 + epoch)).tolist()
    batches = [order[i: i + config.batch_size] for i in range(0, len(order), config.batch_size)]
    total, count = 0.0, 0
    for indices in batches:
        batch = {k: v.to(device) for k, v in collate([rows[i] for i in indices], pad).items() if k != "word_ids"}
        loss = model(**batch).loss
        if not torch.isfinite(loss):
            raise RuntimeError(f"the loss became {loss.item()} in epoch {epoch}; lower --lr")
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        total, count = total + loss.item(), count + 1
        if bar is not None:
            bar.set_postfix({"epoch": f"{epoch}/{epochs}", "loss": f"{loss.item():.4f}"}, refresh=False)
            bar.update(1)
    return total / max(count, 1)


@torch.no_grad()
def evaluate_rows(model, rows, task: str, pad: int, device, num_labels: int, batch_size: int) -> dict[str, float]:
    """Validation loss, and accuracy with macro-F1 (classify: per record; tag: per word) or, for generate,
    the accuracy of the teacher-forced response tokens."""
    model.eval()
    gold, predicted, losses = [], [], []
    for start in range(0, len(rows), batch_size):
        batch = {k: v.to(device) for k, v in collate(rows[start: start + batch_size], pad).items() if k != "word_ids"}
        output = model(**batch)
        losses.append(output.loss.item() * len(batch["input_ids"]))
        logits, labels = output.logits, batch["labels"]
        if task != "classify" and logits.size(1) > labels.size(1):  # a decoder's soft prompt comes first
            logits = logits[:, logits.size(1) - labels.size(1):]
        if task == "generate" and not model.config.is_encoder_decoder:
            logits, labels = logits[:, :-1], labels[:, 1:]  # a decoder predicts the next token
        guess = logits.argmax(-1)
        if task == "classify":
            gold += labels.tolist()
            predicted += guess.tolist()
        else:
            keep = labels != IGNORE
            gold += labels[keep].tolist()
            predicted += guess[keep].tolist()
    model.train()
    result = {"val_loss": sum(losses) / len(rows)}
    if task == "generate":
        result["val_token_accuracy"] = sum(g == p for g, p in zip(gold, predicted)) / max(len(gold), 1)
    else:
        result.update(classification_metrics(gold, predicted, num_labels))
    return result
