"""``corpusforge config``: the effective configuration, or the generated reference."""
from __future__ import annotations

import sys

from corpusforge.cli.options import common_parser


def register(subparsers) -> None:
    config = subparsers.add_parser(
        "config", parents=[common_parser()], help="Print the effective configuration, or the reference.",
        description="Print the configuration after loading --config and applying --set, as YAML (secrets "
                    "such as pii.hash_salt shown only as set, with a fingerprint); "
                    "with --reference, print every key with its type, default and meaning (Markdown).")
    config.add_argument("--reference", action="store_true", help="Print the configuration reference table.")
    config.set_defaults(func=cmd_config)


def cmd_config(args) -> int:
    from corpusforge.config import load_config
    from corpusforge.core.config_loader import public_dict

    if args.reference:
        print(reference_markdown())
        return 0
    import yaml

    # Secrets (pii.hash_salt) print as "set" with a fingerprint: this output is pasted into issues and chats.
    print(yaml.safe_dump(public_dict(load_config(args.config, args.set)), sort_keys=False), end="")
    return 0


def reference_markdown() -> str:
    """The configuration reference, generated from the dataclasses so it cannot drift."""
    from corpusforge.config import Config
    from corpusforge.core.config_loader import field_docs

    lines = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for key, type_label, default, help_text in field_docs(Config):
        lines.append(f"| `{key}` | {type_label.replace('|', '&#124;')} | `{default}` | {help_text.replace('|', '&#124;')} |")
    return "\n".join(lines)


def update_readme(path: str = "README.md") -> None:
    """Rewrite the README's configuration reference from the dataclasses."""
    import pathlib
    import re

    readme = pathlib.Path(path)
    text = readme.read_text(encoding="utf-8")
    block = f"<!-- config-reference:start -->\n{reference_markdown()}\n<!-- config-reference:end -->"
    readme.write_text(re.sub(r"<!-- config-reference:start -->.*?<!-- config-reference:end -->", lambda _: block,
                             text, flags=re.S), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--update-readme"]:
        update_readme()
