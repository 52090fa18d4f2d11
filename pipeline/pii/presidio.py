"""Presidio, imported without the transformers and torch that it does not need here.

``presidio_analyzer`` imports transformers (for its ``TransformersNlpEngine``) whenever it is installed, and
spaCy's thinc imports torch: together ~3.6 s of the ~5.9 s that importing Presidio takes on the 2-core
bench machine, paid by every worker of a build with PII on. corpusforge's recognizers are patterns and its
optional NER is a spaCy pipeline, so neither library is used. Importing this module imports Presidio with
both hidden (``sys.modules[name] = None`` makes their import fail, which Presidio and thinc take as "not
installed") and unhides them at once, so a later ``import torch`` or ``import transformers`` in the process
works as usual. What is imported already is not hidden, and torch is not hidden where spaCy can run a
pipeline on it (spacy-transformers installed: a ``pii.ner_model`` such as en_core_web_trf needs thinc to
have seen torch).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys

_SPACY_ON_TORCH = ("spacy_transformers", "spacy_curated_transformers")


def import_presidio() -> None:
    """Import presidio_analyzer and presidio_anonymizer (once per process), transformers and torch hidden."""
    if "presidio_analyzer" in sys.modules:
        return
    torch_needed = any(importlib.util.find_spec(name) is not None for name in _SPACY_ON_TORCH)
    not_needed = ("transformers",) if torch_needed else ("transformers", "torch")
    hidden = [name for name in not_needed if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        importlib.import_module("presidio_analyzer")
        importlib.import_module("presidio_anonymizer")
    except ImportError:  # a version that needs one of them outright: import it with everything visible
        _unhide(hidden)
        hidden = []
        importlib.import_module("presidio_analyzer")
        importlib.import_module("presidio_anonymizer")
    finally:
        _unhide(hidden)


def _unhide(names: list[str]) -> None:
    for name in names:
        if name in sys.modules and sys.modules[name] is None:
            del sys.modules[name]


import_presidio()
