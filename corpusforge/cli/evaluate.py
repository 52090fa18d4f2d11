"""``corpusforge evaluate --model DIR --data FILE_OR_RUN``: loss, perplexity and bits per byte on held-out text."""
from __future__ import annotations

import json


def register(subparsers) -> None:
    from corpusforge.cli.options import DefaultsFormatter, RECORD_LIMIT_HELP, add_device_option, common_parser
    from corpusforge.cli.options import seed

    evaluate = subparsers.add_parser(
        "evaluate", parents=[common_parser()], formatter_class=DefaultsFormatter,
        help="Measure a model on held-out text: loss, perplexity, bits per byte (per source).",
        description="Score a model (a run's model/ or an exported directory) on text: the mean loss per predicted "
                    "token, perplexity, and bits per byte (negative log-likelihood in bits over the text's UTF-8 "
                    "bytes, comparable across tokenizers), overall and per source (a record's source field, else, in a "
                    "directory, its file's name). A decoder predicts every token "
                    "of each document; encoders and seq2seq models are scored on their own objective (masked LM, "
                    "span corruption, denoising) under --seed. DATA is a JSONL (.gz/.zst), Parquet or Arrow file, a "
                    ".txt file (one document), a directory of them, or a run directory (its clean shards' val split); each file plain or "
                    "compressed (.gz, .zst, .bz2, .xz), read as the build reads it. "
                    + RECORD_LIMIT_HELP.format(what="skipped as oversize_record"))
    evaluate.add_argument("--model", required=True, metavar="DIR", help="A run's model/ directory or an export.")
    evaluate.add_argument("--data", required=True, metavar="FILE_OR_RUN", help="Held-out text (see above).")
    evaluate.add_argument("--text-field", default="text", help="Field holding the text in JSONL/Parquet/Arrow.")
    evaluate.add_argument("--max-documents", type=int, default=None, help="Stop after this many documents.")
    evaluate.add_argument("--batch-size", type=int, default=8, help="Windows scored per forward pass.")
    evaluate.add_argument("--seed", type=seed, default=0, help="Seed of the masking/corruption noise (encoders, seq2seq).")
    evaluate.add_argument("--json", action="store_true", help="Print one JSON object instead of a table.")
    add_device_option(evaluate)
    evaluate.set_defaults(func=cmd_evaluate)


def cmd_evaluate(args) -> int:
    from corpusforge.cli.hf import quiet_transformers
    from corpusforge.core.errors import UserError
    from corpusforge.cli.options import record_bytes, reporting_skipped
    from corpusforge.trainers.evaluate import Skipped, evaluate, read_documents
    from corpusforge.trainers.export import load_model

    if args.batch_size < 1 or (args.max_documents is not None and args.max_documents < 1):
        raise UserError("--batch-size and --max-documents must be at least 1")
    quiet_transformers()
    skipped = Skipped()  # counts by reason, and what to pass for a missing field
    limit = record_bytes(args)
    documents = read_documents(args.data, args.text_field, skipped, limit)  # what it names, before the model loads
    loaded = load_model(args.model, args.device)
    with reporting_skipped(skipped):
        result = evaluate(loaded, documents, seed=args.seed,
                          batch_size=args.batch_size, max_documents=args.max_documents)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['model']} model, objective {result['objective']}")
    print("\n".join(source_table(result)))
    return 0


_TABLE_SOURCES = 20


def source_table(result: dict) -> list[str]:
    """evaluate's table: overall, then per source, the ``_TABLE_SOURCES`` with the most documents (a folder of many
    files is one source a file; ``--json`` holds every one), each name on one line (a file's name may hold a line
    break or a terminal escape)."""
    sources = list((result.get("by_source") or {}).items())
    shown = sorted(sources, key=lambda item: (-item[1]["documents"], item[0]))[:_TABLE_SOURCES]
    lines = [f"{'source':<20} {'documents':>9} {'tokens':>10} {'bytes':>12} {'loss':>8} {'ppl':>10} {'bits/byte':>9}"]
    for name, r in [("all", result)] + sorted(shown):
        name = name if name.isprintable() else repr(name)[1:-1]
        lines.append(f"{name[:20]:<20} {r['documents']:>9,} {r['tokens']:>10,} {r['bytes']:>12,} {r['loss']:>8.4f} "
                     f"{r['perplexity']:>10.2f} {r['bits_per_byte']:>9.4f}")
    if len(sources) > len(shown):
        lines.append(f"... and {len(sources) - len(shown):,} more sources (the {len(shown)} with the most documents "
                     "are shown; --json lists every one)")
    return lines
