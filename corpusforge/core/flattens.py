"""Flattens that Beam's in-process runner need not give a stage: a Flatten of Flattens as one Flatten, in a
pipeline's runner-API graph; and a Flatten that only feeds a GroupByKey written straight into the grouping
(``into_groupings``, below).

Beam's in-process runner (the FnApiRunner) gives every Flatten of several inputs a fused stage of its own: the
inputs are written to a buffer that a new stage reads. A Flatten whose output only feeds another Flatten is
then a whole stage that moves elements from one buffer to the next. A build makes such chains wherever one
composite gathers its steps' removals (or errors) and the next level gathers those again: a stage's steps, the
stage, the build's ``FlattenRemoved`` and ``FlattenRejected``: 9 of the 57 fused stages of a one-document
all-stage build, each set up and run once (~10-20 ms of start-up) whatever the corpus size.

``merge_nested_flattens`` rewrites the graph before the runner sees it: the outer Flatten takes the inner
one's inputs, and the inner one is dropped. A Flatten's output is the multiset union of its inputs, so the
elements that reach every later step are the same; the runner still transcodes each input to the outer
Flatten's coder where they differ. An inner Flatten is merged only when the outer Flatten is the one and only
consumer of its output (as a main input; nothing reads it as a side input).
"""
from __future__ import annotations

import collections
import contextlib

FLATTEN_URN = "beam:transform:flatten:v1"


def merge_nested_flattens(proto):
    """``proto`` (a ``beam_runner_api_pb2.Pipeline``) with every Flatten whose output feeds only another
    Flatten folded into that one, in place; returns ``proto`` and the number of Flattens merged away."""
    components = proto.components
    transforms = components.transforms
    merged = 0
    while True:
        consumers: dict[str, list[str]] = collections.defaultdict(list)
        producer: dict[str, str] = {}
        parent: dict[str, str] = {}
        for tid, t in transforms.items():
            for child in t.subtransforms:
                parent[child] = tid
            if t.subtransforms:
                continue  # a composite: its leaves read and write the same collections
            for pcoll in t.inputs.values():
                consumers[pcoll].append(tid)
            for pcoll in t.outputs.values():
                producer[pcoll] = tid
        pair = _nested_pair(transforms, consumers, producer)
        if pair is None:
            return proto, merged
        inner_id, outer_id = pair
        inner, outer = transforms[inner_id], transforms[outer_id]
        (pcoll,) = inner.outputs.values()
        inputs = list(outer.inputs.items())
        outer.inputs.clear()
        for local, source in inputs:
            if source != pcoll:
                outer.inputs[local] = source
            else:
                for inner_local, inner_source in inner.inputs.items():
                    outer.inputs[f"{local}.{inner_local}"] = inner_source
        # Drop the inner Flatten, and every composite it leaves empty on the way up (a composite that only
        # flattened, e.g. disk_grouping's Flatten of one input): an empty composite reads as a leaf the runner
        # cannot run.
        removed = inner_id
        while True:
            if removed in parent:
                holder = transforms[parent[removed]]
                siblings = [t for t in holder.subtransforms if t != removed]
                del holder.subtransforms[:]
                holder.subtransforms.extend(siblings)
            else:
                roots = [t for t in proto.root_transform_ids if t != removed]
                del proto.root_transform_ids[:]
                proto.root_transform_ids.extend(roots)
            del transforms[removed]
            if removed not in parent or transforms[parent[removed]].subtransforms:
                break
            removed = parent[removed]
        merged += 1


def _nested_pair(transforms, consumers, producer) -> tuple[str, str] | None:
    """``(inner, outer)``: a Flatten whose output's only consumer is another Flatten, or None."""
    for tid, t in transforms.items():
        if t.spec.urn != FLATTEN_URN or t.subtransforms or len(t.inputs) == 0 or len(t.outputs) != 1:
            continue
        (pcoll,) = t.outputs.values()
        readers = consumers.get(pcoll, [])
        if len(readers) != 1 or readers[0] == tid:
            continue
        outer = transforms[readers[0]]
        if (outer.spec.urn == FLATTEN_URN and not outer.subtransforms and len(outer.outputs) == 1
                and list(outer.inputs.values()).count(pcoll) == 1 and producer.get(pcoll) == tid):
            return tid, readers[0]
    return None


