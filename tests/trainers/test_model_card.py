"""The exported model card's numbers come from the run they describe."""
import json

from corpusforge.trainers.model_card import model_card

MODEL = {"d_model": 32, "n_layers": 2, "n_heads": 2, "d_ff": 64, "position": "learned", "norm": "layernorm",
         "norm_position": "pre", "activation": "gelu", "vocab_size": 100, "max_len": 64}


def test_the_card_gives_the_kept_text_not_the_shard_size(tmp_path):
    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    # shards 0.37 MB (ids, metadata, annotations and text); the kept text itself 215,022 characters
    (run / "manifest.json").write_text(json.dumps({
        "rows": 287, "bytes": 368_408, "stages": ["normalize"], "format": {"name": "arrow"}, "config": {"inputs": []}}))
    (run / "stats.json").write_text(json.dumps({
        "funnel": [{"stage": "read", "documents": 300, "chars": 290_868},
                   {"stage": "pii", "documents": 287, "chars": 215_022}],
        "sources": [{"stage": "pii", "by": {"web": {"documents": 280, "bytes": 210_000},
                                             "notes": {"documents": 7, "bytes": 5_500}}}]}))
    card = model_card(run / "model", {"model": MODEL, "objective": "clm", "family": "gpt2"}, "decoder", "decoder", 370_000)
    line = next(line for line in card.splitlines() if line.startswith("- cleaned by corpusforge"))
    assert "287 documents kept, 215,022 characters of text (0.22 MB as UTF-8); 0.37 MB of arrow shards" in line
    assert "0.37 MB of text" not in card


def test_a_damaged_or_foreign_token_manifest_leaves_the_card_without_it(tmp_path):
    # The card reads tokens/manifest.json for its token counts: one that is a list, or whose splits are not objects,
    # raised AttributeError out of `corpusforge export`.
    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    (run / "tokens").mkdir()
    for text in ("[]", '{"splits": []}', '{"splits": {"train": 3}}', "[" * 5000, "{"):
        (run / "tokens" / "manifest.json").write_text(text)
        card = model_card(run / "model", {"model": MODEL, "objective": "clm", "family": "gpt2"}, "decoder", "decoder",
                          370_000)
        assert "## Use" in card and "3 documents" not in card
