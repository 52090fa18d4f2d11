"""Annotations and removal details coded as typed rows (pipeline/annotation_rows.py through DocumentCoder): the
same dicts come back (keys, key order, value types) as pickling gives them, in fewer bytes; anything else is
coded as a dict, as before."""
import multiprocessing
import pickle
import random

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import HealthCheck, given, settings, strategies as st

from corpusforge.pipeline.annotation_rows import Rows
from corpusforge.pipeline.build import shard_schemas
from corpusforge.pipeline.config import BuildConfig
from corpusforge.pipeline.document import Document, Removed
from corpusforge.pipeline.document_coder import DocumentCoder, Documents, document_coders
from tests.pipeline.test_document_coder import _corpus_texts, _state


def _schemas():
    return shard_schemas(BuildConfig())  # every stage on, PII included


ROWS = Rows.of_schemas(_schemas())


def _value(rng: random.Random, kind: pa.DataType):
    """A value of an Arrow field's type, as a stage would store it (None now and then)."""
    if rng.random() < 0.1:
        return None
    if pa.types.is_struct(kind):
        return {kind.field(i).name: _value(rng, kind.field(i).type) for i in range(kind.num_fields)}
    if pa.types.is_boolean(kind):
        return rng.random() < 0.5
    if pa.types.is_integer(kind):
        return rng.randrange(10 ** 6)
    if pa.types.is_floating(kind):
        return rng.random()
    return rng.choice(["en", "fr", "de"])


def _annotations(rng: random.Random, stages: int = 2) -> dict:
    """A build's annotations after its quality stage (and PII stage): the declared fields in declared order."""
    kind = _schemas()["docs"].field("annotations").type
    names = [kind.field(i).name for i in range(kind.num_fields) if kind.field(i).name != "other"]
    if stages == 1:
        names = [n for n in names if not n.startswith("pii_")]
    return {name: _value(rng, kind.field(name).type) for name in names}


def _round_trip(coder: DocumentCoder, value):
    back = coder.decode(coder.encode(value))
    assert _state(back) == _state(pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL)))
    return back


def _is_row(coder: DocumentCoder, doc: Document) -> bool:
    from corpusforge.pipeline.document_coder import _fields_of

    return type(_fields_of(doc, coder._fallback_coder.rows)[4]) is tuple


def test_declared_annotations_come_back_the_same_in_fewer_bytes():
    rng = random.Random(0)
    plain, typed = DocumentCoder(), DocumentCoder(rows=ROWS)
    sizes = {"plain": 0, "typed": 0}
    for i, text in enumerate(_corpus_texts()[:60]):
        doc = Document(f"web/{i}", text, "web", {"url": f"https://example.org/{i}"}, _annotations(rng, 1 + i % 2))
        back = _round_trip(typed, doc)
        assert back == doc and list(back.annotations) == list(doc.annotations)
        assert _is_row(typed, doc)
        bare = len(plain.encode(doc._evolve(annotations={})))
        sizes["plain"] += len(plain.encode(doc)) - bare
        sizes["typed"] += len(typed.encode(doc)) - bare
    assert sizes["typed"] < sizes["plain"] / 3  # the keys are not written
    details = {"lang": "en", "score": 0.5, "quality": doc.annotations["quality"]}
    removed = Removed(doc, "quality", "gopher_short_doc", details)
    back = _round_trip(typed, removed)
    assert type(back) is Removed and back == removed and list(back.details["quality"]) == list(details["quality"])
    assert typed._fallback_coder.encode(removed)[:1] == b"\x04"  # a Removed is written as its fields, not pickled
    assert len(typed.encode(removed)) < len(plain.encode(removed)) - 800


def test_a_batch_of_documents_writes_its_annotations_as_rows():
    rng = random.Random(1)
    docs = Documents(Document(f"d{i}", f"text {i}", "web", {}, _annotations(rng)) for i in range(20))
    typed = DocumentCoder(rows=ROWS)
    back = _round_trip(typed, docs)
    assert type(back) is Documents and back == docs
    assert len(typed.encode(docs)) < len(DocumentCoder().encode(docs)) / 2


