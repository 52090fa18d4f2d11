import contextlib
import gzip
import io
import json

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.config import InputConfig
from corpusforge.pipeline.document import Document, Rejected
from corpusforge.core.errors import UserError
from corpusforge.core.input_files import glob_root
from corpusforge.pipeline.readers import (ReadDocuments, check_inputs, detect_format, open_decompressed, read_file,
                                         records_from_file)


def _read(data: bytes, path: str, **spec):
    stream = open_decompressed(io.BytesIO(data), path)
    return list(records_from_file(stream, InputConfig(path=path, **spec), path, path, max_chars=1000))


def _reasons(items):
    return [(i.position, i.reason) for i in items if isinstance(i, Rejected)]


JSONL = b"\n".join([
    b'{"id": "a", "text": "first", "lang": "en"}',
    b'{"text": "no id"}',
    b'not json',
    b'{"text": 3}',
    b'{"id": "m"}',
    b'{"text": " \\n "}',
    b'{"text": "caf\xe9"}',
    b'"a string"',
    b'{"text": "' + b"x" * 1001 + b'"}',
    b'',
]) + b"\n"


def test_jsonl_every_bad_record_is_rejected_with_its_reason():
    items = _read(JSONL, "data/a.jsonl")
    docs = [i for i in items if isinstance(i, Document)]
    assert [(d.id, d.text, d.metadata) for d in docs][0] == ("a/a", "first", {"lang": "en"})
    assert docs[1].id.startswith("a/") and docs[1].text == "no id"
    assert _reasons(items) == [(2, "malformed_json"), (3, "non_string_text"), (4, "missing_text"), (5, "empty_text"),
                               (6, "invalid_utf8"), (7, "not_an_object"), (8, "oversize_record")]


def test_a_record_whose_conversion_raises_is_rejected_alone_and_the_file_reads_on(monkeypatch):
    from corpusforge.pipeline import readers

    original = readers._Context.repair_unicode

    def buggy(self, obj):
        if obj.get("text") == "no id":
            raise KeyError("no id")
        return original(self, obj)

    monkeypatch.setattr(readers._Context, "repair_unicode", buggy)
    items = _read(JSONL, "data/a.jsonl")
    assert _reasons(items)[0] == (1, "stage_error")
    assert [(i.detail, i.raw) for i in items if isinstance(i, Rejected) and i.reason == "stage_error"] == [
        ("read: KeyError: '…'", '{"text": "no id"}\n')]  # the message quoted the record: cut out
    assert len(_reasons(items)) == 8 and sum(isinstance(i, Document) for i in items) == 1  # the rest as before
    with pytest.raises(KeyError):
        list(records_from_file(open_decompressed(io.BytesIO(JSONL), "a.jsonl"), InputConfig(path="a.jsonl"),
                               "a.jsonl", "a.jsonl", max_chars=1000, fail_fast=True))


def test_derived_ids_are_stable_and_depend_on_position():
    first, second = _read(JSONL, "data/a.jsonl"), _read(JSONL, "data/a.jsonl")
    assert first[1].id == second[1].id
    shifted = _read(b"\n" + b'{"text": "x"}\n' + JSONL, "data/a.jsonl")
    assert shifted[2].id != first[1].id


@pytest.mark.parametrize("suffix,compress", [(".gz", lambda b: gzip.compress(b, mtime=0)),
                                              (".zst", lambda b: zstandard.ZstdCompressor().compress(b))])
