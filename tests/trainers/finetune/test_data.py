"""Task records from JSONL, CSV and Parquet; labels; token alignment and response-only loss; adapters."""
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from corpusforge.core.errors import UserError
from corpusforge.trainers.finetune.adapters import add_adapters
from corpusforge.trainers.finetune.config import FinetuneConfig
from corpusforge.trainers.finetune.data import check_known_labels, label_map, read_records, task_examples
from corpusforge.trainers.finetune.encode import IGNORE, _first_piece_labels, encode
from corpusforge.trainers.finetune.metrics import classification_metrics

ROWS = [{"id": "a", "text": "x y", "label": "pos"}, {"id": "b", "text": "z", "label": "neg"}]


def test_jsonl_csv_and_parquet_give_the_same_examples(tmp_path):
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "d.csv").write_text("id,text,label\na,x y,pos\nb,z,neg\n")
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "d.parquet")
    config = FinetuneConfig()
    got = [task_examples(read_records(tmp_path / f"d.{ext}"), config, ext) for ext in ("jsonl", "csv", "parquet")]
    assert got[0] == got[1] == got[2]
    assert label_map(got[0]) == {"neg": 0, "pos": 1}


def test_a_lone_surrogate_escaped_in_json_is_read_as_u_fffd_by_every_model_side_reader(tmp_path):
    """``"\\ud800"`` is valid JSON but no text: the build repairs it to U+FFFD (README); finetune, predict and
    evaluate handed it on, and the tokenizer (TypeError) or the byte count (UnicodeEncodeError) raised a traceback."""
    from corpusforge.trainers.evaluate import read_documents

    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"text": "a \\ud800 b \\ud83d\\ude00", "label": "\\udc00x", "\\udfff": 1}\n')
    record = read_records(path)[0]
    assert record == {"text": "a \ufffd b \U0001f600", "label": "\ufffdx", "\ufffd": 1}
    assert [d.text for d in read_documents(str(path))] == ["a \ufffd b \U0001f600"]
    examples = task_examples([record], FinetuneConfig(), str(path))
    assert examples[0].text.encode("utf-8") and examples[0].target == "\ufffdx"


@pytest.mark.parametrize("line,said", [
    ('{"text": "x", "label": NaN}', "record 0 has an empty 'label' field"),  # json.dumps of a pandas gap: empty, as null
    ('{"text": "x", "label": Infinity}', "record 0 field 'label' is Infinity, not a text or a number"),
    ('{"text": ["a", "b"], "label": "p"}', "record 0 field 'text' is a list, not a text or a number"),
    ('{"text": "x", "label": {"a": 1}}', "record 0 field 'label' is an object, not a text or a number"),
    ('{"text": "x", "label": "p", "id": [1]}', "record 0 field 'id' is a list, not a text or a number")])
def test_a_field_that_holds_no_text_or_number_is_missing_or_refused_never_trained_as_its_repr(tmp_path, line, said):
    # Before: a NaN label trained a class "nan", a list text trained on "['a', 'b']", an object label was the
    # class "{'a': 1}": silently other data than the file's.
    path = tmp_path / "d.jsonl"
    path.write_text(line + "\n" + '{"text": "y", "label": "q"}\n')
    with pytest.raises(UserError, match=re.escape(said)) as info:
        task_examples(read_records(path), FinetuneConfig(), "d.jsonl")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("task,line,said", [
    ("tag", '{"tokens": ["a", null], "tags": ["O", "O"]}', "record 0 field 'tokens' item 1 is null"),
    ("tag", '{"tokens": ["a", "b"], "tags": ["O", null]}', "record 0 field 'tags' item 1 is null"),
    ("tag", '{"tokens": ["a", ["b"]], "tags": ["O", "O"]}', "record 0 field 'tokens' item 1 is a list"),
    ("tag", '{"tokens": ["a", NaN], "tags": ["O", "O"]}', "record 0 field 'tokens' item 1 is NaN"),
    ("tag", '{"tokens": ["a", "b"], "tags": ["O", {"x": 1}]}', "record 0 field 'tags' item 1 is an object")])