def test_dicts_that_are_no_row_are_coded_as_dicts_and_come_back():
    rng = random.Random(2)
    base = _annotations(rng)
    reordered = {"lang_score": base["lang_score"], "lang": base["lang"], "quality": base["quality"]}
    undeclared = {**base, "mine": [1, 2]}
    plain, typed = DocumentCoder(), DocumentCoder(rows=ROWS)
    for annotations in (reordered, undeclared, {1: "int key"}, {}):
        doc = Document("x", "text", "web", {}, annotations)
        assert typed.encode(doc) == plain.encode(doc)  # written as today
        assert list(_round_trip(typed, doc).annotations) == list(annotations)
    # Inside a row: a declared struct holding something else (a list, a dict of other keys, a tuple), a leaf
    # holding a dict or a tuple, numpy and big values: carried as they are.
    import numpy as np

    odd = dict(base, quality=[1, 2], pii_entities={"NOT_AN_ENTITY": 1}, lang=("x", {"y": 1}),
               lang_score=np.float32(0.5))
    odd["pii_count"] = 2 ** 80
    for annotations in (odd, dict(base, quality=("a", "b")), dict(base, quality={**base["quality"], "extra": 1})):
        doc = Document("y", "text", "web", {}, annotations)
        assert list(_round_trip(typed, doc).annotations) == list(annotations)
    assert _is_row(typed, Document("y", "text", "web", {}, odd))
    # A document whose annotations are a tuple (a row would be mistaken for it) is pickled, and kept.
    assert typed._fallback_coder.encode(Document("t", "text", "web", {}, ("a",)))[:1] == b"\x00"
    assert _round_trip(typed, Document("t", "text", "web", {}, ("a",))).annotations == ("a",)


_declared_names = ["lang", "lang_score", "quality", "pii_count", "pii_entities"]
_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5) | st.tuples(st.integers())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_declared_names + ["other", "x"]), unique=True, max_size=6),
       st.lists(st.sampled_from(["length", "junk", "gopher", "blocklist", "c4", "y"]), unique=True, max_size=5),
       st.lists(_leaf, min_size=12, max_size=12), st.booleans())
def test_any_subset_or_order_of_declared_keys_comes_back_as_pickling_gives_it(top, families, leaves, sort):
    if sort:  # declared order: a row
        top = sorted(top, key=lambda n: _declared_names.index(n) if n in _declared_names else 99)
    leaves = iter(leaves)
    annotations = {}
    for name in top:
        if name == "quality":
            length = {"n_chars": next(leaves), "n_words": next(leaves)}
            annotations[name] = {f: (length if f == "length" else next(leaves)) for f in families}
        elif name == "pii_entities":
            annotations[name] = {"EMAIL_ADDRESS": next(leaves)}
        else:
            annotations[name] = next(leaves)
    doc = Document("h", "text", "web", {}, annotations)
    typed = DocumentCoder(rows=ROWS)
    for value in (doc, Removed(doc, "dedup", "exact_duplicate", dict(annotations)), Documents([doc, doc])):
        _round_trip(typed, value)
        _round_trip(typed, value)  # the second time through the compiled shape


def test_a_row_is_refused_by_a_coder_of_other_fields():
    doc = Document("a", "text", "web", {}, _annotations(random.Random(3)))
    encoded = DocumentCoder(rows=ROWS).encode(doc)
    config = BuildConfig()
    config.pii.enabled = False
    other = DocumentCoder(rows=Rows.of_schemas(shard_schemas(config)))
    with pytest.raises(ValueError, match="not written for the annotations fields"):
        other.decode(encoded)


