"""Quality filtering: language ID, heuristic rules and fastText classifiers, as Beam stages.

    from corpusforge.pipeline.quality import Quality, QualityConfig
    outputs = docs | Quality(QualityConfig())          # StageOutputs(kept, removed, edits)

The pieces are usable alone: ``LanguageFilter``, ``HeuristicFilter``, ``ClassifierFilter`` (Beam), and the
plain rule functions in ``corpusforge.pipeline.quality.rules``.
"""
from corpusforge.pipeline.quality.config import ClassifierConfig, LangIdConfig, QualityConfig, paper_config

__all__ = [
    "ClassifierConfig", "ClassifierFilter", "HeuristicFilter", "LangIdConfig", "LanguageFilter", "Quality",
    "QualityConfig", "paper_config",
]


def __getattr__(name: str):
    # The transforms import apache_beam (about a second); load them only when asked for.
    if name in ("Quality", "LanguageFilter", "HeuristicFilter", "ClassifierFilter"):
        from corpusforge.pipeline.quality import stage

        return getattr(stage, name)
    raise AttributeError(f"module 'corpusforge.pipeline.quality' has no attribute {name!r}")
