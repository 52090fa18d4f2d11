"""ELMo's biLM (trainers/elmo.py): the elmo tokenizer family, the character table, training, layers, compile."""
import hashlib
import json

import numpy as np
import pytest
import torch

from corpusforge.tokenizer.config import TokenizerConfig
from corpusforge.tokenizer.train import train_from_texts
from corpusforge.trainers.checkpoint import load_pretrained
from corpusforge.trainers.elmo import BEGIN_WORD, END_SENTENCE, END_WORD, BiLM, ScalarMix, elmo_config, spell
from corpusforge.trainers.registry import build_objective
from tests.runs import train_on
from corpusforge.trainers.vocab import Vocabulary
from tests.trainers.conftest import make_text
from tests.trainers.test_train import config


def make_elmo_run(run_dir, n_train=300, n_val=40):
    """A run directory tokenized with a word-level tokenizer of the elmo family."""
    from corpusforge.tokenizer.special_tokens import read_special_tokens
    from corpusforge.tokenizer.token_shards import write_token_shards

    texts = make_text(n_train + n_val, seed=3)
    tokenizer = train_from_texts([texts], TokenizerConfig(family="elmo", vocab_size=200, min_frequency=1))
    tok_path = run_dir / "tokenizer" / "tokenizer.json"
    tok_path.parent.mkdir(parents=True)
    tokenizer.save(str(tok_path))
    encoded = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    splits = {}
    for name, docs in (("train", encoded[:n_train]), ("val", encoded[n_train:])):
        paths = write_token_shards(run_dir / "tokens" / name, docs, docs_per_shard=128)
        splits[name] = {"shards": [str(p.relative_to(run_dir / "tokens")) for p in paths],
                        "documents": len(docs), "tokens": sum(map(len, docs))}
    manifest = {"tokenizer": "../tokenizer/tokenizer.json",
                "tokenizer_sha256": hashlib.sha256(tok_path.read_bytes()).hexdigest(),
                "vocab_size": tokenizer.get_vocab_size(), "dtype": "uint16",
                "special_tokens": read_special_tokens(str(tok_path)).as_mapping(), "splits": splits}
    (run_dir / "tokens" / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return run_dir


@pytest.fixture(scope="module")
def elmo_run(tmp_path_factory):
    return make_elmo_run(tmp_path_factory.mktemp("elmo"))


def test_elmo_tokenizer_family_is_word_level_with_sentence_marks(elmo_run):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(elmo_run / "tokenizer" / "tokenizer.json"))
    assert tok.encode("The cat runs.").tokens == ["<S>", "The", "cat", "runs", ".", "</S>"]  # cased, whole words
    vocab = Vocabulary.from_file(elmo_run / "tokenizer" / "tokenizer.json")
    assert (vocab.pad, vocab.unk, vocab.bos, vocab.eos) == (0, 1, 2, 3)


def test_spelling_marks_words_and_sentences():
    table = spell(["<S>", "</S>", "cat", "x" * 30], "<S>", "</S>", max_chars=10)
    assert table[1, :3].tolist() == [BEGIN_WORD, END_SENTENCE, END_WORD]
    assert table[2, :5].tolist() == [BEGIN_WORD, ord("c") + 1, ord("a") + 1, ord("t") + 1, END_WORD]
    assert table[2, 5:].eq(0).all() and table[3, -1] == END_WORD  # a long word is cut before its end mark


def test_bilm_labels_are_next_and_previous_words(elmo_run):
    vocab = Vocabulary.from_file(elmo_run / "tokenizer" / "tokenizer.json")
    objective = build_objective("bilm", vocab, 8)
    tokens = np.arange(10, 20)
    example = objective.example(tokens, np.random.default_rng(0))
    assert objective.raw_length == 10
    assert example["input_ids"].tolist() == list(range(11, 19))
    assert example["labels"].tolist() == list(range(12, 20))  # forward LM: the next word
    assert example["backward_labels"].tolist() == list(range(10, 18))  # backward LM: the previous word


def test_backward_direction_never_sees_the_word_it_predicts():
    """Changing word t+1 may change the forward LM's state only after t; the backward LM's only before t."""
    torch.manual_seed(0)
    model = BiLM(elmo_config("debug", vocab_size=64, dropout=0.0)).eval()
    model.tokens.spellings.copy_(spell([f"w{i}" for i in range(64)], None, None, model.cfg.max_chars))
    ids = torch.randint(0, 64, (1, 12))
    changed = ids.clone()
    changed[0, 6] = (ids[0, 6] + 1) % 64
    with torch.no_grad():
        (_, f1, b1), (_, f2, b2) = model.states(ids), model.states(changed)
    assert torch.equal(f1[-1][0, :6], f2[-1][0, :6]) and not torch.equal(f1[-1][0, 6:], f2[-1][0, 6:])
    assert torch.equal(b1[-1][0, 7:], b2[-1][0, 7:]) and not torch.equal(b1[-1][0, :7], b2[-1][0, :7])
    layers = model.layers(ids)
    assert layers.shape == (3, 1, 12, 2 * model.cfg.d_model)
    mix = ScalarMix(3)
    assert torch.allclose(mix(layers), layers.mean(0), atol=1e-6)  # starts as the plain mean


