"""The README as a newcomer reads it: every code block runs as written, and the configuration reference
(docs/configuration.md) and schema stay equal to the code.

Fenced blocks are ``bash`` (run with bash, ``corpusforge`` on the PATH as after ``source .venv/bin/activate``),
``python`` (run with this interpreter), ``console`` (each ``$ `` line run, its output compared with the lines
under it), ``yaml`` (written to the file an HTML comment ``<!-- readme-test: file NAME -->`` above it names)
or ``text`` (diagrams and listings). A block that cannot run here is tagged ``<!-- readme-test: skip (why) -->``
right above it, the reason shown in the test's skip list. They run in order, in a directory that holds a demo
run at ``runs/demo`` (with its export), offline.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from corpusforge.cli.show_config import REFERENCE_PAGE, reference_page, schema

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"(?:<!-- readme-test: (?P<tag>[^>]*?) -->\n)?```(?P<lang>[a-z]*)\n(?P<body>.*?)^```\n", re.S | re.M)
LANGUAGES = {"bash", "python", "console", "yaml", "text"}


def blocks(text: str) -> list[dict]:
    return [{"tag": m["tag"] or "", "lang": m["lang"], "body": m["body"], "line": text[:m.start()].count("\n") + 1}
            for m in FENCE.finditer(text)]


def test_config_reference_matches_the_code():
    assert REFERENCE_PAGE.read_text(encoding="utf-8") == reference_page(), (
        "docs/configuration.md is stale: run `make readme`")
    assert "docs/configuration.md" in README.read_text(encoding="utf-8")


def test_every_block_says_how_it_runs():
    found = blocks(README.read_text(encoding="utf-8"))
    assert len(found) >= 8
    for block in found:
        assert block["lang"] in LANGUAGES, f"README line {block['line']}: a ``` block without a known language"
        if block["tag"].startswith("skip"):
            assert re.fullmatch(r"skip \(.{10,}\)", block["tag"]), f"README line {block['line']}: a skip needs a reason"
        if block["lang"] == "yaml":
            assert block["tag"].startswith("file "), f"README line {block['line']}: a yaml block names its file"


def test_the_schema_takes_the_defaults_and_the_readme_config_and_refuses_typos():
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    from corpusforge.config import Config
    from corpusforge.core.config_loader import to_dict

    validator = jsonschema.Draft202012Validator(schema())
    validator.check_schema(schema())
    assert list(validator.iter_errors(to_dict(Config()))) == []
    (config,) = [b for b in blocks(README.read_text(encoding="utf-8")) if b["lang"] == "yaml"]
    assert list(validator.iter_errors(yaml.safe_load(config["body"]))) == []
    assert not validator.is_valid({"quality": {"gopher": {"min_word": 80}}})
    assert not validator.is_valid({"normalize": {"unicode_form": "NFD"}})
    help_of = schema()["properties"]["quality"]["properties"]["gopher"]["properties"]["min_words"]["description"]
    assert help_of  # each field's help is its description


def _env(work: pathlib.Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(work / ".hf"), NO_COLOR="1")
    return env


def _run(command: list[str], work: pathlib.Path, block: dict) -> str:
    done = subprocess.run(command, cwd=work, env=_env(work), capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"README line {block['line']} failed ({done.returncode}):\n{block['body']}\n{output[-3000:]}"
    return output


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    """A directory like the README's after `make demo`: .venv, and runs/demo with its export (fewer steps).
    README_DEMO_DIR names one made earlier (a `make demo` checkout, or this fixture's), to rerun the blocks alone."""
    if os.environ.get("README_DEMO_DIR"):
        return pathlib.Path(os.environ["README_DEMO_DIR"])
    work = tmp_path_factory.mktemp("newcomer")
    venv = pathlib.Path(sys.prefix)
    if not (venv / "bin" / "activate").exists():
        pytest.skip(f"{venv} is not a virtual environment with bin/activate")
    if f'"{venv}"' in (venv / "bin" / "activate").read_text():
        (work / ".venv").symlink_to(venv)
    else:  # a venv copied from elsewhere activates its origin: activate this interpreter's instead
        (work / ".venv" / "bin").mkdir(parents=True)
        (work / ".venv" / "bin" / "activate").write_text(f'export VIRTUAL_ENV="{venv}"\nexport PATH="{venv}/bin:$PATH"\n')
    cli = str(pathlib.Path(sys.executable).parent / "corpusforge")
    block = {"line": 0, "body": "the demo"}
    log = _run([cli, "demo", "--run-dir", "runs/demo", "--documents", "200", "--steps", "6"], work, block)
    (work / "demo.log").write_text(log, encoding="utf-8")
    _run([cli, "export", "runs/demo/model", "runs/demo/export"], work, block)
    return work


@pytest.mark.slow
def test_the_demo_prints_one_summary_plain_progress_and_what_next(demo_dir):
    if not (demo_dir / "demo.log").exists():
        pytest.skip(f"{demo_dir} holds no demo.log")
    log = (demo_dir / "demo.log").read_text(encoding="utf-8")
    lines = log.splitlines()
    assert "\r" not in log and len(lines) < 60, log  # 140 lines before (summary and Beam metrics twice)
    assert log.count("records in:") == 1 and "beam metrics" not in log
    assert re.search(r"^train: done in \d+:\d\d: step 6 of 6", log, re.M)
    steps = lines[lines.index("next:") + 1:]
    assert steps[0].split("#")[0].strip() == "source .venv/bin/activate"
    for path in re.findall(r"\b(runs/demo\S*)", "\n".join(steps)):
        assert (demo_dir / path).exists(), path


@pytest.mark.slow
def test_every_readme_block_runs_as_written(demo_dir):
    ran = 0
    for block in blocks(README.read_text(encoding="utf-8")):
        if block["tag"].startswith("skip") or block["lang"] == "text":
            continue
        if block["lang"] == "yaml":
            (demo_dir / block["tag"].removeprefix("file ").strip()).write_text(block["body"], encoding="utf-8")
        elif block["lang"] == "bash":
            _run(["bash", "-euo", "pipefail", "-c", block["body"]], demo_dir, block)
        elif block["lang"] == "python":
            _run([sys.executable, "-c", block["body"]], demo_dir, block)
        elif block["lang"] == "console":
            for command, expected in re.findall(r"^\$ (.*)\n((?:(?!\$ ).*\n)*)", block["body"], re.M):
                done = subprocess.run(["bash", "-c", command], cwd=demo_dir, env=_env(demo_dir), capture_output=True,
                                      text=True, timeout=600)
                assert (done.stdout + done.stderr).strip() == expected.strip(), f"README line {block['line']}: {command}"
        ran += 1
    assert ran >= 5
