"""Each source's way through a run: input, rejected, removed per stage, kept, kept characters, tokens.

Built from what the run holds: ``stats.json`` (documents per source after every stage) and counts taken from
every row of clean/, removed/, rejected/ and the token shards. Where removed/ was not written, a stage's
removals are the drop in the source's documents across it (stage errors included); where rejected/ was not
written and something was rejected, a source's rejections are unknown (``None``).
"""
from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class SourceCounts:
    """One source; ``None`` where the run did not write what would tell."""

    input: int | None = None
    rejected: int | None = None
    removed: dict[str, int] = dataclasses.field(default_factory=dict)  # stage -> documents
    kept: int = 0
    kept_chars: int | None = None
    tokens: dict[str, int] = dataclasses.field(default_factory=dict)  # split -> tokens written

    @property
    def balanced(self) -> bool | None:
        if self.input is None or self.rejected is None:
            return None
        return self.input == self.kept + sum(self.removed.values()) + self.rejected


def source_funnel(stats: dict[str, Any] | None, clean: dict[str, tuple[int, int]],
                  removed: dict[tuple[str, str], int] | None, rejected: dict[tuple[str, bool], int] | None,
                  tokens: dict[tuple[str, str], int]) -> tuple[dict[str, SourceCounts], bool]:
    """``({source: SourceCounts}, exact)``; ``exact`` is False when removals are differences of stats.json.

    ``clean``: source -> (documents, characters); ``removed``: (source, stage) -> documents; ``rejected``:
    (source, rejected at read?) -> records; ``tokens``: (source, split) -> tokens."""
    stats = stats or {}
    by_stage = {row["stage"]: {name: entry["documents"] for name, entry in row["by"].items()}
                for row in stats.get("sources") or []}
    stages = [row["stage"] for row in stats.get("funnel") or []][1:] or sorted({stage for _, stage in removed or {}})
    nothing_rejected = bool(stats) and not (stats.get("rejected") or {}).get("total")
    nothing_removed = bool(stats) and not (stats.get("removed") or {}).get("total")
    names = (set(by_stage.get("read", {})) | set(clean) | {s for s, _ in removed or {}} | {s for s, _ in rejected or {}}
             | {s for s, _ in tokens})
    exact = removed is not None or nothing_removed or not by_stage
    out = {}
    for name in sorted(names):
        counts = SourceCounts(tokens={split: n for (source, split), n in sorted(tokens.items()) if source == name})
        if rejected is not None:
            at_read, counts.rejected = rejected.get((name, True), 0), rejected.get((name, True), 0) + rejected.get((name, False), 0)
        elif nothing_rejected:
            at_read, counts.rejected = 0, 0
        else:
            at_read = None
        if name in clean:
            counts.kept, counts.kept_chars = clean[name]
        elif stages and by_stage:
            counts.kept = by_stage.get(stages[-1], {}).get(name, 0)
        if removed is not None or nothing_removed:
            counts.removed = {stage: (removed or {}).get((name, stage), 0) for stage in stages}
        else:  # the drop across each stage (what it removed, and the documents it raised on)
            docs = [by_stage.get(stage, {}).get(name, 0) for stage in ["read", *stages]]
            counts.removed = {stage: before - after for stage, before, after in zip(stages, docs, docs[1:])}
        read = by_stage.get("read", {}).get(name) if by_stage else None
        if read is not None and at_read is not None:
            counts.input = read + at_read
        elif not by_stage and counts.rejected is not None:
            counts.input = counts.kept + sum(counts.removed.values()) + counts.rejected
        out[name] = counts
    return out, exact
