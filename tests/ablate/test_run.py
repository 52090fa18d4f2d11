"""End to end on a tiny corpus: two builds shared by three variants, one step per model, then a rerun."""
import json
import random

import pytest

from corpusforge.cli.main import main

WORDS = ("river stone harbour lantern meadow copper violin garden thunder pocket candle orbit velvet canyon "
         "ladder marble shadow feather compass willow ember glacier tunnel saddle").split()


def _texts(rng, count):
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 80))) + "." for _ in range(count)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("ablate")
    rng = random.Random(0)
    train, heldout = _texts(rng, 40), _texts(rng, 8)
    with open(root / "raw.jsonl", "w") as f:
        for i, text in enumerate(train + train[:10]):  # ten exact duplicates for dedup to remove
            f.write(json.dumps({"id": f"d{i}", "text": text}) + "\n")
    with open(root / "heldout.jsonl", "w") as f:
        for i, text in enumerate(heldout):
            f.write(json.dumps({"text": text, "source": "a" if i % 2 else "b"}) + "\n")
    return root


def _ablate(root, out, *extra):
    return main(["ablate", "--input", str(root / "raw.jsonl"), "--eval", str(root / "heldout.jsonl"),
                 "--out", str(out), "--tokens", "256", "--seeds", "2", "--no-progress",
                 "--set", "quality.enabled=false", "--set", "pii.enabled=false", "--set", "tokenizer.vocab_size=300",
                 "--set", "train.seq_len=32", "--set", "train.micro_batch_size=4", "--set", "train.optim.warmup_steps=0",
                 "--variant", "raw:dedup.enabled=false", "--variant", "dedup", "--variant", "same:dedup.enabled=true",
                 *extra])


def test_ablation_end_to_end_and_rerun(corpus, capsys):
    out = corpus / "out"
    assert _ablate(corpus, out) == 0
    report = json.loads((out / "ablation.json").read_text())
    raw, dedup, same = report["variants"]
    # The dedup build started after the normalize stage it shares with the raw build; its corpus is the one a
    # build from scratch makes, and no stage checkpoint (text before PII) is left behind.
    assert f"reusing stage normalize of build {raw['build']}" in capsys.readouterr().out
    scratch = corpus / "scratch"
    assert main(["build", "--input", str(corpus / "raw.jsonl"), "--run-dir", str(scratch), "--no-progress",
                 "--set", "quality.enabled=false", "--set", "pii.enabled=false"]) == 0
    built = json.loads((out / "builds" / dedup["build"] / "manifest.json").read_text())
    assert built["corpus_fingerprint"] == json.loads((scratch / "manifest.json").read_text())["corpus_fingerprint"]
    assert not list((out / "builds").glob("*/.checkpoints"))
    assert report["steps"] == 2 and report["tokens_per_model"] == 256 and report["seeds"] == [1, 2]
    assert raw["build"] != dedup["build"] == same["build"]  # equal build config: one build
    assert len(list((out / "builds").iterdir())) == 2
    assert raw["documents"] == 50 and dedup["documents"] == 40 and raw["kept_fraction"] == 1.0
    assert dedup["kept_fraction"] == pytest.approx(40 / 50)
    assert dedup["epochs"] == pytest.approx(256 / dedup["tokens"], abs=1e-3) and raw["tokens"] > dedup["tokens"]
    for variant in report["variants"]:
        assert len(variant["bits_per_byte"]) == 2 and all(0 < b < 20 for b in variant["bits_per_byte"])
        assert set(variant["by_source"]) == {"a", "b"}
    assert "vs_baseline" not in raw and dedup["vs_baseline"]["seeds"]["seeds"] == 2
    assert dedup["vs_baseline"]["documents"]["documents"] == 8 and report["baseline"] == "raw"
    assert dedup["bits_per_byte"] == same["bits_per_byte"]
    assert raw["bits_per_byte"][0] != raw["bits_per_byte"][1]  # the seed changes the model
    assert (out / "models" / raw["build"] / "seed-2" / "model.safetensors").exists()
    page = (out / "ablation.html").read_text()
    assert "data:image/png;base64," in page and "same" in page and "http" not in page.split("<body>")[1]

    # A rerun redoes nothing: same figures, every step reported as reused.
    results = {p.name: p.stat().st_mtime_ns for p in (out / "results").iterdir()}
    capsys.readouterr()
    assert _ablate(corpus, out) == 0
    said = capsys.readouterr().out
    assert "training" not in said and "model 4/4 (dedup, same, seed 2): done before" in said and said.count("done before, reused") == 2 + 1 + 4
    assert {p.name: p.stat().st_mtime_ns for p in (out / "results").iterdir()} == results
    assert json.loads((out / "ablation.json").read_text())["variants"][0]["bits_per_byte"] == raw["bits_per_byte"]

    # A result from before per-document losses were kept is scored again from its kept model, not retrained.
    result_path = out / "results" / f"{raw['build']}-seed-1.json"
    old = json.loads(result_path.read_text())
    del old["eval"]["documents_nll"]
    result_path.write_text(json.dumps(old))
    assert _ablate(corpus, out) == 0
    said = capsys.readouterr().out
    assert ": training" not in said and said.count("scoring its held-out documents one by one") == 1
    assert len(json.loads(result_path.read_text())["eval"]["documents_nll"]["nll_bits"]) == 8
    assert json.loads((out / "ablation.json").read_text())["variants"][0]["bits_per_byte"] == raw["bits_per_byte"]

    # Deterministic: a model trained again from the same build, tokens and seed scores exactly the same.
    (out / "results" / f"{raw['build']}-seed-2.json").unlink()
    assert _ablate(corpus, out) == 0
    assert capsys.readouterr().out.count(": training") == 1
    assert json.loads((out / "ablation.json").read_text())["variants"][0]["bits_per_byte"] == raw["bits_per_byte"]


