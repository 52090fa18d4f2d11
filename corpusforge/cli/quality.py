"""``corpusforge quality train``: train a fastText quality classifier from positive and negative examples."""
from __future__ import annotations

import argparse
import json


def register(subparsers) -> None:
    from corpusforge.cli.options import DefaultsFormatter, common_parser
    from corpusforge.cli.options import finite, seed

    quality = subparsers.add_parser(
        "quality", help="Quality-filtering tools (train a fastText quality classifier).",
        description="Quality-filtering tools. The quality stage itself runs inside `corpusforge build`.",
    )
    sub = quality.add_subparsers(dest="quality_command", metavar="COMMAND", required=True)
    train = sub.add_parser(
        "train", parents=[common_parser()], formatter_class=DefaultsFormatter,
        help="Train a fastText classifier (positive = text you want, negative = random web text).",
        description=(
            "Train a fastText supervised classifier on positive (high-quality) and negative examples, evaluate it on a "
            "held-out split (precision, recall and F1 of the positive label) and save it. Inputs are files or "
            "directories of .txt (one example per line), .jsonl (one object per line), .arrow or .parquet (e.g. a run's "
            "clean/ directory), each plain or compressed (.gz, .zst, .bz2, .xz) as the build reads it. Use the model with quality.classifiers: [{name: quality, model: PATH}]."
        ),
    )
    train.add_argument("--positive", "-p", action="append", required=True, metavar="PATH",
                       help="High-quality examples (repeatable).")
    train.add_argument("--negative", "-n", action="append", required=True, metavar="PATH",
                       help="Low-quality / random examples (repeatable).")
    train.add_argument("--output", "-o", required=True, metavar="MODEL", help="Where to save the model (.bin).")
    train.add_argument("--text-field", default="text", help="Field of the text in .jsonl and .arrow inputs.")
    train.add_argument("--positive-label", default="hq", help="Label of the positive class (the score's label).")
    train.add_argument("--negative-label", default="lq", help="Label of the negative class.")
    train.add_argument("--valid-fraction", type=finite, default=0.1, help="Share of examples held out for evaluation.")
    train.add_argument("--max-examples", type=int, default=None, help="Use at most this many examples per class.")
    train.add_argument("--epoch", type=int, default=5, help="fastText epochs.")
    train.add_argument("--lr", type=finite, default=0.1, help="fastText learning rate.")
    train.add_argument("--word-ngrams", type=int, default=2, help="fastText word n-gram length.")
    train.add_argument("--dim", type=int, default=64, help="Embedding dimension.")
    train.add_argument("--min-count", type=int, default=1, help="Minimum word count to enter the vocabulary.")
    train.add_argument("--bucket", type=int, default=200_000,
                       help="Hash buckets for word n-grams (model size ~ bucket x dim x 4 bytes; fastText's default is 2,000,000).")
    train.add_argument("--threads", type=int, default=1, help="Training threads.")
    train.add_argument("--seed", type=seed, default=0, help="Seed of the split and of training.")
    train.add_argument("--quantize", action="store_true", help="Quantize the model (smaller .ftz-style file).")
    train.add_argument("--json", action="store_true", help="Print the metrics as JSON.")
    train.set_defaults(func=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
    import itertools

    from corpusforge.config import load_config
    from corpusforge.pipeline.quality.classifier import read_texts, train_classifier

    load_config(args.config, args.set)  # validates --config/--set like every other command

    skipped = {"positive": {}, "negative": {}}  # binary cells that are not UTF-8, by class: said below

    def texts(paths: list[str], kind: str):
        stream = itertools.chain.from_iterable(read_texts(p, args.text_field, skipped[kind]) for p in paths)
        return list(itertools.islice(stream, args.max_examples)) if args.max_examples else list(stream)

    result = train_classifier(
        texts(args.positive, "positive"), texts(args.negative, "negative"), args.output,
        positive_label=args.positive_label, negative_label=args.negative_label, valid_fraction=args.valid_fraction,
        seed=args.seed, epoch=args.epoch, lr=args.lr, word_ngrams=args.word_ngrams, dim=args.dim,
        min_count=args.min_count, bucket=args.bucket, threads=args.threads, quantize=args.quantize,
    )
    unread = {kind: sum(counts.values()) for kind, counts in skipped.items()}
    if args.json:
        print(json.dumps({**result.as_dict(), "skipped": skipped}, indent=2))
    else:
        print(f"trained on {result.n_train} examples, evaluated on {result.n_valid} held out")
        if any(unread.values()):
            reasons = sorted({reason for counts in skipped.values() for reason in counts})
            print(f"skipped {sum(unread.values())} examples whose text is not UTF-8 ({', '.join(reasons)}: "
                  f"{unread['positive']} positive, {unread['negative']} negative)")
        print(f"precision {result.precision:.3f}  recall {result.recall:.3f}  F1 {result.f1:.3f}  "
              f"accuracy {result.accuracy:.3f}  (positive label: {args.positive_label})")
        print(f"saved {result.model_path}")
    return 0