def test_compressed_jsonl_and_truncation(suffix, compress):
    data = b"".join(json.dumps({"text": f"line {i} " * 20}).encode() + b"\n" for i in range(2000))
    whole = _read(compress(data), "x.jsonl" + suffix)
    assert len(whole) == 2000 and all(isinstance(i, Document) for i in whole)
    blob = compress(data)
    cut = _read(blob[: len(blob) // 2], "x.jsonl" + suffix)
    assert isinstance(cut[-1], Rejected) and cut[-1].reason == "truncated_compressed_file"
    assert all(isinstance(i, Document) for i in cut[:-1])


def test_parquet_and_arrow_rows():
    table = pa.table({"id": ["p1", None], "body": ["parquet text", None], "year": [2020, 2021]})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    items = _read(buf.getvalue(), "t.parquet", text_field="body")
    assert items[0].text == "parquet text" and items[0].metadata == {"year": 2020}
    assert _reasons(items) == [(1, "missing_text")]
    sink = io.BytesIO()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    assert [i.id for i in _read(sink.getvalue(), "t.arrow", text_field="body") if isinstance(i, Document)] == ["t/p1"]
    assert _reasons(_read(b"garbage", "t.parquet")) == [(-1, "unreadable_file")]


def test_text_per_file_and_per_line():
    assert [d.text for d in _read(b"one\ntwo\n", "a.txt")] == ["one\ntwo\n"]
    items = _read(b"one\n\ntwo\n\xff\n", "a.txt", text_unit="line")
    assert [d.text for d in items if isinstance(d, Document)] == ["one", "two"]
    assert _reasons(items) == [(3, "invalid_utf8")]


def test_format_detection_and_glob_root():
    assert detect_format("a/b.jsonl.zst") == "jsonl"
    assert detect_format("b.parquet") == "parquet"
    with pytest.raises(UserError, match="set format"):
        detect_format("b.dat")
    # CSV, which finetune and predict read: say what to do with it, not to set a format no reader has
    with pytest.raises(UserError, match=r"b.csv: build reads no CSV or TSV; write it as Parquet or JSON Lines first"):
        detect_format("b.csv")
    assert glob_root("data/web/*.jsonl") == "data/web/"
    assert glob_root("data/x.jsonl") == "data"


def test_missing_input_fails_before_work(tmp_path):
    with pytest.raises(UserError, match="matches no files"):
        check_inputs([InputConfig(path=str(tmp_path / "nothing*.jsonl"))])
    with pytest.raises(UserError, match="no inputs configured"):
        check_inputs([])


def test_read_documents_transform(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(b'{"id": "1", "text": "one"}\nbad\n')
    (tmp_path / "b.jsonl").write_bytes(b'{"id": "2", "text": "two"}\n')
    with TestPipeline() as p:
        docs, rejected = p | ReadDocuments([InputConfig(path=str(tmp_path / "*.jsonl"), name="web")], 1000)
        assert_that(docs | beam.Map(lambda d: (d.id, d.text, d.source)),
                    equal_to([("web/1", "one", "web"), ("web/2", "two", "web")]), label="Docs")
        assert_that(rejected | beam.Map(lambda r: (r.path, r.position, r.reason)),
                    equal_to([("a.jsonl", 1, "malformed_json")]), label="Rejected")


# ------------------------------------------------------------------------------------------------ encoding
def test_lone_surrogates_are_repaired_per_record():
    data = (b'{"id": "s\\udc00", "text": "abc \\ud800 def", "meta": {"k\\udfff": ["x\\ud83d"]}}\n'
            b'{"text": "pair \\ud83d\\ude00 ok"}\n')
    items = _read(data, "data/a.jsonl")
    assert all(isinstance(i, Document) for i in items)
    first, second = items
    assert first.text == "abc \ufffd def" and first.id == "a/s\ufffd"
    assert first.metadata == {"meta": {"k\ufffd": ["x\ufffd"]}}
    assert second.text == "pair \U0001F600 ok"  # a valid pair of escapes is one character, untouched
    for doc in items:  # every string of the record can be written as UTF-8
        doc.text.encode("utf-8"), doc.id.encode("utf-8"), json.dumps(doc.metadata, ensure_ascii=False).encode("utf-8")


def test_a_lone_surrogate_does_not_sink_a_spilled_read(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(b'{"id": "1", "text": "abc \\ud800 def"}\n{"id": "2", "text": "fine"}\n')
    with TestPipeline() as p:
        docs, rejected = p | ReadDocuments([InputConfig(path=str(tmp_path / "a.jsonl"))], 1000,
                                           spill_dir=str(tmp_path / "spill"))
        assert_that(docs | beam.Map(lambda d: (d.id, d.text)),
                    equal_to([("a/1", "abc \ufffd def"), ("a/2", "fine")]), label="Docs")
        assert_that(rejected, equal_to([]), label="Rejected")


BOM = b"\xef\xbb\xbf"
_COMPRESSORS = {"": lambda b: b, ".gz": lambda b: gzip.compress(b, mtime=0),
                ".zst": lambda b: zstandard.ZstdCompressor().compress(b),
                ".bz2": lambda b: __import__("bz2").compress(b), ".xz": lambda b: __import__("lzma").compress(b)}


@pytest.mark.parametrize("suffix", list(_COMPRESSORS))
def test_a_bom_and_crlf_are_accepted_in_jsonl(suffix):
    data = BOM + b'{"id": "1", "text": "one"}\r\n{"id": "2", "text": "two"}\r\n\r\n'
    items = _read(_COMPRESSORS[suffix](data), "a.jsonl" + suffix)
    assert [(i.id, i.text) for i in items] == [("a/1", "one"), ("a/2", "two")]
    # files concatenated from several BOM-marked files: a BOM can never start valid JSON, so it goes anywhere
    items = _read(_COMPRESSORS[suffix](data * 2), "a.jsonl" + suffix)
    assert not _reasons(items) and len(items) == 4


@pytest.mark.parametrize("suffix", list(_COMPRESSORS))
def test_a_bom_and_crlf_are_accepted_in_text(suffix):
    data = BOM + b"one\r\ntwo\r\n"
    assert [d.text for d in _read(_COMPRESSORS[suffix](data), "a.txt" + suffix)] == ["one\r\ntwo\r\n"]
    items = _read(_COMPRESSORS[suffix](data), "a.txt" + suffix, text_unit="line")
    assert [d.text for d in items] == ["one", "two"]


def test_repairs_are_counted_as_read_edits(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(b'{"text": "abc \\ud800 def \\udfff"}\n{"text": "x\\ud800"}\n{"text": "ok"}\n')
    with TestPipeline() as p:
        read = ReadDocuments([InputConfig(path=str(tmp_path / "a.jsonl"))], 1000)
        docs, rejected = p | read
        assert_that(read.edits,
                    equal_to([("read", "lone_surrogates_repaired", 2)]), label="Edits")


# ------------------------------------------------------------------------------------------------------ ids
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_an_id_that_is_not_a_string_or_an_integer_stays_in_metadata_and_is_counted(tmp_path, fmt):
    # pandas writes an id column with a gap as floats (5001.0, NaN): the value was dropped with nothing said
    ids = [5001.0, 1.5, True, [1, 2], None, 7, "x", float("nan")]
    path = tmp_path / f"a.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps({"id": i, "text": f"doc {n}"}) + "\n" for n, i in enumerate(ids[:7])))
    else:  # a float column, as pandas writes one with a missing value
        pq.write_table(pa.table({"id": [5001.0, 1.5, float("nan")], "text": ["doc 0", "doc 1", "doc 7"]}), path)
    counters = {}
    stream = open_decompressed(io.BytesIO(path.read_bytes()), str(path))
    docs = list(records_from_file(stream, InputConfig(path=str(path)), str(path), path.name, 1000, counters))
    kept = {d.text: (d.id, d.metadata) for d in docs}
    assert kept["doc 0"][1] == {"id": 5001.0} and kept["doc 1"][1] == {"id": 1.5}
    assert kept["doc 0"][0] != "a/5001.0" and kept["doc 0"][0].startswith("a/")  # an id from file and position
    if fmt == "jsonl":
        assert kept["doc 2"][1] == {"id": True} and kept["doc 3"][1] == {"id": [1, 2]}
        assert kept["doc 4"][1] == {} and kept["doc 5"] == ("a/7", {}) and kept["doc 6"] == ("a/x", {})
        assert counters == {"ids_not_string_or_integer": 4}
    else:
        assert kept["doc 7"][1] == {}  # NaN is a missing id, not a value to keep
        assert counters == {"ids_not_string_or_integer": 2}


def test_colliding_ids_are_namespaced_by_file_and_counted(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(b'{"id": "1", "text": "a one"}\n{"id": "2", "text": "a two"}\n'
                                       b'{"id": "7", "text": "a seven"}\n{"id": "7", "text": "a seven again"}\n')
    (tmp_path / "b.jsonl").write_bytes(b'{"id": "1", "text": "b one"}\n{"id": "3", "text": "b three"}\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_bytes(b'{"id": "3", "text": "sub b three"}\n')
    expected = [("web/1@a.jsonl", "a one"), ("web/2", "a two"), ("web/7@a.jsonl#2", "a seven"),
                ("web/7@a.jsonl#3", "a seven again"), ("web/1@b.jsonl", "b one"), ("web/3@b.jsonl", "b three"),
                ("web/3@sub/b.jsonl", "sub b three")]
    for spill_dir in (None, str(tmp_path / "spill")):
        with TestPipeline() as p:
            read = ReadDocuments([InputConfig(path=str(tmp_path / "**.jsonl"), name="web")], 1000, spill_dir=spill_dir)
            docs, rejected = p | read
            assert_that(docs | beam.Map(lambda d: (d.id, d.text)), equal_to(expected), label="Docs")
            assert_that(read.edits | beam.Map(lambda e: ((e[0], e[1]), e[2])) | beam.CombinePerKey(sum),
                        equal_to([(("read", "id_collisions"), 6)]), label="Edits")


def test_the_same_relative_path_in_two_inputs_of_one_source_gets_distinct_ids(tmp_path):
    for d in ("x", "y"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "part.jsonl").write_bytes(b'{"id": "1", "text": "' + d.encode() + b'"}\n')
    inputs = [InputConfig(path=str(tmp_path / d / "*.jsonl"), name="web") for d in ("x", "y")]
    with TestPipeline() as p:
        docs, _ = p | ReadDocuments(inputs, 1000)
        assert_that(docs | beam.Map(lambda d: (d.id, d.text)),
                    equal_to([("web/1@part.jsonl#0@input0", "x"), ("web/1@part.jsonl#0@input1", "y")]))


def test_a_new_id_that_meets_another_id_is_settled_by_its_origin(tmp_path):
    # "x" in a.jsonl and b.jsonl becomes "x@a.jsonl" and "x@b.jsonl"; a document whose own id is "x@a.jsonl"
    # keeps it, so the new one takes its origin's suffix; "y" twice in c.jsonl becomes "y@c.jsonl#0" and "#1",
    # the first of which is also the new id of "y" in the file named "c.jsonl#0": both take a suffix
    (tmp_path / "a.jsonl").write_bytes(b'{"id": "x", "text": "a x"}\n{"id": "x@a.jsonl", "text": "own"}\n')
    (tmp_path / "b.jsonl").write_bytes(b'{"id": "x", "text": "b x"}\n')
    (tmp_path / "c.jsonl").write_bytes(b'{"id": "y", "text": "c y0"}\n{"id": "y", "text": "c y1"}\n')
    (tmp_path / "c.jsonl#0").write_bytes(b'{"id": "y", "text": "hash y"}\n')
    inputs = [InputConfig(path=str(tmp_path / "*.jsonl*"), format="jsonl", name="w")]
    with TestPipeline() as p:
        read = ReadDocuments(inputs, 1000)
        docs, _ = p | read
        pairs = docs | beam.Map(lambda d: (d.id, d.text))
        assert_that(pairs | "Ids" >> beam.Map(lambda pair: pair[0]) | beam.combiners.Count.PerElement()
                    | beam.Filter(lambda counted: counted[1] > 1), equal_to([]), label="Unique")
        assert_that(pairs | "Settled" >> beam.Filter(lambda pair: "~" in pair[0])
                    | beam.Map(lambda pair: (pair[0].rsplit("~", 1)[0], len(pair[0].rsplit("~", 1)[1]), pair[1])),
                    equal_to([("w/x@a.jsonl", 16, "a x"), ("w/y@c.jsonl#0", 16, "c y0"), ("w/y@c.jsonl#0", 16, "hash y")]),
                    label="Settled")
        assert_that(pairs | "Plain" >> beam.Filter(lambda pair: "~" not in pair[0]),
                    equal_to([("w/x@a.jsonl", "own"), ("w/x@b.jsonl", "b x"), ("w/y@c.jsonl#1", "c y1")]), label="Plain")


def test_flushed_id_lists_give_the_same_ids(tmp_path, monkeypatch):
    # a bundle sends its (id, origin) pairs on every ID_FLUSH of them: lists of one pair, split anywhere
    from corpusforge.pipeline import readers

    monkeypatch.setattr(readers, "ID_FLUSH", 1)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    test_colliding_ids_are_namespaced_by_file_and_counted(tmp_path / "a")
    test_a_new_id_that_meets_another_id_is_settled_by_its_origin(tmp_path / "b")


def test_ids_are_the_same_with_shuffles_on_disk(tmp_path):
    # on disk the documents meet their renames in a CoGroupByKey, in memory in one GroupByKey of both
    from corpusforge.core.disk_grouping import spilling_to

    for name in ("disk", "a", "b"):
        (tmp_path / name).mkdir()
    with spilling_to(str(tmp_path / "disk"), 4):
        test_colliding_ids_are_namespaced_by_file_and_counted(tmp_path / "a")
        test_a_new_id_that_meets_another_id_is_settled_by_its_origin(tmp_path / "b")


def test_ids_reach_the_claims_pass_packed_not_one_element_a_document(tmp_path):
    # 600 documents, every one of whose ids two files share: the step that groups ids gets a few packed lists
    # (one per id bucket a bundle fills), not an (id, origin) element per document; ids are namespaced as ever
    from apache_beam.pipeline import PipelineVisitor
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.jsonl").write_bytes(b"".join(b'{"id": "%d", "text": "t"}\n' % i for i in range(200)))
    found = []

    class _GroupIds(PipelineVisitor):
        def enter_composite_transform(self, node):
            if node.full_label.endswith("/GroupIds"):
                found.append(node.inputs[0])

        def visit_transform(self, node):
            self.enter_composite_transform(node)

    with TestPipeline() as p:
        read = ReadDocuments([InputConfig(path=str(tmp_path / "*.jsonl"), name="w")], 1000)
        docs, _ = p | read
        p.visit(_GroupIds())
        assert len(found) == 1
        assert_that(found[0] | "CountPacked" >> beam.combiners.Count.Globally()
                    | "Few" >> beam.Map(lambda n, buckets: n <= 3 * buckets, read.id_buckets),
                    equal_to([True]), label="Packed")
        assert_that(docs | beam.Map(lambda d: d.id) | beam.Filter(lambda i: i.endswith("@b.jsonl"))
                    | "CountIds" >> beam.combiners.Count.Globally(), equal_to([200]), label="Ids")


def test_a_group_of_ids_stays_small_as_the_input_grows(tmp_path, monkeypatch):
    # The claims pass holds one id bucket's group at once: the bucket count grows with the input's bytes (one per
    # INPUT_BYTES_PER_ID_BUCKET), so a group holds about as many pairs whatever the corpus size. A fixed count
    # (64) puts >= 4,000 / 64 = 62.5 pairs in some group of the 4,000 documents below (70 with these ids).
    from apache_beam.pipeline import PipelineVisitor
    from apache_beam.testing.util import BeamAssertException
    from corpusforge.pipeline import readers

    assert readers.id_buckets_for(0) == readers.ID_BUCKETS
    assert readers.id_buckets_for(256_000_000) == readers.ID_BUCKETS  # ~320k web-like documents
    assert readers.id_buckets_for(8_000_000_000) == 2000  # ~10M: a group holds as much as at 320k
    assert readers.id_buckets_for(10**15) == readers.MAX_ID_BUCKETS
    # the same scaled down: one bucket per ~8 documents of this input (~25 bytes each), whose ids two files share
    monkeypatch.setattr(readers, "INPUT_BYTES_PER_ID_BUCKET", 200)
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_bytes(b"".join(b'{"id": "%d", "text": "t"}\n' % i for i in range(2000)))
    found = []

    class _GroupIds(PipelineVisitor):
        def enter_composite_transform(self, node):
            if node.full_label.endswith("/GroupIds"):
                found.append(node.outputs[None])

        def visit_transform(self, node):
            self.enter_composite_transform(node)

    def small(sizes):
        if not (sum(sizes) == 4000 and max(sizes) <= 40):
            raise BeamAssertException(f"{len(sizes)} groups of {sum(sizes)} pairs, the largest {max(sizes)}")

    with TestPipeline() as p:
        read = ReadDocuments([InputConfig(path=str(tmp_path / "*.jsonl"), name="w")], 1000)
        p | read
        assert read.id_buckets > 200
        p.visit(_GroupIds())
        assert len(found) == 1
        assert_that(found[0] | beam.Map(lambda group: sum(len(pairs) for pairs in group[1])), small)


def _spread(docs):
    """``_SpreadKeys``' outputs for ``docs`` read in one bundle, as ``(batches, [(batch emitted before the bundle
    ended)])``: its main outputs only (the id lists are tagged)."""
    from apache_beam.pvalue import TaggedOutput
    from corpusforge.pipeline.readers import _SpreadKeys

    fn = _SpreadKeys(64)
    fn.start_bundle()
    early = [out for doc in docs for out in fn.process(doc) if not isinstance(out, TaggedOutput)]
    late = [out.value for out in fn.finish_bundle() if not isinstance(out, TaggedOutput)]
    return early + late, early


def test_documents_cross_the_spreading_shuffle_in_bounded_batches(monkeypatch):
    # One element per batch, not per document; a batch holds at most SPREAD_BATCH documents and, beyond its first,
    # no more than SPREAD_BATCH_BYTES of text (non-ASCII counted 4 a character), keyed by its first document's
    # origin; batches leave as they fill (a file of millions of lines never waits whole), a huge text alone.
    from corpusforge.pipeline import readers
    from corpusforge.pipeline.document_coder import Documents

    monkeypatch.setattr(readers, "SPREAD_BATCH", 5)
    monkeypatch.setattr(readers, "SPREAD_BATCH_BYTES", 100)

    def doc(i, text):
        return Document(id=f"w/{i % 7}", text=text, source="w", origin=(0, "a.jsonl", i))

    texts = ["t" * 10] * 23 + ["x" * 500] + ["é" * 10] * 9 + ["s" * 30]  # 40 chars of é count 40
    docs = [doc(i, text) for i, text in enumerate(texts)]
    batches, early = _spread(docs)
    assert [d for _, batch in batches for d in batch] == docs  # every document once, in order
    assert all(type(batch) is Documents for _, batch in batches)
    assert all(key == readers.batch_key(batch[0].origin) for key, batch in batches)
    assert len({key for key, _ in batches}) == len(batches)
    assert max(len(batch) for _, batch in batches) == 5
    for _, batch in batches:
        held = sum(len(d.text) * (1 if d.text.isascii() else 4) for d in batch)
        assert len(batch) == 1 or held <= 100, [d.text for d in batch]
    assert [len(b) for _, b in batches] == [5, 5, 5, 5, 3, 1, 2, 2, 2, 2, 2]
    assert len(early) == len(batches) - 1  # all but the bundle's last batch left before the bundle ended
    # the (id, origin, batch key) triples name each document's batch
    fn = readers._SpreadKeys(64)
    fn.start_bundle()
    for d in docs:
        list(fn.process(d))
    triples = [t for _, pairs in fn._drain() for t in pairs]
    batch_of = {d.origin: key for key, batch in batches for d in batch}
    assert sorted(triples) == sorted((d.id, d.origin, batch_of[d.origin]) for d in docs)


def test_a_spread_batch_counts_its_documents_metadata_as_well_as_their_text(monkeypatch):
    # A record's other fields are kept whole as metadata and can be as large as its text (an "html" field beside
    # a short "text"): 256 of them in one batch held 256 x 8 MB. They count towards SPREAD_BATCH_BYTES as text
    # does (strings, keys, nested lists and dicts), so such records cross a few at a time.
    from corpusforge.pipeline import readers

    monkeypatch.setattr(readers, "SPREAD_BATCH_BYTES", 100)
    nested = {"html": "<p>" + "h" * 40, "tags": ["a" * 10, {"k": "é" * 5}], "n": 3}
    assert readers.held_bytes(Document(id="a", text="t" * 10, source="w", metadata=nested)) >= 10 + 43 + 10 + 20
    docs = [Document(id=f"w/{i}", text="short", source="w", metadata={"html": "h" * 25}, origin=(0, "a", i))
            for i in range(6)]
    batches, _ = _spread(docs)
    assert [len(batch) for _, batch in batches] == [2, 2, 2]


def test_ids_are_the_same_across_small_batches_on_both_shuffle_paths(tmp_path, monkeypatch):
    # Batches of 3 documents (or 40 characters of text), so a batch's documents share ids with those of other
    # batches and files, and the renames ("@file", "#position", "~suffix") must each reach its own batch; the
    # same ids as the read's two light passes give in plain Python (_final_ids), with shuffles in memory and on
    # disk, texts spilled or not.
    from corpusforge.core.disk_grouping import spilling_to
    from corpusforge.pipeline import readers

    monkeypatch.setattr(readers, "SPREAD_BATCH", 3)
    monkeypatch.setattr(readers, "SPREAD_BATCH_BYTES", 40)
    files = {"a.jsonl": ["x", "x@b.jsonl", "y", "z", "x", "q", "y"], "b.jsonl": ["x", "y", "r", "q"],
             "c.jsonl": ["z", "x@a.jsonl#0", "s", "t", "u"]}
    records, expected_texts = [], []
    for name, ids in files.items():
        lines = []
        for position, doc_id in enumerate(ids):
            text = f"{name} {position} " + ("long " * 10 if position == 2 else "")
            lines.append(json.dumps({"id": doc_id, "text": text}).encode())
            records.append((f"w/{doc_id}", (0, name, position)))
            expected_texts.append(text.strip())
        (tmp_path / name).write_bytes(b"\n".join(lines) + b"\n")
    expected = list(zip(_final_ids(records), expected_texts))
    assert sum("@" in new and "@" not in old for new, (old, _) in zip(_final_ids(records), records)) >= 8
    assert any("~" in new for new, _ in expected)
    (tmp_path / "disk").mkdir()
    for on_disk in (False, True):
        for spill_dir in (None, str(tmp_path / f"spill{on_disk}")):
            with contextlib.ExitStack() as stack:
                if on_disk:
                    stack.enter_context(spilling_to(str(tmp_path / "disk"), 4))
                with TestPipeline() as p:
                    read = ReadDocuments([InputConfig(path=str(tmp_path / "*.jsonl"), name="w")], 1000,
                                         spill_dir=spill_dir)
                    docs, _ = p | read
                    assert_that(docs | beam.Map(lambda d: (d.id, d.text.strip())), equal_to(expected))


def _final_ids(records):
    """The ids ``ReadDocuments`` gives ``records`` (``(id, origin)`` pairs): its two light passes, in plain Python
    (the pairs packed by id bucket, in lists of two, as bundles send them)."""
    from corpusforge.pipeline.readers import batch_key, bucket_claims, id_bucket, settled_ids

    def grouped(pairs):
        groups: dict = {}
        for key, value in pairs:
            groups.setdefault(key, []).append(value)
        return groups.items()

    # each document's batch: the key of the first origin of each run of three records, as _SpreadKeys keys them
    batches = [batch_key(records[i - i % 3][1]) for i in range(len(records))]
    packed = [(id_bucket(doc_id, 3), (doc_id, origin, batch))  # few buckets: ids share them
              for (doc_id, origin), batch in zip(records, batches)]
    buckets = [(bucket, [pairs[i:i + 2] for i in range(0, len(pairs), 2)]) for bucket, pairs in grouped(packed)]
    claims = [claim for group in buckets for claim in bucket_claims(group)]
    renames = {}
    for group in grouped(claims):
        for batch, (origin, new_id) in settled_ids(group):
            assert batches[[origin for _, origin in records].index(origin)] == batch  # reaches its batch
            renames[origin] = new_id
    return [renames.get(origin, doc_id) for doc_id, origin in records]


# --- properties: any bytes, any JSON shape, any text ------------------------------------------------------------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

# Every code point (lone surrogates and controls included) and the ones that break naive code most often:
# NUL, controls, RTL and bidi marks, combining marks, BOM, line and paragraph separators, emoji halves.
_ANY_CHAR = st.characters(codec=None, categories=None)
_HOSTILE = st.sampled_from(list("\x00\x01\x1b\x7f\x85\r\n\t \u200f\u202e\u2066\u0301\u0336\u05d0\u0627\ufeff"
                                "\u2028\u2029\ud83d\ude00\ud800\udfff\uffff\U0001F600"))
_TEXT = st.one_of(st.text(st.one_of(_ANY_CHAR, _HOSTILE), max_size=60),
                  st.builds(lambda c, n: c * n, st.one_of(_ANY_CHAR, _HOSTILE), st.sampled_from([0, 1, 999, 1001])))
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | _TEXT,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
                     max_leaves=8)
_RECORD = st.one_of(_JSON, st.fixed_dictionaries({"text": _TEXT}, optional={"id": _JSON, "meta": _JSON}))
_REASONS = {"malformed_json", "invalid_utf8", "not_an_object", "missing_text", "non_string_text", "empty_text",
            "oversize_record", "truncated_compressed_file", "unreadable_file", "stage_error"}


def _line(record, ascii_only: bool) -> bytes:
    # ensure_ascii writes lone surrogates as \ud800 escapes (valid JSON); without it they reach the bytes
    # through surrogatepass, which is invalid UTF-8.
    return json.dumps(record, ensure_ascii=ascii_only, allow_nan=True).encode("utf-8", errors="surrogatepass")


def _assert_every_record_accounted(items, records: int):
    docs = [i for i in items if isinstance(i, Document)]
    rejected = [i for i in items if isinstance(i, Rejected)]
    assert len(docs) + len(rejected) == records
    assert {r.reason for r in rejected} <= _REASONS - {"stage_error"}  # no record made the reader raise
    for doc in docs:  # what reaches the shards encodes as UTF-8: text, id and metadata
        doc.text.encode("utf-8")
        doc.id.encode("utf-8")
        json.dumps(doc.metadata, ensure_ascii=False).encode("utf-8")
        assert doc.text.strip() and len(doc.text) <= 1000


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(st.tuples(_RECORD, st.booleans()), min_size=1, max_size=6),
       garbage=st.lists(st.binary(max_size=40), max_size=2), bom=st.booleans(), crlf=st.booleans())
def test_any_jsonl_record_ends_a_document_or_a_rejection(records, garbage, bom, crlf):
    lines = [_line(record, ascii_only) for record, ascii_only in records]
    lines += [g.replace(b"\n", b" ") for g in garbage]
    data = (b"\xef\xbb\xbf" if bom else b"") + (b"\r\n" if crlf else b"\n").join(lines) + b"\n"
    # a line (ended by LF, CRLF or a lone CR: bytes.splitlines) is a record unless it is blank once a leading BOM
    # is dropped; each record is exactly one document or one rejection
    records_in = sum(bool(line.removeprefix(b"\xef\xbb\xbf").strip()) for line in data.splitlines())
    _assert_every_record_accounted(_read(data, "h/a.jsonl"), records_in)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), unit=st.sampled_from(["line", "file"]))
def test_any_text_file_reads_without_raising(data, unit):
    items = _read(data, "h/a.txt", text_unit=unit)
    _assert_every_record_accounted(items, 1 if unit == "file" else len(items))


_ID_PART = st.text(st.sampled_from("xa@#~.0"), max_size=4)


@given(st.lists(st.tuples(_ID_PART, st.integers(0, 1), _ID_PART), max_size=12))
@settings(max_examples=300, deadline=None)
def test_ids_after_reading_are_unique_whatever_the_ids_and_file_names(records):
    # (id, input, file) per record, ids and file names drawn from the characters the new ids are made of
    positions: dict = {}
    with_origins = []
    for doc_id, index, relpath in records:
        position = positions[(index, relpath)] = positions.get((index, relpath), -1) + 1
        with_origins.append((doc_id, (index, relpath, position)))
    final = _final_ids(with_origins)
    assert len(set(final)) == len(final)
    # a document whose id no other document holds keeps it
    held = [doc_id for doc_id, _ in with_origins]
    assert all(new == old for new, old in zip(final, held) if held.count(old) == 1)


@pytest.mark.parametrize("suffix", [".zst", ".gz"])
def test_compressed_columnar_files_read_through_a_spooled_copy(suffix):
    # a zstd stream cannot seek: it is copied to a temporary file (memory up to 64 MiB, then disk), not to memory
    table = pa.table({"text": [f"row {i}" for i in range(3000)]})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    items = _read(_COMPRESSORS[suffix](buf.getvalue()), "t.parquet" + suffix)
    assert [i.text for i in items] == [f"row {i}" for i in range(3000)]


def test_the_surrogate_test_is_the_regex():
    # has_surrogate (ASCII: O(1); else strict UTF-8 encoding in C) answers as the regex that tried its class at
    # every character of every text read.
    import random as _random

    from corpusforge.core.input_files import SURROGATE as _SURROGATE, has_surrogate as _has_surrogate

    rng = _random.Random(5)
    alphabet = ["a", " ", "\u00e9", "\u4e2d", "\U0001f600", "\ud800", "\udfff", "\ud7ff", "\ue000", "\ufffd", "\x00"]
    texts = ["", "plain", "\ud83d", "x" * 1000 + "\udc00"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30))) for _ in range(2000)]
    for text in texts:
        assert _has_surrogate(text) == (_SURROGATE.search(text) is not None), ascii(text)


