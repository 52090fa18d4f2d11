"""generate, fill-mask and evaluate give what plain transformers code gives on the exported model."""
import json
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpusforge.core.errors import UserError
from corpusforge.trainers.evaluate import Document, evaluate, read_documents
from corpusforge.trainers.export import export_model, load_model
from corpusforge.trainers.fill_mask import fill_mask
from corpusforge.trainers.generate import GenerateOptions, encode_prompts, generate
from tests.trainers.exports import make_model_dir

transformers = pytest.importorskip("transformers")
PROMPTS = ["The cat", "A lazy dog sleeps near the river and", "Blue"]
TEXTS = [("The cat runs over the green house.", "web"), ("A lazy dog sleeps near the river. " * 12, "books"),
         ("Blue fish sings.", "web")]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """family -> (run model dir, export dir)"""
    out = {}
    for family in ("gpt2", "bert", "t5", "bart"):
        root = tmp_path_factory.mktemp(family)
        model_dir = make_model_dir(root / "model", family)
        out[family] = model_dir, export_model(model_dir, root / "export")
    return out


@pytest.mark.parametrize("family", ["gpt2", "t5", "bart"])
def test_greedy_equals_transformers_generate_on_the_export(dirs, family):
    model_dir, export_dir = dirs[family]
    ours = generate(load_model(model_dir), PROMPTS, GenerateOptions(max_new_tokens=12, greedy=True, batch_size=2))
    exported = load_model(export_dir)
    auto = transformers.AutoModelForCausalLM if family == "gpt2" else transformers.AutoModelForSeq2SeqLM
    hf = auto.from_pretrained(export_dir).eval()
    tok = transformers.AutoTokenizer.from_pretrained(export_dir)
    for prompt, row in zip(PROMPTS, ours):
        batch = encode_prompts(exported, [prompt])  # one prompt: no padding at all
        with torch.no_grad():
            ids = hf.generate(**batch, do_sample=False, max_new_tokens=12)[0].tolist()
        ids = ids[batch["input_ids"].size(1):] if family == "gpt2" else ids[1:]  # drop the prompt / decoder start
        eos = hf.generation_config.eos_token_id
        ids = ids[: ids.index(eos)] if eos in ids else ids
        assert row["completion"] == tok.decode(ids, skip_special_tokens=True)
        assert row["tokens"] == len(ids)


@pytest.mark.parametrize("family", ["gpt2", "bart"])
@pytest.mark.parametrize("source", [0, 1])  # a run's model/, its export
def test_a_prompt_and_max_new_tokens_past_the_models_positions_is_one_line_saying_what_fits(dirs, family, source):
    """Learned positions end (64 here): a prompt plus --max-new-tokens past them raised IndexError (a traceback,
    even at the default 64 with a long prompt, and at --max-new-tokens 10**9); what fits runs, one token more is
    refused naming the most that fits, a prompt that leaves no room is refused naming it."""
    loaded = load_model(dirs[family][source])
    prompt = "The cat"
    n = int(encode_prompts(loaded, [prompt])["attention_mask"].sum())
    room = 64 - n if family == "gpt2" else 64 - 1  # a decoder's prompt takes positions; BART's decoder starts at 1
    generate(loaded, [prompt, "Blue"], GenerateOptions(max_new_tokens=room, greedy=True, batch_size=2))
    first = 2 if family == "gpt2" else 1  # the shorter "Blue" still fits a decoder; BART's room is the prompt's
    with pytest.raises(UserError, match=f"prompt {first} .*pass --max-new-tokens {room} or fewer") as info:
        generate(loaded, ["Blue", prompt], GenerateOptions(max_new_tokens=room + 1, greedy=True))
    assert "\n" not in str(info.value)
    with pytest.raises(UserError, match="prompt 1 is [0-9]+ tokens and --max-new-tokens 1000000000 would run past"):
        generate(loaded, ["Blue", prompt], GenerateOptions(max_new_tokens=10**9, greedy=True))
    with pytest.raises(UserError, match="prompt 1 is [0-9]+ tokens; the model reads 64 at most: shorten it"):
        generate(loaded, ["the cat " * 64], GenerateOptions(max_new_tokens=1, greedy=True))


