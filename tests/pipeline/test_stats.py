"""The facts behind stats.json, counted by hand for a few documents."""
import pytest
import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.document import Document
from corpusforge.pipeline.stats import CountFacts, FactsOf, document_facts

DOCS = [
    Document("a", "héllo", "web", annotations={"lang": "fr"}),  # 5 characters, 6 UTF-8 bytes
    Document("b", "abc", "web", annotations={"lang": "en"}),
    Document("c", "x\ud800", "code"),  # a lone surrogate: 1 + 3 bytes (surrogatepass), no language yet
]
EXPECTED = {
    ("funnel_docs", "quality"): 3, ("funnel_chars", "quality"): 10,
    ("source_docs", "quality\tweb"): 2, ("source_bytes", "quality\tweb"): 9,
    ("source_docs", "quality\tcode"): 1, ("source_bytes", "quality\tcode"): 4,
    ("lang_docs", "quality\tfr"): 1, ("lang_bytes", "quality\tfr"): 6,
    ("lang_docs", "quality\ten"): 1, ("lang_bytes", "quality\ten"): 3,
}


def test_document_facts_add_to_and_yield_the_same_counts():
    facts, added, yielded = document_facts("quality"), {}, {}
    for doc in DOCS:
        facts.add_to(added, doc)
        for key, amount in facts(doc):
            yielded[key] = yielded.get(key, 0) + amount
    assert added == yielded == EXPECTED


def test_facts_of_sums_the_document_facts_in_a_pipeline():
    with TestPipeline() as p:
        counted = p | beam.Create(DOCS) | FactsOf(document_facts("quality")) | CountFacts()
        assert_that(counted, equal_to(sorted(EXPECTED.items())))


def test_length_facts_add_to_and_yield_the_same_counts():
    from corpusforge.pipeline.stats import length_facts

    facts, added, yielded = length_facts("length_in"), {}, {}
    for doc in DOCS + [Document("e", "", "web"), Document("l", "x" * 5000, "web")]:
        facts.add_to(added, doc)
        for key, amount in facts(doc):
            yielded[key] = yielded.get(key, 0) + amount
    assert added == yielded == {("length_in", "8"): 1, ("length_in", "4"): 1, ("length_in", "2"): 1,
                                ("length_in", "0"): 1, ("length_in", "8192"): 1}


def test_documents_and_facts_pass_the_records_on_and_count_what_facts_of_counts():
    """The build's step after each stage: ``before`` applied to each record, the records passed on, and the
    facts of every fn given, the same as one ``FactsOf`` per fn."""
    from corpusforge.pipeline.stats import DocumentsAndFacts, annotation_facts, length_facts

    fns = (document_facts("quality"), length_facts("length_out"), annotation_facts)
    with TestPipeline() as p:
        docs = p | beam.Create(DOCS)
        passed, facts = docs | "Both" >> DocumentsAndFacts(*fns, before=lambda d: d.annotate(seen=True))
        separate = [docs | f"Facts{i}" >> FactsOf(fn) for i, fn in enumerate(fns)] | beam.Flatten() | "Sum" >> CountFacts()
        expected = {}
        for doc in DOCS:
            for fn in fns:
                for key, amount in fn(doc):
                    expected[key] = expected.get(key, 0) + amount
        assert_that(facts | "SumBoth" >> CountFacts(), equal_to(sorted(expected.items())), label="Combined")
        assert_that(separate, equal_to(sorted(expected.items())), label="Separate")
        assert_that(passed | beam.Map(lambda d: (d.id, d.annotations.get("seen"))),
                    equal_to([(d.id, True) for d in DOCS]), label="Passed")


def test_a_bundles_document_counter_folds_into_what_add_to_adds():
    # _BundleFacts counts DocumentFacts per (source, language) and folds them into the facts' keys per bundle
    facts, added, folded = document_facts("quality"), {}, {"other": 1}
    counter = facts.counter()
    for doc in DOCS + DOCS[:2]:
        facts.add_to(added, doc)
        counter.add(doc)
    counter.fold(folded)
    assert folded == {**added, "other": 1}
    counter.fold(folded)  # a fold empties the counter: the next bundle starts from nothing
    assert folded == {**added, "other": 1}


