"""Masked LM vs ELECTRA vs causal LM on the same tokens and the same steps: a linear probe on frozen features.

    .venv/bin/python bench/objectives.py                       # debug-size models, 400 steps each (CPU, minutes)
    .venv/bin/python bench/objectives.py --steps 1000 --size small --device cuda

Each objective trains through ``train_model`` (the real trainer) on the very same token shards, with the same
seed, sequence length, batch and number of steps, so every model sees the same number of tokens (ELECTRA
spends more compute per step: its generator's pass; the FLOPs column says how much). Then every model is
frozen and its mean-pooled last hidden states (ELECTRA: the discriminator's) feed a multinomial logistic
regression that predicts which section of the Python documentation a paragraph comes from (the 8 largest
sections of ``pydoc_data.topics``, shipped with Python, so it runs offline; a fixed half of the paragraphs trains
the probe, the other half scores it). References: the majority class, the same probe on an untrained encoder,
and a bag-of-tokens probe (no model at all). Pretraining text is the whole documentation, the probe's paragraphs
included (no labels are seen in pretraining).

ELECTRA's paper reports that replaced-token detection beats MLM at equal compute and is far more sample
efficient; this prints what happens at this (tiny) scale, whatever it is.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import sys
import tempfile
import time
import types

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.train import build_run  # noqa: E402
from corpusforge.core.config_loader import apply_overrides, from_dict  # noqa: E402
from corpusforge.trainers.checkpoint import load_pretrained  # noqa: E402
from corpusforge.trainers.config import TrainConfig  # noqa: E402
from corpusforge.trainers.train import train_model  # noqa: E402

OBJECTIVES = ("mlm", "rtd", "clm")
SECTIONS = 8


def probe_data() -> tuple[list[str], np.ndarray]:
    """Paragraphs (> 100 characters) of the 8 largest documentation sections and their section labels."""
    from pydoc_data.topics import topics

    paragraphs = {k: [p.strip() for p in text.split("\n\n") if len(p.strip()) > 100] for k, text in topics.items()}
    largest = sorted(paragraphs, key=lambda k: (-len(paragraphs[k]), k))[:SECTIONS]
    texts, labels = [], []
    for label, key in enumerate(largest):
        texts += paragraphs[key]
        labels += [label] * len(paragraphs[key])
    return texts, np.asarray(labels)


def train(run: pathlib.Path, objective: str, args) -> tuple[float, float]:
    """Train one objective in its own copy of the run; returns (seconds, final train loss)."""
    overrides = [f"train.objective={objective}", f"train.model.size={args.size}", f"train.seq_len={args.seq_len}",
                 f"train.micro_batch_size={args.batch}", f"train.max_steps={args.steps}", "train.eval_every=0",
                 "train.eval_batches=4", f"train.log_every={max(1, args.steps // 10)}", "train.progress=false",
                 f"train.optim.warmup_steps={max(1, args.steps // 10)}", f"train.optim.lr={args.lr}",
                 f"train.device={args.device}", f"train.checkpoint_every={args.steps}", "train.seed=0"]
    cfg = types.SimpleNamespace(train=from_dict(TrainConfig, apply_overrides({}, overrides)["train"], "train"),
                                output=types.SimpleNamespace(run_dir=str(run), overwrite=True))
    started = time.perf_counter()
    result = train_model(cfg.train, cfg.run_paths())
    return time.perf_counter() - started, result.train_loss


def training_flops(model, args) -> float:
    """The trainer's own FLOP estimate (trainers/metrics.py) for the whole run; ELECTRA's generator included."""
    from corpusforge.trainers.metrics import train_flops

    positions = args.batch * args.seq_len
    per_step = train_flops(model.cfg, args.batch, args.seq_len, 0, positions)
    if hasattr(model, "generator_cfg"):
        per_step += train_flops(model.generator_cfg, args.batch, args.seq_len, 0, positions)
    return per_step * args.steps


@torch.no_grad()
def features(model, tokenizer, texts: list[str], max_len: int) -> np.ndarray:
    """Mean of the last hidden states over each paragraph's tokens (at most ``max_len``)."""
    out = []
    for text in texts:
        ids = torch.tensor([tokenizer.encode(text).ids[:max_len]])
        if hasattr(model, "discriminator"):  # ELECTRA: the half kept for downstream use
            h = model.discriminator.hidden(ids)
        elif model.cfg.arch == "encoder":
            h = model.hidden(ids)
        else:
            h = model.decoder(model.tok_emb(ids))
        out.append(h[0].mean(0).float().numpy())
    return np.stack(out)


