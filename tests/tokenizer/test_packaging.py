"""Every family's tokenizer loads in AutoTokenizer with its roles, length and spacing right."""
import pytest

from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.packaging import save_transformers
from corpusforge.tokenizer.special_tokens import family_tokens
from corpusforge.tokenizer.train import train_from_texts
from tests.tokenizer.data import make_documents

transformers = pytest.importorskip("transformers")
CASES = [("decoder", "bpe"), ("bart", "bpe"), ("encoder", "wordpiece"), ("t5", "unigram")]
TEXTS = ["The river walked quickly to the library.", "  two leading spaces, trailing ones  ",
         "emoji 🙂 and CJK 日本語 and Ελληνικά", "tabs\tand\nnew lines"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    texts = [d["text"] for d in make_documents(80, seed=3)]
    out = {}
    for family, kind in CASES:
        directory = tmp_path_factory.mktemp(family)
        tok = train_from_texts([texts], TokenizerConfig(family=family, kind=kind, vocab_size=500))
        tok.save(str(directory / "tokenizer.json"))
        before = (directory / "tokenizer.json").read_bytes()
        save_transformers(str(directory / "tokenizer.json"), str(directory), model_max_length=128,
                          keep_tokenizer_json=True)
        assert (directory / "tokenizer.json").read_bytes() == before  # the hashed file stays as it was
        out[family] = directory, tok
    return out


@pytest.mark.parametrize("family", [f for f, _ in CASES])
def test_auto_tokenizer_has_every_role_the_length_and_a_pad_token(saved, family):
    directory, tok = saved[family]
    auto = transformers.AutoTokenizer.from_pretrained(directory)
    spec = family_tokens(family)
    for role, token in spec.roles.items():
        assert getattr(auto, f"{role}_token") == token and getattr(auto, f"{role}_token_id") == tok.token_to_id(token)
    assert auto.model_max_length == 128
    assert auto.pad_token is not None  # the decoder pads with <|endoftext|>, GPT-2's convention
    if family == "decoder":
        assert auto.pad_token == auto.eos_token == "<|endoftext|>"
    for text in TEXTS:
        assert auto(text)["input_ids"] == tok.encode(text).ids


def test_t5_sentinels_are_transformers_order_and_special(saved):
    directory, tok = saved["t5"]
    auto = transformers.AutoTokenizer.from_pretrained(directory)
    size = tok.get_vocab_size(with_added_tokens=True)
    ids = [auto.convert_tokens_to_ids(f"<extra_id_{i}>") for i in range(100)]
    assert ids == list(range(size - 1, size - 101, -1))
    assert set(ids) <= set(auto.all_special_ids)


@pytest.mark.parametrize("family", ["decoder", "bart", "t5"])
def test_plain_text_round_trips_exactly(saved, family):
    directory, tok = saved[family]
    auto = transformers.AutoTokenizer.from_pretrained(directory)
    # Unigram round-trips up to NFKC, on text its vocabulary covers, without leading spaces (SentencePiece's).
    for text in TEXTS if family != "t5" else TEXTS[:1]:
        ids = auto(text, add_special_tokens=False)["input_ids"]
        assert auto.unk_token_id not in ids or family != "t5"
        expected = text if family != "t5" else tok.normalizer.normalize_str(text)
        assert auto.decode(ids) == expected


def test_no_stray_space_around_the_mask_or_sentinels(saved):
    bart = transformers.AutoTokenizer.from_pretrained(saved["bart"][0])
    ids = bart("The river <mask> flows.", add_special_tokens=False)["input_ids"]
    after = bart.convert_ids_to_tokens(ids[ids.index(bart.mask_token_id) + 1])
    assert bart.convert_tokens_to_ids("Ġ") not in ids and after.startswith("Ġ")  # the space went with the mask
    for text in ("The river<mask> flows.", "<mask> at the start"):
        assert bart.decode(bart(text, add_special_tokens=False)["input_ids"]) == text
    t5 = transformers.AutoTokenizer.from_pretrained(saved["t5"][0])
    ids = t5("The river <extra_id_0>. And<extra_id_1> more", add_special_tokens=False)["input_ids"]
    tokens = t5.convert_ids_to_tokens(ids)
    first, second = tokens.index("<extra_id_0>"), tokens.index("<extra_id_1>")
    assert tokens[first - 1] != "▁" and tokens[second - 1] != "▁"  # the space before went with the sentinel
    assert tokens[first + 1] == "."  # and none is invented after it
    for text in ("The river<extra_id_0>.", "The river<extra_id_0> flows<extra_id_1>"):
        assert t5.decode(t5(text, add_special_tokens=False)["input_ids"]) == text
