"""Benchmark the PII stage against plain Presidio on a labelled set (see bench/pii_data/generate.py).

    .venv/bin/python bench/pii.py --docs 2000 --rounds 3

Four systems run over the same documents in one process (rounds interleaved):
- ``presidio-default``: plain Presidio as shipped, without an NLP model (no_op engine, every predefined
  recognizer), ``BatchAnalyzerEngine`` + ``AnonymizerEngine``;
- ``presidio-same-entities``: the same, asked only for corpusforge's seven entity types (so only Presidio's
  recognizers for them run: Email, Phone, CreditCard, Ip, Iban, UsSsn, Crypto);
- ``presidio-same-recognizers``: ``BatchAnalyzerEngine`` + ``AnonymizerEngine`` over corpusforge's
  recognizers registered as they are (full-text scans, no screens): the same recall, Presidio's way;
- ``corpusforge``: ``corpusforge.pipeline.pii.Scrubber.scrub_batch`` with the default ``PIIConfig``.

Quality: each system masks every entity with a private-use sentinel character (same length), so input
and output compare position by position. A PII span counts as removed when
none of its characters survive; a look-alike token is intact when all of them do. Speed: documents per
CPU-second of the scrub loop (one process, so per core; CPU time rather than wall time because the
machine may be shared), with the systems' normal placeholders, best of ``--rounds``.
"""
from __future__ import annotations

import argparse
import difflib
import logging
import json
import pathlib
import sys
import time
from collections import Counter, defaultdict

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from pii_data.generate import LOOKALIKE_KINDS, PII_TYPES, build  # noqa: E402

SENTINEL = "\ue000"
STRUCTURED = ["EMAIL", "PHONE", "CARD", "IPV4", "IPV6", "IBAN", "SSN"]


def survived_mask(original: str, output: str) -> list[bool]:
    """For each character of ``original``: does it survive unchanged in ``output``?

    Systems mask with a sentinel (same length), so the comparison is positional; a length change (which a
    mask cannot make) falls back to a character alignment.
    """
    if len(original) == len(output):
        return [a == b for a, b in zip(original, output)]
    mask = [False] * len(original)
    for a, _, size in difflib.SequenceMatcher(None, original, output, autojunk=False).get_matching_blocks():
        mask[a:a + size] = [True] * size
    return mask


def evaluate(docs: list[dict], outputs: list[str]) -> dict:
    found, total = Counter(), Counter()
    intact, seen = Counter(), Counter()
    changed_chars = clean_chars = 0
    docs_with_false_change = 0
    for doc, output in zip(docs, outputs):
        mask = survived_mask(doc["text"], output)
        pii = [False] * len(mask)
        for group, kind, start, end in doc["labels"]:
            if group == "pii":
                total[kind] += 1
                found[kind] += not any(mask[start:end])
                pii[start:end] = [True] * (end - start)
            else:
                seen[kind] += 1
                intact[kind] += all(mask[start:end])
        false_change = sum(1 for ok, is_pii in zip(mask, pii) if not ok and not is_pii)
        changed_chars += false_change
        clean_chars += sum(1 for is_pii in pii if not is_pii)
        docs_with_false_change += bool(false_change)
    return {
        "recall": {k: found[k] / total[k] for k in PII_TYPES if total[k]},
        "pii_spans": dict(total),
        "non_pii_chars_changed": changed_chars / max(1, clean_chars),
        "docs_with_non_pii_change": docs_with_false_change / max(1, len(docs)),
        "lookalikes_intact": sum(intact.values()) / max(1, sum(seen.values())),
        "lookalikes_intact_by_kind": {k: intact[k] / seen[k] for k in LOOKALIKE_KINDS if seen[k]},
        "lookalikes": dict(seen),
    }


# ------------------------------------------------------------------------------------------- systems
def no_op_engine():
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    return NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "no_op", "models": [{"lang_code": "en", "model_name": "none"}]}).create_engine()