@pytest.mark.parametrize("family", ["gpt2", "bart"])
def test_a_literal_special_token_in_a_prompt_is_text_as_fine_tuning_encodes_it(dirs, family):
    # predict's prompts (as_text) are encoded as fine-tuning encoded the records (finetune.encode:
    # split_special_tokens), so a fine-tuned model reads a record's literal "</s>" as it did in training
    loaded = load_model(dirs[family][1])
    tok = loaded.tokenizer
    prompt = f"The cat {tok.eos_token} runs"
    ids = encode_prompts(loaded, [prompt], as_text=True)["input_ids"][0].tolist()
    if family == "gpt2":
        start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        assert ids == [start] + tok(prompt, add_special_tokens=False, split_special_tokens=True)["input_ids"]
        assert tok.eos_token_id not in ids[1:]
    else:
        assert ids == tok(prompt, split_special_tokens=True)["input_ids"]
        assert ids.count(tok.eos_token_id) == 1 and ids[-1] == tok.eos_token_id  # only the template's own


def test_a_t5_prompt_keeps_its_sentinel_for_generate(dirs):
    # the generate command reads special tokens in a prompt: a pretrained T5 is asked to fill <extra_id_0>
    loaded = load_model(dirs["t5"][1])
    tok = loaded.tokenizer
    ids = encode_prompts(loaded, ["The cat <extra_id_0> the mat"])["input_ids"][0].tolist()
    assert tok.convert_tokens_to_ids("<extra_id_0>") in ids


def test_predict_encodes_generate_prompts_as_text(dirs, monkeypatch):
    from corpusforge.trainers import generate as generation
    from corpusforge.trainers.finetune.data import Example
    from corpusforge.trainers.finetune.predict import Finetuned, predict

    seen = []
    encode = generation.encode_prompts
    monkeypatch.setattr(generation, "encode_prompts", lambda *a, **k: seen.append(a[2:] + tuple(k.values())) or
                        encode(*a, **k))
    loaded = load_model(dirs["gpt2"][1])
    for method in ("full", "prefix"):  # generate(), and prefix tuning's decoding without a cache
        tuned = Finetuned(loaded.model, loaded.tokenizer, {"task": "generate", "method": method, "arch": "decoder"})
        predict(tuned, [Example("e", "The cat", None)], max_new_tokens=2)
    assert seen == [(True,), (True,)]


@pytest.mark.parametrize("family", ["gpt2", "t5"])
def test_kv_cache_batching_and_seed_change_nothing_they_should_not(dirs, family):
    loaded = load_model(dirs[family][0])
    greedy = GenerateOptions(max_new_tokens=10, greedy=True, batch_size=3)
    batched = generate(loaded, PROMPTS, greedy)
    assert batched == generate(loaded, PROMPTS, GenerateOptions(max_new_tokens=10, greedy=True, batch_size=1))
    assert batched == generate(loaded, PROMPTS, GenerateOptions(max_new_tokens=10, greedy=True, use_cache=False))
    sampled = GenerateOptions(max_new_tokens=10, temperature=1.5, top_k=50, top_p=0.95, seed=3)
    assert generate(loaded, PROMPTS, sampled) == generate(loaded, PROMPTS, sampled)


@pytest.mark.parametrize("source", [0, 1])
def test_fill_mask_past_the_positions_or_the_vocabulary_is_one_line_saying_what_fits(dirs, source):
    # A text longer than BERT's 64 positions raised RuntimeError (tensor sizes), --top-k past the vocabulary
    # RuntimeError (selected index k out of range): tracebacks.
    loaded = load_model(dirs["bert"][source])
    vocab = len(loaded.tokenizer)
    assert len(fill_mask(loaded, "the [MASK] river", top_k=vocab)) == vocab
    with pytest.raises(UserError, match=f"--top-k {vocab + 1} is more than the model's {vocab} tokens; pass {vocab} "
                                        "or fewer"):
        fill_mask(loaded, "the [MASK] river", top_k=vocab + 1)
    with pytest.raises(UserError, match="the text is [0-9]+ tokens; the model reads 64 at most: shorten it"):
        fill_mask(loaded, "the cat " * 64 + "[MASK] river")


