import json

import pytest
from tokenizers import Tokenizer

from corpusforge.core.config_loader import ConfigError
from corpusforge.core.errors import UserError
from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.special_tokens import family_tokens
from corpusforge.tokenizer.train import _Sample, load_transformers, train_from_shards, train_from_texts
from tests.tokenizer.data import make_documents

# (family, kind): each algorithm, and each family's post-processing.
CASES = [("decoder", "bpe"), ("bart", "bpe"), ("encoder", "wordpiece"), ("t5", "unigram"), ("encoder", "unigram")]
HELDOUT_MB = 0.03  # ~10% of the 275 KB test corpus
TRICKY = [
    "Plain ASCII, with punctuation: (a) [b] {c}!",
    "  two leading spaces, trailing ones  ",
    "tabs\tand\nnew lines\r\nand\n\n\nblank lines",
    "emoji 🙂🚀 and CJK 日本語のテキスト and Ελληνικά",
    "control \x00\x07 bytes and combining e\u0301 accents",
    "a literal <|endoftext|> and [SEP] and </s> inside the text",
    "",
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, clean_dir):
    out = {}
    for family, kind in CASES:
        directory = tmp_path_factory.mktemp(f"tok-{family}-{kind}")
        cfg = TokenizerConfig(family=family, kind=kind, vocab_size=500, heldout_mb=HELDOUT_MB)
        report = train_from_shards(cfg, str(clean_dir), str(directory))
        out[family, kind] = directory, report
    return out


@pytest.mark.parametrize("family,kind", CASES)
def test_saves_one_tokenizer_json_that_transformers_loads(trained, family, kind):
    directory, report = trained[family, kind]
    path = directory / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    hf = load_transformers(str(path))
    assert len(hf) == tok.get_vocab_size() == report["vocab_size"]
    spec = family_tokens(family)
    for role, token in spec.roles.items():
        assert getattr(hf, f"{role}_token") == token
        assert getattr(hf, f"{role}_token_id") == spec.tokens.index(token)
    text = "The river walked quickly to the library."
    assert hf(text)["input_ids"] == tok.encode(text).ids


def test_transformers_plain_constructor_and_auto_tokenizer_load_it(trained):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    directory, _ = trained["encoder", "wordpiece"]
    plain = PreTrainedTokenizerFast(tokenizer_file=str(directory / "tokenizer.json"))
    auto = AutoTokenizer.from_pretrained(str(directory))
    text = "the garden of the city"
    assert plain(text)["input_ids"] == auto(text)["input_ids"]
    assert auto.mask_token == "[MASK]" and auto.pad_token_id == 0 and auto.cls_token_id == 2


@pytest.mark.parametrize("family,kind", CASES)
def test_post_processing_wraps_sequences_as_the_family_expects(trained, family, kind):
    directory, _ = trained[family, kind]
    hf = load_transformers(str(directory / "tokenizer.json"))
    body = hf("the morning river", add_special_tokens=False)["input_ids"]
    single = hf("the morning river")["input_ids"]
    pair = hf("the morning river", "a quiet city")["input_ids"]
    other = hf("a quiet city", add_special_tokens=False)["input_ids"]
    t = hf.convert_tokens_to_ids
    expected = {
        "encoder": ([t("[CLS]")] + body + [t("[SEP]")], [t("[CLS]")] + body + [t("[SEP]")] + other + [t("[SEP]")]),
        "t5": (body + [t("</s>")], body + [t("</s>")] + other + [t("</s>")]),
        "bart": ([t("<s>")] + body + [t("</s>")], [t("<s>")] + body + [t("</s>"), t("</s>")] + other + [t("</s>")]),
        "decoder": (body, body + other),
    }[family]
    assert (single, pair) == expected
    if family == "encoder":
        assert hf("the morning river", "a quiet city")["token_type_ids"] == [0] * (len(body) + 2) + [1] * (len(other) + 1)


@pytest.mark.parametrize("family", ["decoder", "bart"])
def test_byte_level_bpe_round_trips_any_text_exactly(trained, family):
    directory, report = trained[family, "bpe"]
    tok = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tok.encode_special_tokens = True
    hf = load_transformers(str(directory / "tokenizer.json"))
    for text in TRICKY:
        ids = tok.encode(text, add_special_tokens=False).ids
        assert tok.decode(ids) == text
        assert hf.decode(ids) == text
    assert report["heldout"]["round_trip_share"] == 1.0
    assert report["heldout"]["unk_share"] == 0.0


