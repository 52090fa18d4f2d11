"""``corpusforge export MODEL_DIR OUT_DIR``: a trained model as a Hugging Face transformers directory."""
from __future__ import annotations

from corpusforge.cli.options import DefaultsFormatter, common_parser


def register(subparsers) -> None:
    export = subparsers.add_parser(
        "export", parents=[common_parser()], formatter_class=DefaultsFormatter,
        help="Export a trained model to a transformers directory (safetensors, tokenizer, model card).",
        description="Write OUT_DIR so that transformers' AutoModelForCausalLM / AutoModelForMaskedLM / "
                    "AutoModelForSeq2SeqLM and AutoTokenizer load it with no custom code: model.safetensors, "
                    "config.json (GPT-2 or Llama, BERT, T5 or BART, whichever computes exactly what the model "
                    "does), generation_config.json, the tokenizer with its special tokens and model_max_length, and "
                    "a model card (README.md) summarising the training data from the run's manifests. The export "
                    "is loaded back and its logits checked against corpusforge's before OUT_DIR appears. A model "
                    "option with no exact transformers equivalent makes export refuse, naming it.")
    export.add_argument("model_dir", metavar="MODEL_DIR", help="A run's model/ directory (corpusforge train).")
    export.add_argument("out_dir", metavar="OUT_DIR", help="Where to write the transformers directory.")
    export.add_argument("--overwrite", action="store_true", help="Replace an earlier export in OUT_DIR (never a directory export did not write).")
    export.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    from corpusforge.cli.hf import quiet_transformers
    from corpusforge.trainers.export import export_model

    quiet_transformers()
    out = export_model(args.model_dir, args.out_dir, overwrite=args.overwrite)
    print(f"exported {args.model_dir} to {out}")
    return 0
