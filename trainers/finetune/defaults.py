"""Default learning rates per method and model width.

A method's reference rate is the usual recipe at BERT-base's width (d = 768): 5e-5 for full fine-tuning
(Devlin et al. 2019, appendix A.3, sweep 5e-5, 3e-5, 2e-5), 5e-4 for LoRA and bottleneck adapters (Hu et al.
2022 use 4e-4 to 5e-4 on RoBERTa-base; Houlsby et al. 2019 sweep 3e-5 to 3e-3), 1e-2 for prefix and 3e-2 for
prompt tuning (the rates corpusforge used before; Lester et al. 2021 use 0.3 with Adafactor). Full
fine-tuning, LoRA and adapters train hidden-layer matrices, whose best Adam learning rate grows as the model
narrows and gets shallower (muP: Yang et al. 2022, "Tensor Programs V", scale Adam's rate for hidden weights
as 1 / width at a fixed depth; corpusforge's sizes shrink depth with width). Their default is the reference
rate times ``(768 / d) ** 1.5``, at most ``LR_CAP``: the exponent is the power law through two measured
points, BERT-base's 5e-5 at d = 768 and the best of 5e-5, 5e-4 and 2e-3 for a 2-layer ``debug`` encoder
(d = 64) fine-tuned for 3 epochs, 2e-3 (5e-5 put every record in one class, 5e-4 reached 0.63, 2e-3 0.72;
docs/finetune.md): log(40) / log(12) = 1.48. So ``debug`` gets ~42x (full 2.1e-3, capped at 2e-3), ``small``
(d = 512) 1.8x (9.2e-5), ``base`` the reference itself, and a wider imported checkpoint less. Prefix and
prompt vectors are input-like parameters, whose rate muP keeps independent of the width; an ELMo scalar mix
has no width.
"""
from __future__ import annotations

import pathlib

REFERENCE_WIDTH = 768
REFERENCE_LR = {"full": 5e-5, "lora": 5e-4, "adapter": 5e-4, "prefix": 1e-2, "prompt": 3e-2, "elmo": 1e-3}
EXPONENT = 1.5
LR_CAP = {"full": 2e-3, "lora": 1e-2, "adapter": 1e-2}  # the methods scaled by width, and their highest rate


def model_width(base_dir: str | pathlib.Path) -> int | None:
    """The hidden width of a transformers directory (``hidden_size``, GPT-2's ``n_embd``, T5's ``d_model``);
    None when its config names none (an ELMo biLM)."""
    import json

    path = pathlib.Path(base_dir) / "config.json"
    if not path.is_file():
        return None
    config = json.loads(path.read_text(encoding="utf-8"))
    for key in ("hidden_size", "n_embd", "d_model"):
        if isinstance(config.get(key), int) and config[key] > 0:
            return config[key]
    return None


def default_learning_rate(method: str, width: int | None) -> float:
    """The method's reference rate, times ``(768 / width) ** 1.5`` and at most ``LR_CAP`` for the methods that
    train hidden-layer matrices."""
    lr = REFERENCE_LR[method]
    if method in LR_CAP and width:
        lr = min(lr * (REFERENCE_WIDTH / width) ** EXPONENT, LR_CAP[method])
    return lr
