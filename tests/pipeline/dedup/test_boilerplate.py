"""LineAndSentenceDedup (one document join) against LineDedup then SentenceDedup (two): the same documents kept
with the same text, the same removals with the same reasons and details, the same edits."""
from __future__ import annotations

import collections
import random

import apache_beam as beam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.dedup import LineDedup, LineDedupConfig, SentenceDedup, SentenceDedupConfig
from corpusforge.pipeline.dedup.boilerplate import LineAndSentenceDedup, line_records, line_records_reference
from corpusforge.pipeline.dedup.sentences import sentence_keys
from tests.pipeline.dedup.corpus import paragraphs

NAV = ["Home | News | Sport | Weather | Contact us", "Share this article on Facebook and Twitter",
       "Cookies help us deliver our services to you."]
INLINE = ["This article first appeared in The Daily Example and is reprinted with permission.",
          "Sign up for our weekly newsletter to get the best stories delivered to your inbox."]
OTHER = ["Straße und Maß: Grüße aus München, wo es heute regnet und windig ist.", "今天下雨了。我们在家。好吗？",
         "Mr. Smith met Dr. Jones at 5 p.m. Today they talk.", "Short line."]


def corpus(count: int, seed: int) -> list:
    """Documents of real paragraphs with boilerplate lines, boilerplate sentences inside lines, repeated
    sentences, non-ASCII lines, documents that lose most of their words, two documents sharing an id."""
    from corpusforge.pipeline.document import Document

    rng, paras = random.Random(seed), paragraphs(60, min_chars=120)
    docs = []
    for i in range(count):
        lines = [rng.choice(paras) for _ in range(rng.randrange(0, 4))]
        if rng.random() < 0.6:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(NAV))
        if lines and rng.random() < 0.5:
            k = rng.randrange(len(lines))
            lines[k] = f"{lines[k]} {rng.choice(INLINE)}"
        if rng.random() < 0.3:
            lines.append(rng.choice(INLINE))
        if rng.random() < 0.3:
            lines.append(rng.choice(OTHER))
        if lines and rng.random() < 0.15:
            lines.append(lines[0])  # the document repeats itself
        score = rng.choice([None, 0.1, 0.5, 0.9])
        annotations = {} if score is None else {"quality_score": score}
        if rng.random() < 0.2:
            annotations["lang"] = rng.choice(["de", "zh", "en"])
        docs.append(Document(f"d{i:03d}", "\n".join(lines), "web", annotations=annotations))
    docs.append(Document("d000", docs[1].text, "web"))  # an id shared by two documents
    return docs


def _outcomes(outputs, label: str):
    kept = outputs.kept | f"{label}Kept" >> beam.Map(lambda d: (label, "kept", d.id, d.text, ()))
    removed = outputs.removed | f"{label}Removed" >> beam.Map(
        lambda r: (label, r.reason, r.doc.id, r.doc.text, tuple(sorted(r.details.items()))))
    edits = (outputs.edits | f"{label}Edits" >> beam.Map(lambda e: (e[1], e[2])) | f"{label}Sum" >> beam.CombinePerKey(sum)
             | f"{label}EditRows" >> beam.Map(lambda kv: (label, "edit", kv[0], str(kv[1]), ())))
    return (kept, removed, edits) | f"{label}All" >> beam.Flatten()


def _same(actual):
    by_label = collections.defaultdict(list)
    for label, *row in actual:
        by_label[label].append(tuple(row))
    two, one = sorted(by_label["two"]), sorted(by_label["one"])
    assert one == two
    kinds = collections.Counter(row[0] for row in one)
    # not a vacuous comparison: every kind of decision happened
    assert kinds["kept"] > 20 and kinds["line_dedup_too_short"] > 0 and kinds["sentence_dedup_too_short"] > 0, kinds
    edits = {row[1] for row in one if row[0] == "edit"}
    assert {"lines_removed", "sentences_removed", "sentences_collapsed"} <= edits, edits