def test_wordpiece_and_unigram_round_trip_up_to_their_normalisation(trained, corpus_docs):
    texts = [d["text"] for d in corpus_docs[:50]]
    wp = Tokenizer.from_file(str(trained["encoder", "wordpiece"][0] / "tokenizer.json"))
    for text in texts:
        decoded = wp.decode(wp.encode(text).ids)
        assert decoded.split() == wp.decode(wp.encode(decoded).ids).split()
        assert "".join(decoded.split()) == "".join(wp.normalizer.normalize_str(text).split())
    ug = Tokenizer.from_file(str(trained["t5", "unigram"][0] / "tokenizer.json"))
    for text in texts:
        assert ug.decode(ug.encode(text).ids) == ug.normalizer.normalize_str(text)
    assert trained["t5", "unigram"][1]["heldout"]["round_trip_share"] == 1.0


def test_wordpiece_case_and_accent_options():
    texts = [d["text"] for d in make_documents(80, seed=5)]
    uncased = train_from_texts([texts], TokenizerConfig(family="encoder", vocab_size=400))
    cased = train_from_texts([texts], TokenizerConfig(family="encoder", vocab_size=400, lowercase=False))
    keep_accents = train_from_texts([texts], TokenizerConfig(family="encoder", vocab_size=400, strip_accents=False))
    assert uncased.normalizer.normalize_str("Café Über") == "cafe uber"
    assert cased.normalizer.normalize_str("Café Über") == "Café Über"
    assert keep_accents.normalizer.normalize_str("Café Über") == "café über"
    assert "[CLS]" == cased.id_to_token(cased.encode("River").ids[0])
    assert any(tok[0].isupper() for tok in cased.get_vocab())
    assert not any(tok[0].isupper() for tok in uncased.get_vocab() if not tok.startswith("["))


def test_report_measures_compression_unknowns_and_longest_tokens(trained):
    directory, report = trained["encoder", "wordpiece"]
    on_disk = json.loads((directory / "report.json").read_text())
    assert on_disk == report
    held = report["heldout"]
    assert held["documents"] > 0 and held["tokens"] > 0
    assert held["chars_per_token"] == pytest.approx(held["chars"] / held["tokens"], abs=1e-3)
    assert held["bytes_per_token"] == pytest.approx(held["bytes"] / held["tokens"], abs=1e-3)
    assert held["bytes"] >= held["chars"]
    assert 0.0 <= held["unk_share"] < 0.05
    assert report["training"]["documents"] + held["documents"] == 600
    longest = report["longest_tokens"]
    assert longest and [t["bytes"] for t in longest] == sorted((t["bytes"] for t in longest), reverse=True)
    assert report["special_tokens"] == {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}
    assert report["tokenizer_sha256"] != ""


def test_wordpiece_counts_unknown_characters(trained):
    from corpusforge.tokenizer.train import measure

    tok = Tokenizer.from_file(str(trained["encoder", "wordpiece"][0] / "tokenizer.json"))
    assert tok.encode("☃").tokens == ["[CLS]", "[UNK]", "[SEP]"]  # never seen in the corpus
    report = measure(tok, ["☃ river", "river"], "wordpiece")
    assert report["tokens"] == 3 and report["unk_share"] == pytest.approx(1 / 3, abs=1e-5)
    assert report["round_trip_share"] == 0.5


def test_training_streams_batches_and_samples_by_seed(clean_dir):
    from corpusforge.tokenizer.corpus import clean_shards, text_bytes

    paths = [p for p, _ in clean_shards(str(clean_dir))]
    docs, total = text_bytes(paths)
    assert docs == 600
    cfg = TokenizerConfig(sample_mb=total / 3 / 1e6, heldout_mb=0, batch_size=40, seed=1)
    sample = _Sample(paths, cfg, total)
    batches = list(sample.batches())
    assert all(len(b) <= 40 for b in batches)
    assert 120 < sample.documents < 280  # about a third
    again = _Sample(paths, cfg, total)
    assert list(again.batches()) == batches
    other = _Sample(paths, TokenizerConfig(sample_mb=total / 3 / 1e6, heldout_mb=0, batch_size=40, seed=2), total)
    assert list(other.batches()) != batches


def test_training_is_deterministic(clean_dir, tmp_path):
    cfg = TokenizerConfig(family="decoder", vocab_size=400, heldout_mb=0.01)
    train_from_shards(cfg, str(clean_dir), str(tmp_path / "a"))
    train_from_shards(cfg, str(clean_dir), str(tmp_path / "b"))
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (tmp_path / "b" / "tokenizer.json").read_bytes()