def test_stop_strings_cut_the_completion(dirs):
    loaded = load_model(dirs["gpt2"][0])
    full = generate(loaded, ["The cat"], GenerateOptions(max_new_tokens=16, greedy=True))[0]
    assert len(full["completion"]) > 3
    stop = full["completion"][2:4]
    cut = generate(loaded, ["The cat"], GenerateOptions(max_new_tokens=16, greedy=True, stop=(stop,)))[0]
    assert cut["stopped"] == "stop_string" and stop not in cut["completion"]
    assert full["completion"].startswith(cut["completion"])


def test_fill_mask_top1_equals_the_pipeline_on_the_export(dirs):
    model_dir, export_dir = dirs["bert"]
    text = "the cat [MASK] over the green house."
    ours = fill_mask(load_model(model_dir), text.replace("[MASK]", "<mask>"), top_k=3)
    theirs = transformers.pipeline("fill-mask", model=str(export_dir))(text, top_k=3)
    assert len(ours) == 3 and set(ours[0]) >= {"token_str", "score"}
    assert (ours[0]["token_str"], ours[0]["token"]) == (theirs[0]["token_str"], theirs[0]["token"])
    assert math.isclose(ours[0]["score"], theirs[0]["score"], rel_tol=1e-4)
    with pytest.raises(UserError, match="exactly one mask"):
        fill_mask(load_model(model_dir), "no mask here")
    with pytest.raises(UserError, match="needs an encoder"):
        fill_mask(load_model(dirs["gpt2"][0]), "a <mask>")


def plain_bits_per_byte(export_dir, texts):
    """Bits per byte as anyone would compute it with transformers: each document after an end-of-text token,
    in disjoint windows of the model's length, NLL summed over the UTF-8 bytes."""
    model = transformers.AutoModelForCausalLM.from_pretrained(export_dir).eval()
    tok = transformers.AutoTokenizer.from_pretrained(export_dir)
    length, nll, size = model.config.n_positions, 0.0, 0
    for text in texts:
        ids = [tok.eos_token_id] + tok(text)["input_ids"]
        for i in range(0, len(ids) - 1, length):
            window = torch.tensor([ids[i: i + length + 1]])
            with torch.no_grad():
                logits = model(window[:, :-1]).logits
            nll += torch.nn.functional.cross_entropy(logits[0], window[0, 1:], reduction="sum").item()
        size += len(text.encode("utf-8"))
    return nll / math.log(2) / size


def test_decoder_bits_per_byte_equal_plain_transformers_code(dirs):
    model_dir, export_dir = dirs["gpt2"]
    docs = [Document(t, s) for t, s in TEXTS]
    assert len(load_model(model_dir).tokenizer(TEXTS[1][0])["input_ids"]) > 64  # several windows
    result = evaluate(load_model(model_dir), docs, batch_size=3)
    assert math.isclose(result["bits_per_byte"], plain_bits_per_byte(export_dir, [t for t, _ in TEXTS]), rel_tol=1e-5)
    assert result["bytes"] == sum(len(t.encode()) for t, _ in TEXTS) and result["documents"] == 3
    web, books = result["by_source"]["web"], result["by_source"]["books"]
    assert web["tokens"] + books["tokens"] == result["tokens"]
    assert math.isclose(web["loss"] * web["tokens"] + books["loss"] * books["tokens"], result["loss"] * result["tokens"])
    assert math.isclose(result["perplexity"], math.exp(result["loss"]))
    assert evaluate(load_model(export_dir), docs) == result | {}  # the export measures the same


def test_a_literal_end_of_text_in_held_out_text_is_scored_as_text(dirs):
    # held-out text is data, encoded as in pretraining: the literal is scored as the pieces that spell it, not as
    # one control token (which would end the document early and make bits per byte depend on it)
    loaded = load_model(dirs["gpt2"][0])
    eos = loaded.tokenizer.eos_token
    with_literal = evaluate(loaded, [Document(f"Blue fish sings {eos} and swims.", "web")])
    without = evaluate(loaded, [Document("Blue fish sings  and swims.", "web")])
    spelled = len(loaded.tokenizer(eos, add_special_tokens=False, split_special_tokens=True)["input_ids"])
    assert spelled > 1 and with_literal["tokens"] - without["tokens"] >= spelled - 1


