"""Typed annotations: the struct a build's config declares, rows written and read back through Arrow."""
import dataclasses

import pyarrow as pa

from corpusforge.pipeline.build import shard_schemas
from corpusforge.pipeline.config import BuildConfig
from corpusforge.pipeline.document import (Document, Removed, annotations_of, document_from_row, document_row,
                                           document_schema, removed_row)
from corpusforge.pipeline.quality.config import ClassifierConfig
from corpusforge.pipeline.shards import iter_rows_of, write_arrow_file


def test_the_schema_is_a_function_of_the_config():
    config = BuildConfig()
    assert shard_schemas(config) == shard_schemas(BuildConfig())
    annotations = shard_schemas(config)["docs"].field("annotations").type
    names = [annotations.field(i).name for i in range(annotations.num_fields)]
    assert names == ["lang", "lang_score", "quality", "pii_count", "pii_entities", "other"]
    by_entity = annotations.field("pii_entities").type
    assert [by_entity.field(i).name for i in range(by_entity.num_fields)] == config.pii.active_entities
    details = shard_schemas(config)["removed"].field("details").type
    assert [details.field(i).name for i in range(details.num_fields)] == [
        "lang", "score", "quality", "survivor_id", "cluster_size", "similarity", "other"]
    off = dataclasses.replace(config, quality=dataclasses.replace(config.quality, store_values=False))
    assert "quality" not in [f.name for f in shard_schemas(off)["docs"].field("annotations").type]
    scored = dataclasses.replace(config, quality=dataclasses.replace(
        config.quality, classifiers=[ClassifierConfig(name="edu", model="m.bin")]))
    assert shard_schemas(scored)["docs"].field("annotations").type.field("edu_score").type == pa.float64()


def test_rows_round_trip_through_arrow_with_undeclared_values_in_other(tmp_path):
    schema = shard_schemas(BuildConfig())["docs"]
    kind = schema.field("annotations").type
    doc = Document("a", "text", "web", {"url": "u"}, {"lang": "en", "lang_score": 0.9, "custom": [1, 2]})
    bare = Document("b", "more text", "web")  # reached no stage: every value null
    path = str(tmp_path / "part.arrow")
    write_arrow_file(path, schema, [document_row(doc, kind), document_row(bare, kind)])
    rows = list(iter_rows_of(path))
    assert rows[0]["annotations"]["lang"] == "en" and rows[0]["annotations"]["quality"] is None
    assert rows[0]["annotations"]["other"] == '{"custom":[1,2]}'
    assert [document_from_row(r) for r in rows] == [doc, bare]
    assert annotations_of(rows[1]["annotations"]) == {}


def test_removed_rows_and_the_json_form_of_older_runs(tmp_path):
    schemas = shard_schemas(BuildConfig())
    removed = schemas["removed"]
    item = Removed(Document("a", "t", "web", annotations={"lang": "en"}), "dedup", "exact_duplicate",
                   {"survivor_id": "b", "cluster_size": 2, "similarity": 1.0})
    row = removed_row(item, removed.field("annotations").type, removed.field("details").type)
    path = str(tmp_path / "removed.arrow")
    write_arrow_file(path, removed, [row])
    back = next(iter_rows_of(path))
    assert annotations_of(back["details"]) == item.details and annotations_of(back["annotations"]) == {"lang": "en"}
    old = document_row(Document("a", "t", "web", annotations={"lang": "en"}))  # no struct type: a JSON string
    assert document_schema().field("annotations").type == pa.string() and annotations_of(old["annotations"]) == {"lang": "en"}


def test_a_row_never_hashes_its_struct_type():
    # struct_value runs for every row written; hashing a pyarrow type formats it as text (~50 us for a build's
    # annotations struct, more than the rest of the row). Its declared fields are found by the type's identity.
    from corpusforge.pipeline.document import struct_value

    class Struct:  # a struct type as struct_value reads it, that refuses to be hashed
        id = pa.struct([]).id
        num_fields = 2

        def field(self, i):
            return pa.field(["lang", "other"][i], pa.string())

        def __hash__(self):
            raise AssertionError("the struct type was hashed")

    kind = Struct()
    for _ in range(2):
        assert struct_value({"lang": "en", "score": 1}, kind) == {"lang": "en", "other": '{"score":1}'}
