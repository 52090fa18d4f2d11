"""Quality filtering: language ID, heuristic rules and fastText classifiers, as Beam stages.

    from pipeline.quality import Quality, QualityConfig
    outputs = docs | Quality(QualityConfig())          # StageOutputs(kept, removed, edits)

The pieces are usable alone: ``LanguageFilter``, ``HeuristicFilter``, ``ClassifierFilter`` (Beam), and the
plain rule functions in ``pipeline.quality.rules``.
"""
from pipeline.quality.config import ClassifierConfig, LangIdConfig, QualityConfig, paper_config

__all__ = [
    "ClassifierConfig", "ClassifierFilter", "HeuristicFilter", "LangIdConfig", "LanguageFilter", "Quality",
    "QualityConfig", "paper_config",
]


def __getattr__(name: str):
    # The transforms import apache_beam (about a second); load them only when asked for.
    if name in ("Quality", "LanguageFilter", "HeuristicFilter", "ClassifierFilter"):
        from pipeline.quality import transforms

        return getattr(transforms, name)
    raise AttributeError(f"module 'pipeline.quality' has no attribute {name!r}")