@pytest.mark.parametrize("family", ["bert", "t5", "bart"])
def test_encoders_and_seq2seq_report_their_objective_deterministically(dirs, family):
    docs = [Document(t, s) for t, s in TEXTS]
    loaded = load_model(dirs[family][0])
    first, again = evaluate(loaded, docs, seed=1), evaluate(loaded, docs, seed=1)
    assert first == again and first["objective"] == {"bert": "mlm", "t5": "span", "bart": "bart"}[family]
    assert first["tokens"] > 0 and math.isfinite(first["bits_per_byte"])
    assert evaluate(loaded, docs, seed=2)["loss"] != first["loss"]


def test_read_documents_from_jsonl_parquet_and_arrow(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "a.jsonl").write_text("".join(json.dumps({"text": t, "source": s}) + "\n" for t, s in TEXTS))
    table = pa.table({"text": [t for t, _ in TEXTS], "source": [s for _, s in TEXTS]})
    pq.write_table(table, tmp_path / "b.parquet")
    with pa.OSFile(str(tmp_path / "c.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    for name in ("a.jsonl", "b.parquet", "c.arrow"):
        assert [(d.text, d.source) for d in read_documents(str(tmp_path / name))] == TEXTS
    with pytest.raises(UserError, match="does not exist"):
        list(read_documents(str(tmp_path / "missing.jsonl")))


def test_a_run_directory_gives_its_val_split(tmp_path):
    from corpusforge.tokenizer.tokenize import ShardPlan
    from tests.tokenizer.data import make_documents, write_clean_shards

    docs = make_documents(200, seed=2)
    write_clean_shards(tmp_path / "clean", docs)
    (tmp_path / "tokens").mkdir()
    (tmp_path / "tokens" / "manifest.json").write_text(json.dumps({"val_fraction": 0.2, "split_seed": 5}))
    plan = ShardPlan(train_shards=1, val_shards=1, val_fraction=0.2, split_seed=5, dtype="uint16")
    expected = sorted(d["text"] for d in docs if plan.assign(d["id"])[0] == "val")
    got = sorted(d.text for d in read_documents(str(tmp_path)))
    assert got == expected and 10 < len(got) < 80
    # a small corpus's val split was raised above val_fraction (tokenize.min_val_documents): the manifest's
    # val_threshold is what tokenize compared the hashes with, so it is what names the val documents
    (tmp_path / "tokens" / "manifest.json").write_text(json.dumps({"val_fraction": 0.01, "val_threshold": 0.2,
                                                                   "split_seed": 5}))
    assert sorted(d.text for d in read_documents(str(tmp_path))) == expected


def test_device_choice_for_inference():
    from corpusforge.trainers.export import inference_device

    assert inference_device("cpu").type == "cpu"
    assert inference_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="--device cuda but no CUDA device"):
            inference_device("cuda")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_generate_evaluate_and_fill_mask_on_cuda_match_the_cpu(dirs):
    model_dir, _ = dirs["gpt2"]
    options = GenerateOptions(max_new_tokens=8, greedy=True)
    on_gpu = load_model(model_dir, "cuda")
    assert next(on_gpu.model.parameters()).is_cuda
    assert generate(on_gpu, PROMPTS, options) == generate(load_model(model_dir), PROMPTS, options)
    docs = [Document(t, s) for t, s in TEXTS]
    assert math.isclose(evaluate(on_gpu, docs)["loss"], evaluate(load_model(model_dir), docs)["loss"], rel_tol=1e-4)
    bert_dir, _ = dirs["bert"]
    text = "the cat <mask> over the green house."
    assert fill_mask(load_model(bert_dir, "cuda"), text, 1)[0]["token"] == fill_mask(load_model(bert_dir), text, 1)[0]["token"]


@pytest.mark.parametrize("family,command", [("gpt2", "generate"), ("bart", "generate"), ("bert", "fill-mask")])
def test_a_huge_prompt_is_refused_from_a_prefix_without_tokenising_it_whole(dirs, family, command, monkeypatch):
    # A 54 MB prompt was refused only after ~90 s of tokenising all of it; now a prefix of 16 characters a position,
    # cut where a word ends, shows it is too long. Counted, not timed: the longest text the tokenizer is handed.
    loaded = load_model(dirs[family][1])
    tok = type(loaded.tokenizer)
    longest = [0]
    real = tok.__call__

    def measured(self, text, *args, **kwargs):
        longest[0] = max(longest[0], len(text) if isinstance(text, str) else max(map(len, text)))
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(tok, "__call__", measured)
    huge = "the cat sat on the warm mat " * 40_000 + "[MASK] river"  # ~1.1 M characters
    with pytest.raises(UserError, match=r"is at least [0-9,]+ tokens \((its first [0-9,]+ of 1,120,012 characters|"
                                        r"1,120,012 bytes, at most [0-9]+ a token)\); "
                                        r"the model reads 64 at most: shorten it") as info:
        if command == "generate":
            generate(loaded, ["Blue", huge], GenerateOptions(max_new_tokens=1, greedy=True))
        else:
            fill_mask(loaded, huge)
    assert "\n" not in str(info.value) and (command != "generate" or "prompt 2 " in str(info.value))
    assert longest[0] <= 65 * 16 + 32  # the prefix and its tail (PREFIX_TAIL_CHARS)


@pytest.mark.parametrize("family", ["gpt2", "bart"])
def test_a_huge_prompt_without_a_word_end_is_refused_from_its_length_by_a_byte_level_bpe(dirs, family, monkeypatch):
    # 2 MB of "a" has no word end to cut a prefix at: it was tokenised whole (5 s; 54 MB: over 2 minutes). A
    # byte-level BPE covers every byte with tokens no longer than its longest vocabulary string.
    from corpusforge.trainers.generate import bytes_per_token

    loaded = load_model(dirs[family][1])
    most = bytes_per_token(loaded.tokenizer)
    assert most == max(len(t.encode()) for t in loaded.tokenizer.get_vocab())
    calls = []
    real = type(loaded.tokenizer).__call__
    monkeypatch.setattr(type(loaded.tokenizer), "__call__", lambda self, text, *a, **k: calls.append(text) or
                        real(self, text, *a, **k))
    with pytest.raises(UserError, match=rf"prompt 1 is at least [0-9,]+ tokens \(2,000,000 bytes, at most {most} a "
                                        r"token\); the model reads 64 at most"):
        generate(loaded, ["a" * 2_000_000], GenerateOptions(max_new_tokens=1, greedy=True))
    assert calls == []
    # and the bound is sound: never more than the tokens the text has
    for text in ["a" * 5000, "é" * 3000 + " x", "<|endoftext|>" * 400, "  \n\t " * 900]:
        assert -(-len(text.encode()) // most) <= len(loaded.tokenizer(text)["input_ids"])


def test_no_bound_from_the_length_where_a_token_may_cover_a_whole_word(dirs):
    from corpusforge.trainers.generate import bytes_per_token

    assert bytes_per_token(load_model(dirs["bert"][1]).tokenizer) is None  # WordPiece: [UNK] for a long word
    assert bytes_per_token(load_model(dirs["t5"][1]).tokenizer) is None  # a normalizer (NFKC)


def test_the_prefix_is_cut_where_the_tokenizer_splits_so_its_tokens_begin_the_whole_texts(dirs):
    from corpusforge.trainers.generate import prompt_ids, tokens_at_least

    loaded = load_model(dirs["gpt2"][1])
    text = "  Blue fish sings,\tthe   river  " * 200 + "end"
    n, how = tokens_at_least(text, 64, loaded.tokenizer, {"add_special_tokens": False}, 1)
    characters = int(how.split()[2].replace(",", ""))  # "its first 1,035 of 6,403 characters"
    assert 65 * 16 - 40 < characters <= 65 * 16  # the words in the last 32 of 1,072 characters are not counted
    assert prompt_ids(loaded, text)[:n] == prompt_ids(loaded, text[:characters])
    assert tokens_at_least("short text", 64, loaded.tokenizer) is None
    assert tokens_at_least("x" * 5000, 64, loaded.tokenizer) is None  # one word: nothing counted, no length bound


HUGE_WITHOUT_SPACES = {"cjk": "我们今天去公园散步了" * 100_000, "base64": "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123+/=" * 25_000,
                       "json": '{"a":1,"b":[2,3],"c":{"d":"e"}},' * 35_000, "summarise cjk": "Summarise: " + "我们今天去公园散步了" * 100_000}


@pytest.mark.parametrize("kind", sorted(HUGE_WITHOUT_SPACES))
@pytest.mark.parametrize("family,command", [("gpt2", "generate"), ("bart", "generate"), ("bert", "fill-mask")])
def test_a_huge_prompt_without_spaces_is_refused_from_the_tokenizers_own_splits(dirs, family, command, kind,
                                                                                 monkeypatch):
    # A prefix was cut only where a regex found a word end and whitespace: CJK, base64 and minified JSON have none,
    # so BERT tokenised all of them (1 M characters: 5-7 s). Now the tokenizer's own words (BERT: each CJK
    # character, each punctuation mark) count; a byte-level BPE's single run of letters is bounded by its bytes.
    loaded = load_model(dirs[family][1])
    longest = [0]
    real = type(loaded.tokenizer).__call__

    def measured(self, text, *args, **kwargs):
        longest[0] = max(longest[0], len(text))
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(type(loaded.tokenizer), "__call__", measured)
    huge = HUGE_WITHOUT_SPACES[kind]
    with pytest.raises(UserError, match=r"is at least [0-9,]+ tokens \((its first|[0-9,]+ bytes).*the model reads 64 "
                                        r"at most: shorten it"):
        if command == "generate":
            generate(loaded, [huge], GenerateOptions(max_new_tokens=1, greedy=True))
        else:
            fill_mask(loaded, huge + "[MASK]")
    assert longest[0] <= 65 * 16 + 32


def test_a_unigram_tokenizers_bound_comes_from_its_metaspace_words(dirs):
    from corpusforge.trainers.generate import tokens_at_least

    tok = load_model(dirs["t5"][1]).tokenizer
    for text in ["the cat sat on the warm mat " * 100, "ｆｕｌｌ　ｗｉｄｔｈ ﬁ ① " * 200, "我们 今天去公园 散步了" * 300]:
        n, how = tokens_at_least(text, 64, tok)
        assert 64 < n <= len(tok(text)["input_ids"]) and how.startswith("its first")
    assert tokens_at_least(HUGE_WITHOUT_SPACES["cjk"], 64, tok) is None  # one Metaspace word: no bound, counted whole


@pytest.mark.parametrize("character", ["\x1c", "\x1d", "\x1e", "\x1f", "\x85"])
def test_characters_bert_deletes_do_not_end_a_word_for_the_bound(dirs, character):
    # Python's \s matched these, so the prefix was cut inside what BERT's normalizer (clean_text deletes them) reads
    # as one word: the 56-token text was refused as "at least 133 tokens".
    loaded = load_model(dirs["bert"][1])
    text = "the cat " * 26 + "[MASK] " + "thecat" * 16 + character + "c" * 8000
    assert len(loaded.tokenizer(text)["input_ids"]) <= 64
    assert len(fill_mask(loaded, text, 1)) == 1


_BOUND_TEXT = st.lists(st.sampled_from(list("abc xyZ\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2028\u3000\x00\x07"
                                           "我们公园éé́ﬁ①ｆ{}[]\":,.!'-_0123456789") +
                                      ["[MASK]", "<mask>", "<|endoftext|>", "</s>", "<extra_id_0>", "<s>", "[SEP]",
                                       "'s", " <mask> ", "thecat" * 16, "c" * 40]), max_size=250).map("".join)
_LOADED: dict = {}


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=_BOUND_TEXT, family=st.sampled_from(["gpt2", "bert", "t5", "bart"]), as_text=st.booleans(),
       limit=st.integers(1, 8))
def test_the_prefix_bound_never_exceeds_the_real_token_count(dirs, text, family, as_text, limit):
    # Mixed scripts, control characters BERT deletes, Python-only whitespace, special tokens (whole and cut by the
    # prefix), 96-letter words that one deleted character turns into a 100+ character [UNK]: the bound is a bound.
    from corpusforge.trainers.generate import prompt_ids, prompt_settings, tokens_at_least

    loaded = _LOADED.get(family) or _LOADED.setdefault(family, load_model(dirs[family][1]))
    settings_, before = prompt_settings(loaded, as_text)  # as generate and predict pass them
    seen = tokens_at_least(text, limit, loaded.tokenizer, settings_, len(before))
    if seen is not None:
        assert seen[0] <= len(prompt_ids(loaded, text, as_text))
    seen = tokens_at_least(text, limit, loaded.tokenizer)  # as fill-mask passes them
    if seen is not None:
        assert seen[0] <= len(loaded.tokenizer(text)["input_ids"])