"""DocumentCoder (pipeline/document_coder.py) against its reference, pickling: the same document comes back."""
import math
import pickle
import random

import apache_beam as beam
import numpy as np
from apache_beam.coders import coders, typecoders
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import HealthCheck, given, settings, strategies as st

from corpusforge.pipeline.document import Document, Removed
from corpusforge.pipeline.document_coder import DocumentCoder, document_coders
from corpusforge.pipeline.sample import generate, texts


def _state(value):
    """Everything that tells two values apart: type and attributes, recursively (``==`` ignores that a float
    was a numpy float, that a list was a tuple, and text_ref and origin, which are compare=False)."""
    if isinstance(value, (Document, Removed)):
        return type(value).__name__, {k: _state(v) for k, v in value.__dict__.items()}
    if isinstance(value, dict):
        return type(value).__name__, [(_state(k), _state(v)) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [_state(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return type(value).__name__, "nan"
    return type(value).__name__, value


def _round_trips(value):
    coder = DocumentCoder()
    fast = coder.decode(coder.encode(value))
    reference = pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))  # what PickleCoder gave
    assert _state(fast) == _state(reference)
    return fast


def _corpus_texts():
    rng = random.Random(3)
    return [*generate._paragraphs()[:200], *texts.junk_pages(rng), *(text for _, text in texts.FOREIGN)]


def test_corpus_documents_come_back_as_pickling_gives_them():
    for i, text in enumerate(_corpus_texts()):
        doc = Document(f"web/{i}", text, "web", {"url": f"https://example.org/{i}", "n": i},
                       {"lang": "en", "lang_score": 0.93, "quality": {"words": len(text.split())}})
        assert _round_trips(doc) == doc
        spilled = _round_trips(doc.with_ref(("/spill/a.txt", 10 * i, len(text.encode()))))
        assert "text" not in spilled.__dict__ and spilled.text_ref == ("/spill/a.txt", 10 * i, len(text.encode()))
        _round_trips(doc._evolve(origin=(0, "part-1.jsonl", i)))


def test_documents_inside_other_values_and_values_it_cannot_write_as_fields():
    doc = Document("a", "text", "web", annotations={"score": np.float32(0.5), "big": 2 ** 80, "tags": ("x", "y")})
    _round_trips([doc, doc])  # a batch of the side-input joins
    _round_trips(("a", doc))  # a keyed document
    _round_trips(Removed(doc, "dedup", "exact_duplicate", {"survivor_id": "b"}))
    surrogate = Document("s", "half a pair: \ud800", "web")  # UTF-8 cannot hold it: pickled
    assert DocumentCoder()._fallback_coder.encode(surrogate)[:1] == b"\x00"  # the pickled tag
    assert _round_trips(surrogate) == surrogate
    odd = Document("o", "text", "web")
    odd.extra = 1  # an attribute a Document does not declare: pickled, kept
    assert _round_trips(odd).extra == 1
    assert _round_trips(Document("n", None, "web")).text is None  # not a str: pickled


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(), st.text(max_size=20), st.dictionaries(st.text(max_size=8), _json, max_size=4),
       st.dictionaries(st.text(max_size=8), _json, max_size=4), st.booleans())
def test_any_document_comes_back_as_pickling_gives_it(text, doc_id, metadata, annotations, spilled):
    doc = Document(doc_id, text, "web", metadata, annotations)
    if spilled:
        doc = doc.with_ref(("/spill/b.txt", 0, 7))
    _round_trips(doc)


def test_keys_are_coded_as_beam_codes_them():
    key = ("id", 3, b"digest")
    ours = DocumentCoder().as_deterministic_coder("step")
    beams = coders.FastPrimitivesCoder().as_deterministic_coder("step")
    assert type(ours) is type(beams) and ours.encode(key) == beams.encode(key)


def test_untyped_collections_get_it_inside_the_block_only():
    default = typecoders.registry.get_coder(object)
    assert type(default) is coders.FastPrimitivesCoder
    assert type(typecoders.registry.get_coder(Document)) is DocumentCoder
    docs = [Document(str(i), f"text {i}", "web", annotations={"i": i}).with_ref(("/s", i, 6)) for i in range(20)]
    with document_coders():
        with document_coders():  # nested builds
            assert type(typecoders.registry.get_coder(object)) is DocumentCoder
        assert type(typecoders.registry.get_coder(object)) is DocumentCoder
        with beam.Pipeline() as pipeline:  # documents cross a GroupByKey and back
            grouped = (pipeline | beam.Create(docs) | beam.Map(lambda d: (int(d.id) % 3, d)) | beam.GroupByKey()
                       | beam.FlatMap(lambda kv: [(d.id, d.text_ref, "text" in d.__dict__) for d in kv[1]]))
            assert_that(grouped, equal_to([(d.id, d.text_ref, False) for d in docs]))
    assert type(typecoders.registry.get_coder(object)) is coders.FastPrimitivesCoder


def _reference_coder():
    from corpusforge.pipeline.document_coder import _DocumentFallbackCoderReference

    return DocumentCoder(_DocumentFallbackCoderReference())