class PresidioBatch:
    """Plain Presidio: BatchAnalyzerEngine over every document, then AnonymizerEngine per document."""

    def __init__(self, registry=None, operators=None, entities=None):
        from presidio_analyzer import AnalyzerEngine, BatchAnalyzerEngine
        from presidio_anonymizer import AnonymizerEngine

        self.analyzer = AnalyzerEngine(registry=registry, nlp_engine=no_op_engine(), supported_languages=["en"])
        self.batch = BatchAnalyzerEngine(analyzer_engine=self.analyzer)
        self.anonymizer = AnonymizerEngine()
        self.operators = operators
        self.entities = entities

    def run(self, texts: list[str], sentinel: bool = False) -> tuple[list[str], list[list]]:
        from presidio_anonymizer.entities import OperatorConfig

        operators = ({"DEFAULT": OperatorConfig("mask", {"masking_char": SENTINEL, "chars_to_mask": 1 << 30,
                                                         "from_end": False})}
                     if sentinel else self.operators)
        results = self.batch.analyze_iterator(texts, language="en", entities=self.entities)
        outputs = [self.anonymizer.anonymize(text=t, analyzer_results=r, operators=operators).text if r else t
                   for t, r in zip(texts, results)]
        return outputs, results


class Corpusforge:
    def __init__(self):
        from corpusforge.pipeline.pii.config import PIIConfig
        from corpusforge.pipeline.pii.scrubber import Scrubber

        self.config = PIIConfig()
        self.scrubber = Scrubber(self.config)
        self.sentinel = Scrubber(PIIConfig(default_action="mask", mask_char=SENTINEL))

    def run(self, texts: list[str], sentinel: bool = False) -> tuple[list[str], list]:
        scrubber = self.sentinel if sentinel else self.scrubber
        results = []
        size = self.config.batch_size
        for i in range(0, len(texts), size):
            results.extend(scrubber.scrub_batch(texts[i:i + size]))
        return [r.text for r in results], results


def plain_registry(config):
    """corpusforge's recognizers, registered as they are (full-text scans, no screens)."""
    from presidio_analyzer import RecognizerRegistry

    from corpusforge.pipeline.pii.recognizers import build_recognizers

    registry = RecognizerRegistry(supported_languages=["en"])
    for recognizer in build_recognizers(config):
        registry.add_recognizer(recognizer)
    return registry


def false_positive_types(docs, spans_per_doc) -> dict[str, int]:
    """Entity types reported on spans that overlap no injected PII (the base prose holds none)."""
    counts = Counter()
    for doc, spans in zip(docs, spans_per_doc):
        pii = [(s, e) for g, _, s, e in doc["labels"] if g == "pii"]
        for entity, start, end in spans:
            if not any(start < e and end > s for s, e in pii):
                counts[entity] += 1
    return dict(counts.most_common())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--docs", type=int, default=2000, help="Documents in the labelled set.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the labelled set.")
    parser.add_argument("--paragraphs", type=int, default=1,
                        help="Paragraphs per document (1: ~0.7 KB paragraphs; 4: ~2.8 KB pages).")
    parser.add_argument("--rounds", type=int, default=3, help="Timed rounds per system (best is reported).")
    parser.add_argument("--out", default="", help="Also write the figures as JSON to this path.")
    args = parser.parse_args(argv)
    # plain Presidio's email validation tries to download the public suffix list; offline it logs a traceback
    logging.getLogger("tldextract").setLevel(logging.CRITICAL)

    t0 = time.perf_counter()
    docs = build(args.docs, seed=args.seed, paragraphs_per_doc=args.paragraphs)
    texts = [d["text"] for d in docs]
    chars = sum(map(len, texts))
    print(f"labelled set: {len(docs)} docs, {chars / len(docs):.0f} chars/doc on average, "
          f"{sum(g == 'pii' for d in docs for g, *_ in d['labels'])} PII spans, "
          f"{sum(g == 'lookalike' for d in docs for g, *_ in d['labels'])} look-alikes "
          f"({time.perf_counter() - t0:.1f}s)")

    from presidio_anonymizer.entities import OperatorConfig

    from corpusforge.pipeline.pii.entities import PLACEHOLDERS

    ours = Corpusforge()
    systems = {
        "presidio-default": PresidioBatch(),
        "presidio-same-entities": PresidioBatch(entities=list(ours.config.active_entities)),
        "presidio-same-recognizers": PresidioBatch(
            registry=plain_registry(ours.config),
            operators={e: OperatorConfig("replace", {"new_value": p}) for e, p in PLACEHOLDERS.items()},
            entities=list(ours.config.active_entities)),
        "corpusforge": ours,
    }

    report = {"docs": len(docs), "chars_per_doc": chars / len(docs), "paragraphs_per_doc": args.paragraphs,
              "seed": args.seed, "systems": {}}
    for name, system in systems.items():
        outputs, raw = system.run(texts, sentinel=True)
        quality = evaluate(docs, outputs)
        if name == "corpusforge":
            spans = [[(s.entity, s.start, s.end) for s in r.spans] for r in raw]
            quality["removed_by_default_rules"] = sum(r.removal is not None for r in raw)
        else:
            spans = [[(r.entity_type, r.start, r.end) for r in rs] for rs in raw]
        quality["false_positive_types"] = false_positive_types(docs, spans)
        report["systems"][name] = quality

    timings, walls = defaultdict(list), defaultdict(list)
    for _ in range(args.rounds):
        for name, system in systems.items():
            start, wall = time.process_time(), time.perf_counter()
            system.run(texts)
            timings[name].append(time.process_time() - start)
            walls[name].append(time.perf_counter() - wall)
    for name in systems:
        best = min(timings[name])
        report["systems"][name]["docs_per_s"] = len(docs) / best
        report["systems"][name]["docs_per_wall_s"] = len(docs) / min(walls[name])
        report["systems"][name]["mb_per_s"] = chars / best / 1e6
    base = report["systems"]
    for name in systems:
        base[name]["speedup_vs_presidio_default"] = base[name]["docs_per_s"] / base["presidio-default"]["docs_per_s"]
        base[name]["speedup_vs_same_entities"] = base[name]["docs_per_s"] / base["presidio-same-entities"]["docs_per_s"]
        base[name]["speedup_vs_same_recognizers"] = (base[name]["docs_per_s"]
                                                     / base["presidio-same-recognizers"]["docs_per_s"])

    print_report(report)
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(report, indent=2, sort_keys=True))
    return 0