def test_metadata_is_made_json_ready_and_empty_metadata_stays_empty():
    # A Parquet or Arrow row's dates become their strings, bytes their UTF-8 text (a string column Spark wrote as
    # binary) or, not UTF-8, their repr; a record without metadata skips the json.dumps check (most records: ~1 us
    # each) and keeps an empty dict.
    import datetime

    from corpusforge.pipeline.readers import _json_safe

    assert _json_safe({}) == {}
    assert _json_safe({"day": datetime.date(2024, 1, 2), "n": [1, 2.5], "raw": b"x", "blob": b"\xff"}) == {
        "day": "2024-01-02", "n": [1, 2.5], "raw": "x", "blob": "b'\\xff'"}
    ready = {"url": "https://example.org", "tags": ["a"]}
    assert _json_safe(ready) is ready


@pytest.mark.parametrize("becomes", ["folder", "fifo", "deleted"])
def test_the_manifest_reports_each_input_as_the_build_listed_it(tmp_path, becomes):
    """A build lists its inputs once: a file that was a regular file when listed (and read) and is replaced
    afterwards is not reported as unread; one that was no regular file when listed is (``not_read``)."""
    import os

    from corpusforge.pipeline.readers import input_files, listed_inputs, one_listing

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"text": "one"}\n')
    os.mkfifo(folder / "pipe.jsonl")
    inputs = [InputConfig(path=str(folder))]
    with one_listing():
        listed_inputs(inputs)
        (folder / "a.jsonl").unlink()
        if becomes == "folder":
            (folder / "a.jsonl").mkdir()
        elif becomes == "fifo":
            os.mkfifo(folder / "a.jsonl")
        reported = {os.path.basename(f["path"]): f.get("not_read") for f in input_files(inputs)}
    assert reported == {"a.jsonl": None, "pipe.jsonl": "a FIFO (named pipe)"}