def test_bilm_trains_compiled_in_one_graph_and_loads_back(elmo_run, tmp_path):
    import shutil

    from torch._dynamo.testing import CompileCounterWithBackend

    run = tmp_path / "run"
    shutil.copytree(elmo_run, run)
    result = train_on(config(run, "train.objective=bilm", "train.max_steps=8", "train.eval_batches=1"))
    info = json.loads((result.model_dir / "config.json").read_text())
    assert info["model"]["arch"] == "bilm" and info["family"] == "elmo"
    losses = [json.loads(line)["loss"] for line in (result.model_dir / "metrics.jsonl").read_text().splitlines()
              if json.loads(line)["split"] == "train"]
    assert losses[-1] < losses[0]
    model, _ = load_pretrained(result.model_dir)
    assert isinstance(model, BiLM) and model.tokens.spellings[5].ne(0).any()  # the table was saved
    vocab = Vocabulary.from_file(run / "tokenizer" / "tokenizer.json")
    objective = build_objective("bilm", vocab, 16)
    stream = np.random.default_rng(0).integers(4, vocab.size, size=200)
    batches = [objective.collate([objective.example(stream[i * 20:][: objective.raw_length], None) for i in range(b, b + 2)])
               for b in (0, 3)]
    model.eval()
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    with torch._dynamo.config.patch(allow_rnn=True):  # as parallelize() sets it for a model with LSTMs
        compiled = torch.compile(model, fullgraph=True, backend=counter)
        for batch in batches:
            _, loss = compiled(**batch)
            loss.backward()
            assert torch.allclose(loss, model(**batch)[1], atol=1e-5)
    assert counter.frame_count == 1


def test_elmo_family_needs_the_bilm_objective(elmo_run, tmp_path):
    import shutil

    from corpusforge.core.errors import UserError

    run = tmp_path / "run"
    shutil.copytree(elmo_run, run)
    with pytest.raises(UserError, match="elmo family trains with objective bilm"):
        train_on(config(run, "train.objective=clm", "train.model.family=elmo"))


def test_embed_writes_every_layer_or_the_scalar_mix_to_arrow(elmo_run, tmp_path, capsys):
    import shutil

    import pyarrow as pa

    from corpusforge.cli.main import main
    from corpusforge.core.errors import UserError
    from corpusforge.trainers.embed import embed
    from corpusforge.trainers.evaluate import Document

    run = tmp_path / "run"
    shutil.copytree(elmo_run, run)
    train_on(config(run, "train.objective=bilm", "train.max_steps=2"))
    data = tmp_path / "docs.jsonl"
    data.write_text("\n".join(json.dumps({"text": t}) for t in ["The cat runs.", "A small dog sleeps under the tree."]))
    out = tmp_path / "vectors.arrow"
    assert main(["embed", "--model", str(run / "model"), "--data", str(data), "--out", str(out)]) == 0
    assert "2 documents, 16 tokens (3 layers x 64 per token)" in capsys.readouterr().out
    table = pa.ipc.open_file(str(out)).read_all()
    assert table.column("tokens")[0].as_py() == ["<S>", "The", "cat", "runs", ".", "</S>"]
    layers = np.array(table.column("layers")[0].as_py())
    assert layers.shape == (3, 6, 64)
    model, _ = load_pretrained(run / "model")
    with torch.no_grad():
        expected = model.eval().layers(torch.tensor([_ids(run, "The cat runs.")]))
    np.testing.assert_allclose(layers, expected[:, 0].numpy(), atol=1e-5)
    summary = embed(run / "model", [Document("The cat runs.")], str(out), mix_weights=[0.0, 0.0, 0.0], gamma=2.0)
    mixed = np.array(pa.ipc.open_file(str(out)).read_all().column("vectors")[0].as_py())
    assert summary["column"] == "vectors" and mixed.shape == (6, 64)
    np.testing.assert_allclose(mixed, 2.0 * layers.mean(0), atol=1e-5)  # gamma x the mean for equal scalars
    with pytest.raises(UserError, match="needs 3 numbers"):
        embed(run / "model", [Document("x")], str(out), mix_weights=[1.0])
    with pytest.raises(UserError, match="not an ELMo model"):
        from tests.trainers.exports import make_model_dir

        embed(make_model_dir(tmp_path / "gpt2", "gpt2"), [Document("x")], str(out))


def _ids(run, text):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(run / "tokenizer" / "tokenizer.json")).encode(text).ids


def test_padding_changes_no_tokens_layers_when_the_mask_is_given():
    """Right padding reaches the backward LSTMs first unless each row is reversed within its own length."""
    torch.manual_seed(0)
    model = BiLM(elmo_config("debug", vocab_size=50)).eval()
    model.tokens.spellings.random_(1, 200)
    long, short = torch.randint(1, 50, (1, 7)), torch.randint(1, 50, (1, 4))
    batch, mask = torch.zeros(2, 7, dtype=torch.long), torch.zeros(2, 7, dtype=torch.long)
    batch[0], batch[1, :4], mask[0], mask[1, :4] = long, short, 1, 1
    with torch.no_grad():
        padded = model.layers(batch, mask)
        assert torch.allclose(padded[:, 0], model.layers(long)[:, 0], atol=1e-6)
        assert torch.allclose(padded[:, 1, :4], model.layers(short)[:, 0], atol=1e-6)
        assert not torch.allclose(model.layers(batch)[:, 1, :4], model.layers(short)[:, 0], atol=1e-3)
