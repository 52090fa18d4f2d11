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


@pytest.mark.parametrize("kind", ["utf-16", "gzip", "cr", "crlf"])
def test_pii_reads_files_as_every_reader_reads_lines(tmp_path, capsys, kind):
    # Before: open(path, encoding="utf-8"): a UTF-16 or gzip file was a UnicodeDecodeError traceback, lone CR line
    # ends one document; now input_files.text_lines, the readers' own decompression, transcoding and line ends
    import gzip

    text = "Mail jane@example.org today.\nNothing here.\n"
    path = tmp_path / ("notes.txt.gz" if kind == "gzip" else "notes.txt")
    data = {"utf-16": text.encode("utf-16"), "gzip": gzip.compress(text.encode()),
            "cr": text.replace("\n", "\r").encode(), "crlf": text.replace("\n", "\r\n").encode()}[kind]
    path.write_bytes(data)
    code, out = _run(["pii", "--lines", str(path)], capsys)
    assert code == 0 and out.out.splitlines() == ["Mail <EMAIL> today.", "Nothing here."], out


def test_pii_on_bytes_that_are_not_utf8_is_one_line(tmp_path, capsys):
    from corpusforge.cli.main import main

    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nbad \xff byte\n")
    for flags in (["--lines"], []):
        assert main(["pii", *flags, str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.startswith("corpusforge: error: ") and "is not valid UTF-8" in err and "bad.txt" in err, err
    assert main(["pii", str(tmp_path / "nope.txt")]) == 2
    assert "nope.txt: no such file" in capsys.readouterr().err
