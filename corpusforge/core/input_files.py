"""Input files as every reader sees them: what a path names, which files may be opened, decompression, lines
cut at a size limit, and the one classification of whatever a parser raises on one record.

The build's readers (``corpusforge.pipeline.readers``) and every other command that reads data (evaluate,
embed, predict, finetune) go through these functions, so a file reads, and fails, the same way everywhere:

- ``list_input(path)``: a path that exists is read literally, even when it holds glob characters
  (``data/a[1].jsonl``, ``corpus[2024]/``); only a path that does not exist is a glob. A directory means
  every file below it (symbolic links to directories are listed, not followed, and rejected when read).
- ``open_input(path)``: only regular files are opened (a symbolic link to one is followed). A FIFO, device,
  socket, directory or broken link raises ``RecordError("not_a_regular_file")`` by its name; a FIFO is never
  opened for reading in a way that could block, a device never read.
- ``open_decompressed(raw, path)``: gzip, zstd, bz2 and xz by extension (``COMPRESSIONS``), each decompressed
  in bounded steps, so no compressed file produces more than a few MB at a time whatever its ratio;
  ``uncompressed_name`` is a name without that extension (what tells the format), ``seekable`` the random
  access a Parquet or Arrow reader needs (a compressed or remote stream copied to a temporary file first).
- ``bounded_lines(stream, limit)``: lines of at most ``limit`` bytes, ended by LF, CRLF or a lone CR; a longer
  one is skipped to its end after at most ``limit`` bytes were held, and comes out as ``Oversize``.
- ``utf8_stream(stream)``: a JSON Lines or text file as UTF-8, whatever Unicode encoding its first bytes tell
  (``file_encoding``: a UTF-16 or UTF-32 file transcoded as it is read); ``open_lines(raw, path)`` decompresses
  first.
- ``parse_json(line, max_depth)`` and ``check_depth``: a JSON record, or ``RecordError`` with a named reason; a lone
  surrogate in its strings repaired to U+FFFD (``repair_surrogates``), as the build repairs it.
- ``classify(exc)``: ``(reason, detail)`` for any exception raised while reading a file or parsing one
  record; the one place that knows which exception means what.
- ``missing_field_detail(field, fields, flag, key)``: what to tell a user whose records lack the field a flag
  named: the fields they do have and, for a text field, the flag naming the likeliest one (the build's
  ``missing_text`` detail, evaluate's, embed's, finetune's and predict's one line alike).
- ``FileWatch(raw)``: whether a file opened for reading was changed (truncated, grown, rewritten) by another
  process since it was opened, so that a read that fails because of it says so (``file_changed``).
"""
from __future__ import annotations

import codecs
import dataclasses
import io
import itertools
import json
import os
import posixpath
import re
import shlex
import stat
from typing import Any, BinaryIO, Iterator

# How deep a record may nest (objects and arrays, the record itself counting 1). Python's json parser stops
# near 1,000 levels (RecursionError) and a record of a few hundred levels that parses still fails later,
# when a step pickles it; real metadata nests a handful of levels. ``output.max_metadata_depth`` sets it.
MAX_DEPTH = 64


