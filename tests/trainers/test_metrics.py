import pytest
import torch

from corpusforge.trainers.config import TrainConfig
from corpusforge.trainers.metrics import _peak_of, describe_peak
from corpusforge.trainers.train import resolve_dtype


@pytest.mark.parametrize("name,dtype,peak", [
    ("NVIDIA H100 80GB HBM3", "bfloat16", 989e12), ("NVIDIA H100 PCIe", "bfloat16", 756e12),
    ("NVIDIA H100 NVL", "bfloat16", 835e12), ("NVIDIA H200", "bfloat16", 989e12),
    ("NVIDIA A100-SXM4-80GB", "bfloat16", 312e12), ("NVIDIA A10G", "bfloat16", 70e12),
    ("NVIDIA A10", "float32", 62.5e12), ("NVIDIA L40S", "bfloat16", 362e12), ("NVIDIA L40", "bfloat16", 181e12),
    ("NVIDIA L4", "bfloat16", 121e12), ("NVIDIA GeForce RTX 4090", "bfloat16", 165e12),
    ("NVIDIA RTX 6000 Ada Generation", "bfloat16", 364e12), ("NVIDIA RTX A6000", "float16", 155e12),
    ("Tesla V100-SXM2-16GB", "float16", 125e12), ("Tesla T4", "float16", 65e12),
    ("Tesla V100-SXM2-16GB", "bfloat16", None),  # emulated bfloat16: no peak, and auto never picks it
    ("AMD Instinct MI300X", "bfloat16", 1307e12), ("Some Future GPU", "bfloat16", None),
])
def test_peak_flops_by_device_name(name, dtype, peak):
    assert _peak_of(name, dtype) == peak


def test_auto_dtype_takes_bfloat16_only_where_the_gpu_has_it_natively(monkeypatch):
    asked = []

    def emulated_only(including_emulation=True):  # what torch answers on a V100 or T4
        asked.append(including_emulation)
        return including_emulation

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", emulated_only)
    cuda = torch.device("cuda", 0)
    assert resolve_dtype(TrainConfig(dtype="auto"), cuda) == torch.float16 and asked == [False]
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    assert resolve_dtype(TrainConfig(dtype="auto"), cuda) == torch.bfloat16
    assert resolve_dtype(TrainConfig(dtype="auto"), torch.device("cpu")) == torch.float32


def test_the_start_line_says_what_mfu_is_measured_against(monkeypatch):
    assert describe_peak(torch.device("cpu"), "float32") == "MFU not shown on CPU"
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA L4")
    assert describe_peak(torch.device("cuda", 0), "bfloat16") == "MFU against NVIDIA L4's 121 TFLOP/s bfloat16 peak"
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4")
    assert "no bfloat16 peak known for Tesla T4" in describe_peak(torch.device("cuda", 0), "bfloat16")
