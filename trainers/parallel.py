"""Where the model runs: device choice, torch.compile and DDP applied from outside the model, collectives.

    dist = init_distributed("auto")           # reads torchrun's RANK / WORLD_SIZE / LOCAL_RANK
    model = parallelize(model, dist, compile=True)
"""
from __future__ import annotations

import dataclasses
import os

import torch
import torch.distributed as torch_dist

from corpusforge.pipeline.core.errors import UserError


@dataclasses.dataclass
class Distributed:
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    device: torch.device = torch.device("cpu")
    owns_group: bool = False  # this process created the process group (and destroys it)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def pick_device(preference: str) -> str:
    """'cuda' when asked for or available, else 'cpu'; a UserError when cuda is asked for and absent."""
    if preference == "cuda" and not torch.cuda.is_available():
        raise UserError("train.device is cuda but no CUDA device is available; set train.device=auto or cpu")
    if preference == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return preference


def init_distributed(preference: str = "auto") -> Distributed:
    """Join torchrun's process group when WORLD_SIZE > 1 (NCCL on CUDA, gloo on CPU)."""
    kind = pick_device(preference)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank, local_rank = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    if kind == "cuda":
        if local_rank >= torch.cuda.device_count():
            raise UserError(f"LOCAL_RANK {local_rank} but only {torch.cuda.device_count()} CUDA devices; "
                            "lower torchrun --nproc_per_node")
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    owns = False
    if world > 1 and not torch_dist.is_initialized():
        torch_dist.init_process_group(backend="nccl" if kind == "cuda" else "gloo")
        owns = True
    if torch_dist.is_initialized():
        rank, world = torch_dist.get_rank(), torch_dist.get_world_size()
    return Distributed(rank=rank, local_rank=local_rank, world_size=world, device=device, owns_group=owns)


def shutdown(dist: Distributed) -> None:
    if dist.owns_group and torch_dist.is_initialized():
        torch_dist.destroy_process_group()


def parallelize(model: torch.nn.Module, dist: Distributed, compile: bool = False) -> torch.nn.Module:
    """Compile (optionally), then wrap in DDP when there are several processes. Keep a reference to the
    unwrapped model for checkpoints: its state dict has no ``_orig_mod.`` / ``module.`` prefixes."""
    if compile:
        model = torch.compile(model)
    if dist.enabled:
        ids = [dist.device.index] if dist.device.type == "cuda" else None
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
    return model


def all_reduce_sum(values: list[float], dist: Distributed) -> list[float]:
    """Sum a few numbers over all processes (one small collective)."""
    if not dist.enabled:
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=dist.device if dist.device.type == "cuda" else "cpu")
    torch_dist.all_reduce(t)
    return t.tolist()


def all_gather_objects(obj, dist: Distributed) -> list:
    if not dist.enabled:
        return [obj]
    out = [None] * dist.world_size
    torch_dist.all_gather_object(out, obj)
    return out


def barrier(dist: Distributed) -> None:
    if dist.enabled:
        torch_dist.barrier()