@pytest.mark.parametrize("joins", ["shuffle", "side_input"])
@pytest.mark.parametrize("seed", [0, 1])
def test_one_join_decides_as_line_then_sentence_dedup(seed, joins):
    lines = LineDedupConfig(max_occurrences=3, min_words=20)
    sentences = SentenceDedupConfig(max_occurrences=3, min_words=20)
    docs = corpus(160, seed)
    with TestPipeline() as p:
        created = p | beam.Create(docs)
        after_lines = created | "Lines" >> LineDedup(lines)
        after_both = after_lines.kept | "Sentences" >> SentenceDedup(sentences)
        two = after_both._replace(
            removed=(after_lines.removed, after_both.removed) | "TwoRemoved" >> beam.Flatten(),
            edits=(after_lines.edits, after_both.edits) | "TwoEdits" >> beam.Flatten())
        one = created | "Both" >> LineAndSentenceDedup(lines, sentences, joins=joins)
        assert_that((_outcomes(two, "two"), _outcomes(one, "one")) | beam.Flatten(), _same)


CJK_SENTENCES = ["今天下雨了，我们在家里看书。", "他们明天要去北京参加会议。", "这个城市的冬天非常寒冷。", "我喜欢在公园里散步和跑步。",
                 "请在下面留下您的评论。", "版权所有，保留一切权利。", "点击这里订阅我们的新闻。", "学生们在图书馆里安静地学习。"]
CJK_NAV = ["首页 | 新闻 | 体育 | 天气 | 联系我们", "分享到微博和微信朋友圈"]


def cjk_corpus(count: int, seed: int) -> list:
    """Chinese documents: lines of sentences from a small pool (so sentences recur) after a navigation line."""
    from corpusforge.pipeline.document import Document

    rng, docs = random.Random(seed), []
    for i in range(count):
        lines = ["".join(rng.choice(CJK_SENTENCES) for _ in range(rng.randrange(1, 4))) for _ in range(rng.randrange(1, 4))]
        if rng.random() < 0.6:
            lines.insert(0, rng.choice(CJK_NAV))
        docs.append(Document(f"d{i:03d}", "\n".join(lines), "web", annotations={"lang": "zh"}))
    return docs


@pytest.mark.parametrize("min_words", [20, 40])
def test_one_join_decides_as_line_then_sentence_dedup_on_chinese(min_words):
    """A line of Chinese is one space-delimited word but many words to line dedup's removal (``count_words`` counts
    its characters): the one join judged a document that lost a line too short by the first count, sent none of its
    sentence keys, and dropped fewer sentences than SentenceDedup after LineDedup."""
    lines = LineDedupConfig(max_occurrences=3, min_words=min_words)
    sentences = SentenceDedupConfig(max_occurrences=3, min_words=min_words)

    def same(actual):
        by_label = collections.defaultdict(list)
        for label, *row in actual:
            by_label[label].append(tuple(row))
        assert sorted(by_label["one"]) == sorted(by_label["two"])
        kinds = collections.Counter(row[0] for row in by_label["one"])
        assert kinds["line_dedup_too_short"] > 0 and kinds["sentence_dedup_too_short"] > 0, kinds

    with TestPipeline() as p:
        created = p | beam.Create(cjk_corpus(200, 1))
        after_lines = created | "Lines" >> LineDedup(lines)
        after_both = after_lines.kept | "Sentences" >> SentenceDedup(sentences)
        two = after_both._replace(
            removed=(after_lines.removed, after_both.removed) | "TwoRemoved" >> beam.Flatten(),
            edits=(after_lines.edits, after_both.edits) | "TwoEdits" >> beam.Flatten())
        one = created | "Both" >> LineAndSentenceDedup(lines, sentences, joins="side_input")
        assert_that((_outcomes(two, "two"), _outcomes(one, "one")) | beam.Flatten(), same)