def test_a_word_or_tag_that_is_no_text_is_refused_never_trained_as_none(tmp_path, task, line, said):
    # Before: a null word or tag was the text "None" (str(None)), so a tag set gained a class "None" and a
    # record trained on the word "None" that its file never held.
    path = tmp_path / "d.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(UserError, match=re.escape(said)) as info:
        task_examples(read_records(path), FinetuneConfig(task=task), "d.jsonl")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("value", ["null", "NaN", '""'])
def test_a_null_or_empty_id_is_a_missing_id_the_records_position(tmp_path, value):
    # Before: a null id was the id "None" for every such record, and predict wrote them all as "None".
    path = tmp_path / "d.jsonl"
    path.write_text(f'{{"id": "a", "text": "x", "label": "p"}}\n{{"id": {value}, "text": "y", "label": "q"}}\n')
    assert [e.id for e in task_examples(read_records(path), FinetuneConfig(), "d.jsonl")] == ["a", "1"]


def test_prediction_ids_are_unique_a_position_standing_in_for_a_missing_one_too():
    # Before: ids ['1', '1', '2', '2'], and predict wrote two rows for each id, which a join by id mixes up.
    records = [{"id": "1", "text": "a", "label": "x"}, {"id": None, "text": "b", "label": "y"},
               {"text": "c", "label": "y", "id": float("nan")}, {"id": 2, "text": "d", "label": "x"}]
    config = FinetuneConfig(task="classify")
    with pytest.raises(UserError) as info:
        task_examples(records, config, "f", labelled=False)
    assert str(info.value) == ("f: records 0 and 1 have the same id '1' (a missing, null, NaN or empty id is the "
                               "record's position); predict's output names each record by its id: give each its own "
                               "('id' field)")
    with pytest.raises(UserError, match="f: records 0 and 2 have the same id 'a'"):
        task_examples([{"id": "a", "text": "t"}, {"text": "u"}, {"id": "a", "text": "v"}], config, "f", labelled=False)
    assert [e.id for e in task_examples(records[1:], config, "f", labelled=False)] == ["0", "1", "2"]
    assert [e.id for e in task_examples(records, config, "f")] == ["1", "1", "2", "2"]  # training: ids unused


def test_csv_cells_are_text_only_an_empty_cell_is_missing(tmp_path):
    # A CSV has no null: pandas writes a gap as an empty cell, which is missing (here: an unlabelled record in
    # predict, an error where the label is needed); the words NaN, null and NA are labels as written (NA is a
    # country code and a tag in some tag sets).
    (tmp_path / "d.csv").write_text("id,text,label\n,x,NaN\nb,y,null\nc,z,NA\nd,w,\n")
    records = read_records(tmp_path / "d.csv")
    examples = task_examples(records, FinetuneConfig(), "d.csv", labelled=False)
    assert [(e.id, e.target) for e in examples] == [("0", "NaN"), ("b", "null"), ("c", "NA"), ("d", None)]
    with pytest.raises(UserError, match="record 3 has an empty 'label' field"):
        task_examples(records, FinetuneConfig(), "d.csv")


def test_a_boolean_label_is_the_same_class_in_jsonl_and_csv(tmp_path):
    # JSON true was the class "True", the same column in CSV the class "true": a CSV validation file of a JSONL
    # training run was refused ("label 'true', which the training data never uses").
    (tmp_path / "d.jsonl").write_text('{"text": "x", "label": true}\n{"text": "y", "label": false}\n')
    (tmp_path / "d.csv").write_text("text,label\nx,true\ny,false\n")
    got = [task_examples(read_records(tmp_path / f"d.{ext}"), FinetuneConfig(), ext) for ext in ("jsonl", "csv")]
    assert [e.target for e in got[0]] == [e.target for e in got[1]] == ["true", "false"]