def print_report(report: dict) -> None:
    names = list(report["systems"])
    rows = [("recall " + k, [report["systems"][n]["recall"].get(k, float("nan")) for n in names], "{:.3f}")
            for k in PII_TYPES]
    rows += [
        ("non-PII chars changed", [report["systems"][n]["non_pii_chars_changed"] * 100 for n in names], "{:.3f}%"),
        ("docs with a non-PII change", [report["systems"][n]["docs_with_non_pii_change"] * 100 for n in names],
         "{:.1f}%"),
        ("look-alikes intact", [report["systems"][n]["lookalikes_intact"] * 100 for n in names], "{:.1f}%"),
    ]
    rows += [(f"  intact: {k}", [report["systems"][n]["lookalikes_intact_by_kind"].get(k, float("nan")) * 100
                                 for n in names], "{:.0f}%") for k in LOOKALIKE_KINDS]
    rows += [
        ("docs per CPU-second (1 core)", [report["systems"][n]["docs_per_s"] for n in names], "{:.0f}"),
        ("docs per wall-second (shared machine)", [report["systems"][n]["docs_per_wall_s"] for n in names], "{:.0f}"),
        ("MB per CPU-second", [report["systems"][n]["mb_per_s"] for n in names], "{:.2f}"),
        ("speed vs presidio-default", [report["systems"][n]["speedup_vs_presidio_default"] for n in names],
         "{:.1f}x"),
        ("speed vs presidio-same-entities", [report["systems"][n]["speedup_vs_same_entities"] for n in names],
         "{:.1f}x"),
        ("speed vs same recognizers", [report["systems"][n]["speedup_vs_same_recognizers"] for n in names],
         "{:.1f}x"),
    ]
    print()
    print("| metric | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for label, values, fmt in rows:
        print(f"| {label} | " + " | ".join(fmt.format(v) for v in values) + " |")
    for n in names:
        print(f"\n{n}: entity types reported outside injected PII: {report['systems'][n]['false_positive_types']}")
    if "removed_by_default_rules" in report["systems"]["corpusforge"]:
        print(f"corpusforge: documents the default density/drop rules would remove: "
              f"{report['systems']['corpusforge']['removed_by_default_rules']}")
    spans = report["systems"][names[0]]["pii_spans"]
    print(f"PII spans per type: {spans}")
    print(f"look-alikes per kind: {report['systems'][names[0]]['lookalikes']}")


if __name__ == "__main__":
    sys.exit(main())
