"""The contract every cleaning stage follows, so the build can chain them and count every decision.

A stage is a composite ``beam.PTransform`` from ``PCollection[Document]`` to a ``StageOutputs``:
``kept`` documents go on to the next stage; ``removed`` holds ``Removed`` records (the document, the
stage's name, the reason). Inside, a DoFn yields kept documents on the main output and removals on the
``REMOVED`` tagged output; ``split_outputs`` turns that into a ``StageOutputs``.

Stages also report *edits* (text changed but the document kept, e.g. C4 line removal or PII masking) as
``(stage, counter, amount)`` tuples on the optional ``EDITS`` tagged output; those feed ``stats.json``
but never the accounting identity.

Per-record work runs under the dead-letter pattern (``guarded``, built on ``corpusforge.core.faults``): a
document whose processing raises becomes a ``Rejected`` record with reason ``stage_error`` and detail
``"<stage>: <ExceptionType>: <message>"`` on the ``ERRORS`` output (``StageOutputs.errors``), so one bad
record never fails a build; ``StageContext.fail_fast`` turns that off for debugging.

Every stage subclasses ``Stage`` with its config section's name and its place in the build
(``class Quality(Stage, section="quality", order=20)``), takes ``(config, context=None)`` and lives in
``pipeline/<section>/stage.py``; that is all the build needs to find, order and construct it
(``registered_stages``). ``CountingDoFn`` counts decisions in Beam metrics, ``chain_steps`` runs sub-steps
one after another and gathers their removals, edits and errors.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from typing import Callable, ClassVar, NamedTuple

import apache_beam as beam
from apache_beam.metrics import Metrics

from corpusforge.core.disk_grouping import Flatten
from corpusforge.core.faults import ERRORS, STAGE_ERROR, Isolated

REMOVED = "removed"
EDITS = "edits"


class StageOutputs(NamedTuple):
    kept: beam.PCollection
    removed: beam.PCollection
    edits: beam.PCollection | None = None
    errors: beam.PCollection | None = None  # Rejected records (reason stage_error) of documents that raised


def split_outputs(tagged: beam.pvalue.DoOutputsTuple, with_edits: bool = False, with_errors: bool = False) -> StageOutputs:
    """From ``ParDo(...).with_outputs(REMOVED, [EDITS], [ERRORS], main='kept')`` to a ``StageOutputs``."""
    return StageOutputs(
        kept=tagged.kept, removed=tagged[REMOVED], edits=tagged[EDITS] if with_edits else None,
        errors=tagged[ERRORS] if with_errors else None,
    )


def stage_error(doc, detail: str):
    """The ``Rejected`` record of a document a stage raised on: ``path`` holds its id (it was read already),
    ``raw`` a preview of its text, as a reader's rejection holds the bad bytes."""
    from corpusforge.pipeline.document import RAW_CARRIED, Rejected

    try:
        preview = doc.text[:RAW_CARRIED]  # cut to RAW_PREVIEW when written, after the PII scrubber saw it
    except Exception:  # noqa: BLE001 - a spilled text that cannot be read back is why it failed
        preview = ""
    return Rejected(source=doc.source, path=doc.id, position=-1, reason=STAGE_ERROR, detail=detail, raw=preview)


def _one(doc):
    return [doc]


def _each(batch):
    return list(batch)


def _singletons(batch):
    return [[doc] for doc in batch]


def _text(doc):
    return doc.text


def guarded(fn: beam.DoFn, stage: str, fail_fast: bool = False, batched: bool = False, records=None) -> beam.DoFn:
    """``fn`` under the dead-letter pattern: a document whose processing raises goes to the ``ERRORS`` output
    as ``stage_error(doc, detail)`` (declare ``ERRORS`` in ``with_outputs``). ``batched``: elements are
    lists of documents, retried one by one when the batch raises; ``records``: the documents an element
    holds when it is neither (a join's group). With ``fail_fast``, ``fn`` itself: the first error fails the
    run."""
    if fail_fast:
        return fn
    return Isolated(fn, stage, stage_error, records=records or (_each if batched else _one),
                    split=_singletons if batched else None, text_of=_text)


def fixed_batches(size: int) -> beam.BatchElements:
    """Batches of ``size`` documents (fewer at a bundle's end). A fixed size: Beam's adaptive sizing fits a
    regression over the timings of its batches (numpy's ``polyfit``, at every batch) and starts each bundle at one
    document: ~6.7 us an element more than a fixed size, its mean batch 48 of 64 (``bench/batch_sizing.py``); and
    what is decided of a document never depends on its batch."""
    return beam.BatchElements(min_batch_size=size, max_batch_size=size)