def test_line_records_hold_each_lines_key_words_and_sentence_keys():
    text = f"{INLINE[0]} Mr. Smith came back home today.\n\nshort\n{INLINE[0]}"
    records = line_records(text, "en", 10, 20)
    assert len(records) == 4
    from corpusforge.pipeline.words import ENGLISH_WORD_CENTS

    assert [words for _, words, _ in records] == [n * ENGLISH_WORD_CENTS for n in (19, 0, 1, 13)]  # line_cents
    assert records[1] == (None, 0, ()) and records[2][0] is None  # too short to count as a line
    assert set(records[0][2]) == sentence_keys(text.split("\n")[0], "en", 20)[0] and len(records[0][2]) == 2
    assert records[3][2] == (records[0][2][0],)  # the notice's key, wherever it stands


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(NAV + INLINE + OTHER + ["", "\n", "\n\n", " ", "İstanbul. ", "Yes. ", "x" * 12,
                                                      "Dr", "J", " . ", ". ", "\n. "]),
                max_size=12), st.sampled_from(["en", "de", None]))
def test_line_records_match_each_line_taken_alone(pieces, lang):
    # the fast path normalises an ASCII text once and splits its sentences once; the reference takes each line
    # alone, which is also what shows that a sentence never spans a line. (Whether a full stop that starts a line ends a
    # sentence looks back at the previous line's last word, "Dr" or "J": the keys agree all the same, because what
    # stands before it on its line normalises to no words.)
    text = "".join(pieces)
    for line_chars, sentence_chars in ((10, 20), (1, 1)):
        assert line_records(text, lang, line_chars, sentence_chars) == \
            line_records_reference(text, lang, line_chars, sentence_chars)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(list("aZ9 .!?,;'\")]\t\r\n_-") + ["Mr", "e.g", "J", "word", "U.S", "…", "é"]),
                max_size=60), st.sampled_from(["en", "de", "fr", None]), st.sampled_from([(10, 20), (1, 1), (3, 2)]))
def test_line_records_match_the_reference_on_any_text(pieces, lang, chars):
    # the ASCII path takes a line's words from its sentences' words: any terminator, closer and whitespace run
    text = "".join(pieces)
    assert line_records(text, lang, *chars) == line_records_reference(text, lang, *chars)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(list("aZ9 .!?,'\")\t\n") + ["Mr", "word", "é", "’", "“", "—", "\u00a0", "Σ", "ΟΔΟΣ",
                                                            "İ", "。", "！", "」", "…", "Σ. ", "A long enough sentence"]),
                max_size=60), st.sampled_from(["en", "de", None]), st.sampled_from([(10, 20), (1, 1), (3, 2)]))
def test_line_records_match_the_reference_on_non_ascii_text(pieces, lang, chars):
    # a line's words are its sentences' words, typographic separators or not, but where a capital sigma stands
    text = "".join(pieces)
    assert line_records(text, lang, *chars) == line_records_reference(text, lang, *chars)


@pytest.mark.parametrize("text", ["ΟΔΟΣ. Σας ευχαριστώ.", "ΑΣ。Σα", "ΑΣ。’Σα", "ΑΣ！」Σα", "ΑΣ？ Σ", "ΑΣ… Σα. ΣΑΣ"])
def test_a_lines_words_are_its_sentences_words_around_a_capital_sigma(text):
    # lower case reads a capital sigma's neighbours: what ends a sentence stops that reading (not case-ignorable)
    assert line_records(text, "en", 1, 1) == line_records_reference(text, "en", 1, 1)


def test_line_records_match_the_reference_on_documents():
    docs = corpus(150, seed=3)
    for doc in docs:
        for lang in (None, "de"):
            assert line_records(doc.text, lang, 10, 20) == line_records_reference(doc.text, lang, 10, 20)


