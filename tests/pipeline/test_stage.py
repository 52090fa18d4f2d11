"""Fault isolation in every stage: a record that makes a stage raise is rejected as stage_error, alone.

Each test plants a bug that raises only on documents holding MARKER (in the rule, scrubber, key or signature
code a stage calls) and checks, with TestPipeline, that exactly those documents leave on the errors output
with the stage and exception type, never their text, while every other document is decided as before.
The whole-build tests are in tests/pipeline/test_build.py.
"""
from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.document import Document
from corpusforge.pipeline.stage import StageContext

MARKER = "zebracorn"
SENTENCES = ["The river runs past the old mill and into the valley where the farmers grow wheat and barley.",
             "A quiet library on the hill lends books, maps and records to anyone who asks the librarian kindly.",
             "The train to the coast leaves every morning at seven and returns late in the evening after dark.",
             "Bakers in the town start work at four so the bread is warm when the market opens at eight o'clock."]
MORE = ["Children played football in the square until their parents called them home for a late supper.",
        "The museum keeps a collection of clocks, some of them older than the cathedral across the road.",
        "Fishermen mend their nets on the quay while gulls wait for scraps from the morning's catch.",
        "Snow closed the mountain pass for three days, and the village shop ran out of candles and milk."]


def _docs():
    docs = [Document(f"ok{i}", f"{s} {m}", "s") for i, (s, m) in enumerate(zip(SENTENCES, MORE))]
    docs.append(Document("bad", f"{SENTENCES[0]} The word {MARKER} appears here, mail bob@example.org.", "s"))
    return docs


def _raise_on_marker(original):
    def patched(*args, **kwargs):
        texts = [a for a in args if isinstance(a, str)] + [t for a in args if isinstance(a, list) for t in a
                                                             if isinstance(t, str)]
        texts += [t[0] for a in args if isinstance(a, list) for t in a if isinstance(t, tuple) and isinstance(t[0], str)]
        if any(MARKER in t for t in texts):
            raise ValueError(f"planted bug on {[t for t in texts if MARKER in t][0][:80]!r}")
        return original(*args, **kwargs)
    return patched


def _errors(out):
    return out.errors | "ErrorRows" >> beam.Map(lambda r: (r.path, r.reason, r.detail, r.raw.startswith(SENTENCES[0])))


def _expected(stage):
    return [("bad", "stage_error", f"{stage}: ValueError: planted bug on '…'", True)]


def _kept_ids(out):
    return out.kept | "KeptIds" >> beam.Map(lambda d: d.id)


def test_normalize(monkeypatch):
    from corpusforge.pipeline.normalize import stage

    monkeypatch.setattr(stage, "normalize_and_count", _raise_on_marker(stage.normalize_and_count))
    with TestPipeline() as p:
        out = p | beam.Create(_docs()) | stage.Normalize()
        assert_that(_kept_ids(out), equal_to(["ok0", "ok1", "ok2", "ok3"]), label="kept")
        assert_that(_errors(out), equal_to(_expected("normalize")), label="errors")


def test_quality(monkeypatch):
    from corpusforge.pipeline.quality import Quality, QualityConfig
    from corpusforge.pipeline.quality.rules import HeuristicRules

    monkeypatch.setattr(HeuristicRules, "apply_batch", _raise_on_marker(HeuristicRules.apply_batch))
    with TestPipeline() as p:
        out = p | beam.Create(_docs()) | Quality(QualityConfig())
        assert_that(_kept_ids(out), equal_to(["ok0", "ok1", "ok2", "ok3"]), label="kept")
        assert_that(_errors(out), equal_to(_expected("quality")), label="errors")


@pytest.mark.parametrize("step", ["exact", "near", "lines", "lines in lists"])
def test_dedup_keys_and_signatures(monkeypatch, step):
    # "lines in lists": side-input joins, where the boilerplate keys take near dedup's kept documents as lists
    # (a list that raises is keyed again one document at a time)
    from corpusforge.pipeline.dedup import boilerplate, exact
    from corpusforge.pipeline.dedup.config import DedupConfig
    from corpusforge.pipeline.dedup.minhash import Shingler
    from corpusforge.pipeline.dedup.stage import Dedup
    from corpusforge.pipeline.stage import StageContext

    if step == "exact":
        monkeypatch.setattr(exact, "text_digest", _raise_on_marker(exact.text_digest))
    elif step == "near":  # a batch's shingles: the batch is signed again one document at a time
        monkeypatch.setattr(Shingler, "hashes", _raise_on_marker(Shingler.hashes))
    else:  # lines and sentences are on: their keys (and sentence tables) come from boilerplate.keyed_lines_many
        monkeypatch.setattr(boilerplate, "keyed_lines_many", _raise_on_marker(boilerplate.keyed_lines_many))
    docs = _docs() + [Document("z-copy", _docs()[1].text, "s")]  # an exact copy of ok1: still found
    with TestPipeline() as p:
        lists = step == "lines in lists"
        stage = Dedup(DedupConfig(joins="side_input"), StageContext(direct_runner=True)) if lists else Dedup(DedupConfig())
        assert not lists or stage.steps[-1][1].docs_in_lists
        out = p | beam.Create(docs) | stage
        assert_that(_kept_ids(out), equal_to(["ok0", "ok1", "ok2", "ok3"]), label="kept")
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.reason)),
                    equal_to([("z-copy", "exact_duplicate")]), label="removed")
        assert_that(_errors(out), equal_to(_expected("dedup")), label="errors")


