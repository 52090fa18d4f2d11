"""``corpusforge pii``: try the PII stage's scrubber on text, with the same configuration as a build."""
from __future__ import annotations

import argparse
import sys
from collections import Counter


def register(subparsers) -> None:
    from corpusforge.cli.options import DefaultsFormatter, common_parser

    parser = subparsers.add_parser(
        "pii", parents=[common_parser()], formatter_class=DefaultsFormatter,
        help="Try the PII scrubber on text: print the scrubbed text and what was found.",
        description=(
            "Run the PII stage's scrubber (the `pii` config section) on text files or stdin and print the scrubbed "
            "text to stdout; counts per entity type, documents the density/drop rules would remove, and the entity "
            "types the configuration does not cover go to stderr. Nothing found is ever printed in clear. The stage "
            "itself runs inside `corpusforge build`."
        ),
    )
    parser.add_argument("inputs", nargs="*", metavar="FILE", help="Text files; none: read stdin.")
    parser.add_argument("--lines", action="store_true", help="Treat every non-empty line as one document.")
    parser.add_argument("--coverage", action="store_true", help="Only print which entity types are covered.")
    parser.set_defaults(func=run)


def _documents(paths: list[str], lines: bool):
    from corpusforge.core.input_files import text_lines, text_whole

    # read as every reader reads text (input_files.text_lines): compressed, UTF-16, CR line ends, a FIFO refused,
    # one line naming the file and the line on bytes that are not UTF-8 (a traceback before)
    for path in paths or ["-"]:
        stream = sys.stdin.buffer if path == "-" else None
        if lines:
            yield from text_lines(path, stream)
        else:
            yield text_whole(path, stream)


def run(args: argparse.Namespace) -> int:
    from corpusforge.config import load_config
    from corpusforge.pipeline.pii.entities import coverage

    config = load_config(args.config, args.set).pii
    print(coverage(config).summary(), file=sys.stderr)
    if args.coverage or not config.enabled:
        return 0
    from corpusforge.pipeline.pii.scrubber import Scrubber

    scrubber = Scrubber(config)
    counts: Counter = Counter()
    reasons: Counter = Counter()
    documents = 0
    for documents, text in enumerate(_documents(args.inputs, args.lines), start=1):
        result = scrubber.scrub(text)
        counts.update(result.counts)
        if result.removal:
            reasons[result.removal[0]] += 1
        sys.stdout.write(result.text + ("\n" if args.lines or not result.text.endswith("\n") else ""))
    found = ", ".join(f"{entity} {n}" for entity, n in counts.most_common()) or "nothing"
    print(f"{documents} document(s); found: {found}", file=sys.stderr)
    if reasons:
        print("would remove: " + ", ".join(f"{n} ({reason})" for reason, n in reasons.items()), file=sys.stderr)
    return 0