def removal(doc, stage: str, reason: str, **details) -> beam.pvalue.TaggedOutput:
    """The tagged output a DoFn yields to remove ``doc``."""
    from corpusforge.pipeline.document import Removed

    return beam.pvalue.TaggedOutput(REMOVED, Removed(doc=doc, stage=stage, reason=reason, details=details))


def edit(stage: str, counter: str, amount: int = 1) -> beam.pvalue.TaggedOutput:
    """The tagged output a DoFn yields to count an edit (e.g. ``("quality", "c4_lines_removed", 3)``)."""
    return beam.pvalue.TaggedOutput(EDITS, (stage, counter, int(amount)))


@dataclasses.dataclass(frozen=True)
class StageContext:
    """What a stage may need besides its config section: where the run writes side files (the PII audit
    file), where bulky intermediate records may wait on local disk (near-dedup's signatures), a random
    secret drawn once per build (the PII stage's salt when none is configured; never written), and whether
    the build runs on Beam's DirectRunner (near-dedup's ``components: auto``)."""

    run_dir: str | None = None
    spill_dir: str | None = None
    fail_fast: bool = False  # let the first record that raises fail the run (build.fail_fast)
    run_secret: str | None = dataclasses.field(default=None, repr=False)
    # The driver holds every shuffle in memory (beam_options.runs_on_direct_runner): gathering something
    # smaller than the documents on one worker does not raise the peak's order. False: assume nothing.
    direct_runner: bool = False
    # No two documents the stage is given share an id: a build's reader makes them unique (README "Document ids"),
    # so dedup's joins need not look for ids documents share. False: assume nothing.
    unique_ids: bool = False


_REGISTRY: dict[str, type["Stage"]] = {}