def test_dedup_decontamination(monkeypatch, tmp_path):
    from corpusforge.pipeline.dedup import decontaminate
    from corpusforge.pipeline.dedup.config import DedupConfig
    from corpusforge.pipeline.dedup.stage import Dedup

    evals = tmp_path / "eval.jsonl"
    evals.write_text('{"text": "' + MORE[2] + '"}\n')
    original = decontaminate.text_ngrams

    def buggy(texts, n):
        if any(MARKER in t for t in texts):
            raise ValueError(f"planted bug on {texts[0][:80]!r}")
        return original(texts, n)

    monkeypatch.setattr(decontaminate, "text_ngrams", buggy)
    config = DedupConfig()
    config.decontaminate.eval_sets = [str(evals)]
    with TestPipeline() as p:
        out = p | beam.Create(_docs()) | Dedup(config)
        assert_that(_kept_ids(out), equal_to(["ok0", "ok1", "ok3"]), label="kept")
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.reason)),
                    equal_to([("ok2", "eval_contamination")]), label="removed")
        assert_that(_errors(out), equal_to(_expected("dedup")), label="errors")


def test_pii_batch_is_scrubbed_again_one_document_at_a_time(monkeypatch):
    pytest.importorskip("presidio_analyzer")
    from corpusforge.pipeline.pii import PII
    from corpusforge.pipeline.pii.config import PIIConfig
    from corpusforge.pipeline.pii.scrubber import Scrubber

    monkeypatch.setattr(Scrubber, "scrub_batch", _raise_on_marker(Scrubber.scrub_batch))
    with TestPipeline() as p:
        out = p | beam.Create(_docs()) | PII(PIIConfig(batch_size=8))
        assert_that(_kept_ids(out), equal_to(["ok0", "ok1", "ok2", "ok3"]), label="kept")
        assert_that(_errors(out), equal_to(_expected("pii")), label="errors")


def test_fail_fast_lets_the_first_error_fail_the_pipeline(monkeypatch):
    from corpusforge.pipeline.normalize import stage

    monkeypatch.setattr(stage, "normalize_and_count", _raise_on_marker(stage.normalize_and_count))
    with pytest.raises(Exception, match="planted bug"):
        with TestPipeline() as p:
            _ = p | beam.Create(_docs()) | stage.Normalize(context=StageContext(fail_fast=True))


class _CountEach(__import__("corpusforge.pipeline.stage", fromlist=["CountingDoFn"]).CountingDoFn):
    """Counts every record of a batch, then raises at the record 13 (after counting those before it)."""

    def process(self, batch):
        for doc in batch:
            n = int(doc.id)
            self.count("seen")
            if n == 13:
                raise ValueError("unlucky")
            self.count("even" if n % 2 == 0 else "odd")
            yield doc.id


def test_a_retried_batch_counts_each_record_once_and_a_rejected_one_not_at_all():
    from apache_beam.metrics.metric import MetricsFilter

    from corpusforge.pipeline.stage import ERRORS, guarded

    p = TestPipeline()
    docs = lambda ids: [Document(id=str(n), text=f"text {n}", source="s") for n in ids]  # noqa: E731
    out = (p | beam.Create([docs([10, 11, 12, 13, 14]), docs([15, 16])])
           | beam.ParDo(guarded(_CountEach("demo"), "demo", batched=True)).with_outputs(ERRORS, main="kept"))
    assert_that(out.kept, equal_to(["10", "11", "12", "14", "15", "16"]), label="kept")
    assert_that(out[ERRORS] | beam.Map(lambda r: r.path), equal_to(["13"]), label="rejected")
    result = p.run()
    result.wait_until_finish()
    counters = {c.key.metric.name: c.committed for c in result.metrics().query(MetricsFilter().with_namespace("demo"))["counters"]}
    # before holding counts: seen 11 (10-13 counted twice), even 4 (10, 12 twice)
    assert counters == {"seen": 6, "even": 4, "odd": 2, "stage_error": 1}
