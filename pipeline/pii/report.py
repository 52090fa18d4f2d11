"""The PII stage's section of report.html: entities masked, by type."""
from __future__ import annotations

from collections import Counter

from corpusforge.pipeline.report import plots
from corpusforge.pipeline.report.collect import RunData
from corpusforge.pipeline.report.page import Section, absent, coverage_text, facts, figure, note, num, stage_order


def pii_section(data: RunData) -> Section:
    intro = ("Personal data found and masked by the PII stage (Presidio recognizers), by entity type. Documents stay "
             "in the corpus with the entities replaced; only documents dominated by PII are removed.")
    edits = (data.stats or {}).get("edits", {}).get("pii", {})
    entities = {k[len("entity_"):]: v for k, v in edits.items() if k.startswith("entity_")}
    if not entities:
        text = "The PII stage did not run in this build." if "pii" not in stage_order(data) else "No PII was found."
        return Section("pii", "Personal data (PII)", intro, absent(text))
    removed = (data.stats or {}).get("removed", {}).get("by_stage", {}).get("pii", {})
    body = (facts([("entities masked", num(sum(entities.values()))),
                         ("documents changed", num(edits.get("docs_changed", 0))),
                         ("documents removed", num(removed.get("total", 0)))])
                  + figure(plots.horizontal_counts(entities, "PII entities masked, by type", "entities"),
                           "PII entities by type"))
    per_doc = (data.values.get("pii_count") or {}).get("kept") or []
    if per_doc:
        counts = Counter("5+" if v >= 5 else str(int(v)) for v in per_doc)
        body += note("Kept documents by entities masked in them: "
                     + ", ".join(f"{k}: {counts[k]:,}" for k in ["0", "1", "2", "3", "4", "5+"] if counts[k])
                     + f" (from {coverage_text(data.clean_coverage)} kept documents).")
    return Section("pii", "Personal data (PII)", intro, body)
