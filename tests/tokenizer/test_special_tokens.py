import json

import pytest

from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.special_tokens import FAMILIES, FAMILY_TOKENS, family_tokens, read_special_tokens
from corpusforge.tokenizer.train import train_from_texts
from tests.tokenizer.data import make_documents


def test_each_family_defines_its_tokens_in_id_order():
    assert family_tokens("encoder").tokens == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    t5 = family_tokens("t5")
    assert t5.tokens == ("<pad>", "</s>", "<unk>")
    assert t5.sentinels == tuple(f"<extra_id_{i}>" for i in range(100))
    assert family_tokens("bart").tokens == ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
    assert family_tokens("decoder").tokens == ("<|endoftext|>",)
    assert set(FAMILY_TOKENS) == set(FAMILIES)


def test_roles_name_tokens_of_the_family():
    for spec in FAMILY_TOKENS.values():
        assert set(spec.roles.values()) <= set(spec.tokens)
    assert family_tokens("encoder").roles["mask"] == "[MASK]"
    assert family_tokens("bart").roles["eos"] == "</s>"
    assert "pad" not in family_tokens("decoder").roles and "unk" not in family_tokens("decoder").roles


def test_unknown_family_names_the_choices():
    with pytest.raises(ValueError, match="encoder, t5, bart, decoder"):
        family_tokens("gpt")


@pytest.mark.parametrize("family", FAMILIES)
def test_ids_read_back_from_a_trained_tokenizer(family):
    texts = [d["text"] for d in make_documents(60, seed=3)]
    cfg = TokenizerConfig(family=family, vocab_size=400)
    tok = train_from_texts([texts], cfg)
    ids = read_special_tokens(tok.to_str())
    spec = family_tokens(family)
    assert ids.family == family
    # Listed first to the trainer, the special tokens hold ids 0..n-1 in the family's order.
    assert {t: ids.token_ids[t] for t in spec.tokens} == {token: i for i, token in enumerate(spec.tokens)}
    assert ids.ids == {role: spec.tokens.index(token) for role, token in spec.roles.items()}
    size = tok.get_vocab_size(with_added_tokens=True)
    # T5's order: the sentinels take the top of the vocabulary, <extra_id_0> the highest id, counting down.
    assert ids.sentinel_ids == tuple(range(size - 1, size - 101, -1)) if family == "t5" else ids.sentinel_ids == ()
    mapping = ids.as_mapping()
    if family == "t5":
        assert size == 400 and mapping["extra_id_0"] == 399 and mapping["extra_id_99"] == 300
    assert all(isinstance(v, int) for v in mapping.values())


def test_read_special_tokens_from_a_file_and_rejects_foreign_tokenizers(tmp_path):
    texts = [d["text"] for d in make_documents(30, seed=4)]
    tok = train_from_texts([texts], TokenizerConfig(family="bart", vocab_size=400))
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    assert read_special_tokens(str(path))["mask"] == 4
    data = json.loads(path.read_text())
    data["added_tokens"] = [t for t in data["added_tokens"] if t["content"] != "<mask>"]
    with pytest.raises(ValueError, match="none of the known special-token sets"):
        read_special_tokens(data)