@pytest.mark.parametrize("joins", ["shuffle", "side_input"])
def test_a_document_whose_removal_step_raises_is_rejected_once_and_nothing_else_of_it_counts(monkeypatch, joins):
    # the error path of the one join: the document is rejected (stage_error) and neither kept nor removed; its line
    # edits, yielded before its sentence removal raised, are dropped with it; the others are decided as before
    from corpusforge.pipeline.dedup import sentences
    from corpusforge.pipeline.document import Document

    original = sentences.without_sentences  # what drop_sentences calls

    def planted(text, *args):
        if "zebracorn" in text:
            raise ValueError("planted bug")
        return original(text, *args)

    monkeypatch.setattr(sentences, "without_sentences", planted)
    repeated = "The zebracorn sentence is long enough to count here. "
    docs = [Document(f"d{i}", f"{NAV[0]}\nThe words of document {'abcdef'[i] * 4} stand here. {INLINE[0]}",
                     "web", annotations={"quality_score": 0.9}) for i in range(6)]
    # ranked last, so its NAV line is dropped (its line edits yielded) before its sentence removal raises
    docs.append(Document("bad", f"{NAV[0]}\n{repeated}{repeated}", "web", annotations={"quality_score": 0.1}))
    config = LineDedupConfig(max_occurrences=1, min_words=1), SentenceDedupConfig(max_occurrences=1, min_words=1)
    with TestPipeline() as p:
        out = p | beam.Create(docs) | LineAndSentenceDedup(*config, joins=joins)
        outcomes = (out.kept | "K" >> beam.Map(lambda d: ("kept", d.id)),
                    out.removed | "R" >> beam.Map(lambda r: (r.reason, r.doc.id)),
                    out.errors | "E" >> beam.Map(lambda r: ("error", r.path))) | beam.Flatten()  # path: the id
        edits = out.edits | beam.Map(lambda e: (e[1], e[2])) | beam.CombinePerKey(sum)

        def check(rows):
            assert sorted(doc for _, doc in rows) == sorted(d.id for d in docs)  # each document once
            assert ("error", "bad") in rows and sum(kind == "kept" for kind, _ in rows) == 6

        assert_that(outcomes, check, label="outcomes")
        # NAV is in 7 documents and the notice in 6: all but the survivor edited, and "bad" not counted
        assert_that(edits, equal_to([("lines_removed", 5), ("documents_line_edited", 5), ("sentences_removed", 5),
                                     ("documents_sentence_edited", 5)]), label="edits")


# ------------------------------------------------------------------- the sentence table the removal reads

_TEXT_PIECES = st.lists(st.sampled_from(list("aZ9 .!?,;'\")]\t\n_-") + [
    "Mr", "e.g", "J", "word", "U.S", "…", "’", "“", "—", "\u00a0", "é", "Σ. ", "A long enough sentence", " Yes. "]),
    max_size=60)


@settings(max_examples=600, deadline=None)
@given(_TEXT_PIECES, st.sampled_from(["en", "de", None]), st.sampled_from([(10, 20), (1, 1), (3, 2)]),
       st.integers(0, 2 ** 32), st.booleans())
def test_without_sentences_from_the_table_is_without_sentences(pieces, lang, chars, seed, collapse):
    # the removal reads what the keys step computed (spans, keys, words): the same text, counts and words left as
    # splitting, normalising and hashing the text again, for any drop set (a table exists for ASCII-able texts)
    from corpusforge.pipeline.dedup.boilerplate import keyed_lines
    from corpusforge.pipeline.dedup.sentences import without_sentences

    text = "".join(pieces)
    records, table = keyed_lines(text, lang, *chars)
    assert records == line_records(text, lang, *chars)
    if table is None:
        assert not text.isascii()
        return
    keys = sorted({key for _, _, sentence_keys in records for key in sentence_keys})
    rng = random.Random(seed)
    drop = {key for key in keys if rng.random() < 0.5}
    assert without_sentences(text, lang, drop, chars[1], collapse, table) == \
        without_sentences(text, lang, drop, chars[1], collapse)


