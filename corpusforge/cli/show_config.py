"""``corpusforge config``: the effective configuration, its generated reference, or its JSON Schema."""
from __future__ import annotations

import json
import pathlib
import sys

from corpusforge.cli.options import common_parser

# The configuration reference, generated from the dataclasses (``make readme``; tests/test_readme.py checks it).
REFERENCE_PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "configuration.md"

PAGE_HEAD = """\
# Configuration reference

Generated from the configuration dataclasses by `make readme` (`corpusforge config --reference` prints the
table); `tests/test_readme.py` keeps this page equal to the code. A configuration file (YAML or TOML) sets any
of these keys; `--set key=value` overrides one on the command line (the value parsed as YAML).

## Checking a config file in your editor

`corpusforge config --schema` writes a JSON Schema of the whole configuration, with each key's type, allowed
values, default and meaning. An editor with a YAML language server (VS Code's YAML extension by Red Hat,
Neovim or Helix with `yaml-language-server`) then checks `corpus.yaml` as you type: unknown keys, wrong types
and values outside a key's choices are underlined, and hovering a key shows its help. Write the schema once:

```bash
corpusforge config --schema > corpusforge.schema.json
```

and name it on the first line of the config file:

```yaml
# yaml-language-server: $schema=corpusforge.schema.json
inputs:
  - path: data/*.jsonl.gz
```

(or map it to `corpus*.yaml` in VS Code's `yaml.schemas` setting). Range checks (a fraction in 0..1, a size
> 0) are not in the schema: `corpusforge config -c corpus.yaml` runs every check and prints the result.

## Keys

"""


def register(subparsers) -> None:
    config = subparsers.add_parser(
        "config", parents=[common_parser()], help="Print the effective configuration, its reference or its JSON Schema.",
        description="Print the configuration after loading --config and applying --set, as YAML (secrets "
                    "such as pii.hash_salt shown only as set, with a fingerprint); "
                    "with --reference, print every key with its type, default and meaning (Markdown); "
                    "with --schema, print a JSON Schema of the configuration for editors (docs/configuration.md).")
    which = config.add_mutually_exclusive_group()
    which.add_argument("--reference", action="store_true", help="Print the configuration reference table.")
    which.add_argument("--schema", action="store_true",
                       help="Print a JSON Schema of the whole configuration, each key with its help.")
    config.set_defaults(func=cmd_config)


def cmd_config(args) -> int:
    from corpusforge.config import load_config
    from corpusforge.core.config_loader import public_dict

    if args.reference:
        print(reference_markdown())
        return 0
    if args.schema:
        print(json.dumps(schema(), indent=2))
        return 0
    import yaml

    # Secrets (pii.hash_salt) print as "set" with a fingerprint: this output is pasted into issues and chats.
    print(yaml.safe_dump(public_dict(load_config(args.config, args.set)), sort_keys=False), end="")
    return 0


def schema() -> dict:
    """The JSON Schema of a corpusforge configuration file."""
    from corpusforge.config import Config
    from corpusforge.core.config_loader import json_schema

    return json_schema(Config, title="corpusforge configuration")


def reference_markdown() -> str:
    """The configuration reference, generated from the dataclasses so it cannot drift."""
    from corpusforge.config import Config
    from corpusforge.core.config_loader import field_docs

    lines = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for key, type_label, default, help_text in field_docs(Config):
        lines.append(f"| `{key}` | {type_label.replace('|', '&#124;')} | `{default}` | {help_text.replace('|', '&#124;')} |")
    return "\n".join(lines)


def reference_page() -> str:
    """docs/configuration.md: how to use the schema, then the reference table."""
    return PAGE_HEAD + reference_markdown() + "\n"


def update_reference(path: pathlib.Path = REFERENCE_PAGE) -> None:
    """Rewrite docs/configuration.md from the dataclasses."""
    path.write_text(reference_page(), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] in (["--update-reference"], ["--update-readme"]):
        update_reference()