def test_heldout_text_in_the_training_data_is_refused(corpus, capsys):
    leaked = corpus / "leaked.jsonl"
    first = (corpus / "raw.jsonl").read_text().splitlines()[3]
    leaked.write_text((corpus / "heldout.jsonl").read_text() + json.dumps({"text": json.loads(first)["text"]}) + "\n")
    code = main(["ablate", "--input", str(corpus / "raw.jsonl"), "--eval", str(leaked), "--out", str(corpus / "leak"),
                 "--tokens", "128", "--seeds", "1", "--no-progress", "--set", "quality.enabled=false",
                 "--set", "pii.enabled=false", "--set", "train.seq_len=32", "--set", "train.micro_batch_size=4",
                 "--variant", "raw:dedup.enabled=false"])
    assert code == 2
    err = capsys.readouterr().err
    assert "1 held-out document(s)" in err and "(number 9)" in err and "variant 'raw'" in err


def test_too_few_tokens_and_unknown_keys_are_one_line_errors(corpus, capsys):
    common = ["ablate", "--input", str(corpus / "raw.jsonl"), "--eval", str(corpus / "heldout.jsonl"),
              "--out", str(corpus / "few"), "--no-progress", "--set", "quality.enabled=false", "--set",
              "pii.enabled=false", "--set", "train.seq_len=32", "--set", "train.micro_batch_size=4"]
    assert main([*common, "--tokens", "128", "--variant", "typo:dedup.enabld=false"]) == 2
    assert "variant 'typo'" in capsys.readouterr().err
    assert main([*common, "--tokens", "100", "--variant", "full"]) == 2
    assert "not a whole number of optimizer steps of 128 tokens" in capsys.readouterr().err
    assert main([*common, "--tokens", "1280000", "--max-epochs", "2", "--seeds", "1", "--variant", "full"]) == 2
    assert "would repeat them" in capsys.readouterr().err


@pytest.mark.parametrize("tokens,use", [(0, "use 2,048"), (-5, "use 2,048"), (1000, "use 2,048"),
                                        (3000, "use 2,048 or 4,096")])
def test_a_budget_of_no_whole_steps_suggests_only_budgets_that_are(tokens, use):
    # --tokens 0 suggested "use 2,048 or 0" (0 is refused itself), --tokens 1000 "use 2,048 or 2,048"
    from corpusforge.ablate.run import check_budget
    from corpusforge.core.errors import UserError
    from corpusforge.trainers.config import TrainConfig

    with pytest.raises(UserError) as info:
        check_budget(TrainConfig(seq_len=128, micro_batch_size=16, grad_accum=1), tokens)
    assert str(info.value).endswith(use), str(info.value)
