"""Memory that activation checkpointing and FSDP save, measured on CPU.

    .venv/bin/python bench/memory.py                        # t5 `small`, 512 tokens, batch 4
    .venv/bin/python bench/memory.py --family gpt2 --size base --seq-len 1024 --batch 2

Activation checkpointing: each variant (plain, checkpointed) trains two steps in a fresh process; reported are
the peak resident memory of that process (ru_maxrss, so the allocator and the interpreter are included and the
difference is what checkpointing saves), the resident memory before the first step (model and data), and the
seconds per step. FSDP: two gloo processes shard the same model with ``fully_shard`` per block; reported are
the bytes each process holds of parameters, gradients and AdamW state after a step, against DDP's full copy.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import textwrap
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def build(args):
    import torch

    from corpusforge.trainers.model import Transformer, model_config

    torch.manual_seed(0)
    cfg = model_config(args.family, args.size, vocab_size=args.vocab_size, max_len=args.seq_len, dropout=0.0)
    model = Transformer(cfg)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, args.vocab_size, (args.batch, args.seq_len), generator=g)
    batch = {"input_ids": ids, "labels": ids}
    if cfg.arch == "encoder_decoder":
        batch["decoder_input_ids"] = torch.randint(5, args.vocab_size, (args.batch, args.seq_len // 4), generator=g)
        batch["labels"] = batch["decoder_input_ids"]
    return model, batch


def one_variant(args) -> dict:
    """Run in a fresh process: two training steps of the model, plain or checkpointed."""
    import torch

    from corpusforge.trainers.parallel import Distributed, parallelize

    torch.set_num_threads(args.threads)
    model, batch = build(args)
    trained = parallelize(model, Distributed(), checkpoint_activations=args.variant == "checkpointed")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    times = []
    for _ in range(2):
        start = time.perf_counter()
        _, loss = trained(**batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
    return {"variant": args.variant, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "rss_before_training": before, "seconds_per_step": min(times), "loss": float(loss)}


FSDP_WORKER = textwrap.dedent("""
    import json, sys, torch, torch.distributed as dist
    sys.path.insert(0, sys.argv[1])
    from bench.memory import build, parse
    from corpusforge.trainers.parallel import Distributed, parallelize
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    args = parse(sys.argv[2:])
    model, batch = build(args)
    d = Distributed(rank=dist.get_rank(), world_size=dist.get_world_size(), owns_group=False)
    trained = parallelize(model, d, data_parallel=args.variant)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    _, loss = trained(**batch)
    loss.backward()
    optimizer.step()
    local = lambda t: t.to_local() if hasattr(t, "to_local") else t
    size = lambda ts: sum(local(t).numel() * local(t).element_size() for t in ts)
    params = size(list(model.parameters()))
    grads = size([p.grad for p in model.parameters() if p.grad is not None])
    state = size([v for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v) and v.dim()])
    if dist.get_rank() == 0:
        print(json.dumps({"variant": args.variant, "params": params, "grads": grads, "optimizer": state}))
    dist.destroy_process_group()
""")


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="t5", help="bert, gpt2, t5 or bart.")
    parser.add_argument("--size", default="small", help="debug, small or base.")
    parser.add_argument("--seq-len", type=int, default=512, help="Tokens per example (the decoder gets a quarter).")
    parser.add_argument("--batch", type=int, default=4, help="Examples per step.")
    parser.add_argument("--vocab-size", type=int, default=32128, help="Vocabulary of the model.")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads.")
    parser.add_argument("--variant", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--skip-fsdp", action="store_true", help="Only measure activation checkpointing.")
    return parser.parse_args(argv)


def main() -> None:
    args = parse()
    if args.variant in ("plain", "checkpointed"):
        print(json.dumps(one_variant(args)))
        return
    argv = [a for a in sys.argv[1:] if a != "--skip-fsdp"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": str(args.threads)}
    gib = 2 ** 30
    print(f"{args.family} {args.size}, {args.batch} x {args.seq_len} tokens, vocab {args.vocab_size}")
    rows = {}
    for variant in ("plain", "checkpointed"):
        out = subprocess.run([sys.executable, __file__, *argv, "--variant", variant], env=env, check=True,
                             capture_output=True, text=True).stdout
        rows[variant] = r = json.loads(out.strip().splitlines()[-1])
        print(f"  {variant:13s} peak RSS {r['peak_rss'] / gib:6.2f} GiB (before training {r['rss_before_training'] / gib:.2f} GiB), "
              f"{r['seconds_per_step']:.2f} s/step, loss {r['loss']:.4f}")
    saved = rows["plain"]["peak_rss"] - rows["checkpointed"]["peak_rss"]
    print(f"  activation checkpointing saves {saved / gib:.2f} GiB of peak memory "
          f"({100 * saved / rows['plain']['peak_rss']:.0f}%) for "
          f"{rows['checkpointed']['seconds_per_step'] / rows['plain']['seconds_per_step']:.2f}x the step time")
    if args.skip_fsdp:
        return
    with tempfile.TemporaryDirectory() as tmp:
        worker = pathlib.Path(tmp) / "fsdp_worker.py"
        worker.write_text(FSDP_WORKER)
        for variant in ("ddp", "fsdp"):
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(worker),
                   str(REPO), *argv, "--variant", variant]
            out = subprocess.run(cmd, env={**env, "OMP_NUM_THREADS": "1"}, check=True, capture_output=True,
                                 text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            total = r["params"] + r["grads"] + r["optimizer"]
            print(f"  {variant} x2 processes: each holds {total / gib:.3f} GiB (parameters {r['params'] / gib:.3f}, "
                  f"gradients {r['grads'] / gib:.3f}, AdamW state {r['optimizer'] / gib:.3f})")


if __name__ == "__main__":
    main()
