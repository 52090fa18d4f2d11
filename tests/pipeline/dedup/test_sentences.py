"""Sentence-level dedup: the pure key and removal functions, and the Beam step against line dedup."""
from __future__ import annotations

import apache_beam as beam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.core.config_loader import ConfigError
from corpusforge.pipeline.dedup import LineDedup, LineDedupConfig, SentenceDedup, SentenceDedupConfig
from corpusforge.pipeline.dedup.sentences import (
    remove_sentences, remove_sentences_reference, sentence_keys, sentence_keys_reference,
)
from tests.pipeline.dedup.corpus import paragraphs

BASES = [p for p in paragraphs(20) if p.endswith(".")]  # a notice after them is its own sentence
NOTICE = "This article first appeared in The Daily Example and is reprinted with permission."


def doc(doc_id, text, score=None):
    from corpusforge.pipeline.document import Document

    return Document(doc_id, text, "web", annotations={} if score is None else {"quality_score": score})


def test_sentence_keys_normalise_and_report_repeats():
    keys, repeats = sentence_keys("A sentence that is long enough. A SENTENCE that is long enough!", "en", 20)
    assert len(keys) == 1 and repeats
    keys, repeats = sentence_keys("Short. Also short. A sentence that is long enough.", "en", 20)
    assert len(keys) == 1 and not repeats


def test_remove_sentences_inside_a_line_and_collapse_repeats():
    drop, _ = sentence_keys(NOTICE, "en", 20)
    text = f"The mayor spoke at noon today. {NOTICE} Then it rained on everyone.\n{NOTICE}\nThe mayor spoke at noon today."
    assert remove_sentences(text, "en", drop, 20) == (
        "The mayor spoke at noon today. Then it rained on everyone.", 2, 1)
    assert remove_sentences("Nothing to do here at all.", "en", drop, 20) == ("Nothing to do here at all.", 0, 0)


def test_a_notice_after_a_list_introduction_is_removed_and_the_introduction_and_code_stay():
    drop, _ = sentence_keys(NOTICE, "en", 20)
    text = f"The function is used as follows:: {NOTICE}\nDon't do this: {NOTICE}"
    assert sentence_keys(text, "en", 20)[0] >= drop
    assert remove_sentences(text, "en", drop, 20) == (
        "The function is used as follows::\nDon't do this:", 2, 0)
    # code and key: value lines keep their repeated tails (no colon of theirs ends a sentence)
    code = ("def first(self, x: Dict[str, int], y: Optional[Sequence[str]] = None) -> None:\n"
            "def second(self, z: Dict[str, int], y: Optional[Sequence[str]] = None) -> None:\n"
            "The options are listed below:\n- first option: The same long explanation of it.\n"
            "- second option: The same long explanation of it.")
    assert remove_sentences(code, "en", drop, 20) == (code, 0, 0)


@pytest.mark.parametrize("kwargs", [{"max_occurrences": 0}, {"min_sentence_chars": 0}, {"min_words": -1}])
def test_config_refuses_bad_thresholds(kwargs):
    with pytest.raises(ConfigError, match="dedup.sentences"):
        SentenceDedupConfig(**kwargs)


def inline_corpus():
    """Five articles whose last paragraph line ends with the same notice, a short one, and a best-ranked one."""
    docs = [doc(f"a{i}", f"{BASES[i]} {NOTICE}") for i in range(4)]
    docs.append(doc("top", f"{BASES[4]} {NOTICE}", score=0.9))
    docs.append(doc("short", f"Only a few words here. {NOTICE}"))
    docs.append(doc("echo", f"{BASES[5]}\n{BASES[5]}"))  # a document repeating itself
    return docs


def test_sentence_dedup_removes_inline_boilerplate_that_line_dedup_misses():
    docs = inline_corpus()
    echoed = len(sentence_keys(BASES[5], "en", 20)[0])  # each of the echo's sentences, collapsed once
    with TestPipeline() as p:
        created = p | beam.Create(docs)
        lines = created | "Lines" >> LineDedup(LineDedupConfig(max_occurrences=3))
        out = created | "Sentences" >> SentenceDedup(SentenceDedupConfig(max_occurrences=3, min_words=20))
        assert_that(lines.kept | "LineTexts" >> beam.Map(lambda d: (d.id, NOTICE in d.text)),
                    equal_to([(d.id, d.id != "echo") for d in docs]), label="LinesMissIt")
        expected = [(f"a{i}", False, BASES[i]) for i in range(4)] + [("top", True, f"{BASES[4]} {NOTICE}"),
                                                                     ("echo", False, BASES[5])]
        assert_that(out.kept | beam.Map(lambda d: (d.id, NOTICE in d.text, d.text)), equal_to(expected),
                    label="CheckKept")
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.reason, r.details)),
                    equal_to([("short", "sentence_dedup_too_short",
                               {"sentences_removed": 1, "sentences_collapsed": 0, "words_left": 5})]),
                    label="CheckRemoved")
        assert_that(out.edits | beam.Map(lambda e: ((e[0], e[1]), e[2])) | beam.CombinePerKey(sum),
                    equal_to([(("dedup", "sentences_removed"), 5), (("dedup", "sentences_collapsed"), echoed),
                              (("dedup", "documents_sentence_edited"), 6)]),
                    label="CheckEdits")


