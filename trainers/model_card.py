"""The model card (``README.md``) of an exported model: what it is, how it was trained, and on what data,
read from the run's manifests (``RUN/manifest.json``, ``RUN/stats.json``, ``RUN/tokens/manifest.json``) and the
model's ``metrics.jsonl``. Figures only; never document text.
"""
from __future__ import annotations

import json
import pathlib
from typing import Any

PIPELINE_TAG = {"decoder": "text-generation", "encoder": "fill-mask", "encoder_decoder": "text2text-generation"}
AUTO_CLASS = {"decoder": "AutoModelForCausalLM", "encoder": "AutoModelForMaskedLM",
              "encoder_decoder": "AutoModelForSeq2SeqLM"}


def _read(path: pathlib.Path) -> dict[str, Any] | None:
    """A run's JSON file as a dict, or None when it is missing, damaged or not an object (the card then leaves its
    numbers out: a card is no place to stop an export)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return found if isinstance(found, dict) else None


def _last_metrics(path: pathlib.Path) -> dict[str, dict[str, Any]]:
    """The last train and val lines of metrics.jsonl."""
    last: dict[str, dict[str, Any]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return last
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        last[record.get("split", "train")] = record
    return last


def _kept_text(stats: dict[str, Any] | None, build: dict[str, Any]) -> str:
    """How much text the build kept: characters and UTF-8 bytes of the kept documents (stats.json), not the size
    of the shard files (which hold ids, metadata and annotations too, compressed or not)."""
    funnel = (stats or {}).get("funnel") or []
    shards = f"{(build.get('bytes') or 0) / 1e6:.2f} MB of {(build.get('format') or {}).get('name', 'arrow')} shards"
    if not funnel:
        return shards
    sources = (stats or {}).get("sources") or []
    text_bytes = sum(entry.get("bytes", 0) for entry in (sources[-1].get("by") or {}).values()) if sources else None
    size = f" ({text_bytes / 1e6:.2f} MB as UTF-8)" if text_bytes else ""
    return f"{funnel[-1].get('chars', 0):,} characters of text{size}; {shards}"


def model_card(model_dir: pathlib.Path, info: dict[str, Any], layout: str, arch: str, parameters: int,
               auto_class: str | None = None) -> str:
    """README.md text for the export of ``model_dir`` (a run's ``model/``; the run is its parent); ``auto_class``
    overrides the arch's Auto class (an ELECTRA discriminator loads with ``AutoModelForPreTraining``)."""
    auto = auto_class or AUTO_CLASS[arch]
    run = model_dir.parent
    build, stats, tokens = _read(run / "manifest.json"), _read(run / "stats.json"), _read(run / "tokens" / "manifest.json")
    m = info["model"]
    train = info.get("train") or {}
    metrics = _last_metrics(model_dir / "metrics.jsonl")
    lines = ["---", "library_name: transformers", f"pipeline_tag: {PIPELINE_TAG[arch]}",
             f"tags: [corpusforge, {layout}]", "---", "",
             f"# {layout} {arch.replace('_', '-')} pretrained with corpusforge", "",
             f"A {parameters / 1e6:.2f}M-parameter {layout} model (`{auto}`, no custom code), trained "
             f"by corpusforge with the `{info.get('objective')}` objective (the `{info.get('family')}` recipe) and "
             "exported to transformers with logits equal to corpusforge's own within 1e-4 (float32).", "",
             "## Architecture", "",
             "| d_model | layers | heads | MLP | positions | norm | activation | vocabulary | max length |",
             "|---|---|---|---|---|---|---|---|---|",
             f"| {m['d_model']} | {m['n_layers']}" + (f" + {m.get('n_decoder_layers') or m['n_layers']}"
                                                      if arch == "encoder_decoder" else "")
             + f" | {m['n_heads']} | {m['d_ff']} | {m['position']} | {m['norm']} ({m['norm_position']}) | "
               f"{m['activation']} | {m['vocab_size']} (tokenizer {info.get('tokenizer_vocab_size')}) | "
               f"{m['max_len']} |", "",
             "## Training", ""]
    lines.append(f"- steps: {info.get('step')}; sequence length {train.get('seq_len')}; micro-batch "
                 f"{train.get('micro_batch_size')} x accumulation {train.get('grad_accum')}; peak learning rate "
                 f"{(train.get('optim') or {}).get('lr')}; seed {train.get('seed')}")
    if "train" in metrics:
        lines.append(f"- last train loss: {metrics['train'].get('loss'):.4f}")
    if "val" in metrics:
        v = metrics["val"]
        if "ppl" in v:
            lines.append(f"- validation loss: {v.get('loss'):.4f} (perplexity {v.get('ppl'):.2f}, accuracy "
                         f"{v.get('accuracy'):.3f}, {v.get('tokens')} predicted tokens)")
        else:  # ELECTRA: generator MLM + weight x detection; each half by itself
            lines.append(f"- validation: generator masked-LM loss {v.get('generator_loss'):.4f} (accuracy "
                         f"{v.get('generator_accuracy'):.3f} on {v.get('tokens')} masked tokens); discriminator "
                         f"loss {v.get('discriminator_loss'):.4f}, accuracy {v.get('discriminator_accuracy'):.3f} "
                         f"({v.get('replaced_share'):.3f} of the tokens replaced)")
    lines += ["", "## Training data", ""]
    if build is None and tokens is None:
        lines.append("The run's manifests were not found beside the model; the training data is not recorded here.")
    if build is not None:
        inputs = (build.get("config") or {}).get("inputs") or []
        names = ", ".join(f"`{i.get('name') or i.get('path')}`" for i in inputs) or "(none recorded)"
        lines.append(f"- sources: {names}")
        lines.append(f"- cleaned by corpusforge {build.get('corpusforge_version')}: stages "
                     f"{', '.join(build.get('stages') or [])}; {build.get('rows')} documents kept, "
                     f"{_kept_text(stats, build)}")
    if stats is not None:
        a = stats.get("accounting") or {}
        lines.append(f"- records: {a.get('input')} read, {a.get('kept')} kept, {a.get('removed')} removed, "
                     f"{a.get('rejected')} rejected")
        by_stage = (stats.get("removed") or {}).get("by_stage") or {}
        if by_stage:
            lines.append("- removed by stage: " + ", ".join(f"{stage} {entry.get('total')}"
                                                           for stage, entry in by_stage.items()))
    if tokens is not None:
        splits = tokens.get("splits") if isinstance(tokens.get("splits"), dict) else {}
        lines.append(f"- tokenizer: {tokens.get('family')} family, {tokens.get('vocab_size')} tokens; token shards: "
                     + ", ".join(f"{name} {s.get('documents')} documents / {s.get('tokens')} tokens"
                                 for name, s in splits.items() if isinstance(s, dict)))
    lines += ["", "## Use", "", "```python",
              f"from transformers import AutoTokenizer, {auto}", "",
              'tokenizer = AutoTokenizer.from_pretrained("PATH")',
              f'model = {auto}.from_pretrained("PATH")', "```", "",
              "Or with corpusforge: `corpusforge "
              + {"decoder": 'generate --model PATH --prompt "..."', "encoder": 'fill-mask --model PATH "... <mask> ..."',
                 "encoder_decoder": 'generate --model PATH --prompt "..."'}[arch]
              + "` and `corpusforge evaluate --model PATH --data FILE`.", ""]
    if info.get("objective") == "rtd":
        lines += ["Note: trained with ELECTRA's replaced-token detection. This directory is the discriminator "
                  "(`ElectraForPreTraining`: one logit per token, > 0 means replaced), the part to fine-tune; "
                  "the generator (`ElectraForMaskedLM`) is in `generator/`, and it is what `fill-mask` and "
                  "`evaluate` run.", ""]
    if info.get("objective") == "prefixlm":
        lines += ["Note: trained as a prefix LM; transformers runs it with causal attention throughout, as the "
                  "loss on the tokens after the prefix saw them.", ""]
    return "\n".join(lines)