def test_a_binary_parquet_text_column_reads_as_its_utf8_text(tmp_path):
    # Spark and Hive write every string column as binary: the build reads its cells as UTF-8 text
    # (input_files.cell_text), fine-tuning and predict read "b'x y'" as the text and the label
    binary = pa.table({name: pa.array([r[name].encode() for r in ROWS], pa.binary())
                       for name in ("id", "text", "label")})
    pq.write_table(binary, tmp_path / "spark.parquet")
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "d.parquet")
    config = FinetuneConfig()
    assert task_examples(read_records(tmp_path / "spark.parquet"), config, "s") == \
        task_examples(read_records(tmp_path / "d.parquet"), config, "d")
    words = pa.table({"tokens": pa.array([[b"a", b"b"]], pa.list_(pa.binary())),
                      "tags": pa.array([[b"O", b"B"]], pa.list_(pa.binary()))})
    pq.write_table(words, tmp_path / "tags.parquet")
    (example,) = task_examples(read_records(tmp_path / "tags.parquet"), FinetuneConfig(task="tag"), "t")
    assert example.text == ["a", "b"] and example.target == ["O", "B"]
    pq.write_table(pa.table({"text": pa.array([b"\xff\xfe"], pa.binary()), "label": ["pos"]}), tmp_path / "bad.parquet")
    with pytest.raises(UserError, match=r"bad: record 0 field 'text' is binary and not UTF-8"):
        task_examples(read_records(tmp_path / "bad.parquet"), config, "bad")


def test_a_csv_field_as_long_as_a_jsonl_record_may_be_is_read(tmp_path):
    # Before: the csv module's own limit, 131,072 characters, refused a 200,000-character text that the JSONL and
    # Parquet readers take ("cannot be read: unreadable_file (Error: field larger than field limit (131072))")
    (tmp_path / "long.csv").write_text("text,label\n" + "a " * 100_000 + ",pos\nb,neg\n")
    records = read_records(tmp_path / "long.csv")
    assert [len(r["text"]) for r in records] == [200_000, 1]
    with pytest.raises(UserError, match=r"long.csv:2 holds a field of more than 1,000 characters"):
        read_records(tmp_path / "long.csv", max_bytes=1_000)


def test_bad_records_are_errors_that_name_the_place(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"text": "a"}\nnot json\n')
    with pytest.raises(UserError, match=r"bad.jsonl:2 is not valid JSON"):
        read_records(tmp_path / "bad.jsonl")
    config = FinetuneConfig(task="tag")
    with pytest.raises(UserError, match="2 words and 1 tags"):
        task_examples([{"tokens": ["a", "b"], "tags": ["O"]}], config, "f")
    with pytest.raises(UserError, match="label 'maybe'.*never uses"):
        check_known_labels(task_examples([{"text": "t", "label": "maybe"}], FinetuneConfig(), "v"),
                           {"neg": 0, "pos": 1}, "v")
    with pytest.raises(UserError, match="1 distinct label"):
        label_map(task_examples([{"text": "t", "label": "a"}], FinetuneConfig(), "t"))


def test_word_labels_go_to_first_pieces_only():
    assert _first_piece_labels([None, 0, 0, 1, None], [5, 7]) == [IGNORE, 5, IGNORE, 7, IGNORE]


def test_macro_f1_is_the_mean_of_per_label_f1():
    # label 0: tp 1, fp 1, fn 0 -> 2/3; label 1: tp 1, fp 0, fn 1 -> 2/3
    assert classification_metrics([0, 1, 1], [0, 1, 0], 2) == pytest.approx({"val_accuracy": 2 / 3, "val_macro_f1": 2 / 3})


def test_a_decoder_learns_only_the_response(tmp_path):
    from tests.trainers.finetune.conftest import make_base
    import transformers

    base = make_base(tmp_path / "m", "gpt2")
    from corpusforge.trainers.export import export_model

    export_model(base, tmp_path / "e")
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path / "e")
    examples = task_examples([{"prompt": "the cat", "response": " cat"}], FinetuneConfig(task="generate"), "g")
    row = encode(examples, tok, "generate", "decoder", None, 64)[0]
    prompt = len(tok("the cat", add_special_tokens=False)["input_ids"]) + 1  # + the start token
    assert row["labels"][:prompt] == [IGNORE] * prompt
    assert row["labels"][prompt:] == row["input_ids"][prompt:] and row["labels"][-1] == tok.eos_token_id

    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "e").eval()
    ids = torch.tensor([row["input_ids"]])
    with torch.no_grad():
        before = model(ids).logits
    names = add_adapters(model, 8, "houlsby")
    assert len(names) == 4  # attention and feed-forward output of 2 layers
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, before)  # zero-initialised up-projection: same function
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == 4 * (2 * 64 * 8 + 8 + 64)


