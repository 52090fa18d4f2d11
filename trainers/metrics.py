"""Throughput, FLOPs and MFU, the metrics log, and the loss-curve plot."""
from __future__ import annotations

import json
import math
import pathlib

import torch

from corpusforge.core import rundir
from corpusforge.trainers.model import ModelConfig

# Dense peak FLOP/s per device (vendor datasheets, tensor cores, no sparsity; GeForce cards at FP32 accumulate),
# by the autocast dtype in use (float32 means TF32 tensor cores where the device has them). Matched as a substring
# of torch.cuda.get_device_name, first match wins: longer names first. A device without bfloat16 has no entry.
PEAK_FLOPS: list[tuple[str, dict[str, float]]] = [
    # data centre, NVIDIA
    ("B200", {"bfloat16": 2250e12, "float16": 2250e12, "float32": 1100e12}),
    ("H200", {"bfloat16": 989e12, "float16": 989e12, "float32": 494e12}),
    ("GH200", {"bfloat16": 989e12, "float16": 989e12, "float32": 494e12}),
    ("H100 NVL", {"bfloat16": 835e12, "float16": 835e12, "float32": 418e12}),
    ("H100 PCIe", {"bfloat16": 756e12, "float16": 756e12, "float32": 378e12}),
    ("H100", {"bfloat16": 989e12, "float16": 989e12, "float32": 494e12}),
    ("H800", {"bfloat16": 989e12, "float16": 989e12, "float32": 494e12}),
    ("H20", {"bfloat16": 148e12, "float16": 148e12, "float32": 74e12}),
    ("A100", {"bfloat16": 312e12, "float16": 312e12, "float32": 156e12}),
    ("A800", {"bfloat16": 312e12, "float16": 312e12, "float32": 156e12}),
    ("A30", {"bfloat16": 165e12, "float16": 165e12, "float32": 82e12}),
    ("A40", {"bfloat16": 150e12, "float16": 150e12, "float32": 74.8e12}),
    ("A10G", {"bfloat16": 70e12, "float16": 70e12, "float32": 35e12}),
    ("A10", {"bfloat16": 125e12, "float16": 125e12, "float32": 62.5e12}),
    ("L40S", {"bfloat16": 362e12, "float16": 362e12, "float32": 183e12}),
    ("L40", {"bfloat16": 181e12, "float16": 181e12, "float32": 90.5e12}),
    ("L4", {"bfloat16": 121e12, "float16": 121e12, "float32": 60e12}),
    ("V100", {"float16": 125e12, "float32": 15.7e12}),
    ("T4", {"float16": 65e12, "float32": 8.1e12}),
    ("P100", {"float16": 18.7e12, "float32": 9.3e12}),
    # workstation and consumer, NVIDIA
    ("RTX 6000 Ada", {"bfloat16": 364e12, "float16": 364e12, "float32": 182e12}),
    ("RTX A6000", {"bfloat16": 155e12, "float16": 155e12, "float32": 77.4e12}),
    ("RTX A5000", {"bfloat16": 111e12, "float16": 111e12, "float32": 55.6e12}),
    ("RTX 5090", {"bfloat16": 209e12, "float16": 209e12, "float32": 105e12}),
    ("RTX 4090", {"bfloat16": 165e12, "float16": 165e12, "float32": 82.6e12}),
    ("RTX 4080", {"bfloat16": 97.5e12, "float16": 97.5e12, "float32": 48.7e12}),
    ("RTX 3090", {"bfloat16": 71e12, "float16": 71e12, "float32": 35.6e12}),
    ("RTX 3080", {"bfloat16": 59.5e12, "float16": 59.5e12, "float32": 29.8e12}),
    # AMD Instinct (ROCm reports them through torch.cuda)
    ("MI300X", {"bfloat16": 1307e12, "float16": 1307e12, "float32": 654e12}),
    ("MI250X", {"bfloat16": 383e12, "float16": 383e12, "float32": 47.9e12}),
    ("MI250", {"bfloat16": 362e12, "float16": 362e12, "float32": 45.3e12}),
]


def peak_flops(device: torch.device, dtype: str) -> float | None:
    """Peak FLOP/s of one device for ``dtype``; None on CPU or an unknown GPU (MFU is then not shown)."""
    if device.type != "cuda":
        return None
    return _peak_of(torch.cuda.get_device_name(device), dtype)