def _decode_in_a_fresh_process(coder_and_encoded):
    coder_bytes, encoded = coder_and_encoded
    coder = pickle.loads(coder_bytes)
    return [coder.decode(e) for e in encoded], [coder.encode(d) for d in [coder.decode(e) for e in encoded]]


def test_a_worker_process_decodes_a_row_it_has_never_seen():
    rng = random.Random(4)
    coder = DocumentCoder(rows=ROWS)
    docs = [Document(f"d{i}", "text", "web", {}, _annotations(rng, 1 + i % 2)) for i in range(6)]
    encoded = [coder.encode(d) for d in docs]
    coder_bytes = pickle.dumps(coder)  # as Beam ships a PCollection's coder to a worker
    assert len(coder_bytes) < 8000  # the declared fields travel, not the compiled shapes
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        decoded, reencoded = pool.map(_decode_in_a_fresh_process, [(coder_bytes, encoded)])[0]
    assert [_state(d) for d in decoded] == [_state(d) for d in docs]
    assert reencoded == encoded  # the same bytes whichever process writes them


def test_a_build_s_coders_carry_its_rows_and_rows_cross_a_shuffle_on_disk(tmp_path):
    from apache_beam.coders import typecoders

    from corpusforge.core.disk_grouping import GroupByKey, spilling_to

    rng = random.Random(5)
    docs = [Document(f"{i}", f"text {i}", "web", {}, _annotations(rng)).with_ref(("/s", i, 6)) for i in range(30)]
    with document_coders(ROWS), spilling_to(str(tmp_path / "runs")):
        coder = typecoders.registry.get_coder(object)
        assert type(coder) is DocumentCoder and coder._fallback_coder.rows == ROWS
        assert typecoders.registry.get_coder(Document)._fallback_coder.rows == ROWS
        with beam.Pipeline() as pipeline:
            grouped = (pipeline | beam.Create(docs) | beam.Map(lambda d: (int(d.id) % 3, d)) | GroupByKey()
                       | beam.FlatMap(lambda kv: [(d.id, repr(_state(d.annotations))) for d in kv[1]]))
            assert_that(grouped, equal_to([(d.id, repr(_state(d.annotations))) for d in docs]))
    assert typecoders.registry.get_coder(Document)._fallback_coder.rows != ROWS  # outside the block: no rows


_SEEN: list = []  # what the quality pipeline's documents were coded as (the in-process runner: one process)


def _seen(kind, doc, details=None):
    rows = ROWS
    coder = DocumentCoder(rows=rows)
    _SEEN.append((kind, _is_row(coder, doc), not details or type(rows.details.encode(details)) is tuple))


def test_the_quality_stage_s_annotations_are_rows_of_its_declared_fields():
    # What the stage writes and what it declares (annotation_fields) must stay in the same order, or every
    # document would silently be coded as a dict again.
    from apache_beam.testing.test_pipeline import TestPipeline

    from corpusforge.pipeline.quality.stage import Quality

    _SEEN.clear()
    texts = _corpus_texts()
    docs = [Document(f"web/{i}", text, "web") for i, text in enumerate(texts[:20] + texts[-40:])]
    with TestPipeline() as pipeline:
        out = pipeline | beam.Create(docs) | Quality(BuildConfig().quality)
        _ = out.kept | "Kept" >> beam.Map(lambda d: _seen("kept", d))
        _ = out.removed | "Removed" >> beam.Map(lambda r: _seen("removed", r.doc, r.details))
    assert {kind for kind, _, _ in _SEEN} == {"kept", "removed"}
    assert all(row and details for _, row, details in _SEEN), _SEEN


