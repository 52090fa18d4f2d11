"""A model directory someone handed us: a truncated, malformed or lying file is one line naming it, and nothing
is allocated for dimensions the weights do not back (``corpusforge.trainers.model_files``)."""
import json
import resource
import shutil
import time

import pytest

from corpusforge.core.errors import UserError
from corpusforge.trainers.export import export_model, load_model
from tests.trainers.exports import make_model_dir


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return make_model_dir(tmp_path_factory.mktemp("model") / "gpt2", "gpt2")


def _dims(d):
    config = json.loads((d / "config.json").read_text())
    config["model"].update(d_model=config["model"]["d_model"] * 4096, vocab_size=config["model"]["vocab_size"] * 512)
    (d / "config.json").write_text(json.dumps(config))  # ~800 GB of float32 asked of a small file
    return "config.json disagrees with .*model.safetensors"


def _layers(d):  # the configs fuzz family, seed 1129 case 13: 10^12 layers built on "meta" for ever before any check
    config = json.loads((d / "config.json").read_text())
    config["model"]["n_layers"] = 10**12
    (d / "config.json").write_text(json.dumps(config))
    return "config.json describes a model of more than .* weight tensors, but .*model.safetensors holds"


def _unrecorded(d):
    """A model saved before config.json recorded its files' SHA-256 (or one whose record was removed): each file's
    own check must still name it."""
    config = json.loads((d / "config.json").read_text())
    del config["file_sha256"]
    (d / "config.json").write_text(json.dumps(config))


def _truncated(d):
    _unrecorded(d)
    weights = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    return "model.safetensors: not a readable safetensors file"


def _config_json(d):
    (d / "config.json").write_text('{"model": {')
    return "config.json: not valid JSON"


def _tokenizer_json(d):
    _unrecorded(d)
    (d / "tokenizer.json").write_text('{"model": 3')
    return "tokenizer.json: not valid JSON"


