"""The learning-rate schedule (trainers/schedule.py): torch's schedulers on the curve the trainer always had."""
import io
import math

import pytest
import torch

from corpusforge.trainers.schedule import load_state, warmup_then_decay

PEAK = 3e-4


def closed_form(step, total, warmup_steps, decay, final_ratio):
    """The schedule's definition: (i + 1) / warmup of the peak while warming up, then cosine or linear from the
    peak to final_ratio x peak at ``total`` (or the peak throughout)."""
    warmup = min(warmup_steps, max(total - 1, 0))
    if step < warmup:
        return PEAK * (step + 1) / warmup
    if decay == "constant":
        return PEAK
    progress = (step - warmup) / (total - warmup)
    shape = 0.5 * (1.0 + math.cos(math.pi * progress)) if decay == "cosine" else 1.0 - progress
    return PEAK * (final_ratio + (1.0 - final_ratio) * shape)


def optimizer():
    weights, biases = torch.nn.Parameter(torch.zeros(2, 2)), torch.nn.Parameter(torch.zeros(2))
    return torch.optim.AdamW([{"params": [weights]}, {"params": [biases], "weight_decay": 0.0}], lr=PEAK)


def rates(opt, scheduler, steps):
    out = []
    for _ in range(steps):
        out.append([group["lr"] for group in opt.param_groups])
        opt.step()
        scheduler.step()
    return out


@pytest.mark.parametrize("decay", ["cosine", "linear", "constant"])
@pytest.mark.parametrize("total,warmup,final_ratio", [(1, 0, 0.1), (2, 5, 0.1), (10, 1, 0.0), (10, 3, 0.1),
                                                       (300, 0, 0.1), (2000, 100, 0.0), (2000, 100, 1.0)])
def test_every_step_runs_at_the_closed_form_rate(decay, total, warmup, final_ratio):
    opt = optimizer()
    scheduler = warmup_then_decay(opt, warmup_steps=warmup, total_steps=total, decay=decay, final_ratio=final_ratio)
    for step, groups in enumerate(rates(opt, scheduler, total)):
        want = closed_form(step, total, warmup, decay, final_ratio)
        assert groups == pytest.approx([want, want], rel=1e-9, abs=1e-18), step


def test_the_state_resumes_on_the_same_curve():
    """What a checkpoint holds (optimizer and scheduler state, loaded weights-only) continues the curve exactly."""
    settings = dict(warmup_steps=5, total_steps=40, decay="cosine", final_ratio=0.1)
    opt = optimizer()
    straight = rates(opt, warmup_then_decay(opt, **settings), 40)
    opt = optimizer()
    scheduler = warmup_then_decay(opt, **settings)
    first = rates(opt, scheduler, 3)  # stops inside the warmup: the resumed run crosses into the decay
    buffer = io.BytesIO()
    torch.save({"optimizer": opt.state_dict(), "scheduler": scheduler.state_dict()}, buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    opt = optimizer()
    scheduler = warmup_then_decay(opt, **settings)
    load_state(scheduler, state["scheduler"])
    opt.load_state_dict(state["optimizer"])
    assert first + rates(opt, scheduler, 37) == straight


def test_a_checkpoint_of_the_former_lambda_schedule_resumes_on_the_curve():
    """Checkpoints written before torch's schedulers hold a LambdaLR's state: the curve continues all the same."""
    settings = dict(warmup_steps=5, total_steps=40, decay="cosine", final_ratio=0.1)
    opt = optimizer()
    former = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: closed_form(step, 40, 5, "cosine", 0.1) / PEAK)
    rates(opt, former, 12)
    state = {"optimizer": opt.state_dict(), "scheduler": former.state_dict()}
    opt = optimizer()
    scheduler = warmup_then_decay(opt, **settings)
    load_state(scheduler, state["scheduler"])
    opt.load_state_dict(state["optimizer"])
    for step, groups in enumerate(rates(opt, scheduler, 28), start=12):
        want = closed_form(step, 40, 5, "cosine", 0.1)
        assert groups == pytest.approx([want, want], rel=1e-9), step