# --- A Flatten that only feeds a GroupByKey: its inputs written straight into the grouping --------------------
#
# Beam's in-process runner (the FnApiRunner, Beam 2.6x-2.77: ``translations.sink_flattens``) materialises every
# Flatten of several inputs: each input's stage writes to one buffer, and a stage of its own reads it back. When
# the Flatten's only consumer is a GroupByKey (every in-memory CoGroupByKey; the reader's spreading shuffle of
# documents and new ids; the shard writers' sets), that stage reads each record and writes it on to the
# grouping's buffer unchanged: every record crosses the driver and a worker once more (at 60k documents the
# reader's Flatten alone carried 13 MB of documents: 0.9 s of a two-worker build, 0.2 CPU s of it in the driver).
# ``flattens_into_groupings`` makes each input's stage write to the grouping's buffer itself, as Beam's runner
# does for a GroupByKey's only input: the same records reach the same grouping (a grouping's values come in no
# promised order), one stage and one crossing fewer.


def flattens_into_groupings(stages, context):
    """A phase of the FnApiRunner's ``create_stages``, right after ``sink_flattens`` (the stages are single
    transforms then): for each Flatten read whose output only a GroupByKey's write consumes, the Flatten's writes
    write to the grouping's buffer, and the read and the grouping's write are dropped. Only where the inputs
    are coded and windowed as the grouping's input (Beam's ``fix_flatten_coders`` has transcoded the coders)."""
    from apache_beam.runners.worker import bundle_processor

    stages = list(stages)
    pcolls = context.components.pcollections
    consumers: dict[str, list] = collections.defaultdict(list)
    writes: dict[bytes, list] = collections.defaultdict(list)  # buffer -> the stages that write it
    for stage in stages:
        for transform in stage.transforms:
            for pcoll in transform.inputs.values():
                consumers[pcoll].append(stage)
            if transform.spec.urn == bundle_processor.DATA_OUTPUT_URN:
                writes[transform.spec.payload].append(stage)
    replaced: dict = {}  # a dropped stage -> the stages that now come in its place
    for read in stages:
        if len(read.transforms) != 1 or read.transforms[0].spec.urn != bundle_processor.DATA_INPUT_URN:
            continue
        buffer = read.transforms[0].spec.payload
        flatten_writes = writes.get(buffer, [])
        if not buffer.startswith(b"materialize:") or not flatten_writes or len(read.transforms[0].outputs) != 1:
            continue
        (pcoll,) = read.transforms[0].outputs.values()
        readers = consumers.get(pcoll, [])
        if len(readers) != 1 or len(readers[0].transforms) != 1:
            continue
        group_write = readers[0]
        target = group_write.transforms[0]
        if target.spec.urn != bundle_processor.DATA_OUTPUT_URN or not target.spec.payload.startswith(b"group:"):
            continue
        inputs = [only for w in flatten_writes for only in w.transforms[0].inputs.values()]
        if any(len(w.transforms) != 1 for w in flatten_writes) or any(
                (pcolls[i].coder_id, pcolls[i].windowing_strategy_id)
                != (pcolls[pcoll].coder_id, pcolls[pcoll].windowing_strategy_id) for i in inputs):
            continue
        for w in flatten_writes:
            w.transforms[0].spec.payload = target.spec.payload
        # The grouping's buffer is made from its GroupByKey's input (execution.get_buffer), which no data write
        # names any more: its data-channel coder (the same as each input's: same coder, same windowing) by hand.
        context.add_data_channel_coder(pcoll, False)
        replaced[read] = frozenset(flatten_writes) | read.must_follow
        replaced[group_write] = frozenset(flatten_writes) | read.must_follow | group_write.must_follow
    if not replaced:
        return stages
    kept = [stage for stage in stages if stage not in replaced]
    for stage in kept:
        must_follow = stage.must_follow
        while must_follow & replaced.keys():
            must_follow = frozenset().union(*(replaced.get(before, frozenset([before])) for before in must_follow))
        stage.must_follow = must_follow
    return kept


@contextlib.contextmanager
def into_groupings():
    """While it is open, the FnApiRunner's ``create_stages`` runs ``flattens_into_groupings`` after Beam's
    ``sink_flattens`` (the phase list is built inside that method, so the phase function it names is wrapped
    for the while: Beam 2.6x-2.77 call it as ``translations.sink_flattens``)."""
    from apache_beam.runners.portability.fn_api_runner import translations

    beams = getattr(translations, "sink_flattens", None)
    if beams is None:  # a Beam whose runner plans otherwise: its own plan, unchanged
        yield
        return

    def sink_flattens(stages, context):
        return flattens_into_groupings(beams(stages, context), context)

    translations.sink_flattens = sink_flattens
    try:
        yield
    finally:
        translations.sink_flattens = beams