def _tokenizer_regex(d):
    _unrecorded(d)
    tokenizer = json.loads((d / "tokenizer.json").read_text())
    tokenizer["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "(?<=a)b("}, "behavior": "Isolated",
                                  "invert": False}
    (d / "tokenizer.json").write_text(json.dumps(tokenizer))
    return "tokenizer.json: cannot load this tokenizer"


def _config_keys(d):
    config = json.loads((d / "config.json").read_text())
    config["model"]["n_heads"] = "many"
    config["model"]["no_such_field"] = 1
    (d / "config.json").write_text(json.dumps(config))
    return "cannot load this model"


def _section_type(d):  # the configs fuzz family's "config.json section replaced" (a traceback in export before)
    config = json.loads((d / "config.json").read_text())
    config["special_tokens"] = 7
    (d / "config.json").write_text(json.dumps(config))
    return "section 'special_tokens' is of type int, expected dict"


def _special_ids(d):
    config = json.loads((d / "config.json").read_text())
    config["special_tokens"] = {"pad": "zero"}
    (d / "config.json").write_text(json.dumps(config))
    return "section 'special_tokens' must map token names to ids"


@pytest.mark.parametrize("corrupt", [_dims, _layers, _truncated, _config_json, _tokenizer_json, _tokenizer_regex, _config_keys,
                                     _section_type, _special_ids])
@pytest.mark.parametrize("command", ["load", "export"])
def test_a_broken_model_directory_is_one_line_naming_the_file(good, tmp_path, corrupt, command):
    d = tmp_path / "model"
    shutil.copytree(good, d)
    match = corrupt(d)
    peak, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.monotonic()
    with pytest.raises(UserError, match=match) as info:
        load_model(d) if command == "load" else export_model(d, tmp_path / "export")
    assert time.monotonic() - start < 60  # a model described past its weights is refused, not built for ever
    assert "\n" not in str(info.value) and str(d) in str(info.value)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 500_000  # KiB: nothing of 800 GB allocated
    assert not (tmp_path / "export").exists()


def test_an_intact_model_still_loads(good):
    loaded = load_model(good)
    assert loaded.source == "corpusforge" and loaded.arch == "decoder"


def test_an_exported_model_with_more_layers_than_weights_is_one_line(good, tmp_path):
    """The transformers layout too (export's and train.init_from's path): num_hidden_layers 10^12 in config.json."""
    export_model(good, tmp_path / "export")
    (tmp_path / "export" / "corpusforge.json").unlink()  # a transformers directory from elsewhere: no record to refuse it
    config = json.loads((tmp_path / "export" / "config.json").read_text())
    key = next(k for k in ("n_layer", "num_hidden_layers", "num_layers") if k in config)
    config[key] = 10**12
    (tmp_path / "export" / "config.json").write_text(json.dumps(config))
    start = time.monotonic()
    with pytest.raises(UserError, match="describes a model of more than .* weight tensors") as info:
        load_model(tmp_path / "export")
    assert time.monotonic() - start < 60 and "\n" not in str(info.value)


def _flip(path, at, rng):
    data = bytearray(path.read_bytes())
    data[at % len(data)] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json"])
@pytest.mark.parametrize("where", ["header", "middle", "last"])
@pytest.mark.parametrize("command", ["load", "export"])
def test_one_changed_bit_in_a_saved_models_files_is_refused(good, tmp_path, name, where, command):
    """safetensors holds no checksum: a bit changed in a tensor loaded and generated before. config.json records
    each file's SHA-256 when the model is saved, and any changed bit is one line naming the file."""
    import random

    d = tmp_path / "model"
    shutil.copytree(good, d)
    size = (d / name).stat().st_size
    _flip(d / name, {"header": 20, "middle": size // 2, "last": size - 1}[where], random.Random(where + name))
    with pytest.raises(UserError, match=f"{name} is not the file this model was saved with") as info:
        load_model(d) if command == "load" else export_model(d, tmp_path / "export")
    assert "\n" not in str(info.value) and str(d) in str(info.value)
    assert not (tmp_path / "export").exists()


def test_a_malformed_digest_record_is_one_line(good, tmp_path):
    d = tmp_path / "model"
    shutil.copytree(good, d)
    config = json.loads((d / "config.json").read_text())
    config["file_sha256"] = {"model.safetensors": "not hex"}
    (d / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserError, match="section 'file_sha256' must map file names to SHA-256 hex digests"):
        load_model(d)


@pytest.fixture(scope="module")
def exported(good, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "gpt2"
    export_model(good, out)
    return out


def test_an_export_records_its_own_files(exported):
    record = json.loads((exported / "corpusforge.json").read_text())["file_sha256"]
    assert {"model.safetensors", "tokenizer.json"} <= set(record)
    import hashlib

    assert record["model.safetensors"] == hashlib.sha256((exported / "model.safetensors").read_bytes()).hexdigest()


@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json"])
@pytest.mark.parametrize("reader", ["load", "init_from", "finetune"])
def test_one_changed_bit_in_an_exports_files_is_refused(exported, tmp_path, name, reader):
    """Every reader of a transformers directory checks an export's record: generate / evaluate (load_model),
    train.init_from, and fine-tuning's base."""
    import random

    d = tmp_path / "export"
    shutil.copytree(exported, d)
    _flip(d / name, (d / name).stat().st_size // 2, random.Random(name + reader))
    with pytest.raises(UserError, match=f"{name} is not the file this model was saved with") as info:
        if reader == "load":
            load_model(d)
        elif reader == "init_from":
            from corpusforge.trainers.init_from import initial_model

            initial_model(str(d), "decoder", 100, 16, 0.0)
        else:
            from corpusforge.trainers.finetune.methods import task_model

            task_model(d, "generate", None)
    assert "\n" not in str(info.value) and str(d) in str(info.value)


@pytest.mark.parametrize("parent_record", ["not json", '{"file_sha256": ["x"]}', '{"file_sha256": {"other/model.safetensors": "00"}}'])
def test_a_model_beside_a_record_that_is_not_its_own_loads(exported, tmp_path, parent_record):
    """Only an export's entries under a folder's own name check a folder loaded on its own (an ELECTRA generator/):
    a corpusforge.json of something else in the parent folder, damaged or not, does not refuse the model."""
    d = tmp_path / "parent" / "model"
    shutil.copytree(exported, d)
    (d / "corpusforge.json").unlink()  # a transformers directory of its own, as saved by anyone
    (d.parent / "corpusforge.json").write_text(parent_record)
    assert load_model(d).model is not None


def test_every_folder_an_export_writes_records_every_file_in_it(exported):
    """The record lists every file a loader could read (config, generation config, tokenizer files), not only the
    weights and tokenizer.json: each of them changes what the model computes."""
    record = json.loads((exported / "corpusforge.json").read_text())
    assert record["every_file"] is True and record["folders"] == []
    on_disk = {p.name for p in exported.iterdir() if p.name not in ("README.md", "corpusforge.json")
               and not p.name.startswith(".")}
    assert set(record["file_sha256"]) == on_disk and {"config.json", "generation_config.json",
                                                      "tokenizer_config.json"} <= on_disk


def _edit_json(name, key, change):
    def edit(d):
        data = json.loads((d / name).read_text())
        data[key] = change(data[key])
        (d / name).write_text(json.dumps(data))
        return f"{name} is not the file this model was saved with"
    return edit


def _gone(name):
    def remove(d):
        (d / name).unlink()
        return f"{name} is missing, but corpusforge.json records it"
    return remove


def _added(name, source):
    def add(d):
        shutil.copy(d / source, d / name)
        return f"{name} is not a file this model was saved with"
    return add


@pytest.mark.parametrize("damage", [
    _edit_json("config.json", "layer_norm_epsilon", lambda v: v * 1000),  # other logits, loaded without a sign before
    _edit_json("generation_config.json", "eos_token_id", lambda v: v + 1),  # generation stops elsewhere
    _edit_json("tokenizer_config.json", "model_max_length", lambda v: v // 2),  # other truncation
    _gone("generation_config.json"),  # transformers falls back to the config's defaults
    _gone("tokenizer_config.json"),  # the tokenizer loses its special tokens' roles
    _added("model.safetensors.index.json", "config.json"),  # an unexpected file beside the export's
    _added("adapter_config.json", "config.json"),  # transformers would load an adapter on top
], ids=["config-edit", "generation-edit", "tokenizer-config-edit", "generation-gone", "tokenizer-config-gone",
        "index-added", "adapter-added"])
def test_a_changed_missing_or_added_file_of_an_export_is_refused(exported, tmp_path, damage):
    """Every file of an export is checked against its record: the old record held the weights and tokenizer.json
    only, and each of these loaded (and generated) without a sign."""
    d = tmp_path / "export"
    shutil.copytree(exported, d)
    said = damage(d)
    with pytest.raises(UserError, match=said) as info:
        load_model(d)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("how", ["folder", "dangling link"])
def test_a_file_of_an_export_that_is_no_longer_a_file_is_refused(exported, tmp_path, how):
    d = tmp_path / "export"
    shutil.copytree(exported, d)
    (d / "generation_config.json").unlink()
    if how == "folder":
        (d / "generation_config.json").mkdir()
    else:
        (d / "generation_config.json").symlink_to("nowhere")
    with pytest.raises(UserError, match="generation_config.json is (missing|not a regular file)"):
        load_model(d)


def test_an_export_made_before_every_file_was_recorded_is_still_checked(exported, tmp_path):
    """An older export's record (weights and tokenizer.json only, no ``every_file``) still refuses a changed weight
    and loads otherwise."""
    import hashlib

    d = tmp_path / "export"
    shutil.copytree(exported, d)
    record = json.loads((d / "corpusforge.json").read_text())
    record.pop("every_file"), record.pop("folders")
    record["file_sha256"] = {name: hashlib.sha256((d / name).read_bytes()).hexdigest()
                             for name in ("model.safetensors", "tokenizer.json")}
    (d / "corpusforge.json").write_text(json.dumps(record))
    assert load_model(d).model is not None
    _flip(d / "model.safetensors", (d / "model.safetensors").stat().st_size // 2, __import__("random").Random(1))
    with pytest.raises(UserError, match="model.safetensors is not the file this model was saved with"):
        load_model(d)


def test_a_model_path_that_is_no_folder_says_what_it_is(tmp_path):
    # A mistyped --model, a file or a link loop was "PATH holds no config.json", which sends the user looking for
    # a config.json in something that is not there or not a folder.
    from corpusforge.trainers.embed import embed
    from corpusforge.trainers.finetune.predict import load_finetuned

    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "empty").mkdir()
    for name, said in [("missing", "does not exist"), ("notes.txt", "is a file, not a model folder"),
                       ("loop", "is a link that leads to no folder"), ("empty", "holds no config.json")]:
        path = tmp_path / name
        loads = (load_model, lambda p: embed(p, iter(()), str(tmp_path / "v.arrow")), load_finetuned)
        for load in loads[:1] if name == "empty" else loads:  # (predict's folder needs finetune.json)
            with pytest.raises(UserError, match=f"^{path} {said}") as info:
                load(path)
            assert "\n" not in str(info.value)