def test_the_stream_coder_writes_the_reference_bytes_with_rows():
    from apache_beam.coders import coders

    from corpusforge.pipeline.document_coder import _DocumentFallbackCoderReference

    rng = random.Random(6)
    fast, reference = DocumentCoder(rows=ROWS), DocumentCoder(_DocumentFallbackCoderReference(ROWS))
    doc = Document("a", "text é", "web", {"u": 1}, _annotations(rng))
    removed = Removed(doc, "dedup", "near_duplicate", {"survivor_id": "b", "cluster_size": 2, "similarity": 0.9})
    for value in (doc, doc.with_ref(("/s", 0, 4)), removed, Documents([doc, doc]), Documents([doc, removed]),
                  [doc, removed], ("k", removed)):
        assert fast.encode(value) == reference.encode(value)
        assert _state(fast.decode(fast.encode(value))) == _state(reference.decode(reference.encode(value)))
    estimate, _ = coders.WindowedValueCoder(fast).get_impl().get_estimated_size_and_observables(
        beam.transforms.window.GlobalWindows.windowed_value(removed))
    assert 0 < estimate < 2 * len(reference.encode(removed))  # a sampled Removed is sized, not pickled


def test_a_str_subclass_key_is_coded_the_same_whatever_the_coder_met_first():
    """A key that is a str subclass (numpy.str_) equal to a declared name: the same bytes (and the same dict back)
    from a coder that met the plain keys first as from one that met the subclass first; before, the first dict
    decided, for every later dict of those keys in that process, whether they were rows."""

    class Key(str):
        pass

    annotations = _annotations(random.Random(7), 1)
    plain = Document("a", "text", "web", {}, annotations)
    subclass = Document("a", "text", "web", {}, {Key(k) if k == "lang" else k: v for k, v in annotations.items()})
    # two processes' coders: Rows of their own (a Row's compiled shapes are per process, not pickled)
    plain_first, subclass_first = (DocumentCoder(rows=pickle.loads(pickle.dumps(ROWS))) for _ in range(2))
    written = [plain_first.encode(plain), plain_first.encode(subclass)]
    assert [subclass_first.encode(subclass), subclass_first.encode(plain)] == written[::-1]
    assert _is_row(subclass_first, plain) and _is_row(subclass_first, subclass)
    assert type(next(iter(subclass_first.decode(written[1]).annotations))) is str


def test_more_shapes_of_one_key_tuple_than_the_tries_are_compiled_once_each(monkeypatch):
    """Dicts of the same top-level keys whose structs are None in some and dicts in others (quality families not
    measured), more shapes than the encoders tried per key tuple, in turn: each shape is compiled once, not every
    time it comes back (~200 us a dict, 50x what a row saves)."""
    from corpusforge.pipeline import annotation_rows

    compiled = []
    compile_encoder = annotation_rows._compile_encoder
    monkeypatch.setattr(annotation_rows, "_compile_encoder", lambda *a: compiled.append(a[0]) or compile_encoder(*a))
    base = _annotations(random.Random(0), 1)  # every quality family a dict
    families = list(base["quality"])
    assert all(type(v) is dict for v in base["quality"].values())
    shapes = [{**base, "quality": {f: (v if i < k else None) for i, (f, v) in enumerate(base["quality"].items())}}
              for k in range(len(families) + 1)]
    assert len(shapes) > annotation_rows._TRIES
    coder = DocumentCoder(rows=pickle.loads(pickle.dumps(ROWS)))
    for _ in range(5):
        for annotations in shapes:
            _round_trip(coder, Document("a", "text", "web", {}, annotations))
    assert len(compiled) == len(set(compiled)) == len(shapes)


def test_a_row_is_refused_by_a_coder_that_holds_no_fields():
    # as by a coder of other fields: a ValueError that says so, not an AttributeError of None
    annotations = _annotations(random.Random(0), 1)
    doc = Document("a", "text", "web", {}, annotations)
    removed = Removed(Document("b", "text", "web", {}, {}), "quality", "gopher", {"quality": annotations["quality"]})
    for value, label in ((doc, "annotations"), (removed, "details")):
        encoded = DocumentCoder(rows=ROWS).encode(value)
        with pytest.raises(ValueError, match=f"a row of {label} reached a coder that holds no declared"):
            DocumentCoder().decode(encoded)