def test_repeats_stay_when_collapse_repeats_is_off_even_in_a_document_that_loses_boilerplate():
    # "echo" repeats its own sentences; "a0" also repeats one, and loses the notice four documents share
    docs = inline_corpus()
    docs[0] = doc("a0", f"{BASES[0]} {NOTICE} {BASES[0]}")
    config = SentenceDedupConfig(max_occurrences=3, min_words=20, collapse_repeats=False)
    with TestPipeline() as p:
        out = p | beam.Create(docs) | SentenceDedup(config)
        assert_that(out.kept | beam.Map(lambda d: (d.id, d.text)) | beam.Filter(lambda kept: kept[0] in ("a0", "echo")),
                    equal_to([("a0", f"{BASES[0]} {BASES[0]}"), ("echo", f"{BASES[5]}\n{BASES[5]}")]))
        assert_that(out.edits | beam.Filter(lambda e: e[1] == "sentences_collapsed"), equal_to([]), label="NoCollapse")


def test_sentences_in_few_documents_stay():
    docs = [doc(f"a{i}", f"{BASES[i]} {NOTICE}") for i in range(3)]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | SentenceDedup(SentenceDedupConfig(max_occurrences=3))
        assert_that(out.kept | beam.Map(lambda d: d.text), equal_to([d.text for d in docs]))


# The fast keys (an ASCII text normalised once and sliced) and removal against their definitions (each sentence
# of split_sentences keyed alone), on ASCII and non-ASCII text: dropped keys drawn from the text's own sentences.
_SENTENCES = [NOTICE, "A sentence that is long enough. ", "Straße und Maß sind lang genug hier. ", "Yes. ",
              "İstanbul'un UZUN cümlesi burada! ", "3.5 is a number, 42 too? ", "今天下雨了。我们在家。", "\n", "\n\n",
              "  ", "Mr. Smith came back. ", "ＡＢＣ full width letters here. ", "the end"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_SENTENCES), max_size=14), st.data())
def test_fast_sentence_keys_and_removal_match_the_reference(pieces, data):
    text = "".join(pieces)
    for min_chars in (1, 20):
        keys, repeats = sentence_keys(text, "en", min_chars)
        assert (keys, repeats) == sentence_keys_reference(text, "en", min_chars)
        drop = set(data.draw(st.lists(st.sampled_from(sorted(keys)), max_size=3))) if keys else set()
        assert remove_sentences(text, "en", drop, min_chars) == remove_sentences_reference(text, "en", drop, min_chars)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(list("aZ9 .!?,'\")\t\n") + ["Mr", "J", "word", "é", "’", "Σ", "İ", "。", "…"]),
                max_size=60), st.sampled_from(["en", "de", None]), st.sampled_from([1, 5, 20]))
def test_keyed_sentences_key_each_sentence_as_line_key_does(pieces, lang, min_chars):
    # ASCII lines of a text with non-ASCII lines are normalised once and sliced: each key is line_key's
    from corpusforge.pipeline.dedup.lines import line_key
    from corpusforge.pipeline.dedup.sentence_split import sentence_spans
    from corpusforge.pipeline.dedup.sentences import keyed_sentences

    text = "".join(pieces)
    assert keyed_sentences(text, lang, min_chars) == [
        (start, end, last, line_key(text[start:end], min_chars)) for start, end, last in sentence_spans(text, lang)]


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(list("aZ9 .!?,'\")\t\n") + ["Mr", "J", "word", "é", "’", "“", "”", "—", "\u00a0", "Σ",
                                                            "ΟΔΟΣ", "İ", "。", "…", "A long enough sentence"]),
                max_size=60), st.sampled_from(["en", "de", None]), st.sampled_from([1, 5, 20]))
def test_keyed_sentences_match_the_previous_implementation(pieces, lang, min_chars):
    # sentence_words normalises a text whose only non-ASCII characters are separators as ASCII (ascii_word_copy),
    # else each such line; keyed_sentences_reference took only ASCII lines that way
    from corpusforge.pipeline.dedup.sentence_split import sentence_spans
    from corpusforge.pipeline.dedup.sentences import keyed_sentences, keyed_sentences_reference, sentence_words
    from corpusforge.pipeline.dedup.text import normalized_bytes

    text = "".join(pieces)
    assert keyed_sentences(text, lang, min_chars) == keyed_sentences_reference(text, lang, min_chars)
    spans = sentence_spans(text, lang)
    assert sentence_words(text, spans) == [b" ".join(normalized_bytes(text[s:e]).split()) for s, e, _ in spans]


