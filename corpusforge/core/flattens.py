"""A Flatten of Flattens as one Flatten, in a pipeline's runner-API graph.

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
