"""A real-text corpus of many documents for throughput benchmarks, from what a Debian/Python machine has offline.

- Python's reStructuredText documentation (apt-get install python3.11-doc), cut into documents of 1-6 paragraphs;
- standard-library docstrings (functions, classes, methods), whole;
- ``pydoc_data.topics``, cut like the reStructuredText;
- Debian Reference (de/fr/es/it) paragraphs in groups, and fortune files, when installed (see sources.py).
"""
from __future__ import annotations

import glob
import importlib
import inspect
import pkgutil
import random
import sys

from bench.quality_data import sources

APT_PACKAGES = ["python3.11-doc"] + sources.APT_PACKAGES


def _chunks(paragraphs: list[str], rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(paragraphs):
        k = rng.randint(1, 6)
        doc = "\n\n".join(p for p in paragraphs[i:i + k] if p.strip())
        if len(doc) >= 20:
            out.append(doc)
        i += k
    return out


def rst_documents(rng: random.Random) -> list[str]:
    out = []
    for path in sorted(glob.glob("/usr/share/doc/python3*/html/_sources/**/*.txt", recursive=True)):
        with open(path, encoding="utf-8", errors="replace") as f:
            out += _chunks(f.read().split("\n\n"), rng)
    return out


def docstrings() -> list[str]:
    out, seen = [], set()
    skip = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "test", "lib2to3", "ensurepip"}
    for m in sorted(pkgutil.iter_modules(), key=lambda m: m.name):
        if m.name.startswith("_") or m.name in skip or m.name not in sys.stdlib_module_names:
            continue
        try:
            mod = importlib.import_module(m.name)
        except Exception:  # noqa: BLE001 - optional system libraries
            continue
        members = [mod]
        for _, obj in inspect.getmembers(mod):
            if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj):
                members.append(obj)
                if inspect.isclass(obj):
                    members += [v for _, v in inspect.getmembers(obj) if inspect.isfunction(v) or inspect.ismethoddescriptor(v)]
        for obj in members:
            doc = inspect.getdoc(obj)
            if doc and len(doc) >= 20 and doc not in seen:
                seen.add(doc)
                out.append(doc)
    return out


def real_corpus(min_docs: int = 24_000, seed: int = 0) -> list[str]:
    """At least ``min_docs`` real documents (when the sources suffice), shuffled with a fixed seed."""
    rng = random.Random(seed)
    from pydoc_data.topics import topics

    docs = rst_documents(rng) + docstrings()
    for name in sorted(topics):
        docs += _chunks(topics[name].split("\n\n"), rng)
    for lang in ("de", "fr", "es", "it"):
        docs += _chunks(sources.debian_reference_paragraphs(lang), rng)
    if len(docs) < min_docs:
        quotes = [q for lang in ("de", "es", "it") for q in sources.fortunes(lang)]
        rng.shuffle(quotes)
        docs += quotes[: min_docs - len(docs)]
    rng.shuffle(docs)
    return docs
