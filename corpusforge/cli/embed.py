"""``corpusforge embed --model DIR --data FILE --out OUT``: ELMo vectors of every token, to an Arrow file."""
from __future__ import annotations


def register(subparsers) -> None:
    from corpusforge.cli.options import DefaultsFormatter, RECORD_LIMIT_HELP, common_parser
    from corpusforge.cli.options import finite

    embed = subparsers.add_parser(
        "embed", parents=[common_parser()], formatter_class=DefaultsFormatter,
        help="Per-token ELMo vectors of text from a biLM (objective bilm), to Arrow.",
        description="Run a biLM trained with train.objective=bilm over each document (<S> words </S>) and write one "
                    "Arrow row per document: source, tokens, and either every layer (the token layer and each "
                    "biLSTM layer, forward and backward states concatenated) or, with --mix-weights, ELMo's scalar "
                    "mix gamma * sum_j softmax(s)_j h_j. DATA is a JSONL, Parquet or Arrow file, a .txt file (one "
                    "document), a directory of them, or a run directory (its clean shards' val split); each file plain or "
                    "compressed (.gz, .zst, .bz2, .xz), read as the build reads it. "
                    + RECORD_LIMIT_HELP.format(what="skipped as oversize_record"))
    embed.add_argument("--model", required=True, metavar="DIR", help="The model/ directory of a bilm run.")
    embed.add_argument("--data", required=True, metavar="FILE_OR_RUN", help="Text to embed (see above).")
    embed.add_argument("--out", required=True, metavar="OUT", help="Arrow file to write (replaced atomically, when corpusforge wrote it).")
    embed.add_argument("--text-field", default="text", help="Field holding the text in JSONL/Parquet/Arrow.")
    embed.add_argument("--mix-weights", default=None, metavar="S0,S1,...",
                       help="Write the scalar mix with these layer scalars s (softmax-normalised; 0,0,0 is the mean) "
                            "instead of every layer.")
    embed.add_argument("--gamma", type=finite, default=1.0, help="The scalar mix's gamma.")
    embed.add_argument("--max-documents", type=int, default=None, help="Stop after this many documents.")
    embed.set_defaults(func=cmd_embed)


def cmd_embed(args) -> int:
    import argparse

    from corpusforge.core.run_lock import claim_file
    from corpusforge.core.errors import UserError
    from corpusforge.trainers.embed import embed
    from corpusforge.cli.options import finite, record_bytes, reporting_skipped
    from corpusforge.trainers.evaluate import Skipped, read_documents

    weights = None
    if args.mix_weights is not None:
        try:
            weights = [finite(w) for w in args.mix_weights.split(",")]
        except (ValueError, argparse.ArgumentTypeError):  # NaN and infinities too, as every float flag
            raise UserError(f"--mix-weights takes comma-separated finite numbers, got {args.mix_weights!r}") from None
    if args.max_documents is not None and args.max_documents < 1:
        raise UserError("--max-documents must be at least 1")
    skipped = Skipped()  # counts by reason, and what to pass for a missing field
    limit = record_bytes(args)
    documents = read_documents(args.data, args.text_field, skipped, limit)  # what it names, before --out is claimed
    claim_file(args.out, "embed")  # replaces only a file corpusforge wrote: never the user's, nor --data itself
    with reporting_skipped(skipped):
        result = embed(args.model, documents, args.out, mix_weights=weights, gamma=args.gamma,
                       max_documents=args.max_documents)
    shape = (f"{result['layers']} layers x {result['width']}" if result["layers"] else
             f"scalar mix, {result['width']}")
    print(f"{result['documents']} documents, {result['tokens']} tokens ({shape} per token) -> {result['out']}")
    return 0