@pytest.mark.parametrize("lines_dropped,spill,joins", [(False, False, "side_input"), (True, False, "side_input"),
                                                      (False, True, "side_input"), (False, True, "shuffle"),
                                                      (True, True, "shuffle"), (False, False, "shuffle")])
def test_the_one_join_splits_a_documents_sentences_once_unless_a_line_went(monkeypatch, tmp_path, lines_dropped, spill,
                                                                          joins):
    # either join: the removal reads the keys step's sentence table instead of splitting the text again; a
    # document that lost a line is split again (its text changed), and the decisions are the same either way;
    # with a spill directory the tables wait there, and the documents carry references
    from corpusforge.pipeline.dedup import boilerplate, sentences
    from corpusforge.pipeline.document import Document

    calls = collections.Counter()
    for module in (boilerplate, sentences):
        original = module.sentence_spans

        def counted(text, lang=None, original=original):
            calls[text] += 1
            return original(text, lang)
        monkeypatch.setattr(module, "sentence_spans", counted)
    texts = [f"The words of document {'abcdef'[i] * 4} stand here. They say nothing else." for i in range(6)]
    docs = [Document(f"d{i}", f"{NAV[0] if lines_dropped else texts[i]}\n{texts[i]} {INLINE[0]}", "web",
                     annotations={"quality_score": i / 10}) for i in range(6)]
    config = LineDedupConfig(max_occurrences=1, min_words=1), SentenceDedupConfig(max_occurrences=1, min_words=1)
    with TestPipeline() as p:
        out = p | beam.Create(docs) | LineAndSentenceDedup(*config, joins=joins,
                                                           spill_dir=str(tmp_path) if spill else None)
        assert_that(out.kept | beam.Map(lambda d: d.id), equal_to([d.id for d in docs]))
    tables = sum(f.stat().st_size for f in tmp_path.glob("*.sentences"))
    from corpusforge.pipeline.dedup.sentence_split import sentence_spans  # not the counted one

    # each document's table (5 ints of 8 bytes a sentence) as a record of its own, with its 4-byte CRC-32
    assert tables == (sum(8 * 5 * len(sentence_spans(d.text)) + 4 for d in docs) if spill else 0)
    edited = 5  # all but the best-ranked document lose the notice (and, with lines_dropped, the NAV line)
    if joins == "shuffle" and not spill:  # no table through a shuffle of texts: the removal splits them again
        assert [calls[d.text] for d in docs] == [2] * 6  # each repeats a sentence of its own
        return
    assert all(calls[d.text] == 1 for d in docs)  # each text split by the keys step, not again by the removal
    # with a line gone, the text left is split once more (the table was of the text before)
    assert sum(calls.values()) == len(calls) == len(docs) + (edited if lines_dropped else 0)


def test_line_and_sentence_keys_are_signed_64_bit_which_beams_coder_writes_as_varints():
    # an int of 2**63 or more is pickled by Beam's default coder (~1 us each way, on half of the keys when they
    # were unsigned: every key record, light line record and drop crosses a stage boundary)
    from apache_beam.coders import FastPrimitivesCoder

    from corpusforge.pipeline.dedup.lines import line_key
    from corpusforge.pipeline.dedup.sentences import keyed_sentences

    keys = []
    for doc in corpus(40, seed=4):
        for key, _, sentence_keys in line_records(doc.text, None, 10, 20):
            keys += [key, *sentence_keys] if key is not None else list(sentence_keys)
        keys += [key for *_, key in keyed_sentences(doc.text, None, 20) if key is not None]
        keys += [line_key(line, 10) for line in doc.text.split("\n") if line_key(line, 10) is not None]
    assert len(keys) > 200 and all(-2 ** 63 <= key < 2 ** 63 for key in keys)
    assert min(keys) < 0 < max(keys)
    coder = FastPrimitivesCoder().get_impl()
    assert max(len(coder.encode(key)) for key in keys) <= 11  # a type byte and a varint: no pickled int
    assert len(coder.encode(2 ** 64 - 1)) > 11  # (what an unsigned key took)