def _same_bytes_as_the_reference(value):
    """The stream coder writes the bytes CallbackCoderImpl wrote, nested (in lists, keyed, windowed) or not."""
    from apache_beam.transforms.window import GlobalWindows

    fast, reference = DocumentCoder(), _reference_coder()
    for wrapped in (value, [value, value], ("k", value)):
        assert fast.encode(wrapped) == reference.encode(wrapped)
        assert _state(fast.decode(fast.encode(wrapped))) == _state(reference.decode(reference.encode(wrapped)))
    windowed = GlobalWindows.windowed_value([value, 3])
    fast_wv, reference_wv = coders.WindowedValueCoder(fast), coders.WindowedValueCoder(reference)
    assert fast_wv.encode(windowed) == reference_wv.encode(windowed)
    assert _state(fast_wv.decode(fast_wv.encode(windowed)).value) == _state(reference_wv.decode(reference_wv.encode(windowed)).value)


def test_stream_coder_writes_the_reference_bytes_on_corpus_documents():
    for i, text in enumerate(_corpus_texts()):
        doc = Document(f"web/{i}", text, "web", {"url": f"https://example.org/{i}"}, {"lang": "en"})
        _same_bytes_as_the_reference(doc)
        _same_bytes_as_the_reference(doc.with_ref(("/spill/a.txt", i, 5)))
    _same_bytes_as_the_reference(Document("s", "half a pair: \ud800", "web"))  # pickled
    _same_bytes_as_the_reference(Removed(Document("r", "text", "web"), "dedup", "exact_duplicate"))
    _same_bytes_as_the_reference(2 ** 64 - 1)  # an unsigned 64-bit hash: beyond the int64 Beam writes itself


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(), st.text(max_size=20), st.dictionaries(st.text(max_size=8), _json, max_size=4), st.booleans())
def test_stream_coder_writes_the_reference_bytes_on_any_document(text, doc_id, annotations, spilled):
    doc = Document(doc_id, text, "web", {}, annotations)
    _same_bytes_as_the_reference(doc.with_ref(("/spill/c.txt", 0, 1)) if spilled else doc)


def test_a_sampled_size_is_estimated_without_encoding_the_document(monkeypatch):
    import corpusforge.pipeline.document_coder as module

    doc = Document("a", "x" * 5000, "web")
    exact = len(_reference_coder().encode([doc] * 4))
    coder = DocumentCoder()
    coder._fallback_coder.get_impl().fields = None  # an estimate neither encodes the fields...
    monkeypatch.setattr(module, "pickle", None)  # ...nor pickles
    estimate, _ = coder.get_impl().get_estimated_size_and_observables([doc] * 4)
    assert 0.8 * exact <= estimate <= 1.2 * exact


def test_a_batch_of_documents_is_coded_as_columns_and_comes_back_as_pickling_gives_it():
    from corpusforge.pipeline.document_coder import Documents

    docs = [Document(f"web/{i}", text, "web", {"url": f"https://example.org/{i}"},
                     {"lang": "en", "quality": {"words": len(text.split())}}) for i, text in enumerate(_corpus_texts())]
    docs[1] = docs[1].with_ref(("/spill/a.txt", 10, 5))  # travels without its text
    docs[2] = docs[2]._evolve(origin=(0, "part-1.jsonl", 2))
    batch = Documents(docs)
    assert DocumentCoder()._fallback_coder.encode(batch)[:1] == b"\x02"  # the columns tag
    back = _round_trips(batch)
    assert type(back) is Documents and [d.id for d in back] == [d.id for d in docs] and "text" not in back[1].__dict__
    assert type(_round_trips(Documents())) is Documents
    # A member the columns cannot hold: a batch with another value is written as a list, one with a
    # text UTF-8 cannot hold is pickled; both come back whole.
    mixed = Documents([docs[0], ("not", "a document")])
    assert DocumentCoder()._fallback_coder.encode(mixed)[:1] == b"\x03"
    assert type(_round_trips(mixed)) is Documents
    surrogate = Documents([docs[0], Document("s", "half a pair: \ud800", "web")])
    assert DocumentCoder()._fallback_coder.encode(surrogate)[:1] == b"\x00"
    assert _round_trips(surrogate)[1].text == "half a pair: \ud800"
    for value in (batch, mixed, surrogate, ("shard", batch)):
        _same_bytes_as_the_reference(value)


def test_a_batch_of_documents_is_sized_from_its_first_documents_without_encoding():
    from corpusforge.pipeline.document_coder import Documents

    batch = Documents(Document(str(i), "x" * 1000, "web") for i in range(100))
    exact = len(_reference_coder().encode(batch))
    coder = DocumentCoder()
    coder._fallback_coder.get_impl().fields = None  # an estimate encodes nothing
    estimate, _ = coder.get_impl().get_estimated_size_and_observables(batch)
    assert abs(estimate - exact) < exact / 8


