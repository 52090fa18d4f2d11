"""Where the model runs: device choice; activation checkpointing, DDP or FSDP, and torch.compile applied from
outside the model; full (unsharded) state dicts for checkpoints; collectives.

    dist = init_distributed("auto")           # reads torchrun's RANK / WORLD_SIZE / LOCAL_RANK
    trained = parallelize(model, dist, compile=True, data_parallel="fsdp", checkpoint_activations=True)

Order, as torchtitan does it: activation checkpointing wraps each block; then DDP wraps the model and compile
wraps DDP (so DDP's compiled bucketed communication overlaps the backward), or, with FSDP, each block is
compiled and sharded with ``fully_shard`` and the root sharded last.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Literal

import torch
import torch.distributed as torch_dist

from corpusforge.core.errors import UserError


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


DataParallel = Literal["ddp", "fsdp"]


def blocks_of(model: torch.nn.Module) -> list[tuple[torch.nn.ModuleList, int]]:
    """(block list, index) of every Transformer block, encoder first; an ELECTRA model's discriminator's, then its
    generator's."""
    parts = [getattr(model, name) for name in ("discriminator", "generator") if hasattr(model, name)] or [model]
    return [(stack.blocks, i) for part in parts
            for stack in (getattr(part, "encoder", None), getattr(part, "decoder", None))
            if stack is not None for i in range(len(stack.blocks))]


def checkpoint_blocks(model: torch.nn.Module) -> None:
    """Recompute each block's activations in the backward pass instead of keeping them (non-reentrant
    checkpointing, RNG state preserved so dropout repeats). The wrapper hides itself in state dict keys."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    for blocks, i in blocks_of(model):
        blocks[i] = checkpoint_wrapper(blocks[i])


def parallelize(model: torch.nn.Module, dist: Distributed, compile: bool = False, data_parallel: DataParallel = "ddp",
                checkpoint_activations: bool = False, param_dtype: torch.dtype | None = None) -> torch.nn.Module:
    """Apply activation checkpointing, DDP or FSDP and compile (``fullgraph=True`` on the model or its blocks: a
    graph break is a bug);
    returns what the forward pass runs. ``model`` is changed in place (checkpointed blocks; FSDP shards its
    parameters); its state dict keeps plain names: read it through ``full_state_dict``. Under FSDP,
    ``param_dtype`` (the autocast dtype) is what parameters are gathered in: half the all-gather bytes, while
    gradients are reduced and the sharded parameters kept in float32."""
    if checkpoint_activations:
        checkpoint_blocks(model)
    if compile and any(isinstance(m, torch.nn.RNNBase) for m in model.modules()):
        torch._dynamo.config.allow_rnn = True  # ELMo's LSTMs: traced as one op, not a graph break
    if data_parallel == "fsdp" and dist.enabled:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32 if param_dtype else None)
        for blocks, i in blocks_of(model):
            if compile:
                blocks[i] = torch.compile(blocks[i], fullgraph=True)
            fully_shard(blocks[i], mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        return model
    if not dist.enabled:
        return torch.compile(model, fullgraph=True) if compile else model
    ids = [dist.device.index] if dist.device.type == "cuda" else None
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids)
    # Dynamo steps over DDP's own Python forward (which it cannot trace, so no fullgraph here) and compiles
    # the model's forward, split at DDP's gradient buckets so their all-reduce overlaps the backward pass.
    return torch.compile(model) if compile else model


def is_sharded(model: torch.nn.Module) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


@contextlib.contextmanager
def gradient_sync(trained: torch.nn.Module, enabled: bool):
    """Skip the gradient all-reduce / reduce-scatter of accumulation micro-steps (``enabled=False``)."""
    module = getattr(trained, "_orig_mod", trained)  # under torch.compile
    if is_sharded(module):
        module.set_requires_gradient_sync(enabled)
        yield
        module.set_requires_gradient_sync(True)
    elif not enabled and isinstance(module, torch.nn.parallel.DistributedDataParallel):
        with module.no_sync():
            yield
    else:
        yield


def full_state_dict(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None
                    ) -> tuple[dict, dict | None]:
    """The unsharded model (and optimizer) state on CPU, keyed as an unwrapped model's; a collective under
    FSDP (every process calls it), the plain state dicts otherwise."""
    if not is_sharded(model):
        return model.state_dict(), optimizer.state_dict() if optimizer is not None else None
    from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                         get_optimizer_state_dict)

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    optim = get_optimizer_state_dict(model, optimizer, options=options) if optimizer is not None else None
    return get_model_state_dict(model, options=options), optim


def load_full_state_dict(model: torch.nn.Module, optimizer: torch.optim.Optimizer, model_state: dict,
                         optimizer_state: dict) -> None:
    """The inverse of ``full_state_dict`` (each process keeps its shard under FSDP)."""
    if not is_sharded(model):
        model.load_state_dict(model_state)
        optimizer.load_state_dict(optimizer_state)
        return
    from torch.distributed.checkpoint.state_dict import (StateDictOptions, set_model_state_dict,
                                                         set_optimizer_state_dict)

    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=False)
    set_model_state_dict(model, model_state, options=options)
    set_optimizer_state_dict(model, optimizer, optimizer_state, options=options)


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
