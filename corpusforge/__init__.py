"""corpusforge: raw text -> clean shards (Arrow, Parquet, JSONL) -> tokenizer -> token shards -> small pretrained Transformers.

The public Python API (everything the CLI does, without the CLI)::

    import corpusforge

    config = corpusforge.load_config("corpus.yaml", overrides=["dedup.enabled=false"])
    result = corpusforge.run_build(config)                  # RUN/clean, removed/, rejected/, stats.json
    run = corpusforge.open_run(result.run_dir)              # a finished run: stats, manifest, config, outputs
    print(run.stats["accounting"], run.clean.count_rows())  # .clean .removed .rejected: pyarrow datasets
    run.removed.to_table(columns=["id", "stage", "reason"]).to_pandas()
    run.tokens["train"] if run.tokens else None             # after tokenize: {"train", "val"} datasets
    # datasets.load_dataset(result.run_dir) reads the clean corpus too (RUN/README.md is its dataset card).

    # The stages are composite Beam transforms for your own pipelines: (config section, context=None).
    with beam.Pipeline() as p:
        docs, rejected = p | corpusforge.ReadDocuments(config.inputs)
        out = docs | corpusforge.Normalize(config.normalize)
        out = out.kept | corpusforge.Quality(config.quality)
        out = out.kept | corpusforge.Dedup(config.dedup)
        out = out.kept | corpusforge.PII(config.pii)     # each: StageOutputs(kept, removed, edits)

    # One stage's logic on a string, no Beam:
    corpusforge.normalize_text(text, config.normalize)
    corpusforge.HeuristicRules(config.quality).apply(text, "en", None)   # (text, removal reason or None, edits)
    corpusforge.Scrubber(config.pii).scrub(text).text

    # A trained model: to transformers, and used from a run's model/ or an export alike.
    corpusforge.export_model("runs/x/model", "exports/x")
    model = corpusforge.load_model("exports/x")            # transformers model + tokenizer
    corpusforge.generate(model, ["Once"], corpusforge.GenerateOptions(greedy=True))
    corpusforge.evaluate(model, corpusforge.read_documents("held-out.jsonl"))["bits_per_byte"]

    # Corpus variants compared: identical models at one token budget, held-out bits per byte (docs/ablation.md).
    config = corpusforge.load_config("corpus.yaml", base=corpusforge.ABLATION_DEFAULTS)
    variants = [corpusforge.parse_variant("raw:quality.enabled=false,dedup.enabled=false"),
                corpusforge.parse_variant("full")]
    options = corpusforge.AblationOptions(heldout="held-out.jsonl", tokens=2_048_000, out_dir="runs/ablate")
    corpusforge.run_ablation(config, variants, options)["variants"]    # also runs/ablate/ablation.json, .html

Names load on first use, so ``import corpusforge`` stays fast. The packages underneath are
``corpusforge.pipeline`` (the build), ``corpusforge.tokenizer`` and ``corpusforge.trainers``; see
docs/architecture.md.
"""
from corpusforge.pipeline import __version__

_EXPORTS = {
    "Config": "corpusforge.config",
    "load_config": "corpusforge.config",
    "BuildConfig": "corpusforge.pipeline.config",
    "run_build": "corpusforge.pipeline.build",
    "open_run": "corpusforge.pipeline.run",
    "Run": "corpusforge.pipeline.run",
    "Document": "corpusforge.pipeline.document",
    "ReadDocuments": "corpusforge.pipeline.readers",
    "WriteShards": "corpusforge.pipeline.shards",
    "Stage": "corpusforge.pipeline.stage",
    "StageContext": "corpusforge.pipeline.stage",
    "StageOutputs": "corpusforge.pipeline.stage",
    "Normalize": "corpusforge.pipeline.normalize.stage",
    "normalize_text": "corpusforge.pipeline.normalize.stage",
    "Quality": "corpusforge.pipeline.quality.stage",
    "HeuristicRules": "corpusforge.pipeline.quality.rules",
    "Dedup": "corpusforge.pipeline.dedup.stage",
    "PII": "corpusforge.pipeline.pii.stage",
    "Scrubber": "corpusforge.pipeline.pii.scrubber",
    "train_tokenizer": "corpusforge.tokenizer.train",
    "run_tokenize": "corpusforge.tokenizer.tokenize",
    "train_model": "corpusforge.trainers.train",
    "export_model": "corpusforge.trainers.export",
    "load_model": "corpusforge.trainers.export",
    "generate": "corpusforge.trainers.generate",
    "GenerateOptions": "corpusforge.trainers.generate",
    "fill_mask": "corpusforge.trainers.fill_mask",
    "evaluate": "corpusforge.trainers.evaluate",
    "read_documents": "corpusforge.trainers.evaluate",
    "run_ablation": "corpusforge.ablate.run",
    "AblationOptions": "corpusforge.ablate.run",
    "ABLATION_DEFAULTS": "corpusforge.ablate.run",
    "parse_variant": "corpusforge.ablate.variants",
    "load_variants": "corpusforge.ablate.variants",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'corpusforge' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
