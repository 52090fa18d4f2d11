"""Readers: JSON Lines (plain, .gz, .zst), Parquet, Arrow IPC and text files into ``Document`` records.

Every input record becomes either a ``Document`` or a ``Rejected`` record with a reason, so the build can
prove that nothing was lost. A whole file that cannot be read counts as one rejected record; an error of the
environment met while opening or reading one (a full disk, an I/O error, too many open files: ``stop_on_environment``)
is no file's and stops the build with its one line. JSON Lines and text files are read in the Unicode encoding their
first bytes tell (UTF-16 and UTF-32 transcoded: ``input_files.utf8_stream``), their lines ended by LF, CRLF or a lone
CR (``input_files.bounded_lines``); a Parquet or Arrow text column typed binary is read as UTF-8.

The record parsing is plain Python (``records_from_file``), tested without Beam; ``ReadDocuments`` wraps it
for any Beam filesystem (local, gs://, s3://...). What a path names, which files are opened, decompression,
the line size limit and what each parser exception means are ``corpusforge.core.input_files``, shared with
every command that reads data. No exception escapes a file's reading: a record whose parsing raises is
rejected with the reason ``classify`` gives (``too_deep``, ``number_too_large``, ...), an error that stops
the file rejects its unread rest as one record, and a record whose conversion into a document raises for
another reason is rejected on its own (reason ``stage_error``, detail ``read: <ExceptionType>: <message>``)
and the file read on; with ``fail_fast`` that exception fails the run. What the reader accepts nests at most
``output.max_metadata_depth`` levels and encodes as UTF-8, so no later step can fail on it.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import io
import json
import os
import posixpath
import zlib
from typing import Any, BinaryIO, Callable, Iterator

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from corpusforge.core import columnar
from corpusforge.core import files as files_mod
from corpusforge.core.disk_grouping import CoGroupByKey, Flatten, GroupByKey, Reshuffle, spill_directory
from corpusforge.pipeline import web
from corpusforge.pipeline.config import InputConfig
from corpusforge.pipeline.document import RAW_CARRIED, Document, Rejected, held_bytes
from corpusforge.pipeline.document_coder import Documents
from corpusforge.core.errors import ENVIRONMENT_ERRNOS, UserError, environment_error
from corpusforge.core.faults import STAGE_ERROR, describe
from corpusforge.core.input_files import (COMPRESSIONS, MAX_DEPTH, FileWatch, InputFile, Oversize, RecordError,
                                          bounded_lines, cell_string, cell_text, changed_detail, check_depth, classify,
                                          display_path, missing_field_detail,
                                          list_input, open_decompressed, open_input, parse_json, permission_denied,
                                          path_bytes, path_text, record_limit, repair_surrogates, seekable,
                                          uncompressed_name,
                                          utf8_stream)
from corpusforge.core.progress import Reporter
from corpusforge.core import rundir
from corpusforge.core.rundir import MARKER
from corpusforge.core.shard_files import open_shard

REJECTED = "rejected"
EDITS = "edits"  # (stage, counter, amount): what the reader changed, for stats.json's edits

_JSONL_EXTS = (".jsonl", ".json", ".ndjson")
# A UTF-8 byte order mark, as Windows tools write it at the start of a file. Accepted (and dropped) at the
# start of every JSONL and text file, compressed or not; in JSONL also at the start of any line, since a BOM
# can never begin valid JSON and files concatenated from BOM-marked files carry one per part.
_BOM = b"\xef\xbb\xbf"
# Lone UTF-16 surrogates: what a JSON escape such as "\ud800" decodes to, and the only code points that a
# Python string can hold but UTF-8 (spill files, Arrow shards) cannot encode.


def detect_format(path: str) -> str:
    """The reader for ``path`` by extension: jsonl, parquet, arrow, text, warc or html."""
    name = uncompressed_name(path)
    if name.endswith(_JSONL_EXTS):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".arrow", ".feather", ".ipc")):
        return "arrow"
    if name.endswith((".txt", ".text", ".md", ".rst")):
        return "text"
    if name.endswith(".warc"):
        return "warc"
    if name.endswith((".html", ".htm", ".xhtml")):
        return "html"
    if name.endswith((".csv", ".tsv")):  # finetune and predict read them, so a newcomer tries build on one too
        raise UserError(f"{display_path(path)}: build reads no CSV or TSV; write it as Parquet or JSON Lines first "
                        "(e.g. pandas.read_csv(PATH).to_parquet('data.parquet')) and name its text column with "
                        "--text-field (inputs[].text_field)")
    raise UserError(
        f"cannot tell the format of {display_path(path)} from its extension; set format: "
        "jsonl|parquet|arrow|text|warc|html on that input"
    )


def source_name(spec: InputConfig, path: str) -> str:
    """The source name of a document: the input's ``name``, else the file's stem."""
    if spec.name:
        return spec.name
    base = posixpath.basename(path.rstrip("/"))
    for ext in COMPRESSIONS:
        if base.endswith(ext):
            base = base[: -len(ext)]
    return base.rsplit(".", 1)[0] or base


def derived_id(source: str, relpath: str, position: int) -> str:
    """A stable id for a record without one: the same file and position always give the same id."""
    digest = hashlib.sha1(f"{relpath}\0{position}".encode()).hexdigest()[:16]
    return f"{source}/{digest}"


def _preview(raw: Any) -> str:
    if callable(raw):  # a columnar row's preview, made only when the row is rejected
        raw = raw()
    if isinstance(raw, bytes):
        raw = raw[: RAW_CARRIED * 4].decode("utf-8", errors="backslashreplace")
    return raw[:RAW_CARRIED]  # cut to RAW_PREVIEW when written, after the PII scrubber saw it whole


@dataclasses.dataclass
class _Context:
    spec: InputConfig
    path: str
    relpath: str
    source: str
    max_chars: int
    counters: dict[str, int] = dataclasses.field(default_factory=dict)  # edits the reader made, by name
    input_index: int = 0  # which configured input the file belongs to (Document.origin)
    fail_fast: bool = False  # let a record whose conversion raises fail the run (build.fail_fast)
    max_bytes: int = 0  # the most bytes one line may take (record_limit); 0: derived from max_chars
    max_depth: int = MAX_DEPTH  # output.max_metadata_depth
    position: int = -1  # the last record's position, where the unread rest of a file that fails is rejected
    failing: bool = False  # a record's conversion raised under fail_fast: the run fails with it
    watch: FileWatch | None = None  # the file as it was opened: whether another process changed it since
    encoding: str = "utf-8"  # a JSON Lines or text file's encoding, told by its first bytes (utf8_stream)
    names: Callable[[str], str] | None = None  # the PII stage's NameScrubber: a shard row's own source goes through it

    def __post_init__(self) -> None:
        self.max_bytes = record_limit(self.max_chars, self.max_bytes)

    def reject(self, position: int, reason: str, detail: str = "", raw: Any = b"") -> Rejected:
        return Rejected(self.source, self.relpath, position, reason, detail[:RAW_CARRIED], _preview(raw))

    def stopped(self, position: int, exc: BaseException) -> Rejected:
        """The unread rest of the file, from ``position``, whose reading raised ``exc``, as one rejected record:
        ``file_changed`` where another process changed the file since it was opened (``FileWatch``: cut short,
        grown, rewritten), else the reason ``classify`` gives. An error of the environment (``stop_on_environment``)
        is no file's: it is raised, and stops the build with its one line."""
        stop_on_environment(exc, self.path)
        reason, detail = classify(exc)
        change = self.watch.change() if self.watch is not None else None
        if change is not None:
            return self.reject(position, "file_changed", changed_detail(change, detail))
        return self.reject(position, reason, detail)

    def lines(self, stream: BinaryIO) -> Iterator[tuple[int, bytes | Oversize]]:
        """``(position, line)`` for every line of ``stream``, a line over ``max_bytes`` as ``Oversize``."""
        for self.position, line in enumerate(bounded_lines(stream, self.max_bytes)):
            yield self.position, line

    def undecodable(self, position: int, detail: str, raw: Any) -> Rejected:
        """A record whose bytes are not valid in the file's encoding: ``invalid_utf8`` in a UTF-8 file; in a
        UTF-16 or UTF-32 one (``utf8_stream``: a unit that does not decode is the byte 0xFF in its UTF-8 form)
        ``invalid_encoding``, naming the encoding."""
        if self.encoding == "utf-8":
            return self.reject(position, "invalid_utf8", detail, raw)
        return self.reject(position, "invalid_encoding", f"bytes that are not valid {self.encoding.upper()}, the "
                           "file's encoding (told by its first bytes)", raw)

    def oversize(self, position: int, line: Oversize) -> Rejected:
        return self.reject(position, "oversize_record", f"line of {line.size} bytes or more > {self.max_bytes} "
                           "(output.max_record_bytes)", line.head)

    def isolated(self, position: int, raw: Any, convert, *args) -> Document | Rejected:
        """``convert(*args)``, or, when it raises, the record rejected: with the reason of a ``RecordError``
        or of a known data error (``classify``), else as ``stage_error`` (the file reads on)."""
        try:
            return convert(*args)
        except RecordError as exc:
            return self.reject(position, exc.reason, exc.detail, raw)
        except Exception as exc:  # noqa: BLE001 - one record's bug must not cost the file or the run
            stop_on_environment(exc, self.path)  # a full disk, an I/O error: the machine's, not the record's
            if self.fail_fast:
                self.failing = True  # _guarded lets it through
                raise
            reason, detail = classify(exc)
            if reason != "unreadable_file":  # RecursionError, MemoryError, ...: the record's own fault
                return self.reject(position, reason, detail, raw)
            raw = raw() if callable(raw) else raw
            text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
            return self.reject(position, STAGE_ERROR, describe("read", exc, text), raw)

    def record(self, position: int, obj: Any, raw: bytes | str = b"") -> Document | Rejected:
        """A parsed record (a dict) -> Document, or Rejected with the reason it cannot be one."""
        return self.isolated(position, raw, self._record, position, obj, raw)

    def _record(self, position: int, obj: Any, raw: bytes | str = b"") -> Document | Rejected:
        if not isinstance(obj, dict):
            got = "an array" if isinstance(obj, list) else type(obj).__name__
            return self.reject(position, "not_an_object", f"expected a JSON object, got {got}", raw)
        check_depth(obj, self.max_depth)  # what nests deeper fails later steps (pickling, JSON writing)
        obj = self.repair_unicode(obj)
        if self.spec.text_field == "text" and self.spec.id_field == "id" and is_shard_row(obj):
            return self._shard_row(position, obj, raw)
        text = obj.get(self.spec.text_field)
        if text is None:
            if obj.keys() == _REJECTED_COLUMNS:  # a copy of a rejected/ shard, out of its run (_check_own_outputs)
                return self.reject(position, REJECTED_RECORD, rejected_record_detail(obj), raw)
            return self.reject(position, "missing_text", missing_text_detail(self.spec.text_field, obj), raw)
        if isinstance(text, bytes):
            # A Parquet/Arrow text column typed binary, not string: Spark and Hive write every string column so
            # unless told otherwise (spark.sql.parquet.binaryAsString), and pyarrow reads it as bytes. Its text is
            # its bytes as UTF-8, as a string column's is; a cell that is not UTF-8 is rejected on its own.
            try:
                text = cell_text(text)
            except RecordError as exc:
                return self.reject(position, exc.reason, f"{self.spec.text_field!r} is {exc.detail}", raw)
        if not isinstance(text, str):
            return self.reject(position, "non_string_text", f"{self.spec.text_field!r} is {type(text).__name__}", raw)
        raw_id = obj.get(self.spec.id_field)
        if isinstance(raw_id, bytes):  # a binary id column (as a binary text column above): its UTF-8 text
            with contextlib.suppress(UnicodeDecodeError):
                raw_id = raw_id.decode("utf-8")
        metadata = {k: v for k, v in obj.items() if k not in (self.spec.text_field, self.spec.id_field)}
        if isinstance(raw_id, float) and raw_id != raw_id:  # NaN: how pandas writes a missing id in a float column
            raw_id = None
        if raw_id is not None and not _usable_id(raw_id):
            # An id that is neither a string nor an integer (5001.0 from a pandas float column, true, a list) names
            # no document: it gets an id from its file and position, as one without an id does. The value was
            # dropped with nothing said; it stays in metadata under its field's name, and is counted.
            metadata[self.spec.id_field] = raw_id
            self.counters[UNUSABLE_IDS] = self.counters.get(UNUSABLE_IDS, 0) + 1
        return self._document(position, text, raw_id, merged_metadata(metadata), raw)

    def _shard_row(self, position: int, obj: dict[str, Any], raw: Any) -> Document | Rejected:
        """A row of a corpusforge shard (``is_shard_row``: RUN/clean, RUN/removed) as the document it was: its
        id and source as written, its metadata decoded from the JSON string the shard holds it as. What an earlier
        build computed about it (``annotations``; a removed row's ``stage``, ``reason``, ``details``) is dropped:
        this build's stages compute it again under its own settings, and a verdict of a stage switched off now
        would be stale. docs/inputs.md ("corpusforge's own shards")."""
        text = cell_text(obj["text"])
        if not isinstance(text, str):
            return self.reject(position, "non_string_text", f"'text' is {type(text).__name__}", raw)
        metadata = _shard_metadata(obj.get("metadata"), self.max_depth)
        source = cell_text(obj["source"])
        # the source as this build writes names (a name holding PII hashed, as the file's own source is)
        source = (self.names(source) if self.names else source) if source else self.source
        self.counters[SHARD_ROWS] = self.counters.get(SHARD_ROWS, 0) + 1
        return self._document(position, text, cell_text(obj["id"]), metadata, raw, source=source, own_id=True)

    def repair_unicode(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` with every lone surrogate in its strings (text, id, metadata keys and values) replaced by
        U+FFFD, counted as the edit ``lone_surrogates_repaired`` (one per record).

        The choice is to repair, not to reject: a lone surrogate is valid JSON (``"\\ud800"``, typically an
        emoji cut in half by a crawler) and the rest of the record is good text, so the record is kept with
        the replacement character where the broken half was, like a decoder with ``errors="replace"``. Only
        JSON can produce them: text files are decoded strictly (invalid UTF-8 is rejected as ``invalid_utf8``)
        and Arrow strings are valid UTF-8."""
        repaired = repair_surrogates(obj)
        if repaired is not obj:
            self.counters["lone_surrogates_repaired"] = self.counters.get("lone_surrogates_repaired", 0) + 1
        return repaired

    def document(self, position: int, text: str, raw_id: Any, metadata: dict[str, Any],
                 raw: bytes | str = b"") -> Document | Rejected:
        return self.isolated(position, raw, self._document, position, text, raw_id, metadata, raw)

    def _document(self, position: int, text: str, raw_id: Any, metadata: dict[str, Any],
                  raw: bytes | str = b"", *, source: str | None = None, own_id: bool = False) -> Document | Rejected:
        source = self.source if source is None else source
        if not text.strip():
            return self.reject(position, "empty_text", "", raw)
        if len(text) > self.max_chars:
            return self.reject(position, "oversize_record", f"{len(text)} chars > output.max_doc_chars={self.max_chars}",
                               text[:RAW_CARRIED])
        if own_id and isinstance(raw_id, str) and raw_id:
            doc_id = raw_id  # a corpusforge shard's id: namespaced by its source already
        elif _usable_id(raw_id) and str(raw_id):
            # Ids are namespaced by source so that two sources using the same ids stay distinct corpus-wide.
            doc_id = f"{source}/{raw_id}"
        else:
            doc_id = derived_id(source, self.relpath, position)
        return Document(id=doc_id, text=text, source=source, metadata=_json_safe(metadata),
                        origin=(self.input_index, self.relpath, position))


# the edit counting records whose id field holds a value that cannot be an id (kept in their metadata instead)
UNUSABLE_IDS = "ids_not_string_or_integer"


def _usable_id(raw_id: Any) -> bool:
    """Whether a record's id value can name its document: a string or an integer (not a bool)."""
    return isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool)


# The columns of the shards a build writes (pipeline/document.py: document_schema, removed_schema): RUN/clean's
# rows, and RUN/removed's, which hold the verdict (stage, reason, details) beside the document's metadata (runs
# written before removed/ kept metadata: without it). A record with exactly one of these sets of fields is read
# back as the document it was (_Context._shard_row).
_CLEAN_COLUMNS = frozenset({"id", "text", "source", "metadata", "annotations"})
_REMOVED_COLUMNS = frozenset({"id", "source", "stage", "reason", "details", "text", "metadata", "annotations"})
_OLD_REMOVED_COLUMNS = _REMOVED_COLUMNS - {"metadata"}
SHARD_ROWS = "corpusforge_shard_rows_read_back"  # the read edit counting them
# A rejected/ shard's columns (document.REJECTED_SCHEMA): its rows are input a build could not read, a reason and a
# preview each. Within its run it is refused as an input (_check_own_outputs); a copy elsewhere has its rows
# rejected as REJECTED_RECORD, not as missing_text, whose line would tell to name --text-field raw and build the
# previews as documents.
_REJECTED_COLUMNS = frozenset({"source", "path", "position", "reason", "detail", "raw"})
REJECTED_RECORD = "rejected_record"


def rejected_record_detail(obj: dict[str, Any]) -> str:
    """``a record of a corpusforge rejected/ shard (malformed_json at web.jsonl record 3), not a document``."""
    where = f"{str(obj['reason'])[:40]} at {str(obj['path'])[:80]} record {str(obj['position'])[:20]}"
    return f"a record of a corpusforge rejected/ shard ({where}), not a document"
def missing_text_detail(text_field: str, obj: dict[str, Any]) -> str:
    """Why a record has no text, naming the fields it does have and the one holding its longest string (the likely
    text), so that a build that rejects every record says which ``--text-field`` to name: ``no field 'text'; name
    the text field with --text-field content (inputs[].text_field); records have fields: content, id``
    (``input_files.missing_field_detail``, which every command reading records shares)."""
    return missing_field_detail(text_field, obj)


def is_shard_row(obj: dict[str, Any]) -> bool:
    """Whether ``obj`` is a row of a corpusforge shard: its fields are exactly a clean or a removed shard's
    columns (a removed one's of an older run without ``metadata`` too), ``source`` a string, ``metadata`` a
    string, the JSON the build wrote; ``annotations`` is a struct (an object) or, where the build had no typed
    annotations, a JSON string."""
    if "annotations" not in obj:  # almost every user record: one lookup (the set comparisons cost ~10x it)
        return False
    keys = obj.keys()
    if len(keys) == 7:
        if keys != _OLD_REMOVED_COLUMNS:
            return False
    elif keys != (_CLEAN_COLUMNS if len(keys) == 5 else _REMOVED_COLUMNS) \
            or not isinstance(obj["metadata"], (str, bytes)):
        return False
    return isinstance(obj["source"], (str, bytes)) and isinstance(obj["annotations"], (dict, str, bytes, type(None)))


def _shard_metadata(value: Any, max_depth: int) -> dict[str, Any]:
    """A shard's ``metadata`` cell (a JSON object as a string) as the metadata it was; a cell that is not such an
    object (edited by hand, cut short) is kept whole under ``metadata``, as any record's string field is."""
    if value is None or value == "" or value == b"":
        return {}
    try:
        decoded = parse_json(value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass"), max_depth)
    except RecordError:
        decoded = None
    if not isinstance(decoded, dict):
        return {METADATA: cell_text(value) if isinstance(value, bytes) else value}
    return decoded


METADATA = "metadata"  # the field of a record's own metadata object (dolma, datatrove, the HF hub's exports)


def merged_metadata(fields: dict[str, Any]) -> dict[str, Any]:
    """A document's metadata from its record's fields other than text and id: a ``metadata`` field holding an
    object is merged into them, as datatrove's readers do, rather than nested under ``metadata.metadata``
    (``{"id", "text", "metadata": {"url": ...}, "added", "source"}`` -> ``{"url", "added", "source"}``). A key
    of the object that is also a field of the record (or is ``metadata``) loses nothing: the field keeps its name
    and value, and the object's value (unless null) stays under ``metadata.<key>``. A ``metadata`` value that is
    not an object (a string, a list) stays as it was."""
    nested = fields.get(METADATA)
    if not isinstance(nested, dict):
        return fields
    merged = {key: value for key, value in fields.items() if key != METADATA}
    clashing = [key for key in nested if key in merged or key == METADATA]
    merged.update((key, value) for key, value in nested.items() if key not in clashing)
    # a null says nothing the field does not (a Parquet struct gives every row every key, null where absent)
    clashes = {key: nested[key] for key in clashing if nested[key] is not None}
    if clashes:
        merged[METADATA] = clashes
    return merged


def _json_safe(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata as JSON-ready values (Parquet/Arrow rows may hold dates, bytes, decimals)."""
    if not metadata:  # most records have none: json.dumps({}) costs ~1 us a record for nothing
        return metadata
    try:
        json.dumps(metadata)
        return metadata
    except (TypeError, ValueError):
        return json.loads(json.dumps(metadata, default=_json_value))


def _json_value(value: Any) -> Any:
    """A metadata value JSON cannot hold as it is: bytes that are UTF-8 as their text (a Parquet/Arrow string column
    typed binary, as Spark writes every one: its ``url`` is ``"http://..."``, not ``"b'http://...'"``), anything
    else (other bytes, dates, decimals) as ``str`` gives it."""
    if isinstance(value, (bytes, bytearray)):
        return cell_string(value)  # evaluate reads a binary source cell so too
    return str(value)


def _utf8(stream: BinaryIO, ctx: _Context) -> BinaryIO:
    """A JSON Lines or text file's stream as UTF-8 (``utf8_stream``: UTF-16 and UTF-32 files, told by a byte order
    mark or by the NULs of their first characters, transcoded), its encoding on ``ctx``; a file read so is counted
    as the read edit ``files_transcoded_to_utf8``."""
    stream, ctx.encoding = utf8_stream(stream)
    if ctx.encoding != "utf-8":
        ctx.counters["files_transcoded_to_utf8"] = ctx.counters.get("files_transcoded_to_utf8", 0) + 1
    return stream


def _read_jsonl(stream: BinaryIO, ctx: _Context) -> Iterator[Document | Rejected]:
    for position, line in ctx.lines(_utf8(stream, ctx)):
        if isinstance(line, Oversize):
            yield ctx.oversize(position, line)
            continue
        if line.startswith(_BOM):
            line = line[len(_BOM):]
        if not line.strip():  # blank lines are layout, not records
            continue
        try:
            obj = parse_json(line, max_depth=0, repair=False)  # depth and lone surrogates: ctx.record (counted)
        except RecordError as exc:
            if exc.reason == "invalid_utf8":
                yield ctx.undecodable(position, exc.detail, line)
            else:
                yield ctx.reject(position, exc.reason, exc.detail, line)
            continue
        yield ctx.record(position, obj, line)


def _read_text(stream: BinaryIO, ctx: _Context) -> Iterator[Document | Rejected]:
    stream = _utf8(stream, ctx)
    if ctx.spec.text_unit == "line":
        for position, line in ctx.lines(stream):
            if isinstance(line, Oversize):
                yield ctx.oversize(position, line)
                continue
            if position == 0 and line.startswith(_BOM):
                line = line[len(_BOM):]
            if not line.strip():
                continue
            try:
                text = line.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                yield ctx.undecodable(position, str(exc), line)
                continue
            yield ctx.document(position, text, None, {}, line)
        return
    data = stream.read(ctx.max_chars * 4 + 1)
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    if len(data) > ctx.max_chars * 4:
        yield ctx.reject(0, "oversize_record", f"file larger than {ctx.max_chars * 4} bytes", data[:RAW_CARRIED])
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        yield ctx.undecodable(0, str(exc), data)
        return
    yield ctx.document(0, text, None, {"path": ctx.relpath}, data[:RAW_CARRIED])


def _row_preview(row: Any) -> str:
    try:
        return json.dumps(row, default=str)[:RAW_CARRIED]
    except Exception:  # noqa: BLE001 - a preview must not fail the rejection it explains
        return "(a row that cannot be shown)"


def _read_columnar(batches: Iterator[Any], ctx: _Context) -> Iterator[Document | Rejected]:
    """Every row of ``batches`` (``corpusforge/core/columnar.py``: batches of bounded size). A row over
    ``max_bytes`` (``columnar.row_sizes``: its decoded bytes) is rejected as ``oversize_record`` without being
    converted to Python; the others are converted a run of at most ``columnar.BATCH_BYTES`` at a time. A run
    whose conversion raises is converted row by row, so only the rows that raise are rejected
    (``unreadable_record``, or the reason ``classify`` names)."""
    position = 0
    for batch in batches:
        if isinstance(batch, columnar.Oversized):  # known from the file's footer: never decoded
            for _ in range(batch.rows):
                ctx.position = position
                yield ctx.reject(position, "oversize_record", f"row group of one row, {batch.size} bytes encoded > "
                                 f"4 x {ctx.max_bytes} (output.max_record_bytes); not read")
                position += 1
            continue
        repeated = columnar.repeated_names(batch)
        if repeated:  # a row as a dict keeps one of the columns so named: the other's values would be lost
            for _ in range(batch.num_rows):
                ctx.position = position
                yield ctx.reject(position, "duplicate_key", repeated)
                position += 1
            continue
        sizes = columnar.row_sizes(batch)
        for start, stop, oversize in columnar.runs(sizes, ctx.max_bytes):
            if oversize:
                ctx.position = position
                yield ctx.reject(position, "oversize_record", f"row of {sizes[start]} bytes > {ctx.max_bytes} "
                                 "(output.max_record_bytes)",
                                 lambda index=start: _row_preview(columnar.head(batch, index, RAW_CARRIED)))
                position += 1
                continue
            run = batch.slice(start, stop - start)
            try:
                rows = run.to_pylist()
            except Exception:  # noqa: BLE001 - e.g. a date past year 9999: find the rows, below
                rows = None
            for index in range(stop - start):
                ctx.position = position
                if rows is not None:
                    row = rows[index]
                else:
                    try:
                        row = run.slice(index, 1).to_pylist()[0]
                    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, ValueError, OverflowError...
                        reason, detail = classify(exc)
                        yield ctx.reject(position, "unreadable_record" if reason == "unreadable_file" else reason,
                                         detail)
                        position += 1
                        continue
                yield ctx.record(position, row, lambda row=row: _row_preview(row))
                position += 1
            del rows


def _read_parquet(stream: BinaryIO, ctx: _Context) -> Iterator[Document | Rejected]:
    try:
        reader = columnar.open_parquet(seekable(stream))
        batches = columnar.parquet_batches(reader, ctx.max_bytes)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        yield ctx.stopped(-1, exc)
        return
    yield from _read_columnar(batches, ctx)  # a file cut short mid-batch: records_from_file rejects the rest


def _read_arrow(stream: BinaryIO, ctx: _Context) -> Iterator[Document | Rejected]:
    try:
        batches = columnar.open_ipc(seekable(stream))  # ordinary reads, never a memory map: see columnar
    except Exception as exc:  # pyarrow raises several types for corrupt files
        yield ctx.stopped(-1, exc)
        return
    yield from _read_columnar(batches, ctx)  # a file cut short mid-batch: records_from_file rejects the rest


def _guarded(items: Iterator[Document | Rejected], ctx: _Context) -> Iterator[Document | Rejected]:
    """``items``, and if reading raises (a truncated or corrupt compressed stream, a damaged Parquet page, an
    I/O error, anything), the unread rest of the file as one record rejected with the reason ``classify``
    gives. The one place no exception escapes a file's reading through."""
    try:
        yield from items
    except Exception as exc:  # noqa: BLE001 - every reader's every failure: see classify
        if ctx.failing:
            raise
        yield ctx.stopped(ctx.position + 1, exc)


def stop_on_environment(exc: BaseException, path: str) -> None:
    """Raise when ``exc``, met while opening or reading the input ``path``, is an error of the environment
    (``errors.environment_error``: ENOSPC, EDQUOT, EACCES, EPERM, EROFS, EMFILE, ENFILE, EIO, EPIPE anywhere in
    its chain; a ``WorkerError``), as every stage does (``corpusforge/core/faults.py``): the disk, the filesystem or
    the process is in trouble, not the file, and the files after it would meet it too. It stops the build with the
    one resource line (``errors.resource_error``), naming ``path`` where the ``OSError`` names no file (a read on
    an open descriptor names none). What is the file's own (not a regular file, EISDIR, a corrupt compressed
    stream, a damaged Parquet footer, an errno-less ``OSError``) returns, and stays the file's rejection."""
    if not environment_error(exc):
        return
    link: BaseException | None = exc
    seen: set[int] = set()
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, OSError) and link.errno in ENVIRONMENT_ERRNOS:
            if link.filename:
                break
            raise OSError(link.errno, link.strerror or os.strerror(link.errno), display_path(path)) from exc
        link = link.__cause__ or link.__context__
    raise exc


_READERS = {"jsonl": _read_jsonl, "text": _read_text, "parquet": _read_parquet, "arrow": _read_arrow,
            "warc": web.read_warc, "html": web.read_html}


def records_from_file(stream: BinaryIO, spec: InputConfig, path: str, relpath: str,
                      max_chars: int, counters: dict[str, int] | None = None,
                      input_index: int = 0, fail_fast: bool = False, *, max_bytes: int = 0,
                      max_depth: int = MAX_DEPTH, names: Callable[[str], str] | None = None,
                      watch: FileWatch | None = None) -> Iterator[Document | Rejected]:
    """Every record of one (already decompressed) file, as Documents and Rejected records; nothing it reads
    can make it raise (``_guarded``). ``counters``, if given, receives the edits the reader made
    (``lone_surrogates_repaired``: records repaired). ``max_bytes`` bounds a line (``record_limit``),
    ``max_depth`` a record's nesting. Documents carry ``origin`` (``input_index``, ``relpath``, position); their
    ids are unique within the file's source only once ``ReadDocuments`` has namespaced colliding ones.
    ``names`` maps the source name and ``relpath`` to what the build writes (the PII stage's ``NameScrubber``;
    ``relpath`` is mapped already when given). ``watch``: the file as opened (``FileWatch``), so that a read
    that fails because another process changed the file is rejected as ``file_changed``."""
    fmt = spec.format if spec.format != "auto" else detect_format(path)
    source = source_name(spec, relpath or display_path(path))
    ctx = _Context(spec, path, relpath, names(source) if names else source, max_chars,
                   {} if counters is None else counters, input_index, fail_fast, max_bytes, max_depth, watch=watch,
                   names=names)
    yield from _guarded(_READERS[fmt](stream, ctx), ctx)


def read_file(path: str, spec: InputConfig, relpath: str | None = None, max_chars: int = 10_000_000,
              **options: Any) -> Iterator[Document | Rejected]:
    """Every record of the file ``path`` (opened with ``open_input``: regular files only, then decompressed
    by extension), as ``records_from_file`` gives them; a file that cannot be opened is one rejected record.
    Plain Python, for commands that read data without Beam."""
    relpath = display_path(posixpath.basename(path)) if relpath is None else relpath
    try:
        raw = open_input(path)
    except Exception as exc:  # noqa: BLE001 - RecordError(not_a_regular_file), OSError: one record for the file
        stop_on_environment(exc, path)  # EMFILE, EACCES, EIO: the build stops with its one line
        reason, detail = classify(exc)
        names = options.get("names")
        source = source_name(spec, relpath)
        yield Rejected(names(source) if names else source, relpath, -1, reason, detail)
        return
    with raw, open_decompressed(raw, path) as stream:
        yield from records_from_file(stream, spec, path, relpath, max_chars, watch=FileWatch(raw), **options)


_LISTING: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("input_listing", default=None)


@contextlib.contextmanager
def one_listing() -> Iterator[None]:
    """Within it, ``listed_inputs`` of the same inputs gives the first listing again: a build lists its inputs
    once, so a file deleted, added, or turned into a folder while it runs changes neither what it reads nor what
    it reports (the reader rejects a file that changed by its name: ``open_input``)."""
    token = _LISTING.set({})
    try:
        yield
    finally:
        _LISTING.reset(token)


def listed_inputs(inputs: list[InputConfig]) -> list[tuple[InputConfig, str, list[InputFile]]]:
    """``(input, root, files)`` per input (``corpusforge.core.input_files.list_input``: a path that exists is
    read literally, a directory means every entry below it); fails before any work starts if an input names
    nothing, or a regular file's format cannot be told from its name. Within ``one_listing``, listed once."""
    cache = _LISTING.get()
    key = repr(inputs)
    if cache is not None and key in cache:
        return cache[key]
    listed = _list_inputs(inputs)
    if cache is not None:
        cache[key] = listed
    return listed


def _list_inputs(inputs: list[InputConfig]) -> list[tuple[InputConfig, str, list[InputFile]]]:
    if not inputs:
        raise UserError("no inputs configured: add `inputs: [{path: data/*.jsonl.gz}]` to the config "
                        "or pass --input PATH")
    listed = []
    for spec in inputs:
        if _is_run_directory(spec.path):
            # Read whole, a run directory mixes the kept documents with the removed ones, rejected records, the
            # dataset card and the stats: name the part meant.
            raise UserError(f"input {display_path(spec.path)} is a corpusforge run directory; read its documents "
                            f"with --input {display_path(spec.path.rstrip('/'))}/clean (or .../removed for what the "
                            "build removed)")
        try:
            root, files = list_input(spec.path)
        except Exception as exc:
            raise UserError(f"cannot list input {display_path(spec.path)}: {exc}") from None
        if not files:
            where = ""
            if files_mod.is_local(spec.path) and not os.path.isabs(os.path.expanduser(spec.path)):
                where = f" (a relative path is read from the current directory, {os.getcwd()}, not the config file's)"
            raise UserError(f"input {display_path(spec.path)} matches no files; check the path or glob{where}")
        listed.append((spec, root, files))
    own = _check_own_outputs(listed)  # before the formats: a run's stats.json is refused for what it is
    for spec, _, files in listed:
        if spec.format == "auto":
            for file in files:
                if file.problem is None:  # other entries are rejected by name when read
                    detect_format(file.path)
    if own:
        _check_not_empty(own)
    return listed


# Where an input reaches corpusforge's own outputs (docs/inputs.md, "corpusforge's own outputs as input"): the
# documents a run kept or removed are read back as they were (is_shard_row); every other entry the marker of a run
# (or of a folder a command records its outputs in, as tokenize.output) records is refused before any work, in one
# line naming what it holds and what to pass. Told by the marker above the file (rundir.run_above) and what it
# records, not by the names alone: a user's folder named rejected/ with no marker above, or train/ in a build's run,
# is read.
DOCUMENT_OUTPUTS = rundir.DOCUMENT_OUTPUTS
_BOOKKEEPING = rundir.BOOKKEEPING
_UNREADABLE = rundir.UNREADABLE_MARKER
_EMPTY_SHARD_BYTES = 1 << 20  # a shard this small or smaller may hold no row: its rows are counted


def _check_own_outputs(listed: list[tuple[InputConfig, str, list[InputFile]]]
                       ) -> list[tuple[InputConfig, str, str, InputFile]]:
    """Refuse an input that reaches an entry of a corpusforge run other than its documents (``rundir.not_documents``),
    before any work, in one line; return ``(input, run, output, file)`` for every file in a run's clean/ or
    removed/ when every file of every input is one (``_check_not_empty``'s to check), else []."""
    cache: dict[str, str | None] = {}
    markers: dict[str, dict] = {}
    documents: list[tuple[InputConfig, str, str, InputFile]] = []
    every_one_own = True
    for spec, _, files in listed:
        refused: list[tuple[str, list[str], str]] = []
        own_files: set[str] = set()
        for file in files:
            run = rundir.run_above(file.path, cache)
            if run is None:
                every_one_own = False
                continue
            parts = rundir.relative_parts(file.path, run) or [""]
            why = rundir.not_documents(run, parts[0], markers)
            if why is not None and parts[0] in _BOOKKEEPING and not markers[run].get(_UNREADABLE) \
                    and not rundir.is_build_marker(markers[run]):
                own_files.add(file.path)  # a folder of the user's where a command wrote a file: its marker is ours
            elif why is not None:
                refused.append((run, parts, why))
            elif parts[0] in DOCUMENT_OUTPUTS:
                documents.append((spec, run, parts[0], file))
            else:
                every_one_own = False
        if refused:
            raise UserError(_refusal(spec, refused, markers))
        if own_files:  # corpusforge's own bookkeeping is no input: not read, not counted
            files[:] = [file for file in files if file.path not in own_files]
    return documents if every_one_own else []


def _refusal(spec: InputConfig, refused: list[tuple[str, list[str], str]], markers: dict[str, dict]) -> str:
    # rejected/ named first: its records are what a build would most readily take for documents; hidden last
    run, parts, why = min(refused, key=lambda item: (item[1][0] != "rejected", item[1][0][:1] == ".", item[1]))
    tops = sorted({p[0] + ("/" if len(p) > 1 else "") for r, p, _ in refused if r == run} - {parts[0] + "/", parts[0]})
    also = f"; also {', '.join(tops[:4])}{', ...' if len(tops) > 4 else ''}" if tops else ""
    shown = _run_shown(run, spec)
    if "clean" in markers.get(run, {}).get("outputs", {}):
        advice = f"read its documents with --input {shown}/clean (and {shown}/removed for what its build removed)"
    else:
        advice = "read documents from a run's clean/ folder, or from the files they came from"
    return (f"input {display_path(spec.path)} reaches files of the corpusforge run {shown} that are not its documents "
            f"({'/'.join([shown, *(display_path(p) for p in parts)])} {why}{also}); {advice}")


def _run_shown(run: str, spec: InputConfig) -> str:
    """The run directory as a line shows it: relative to the current directory when the input was named so."""
    if files_mod.is_local(run) and not os.path.isabs(os.path.expanduser(spec.path)):
        relative = os.path.relpath(run)
        if not relative.startswith(".."):
            run = relative
    return display_path(run.rstrip("/"))


def _check_not_empty(documents: list[tuple[InputConfig, str, str, InputFile]]) -> None:
    """Refuse, before any work, inputs that are all corpusforge outputs holding no documents (the clean/ of a build
    that kept nothing): say so, and what to read instead, rather than that the files are empty or blank. Only
    shards of at most ``_EMPTY_SHARD_BYTES`` are opened (their rows counted from metadata), up to the first with a
    row."""
    for _, _, _, file in documents:
        if file.size > _EMPTY_SHARD_BYTES:
            return
        try:
            if open_shard(file.path).num_rows:
                return
        except Exception:  # noqa: BLE001 - a damaged shard: the reader rejects it by its reason
            return
    spec, run, output, _ = documents[0]
    shown = _run_shown(run, spec)
    named = display_path(spec.path)
    if output == "removed":
        raise UserError(f"input {named} is a corpusforge output that holds no documents: the build that wrote it "
                        f"removed none; read the documents it kept with --input {shown}/clean")
    counts, removed = "", files_mod.exists(files_mod.join(run, "removed"))  # not with output.write_removed false
    try:
        a = files_mod.read_json(files_mod.join(run, "stats.json"))["accounting"]
        counts = (f" of its {a['input']:,} input records (removed {a['removed']:,}, rejected {a['rejected']:,}: "
                  f"{shown}/stats.json says why)")
        removed = removed and bool(a["removed"])
    except Exception:  # noqa: BLE001 - no stats (a run from elsewhere): said without its counts
        pass
    again = (f"to decide again on what it removed, build from --input {shown}/removed with looser settings, else "
             if removed else "build ")  # no removed/ written (output.write_removed: false), or it holds none
    raise UserError(f"input {named} is a corpusforge output that holds no documents: the build that wrote it kept "
                    f"none{counts}; {again}from the files it read ({shown}/manifest.json's input_files)")


def _is_run_directory(path: str) -> bool:
    """Whether ``path`` is a build's run directory (its marker, ``rundir.MARKER``, records a build). A folder whose
    marker records only a file a command wrote there (``predict --out data/preds.jsonl``) is the user's folder; a
    ``tokenize.output`` folder's files are refused one by one (``_check_own_outputs``)."""
    try:
        if not files_mod.exists(files_mod.join(path, MARKER)):
            return False
        return rundir.is_build_marker(rundir.read_marker(path) or {})
    except Exception:  # noqa: BLE001 - a glob, an unreachable filesystem, a damaged marker: the listing says more
        return False


def check_inputs(inputs: list[InputConfig]) -> list[tuple[InputConfig, list[str]]]:
    """Fail before any work starts if an input matches nothing, or if a local input file cannot be read by this
    user (permission denied: an environment error, which stops a build when a worker meets it, hours in, once
    per file; said here in seconds, naming every such file); return the matched files per input."""
    listed = [(spec, [f.path for f in files]) for spec, _, files in listed_inputs(inputs)]
    denied = [path for _, paths in listed for path in paths if permission_denied(path)]
    if denied:
        shown = ", ".join(display_path(path) for path in denied[:3]) + (f" and {len(denied) - 3:,} more" if len(denied) > 3 else "")
        raise UserError(f"cannot read {len(denied):,} input file{'s' if len(denied) > 1 else ''} (permission denied): "
                        f"{shown}; make {'them' if len(denied) > 1 else 'it'} readable (chmod) or leave "
                        f"{'them' if len(denied) > 1 else 'it'} out of --input / inputs[].path")
    return listed


def input_files(inputs: list[InputConfig], names: Callable[[str], str] | None = None) -> list[dict[str, Any]]:
    """What the build's manifest says it read: every file each input named, ``{"input", "path", "bytes"}``
    (``path`` as ``display_path`` renders it, then as ``names`` writes it: the PII stage's ``NameScrubber``),
    plus ``"not_read"`` for an entry that was not a regular file when the build listed it (rejected by name as
    ``not_a_regular_file``): a file read whole and then replaced is not reported as unread."""
    names = names or (lambda name: name)
    out = []
    for index, (_, _, files) in enumerate(listed_inputs(inputs)):
        for file in files:
            entry: dict[str, Any] = {"input": index, "path": names(display_path(file.path)), "bytes": file.size}
            if file.problem is not None:
                entry["not_read"] = file.problem
            out.append(entry)
    return out


def input_bytes(inputs: list[InputConfig]) -> int:
    """Bytes of all input files as stored (compressed files count compressed), for a progress total."""
    return sum(f.size for _, _, files in listed_inputs(inputs) for f in files)


# How much text a compressed input holds per byte stored, for deciding what a build may hold in memory: web text
# and JSON Lines compress 3-6x with gzip or zstd (bench/build.py's corpus: 270 MB of text in 61 MB of .jsonl.zst,
# 4.4x), Parquet's pages about as much. What a build holds without disk shuffles grows with the text, not the file.
COMPRESSED_TEXT_RATIO = 5


def input_text_bytes(inputs: list[InputConfig]) -> int:
    """The input's size as text, bounded from its files' sizes without reading them: compressed files (by
    extension, and Parquet) count ``COMPRESSED_TEXT_RATIO`` times their size."""
    compressed = (*COMPRESSIONS, ".parquet")
    return sum(f.size * (COMPRESSED_TEXT_RATIO if f.path.lower().endswith(compressed) else 1)
               for _, _, files in listed_inputs(inputs) for f in files)


class _CountingStream(io.RawIOBase):
    """A raw input stream that reports the bytes read through it (compressed bytes, before decompression),
    at most the file's size: Parquet and Arrow readers seek and may read a footer twice."""

    def __init__(self, raw: BinaryIO, reporter: Reporter):
        self._raw, self._reporter, self._counted = raw, reporter, 0
        self._size = None
        if raw.seekable():
            self._size = raw.seek(0, io.SEEK_END)
            raw.seek(0)

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        n = self._raw.readinto(target)
        if n:
            new = n if self._size is None else min(n, self._size - self._counted)
            if new > 0:
                self._counted += new
                self._reporter.add(bytes_read=new)
        return n

    def seekable(self) -> bool:
        return self._raw.seekable()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def close(self) -> None:
        self._raw.close()
        super().close()


class _ReadFile(beam.DoFn):
    """A file's path (as ``path_bytes``, since a file name need not be UTF-8) -> its documents and rejected
    records; a file that is not a regular one, or does not open, is one rejected record."""

    def __init__(self, spec: InputConfig, root: str, max_chars: int, progress: str | None = None,
                 input_index: int = 0, fail_fast: bool = False, max_bytes: int = 0, max_depth: int = MAX_DEPTH,
                 names: Callable[[str], str] | None = None):
        self.spec, self.root, self.max_chars, self.progress = spec, root, max_chars, progress
        self.input_index, self.fail_fast, self.names = input_index, fail_fast, names
        self.max_bytes, self.max_depth = max_bytes, max_depth

    def setup(self):
        self.reporter = Reporter(self.progress)

    def finish_bundle(self):
        self.reporter.flush()

    def teardown(self):
        self.reporter.flush()

    def process(self, encoded: bytes):
        path = path_text(encoded)
        relpath = display_path(path[len(self.root):].lstrip("/") if path.startswith(self.root) else path)
        if self.names:  # a file name holding PII is never written in clear (docs/pii.md)
            relpath = self.names(relpath)
        try:
            raw = open_input(path)
        except Exception as exc:  # noqa: BLE001 - not a regular file, or it does not open: one record, by name
            stop_on_environment(exc, path)  # EMFILE, EACCES, EIO: the build stops with its one line
            source = source_name(self.spec, relpath)  # inputs[].name, or the file's stem
            rejected = Rejected(self.names(source) if self.names else source, relpath, -1, *classify(exc))
            yield beam.pvalue.TaggedOutput(REJECTED, rejected)
            return
        watch = FileWatch(raw)
        if self.progress is not None:
            raw = _CountingStream(raw, self.reporter)
        counters: dict[str, int] = {}
        with raw, open_decompressed(raw, path) as stream:
            for item in records_from_file(stream, self.spec, path, relpath, self.max_chars, counters,
                                          self.input_index, self.fail_fast, max_bytes=self.max_bytes,
                                          max_depth=self.max_depth, names=self.names, watch=watch):
                self.reporter.add(records_read=1)
                if isinstance(item, Rejected):
                    yield beam.pvalue.TaggedOutput(REJECTED, item)
                else:
                    yield item
        for counter, amount in sorted(counters.items()):
            yield beam.pvalue.TaggedOutput(EDITS, ("read", counter, amount))


def namespaced_ids(group: tuple[str, Any]) -> Iterator[tuple[tuple, str]]:
    """``(id, [origins])`` -> ``(origin, new id)`` for every document of an id that several documents share.

    Ids are unique corpus-wide so that nothing keyed by id (dedup verdicts, shard order) can confuse two
    records. Where documents of one source share an id (two files, or one file, reusing ids), every one of
    them is namespaced by its file, deterministically and whatever the order of reading:
    ``web/7@part-1.jsonl``; if one file holds the id more than once, also by position: ``web/7@a.jsonl#3``;
    if two inputs of the source hold a file of the same relative path, also by input: ``...#3@input1`` (the
    input's place in the config). A document whose id is its own keeps it. The grouped values are iterated
    twice and only a count per file is kept, so memory grows with the files sharing an id, not the records.
    A new id can still equal another one (``id_claims`` and ``settled_ids`` settle that).
    """
    doc_id, origins = group
    per_file: dict[str, list] = {}  # relpath -> [documents, inputs]
    total = 0
    for index, relpath, _ in origins:
        entry = per_file.setdefault(relpath, [0, set()])
        entry[0] += 1
        entry[1].add(index)
        total += 1
    if total < 2:
        return
    for origin in origins:
        index, relpath, position = origin
        count, inputs = per_file[relpath]
        if count == 1:
            yield origin, f"{doc_id}@{relpath}"
        elif len(inputs) == 1:
            yield origin, f"{doc_id}@{relpath}#{position}"
        else:
            yield origin, f"{doc_id}@{relpath}#{position}@input{index}"


# The file name and position a new id is made of are free text, so a new id can equal another document's id:
# id ``x`` in a file named ``a#1`` and twice in file ``a`` both make ``x@a#1``; a document whose own id is
# ``x@a.jsonl`` meets the new id of ``x`` in file ``a.jsonl``. Every new id holds an "@", so only new ids and
# the kept ids that hold one can meet: those (few) claims are grouped by the id they claim, and where several
# meet, a kept id stays and each new one takes a suffix made of its record's origin, which no two records share.
_RENAMED, _KEPT = True, False


def id_claims(group: tuple[str, Any]) -> Iterator[tuple[str, tuple[tuple, bool]]]:
    """``(id, [origins])`` -> ``(claimed id, (origin, renamed))``: the new id of every document of a shared id
    (``namespaced_ids``), and the id of a document that keeps its own when that id holds an "@" (the only
    kept ids a new one can equal)."""
    doc_id, origins = group
    renamed = False
    for origin, new_id in namespaced_ids(group):
        renamed = True
        yield new_id, (origin, _RENAMED)
    if not renamed and "@" in doc_id:
        for origin in origins:
            yield doc_id, (origin, _KEPT)


def origin_suffix(origin: tuple) -> str:
    """A short tag of a record's origin ``(input, relative path, position)``, which no two records share: 16
    hex digits of its BLAKE2b hash (any text, lone surrogates included)."""
    return hashlib.blake2b(repr(origin).encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def settled_ids(group: tuple[str, Any]) -> Iterator[tuple[tuple, tuple[tuple, str]]]:
    """``(claimed id, [(origin, renamed, batch key)])`` -> ``(batch key, (origin, new id))`` for every renamed
    document: the claimed id when no other document claims it; else (a kept id stays as it is) ``<claimed
    id>~<origin_suffix>``. The batch key is that of the batch the document crosses ``SpreadDocuments`` in."""
    claimed, claims = group
    claims = list(claims)
    clash = len(claims) > 1
    for origin, renamed, batch in claims:
        if renamed:
            yield batch, (origin, f"{claimed}~{origin_suffix(origin)}" if clash else claimed)


# Ids travel to the claims light pass in packed lists, not one Beam element per document: every (id, origin) pair
# goes to one of a build's id buckets by a hash of its id (all documents of an id meet in one bucket, whatever
# worker read them), each bundle emitting one list per bucket it fills (or per ID_FLUSH pairs). One bucket's
# group is what the claims pass holds at once (and, with shuffles on disk, what one partition reads back), so
# the bucket count grows with the input (``id_buckets_for``): one bucket per INPUT_BYTES_PER_ID_BUCKET of input
# files as stored (~5k web-like documents, as ``disk_grouping``'s partitions), at least ID_BUCKETS: a group's
# size stays about constant as the corpus grows, and a small build still packs its pairs into few lists.
ID_BUCKETS = 64
MAX_ID_BUCKETS = 65536
INPUT_BYTES_PER_ID_BUCKET = 4_000_000
ID_FLUSH = 1 << 16
IDS = "ids"  # tagged output of _SpreadKeys: (bucket, [(id, origin, batch key)...])
# The documents cross their one shuffle (SpreadDocuments) in batches, not one Beam element each (plain Beam:
# ~29 us per grouped (id, 2.4 KB text) pair against ~1 us per element of a fused step): consecutive documents of a
# bundle, at most SPREAD_BATCH of them and, once it holds one, no more than SPREAD_BATCH_BYTES of text and
# metadata (a string counted as its bytes when ASCII, 4 a character otherwise: at least its UTF-8 and its size in
# memory; metadata, a record's other fields kept whole, can be as large as its text), so that a batch's memory
# is bounded whatever the records. A spilled document still holds its text here (``with_ref``
# keeps it until the document is coded), so it counts as much, though the batch is coded with its reference
# only. A batch is sent as soon as it fills: a bundle of one file of millions of lines holds one batch.
SPREAD_BATCH = 256
SPREAD_BATCH_BYTES = 8_000_000


def id_buckets_for(input_bytes: int) -> int:
    """How many id buckets a read of ``input_bytes`` of input files uses: one per ``INPUT_BYTES_PER_ID_BUCKET``,
    between ``ID_BUCKETS`` and ``MAX_ID_BUCKETS``."""
    return max(ID_BUCKETS, min(MAX_ID_BUCKETS, -(-input_bytes // INPUT_BYTES_PER_ID_BUCKET)))


def id_bucket(doc_id: str, buckets: int) -> int:
    """The bucket (of ``buckets``) of ``doc_id``'s ``(id, origin)`` pairs: the same in every process (not
    Python's ``hash``)."""
    return zlib.crc32(doc_id.encode("utf-8", "surrogatepass")) % buckets


def batch_key(origin: tuple) -> int:
    """The key a batch crosses ``SpreadDocuments`` under, from its first document's origin: 64 bits of its
    BLAKE2b hash, which every (id, origin) triple carries (9 bytes coded, where the origin took ~50). Two
    batches whose keys collide meet in one group, where each rename still finds its document by origin."""
    return int.from_bytes(hashlib.blake2b(repr(origin).encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "big")


class _SpreadKeys(beam.DoFn):
    """Documents -> ``(batch key, Documents)`` batches for the shuffle that spreads them (``SPREAD_BATCH``
    documents or ``SPREAD_BATCH_BYTES`` of text at most; the key is the first document's origin, which no other
    document has), and, tagged ``IDS``, the documents' ``(id, origin, batch key)`` triples packed in one
    ``(bucket, [triples])`` list per bucket per bundle (of ``buckets``)."""

    def __init__(self, buckets: int):
        self.id_buckets = buckets

    def start_bundle(self):
        self.buckets: dict[int, list] = {}
        self.pending = 0
        self.batch, self.batch_key, self.batch_bytes = Documents(), None, 0

    def process(self, doc):
        origin, doc_id = doc.origin, doc.id
        size = held_bytes(doc)
        if self.batch and self.batch_bytes + size > SPREAD_BATCH_BYTES:  # a big text goes out alone or first
            yield self._take_batch()
        if not self.batch:
            self.batch_key = batch_key(origin)
        self.batch.append(doc)
        self.batch_bytes += size
        pairs = self.buckets.get(bucket := id_bucket(doc_id, self.id_buckets))
        if pairs is None:
            pairs = self.buckets[bucket] = []
        pairs.append((doc_id, origin, self.batch_key))
        self.pending += 1
        if self.pending >= ID_FLUSH:  # a bundle of one big file: its pairs never all wait in memory
            for item in self._drain():
                yield beam.pvalue.TaggedOutput(IDS, item)
        if len(self.batch) >= SPREAD_BATCH or self.batch_bytes >= SPREAD_BATCH_BYTES:
            yield self._take_batch()

    def _take_batch(self):
        item = (self.batch_key, self.batch)
        self.batch, self.batch_key, self.batch_bytes = Documents(), None, 0
        return item

    def _drain(self):
        buckets, self.buckets, self.pending = self.buckets, {}, 0
        return sorted(buckets.items())

    def finish_bundle(self):
        if self.batch:
            yield GlobalWindows.windowed_value(self._take_batch())
        for item in self._drain():
            yield beam.pvalue.TaggedOutput(IDS, GlobalWindows.windowed_value(item))


def bucket_claims(group: tuple[int, Any]) -> Iterator[tuple[str, tuple[tuple, bool, tuple]]]:
    """``(bucket, [[(id, origin, batch key)...]...])`` -> ``(claimed id, (origin, renamed, batch key))``: the
    ``id_claims`` of every id of the bucket that several documents hold or that holds an "@" (the others claim
    nothing: a lone id without "@" keeps its own, unmet), with the batch key of each claiming document."""
    _, lists = group
    held_by_id: dict[str, list] = {}
    for triples in lists:
        for doc_id, origin, batch in triples:
            held = held_by_id.get(doc_id)
            if held is None:
                held_by_id[doc_id] = [(origin, batch)]
            else:
                held.append((origin, batch))
    for doc_id, held in held_by_id.items():
        if len(held) > 1 or "@" in doc_id:
            batches = dict(held)  # origin -> batch key: no two documents share an origin
            for claimed, (origin, renamed) in id_claims((doc_id, [origin for origin, _ in held])):
                yield claimed, (origin, renamed, batches[origin])


def _renamed(batch, new_ids: dict) -> Iterator[Document]:
    """A batch's documents with their unique ids (``new_ids``: origin -> new id, the batch's renames), origin
    dropped."""
    for doc in batch:
        new_id = new_ids.get(doc.origin) if new_ids else None
        yield doc._evolve(origin=None) if new_id is None else doc._evolve(id=new_id, origin=None)


class _ApplyIds(beam.DoFn):
    """``(batch key, {"doc": [Documents], "id": [(origin, new id)]})`` -> the batch's documents, one by one,
    each with its unique id, origin dropped."""

    def process(self, item):
        _, grouped = item
        new_ids = dict(grouped["id"])
        for batch in grouped["doc"]:
            yield from _renamed(batch, new_ids)


class _ApplyMixedIds(beam.DoFn):
    """``(batch key, [Documents or (origin, new id)])`` (a batch and its renames in one ``GroupByKey``: a rename
    is the only ``tuple``) -> the batch's documents with their unique ids, origin dropped, as ``_ApplyIds``."""

    def process(self, item):
        _, values = item
        batches, new_ids = [], {}
        for value in values:
            if type(value) is tuple:
                new_ids[value[0]] = value[1]
            else:
                batches.append(value)
        for batch in batches:
            yield from _renamed(batch, new_ids)


class ReadDocuments(beam.PTransform):
    """Read the configured inputs into ``(documents, rejected)`` PCollections.

    After it is applied, ``edits`` is a PCollection of ``("read", counter, amount)``: the repairs the reader
    made (see ``_Context.repair_unicode``), for stats.json.

    Files are listed at construction (so a missing input fails before work starts) and read one per
    element, then reshuffled so later stages spread over all workers even when there are few files.
    """

    def __init__(self, inputs: list[InputConfig], max_doc_chars: int, spill_dir: str | None = None,
                 progress: str | None = None, fail_fast: bool = False, max_record_bytes: int = 0,
                 max_metadata_depth: int = MAX_DEPTH, names: Callable[[str], str] | None = None):
        super().__init__()
        self.fail_fast = fail_fast
        self.names = names  # source names and paths as written (the PII stage's NameScrubber), or None
        self.listed = listed_inputs(inputs)
        # the (id, origin) pairs' buckets, sized from the input so that one bucket's group stays small
        self.id_buckets = id_buckets_for(sum(f.size for _, _, files in self.listed for f in files))
        self.max_doc_chars = max_doc_chars
        self.max_record_bytes, self.max_metadata_depth = max_record_bytes, max_metadata_depth
        self.progress = progress  # a local directory for pipeline.progress, or None
        self.spill_dir = spill_dir  # spill texts before the shuffle that spreads them (corpusforge.pipeline.spill)
        self.edits = None  # set by expand

    def expand(self, pbegin):
        documents, rejected, edits = [], [], []
        for index, (spec, root, files) in enumerate(self.listed):
            outputs = (
                pbegin
                | f"ListInput{index}" >> beam.Create([path_bytes(f.path) for f in files])
                | f"ReshuffleFiles{index}" >> Reshuffle()
                | f"ReadInput{index}" >> beam.ParDo(_ReadFile(spec, root, self.max_doc_chars, self.progress, index,
                                                                self.fail_fast, self.max_record_bytes,
                                                                self.max_metadata_depth, self.names))
                .with_outputs(REJECTED, EDITS, main="documents")
            )
            docs = outputs.documents
            if self.spill_dir:  # before the Flatten: on disk (several inputs), its runs would hold each text too
                from corpusforge.pipeline.spill import SpillText

                docs = docs | f"SpillDocuments{index}" >> SpillText(self.spill_dir)
            documents.append(docs)
            rejected.append(outputs[REJECTED])
            edits.append(outputs[EDITS])
        docs = documents | "FlattenDocuments" >> Flatten()
        # Unique ids (namespaced_ids): one step packs the documents into batches for the shuffle that spreads
        # them over workers and their (id, origin, batch key) triples by id bucket (``_SpreadKeys``); a light pass over
        # the buckets claims the new ids of the shared ids and the kept ids holding an "@" (``bucket_claims``),
        # a second one, over those claims only, settles the new ids that meet another id (``settled_ids``). The
        # documents cross in batches (``SPREAD_BATCH``), each keyed by its first document's origin, and meet the
        # renames of their documents by that key: a batch, not a document, is one shuffled element, and, keyed by
        # an origin, not an id, no id shared by many documents makes a hot key. Right after, they go on one by one.
        keyed = docs | "SpreadKeys" >> beam.ParDo(_SpreadKeys(self.id_buckets)).with_outputs(IDS, main="docs")
        renames = (keyed[IDS]
                   | "GroupIds" >> GroupByKey()
                   | "NamespaceSharedIds" >> beam.FlatMap(bucket_claims)
                   | "GroupClaimedIds" >> GroupByKey()
                   | "SettleIds" >> beam.FlatMap(settled_ids))
        edits.append(renames | "CountIdCollisions" >> beam.Map(lambda _: ("read", "id_collisions", 1)))
        if spill_directory() is None:  # Beam's shuffle: batches and renames in one GroupByKey, untagged
            docs = ((keyed.docs, renames)
                    | "SpreadFlatten" >> Flatten()  # disk_grouping's: Beam's own here (no spill directory)
                    | "SpreadDocuments" >> GroupByKey()
                    | "UniqueIds" >> beam.ParDo(_ApplyMixedIds()).with_output_types(Any))
        else:  # on disk: each input writes its runs in the step that made it (disk_grouping)
            docs = ({"doc": keyed.docs, "id": renames}
                    | "SpreadDocuments" >> CoGroupByKey()
                    | "UniqueIds" >> beam.ParDo(_ApplyIds()).with_output_types(Any))
        self.edits = edits | "FlattenEdits" >> Flatten()
        return docs, rejected | "FlattenRejected" >> Flatten()

