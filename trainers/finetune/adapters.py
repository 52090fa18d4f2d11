"""Bottleneck adapters (Houlsby et al. 2019; Pfeiffer et al. 2020), for the peft versions that have none.

    names = add_adapters(model, size=64, placement="pfeiffer")   # base weights frozen, adapters trainable

An adapter is ``h + up(gelu(down(h)))`` on the output of a block's output projection, before the residual
sum and its norm: Pfeiffer places one after each feed-forward block, Houlsby one after the attention
projection too. ``up`` starts at zero, so an adapted model starts out computing exactly what the base does.
"""
from __future__ import annotations

import re

import torch
from torch import nn

from corpusforge.core.errors import UserError

# model_type -> (attention output projection, feed-forward output projection), as module-name patterns.
OUTPUT_PROJECTIONS = {
    "bert": (r"attention\.output\.dense", r"layer\.\d+\.output\.dense"),
    "gpt2": (r"attn\.c_proj", r"mlp\.c_proj"),
    "llama": (r"self_attn\.o_proj", r"mlp\.down_proj"),
    "t5": (r"SelfAttention\.o", r"DenseReluDense\.wo"),
    "bart": (r"self_attn\.out_proj", r"layers\.\d+\.fc2"),
}


class Bottleneck(nn.Module):
    def __init__(self, width: int, size: int):
        super().__init__()
        self.down = nn.Linear(width, size)
        self.up = nn.Linear(size, width)
        nn.init.normal_(self.down.weight, std=0.02)
        nn.init.zeros_(self.down.bias)
        nn.init.zeros_(self.up.weight)
        nn.init.zeros_(self.up.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return hidden + self.up(nn.functional.gelu(self.down(hidden)))


class Adapted(nn.Module):
    """A projection followed by its adapter."""

    def __init__(self, projection: nn.Module, width: int, size: int):
        super().__init__()
        self.projection = projection
        self.adapter = Bottleneck(width, size)

    def forward(self, *args, **kwargs):
        return self.adapter(self.projection(*args, **kwargs))


def add_adapters(model: nn.Module, size: int, placement: str) -> list[str]:
    """Wrap the matching projections of ``model`` (in place); freeze everything but the adapters. Returns the
    wrapped module names."""
    kind = model.config.model_type
    if kind not in OUTPUT_PROJECTIONS:
        raise UserError(f"adapters know no layer layout for model type {kind!r}; supported: "
                        f"{', '.join(OUTPUT_PROJECTIONS)} (or use --method lora)")
    attention, feed_forward = OUTPUT_PROJECTIONS[kind]
    pattern = re.compile(rf"(^|\.)({feed_forward}|{attention})$" if placement == "houlsby" else rf"(^|\.){feed_forward}$")
    names = [name for name, _ in model.named_modules() if pattern.search(name)]
    if not names:
        raise UserError(f"no layer of this {kind} model matched the adapter placement {placement!r}")
    for param in model.parameters():
        param.requires_grad_(False)
    width = model.config.hidden_size
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, Adapted(getattr(parent, child), width, size))
    return names


def adapter_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v for k, v in model.state_dict().items() if ".adapter." in k}