class RecordError(Exception):
    """One record (or the rest of a file) cannot be read: ``reason`` is a rejection reason such as
    ``too_deep`` or ``not_a_regular_file``, ``detail`` says why in a few words."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


def _decompression_errors() -> tuple[type[BaseException], ...]:
    import gzip
    import lzma
    import zlib

    errors: list[type[BaseException]] = [zlib.error, gzip.BadGzipFile, lzma.LZMAError]
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:  # pragma: no cover - zstandard is a dependency
        pass
    return tuple(errors)


def classify(exc: BaseException) -> tuple[str, str]:
    """``(reason, detail)`` of a record, or of the rest of a file, whose reading raised ``exc``.

    The reasons: ``truncated_compressed_file`` (EOFError: the file ends inside compressed data),
    ``corrupt_compressed_data`` (a decompressor refused the bytes: a damaged block, or padding or garbage
    after the last complete frame or member), ``too_deep`` (RecursionError), ``oversize_record``
    (MemoryError), ``invalid_utf8`` (UnicodeDecodeError), ``malformed_json`` (JSONDecodeError), the reason a
    ``RecordError`` carries, and ``unreadable_file`` for anything else (an I/O error, a corrupt Parquet or
    Arrow file: ``ArrowInvalid``, ``OSError``, ...), its type named in the detail."""
    # An OSError's text names the file (``[Errno 13] Permission denied: '/data/jane@example.org.jsonl'``): the
    # detail keeps its reason only, since a rejected record already carries the file's name, filtered as names are.
    message = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
    detail = f"{type(exc).__name__}: {message}"[:300]
    if isinstance(exc, RecordError):
        return exc.reason, exc.detail
    if isinstance(exc, EOFError):
        return "truncated_compressed_file", detail
    if isinstance(exc, _decompression_errors()) or (isinstance(exc, OSError) and "Invalid data stream" in str(exc)):
        return "corrupt_compressed_data", detail  # bz2 says "Invalid data stream" as a plain OSError
    if isinstance(exc, RecursionError):
        return "too_deep", f"nested too deep to parse ({type(exc).__name__})"
    if isinstance(exc, MemoryError):
        return "oversize_record", "MemoryError"
    if isinstance(exc, UnicodeDecodeError):
        return "invalid_utf8", str(exc)[:300]
    if isinstance(exc, json.JSONDecodeError):
        return "malformed_json", str(exc)[:300]
    return "unreadable_file", detail


# ----------------------------------------------------------------------------------------------- records
def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object from its pairs; ``RecordError("duplicate_key")`` when a key is given twice with different
    values (``{"text": "a", "text": "b"}``: a dict keeps the last, and the first would be lost without a word).
    The same key with the same value twice loses nothing and is read."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        for key, value in pairs:
            if obj[key] != value:
                raise RecordError("duplicate_key", f"key {key[:60]!r} given twice with different values")
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_object)


def parse_json(line: bytes, max_depth: int = MAX_DEPTH, repair: bool = True) -> Any:
    """One JSON record from its bytes (a UTF-8 byte order mark dropped), or ``RecordError``:
    ``invalid_utf8``, ``malformed_json``, ``number_too_large`` (an integer past Python's 4,300-digit limit:
    the only ValueError ``json.loads`` raises that is not a JSONDecodeError), ``too_deep`` (nesting past
    ``max_depth``, whether or not the parser got that far; 0: only the parser's own limit),
    ``oversize_record`` or ``duplicate_key`` (an object that gives a key twice, with different values).

    ``repair``: every lone surrogate in its strings (``"\\ud800"``, valid JSON but no text: UTF-8 cannot encode
    it, so a tokenizer, a byte count or a JSON writer raise on it) becomes U+FFFD (``repair_surrogates``), as
    the build repairs a record (README, "lone UTF-16 surrogates"); the build passes False to count its repairs."""
    try:
        value = _DECODER.decode(line.removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise RecordError("malformed_json", str(exc)[:300]) from None
    except ValueError as exc:
        if isinstance(exc, UnicodeDecodeError):
            raise RecordError("invalid_utf8", str(exc)[:300]) from None
        raise RecordError("number_too_large", "an integer with more digits than Python converts (4,300)") from None
    except Exception as exc:  # noqa: BLE001 - RecursionError, MemoryError: classify names them
        raise RecordError(*classify(exc)) from None
    if max_depth:
        check_depth(value, max_depth)
    if repair and _SURROGATE_ESCAPE.search(line):  # only an escape can make one: strict UTF-8 decoded the rest
        value = repair_surrogates(value)
    return value


SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # what may be a lone surrogate's JSON escape (or half a pair)


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (``SURROGATE.search``, which tests hold equal): an ASCII text
    cannot (O(1)), and strict UTF-8 encoding refuses exactly the surrogates, in C at a tenth of the regex's
    cost, which tries its character class at every character of every text read."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def json_strings(value: Any) -> Iterator[str]:
    """Every string in a parsed JSON value, keys included."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def repair_surrogates(value: Any) -> Any:
    """A parsed JSON value with every lone surrogate in its strings (keys included) replaced by U+FFFD; ``value``
    itself when it holds none."""
    if not any(map(has_surrogate, json_strings(value))):
        return value
    return _replaced(value)


def _replaced(value: Any) -> Any:
    if isinstance(value, str):
        return SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replaced(k): _replaced(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v) for v in value]
    return value


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise ``RecordError("too_deep")`` if ``value`` nests objects and arrays (tuples, from Parquet maps,
    too) more than ``max_depth`` levels, ``value`` itself counting 1. Iterative: any depth is measured."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > max_depth:
            raise RecordError("too_deep", f"nested more than {max_depth} levels (output.max_metadata_depth)")
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))


