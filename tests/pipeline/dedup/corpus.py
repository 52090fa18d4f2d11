"""Small real-looking texts for the dedup tests: paragraphs of Python's own documentation."""
from __future__ import annotations

import random

from pydoc_data.topics import topics


def paragraphs(count: int, min_chars: int = 300) -> list[str]:
    """``count`` distinct paragraphs of at least ``min_chars`` characters, in a fixed order."""
    seen, out = set(), []
    for key in sorted(topics):
        for para in topics[key].split("\n\n"):
            para = " ".join(para.split())
            if len(para) >= min_chars and para not in seen:
                seen.add(para)
                out.append(para)
                if len(out) == count:
                    return out
    raise AssertionError(f"only {len(out)} paragraphs of {min_chars}+ characters")


def edit_words(text: str, fraction: float, seed: int) -> str:
    """``text`` with ``fraction`` of its words replaced by made-up ones."""
    rng = random.Random(seed)
    tokens = text.split()
    for i in rng.sample(range(len(tokens)), max(1, int(fraction * len(tokens)))):
        tokens[i] = f"zq{rng.randrange(10**6)}"
    return " ".join(tokens)
