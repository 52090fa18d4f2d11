"""The contract every cleaning stage follows, so the build can chain them and count every decision.

A stage is a composite ``beam.PTransform`` from ``PCollection[Document]`` to a ``StageOutputs``:
``kept`` documents go on to the next stage; ``removed`` holds ``Removed`` records (the document, the
stage's name, the reason). Inside, a DoFn yields kept documents on the main output and removals on the
``REMOVED`` tagged output; ``split_outputs`` turns that into a ``StageOutputs``.

Stages also report *edits* (text changed but the document kept, e.g. C4 line removal or PII masking) as
``(stage, counter, amount)`` tuples on the optional ``EDITS`` tagged output; those feed ``stats.json``
but never the accounting identity.
"""
from __future__ import annotations

from typing import NamedTuple

import apache_beam as beam

REMOVED = "removed"
EDITS = "edits"


class StageOutputs(NamedTuple):
    kept: beam.PCollection
    removed: beam.PCollection
    edits: beam.PCollection | None = None


def split_outputs(tagged: beam.pvalue.DoOutputsTuple, with_edits: bool = False) -> StageOutputs:
    """From ``ParDo(...).with_outputs(REMOVED, [EDITS], main='kept')`` to a ``StageOutputs``."""
    return StageOutputs(
        kept=tagged.kept, removed=tagged[REMOVED], edits=tagged[EDITS] if with_edits else None
    )


def removal(doc, stage: str, reason: str, **details) -> beam.pvalue.TaggedOutput:
    """The tagged output a DoFn yields to remove ``doc``."""
    from pipeline.document import Removed

    return beam.pvalue.TaggedOutput(REMOVED, Removed(doc=doc, stage=stage, reason=reason, details=details))


def edit(stage: str, counter: str, amount: int = 1) -> beam.pvalue.TaggedOutput:
    """The tagged output a DoFn yields to count an edit (e.g. ``("quality", "c4_lines_removed", 3)``)."""
    return beam.pvalue.TaggedOutput(EDITS, (stage, counter, int(amount)))