def test_virtual_tokens_take_positions_from_the_text():
    import types

    from corpusforge.trainers.finetune.train import input_length

    tokenizer = types.SimpleNamespace(model_max_length=128)
    assert input_length(FinetuneConfig(max_length=256), tokenizer) == 128
    assert input_length(FinetuneConfig(max_length=256, method="prompt", num_virtual_tokens=20), tokenizer) == 108
    assert input_length(FinetuneConfig(max_length=64, method="prefix", num_virtual_tokens=20), tokenizer) == 44
    with pytest.raises(UserError, match="fewer virtual tokens"):
        input_length(FinetuneConfig(method="prompt", num_virtual_tokens=125), tokenizer)


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_a_literal_special_token_in_record_text_is_encoded_as_text(tmp_path, family):
    # as in pretraining (tokenize encodes special tokens as text): a "[SEP]" or end-of-text token typed in a record
    # must not become the control token, or a record could end itself or fake a second segment
    import transformers

    from corpusforge.trainers.export import export_model
    from tests.trainers.finetune.conftest import make_base

    export_model(make_base(tmp_path / "m", family), tmp_path / "e")
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path / "e")
    literal = tok.sep_token if family == "bert" else tok.eos_token
    control = tok.convert_tokens_to_ids(literal)
    text = f"the cat {literal} the dog"
    assert tok(text, add_special_tokens=False)["input_ids"].count(control) == 1  # transformers' default reads it
    if family == "bert":
        examples = task_examples([{"text": text, "label": "x"}], FinetuneConfig(task="classify"), "c")
        row = encode(examples, tok, "classify", "encoder", {"x": 0}, 64)[0]
        assert row["input_ids"].count(control) == 1 and row["input_ids"][-1] == control  # only the one it appends
    else:
        examples = task_examples([{"prompt": text, "response": f" runs {literal}"}], FinetuneConfig(task="generate"), "g")
        row = encode(examples, tok, "generate", "decoder", None, 64)[0]
        body = row["input_ids"][1:]  # after the start token (GPT-2's start token is its end-of-text token)
        assert body.count(control) == 1 and body[-1] == control  # the appended end only
    assert len(row["input_ids"]) > len(tok(text, add_special_tokens=False)["input_ids"])  # spelled out in pieces


@pytest.mark.parametrize("content,reason", [
    (b'{"text": "a", "m": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "too_deep"),
    (b'{"text": "a", "n": ' + b"9" * 5000 + b"}\n", "number_too_large"),
    (b'{"text": "caf\xe9"}\n', "invalid_utf8"),
])
def test_a_record_any_parser_exception_rejects_is_a_one_line_error(tmp_path, content, reason):
    # issue #36: finetune and predict share the build's error handling (RecursionError, the int digit limit
    # and bad UTF-8 were tracebacks)
    (tmp_path / "bad.jsonl").write_bytes(b'{"text": "fine", "label": "pos"}\n' + content)
    with pytest.raises(UserError, match=rf"bad.jsonl:2 cannot be read: {reason}"):
        read_records(tmp_path / "bad.jsonl")


def test_a_corrupt_parquet_or_csv_is_a_one_line_error(tmp_path):
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really parquet")
    with pytest.raises(UserError, match="bad.parquet cannot be read: unreadable_file"):
        read_records(tmp_path / "bad.parquet")
    (tmp_path / "bad.csv").write_bytes(b"text,label\ncaf\xe9,pos\n")
    with pytest.raises(UserError, match="bad.csv cannot be read: invalid_utf8"):
        read_records(tmp_path / "bad.csv")


@pytest.mark.parametrize("settings, record, flag", [
    (dict(task="generate", prompt_field="question", response_field="text"),
     {"question": "What is 2+2?", "answer": "four"}, "--response-field"),
    (dict(task="tag", tokens_field="words", tags_field="text"), {"words": ["a", "b"], "ner": ["O", "O"]},
     "--tags-field"),
    (dict(task="classify", label_field="text", text_field="body"), {"body": "hello", "lbl": "x"}, "--label-field"),
])
def test_a_missing_field_is_named_by_the_setting_that_names_it_not_by_its_name(settings, record, flag):
    # A field named by its name alone: a generate task's response field called 'text' was told to pass
    # --text-field, which generate ignores (the first setting holding that name won).
    with pytest.raises(UserError, match=rf"no field 'text'; name yours with {flag} ") as info:
        task_examples([record], FinetuneConfig(**settings), "train.jsonl")
    assert "--text-field" not in str(info.value)