def test_a_document_without_drops_passes_the_side_input_join_untouched(monkeypatch):
    # the removal's group is built only for a document that some drop or repeat names (through the dead-letter
    # wrapper, which the join looks inside); the others go on as they came, as the removal would give them
    from corpusforge.pipeline.dedup import boilerplate
    from corpusforge.pipeline.document import Document

    judged = []
    original = boilerplate._RemoveFn.process

    def counted(self, item):
        judged.append(item[0])
        return original(self, item)
    monkeypatch.setattr(boilerplate._RemoveFn, "process", counted)
    texts = [f"The words of document {'abcdefghi'[i] * 4} stand here." for i in range(9)]
    docs = [Document(f"d{i}", f"{texts[i]} {INLINE[0]}" if i < 6 else texts[i], "web",
                     annotations={"quality_score": i / 10}) for i in range(9)]
    config = LineDedupConfig(max_occurrences=1, min_words=1), SentenceDedupConfig(max_occurrences=1, min_words=1)
    with TestPipeline() as p:
        out = p | beam.Create(docs) | LineAndSentenceDedup(*config, joins="side_input")
        assert_that(out.kept | beam.Map(lambda d: (d.id, d.text)),
                    equal_to([(d.id, texts[i]) if i < 5 else (d.id, d.text) for i, d in enumerate(docs)]))
    assert sorted(judged) == [f"d{i}" for i in range(5)]  # d5 keeps the notice; d6-d8 hold none


def test_the_removal_reads_a_spilled_text_once_when_it_drops_lines_and_sentences(monkeypatch, tmp_path):
    # two documents sharing an id share their drops: the one without the dropped line loses no line, so its text
    # is the spilled one still when its sentences are dropped; one read of it, not one by each step
    import pickle

    from corpusforge.pipeline import spill
    from corpusforge.pipeline.dedup import boilerplate
    from corpusforge.pipeline.dedup.lines import line_key
    from corpusforge.pipeline.dedup.sentences import sentence_keys
    from corpusforge.pipeline.document import Document

    lines, sentences = LineDedupConfig(min_words=1), SentenceDedupConfig(min_words=1)
    nav, notice = NAV[0], "This notice is repeated on every page of the site."
    with_nav = Document("d", f"{nav}\nThe first text says one thing. {notice}", "web")
    without = Document("d", f"The second text says another thing. {notice}", "web")
    spiller = spill.TextSpiller(str(tmp_path))
    spiller.setup()
    docs = [pickle.loads(pickle.dumps(spiller(doc))) for doc in (with_nav, without)]  # as after a shuffle
    spiller.close()
    reads = []
    read_text = spill.read_text
    monkeypatch.setattr(spill, "read_text", lambda ref: reads.append(ref) or read_text(ref))
    notice_key, = sentence_keys(notice, None, sentences.min_sentence_chars)[0]
    group = {"doc": docs, "lines": [line_key(nav, lines.min_line_chars)], "sentences": [notice_key], "repeats": []}
    out = [doc.text for doc in boilerplate._RemoveFn(lines, sentences).process(("d", group))
           if isinstance(doc, Document)]
    assert out == ["The first text says one thing.", "The second text says another thing."]
    assert sorted(reads) == sorted(doc.text_ref for doc in docs)  # each text once