def bag_of_tokens(tokenizer, texts: list[str], vocab_size: int) -> np.ndarray:
    out = np.zeros((len(texts), vocab_size), dtype=np.float32)
    for i, text in enumerate(texts):
        ids = tokenizer.encode(text).ids
        np.add.at(out[i], ids, 1.0 / max(len(ids), 1))
    return out


def probe(train_x, train_y, test_x, test_y, weight_decay: float = 1e-3) -> float:
    """Accuracy of a multinomial logistic regression (standardised features, L2, full-batch L-BFGS)."""
    mean, std = train_x.mean(0), train_x.std(0) + 1e-6
    x, xt = torch.tensor((train_x - mean) / std), torch.tensor((test_x - mean) / std)
    y = torch.tensor(train_y)
    linear = torch.nn.Linear(x.size(1), SECTIONS)
    optimizer = torch.optim.LBFGS(linear.parameters(), max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(linear(x), y) + weight_decay * linear.weight.pow(2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        return float((linear(xt).argmax(-1).numpy() == test_y).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--size", default="debug", choices=["debug", "small", "base"])
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--vocab-size", type=int, default=4000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from tokenizers import Tokenizer

    texts, labels = probe_data()
    order = np.random.default_rng(0).permutation(len(texts))
    train_idx, test_idx = order[: len(order) // 2], order[len(order) // 2:]
    majority = np.bincount(labels[train_idx]).argmax()
    print(f"probe: {len(texts)} paragraphs of {SECTIONS} documentation sections, {len(train_idx)} train / "
          f"{len(test_idx)} test; majority class {float((labels[test_idx] == majority).mean()):.3f}")
    with tempfile.TemporaryDirectory() as tmp:
        base = build_run(pathlib.Path(tmp) / "base", args.vocab_size)
        tokenizer = Tokenizer.from_file(str(base / "tokenizer" / "tokenizer.json"))
        tokens = json.loads((base / "tokens" / "manifest.json").read_text())["splits"]["train"]["tokens"]
        print(f"pretraining text: {tokens:,} tokens; every objective: {args.steps} steps x {args.batch} x "
              f"{args.seq_len} = {args.steps * args.batch * args.seq_len:,} token positions, size {args.size}, "
              f"seed 0, lr {args.lr}")
        bag = bag_of_tokens(tokenizer, texts, tokenizer.get_vocab_size())
        rows = [("bag of tokens (no model)", None, None, None,
                 probe(bag[train_idx], labels[train_idx], bag[test_idx], labels[test_idx]))]
        for objective in OBJECTIVES:
            run = pathlib.Path(tmp) / objective
            shutil.copytree(base, run)
            seconds, loss = train(run, objective, args)
            model, _ = load_pretrained(run / "model")
            model.eval()
            x = features(model, tokenizer, texts, args.seq_len)
            rows.append((objective, seconds, loss, training_flops(model, args),
                         probe(x[train_idx], labels[train_idx], x[test_idx], labels[test_idx])))
            if objective == "mlm":  # the same architecture, untrained: what the probe gets from random features
                from corpusforge.trainers.model import Transformer

                torch.manual_seed(0)
                untrained = Transformer(model.cfg).eval()
                x = features(untrained, tokenizer, texts, args.seq_len)
                rows.append(("untrained encoder", None, None, None,
                             probe(x[train_idx], labels[train_idx], x[test_idx], labels[test_idx])))
    print(f"\n{'features':<26} {'train s':>8} {'train TFLOP':>11} {'final loss':>10} {'probe accuracy':>15}")
    nan = float("nan")
    for name, seconds, loss, flops, accuracy in rows:
        print(f"{name:<26} {seconds if seconds is not None else nan:>8.1f} "
              f"{flops / 1e12 if flops is not None else nan:>11.4f} {loss if loss is not None else nan:>10.4f} "
              f"{accuracy:>15.3f}")
    print("\n(final loss: each objective's own training loss, not comparable across objectives; rtd's is the "
          "generator MLM loss + 50 x detection loss)")


if __name__ == "__main__":
    main()
