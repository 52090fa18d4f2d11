"""`generate --prompts FILE` reads its file as every reader reads lines (input_files.text_lines)."""
import gzip

import pytest

from corpusforge.cli.main import main


@pytest.mark.parametrize("kind", ["utf-16", "gzip", "cr", "bom"])
def test_a_prompts_file_is_read_as_every_reader_reads_lines(tmp_path, monkeypatch, kind):
    # Before: open(encoding="utf-8-sig"): a UTF-16 or gzip file was a UnicodeDecodeError traceback, and a file of
    # lone CR line ends one prompt holding every line
    from corpusforge.trainers import export, generate

    seen = []
    monkeypatch.setattr(export, "load_model", lambda model, device: None)
    monkeypatch.setattr(generate, "generate", lambda model, prompts, options: seen.extend(prompts) or [])
    text = "The cat\n\nA dog\n"
    path = tmp_path / ("prompts.txt.gz" if kind == "gzip" else "prompts.txt")
    path.write_bytes({"utf-16": text.encode("utf-16"), "gzip": gzip.compress(text.encode()),
                      "cr": text.replace("\n", "\r").encode(), "bom": b"\xef\xbb\xbf" + text.encode()}[kind])
    assert main(["generate", "--model", str(tmp_path), "--prompts", str(path)]) == 0
    assert seen == ["The cat", "A dog"]


def test_a_prompts_file_that_is_not_utf8_is_one_line(tmp_path, capsys):
    path = tmp_path / "prompts.txt"
    path.write_bytes(b"ok\n\xff\n")
    assert main(["generate", "--model", str(tmp_path), "--prompts", str(path)]) == 2
    err = capsys.readouterr().err
    assert "prompts.txt:2 is not valid UTF-8" in err and err.count("\n") == 1, err
