"""The dedup stage's sections of report.html: clusters by size, and removed duplicates beside their survivors."""
from __future__ import annotations

from markupsafe import Markup

from corpusforge.pipeline.report import plots
from corpusforge.pipeline.report.collect import RunData
from corpusforge.pipeline.report.overlap import MAX_CHARS
from corpusforge.pipeline.report.page import MACROS, Section, absent, facts, figure, note, num, stage_order


def dedup_section(data: RunData) -> Section:
    intro = ("Near-duplicate and exact-duplicate clusters: one survivor is kept per cluster, the others are removed "
             "by the dedup stage. Large clusters are usually boilerplate or mirrored pages.")
    by_stage = (data.stats or {}).get("removed", {}).get("by_stage", {})
    dedup = by_stage.get("dedup")
    if not data.cluster_sizes:
        text = ("Deduplication did not run in this build." if "dedup" not in stage_order(data) else
                "No duplicates were found." if not dedup else
                "The dedup removals do not record cluster sizes or survivors.")
        return Section("dedup", "Duplicates", intro, absent(text))
    clusters = sum(data.cluster_sizes.values())
    biggest = max(data.cluster_sizes)
    body = (facts([("clusters", num(clusters)), ("documents removed as duplicates", num(dedup["total"] if dedup else 0)),
                         ("largest cluster", num(biggest)),
                         ("reasons", ", ".join(f"{r} {n:,}" for r, n in (dedup or {}).get("reasons", {}).items()) or "–")])
                  + figure(plots.cluster_sizes(dict(data.cluster_sizes)), "Clusters by size"))
    if data.dedup_rows_read < data.dedup_rows_total:
        body += note(f"Cluster sizes from the first {data.dedup_rows_read:,} of {data.dedup_rows_total:,} dedup removals.")
    return Section("dedup", "Duplicates", intro, body)


def near_duplicates_section(data: RunData) -> Section:
    intro = ("Duplicates removed by the dedup stage beside the document kept in their place (its survivor_id), "
             "with the text they share highlighted, so a person can judge whether the pair really is a "
             "duplicate. Text is scrubbed like every text on this page.")
    if not data.near_duplicates:
        dedup = (data.stats or {}).get("removed", {}).get("by_stage", {}).get("dedup")
        text = ("Deduplication did not run in this build." if "dedup" not in stage_order(data) else
                "No duplicates were found." if not dedup else
                "No removed duplicate names its survivor (or removed/ was not written).")
        return Section("near-duplicates", "Duplicates beside their survivors", intro, absent(text))

    def meta(sample) -> str:
        return f"{sample.id} · {sample.source} · {sample.chars:,} characters"

    body = Markup().join(
        MACROS.near_duplicate(pair, meta(pair.removed), meta(pair.survivor) if pair.survivor else "",
                              MAX_CHARS if max(pair.removed.chars, pair.survivor.chars if pair.survivor else 0) > MAX_CHARS else 0)
        for pair in data.near_duplicates)
    return Section("near-duplicates", "Duplicates beside their survivors", intro, body)