def test_keyed_sentences_match_the_previous_implementation_on_documents():
    from corpusforge.pipeline.dedup.sentences import keyed_sentences, keyed_sentences_reference

    texts = paragraphs(300) + ["„Zitat“ — und dann… noch ein Satz. Ende’s.", "ΟΔΟΣ ΜΑΣ. Next “one” here."]
    for text in texts:
        for lang in (None, "de"):
            assert keyed_sentences(text, lang, 20) == keyed_sentences_reference(text, lang, 20)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_SENTENCES + ["“Quoted” — and more… ", "ΟΔΟΣ ΜΑΣ. ", "Σ。", "x’s. "]), max_size=14),
       st.data())
def test_removal_counts_the_words_left_as_normalising_the_text_left_does(pieces, data):
    # drop_sentences takes the words left from the kept sentences instead of normalising the text it keeps
    from corpusforge.pipeline.dedup.sentences import without_sentences, without_sentences_reference

    text = "".join(pieces)
    for lang in ("en", None):
        keys, _ = sentence_keys(text, lang, 1)
        drop = set(data.draw(st.lists(st.sampled_from(sorted(keys)), max_size=4))) if keys else set()
        for collapse in (True, False):
            assert (without_sentences(text, lang, drop, 1, collapse)
                    == without_sentences_reference(text, lang, drop, 1, collapse))


# Short documents in scripts written without spaces, and the English they translate (29 words) (issue 40).
SHORT_DOCUMENTS = [
    ("zh", "经过两年的翻修，市图书馆今年春天将再次敞开大门。新的阅览室可容纳两百名读者。儿童也有了自己的阅览室。"),
    ("zh", "市图书馆在关闭两年之后重新开放了，新的阅览室能坐两百名读者，孩子们还得到了一间属于自己的房间。"),
    ("ja", "二年間の改修を経て、市立図書館がこの春ふたたび開館します。新しい閲覧室には二百人の読者が座れます。子どもたちには専用の部屋もできました。"),
    ("ja", "市立図書館は二年間の改修工事を終えて、この春に再び開館します。新しい閲覧室には二百人が座ることができ、"
           "子どもたちには自分たちの部屋があります。"),
    ("th", "ห้องสมุดเมืองเปิดประตูอีกครั้งในฤดูใบไม้ผลินี้หลังจากการปรับปรุงนานสองปี ห้องอ่านหนังสือใหม่รองรับผู้อ่านได้สองร้อยคน "
           "เด็ก ๆ ก็มีห้องของตัวเองด้วย"),
    ("en", "The city library opens its doors again this spring after two years of renovation. The new reading room "
           "seats two hundred readers. Children get a room of their own."),
]


@pytest.mark.parametrize("lang,text", SHORT_DOCUMENTS)
def test_a_short_document_written_three_times_keeps_its_words_after_its_repeats_collapse(lang, text):
    """Its repeats collapse to one copy, which keeps enough words to stay in every script: each character of Han,
    kana or Thai is a word (corpusforge.pipeline.words). With whitespace words a Chinese or Japanese document was a
    handful of words and ended sentence_dedup_too_short."""
    from apache_beam.metrics import Metrics

    from corpusforge.pipeline.document import Document
    from corpusforge.pipeline.dedup.sentences import drop_sentences

    tripled = Document("d", "\n".join([text] * 3), "web", annotations={"lang": lang})
    steps = drop_sentences(tripled, set(), SentenceDedupConfig(), Metrics.counter("test", "too_short"))
    outputs = []
    try:
        while True:
            outputs.append(next(steps))
    except StopIteration as stop:
        kept = stop.value
    assert not [o for o in outputs if getattr(o, "reason", None) == "sentence_dedup_too_short"]
    assert kept is not None and kept.text == text


@pytest.mark.parametrize("lang,text", SHORT_DOCUMENTS)
def test_a_short_document_that_loses_a_boilerplate_line_keeps_its_words(lang, text):
    """Line dedup's "too short" counts the same words: the document's own line stays long enough in every script."""
    from apache_beam.metrics import Metrics

    from corpusforge.pipeline.dedup.config import LineDedupConfig
    from corpusforge.pipeline.dedup.lines import drop_lines, line_key
    from corpusforge.pipeline.document import Document

    footer = "Copyright Example Media Group, all rights reserved"
    document = Document("d", f"{text}\n{footer}", "web", annotations={"lang": lang})
    config = LineDedupConfig()
    steps = drop_lines(document, {line_key(footer, config.min_line_chars)}, config, Metrics.counter("test", "short"))
    try:
        while True:
            assert getattr(next(steps), "reason", None) != "line_dedup_too_short"
    except StopIteration as stop:
        assert stop.value is not None and stop.value.text == text