def _drawn_table(text: str, lang, rng: random.Random) -> bytes:
    """A sentence table of ``text`` (its ``sentence_spans``) with keys drawn from a small pool (0 among them, with
    and without HAS_KEY: a key of 0 counts only with the flag), so that drops and repeats both happen."""
    import array

    from corpusforge.pipeline.dedup.sentence_split import sentence_spans
    from corpusforge.pipeline.dedup.sentences import HAS_KEY, LAST_OF_LINE, TABLE_TYPECODE

    numbers = []
    for start, end, last in sentence_spans(text, lang):
        has_key = rng.random() < 0.8
        numbers += (start, end, (LAST_OF_LINE if last else 0) | (HAS_KEY if has_key else 0),
                    rng.choice([0, 1, -1, 2 ** 63 - 1, -2 ** 63, 7, 8]), rng.randrange(4))
    return array.array(TABLE_TYPECODE, numbers).tobytes()


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(list("aZ9 .!?,;'\")\t\r\n") + [
    "", "\n\n", "Mr", "word", "é", "’", "—", "\u00a0", "Σ. ", "ΟΔΟΣ", "İ", "。", "！", "」", "…", "漢字です。", "中文句子！",
    "\ud800", "\udfff", "x\udc80. ", "A long enough sentence", " Yes. ", "\n. ", "   "]), max_size=50),
    st.sampled_from(["en", "zh", "ja", None]), st.integers(0, 2 ** 32), st.booleans())
def test_without_sentences_in_table_is_its_reference_on_drawn_texts(pieces, lang, seed, collapse):
    # the fast loop (one pass five numbers at a time, a sentence that goes settles its line) gives what the
    # reference's loop gives: the text left, byte for byte, the counts and the words left, on any text and table
    from corpusforge.pipeline.dedup.boilerplate import keyed_lines
    from corpusforge.pipeline.dedup.sentences import (
        without_sentences_in_table, without_sentences_in_table_reference,
    )

    text, rng = "".join(pieces), random.Random(seed)
    tables = [_drawn_table(text, lang, rng)]
    computed = keyed_lines(text, lang, 3, 2)[1]
    if computed is not None:
        tables.append(computed)
    for table in tables:
        keys = sorted(set(array_keys(table)))
        for drop in (set(), set(keys), {key for key in keys if rng.random() < 0.5}, {0}):
            assert without_sentences_in_table(text, table, drop, collapse) == \
                without_sentences_in_table_reference(text, table, drop, collapse)


def array_keys(table: bytes) -> list[int]:
    import array

    from corpusforge.pipeline.dedup.sentences import TABLE_TYPECODE

    return array.array(TABLE_TYPECODE, table)[3::5].tolist()


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(list("aZ9 .!?,;'\")\t\n") + [
    "", "\n\n", "Mr", "word", "é", "Über", "’", "—", "\u00a0", "Σ. ", "ΟΔΟΣ", "İ", "…", "Привет мир. ", "漢字です。",
    "中文！", "한국어 문장. ", "\ud800", "\udfff", "x\udc80. ", "A long enough sentence", " Yes. ", "\n. ", "   "]),
    max_size=50), st.sampled_from(["en", "de", "zh", None]), st.sampled_from([(10, 20), (1, 1), (3, 2)]),
    st.integers(0, 2 ** 32), st.booleans())
def test_a_non_ascii_texts_table_removes_as_splitting_it_again(pieces, lang, chars, seed, collapse):
    # a text that ascii_word_copy cannot make ASCII has a table too unless a sentence holds a no-space script
    # (its words count in hundredths, rounded once for the text left): the same text left, counts and words
    from corpusforge.pipeline.dedup.boilerplate import keyed_lines
    from corpusforge.pipeline.dedup.sentences import without_sentences
    from corpusforge.pipeline.words import has_no_space_script

    text = "".join(pieces)
    records, table = keyed_lines(text, lang, *chars)
    assert records == line_records(text, lang, *chars)
    if table is None:
        assert has_no_space_script(text)
        return
    keys = sorted({key for _, _, sentence_keys in records for key in sentence_keys})
    rng = random.Random(seed)
    for drop in (set(keys), {key for key in keys if rng.random() < 0.5}):
        assert without_sentences(text, lang, drop, chars[1], collapse, table) == \
            without_sentences(text, lang, drop, chars[1], collapse)