def _peak_of(name: str, dtype: str) -> float | None:
    for key, table in PEAK_FLOPS:
        if key in name:
            return table.get(dtype)
    return None


def describe_peak(device: torch.device, dtype: str) -> str:
    """What MFU is measured against, for the line printed at start."""
    if device.type != "cuda":
        return "MFU not shown on CPU"
    name = torch.cuda.get_device_name(device)
    peak = _peak_of(name, dtype)
    if peak is None:
        return f"MFU not shown: no {dtype} peak known for {name} (trainers/metrics.py PEAK_FLOPS)"
    return f"MFU against {name}'s {peak / 1e12:.0f} TFLOP/s {dtype} peak"


def _stack_flops(cfg: ModelConfig, layers: int, length: int, memory: int = 0) -> float:
    """Forward FLOPs of one sequence through a stack (2 per multiply-accumulate)."""
    d, ff = cfg.d_model, cfg.d_ff
    mlp = 2 * d * ff * (3 if cfg.activation == "swiglu" else 2)
    per_token = 2 * 4 * d * d + 2 * 2 * length * d + mlp  # projections, scores and values, MLP
    if memory:
        per_token += 2 * 2 * d * d + 2 * 2 * memory * d  # cross-attention q/out, scores and values
    total = layers * length * per_token
    if memory:
        total += layers * memory * 2 * 2 * d * d  # cross-attention k/v of the encoder output
    return total


def train_flops(cfg: ModelConfig, batch: int, length: int, decoder_length: int = 0, predicted: int = 0) -> float:
    """FLOPs of one training pass (forward + backward = 3 x forward) over a batch; ``predicted`` is the number
    of positions given an output projection (the model projects every position of the labels)."""
    if cfg.arch == "bilm":  # ELMo: two directions of LSTMs (4 gates) with projected cells, two softmaxes
        lstm = 2 * cfg.n_layers * 2 * (4 * cfg.lstm_dim * (2 * cfg.d_model) + cfg.lstm_dim * cfg.d_model)
        return 3.0 * (lstm * batch * length + 2 * predicted * 2 * cfg.d_model * cfg.vocab_size)
    if cfg.arch == "encoder":
        fwd = _stack_flops(cfg, cfg.n_layers, length) * batch
    elif cfg.arch == "decoder":
        fwd = _stack_flops(cfg, cfg.n_layers, length) * batch
    else:
        fwd = (_stack_flops(cfg, cfg.n_layers, length)
               + _stack_flops(cfg, cfg.n_decoder_layers or cfg.n_layers, decoder_length, memory=length)) * batch
    head = 2 * cfg.d_model * cfg.vocab_size + (2 * cfg.d_model * cfg.d_model if cfg.head_transform else 0)
    return 3.0 * (fwd + predicted * head)


class MetricsLog:
    """Appends one JSON object per line to ``metrics.jsonl``; mirrors scalars to TensorBoard when installed."""

    def __init__(self, path: str | pathlib.Path, resume_step: int | None = None):
        self.path = pathlib.Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume_step is not None and self.path.exists():  # drop records written after the checkpoint
            kept = [line for line in self.path.read_text(encoding="utf-8").splitlines()
                    if line.strip() and json.loads(line).get("step", 0) <= resume_step]
            self.path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        elif self.path.exists():
            rundir.delete(str(self.path))
        self._tb = None
        try:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(self.path.parent / "tensorboard"))
        except Exception:  # tensorboard is optional
            self._tb = None

    def write(self, record: dict) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        if self._tb is not None:
            prefix = record.get("split", "train")
            for key, value in record.items():
                if isinstance(value, (int, float)) and key != "step" and math.isfinite(value):
                    self._tb.add_scalar(f"{prefix}/{key}", value, record["step"])

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()


def plot_loss_curve(metrics_path: str | pathlib.Path, png_path: str | pathlib.Path, title: str = "") -> None:
    """Training (and validation) loss against step, from ``metrics.jsonl``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [json.loads(line) for line in pathlib.Path(metrics_path).read_text(encoding="utf-8").splitlines()
               if line.strip()]
    train = [(r["step"], r["loss"]) for r in records if r.get("split") == "train"]
    val = [(r["step"], r["loss"]) for r in records if r.get("split") == "val"]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    if train:
        ax.plot(*zip(*train), label="train", linewidth=1.2)
    if val:
        ax.plot(*zip(*val), "o-", label="val", linewidth=1.2, markersize=3)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png_path)
    plt.close(fig)