# ----------------------------------------------------------------------------------------------- names
def display_path(path: str) -> str:
    """``path`` as printable, UTF-8-encodable text: the bytes of a file name that is not valid UTF-8 (which
    Python holds as lone surrogates) are written as ``\\xe9`` escapes. The same name always renders the same."""
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return path.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def path_bytes(path: str) -> bytes:
    """``path`` as bytes that ``path_text`` turns back into exactly ``path`` (for coders that need UTF-8)."""
    return path.encode("utf-8", "surrogatepass")


def path_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def file_problem(path: str) -> str | None:
    """Why ``path`` (local) is not a regular file that can be read, from its name alone (nothing is opened):
    ``a FIFO (named pipe)``, ``a character device``, ``a broken symbolic link``, ...; None for a regular file
    or a symbolic link to one, and for remote paths."""
    if not _is_local(path):
        return None
    local = _local(path)
    try:
        mode = os.stat(local).st_mode
    except FileNotFoundError:
        return "a broken symbolic link" if os.path.islink(local) else "missing (removed since it was listed)"
    except OSError as exc:
        return f"not readable ({exc.strerror or type(exc).__name__})"
    if stat.S_ISREG(mode):
        return None
    kind = _kind(mode)
    return f"a symbolic link to {kind}" if os.path.islink(local) else kind


def permission_denied(path: str) -> bool:
    """Whether ``path`` is a local regular file (or a link to one) that this process may not read
    (``os.access``); False for remote paths and for what ``file_problem`` names."""
    return _is_local(path) and file_problem(path) is None and not os.access(_local(path), os.R_OK)


