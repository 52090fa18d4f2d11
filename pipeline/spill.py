"""Keep document text on local disk while Beam shuffles only references to it.

Beam's local runners (the in-process and multi-process DirectRunner, PortableRunner with LOOPBACK, Dask on
a LocalCluster) hold every PCollection that crosses a shuffle in memory. A build shuffles its documents
several times (spreading the input over workers, joining dedup verdicts by id, grouping shards), so without
help their peak memory grows with the text of the corpus.

``SpillText`` appends each document's text to a spill file in the run's work directory and gives the
document a ``text_ref`` (path, offset, length). A ``Document`` with a ``text_ref`` leaves its text out when it
is pickled (``Document.__getstate__``), so what crosses a shuffle is the id, source, metadata, annotations
and the reference: about 150 bytes plus the annotations per document, whatever its length. Reading
``doc.text`` on the other side loads the text back from the spill file (``read_text``); a stage that
changes the text makes a document without a reference, which the next ``SpillText`` writes out again.
Reading is not cached, so where several steps of one fused stage read a text (the build's facts, then the
next stage), ``LoadText`` reads it back once first: ~10 us a read, ~11 reads per document in a normalize +
dedup build before, ~6 after.

In a build whose shuffles wait on local disk too (``corpusforge.core.disk_grouping``: a build over
``output.disk_shuffle_mb``, the builds whose scratch disk matters), each text is written as its own zstd frame
(level 1, with its checksum; ``zstandard``, a core dependency), so a reference still reads one text: ~1.86x
smaller for ~2 KB web-like texts, ~11 us to write one and ~5 us to read one back, ~45 us a document in a
normalize + dedup build (~1.9 writes and ~4.9 reads of each text); with the runs', 6-9 % of its CPU (measured:
docs/scale.md), which a smaller build does not pay. One frame per text, not blocks of texts: a block
compresses better (~3x) but every read would decompress the whole block, and reads come in shuffle order,
not write order. A text zstd does not shrink (short ones: a frame costs ~13 bytes) is written as it is, its
reference three fields instead of four (``TextRef``). Every record is checked when it is read back, a stored one
by the CRC-32 written after it (~1 us more per 2 KB text each way), a frame by its checksum
(``corpusforge.core.scratch_frames``, which near and line dedup's ``.near`` and ``.sentences`` records go through
too): a spill file gone, truncated or changed stops the build with one line saying to run it again
(``ScratchError``), never other text. ``python bench/scratch_codecs.py`` measures the codecs: pyarrow's zstd
is the same format at 2-4x the CPU through its Python API; lz4 costs half as much and saves less than half as
much (1.25x).

Writes are unbuffered (``os.write``), so a text is readable the moment its reference exists, even by a
later step of the same fused stage. Spill files live in the build's temporary work directory and go with
it; they hold text from before the PII stage, so they are created owner-only (files 0600, directories
0700). Remote runners (Dataflow, Spark, Flink) shuffle through their own disk-backed services, so the build
turns spilling off there (``output.spill_text: auto``).
"""
from __future__ import annotations

import collections
import os
import threading
import uuid

import apache_beam as beam

from corpusforge.core import scratch_frames
from corpusforge.core.disk_grouping import spill_directory
from corpusforge.core.files import make_private_dir

# A new spill file every 256 MB keeps files a manageable size and lets one worker's files be told apart.
ROTATE_BYTES = 256 * 1024 * 1024
_OPEN_READERS = 64

# (path, offset, length in bytes) of bytes as they are, or (path, offset, the text's length in bytes, stored
# length) of a zstd frame: the third field is the text's UTF-8 length either way (shards are sized by it).
# corpusforge.core.scratch_frames writes and checks the records they point at.
TextRef = scratch_frames.ScratchRef
TEXT_ZSTD_LEVEL = 1  # level 3 saves <1 % more of a ~2 KB text for ~20 % more CPU
_WHAT = "spill file"  # what its errors call a spill file

class _Reader:
    """A cached spill file descriptor and the reads using it now: one evicted while a read uses it (another thread
    opened its 64th file meanwhile) is closed by the last of those reads, not under it (a closed descriptor's number
    is the next file's: the read would have gone to another file)."""

    __slots__ = ("fd", "users", "evicted")

    def __init__(self, fd: int):
        self.fd, self.users, self.evicted = fd, 0, False


_readers: "collections.OrderedDict[str, _Reader]" = collections.OrderedDict()
_readers_lock = threading.Lock()


def _evict(reader: _Reader) -> None:
    """(Under ``_readers_lock``.) Close ``reader``'s descriptor now, or when its last read ends."""
    reader.evicted = True
    if reader.users == 0:
        os.close(reader.fd)


def read_text(ref: TextRef) -> str:
    """The text a ``TextRef`` points at (file descriptors are cached per process, least recently used out)."""
    return read_bytes(ref).decode("utf-8")


