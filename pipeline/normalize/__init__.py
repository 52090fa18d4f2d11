"""Text normalisation, the first stage: ``Normalize`` (Beam) and ``normalize_text`` (plain function)."""
from corpusforge.pipeline.normalize.config import NormalizeConfig

__all__ = ["Normalize", "NormalizeConfig", "normalize_text"]


def __getattr__(name: str):
    # The stage imports apache_beam (about a second); load it only when asked for.
    if name in ("Normalize", "normalize_text"):
        from corpusforge.pipeline.normalize import stage

        return getattr(stage, name)
    raise AttributeError(f"module 'corpusforge.pipeline.normalize' has no attribute {name!r}")
