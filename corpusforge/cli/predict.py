"""``corpusforge predict --model OUT --data FILE --out PREDS.jsonl``: a fine-tuned model's predictions."""
from __future__ import annotations

import json


def register(subparsers) -> None:
    from corpusforge.cli.options import DefaultsFormatter, RECORD_LIMIT_HELP, add_device_option, common_parser

    predict = subparsers.add_parser(
        "predict", parents=[common_parser()], formatter_class=DefaultsFormatter,
        help="Predict with a fine-tuned model (corpusforge finetune's OUT): labels, tags or generations.",
        description="Read records (JSONL, CSV or Parquet; the fields the model was fine-tuned with) and write one "
                    "JSON line per record: classify {id, label, score}, tag {id, tags, scores}, generate {id, "
                    "generation} (greedy). Where the records carry labels (responses), print accuracy and "
                    "macro-F1 (exact match) on stdout. Files plain or compressed (.gz, .zst, .bz2, .xz). "
                    + RECORD_LIMIT_HELP.format(what="refused in one line"))
    predict.add_argument("--model", required=True, metavar="OUT", help="A corpusforge finetune output directory.")
    predict.add_argument("--data", required=True, metavar="FILE", help="Records to predict.")
    predict.add_argument("--out", required=True, metavar="PREDS.jsonl", help="Where to write the predictions (an existing file only when corpusforge wrote it).")
    predict.add_argument("--batch-size", type=int, default=16, help="Records per forward pass.")
    predict.add_argument("--max-new-tokens", type=int, default=64, help="generate: tokens to generate at most.")
    add_device_option(predict)
    predict.set_defaults(func=cmd_predict)


def cmd_predict(args) -> int:
    import dataclasses

    from corpusforge.cli.hf import quiet_transformers
    from corpusforge.cli.options import record_bytes
    from corpusforge.core.run_lock import claim_file
    from corpusforge.core.errors import UserError
    from corpusforge.core.files import write_bytes_atomic
    from corpusforge.trainers.finetune.config import FinetuneConfig
    from corpusforge.trainers.finetune.data import read_records, task_examples
    from corpusforge.trainers.finetune.predict import load_finetuned, predict, score_predictions

    if args.batch_size < 1 or args.max_new_tokens < 1:
        raise UserError("--batch-size and --max-new-tokens must be at least 1")
    # --data first (a run's rejected/ is refused), so a refused command leaves no marker in --out's folder; its
    # examples need the model's field names, read after the model loads
    records = read_records(args.data, record_bytes(args))
    claim_file(args.out, "predict")  # replaces only a file corpusforge wrote: never the user's, nor --data itself
    quiet_transformers()
    tuned = load_finetuned(args.model, args.device)
    fields = {k: v for k, v in tuned.info["config"].items() if k.endswith("_field")}
    config = dataclasses.replace(FinetuneConfig(), task=tuned.task, **fields)
    examples = task_examples(records, config, args.data, labelled=False)
    rows = predict(tuned, examples, args.batch_size, args.max_new_tokens)
    write_bytes_atomic(args.out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8"))
    scores = score_predictions(tuned, examples, rows)
    print(json.dumps({"predictions": len(rows), "out": args.out, **scores}))
    return 0