def read_bytes(ref: TextRef) -> bytes:
    """The bytes a spill reference points at (a compressed text's decompressed), checked
    (``corpusforge.core.scratch_frames``: a ``ScratchError`` where they do not come back as written)."""
    path = ref[0]
    with _readers_lock:
        reader = _readers.pop(path, None)
        if reader is None:
            reader = _Reader(scratch_frames.open_file(path, _WHAT))
            while len(_readers) >= _OPEN_READERS:
                _evict(_readers.popitem(last=False)[1])
        _readers[path] = reader
        reader.users += 1
    try:
        return scratch_frames.read_record(reader.fd, ref, _WHAT)
    finally:
        with _readers_lock:
            reader.users -= 1
            if reader.evicted and reader.users == 0:
                os.close(reader.fd)


def close_readers() -> None:
    """Close every cached spill file descriptor (the driver calls this when a build ends; one a read still uses
    closes when that read ends)."""
    with _readers_lock:
        while _readers:
            _evict(_readers.popitem()[1])


class SpillWriter:
    """Appends byte strings to spill files of its own in ``directory`` and returns a reference to each.

    For a DoFn: build it in ``setup()``, ``close()`` it in ``finish_bundle()`` and ``teardown()``."""

    def __init__(self, directory: str, suffix: str = ".txt"):
        make_private_dir(directory)
        self.directory, self.suffix = directory, suffix
        self._fd, self._path, self._size = None, None, 0
        self._compress = None

    def write(self, data: bytes) -> TextRef:
        """Appends ``data`` as it is (with its CRC-32: ``corpusforge.core.scratch_frames``)."""
        return self._write((data,), None)[0]

    def write_many(self, payloads) -> list[TextRef]:
        """Appends each of ``payloads`` as a record of its own, in one write: a reference to each."""
        return self._write(payloads, None)

    def write_text(self, data: bytes) -> TextRef:
        """Appends a text's UTF-8 bytes, compressed where that makes them shorter (see the module)."""
        if self._compress is None:
            self._compress = scratch_frames.compressor(TEXT_ZSTD_LEVEL)
        return self._write((data,), self._compress)[0]

    def _write(self, payloads, compress) -> list[TextRef]:
        if self._fd is None or self._size >= ROTATE_BYTES:
            self.close()
            self._path = os.path.join(self.directory, f"{uuid.uuid4().hex}{self.suffix}")
            self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            self._size = 0
        refs, written = scratch_frames.write_records(self._fd, self._path, self._size, payloads, compress)
        self._size += written
        return refs

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class TextSpiller:
    """What ``SpillText`` does to each record, as a callable for a step that does more with the records (the
    build's step after each stage also counts their facts: ``stats.DocumentsAndFacts``). ``setup()`` before
    the first record, ``close()`` when a bundle ends and at teardown. ``compress``: texts as zstd frames (see
    the module); by default where the pipeline constructed with it shuffles on local disk."""

    def __init__(self, directory: str, load: bool = False, compress: bool | None = None):
        self.directory, self.load = directory, load
        self.compress = spill_directory() is not None if compress is None else compress
        self._writer: SpillWriter | None = None

    def setup(self) -> None:
        self._writer = SpillWriter(self.directory)

    def __call__(self, record):
        # a Removed record carries its document (not getattr: a Document's __getattr__ would raise, ~1 us)
        doc = record.__dict__.get("doc", record)
        if doc.text_ref is None:
            data = doc.text.encode("utf-8")
            write = self._writer.write_text if self.compress else self._writer.write
            spilled = doc.with_ref(write(data))  # its text stays in memory
            return record.with_doc(spilled) if record is not doc else spilled
        if self.load and record is doc:
            return doc.loaded()
        return record

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


class _SpillFn(beam.DoFn):
    """Documents (or ``Removed`` records) -> the same records with their text spilled to ``directory``;
    ``load``: and a document spilled before with its text read back into memory (``Document.loaded``)."""

    def __init__(self, directory: str, load: bool = False, compress: bool | None = None):
        self.spiller = TextSpiller(directory, load, compress)

    def setup(self):
        self.spiller.setup()

    def process(self, record):
        return (self.spiller(record),)

    def finish_bundle(self):
        self.spiller.close()

    def teardown(self):
        self.spiller.close()


class SpillText(beam.PTransform):
    """Spill the text of documents (or ``Removed`` records) to ``directory``, a local directory. ``load``: the
    documents also come out with their text in memory, as from ``LoadText`` (one step instead of two: the
    build's facts and the next stage read each text)."""

    def __init__(self, directory: str, load: bool = False):
        super().__init__()
        self.directory, self.load = directory, load

    def expand(self, records):
        return records | "Spill" >> beam.ParDo(_SpillFn(self.directory, self.load))


def load_text(doc):
    """A document with its spilled text read back into memory (``Document.loaded``): ``LoadText`` per record."""
    return doc.loaded()


class LoadText(beam.PTransform):
    """Documents -> the same documents with their spilled text read back into memory once
    (``Document.loaded``), for the steps after it in the same fused stage; it goes again at the next
    stage boundary, where a spilled document is encoded without its text."""

    def expand(self, docs):
        return docs | "Load" >> beam.Map(load_text)