def open_input(path: str) -> BinaryIO:
    """``path`` opened for reading, raw (not decompressed). A local path must be a regular file (or a link to
    one): anything else raises ``RecordError("not_a_regular_file")`` before it is opened, and the file is
    opened non-blocking and checked again, so one swapped for a FIFO meanwhile cannot hang the read."""
    if not _is_local(path):
        from apache_beam.io.filesystems import CompressionTypes, FileSystems

        return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    problem = file_problem(path)
    if problem is not None:
        raise RecordError("not_a_regular_file", f"{problem}; only regular files are read")
    fd = os.open(_local(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise RecordError("not_a_regular_file", f"{_kind(mode)}; only regular files are read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=0)  # type: ignore[return-value]
    except BaseException:
        os.close(fd)
        raise


class FileWatch:
    """What an opened file was when it was opened (``os.fstat`` of its descriptor), to tell whether another
    process changed it since: ``change()`` says how, or None (unchanged, or a stream without a descriptor: a
    remote file). A file renamed over, deleted or replaced by a folder or FIFO after it was opened is no change
    here: the descriptor still reads the bytes it opened. Every input is read through ordinary reads (none is
    memory-mapped), so a change never kills the process (a mapped file cut short raises SIGBUS); a read it makes
    fail is rejected as ``file_changed``."""

    def __init__(self, stream: Any):
        self._fd, self._before = -1, None
        try:
            self._fd = stream.fileno()
            self._before = os.fstat(self._fd)
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
            self._before = None

    def change(self) -> str | None:
        before = self._before
        if before is None:
            return None
        try:
            now = os.fstat(self._fd)
        except OSError:
            return None
        if now.st_size != before.st_size:
            verb = "cut" if now.st_size < before.st_size else "grew"
            return f"{verb} from {before.st_size:,} to {now.st_size:,} bytes"
        if (now.st_mtime_ns, now.st_ctime_ns) != (before.st_mtime_ns, before.st_ctime_ns):
            return f"rewritten ({before.st_size:,} bytes)"
        return None


def changed_detail(change: str, detail: str) -> str:
    """The detail of a ``file_changed`` rejection: what changed, what the reader met, and what to do."""
    return f"the file {change} while it was read ({detail[:160]}); read it again once nothing writes to it"


@dataclasses.dataclass
class InputFile:
    path: str  # as the filesystem names it (may hold surrogates: see display_path)
    size: int  # bytes as stored; 0 for what is not a regular file
    # why it is not a regular file that can be read, when it was listed (``file_problem``); None: it is one. What the
    # build reports for the file: the entry may change after it was listed (the reader checks again when it opens it).
    problem: str | None = None


def list_input(path: str) -> tuple[str, list[InputFile]]:
    """``(root, files)`` that the input ``path`` names; file paths relative to ``root`` name the documents.

    A local path that exists is taken literally (a file, or every entry below a directory, sorted); only a
    path that does not exist is matched as a glob (Beam's syntax, any filesystem). Entries that are not
    regular files are listed too, so that reading rejects them by name."""
    if _is_local(path) and os.path.lexists(_local(path)):
        local = _local(path)
        if not os.path.isdir(local):
            return posixpath.dirname(path), [_local_file(path, local)]
        root = path.rstrip("/") or "/"
        files = []
        for directory, subdirs, names in os.walk(local):
            names = names + [d for d in subdirs if os.path.islink(os.path.join(directory, d))]  # listed, not followed
            files.extend(_local_file(os.path.join(directory, name), os.path.join(directory, name)) for name in names)
        return root, sorted(files, key=lambda f: path_bytes(f.path))
    from apache_beam.io.filesystems import FileSystems

    if not _is_local(path) and FileSystems.exists(path):  # a remote object named literally, glob characters and all
        return posixpath.dirname(path), [InputFile(path, FileSystems.get_filesystem(path).size(path))]
    result = FileSystems.match([path])[0]
    files = [InputFile(m.path, m.size_in_bytes) for m in result.metadata_list if not m.path.endswith("/")]
    return glob_root(path), sorted(files, key=lambda f: path_bytes(f.path))


def _local_file(path: str, local: str) -> InputFile:
    return InputFile(path, _size(local), file_problem(path))


def _size(local: str) -> int:
    try:
        info = os.stat(local)
    except OSError:
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def glob_root(pattern: str) -> str:
    """The directory part of ``pattern`` before its first wildcard (ids are derived relative to it)."""
    cut = min((i for i, ch in enumerate(pattern) if ch in "*?["), default=len(pattern))
    head = pattern[:cut]
    if cut == len(pattern):  # a single file: ids are relative to its directory
        return posixpath.dirname(head)
    return head if head.endswith("/") else posixpath.dirname(head)


# ------------------------------------------------------------------------------------------ decompression
COMPRESSIONS = (".gz", ".zst", ".bz2", ".xz")  # what open_decompressed decompresses, by extension


def uncompressed_name(name: str) -> str:
    """``name`` lower-cased, without the compression extension ``open_decompressed`` reads it by (one of
    ``COMPRESSIONS``): its format's extension is then at its end (``x.parquet.zst`` -> ``x.parquet``)."""
    name = name.lower()
    for ext in COMPRESSIONS:
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def seekable(stream: BinaryIO) -> BinaryIO:
    """``stream``, or where it cannot seek (a decompressed or remote stream) a copy of it in a temporary file
    that stays in memory up to 64 MiB and spills to disk past that: Parquet and Arrow files need random access,
    and a compressed one of any size then costs disk, not memory."""
    try:
        if stream.seekable():
            return stream
    except (AttributeError, io.UnsupportedOperation):
        pass
    import tempfile

    spool = tempfile.SpooledTemporaryFile(max_size=64 << 20)
    try:
        while data := stream.read(1 << 20):
            try:
                spool.write(data)
            except OSError as exc:
                # the temporary folder's error (a full disk there), not the input's: say which folder, as the
                # build's one line names it (errors.resource_error), since the write's OSError names no file
                raise OSError(exc.errno, exc.strerror, tempfile.gettempdir()) from exc
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool  # type: ignore[return-value]


class _ZstdReader(io.RawIOBase):
    """Streaming zstd decompression in bounded steps, across every frame of the file.

    zstandard's ``stream_reader`` bounds its output but ends silently on a truncated file, and a
    ``decompressobj`` fed a whole chunk returns everything that chunk expands to (a zstd block of 4 bytes
    can make 128 KiB). So the input goes in ``FEED`` bytes at a time: one call makes at most ~8 MiB. At the
    end of the file inside a frame this raises EOFError; on bytes that do not decompress (garbage or zero
    padding after the last frame) it first returns everything decompressed before them, then raises the
    decompressor's error, so every record of the valid frames is read."""

    FEED = 256

    def __init__(self, raw: BinaryIO):
        import zstandard

        self._raw, self._dctx = raw, zstandard.ZstdDecompressor()
        self._obj = None  # the decompressor of the frame in progress
        self._input, self._in_pos = b"", 0
        self._out, self._out_pos = b"", 0
        self._error: BaseException | None = None
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        while self._out_pos >= len(self._out):
            if self._error is not None:
                self._done = True
                error, self._error = self._error, None
                raise error
            if self._done or not self._step():
                self._done = True
                return 0
        n = min(len(target), len(self._out) - self._out_pos)
        target[:n] = self._out[self._out_pos:self._out_pos + n]
        self._out_pos += n
        return n

    def _step(self) -> bool:
        """Decompress one more piece of input into ``_out``; False at the end of the file."""
        if self._in_pos >= len(self._input):
            self._input, self._in_pos = self._raw.read(1 << 16), 0
            if not self._input:
                if self._obj is not None:
                    self._error = EOFError("zstd stream ended before the end of its frame")
                    return True
                return False
        if self._obj is None:
            self._obj = self._dctx.decompressobj()
        piece = self._input[self._in_pos:self._in_pos + self.FEED]
        try:
            self._out, self._out_pos = self._obj.decompress(piece), 0
        except Exception as exc:  # noqa: BLE001 - zstandard.ZstdError; returned data first, raised on the next read
            self._error = exc
            return True
        self._in_pos += len(piece)
        if self._obj.eof:  # the frame ended inside this piece: the rest starts the next frame
            self._in_pos -= len(self._obj.unused_data)
            self._obj = None
        return True


def open_decompressed(raw: BinaryIO, path: str) -> BinaryIO:
    """A buffered, line-iterable stream of ``path``'s decompressed bytes (by extension: .gz, .zst, .bz2, .xz).
    Every decompressor here produces output in bounded steps (the standard library's pass ``max_length``)."""
    import bz2
    import gzip
    import lzma

    name = path.lower()
    if name.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
    if name.endswith(".zst"):
        return io.BufferedReader(_ZstdReader(raw), buffer_size=1 << 20)  # type: ignore[return-value]
    if name.endswith(".bz2"):
        return bz2.BZ2File(raw)  # type: ignore[return-value]
    if name.endswith(".xz"):
        return lzma.LZMAFile(raw)  # type: ignore[return-value]
    return raw if isinstance(raw, io.BufferedIOBase) else io.BufferedReader(raw)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------- lines
@dataclasses.dataclass
class Oversize:
    """A line longer than the limit: its size (at least ``limit + 1`` bytes) and its first bytes."""

    size: int
    head: bytes


_CHUNK = 1 << 20  # what bounded_lines reads at a time (one read of the decompressor: data before an error first)
_HEAD = 1024  # the bytes of an over-long line that Oversize keeps


def bounded_lines(stream: BinaryIO, limit: int) -> Iterator[bytes | Oversize]:
    """The lines of ``stream``, each with its line end, a line of more than ``limit`` bytes (its line end not
    counted) as ``Oversize``: it is read to its end a chunk at a time and dropped, so no more than ``limit`` plus
    a 1 MiB chunk is ever held, however long the line.

    A line ends at ``\\n``, ``\\r\\n`` or a lone ``\\r``, the universal newlines of Python's text files: a file
    written with old Mac OS line ends (CR alone) holds as many lines as one written on Linux or Windows (it was
    read as one line, one malformed record). Nothing else ends a line: U+2028, U+2029 and NEL (U+0085) are
    characters of a record (in UTF-8 none of their bytes is CR or LF; a JSON string may hold them raw), as are
    VT, FF and the separators ``str.splitlines`` would also cut at. A raw CR can never be inside a JSON string
    (JSON forbids raw control characters there), so cutting at one splits no valid record's text."""
    read = getattr(stream, "read1", None) or stream.read
    parts: list[bytes] = []  # the line in progress, while it is within the limit
    size = 0  # bytes of the line in progress
    head: bytes | None = None  # its first bytes once it is past the limit (parts dropped)
    ended_cr = None  # a line that ended with CR at the end of a chunk: a LF may start the next one (CRLF)
    while True:
        chunk = read(_CHUNK)
        if ended_cr is not None:
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                ended_cr = ended_cr + b"\n" if isinstance(ended_cr, bytes) else Oversize(ended_cr.size + 1,
                                                                                          ended_cr.head)
            yield ended_cr
            ended_cr = None
            if not chunk:
                chunk = read(_CHUNK)
        if not chunk:
            if size:
                yield b"".join(parts) if head is None else Oversize(size, head)
            return
        pieces = chunk.splitlines(keepends=True)  # at \n, \r\n and \r only (bytes.splitlines)
        last = len(pieces) - 1
        middle = pieces[1:last]  # complete lines that start in this chunk and end before its last line
        if middle and max(map(len, middle)) <= limit:  # the common case, at C speed: none near the limit
            order: Any = (0, middle, last) if last else (0,)
        else:
            order = range(len(pieces))
        for index in order:
            if isinstance(index, list):
                yield from index
                continue
            piece = pieces[index]
            end = piece[-1:]
            complete = end == b"\n" or end == b"\r"
            if head is None:
                content = size + len(piece) - (2 if piece.endswith(b"\r\n") else 1 if complete else 0)
                if content > limit:  # past the limit: keep its first bytes, drop the rest
                    head = (b"".join(parts) + piece[:_HEAD])[:_HEAD]
                    parts = []
                else:
                    parts.append(piece)
            size += len(piece)
            if not complete:
                continue
            line: bytes | Oversize = (parts[0] if len(parts) == 1 else b"".join(parts)) if head is None \
                else Oversize(size, head)
            parts, size, head = [], 0, None
            if index == last and end == b"\r":
                ended_cr = line
            else:
                yield line


def record_limit(max_chars: int, max_bytes: int = 0) -> int:
    """The most bytes one record's line may take: ``max_bytes``, or when 0 room for a text of ``max_chars``
    characters written as JSON escapes (6 bytes each) plus 1 MiB of metadata."""
    return max_bytes if max_bytes > 0 else 6 * max_chars + (1 << 20)


# ---------------------------------------------------------------------------------------------- encodings
# What a JSON Lines or text file is written in, from its first bytes: a byte order mark (UTF-8, UTF-16 or UTF-32,
# either byte order: what Windows tools write, Notepad's "Unicode" is UTF-16 LE with one), or, without one, the
# pattern of NUL bytes of two ASCII characters in UTF-16 or UTF-32 (RFC 4627 section 3; ``json.detect_encoding``).
_TO_UTF8_ERRORS = "corpusforge.undecodable"  # a unit that is not valid in the file's encoding -> byte 0xFF


def _undecodable(exc: UnicodeError) -> tuple[str, int]:
    # Each code unit that is not valid in the file's encoding (a lone surrogate, a value past U+10FFFF, an odd byte
    # at the end) becomes U+DCFF, which the UTF-8 encoder writes back as the byte 0xFF (``surrogateescape``):
    # never valid UTF-8, so the record that holds it is rejected when parsed, as a bad byte in a UTF-8 file is.
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return "\udcff", exc.end


codecs.register_error(_TO_UTF8_ERRORS, _undecodable)


def file_encoding(head: bytes) -> str:
    """The encoding of a JSON Lines or text file from its first 4 bytes: ``utf-8`` (a UTF-8 byte order mark
    too), ``utf-16``/``utf-32`` (a byte order mark, either order), ``utf-16-le``/``-be``/``utf-32-le``/``-be`` (no
    mark: what ``json.detect_encoding`` reads from the NULs of the first two characters, taken only when those
    are ASCII characters other than NUL, as every JSON record's first ones are, so binary garbage that starts
    with a NUL stays UTF-8 and is rejected by record)."""
    found = json.detect_encoding(head)
    if found in ("utf-8", "utf-8-sig"):
        return "utf-8"
    if found in ("utf-16", "utf-32"):  # a byte order mark: the codec reads it and the order from it
        return found
    try:
        chars = head.decode(found)
    except UnicodeDecodeError:
        return "utf-8"
    return found if chars and all("\x01" <= c <= "\x7f" for c in chars) else "utf-8"


class _Utf8(io.RawIOBase):
    """``stream`` (in ``encoding``; its first bytes ``head`` already read from it) as UTF-8 bytes, decoded and
    encoded a chunk at a time (an incremental decoder: a character cut between two reads is whole in the output);
    a code unit that is not valid in ``encoding`` comes out as the byte 0xFF (``_undecodable``). Without
    ``encoding``, ``head`` then ``stream`` as they are (UTF-8, its byte order mark dropped)."""

    def __init__(self, stream: BinaryIO, head: bytes, encoding: str | None):
        self._stream, self._pending = stream, head
        self._read = getattr(stream, "read1", None) or stream.read
        self._decoder = codecs.getincrementaldecoder(encoding)(_TO_UTF8_ERRORS) if encoding else None
        if encoding is None:
            self._pending = head.removeprefix(codecs.BOM_UTF8)
        elif self._pending:
            self._pending = self._encode(self._pending, False)
        self._done = False

    def readable(self) -> bool:
        return True

    def _encode(self, data: bytes, final: bool) -> bytes:
        assert self._decoder is not None
        return self._decoder.decode(data, final).encode("utf-8", "surrogateescape")

    def readinto(self, target) -> int:
        while not self._pending:
            if self._done:
                return 0
            data = self._read(1 << 20)
            if self._decoder is None:
                if not data:
                    self._done = True
                self._pending = data
            else:
                self._done = not data
                self._pending = self._encode(data, self._done)
        n = min(len(target), len(self._pending))
        target[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


_FIELDS_SHOWN = 12


_GUESS_CHARS = 100  # a longer name is listed (cut), not put in a flag: a flag must name the field whole


def missing_field_detail(field: str, fields: Any, flag: str = "--text-field", key: str = "inputs[].text_field",
                         guess: bool = True) -> str:
    """Why a record has no ``field``, naming the fields it does have (``fields``: the record, a dict, or a file's
    column names) so that the user knows what to pass: ``no field 'text'; name the text field with --text-field
    content (inputs[].text_field); records have fields: content, id``. ``guess``: name the field holding the
    record's longest string (the likely text; a label or an id is no such guess: ``name yours with --label-field``),
    whole and quoted as a shell reads it, so the flag works as given. The flag comes before the list, which a
    rejected record's detail (``document.DETAIL_CHARS``) may cut. Computed only for a record that lacks the field,
    from its first few fields, each listed name cut short."""
    fields = fields if isinstance(fields, dict) else dict.fromkeys(fields)
    first = list(itertools.islice(fields.items(), _FIELDS_SHOWN))  # a record of a million keys: twelve looked at
    shown = ", ".join(_one_line(str(name)[:40]) for name, _ in first) + (", ..." if len(fields) > _FIELDS_SHOWN else "")
    strings = [(len(value), str(name)) for name, value in first if isinstance(value, (str, bytes)) and value]
    where = f" ({key})" if key else ""
    detail = f"no field {field[:60]!r}"
    best = max(strings)[1] if guess and strings else None
    # The longest string's field, or no guess: a name that no flag can carry as typed (too long to show whole, a
    # control character a shell would take as written, "--", which argparse reads as the end of its options) is
    # listed, never replaced by the next longest (a record's id suggested as its text).
    if best is not None and len(best) <= _GUESS_CHARS and best.isprintable() and best != "--":
        # as a shell takes it: quoted where it holds a space or a quote, after "=" where argparse would read a flag
        named = f"{flag}={shlex.quote(best)}" if best.startswith("-") else f"{flag} {shlex.quote(best)}"
        detail += f"; name the text field with {named}{where}"
    elif fields:
        detail += f"; name yours with {flag}{where}"
    return detail + (f"; records have fields: {shown}" if fields else "; records have no fields")


def _one_line(name: str) -> str:
    """A field name as a one-line message shows it: a newline or U+2028 in a JSON key escaped."""
    return name if name.isprintable() else repr(name)[1:-1]


def cell_text(value: Any) -> Any:
    """A text cell as every reader takes it: bytes (a Parquet/Arrow string column typed binary, as Spark and Hive
    write strings unless ``spark.sql.parquet.binaryAsString`` is set) as their UTF-8 text, or
    ``RecordError("invalid_utf8")`` when they are not UTF-8; any other value as it is."""
    if not isinstance(value, (bytes, bytearray)):
        return value
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError("invalid_utf8", f"binary and not UTF-8: {exc}"[:300]) from None


def cell_string(value: bytes | bytearray) -> str:
    """A binary cell of a field other than the text (a record's ``source``, a metadata value) as the build writes
    it: its UTF-8 text, or, for bytes that are not UTF-8, what ``str`` gives (``b'caf\\xe9'``). Never raises: the
    build keeps such a record (only a text that is not UTF-8 rejects it, ``cell_text``)."""
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return str(value)


def open_lines(raw: BinaryIO, path: str) -> BinaryIO:
    """A JSON Lines or text file opened with ``open_input`` as every reader of lines reads it: decompressed by
    extension (``open_decompressed``), then as UTF-8 (``utf8_stream``: a UTF-16 or UTF-32 file transcoded)."""
    return utf8_stream(open_decompressed(raw, path))[0]


def utf8_stream(stream: BinaryIO) -> tuple[BinaryIO, str]:
    """``(stream as UTF-8, the file's encoding)`` for a JSON Lines or text file (``file_encoding`` of its first
    bytes): UTF-16 and UTF-32 files, with a byte order mark or without, are transcoded a chunk at a time, so every
    line, record and limit after is the same as for the file written in UTF-8; a UTF-8 file is its own bytes, its
    byte order mark dropped. The stream reads what ``stream`` does, an error where it errs."""
    head = b""
    read = getattr(stream, "read1", None) or stream.read
    while len(head) < 4:
        more = read(4 - len(head))
        if not more:
            break
        head += more
    encoding = file_encoding(head)
    if encoding == "utf-8":
        return io.BufferedReader(_Utf8(stream, head, None), 1 << 20), encoding  # type: ignore[return-value]
    return io.BufferedReader(_Utf8(stream, head, encoding), 1 << 20), encoding  # type: ignore[return-value]


def text_lines(path: str, stream: BinaryIO | None = None, limit: int = 0) -> Iterator[str]:
    """The non-blank lines of a user's text file (``generate --prompts``, ``pii FILE``), read as every reader reads
    lines: a regular file only (``open_input``), decompressed by extension and transcoded from UTF-16 or UTF-32
    (``open_lines``), each line bounded (``bounded_lines``, ``limit``: ``record_limit`` of the build's default) and
    decoded as strict UTF-8, its line end (LF, CRLF or a lone CR) dropped. ``stream``: an open binary stream
    read instead (stdin), not decompressed. A file that cannot be read, a line too long or not UTF-8 is one
    ``UserError`` naming the file and the line."""
    for _, line in _numbered_text(path, stream, limit or record_limit(10_000_000)):
        if line.strip():
            yield line


def text_whole(path: str, stream: BinaryIO | None = None, limit: int = 0) -> str:
    """A user's text file whole (``pii FILE`` without ``--lines``), read as ``text_lines`` reads it: line ends
    kept as written, the whole under ``limit`` bytes (``record_limit`` of the build's default)."""
    from corpusforge.core.errors import UserError

    limit = limit or record_limit(10_000_000)
    where = "stdin" if path == "-" else display_path(path)
    with _text_stream(path, stream) as source:
        data = source.read(limit + 1)
    if len(data) > limit:
        raise UserError(f"{where} is more than {limit:,} bytes; pass it with --lines, one document a line")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{where} is not valid UTF-8 ({str(exc)[:160]})") from None


def _text_stream(path: str, stream: BinaryIO | None):
    from corpusforge.core.errors import UserError

    if stream is not None:
        return utf8_stream(stream)[0]
    if _is_local(path) and not os.path.lexists(_local(path)):
        raise UserError(f"{display_path(path)}: no such file")
    try:
        raw = open_input(path)
        return open_lines(raw, path)
    except Exception as exc:  # noqa: BLE001 - not a regular file, missing, a corrupt compressed header: one line
        reason, detail = classify(exc)
        raise UserError(f"{display_path(path)} cannot be read: {reason} ({detail[:160]})") from None


def _numbered_text(path: str, stream: BinaryIO | None, limit: int) -> Iterator[tuple[int, str]]:
    from corpusforge.core.errors import UserError

    where = "stdin" if path == "-" else display_path(path)
    with _text_stream(path, stream) as source:
        try:
            for number, line in enumerate(bounded_lines(source, limit), 1):
                if isinstance(line, Oversize):
                    raise UserError(f"{where}:{number} is a line of {line.size:,} bytes or more, over the {limit:,} "
                                    "a line may take")
                try:
                    yield number, line.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    raise UserError(f"{where}:{number} is not valid UTF-8 ({str(exc)[:160]})") from None
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001 - a file cut short mid-stream, a corrupt frame: one line
            reason, detail = classify(exc)
            raise UserError(f"{where} cannot be read: {reason} ({detail[:160]})") from None