def test_batches_of_documents_group_on_disk_as_columns_and_come_back_whole(tmp_path):
    # The shard writer's Documents lists cross its GroupByShard, which groups on local disk with the pipeline's
    # element coder (corpusforge.core.disk_grouping): each list comes back a Documents of the same documents.
    from corpusforge.core.disk_grouping import GroupByKey, spilling_to
    from corpusforge.pipeline.document_coder import Documents

    batches = [(i % 3, Documents(Document(f"{i}/{j}", f"text {i} {j} é", "web", {"j": j},
                                          {"lang": "en"}).with_ref(("/s", j, 3)) for j in range(5)))
               for i in range(12)]
    with document_coders(), spilling_to(str(tmp_path / "runs")):
        with beam.Pipeline() as pipeline:
            grouped = (pipeline | beam.Create(batches) | GroupByKey()
                       | beam.FlatMap(lambda kv: [(kv[0], type(part).__name__, tuple(d.id for d in part),
                                                   all("text" not in d.__dict__ for d in part)) for part in kv[1]]))
            assert_that(grouped, equal_to([(k, "Documents", tuple(d.id for d in part), True) for k, part in batches]))


def test_a_batch_of_document_pairs_is_coded_as_columns_and_comes_back_as_pickling_gives_it():
    # line + sentence dedup's (document, sentence table) pairs waiting for its verdicts: one coder call, the
    # documents written as columns, not one fallback call per document
    from corpusforge.pipeline.document_coder import DocumentPairs

    docs = [Document(f"web/{i}", text, "web", {"url": f"https://example.org/{i}"}, {"lang": "en"})
            for i, text in enumerate(_corpus_texts())]
    docs[1] = docs[1].with_ref(("/spill/a.txt", 10, 5))  # travels without its text
    pairs = DocumentPairs((doc, value) for doc, value in zip(docs, [("/spill/t.bin", 0, 40), None, [1, 2, 3]] * 9))
    assert DocumentCoder()._fallback_coder.encode(pairs)[:1] == b"\x05"  # the pair columns tag
    back = _round_trips(pairs)
    assert type(back) is DocumentPairs and [(d.id, v) for d, v in back] == [(d.id, v) for d, v in pairs]
    assert "text" not in back[1][0].__dict__
    assert type(_round_trips(DocumentPairs())) is DocumentPairs
    # a member that is no (document, value) pair: written as a list; a text UTF-8 cannot hold: pickled
    mixed = DocumentPairs([pairs[0], ("not", "a document"), "neither"])
    assert DocumentCoder()._fallback_coder.encode(mixed)[:1] == b"\x06"
    assert type(_round_trips(mixed)) is DocumentPairs
    surrogate = DocumentPairs([pairs[0], (Document("s", "half a pair: \ud800", "web"), None)])
    assert DocumentCoder()._fallback_coder.encode(surrogate)[:1] == b"\x00"
    assert _round_trips(surrogate)[1][0].text == "half a pair: \ud800"
    for value in (pairs, mixed, surrogate, ("shard", pairs)):
        _same_bytes_as_the_reference(value)


def test_a_sampled_document_removal_or_batch_is_sized_without_calling_the_fallback_coder(monkeypatch):
    # Beam samples ~7 elements' sizes a document; each went through the compiled encoder's call of the
    # fallback on a counting stream (~6x the time of the estimate alone)
    from apache_beam.transforms.window import GlobalWindows

    from corpusforge.pipeline import document_coder
    from corpusforge.pipeline.document_coder import DocumentPairs, Documents

    doc = Document("web/1", "x" * 2000, "web", {"u": 1}, {"lang": "en"})
    batch = Documents(Document(str(i), "x" * 1000, "web") for i in range(100))
    values = [doc, doc.with_ref(("/s", 0, 9)), Removed(doc, "dedup", "exact_duplicate", {"survivor_id": "b"}),
              batch, list(batch), DocumentPairs((d, ("/s", 0, 9)) for d in batch)]
    exact = [len(_reference_coder().encode(value)) for value in values]
    impl = coders.WindowedValueCoder(DocumentCoder()).get_impl()

    def refuse(*args):
        raise AssertionError("a sampled size called the fallback coder")

    monkeypatch.setattr(document_coder._DocumentOrPickleImpl, "encode_to_stream", refuse)
    for value, size in zip(values, exact):
        estimate, observables = impl.get_estimated_size_and_observables(GlobalWindows.windowed_value(value))
        assert not observables and size / 2 <= estimate <= 2 * size + 100, (type(value), estimate, size)


def test_a_counted_size_holds_no_zero_buffer_larger_than_a_megabyte():
    # a batch of large documents counted on Beam's counting stream (its size samples) kept a zero buffer as large as
    # the batch's estimate for the rest of the process (50.9 MB for 256 documents of 200 KB): counted in pieces now
    from apache_beam.coders.slow_stream import ByteCountingOutputStream

    from corpusforge.pipeline import document_coder

    stream = ByteCountingOutputStream()
    document_coder._count(stream, 50_900_000)
    assert 50_900_000 * 7 / 8 <= stream.get_count() <= 50_900_000
    assert max(map(len, document_coder._ZEROS.values())) <= 1 << 20