def test_bad_settings_fail_with_a_message(tmp_path, clean_dir):
    with pytest.raises(ConfigError, match="family decoder has none"):
        TokenizerConfig(family="decoder", kind="unigram")
    with pytest.raises(ConfigError, match="vocab_size must be >= 100"):
        TokenizerConfig(vocab_size=10)
    with pytest.raises(UserError, match=">= 257"):
        train_from_shards(TokenizerConfig(family="decoder", vocab_size=200), str(clean_dir), str(tmp_path / "x"))
    with pytest.raises(UserError, match="no clean shards"):
        train_from_shards(TokenizerConfig(), str(tmp_path / "nothing"), str(tmp_path / "y"))


@pytest.mark.parametrize("settings,length", [(["train.seq_len=96"], 96),
                                             (["train.seq_len=96", "tokenizer.model_max_length=64"], 64)])
def test_the_run_tokenizer_records_the_training_length_for_transformers(tmp_path, clean_dir, settings, length):
    from transformers import AutoTokenizer

    from corpusforge.config import load_config
    from tests.runs import train_tokenizer_on

    run = tmp_path / "run"
    train_tokenizer_on(load_config(None, [f"output.run_dir={run}", f"tokenizer.input={clean_dir}",
                                          "tokenizer.vocab_size=300", *settings]), progress=False)
    auto = AutoTokenizer.from_pretrained(str(run / "tokenizer"))
    assert auto.model_max_length == length
    assert len(auto("word " * 500, truncation=True)["input_ids"]) == length


def test_retraining_swaps_the_tokenizer_in_only_when_it_succeeded(tmp_path, clean_dir, monkeypatch):
    from corpusforge.config import load_config
    from corpusforge.core.errors import UserError
    from corpusforge.tokenizer import train as train_module
    from tests.runs import train_tokenizer_on

    run = tmp_path / "run"
    settings = [f"output.run_dir={run}", f"tokenizer.input={clean_dir}", "tokenizer.vocab_size=300"]
    train_tokenizer_on(load_config(None, settings), progress=False)
    before = {p.name: p.read_bytes() for p in (run / "tokenizer").iterdir()}
    assert sorted(before) == ["report.json", "tokenizer.json", "tokenizer_config.json"]

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "measure", killed)
    with pytest.raises(KeyboardInterrupt):
        train_tokenizer_on(load_config(None, settings + ["output.overwrite=true", "tokenizer.vocab_size=400"]),
                           progress=False)
    assert {p.name: p.read_bytes() for p in (run / "tokenizer").iterdir()} == before
    assert not [p for p in run.iterdir() if p.name.startswith(".tmp-")]
    monkeypatch.undo()
    (run / "tokenizer" / "vocab.txt").write_text("mine")
    with pytest.raises(UserError, match="vocab.txt was not written by corpusforge"):
        train_tokenizer_on(load_config(None, settings + ["output.overwrite=true"]), progress=False)
    (run / "tokenizer" / "vocab.txt").unlink()
    report = train_tokenizer_on(load_config(None, settings + ["output.overwrite=true", "tokenizer.vocab_size=400"]),
                                progress=False)
    assert json.loads((run / "tokenizer" / "report.json").read_text())["vocab_size"] == report["vocab_size"]


def test_tokenizer_output_elsewhere_is_written_under_that_folders_lock(tmp_path, clean_dir):
    """tokenizer.output outside the run: its own marker, read, changed and written under its own lock (before,
    only the run's lock was held)."""
    from corpusforge.config import load_config
    from tests.lock_holder import held_by_another_process
    from tests.runs import train_tokenizer_on

    out = tmp_path / "tok-elsewhere"
    settings = [f"output.run_dir={tmp_path / 'run'}", f"tokenizer.input={clean_dir}", f"tokenizer.output={out}",
                "tokenizer.vocab_size=300"]
    with held_by_another_process(out, "tokenizer train") as pid:
        with pytest.raises(UserError, match=rf"in use by `corpusforge tokenizer train` \(pid {pid} on "):
            train_tokenizer_on(load_config(None, settings), progress=False)
    assert not (out / "tokenizer.json").exists()
    train_tokenizer_on(load_config(None, settings), progress=False)
    assert (out / "tokenizer.json").is_file() and not (out / ".corpusforge.lock").exists()
