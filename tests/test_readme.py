"""The README's configuration reference is generated from the dataclasses; this keeps it true."""
import pathlib
import re

from corpusforge.cli.show_config import reference_markdown

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_config_reference_matches_the_code():
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- config-reference:start -->\n(.*?)<!-- config-reference:end -->", text, re.S)
    assert match, "README lost its config-reference markers"
    assert match.group(1).strip() == reference_markdown().strip(), (
        "README's configuration reference is stale: run `python -m corpusforge.cli.show_config --update-readme`")