def test_length_buckets_are_the_powers_of_two_at_or_above_the_length():
    from corpusforge.pipeline.stats import length_bucket

    assert [length_bucket(n) for n in (-1, 0, 1, 2, 3, 4, 5, 1023, 1024, 1025)] == [0, 0, 1, 2, 4, 4, 8, 1024, 1024, 2048]
    assert all(length_bucket(n) // 2 < n <= length_bucket(n) for n in range(1, 70000))


@pytest.mark.parametrize("per_second, shown", [(0.37, "0.37"), (2.5, "2.5"), (9.96, "10"), (12.4, "12"), (12345.6, "12,346")])
def test_the_summary_rate_is_never_a_rounded_zero(per_second, shown):
    from corpusforge.pipeline.stats import rate_text

    assert rate_text(per_second) == shown


def test_nothing_read_is_every_input_record_rejected_or_none():
    # the build refuses to publish exactly these (NothingKept); a document a stage raised on after reading was
    # counted as read and as rejected, so "every record rejected" must not count it twice
    from corpusforge.pipeline.build import nothing_read

    read_rejected = {("funnel_docs", "read"): 0, ("rejected", "malformed_json"): 4}
    all_stage_errors = {("funnel_docs", "read"): 3, ("funnel_docs", "normalize"): 0, ("rejected", "stage_error"): 3,
                        ("stage_errors", "normalize\tValueError"): 3}
    one_left = {**all_stage_errors, ("funnel_docs", "read"): 4, ("funnel_docs", "normalize"): 1}
    one_removed = {**one_left, ("removed", "quality\tgopher_short_doc"): 1}
    read_errors = {("funnel_docs", "read"): 0, ("rejected", "stage_error"): 2, ("stage_errors", "read\tKeyError"): 2}
    assert nothing_read(read_rejected) and nothing_read(all_stage_errors) and nothing_read({})
    assert nothing_read(read_errors)
    assert not nothing_read(one_left) and not nothing_read(one_removed)


def test_a_refused_build_is_told_what_to_do_for_its_main_reason():
    # reasons with no advice got "see what each reason means in docs/inputs.md", web inputs' reasons too (they are
    # told in docs/web.md), and a big .json array file (one line past the record limit) nothing about arrays
    from corpusforge.pipeline.stats import rejection_advice

    assert "jq -c '.[]'" in rejection_advice("oversize_record") and "output.max_record_bytes" in rejection_advice("oversize_record")
    assert "iconv" in rejection_advice("invalid_utf8")
    for reason in ("warc_truncated", "html_parse_error", "no_main_text"):
        assert "docs/web.md" in rejection_advice(reason), reason
    assert "docs/inputs.md" in rejection_advice("some_new_reason")
    assert rejection_advice("missing_text").startswith("the records have no field")


def _loss_stats(input_: int, rejected: int, removed: int) -> dict:
    return {"accounting": {"input": input_, "kept": input_ - rejected - removed, "rejected": rejected,
                           "removed": removed},
            "rejected": {"reasons": {"missing_text": rejected} if rejected else {}},
            "removed": {"by_stage": {"quality": {"total": removed, "reasons": {"too_short": removed}}} if removed else {}}}


def test_loss_warning_fires_at_half_rejected_or_under_one_percent_kept():
    from corpusforge.pipeline.stats import loss_warning

    assert loss_warning(_loss_stats(1000, 499, 0)) is None  # a minority rejected: the summary details it
    line = loss_warning(_loss_stats(1000, 500, 0), "; e.g. a.jsonl record 0: no field 'text'")
    assert line.startswith("500 of the 1,000 input records (50.0%) were rejected (missing_text 500; e.g. a.jsonl "
                           "record 0: no field 'text') and only 500 kept: the records have no field named"), line
    assert loss_warning(_loss_stats(1000, 0, 990)) is None  # 1 % kept: a config may remove most of a crawl
    line = loss_warning(_loss_stats(1000, 0, 991))
    assert line.startswith("only 9 of the 1,000 input records were kept: the stages removed 991 (quality too_short "
                           "991;"), line
    assert loss_warning(_loss_stats(4, 0, 4)).startswith("no document was kept: the stages removed 4")
    assert loss_warning(_loss_stats(0, 0, 0)) is None
    assert "\n" not in line


def test_a_crawls_routine_rejections_are_no_loss():
    # a WARC of a site: 3 pages, 4 images/scripts and a redirect rejected by design warned "5 of the 8 input records
    # (62.5%) were rejected"; its pages' rejections still count
    from corpusforge.pipeline.stats import loss_warning

    stats = {"accounting": {"input": 8, "kept": 3, "rejected": 5, "removed": 0},
             "rejected": {"reasons": {"warc_not_html": 4, "warc_http_status": 1}}, "removed": {"by_stage": {}}}
    assert loss_warning(stats) is None
    stats = {"accounting": {"input": 10, "kept": 1, "rejected": 9, "removed": 0},
             "rejected": {"reasons": {"warc_not_html": 5, "warc_bad_encoding": 4}}, "removed": {"by_stage": {}}}
    assert loss_warning(stats).startswith("4 of the 5 input records (80.0%) were rejected (warc_bad_encoding 4)")