def test_an_accented_or_greek_text_has_a_table_and_a_cjk_one_none():
    from corpusforge.pipeline.dedup.boilerplate import keyed_lines

    assert keyed_lines("Ünïcode wörds. Σας ευχαριστώ.\nÇa va.", "en", 1, 1)[1] is not None
    assert keyed_lines("Ünïcode wörds. 漢字です。", "en", 1, 1)[1] is None


def test_a_tables_word_counts_are_word_parts_counts_for_every_character_below_u0800():
    # keyed_lines counts a sentence whose characters are all below U+0800 by its spaces (no script written without
    # spaces is down there); word_parts, the count without_sentences adds up, agrees for every such character: in a
    # word, alone, beside a digit, doubled (marks, separators and spaces of that range included)
    import array

    from corpusforge.pipeline.dedup.boilerplate import keyed_lines
    from corpusforge.pipeline.dedup.sentences import TABLE_TYPECODE
    from corpusforge.pipeline.dedup.text import normalized_bytes, word_parts

    for code in range(0x80, 0x800):
        c = chr(code)
        text = f"Ab{c}cd {c} e{c}0f{c}{c} ok. Then {c}x y.\n{c}"
        numbers = array.array(TABLE_TYPECODE, keyed_lines(text, "en", 1, 1)[1])
        for start, end, count in zip(numbers[0::5], numbers[1::5], numbers[4::5]):
            joined = b" ".join(normalized_bytes(text[start:end]).split())
            assert count == (word_parts(joined)[0] if joined else 0), (hex(code), text[start:end])


# keyed_lines' whole-text path (a text that ascii_word_copy makes ASCII: slices of one normalisation, a one-sentence
# line keyed by its sentence's key) against keyed_lines_by_line, its definition: records and table byte for byte,
# on the inputs the path could break on (word separators, empty lines, lines of one sentence, \r, runs of spaces,
# terminators and closers, lone surrogates and CJK, which send the text down the other path, huge lines).
_KEYED_PIECES = list("aZ9 .!?,;:'\")\t\r\n_") + [
    "", "\n\n", "\n \n", "   ", "Mr", "e.g", "J", "word", "’", "“", "—", "\u00a0", "\u2009", "…", "é", "Σ", "漢字です。",
    "\ud800", "x\udc80. ", "A long enough sentence", " Yes. ", "\n. ", "This article first appeared here. ",
    "as follows: This article", "x" * 25, "Home | News | Sport"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_KEYED_PIECES), max_size=60), st.sampled_from(["en", "de", "zh", None]),
       st.sampled_from([(10, 20), (1, 1), (3, 2), (30, 5), (20, 20)]))
def test_keyed_lines_whole_text_path_is_keyed_lines_by_line(pieces, lang, chars):
    from corpusforge.pipeline.dedup.boilerplate import keyed_lines, keyed_lines_by_line

    text = "".join(pieces)
    assert keyed_lines(text, lang, *chars) == keyed_lines_by_line(text, lang, *chars)


@pytest.mark.parametrize("text", [
    "", "\n", "\n\n\n", "One whole sentence on its own line.", "Short.\n\nA line of one sentence, long enough.\n",
    "First sentence here. Second one here.\nx\n\nLast line: This article first appeared here",
    "\r\nA line after a carriage return. Then more.\r\n", "Quotes “like these” — and dashes… Then.\u00a0End.",
    "word " * 20_000 + ". Next sentence. " + "y" * 100_000 + "\n" + "z. " * 30_000])
def test_keyed_lines_whole_text_path_on_chosen_texts(text):
    from corpusforge.pipeline.dedup.boilerplate import keyed_lines, keyed_lines_by_line

    for chars in ((10, 20), (1, 1), (25, 5)):
        assert keyed_lines(text, "en", *chars) == keyed_lines_by_line(text, "en", *chars)
    assert keyed_lines(text, "en", 10, 20)[0] == line_records_reference(text, "en", 10, 20)