class Stage(beam.PTransform):
    """Base of every cleaning stage: ``docs | Stage(config, context) -> StageOutputs(kept, removed, edits)``."""

    section: ClassVar[str]
    order: ClassVar[int]

    def __init_subclass__(cls, section: str | None = None, order: int | None = None, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if section is not None:
            if order is None:
                raise TypeError(f"stage {cls.__name__} declares section={section!r} without an order")
            cls.section, cls.order = section, order
            _REGISTRY[section] = cls

    def __init__(self, config, context: StageContext | None = None, label: str | None = None):
        super().__init__(label)
        self.config = config
        self.context = context or StageContext()

    @classmethod
    def files(cls, config) -> list[tuple[str, str]]:
        """``(config key, path)`` of every file the stage reads besides the documents under ``config`` (models,
        word lists, eval sets): a resumed build compares them by content (``build._fingerprint``)."""
        return []

    @classmethod
    def annotation_fields(cls, config) -> list:
        """The typed Arrow fields (``pyarrow.Field``) this stage adds to a document's ``annotations`` under
        ``config``: the same list for every shard of a build (``document.struct_type``); a value not declared
        is stored in the struct's JSON ``other``."""
        return []

    @classmethod
    def detail_fields(cls, config) -> list:
        """The typed Arrow fields of the ``details`` of this stage's removals under ``config``."""
        return []

    @classmethod
    def model_files(cls, config) -> list[dict]:
        """The model files the stage loads under ``config`` (each a record of its config key, name, path, size and
        SHA-256), listed in the build's manifest so which model made a corpus is on record."""
        return []

    @classmethod
    def before_writing(cls, config, kind: str, run_secret: str) -> beam.PTransform | None:
        """What every ``removed`` or ``rejected`` record (``kind``) of the build, whichever stage made it, goes
        through before it is written when this stage is enabled (the PII stage scrubs them, hashing as it does in
        clean/: ``run_secret`` is the build's, ``StageContext.run_secret``); None: nothing. A stage that defines
        it has its config in every segment's fingerprint."""
        return None

    @classmethod
    def decides_value(cls, key: str) -> bool:
        """Whether this stage decides on the stored value ``key`` (an annotation of kept documents): the report
        counts a removal's value as removed by this stage. By default the keys under the stage's section."""
        return key.split(".", 1)[0] == cls.section

    decides_other_values: ClassVar[bool] = False  # the stage that decides on values no stage claims (quality)
    details_are_values: ClassVar[bool] = True  # its removals' numeric details are values it measured

    @classmethod
    def display_filter(cls, manifest_section: dict | None):
        """What a record text of a run needs before the report shows it, from the run manifest's config section of
        this stage (None when the stage did not run): a function from text to text, or None for nothing. It
        applies whether or not the stage ran (report.html never shows PII in clear)."""
        return None

    @classmethod
    def name_filter(cls, config, run_secret: str):
        """What an input file name needs before a build writes it (a document's ``source``, a rejected record's
        ``path``, stats.json, the dataset card): a function from name to name, or None for nothing."""
        return None

    @classmethod
    def scrubbed_previews(cls, manifest_section: dict | None) -> bool:
        """Whether this stage, configured as the manifest says (None: it did not run), scrubbed rejected records'
        previews whole before they were cut and written."""
        return False

    @classmethod
    def report_sections(cls) -> list:
        """The stage's sections of report.html, in order: functions from the report's ``RunData`` to a ``Section``
        (``pipeline/report/page.py``), placed after the rule values, stage by stage in build order."""
        return []

    @classmethod
    def summary_note(cls, config) -> str | None:
        """A line the build prints under its summary when this stage is enabled (what PII is not covered)."""
        return None


def names_as_written(config, run_secret: str) -> "Callable[[str], str] | None":
    """File and source names as corpusforge writes them: each enabled stage's ``Stage.name_filter`` in turn (the
    PII stage hashes names holding PII as ids are), or None when no stage changes them. ``config``: anything with
    the stages' sections as attributes (a ``BuildConfig``, the whole ``Config``)."""
    filters = [f for stage in registered_stages() if (section := getattr(config, stage.section, None)) is not None
               and section.enabled and (f := stage.name_filter(section, run_secret)) is not None]
    if len(filters) < 2:
        return filters[0] if filters else None
    return functools.reduce(lambda f, g: lambda name: g(f(name)), filters)


def registered_stages() -> list[type[Stage]]:
    """Every stage of this package in build order: each ``pipeline/<name>/stage.py`` registers itself on import."""
    import corpusforge.pipeline as package

    for module in pkgutil.iter_modules(package.__path__):
        if module.ispkg and importlib.util.find_spec(f"{package.__name__}.{module.name}.stage") is not None:
            importlib.import_module(f"{package.__name__}.{module.name}.stage")
    return sorted(_REGISTRY.values(), key=lambda stage: stage.order)


class CountingDoFn(beam.DoFn):
    """A stage's DoFn that counts every decision in Beam metrics (namespace = stage name).

    Under the dead-letter wrapper (``guarded``) counts are held while an element is processed and kept only
    if it succeeds (``hold_counts`` / ``release_counts``): a batch that raises and is retried record by record
    would otherwise count its first records twice. What the bundle's records kept reaches Beam's metrics once
    per bundle and name (``commit_counts``, at ``finish_bundle``), not once per record: an update of a Beam
    counter costs ~1 us, as much as some whole rules."""

    _held: dict[str, int] | None = None  # counts of the attempt in progress, when held
    _kept: dict[str, int] | None = None  # counts of the bundle's successful attempts, until committed

    def __init__(self, stage: str):
        self.stage = stage
        self._counters: dict[str, object] = {}

    def count(self, name: str, amount: int = 1) -> None:
        held = self._held
        if held is not None:
            held[name] = held.get(name, 0) + amount
            return
        counter = self._counters.get(name)
        if counter is None:
            counter = self._counters[name] = Metrics.counter(self.stage, name)
        counter.inc(amount)

    def hold_counts(self) -> None:
        self._held = {}

    def release_counts(self, keep: bool) -> None:
        """Keep the held counts for the bundle's commit (``keep``) or discard them (the attempt raised)."""
        held, self._held = self._held, None
        if keep and held:
            kept = self._kept
            if kept is None:
                self._kept = held
                return
            for name, amount in held.items():
                kept[name] = kept.get(name, 0) + amount

    def commit_counts(self) -> None:
        """Add the kept counts to Beam's metrics (the wrapper calls this when a bundle ends)."""
        kept, self._kept = self._kept, None
        if kept:
            for name, amount in kept.items():
                self.count(name, amount)

    def drop(self, doc, reason: str, **details) -> beam.pvalue.TaggedOutput:
        self.count(f"removed_{reason}")
        return removal(doc, self.stage, reason, **details)


def chain_steps(docs: beam.PCollection, steps: list[tuple[str, beam.PTransform]]) -> StageOutputs:
    """Apply ``(label, step)`` pairs in order, each on the previous one's kept documents; gather every step's
    removals (an empty collection when there are none), edits and errors (``None`` when no step reports
    any)."""
    pipeline = docs.pipeline
    removed, edits, errors = [], [], []
    for label, step in steps:
        outputs = docs | label >> step
        docs = outputs.kept
        removed.append(outputs.removed)
        if outputs.edits is not None:
            edits.append(outputs.edits)
        if outputs.errors is not None:
            errors.append(outputs.errors)
    if not removed:
        removed = [pipeline | "NoRemovals" >> beam.Create([])]
    return StageOutputs(
        kept=docs,
        removed=removed[0] if len(removed) == 1 else removed | "FlattenRemoved" >> Flatten(),
        edits=None if not edits else edits[0] if len(edits) == 1 else edits | "FlattenEdits" >> Flatten(),
        errors=None if not errors else errors[0] if len(errors) == 1 else errors | "FlattenErrors" >> Flatten(),
    )
