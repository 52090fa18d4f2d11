"""Fine-tuning over a frozen ELMo biLM (``--method elmo``), ELMo's own recipe for a task (Peters et al., 2018,
section 3.3): the biLM's weights stay fixed, a learned scalar mix ``gamma * sum_j softmax(s)_j h_j`` combines
its layers, and a linear classifier reads the mix mean-pooled over the record's tokens. Only ``s``, ``gamma``
and the classifier train.

    model = ElmoClassifier.from_dir("runs/x/model", num_labels=2)   # a run trained with objective bilm
    output = model(input_ids, attention_mask, labels)                # .loss, .logits as transformers' models
"""
from __future__ import annotations

import pathlib
import types

import torch
import torch.nn as nn
import torch.nn.functional as F


def is_bilm(model_dir: str | pathlib.Path) -> bool:
    """Whether ``model_dir`` is a run's model/ trained with objective bilm (ELMo)."""
    config = pathlib.Path(model_dir) / "config.json"
    if not config.is_file():
        return False
    from corpusforge.trainers.model_files import read_json

    return (read_json(config).get("model") or {}).get("arch") == "bilm"


class ElmoClassifier(nn.Module):
    def __init__(self, bilm: nn.Module, num_labels: int):
        from corpusforge.trainers.elmo import ScalarMix

        super().__init__()
        self.bilm = bilm.requires_grad_(False).eval()
        self.mix = ScalarMix(bilm.cfg.n_layers + 1)
        self.classifier = nn.Linear(2 * bilm.cfg.d_model, num_labels)
        self.config = types.SimpleNamespace(is_encoder_decoder=False)  # what the shared evaluation reads

    @classmethod
    def from_dir(cls, model_dir: str | pathlib.Path, num_labels: int) -> "ElmoClassifier":
        from corpusforge.trainers.checkpoint import load_pretrained

        bilm, _ = load_pretrained(model_dir)
        return cls(bilm, num_labels)

    def train(self, mode: bool = True) -> "ElmoClassifier":
        super().train(mode)
        self.bilm.eval()  # frozen features: no dropout noise in them
        return self

    def forward(self, input_ids, attention_mask=None, labels=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        with torch.no_grad():
            layers = self.bilm.layers(input_ids, attention_mask)  # (n_layers + 1, batch, length, 2 x d_model)
        mask = attention_mask.unsqueeze(-1).to(layers.dtype)
        pooled = (self.mix(layers) * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        logits = self.classifier(pooled)
        loss = F.cross_entropy(logits.float(), labels) if labels is not None else None
        return types.SimpleNamespace(loss=loss, logits=logits)
