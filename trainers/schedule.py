"""The learning-rate schedule: a linear warmup, then cosine, linear or no decay, from torch's own schedulers.

    scheduler = warmup_then_decay(optimizer, warmup_steps=100, total_steps=10_000, decay="cosine", final_ratio=0.1)

Step i of the warmup runs at (i + 1) / warmup_steps of the peak (the first step already learns); the decay
then starts at the peak and reaches ``final_ratio`` x peak at ``total_steps``. The scheduler's ``state_dict``
goes into checkpoints, so a resumed run continues on the same curve (``load_state``).
"""
from __future__ import annotations

import warnings
from typing import Literal

import torch
from torch.optim import lr_scheduler


def warmup_then_decay(optimizer: torch.optim.Optimizer, *, warmup_steps: int, total_steps: int,
                      decay: Literal["cosine", "linear", "constant"], final_ratio: float) -> lr_scheduler.LRScheduler:
    """``warmup_steps`` is cut to ``total_steps - 1`` (at least one step after the peak); every param group's
    peak is its ``lr`` now, and the groups share one peak (cosine's floor is absolute)."""
    warmup = min(warmup_steps, max(total_steps - 1, 0))
    decay_steps = total_steps - warmup
    if decay == "cosine":
        peak = optimizer.param_groups[0]["lr"]
        after = lr_scheduler.CosineAnnealingLR(optimizer, T_max=decay_steps, eta_min=final_ratio * peak)
    elif decay == "linear":
        after = lr_scheduler.LinearLR(optimizer, start_factor=1.0, end_factor=final_ratio, total_iters=decay_steps)
    else:
        after = lr_scheduler.ConstantLR(optimizer, factor=1.0, total_iters=0)
    if warmup == 0:
        return after
    ramp = lr_scheduler.LinearLR(optimizer, start_factor=1.0 / warmup, end_factor=1.0, total_iters=warmup - 1)
    return lr_scheduler.SequentialLR(optimizer, [ramp, after], milestones=[warmup])


def load_state(scheduler: lr_scheduler.LRScheduler, state: dict) -> None:
    """Restore a checkpoint's scheduler state; call it before the optimizer's state is loaded. A checkpoint
    written before the schedule came from these schedulers holds a ``LambdaLR``'s state for the same curve: the
    schedule is replayed to its step instead (the replay moves the rates from the start; the optimizer's state,
    loaded next, then sets them as saved)."""
    if "lr_lambdas" not in state:
        scheduler.load_state_dict(state)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "scheduler.step() before optimizer.step()": no training step is taken
        for _ in range(state["last_epoch"]):
            scheduler.step()
