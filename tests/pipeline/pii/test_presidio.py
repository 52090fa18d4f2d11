"""Presidio is imported without transformers and torch (seconds of every PII worker's start-up), and they
stay importable afterwards."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

_PROBE = """
import sys
from corpusforge.pipeline.pii.scrubber import Scrubber
from corpusforge.pipeline.pii.config import PIIConfig
print(Scrubber(PIIConfig()).scrub("mail jane@example.org").text)
print("torch" in sys.modules, "transformers" in sys.modules)
import torch, transformers
print(torch.tensor([1]).sum().item(), transformers.__name__)
"""


@pytest.mark.skipif(importlib.util.find_spec("spacy_transformers") is not None,
                    reason="with spacy-transformers installed torch is given to spaCy on purpose")
def test_scrubber_loads_without_transformers_or_torch_and_leaves_them_importable():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["mail <EMAIL>", "False False", "1 transformers"]


def test_an_already_imported_torch_is_not_hidden():
    probe = "import sys, torch\nfrom corpusforge.pipeline.pii import presidio\nimport thinc.compat\nprint(thinc.compat.has_torch)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True"]