# ------------------------------------------------------------------------------------------------ metadata
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_records_own_metadata_object_is_merged_not_nested(tmp_path, fmt):
    # dolma / datatrove records ({"id", "text", "metadata": {...}, "added", "source"}) came out with their metadata
    # under metadata.metadata; now its keys join the other fields, a clashing key's nested value kept, not lost
    records = [
        {"id": "d0", "text": "doc 0", "metadata": {"url": "http://a/0", "lang": "en"}, "added": "2024-01-01",
         "source": "cc"},
        {"id": "d1", "text": "doc 1", "metadata": {"source": "inner", "metadata": "deeper", "n": 1}, "source": "cc",
         "added": "2024-01-02"},
        {"id": "d2", "text": "doc 2", "metadata": {}, "source": "cc", "added": "2024-01-03"},
    ]
    path = tmp_path / f"a.{fmt}"
    if fmt == "jsonl":
        records.append({"id": "d3", "text": "doc 3", "metadata": "a string stays", "source": "cc"})
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    else:  # a struct column, as datatrove's ParquetWriter writes metadata (every row has every struct field)
        pq.write_table(pa.Table.from_pylist(records), path)
    stream = open_decompressed(io.BytesIO(path.read_bytes()), str(path))
    got = {d.id: d.metadata for d in records_from_file(stream, InputConfig(path=str(path)), str(path), path.name, 1000)}
    if fmt == "jsonl":
        assert got == {
            "a/d0": {"added": "2024-01-01", "source": "cc", "url": "http://a/0", "lang": "en"},
            "a/d1": {"source": "cc", "added": "2024-01-02", "n": 1, "metadata": {"source": "inner", "metadata": "deeper"}},
            "a/d2": {"source": "cc", "added": "2024-01-03"},
            "a/d3": {"metadata": "a string stays", "source": "cc"},
        }
    else:
        assert got["a/d0"] == {"added": "2024-01-01", "source": "cc", "url": "http://a/0", "lang": "en", "n": None}
        assert got["a/d1"] == {"added": "2024-01-02", "source": "cc", "url": None, "lang": None, "n": 1,
                               "metadata": {"source": "inner", "metadata": "deeper"}}


