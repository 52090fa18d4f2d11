from __future__ import annotations

import argparse

import pytest

pytest.importorskip("presidio_analyzer")


def _run(argv, capsys):
    from corpusforge.cli import pii as cli

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    code = args.func(args)
    return code, capsys.readouterr()


def test_pii_command_scrubs_lines(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("Mail jane@example.org today.\nPython 3.11.7 on 2023-10-02.\n"
                    "a@example.org b@example.org c@example.org\n", encoding="utf-8")
    code, out = _run(["pii", "--lines", str(path)], capsys)
    assert code == 0
    assert out.out.splitlines() == ["Mail <EMAIL> today.", "Python 3.11.7 on 2023-10-02.", "<EMAIL> <EMAIL> <EMAIL>"]
    assert "3 document(s); found: EMAIL_ADDRESS 4" in out.err
    assert "would remove: 1 (pii_density)" in out.err
    assert "NOT covered: URL" in out.err and "PERSON" in out.err
    assert "jane@example.org" not in out.err


def test_pii_command_coverage_only(capsys):
    code, out = _run(["pii", "--coverage", "--set", "pii.entities=[EMAIL_ADDRESS]"], capsys)
    assert code == 0 and out.out == ""
    assert out.err.startswith("PII covered: EMAIL_ADDRESS; NOT covered: PHONE_NUMBER")
