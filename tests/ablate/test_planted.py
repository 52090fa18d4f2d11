"""A planted corpus: one rule (FineWeb's short-line ratio) removes exactly the held-out domain (short-lined
verse). The leave-one-out must name that rule as costing bits per byte, and the per-source figures must show
the loss on that domain only."""
import json
import random

import pytest

from corpusforge.ablate.compare import BETTER, WORSE
from corpusforge.cli.main import main

# The verse is Cyrillic and the prose Latin, so what a model learns of one says nothing about the other.
VERSE = ("Берёза Ветер Гора Дождь Ель Жар Заря Иней Клён Луна Мох Нива Озеро Поле Роса Сад Тропа Утро Хвоя Цвет "
         "Чаща Шёпот Эхо Юг Ягода Брод Вал Грот Дол Ключ").split()
PROSE = ("quantum vector matrix kernel tensor scalar gradient sigma theta lambda epsilon integral derivative "
         "manifold topology algebra lattice spectrum operator norm basis field group ring module sheaf functor "
         "category morphism fibre").split()  # 30 words: no word takes 15 % of a document (keyword stuffing)


def _verse(rng):  # short capitalised lines: FineWeb's max_short_line_ratio drops it, nothing else does
    return "\n".join(" ".join([rng.choice(VERSE)] + [rng.choice(VERSE).lower() for _ in range(rng.randint(1, 3))])
                     + rng.choice([",", "."]) for _ in range(rng.randint(8, 14)))


def _prose(rng):  # one long line
    words = [rng.choice(PROSE) for _ in range(rng.randint(50, 90))]
    return " ".join(words).capitalize() + "."


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    rng = random.Random(7)
    with open(root / "raw.jsonl", "w") as f:
        for i in range(60):
            f.write(json.dumps({"id": f"d{i}", "text": _verse(rng) if i % 2 else _prose(rng)}) + "\n")
    (root / "heldout").mkdir()
    for name, make in (("verse", _verse), ("prose", _prose)):
        with open(root / "heldout" / f"{name}.jsonl", "w") as f:
            for _ in range(16):
                f.write(json.dumps({"text": make(rng)}) + "\n")
    return root


@pytest.mark.slow  # three builds and nine models: ~30 s of CPU, minutes on a loaded machine
def test_the_rule_that_removes_the_heldout_domain_costs_bits_per_byte(planted, capsys):
    out = planted / "out"
    code = main(["ablate", "--input", str(planted / "raw.jsonl"), "--eval", str(planted / "heldout" / "verse.jsonl"),
                 "--eval", str(planted / "heldout" / "prose.jsonl"), "--out", str(out), "--tokens", "5120",
                 "--seeds", "3", "--no-progress", "--leave-one-out", "quality",
                 "--set", "dedup.enabled=false", "--set", "pii.enabled=false", "--set", "quality.langid.enabled=false",
                 "--set", "quality.gopher.enabled=false", "--set", "quality.repetition.enabled=false",
                 "--set", "quality.c4.enabled=false", "--set", "tokenizer.vocab_size=300", "--set", "train.seq_len=32",
                 "--set", "train.micro_batch_size=4", "--set", "train.optim.warmup_steps=0",
                 "--set", "train.optim.lr=3e-3"])
    assert code == 0
    report = json.loads((out / "ablation.json").read_text())
    names = [v["name"] for v in report["variants"]]
    assert names == ["full", "without-quality.junk", "without-quality.fineweb"]  # full: added as the reference
    assert report["baseline"] == "full"
    loo = {row["variant"]: row for row in report["leave_one_out"]}
    fineweb, junk = loo["without-quality.fineweb"], loo["without-quality.junk"]
    assert fineweb["removes_documents_fraction"] == pytest.approx(0.5)  # every verse document, nothing else
    assert junk["removes_documents_fraction"] == 0.0
    assert fineweb["effect"]["verdict"] == WORSE and fineweb["verdict"] == "costs bits per byte"
    assert fineweb["effect"]["difference"] > 0 and fineweb["effect"]["seeds"]["low"] > 0
    assert fineweb["effect"]["documents"]["low"] > 0
    assert junk["verdict"] != "costs bits per byte"
    # the gain of leaving the rule out is on the verse held-out source, not on prose
    without = report["variants"][2]
    assert set(without["by_source"]) == {"verse", "prose"} and report["heldout"]["sources"]["verse"]["documents"] == 16
    assert without["vs_baseline_by_source"]["verse"]["verdict"] == BETTER
    assert without["vs_baseline_by_source"]["prose"]["verdict"] != BETTER
    assert without["vs_baseline"]["verdict"] in (WORSE, BETTER) or "needed" in without["vs_baseline"]
    assert set(without["by_language"]) == set(report["heldout"]["languages"])
    page = (out / "ablation.html").read_text()
    assert "Leave one out" in page and "costs bits per byte" in page and "without-quality.fineweb" in page
    said = capsys.readouterr().out
    assert "without-quality.fineweb" in said and "-> costs bits per byte" in said