def test_merging_a_metadata_object_loses_no_value():
    # every field keeps its value, every key of the object lands at the top or under metadata.<key> (a null
    # clashing with a field aside), whatever keys clash: random records over a small alphabet of keys
    import random

    from corpusforge.pipeline.readers import merged_metadata

    rng = random.Random(11)
    keys = ["a", "b", "metadata", "source", "url"]
    values = [None, 0, "x", [1], {"k": "v"}, {}]
    for _ in range(2000):
        fields = {k: rng.choice(values) for k in rng.sample(keys, rng.randint(0, 4)) if k != "metadata"}
        nested = {k: rng.choice(values) for k in rng.sample(keys, rng.randint(0, 5))}
        fields["metadata"] = nested if rng.random() < 0.9 else rng.choice(values)
        merged = merged_metadata(dict(fields))
        if not isinstance(fields["metadata"], dict):
            assert merged == fields
            continue
        nested = fields["metadata"]
        assert all(merged[k] == v for k, v in fields.items() if k != "metadata"), (fields, merged)
        for k, v in nested.items():
            if k in fields or k == "metadata":
                assert v is None or merged["metadata"][k] == v, (fields, merged)
            else:
                assert merged[k] == v, (fields, merged)
        assert set(merged) <= set(fields) | set(nested)


def test_a_shard_rows_own_source_goes_through_the_builds_name_scrubber(tmp_path):
    # a corpusforge shard's row keeps its own source (docs/inputs.md): a build with PII on writes it as it writes
    # every source name (NameScrubber), not in clear
    path = tmp_path / "part-00000-of-00001.jsonl"
    path.write_text(json.dumps({"id": "jane@example.org/1", "text": "A text.", "source": "jane@example.org",
                                "metadata": '{"url": "u"}', "annotations": {}}) + "\n")
    (doc,) = read_file(str(path), InputConfig(path=str(path)), names=lambda name: f"<{len(name)}>")
    assert (doc.source, doc.id, doc.metadata) == ("<16>", "jane@example.org/1", {"url": "u"})
