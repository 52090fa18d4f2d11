"""Spilled text: documents cross shuffles as references, and the build's output does not change."""
import collections
import json
import os
import pathlib
import pickle

import apache_beam as beam
import pytest
import zstandard
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.core.disk_grouping import spilling_to
from corpusforge.core.errors import UserError
from corpusforge.pipeline import spill
from corpusforge.cli.main import main
from tests.pipeline.sample_corpus import sample_corpus
from corpusforge.pipeline.document import Document, Removed
from corpusforge.pipeline.spill import SpillText, _SpillFn


def _spilled(tmp_path, doc, compress=None):
    fn = _SpillFn(str(tmp_path), compress=compress)
    fn.setup()
    out = next(iter(fn.process(doc)))
    fn.finish_bundle()
    return out


def test_a_spilled_document_pickles_without_its_text(tmp_path):
    short = Document(id="a", text="word " * 10, source="s", annotations={"quality_score": 0.5})
    long = Document(id="a", text="wörd " * 100_000, source="s", annotations={"quality_score": 0.5})
    spilled_short, spilled_long = _spilled(tmp_path, short), _spilled(tmp_path, long)
    assert len(pickle.dumps(long)) > 500_000
    # What crosses a shuffle no longer depends on the length of the text.
    assert abs(len(pickle.dumps(spilled_long)) - len(pickle.dumps(spilled_short))) < 8  # the offsets' ints
    assert len(pickle.dumps(spilled_long)) < 400
    back = pickle.loads(pickle.dumps(spilled_long))
    assert "text" not in back.__dict__ and back.text == long.text and back == long


def test_edits_drop_the_reference_and_annotations_keep_it(tmp_path, monkeypatch):
    doc = pickle.loads(pickle.dumps(_spilled(tmp_path, Document(id="a", text="some text", source="s"))))
    reads = []
    original = spill.read_text
    monkeypatch.setattr(spill, "read_text", lambda ref: reads.append(ref) or original(ref))
    annotated = doc.annotate(language="en")
    assert reads == [] and annotated.text_ref == doc.text_ref  # no need to load the text to annotate
    assert annotated.text == "some text" and len(reads) == 1
    edited = doc.with_text("other text")
    assert edited.text_ref is None and pickle.loads(pickle.dumps(edited)).text == "other text"


def test_a_loaded_document_reads_its_text_once_and_still_travels_by_reference(tmp_path, monkeypatch):
    back = pickle.loads(pickle.dumps(_spilled(tmp_path, Document(id="a", text="some text", source="s"))))
    reads = []
    read_text = spill.read_text
    monkeypatch.setattr(spill, "read_text", lambda ref: reads.append(ref) or read_text(ref))
    loaded = back.loaded()
    assert [loaded.text, loaded.text, loaded.text] == ["some text"] * 3 and len(reads) == 1
    assert loaded.text_ref == back.text_ref and loaded == back and loaded.loaded() is loaded
    assert "text" not in back.__dict__  # the record it came from is not changed
    assert "text" not in pickle.loads(pickle.dumps(loaded)).__dict__  # the text stays out of a shuffle
    assert _spilled(tmp_path, loaded) is loaded  # not written again


def test_removed_records_spill_their_document(tmp_path):
    removed = Removed(doc=Document(id="a", text="gone " * 1000, source="s"), stage="quality", reason="too_short")
    spilled = _spilled(tmp_path, removed)
    assert spilled.doc.text_ref is not None and spilled.reason == "too_short"
    assert pickle.loads(pickle.dumps(spilled)).doc.text == removed.doc.text


def test_a_missing_spill_file_is_a_clear_error(tmp_path):
    doc = pickle.loads(pickle.dumps(_spilled(tmp_path, Document(id="a", text="some text", source="s"))))
    spill.close_readers()
    pathlib.Path(doc.text_ref[0]).write_bytes(b"so")
    with pytest.raises(UserError, match="is truncated: .*run the build again"):
        _ = doc.text


def test_a_damaged_spilled_text_is_a_clear_error(tmp_path):
    """A compressed text whose bytes changed on disk is not read back as other text: one line saying what to do."""
    doc = pickle.loads(pickle.dumps(_spilled(tmp_path, Document(id="a", text="a text that compresses " * 20,
                                                                source="s"), compress=True)))
    path, offset, length, stored = doc.text_ref
    assert stored < length  # compressed
    spill.close_readers()
    data = bytearray(pathlib.Path(path).read_bytes())
    data[offset + stored // 2] ^= 0x5A
    pathlib.Path(path).write_bytes(bytes(data))
    with pytest.raises(UserError, match="is damaged at offset .*: run the build again") as raised:
        _ = doc.text
    assert "\n" not in str(raised.value)


def test_a_build_whose_shuffle_file_is_damaged_stops_with_one_line(corpus, monkeypatch, capsys):
    from corpusforge.core import disk_grouping

    setup = disk_grouping._WriteRuns.setup

    def damaging(self):  # every block written damaged, as a failing disk would
        setup(self)
        compress = self.compress
        self.compress = lambda data: (lambda frame: frame[:len(frame) // 2] + bytes([frame[len(frame) // 2] ^ 0x5A])
                                      + frame[len(frame) // 2 + 1:])(compress(data))

    monkeypatch.setattr(disk_grouping._WriteRuns, "setup", damaging)
    root, config = corpus
    capsys.readouterr()
    assert main(["build", "-c", str(config), "--run-dir", str(root / "damaged"), "--set", "pii.enabled=false",
                 "--set", "quality.enabled=false", "--set", "output.disk_shuffle_mb=0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # the progress line, then the error
    errors = [line for line in err if line.startswith("corpusforge: error: ")]
    assert len(errors) == 1 and errors[0] == err[-1] and "Traceback" not in "\n".join(err), err
    assert errors[0].startswith("corpusforge: error: shuffle file ") and "is damaged" in errors[0]
    assert "run the build again" in errors[0]


@pytest.mark.parametrize("shuffles_on_disk", [False, True])
def test_spilled_documents_survive_a_shuffle(tmp_path, shuffles_on_disk):
    docs = [Document(id=f"d{i}", text=f"text number {i} " * (i + 1), source="s") for i in range(50)]
    edited = [d.with_text(d.text.upper()) for d in docs]
    with spilling_to(str(tmp_path / "shuffle") if shuffles_on_disk else None), TestPipeline() as p:
        out = (
            p
            | beam.Create(docs)
            | "First" >> SpillText(str(tmp_path / "spill"))
            | beam.Reshuffle()
            | beam.Map(lambda d: d.with_text(d.text.upper()))
            | "Second" >> SpillText(str(tmp_path / "spill"))
            | beam.Map(lambda d: (d.id, d))
            | beam.GroupByKey()
            | beam.FlatMap(lambda kv: [(d.id, d.text, d.text_ref is not None) for d in kv[1]])
        )
        assert_that(out, equal_to([(d.id, d.text, True) for d in edited]))
    # Two spill passes wrote every text twice (the originals, then the edited copies); in a build whose shuffles
    # wait on disk, each as a zstd frame where that is shorter (these repeat themselves), as it is (with its
    # 4-byte CRC-32) where not.
    written = sum(f.stat().st_size for f in (tmp_path / "spill").iterdir())
    texts = [d.text.encode() for d in docs + edited]
    if not shuffles_on_disk:
        assert written == sum(len(t) + 4 for t in texts)
        return
    frame = zstandard.ZstdCompressor(level=spill.TEXT_ZSTD_LEVEL, write_checksum=True).compress
    stored = [min(len(frame(t)), len(t) + 4) if len(t) >= 64 else len(t) + 4 for t in texts]
    assert written == sum(stored) < sum(map(len, texts)) / 3


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return sample_corpus(tmp_path_factory.mktemp("spill"), documents=150)


def _build_outputs(corpus, name, *flags):
    root, config = corpus
    run = root / name
    assert main(["build", "-c", str(config), "--run-dir", str(run), *flags]) == 0
    files = {p.relative_to(run).as_posix(): p.read_bytes()
             for sub in ("clean", "removed", "rejected") for p in sorted((run / sub).glob("part-*"))}
    stats = json.loads((run / "stats.json").read_text())
    stats.pop("timing")
    stats.pop("metrics", None)  # Beam's counters include the spill step's own element counts
    leftovers = [p for p in run.rglob("*") if p.is_file() and p.suffix == ".txt"]
    return files, stats, leftovers


def test_every_stage_gives_the_same_bytes_with_and_without_spilling(corpus):
    # shuffles on disk (disk_grouping), as a corpus over output.disk_shuffle_mb; then Beam's, as a small one
    spilled, spilled_stats, leftovers = _build_outputs(corpus, "spill", "--set", "output.disk_shuffle_mb=0")
    small, small_stats, _ = _build_outputs(corpus, "spill-small")
    assert small == spilled and small_stats == spilled_stats
    inline, inline_stats, _ = _build_outputs(corpus, "inline", "--set", "output.spill_text=false")
    assert spilled_stats["accounting"]["balanced"] and spilled_stats["accounting"]["removed"] > 0
    assert {"quality", "dedup"} <= set(spilled_stats["removed"]["by_stage"]) and "pii" in spilled_stats["edits"]
    assert spilled.keys() == inline.keys() and spilled == inline
    assert spilled_stats == inline_stats
    assert leftovers == []  # spill files go with the build's work directory


def _inline_texts(record) -> int:
    """How many documents in a record written to a shuffle's runs carry their text inline (no spill reference)."""
    if isinstance(record, Document):
        return int(record.text_ref is None)
    if isinstance(record, Removed):
        return _inline_texts(record.doc)
    if isinstance(record, (list, tuple)):
        return sum(_inline_texts(item) for item in record)
    if isinstance(record, dict):
        return sum(_inline_texts(item) for item in record.values())
    return 0


def test_shuffles_on_disk_carry_no_text_that_is_spilled(corpus, monkeypatch):
    """A text goes to disk once: spilled, or in a run, not both. The reader's documents of several inputs were
    flattened (on disk: into runs) before they were spilled, so the runs held every text the spill files held."""
    from corpusforge.core import disk_grouping

    inline = []
    process = disk_grouping._WriteRuns.process

    def counting(self, element):
        for record in element if self.listed else [element]:  # a listed input's element is a list of records
            inline.append(_inline_texts(None if self.bare else record[1]))
        yield from process(self, element)

    monkeypatch.setattr(disk_grouping._WriteRuns, "process", counting)
    root, config = corpus
    assert len([line for line in config.read_text().splitlines() if "path:" in line]) > 1  # several inputs
    assert main(["build", "-c", str(config), "--run-dir", str(root / "once"), "--set", "output.disk_shuffle_mb=0",
                 "--set", "quality.enabled=false", "--set", "pii.enabled=false"]) == 0
    assert len(inline) > 1000 and sum(inline) == 0


def test_stage_checkpoints_spill_too(corpus):
    spilled, _, leftovers = _build_outputs(corpus, "spill-checkpointed", "--set", "output.stage_checkpoints=true",
                                           "--set", "pii.enabled=false")
    inline, _, _ = _build_outputs(corpus, "inline-checkpointed", "--set", "output.spill_text=false",
                                  "--set", "output.stage_checkpoints=true", "--set", "pii.enabled=false")
    assert spilled == inline and leftovers == []
    assert not os.path.exists(corpus[0] / "spill-checkpointed" / ".checkpoints")


@pytest.mark.parametrize("checkpoints", ["false", "true"])
def test_work_directories_and_spill_files_are_owner_only(corpus, monkeypatch, checkpoints):
    """They hold text from before the PII stage: work, segment and spill directories 0700, spill files 0600
    (what else lies in a segment directory is out of reach behind them)."""
    from corpusforge.pipeline import build

    modes = {}
    finish = build._finish_segment

    def record_modes(segment, seconds, **options):
        work = os.path.dirname(segment.directory)
        modes[os.path.basename(work)] = os.stat(work).st_mode & 0o777
        spill_files = [str(p) for p in pathlib.Path(segment.spill_dir).rglob("*") if p.is_file()]
        for path in [segment.directory, segment.spill_dir, *spill_files]:
            modes[os.path.relpath(path, work)] = os.stat(path).st_mode & 0o777
        return finish(segment, seconds, **options)

    monkeypatch.setattr(build, "_finish_segment", record_modes)
    old = os.umask(0o022)
    try:
        root, config = corpus
        assert main(["build", "-c", str(config), "--run-dir", str(root / f"modes-{checkpoints}"),
                     "--set", f"output.stage_checkpoints={checkpoints}", "--set", "output.disk_shuffle_mb=0"]) == 0
    finally:
        os.umask(old)
    work = [name for name in modes if "/" not in name and name.startswith((".tmp-build-", ".checkpoints"))]
    assert work == [".checkpoints"] if checkpoints == "true" else len(work) == 1
    spill_files = [name for name in modes if name.endswith((".txt", ".near", ".sentences", ".run"))]  # .run: disk_grouping
    spill_dirs = [name for name in modes if name.endswith("/spill")]
    assert spill_files and spill_dirs and any(name.endswith(".run") for name in spill_files)
    assert {modes[n] for n in spill_files} == {0o600}
    assert {mode for name, mode in modes.items() if name not in spill_files} == {0o700}


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete"])
def test_a_spilled_text_that_cannot_be_read_back_stops_a_guarded_stage(tmp_path, damage):
    """Scratch disk that fails is no document's fault: a guarded stage (the dead-letter wrapper) that reads a damaged,
    truncated or missing spilled text stops the build with the one line saying to run it again, instead of setting
    the document aside as a stage_error and going on (its rejected/ record holding that line)."""
    from corpusforge.core.faults import run_isolated
    from corpusforge.pipeline.stage import stage_error

    doc = pickle.loads(pickle.dumps(_spilled(tmp_path, Document(id="a", text="a text that compresses " * 20,
                                                                source="s"), compress=True)))
    path, offset, _, stored = doc.text_ref
    spill.close_readers()
    data = bytearray(pathlib.Path(path).read_bytes())
    if damage == "flip":
        data[offset + stored // 2] ^= 0x5A
        pathlib.Path(path).write_bytes(bytes(data))
    elif damage == "truncate":
        pathlib.Path(path).write_bytes(bytes(data[:offset + stored - 1]))
    else:
        pathlib.Path(path).unlink()
    with pytest.raises(UserError, match=r"^spill file .*run the build again") as raised:
        run_isolated(lambda d: [d.text.upper()], doc, "dedup", stage_error)
    assert "\n" not in str(raised.value)


def _noise(n: int, rng=__import__("random").Random(38)) -> str:
    """``n`` random printable ASCII characters: a text zstd does not shrink."""
    return "".join(chr(rng.randrange(0x20, 0x7F)) for _ in range(n))


@pytest.mark.parametrize("text,compress", [("a short text", True), ("a text that compresses " * 20, False),
                                           (_noise(100), True)])
def test_a_flipped_byte_in_a_stored_text_is_a_clear_error_not_other_text(tmp_path, text, compress):
    """Texts stored as they are (under 64 bytes, texts zstd does not shrink, every text of a build without disk
    shuffles) had no check: a changed byte read back as other text (or as a rejection of undecodable UTF-8)."""
    doc = pickle.loads(pickle.dumps(_spilled(tmp_path, Document(id="a", text=text, source="s"), compress=compress)))
    path, offset, length = doc.text_ref  # stored as it is
    spill.close_readers()
    original = pathlib.Path(path).read_bytes()
    for position in range(offset, offset + length + 4):
        data = bytearray(original)
        data[position] ^= 0x01
        pathlib.Path(path).write_bytes(bytes(data))
        with pytest.raises(UserError, match=r"^spill file .* is damaged at offset .*: run the build again"):
            _ = doc.text
    spill.close_readers()


def test_a_flipped_length_in_a_compressed_texts_header_is_a_clear_error(tmp_path):
    """The frame header's descriptor with a flipped bit asks for an 8-byte content size (~2 EB): zstandard raised
    MemoryError (a traceback) before the text's length was checked."""
    doc = pickle.loads(pickle.dumps(_spilled(tmp_path, Document(id="a", text="a text that compresses " * 20,
                                                                source="s"), compress=True)))
    path, offset, _, _ = doc.text_ref
    spill.close_readers()
    data = bytearray(pathlib.Path(path).read_bytes())
    data[offset + 4] ^= 0x80
    pathlib.Path(path).write_bytes(bytes(data))
    with pytest.raises(UserError, match=r"^spill file .* is damaged at offset .*: run the build again"):
        _ = doc.text


@pytest.mark.parametrize("suffix", [".near", ".sentences"])
def test_dedups_spilled_records_are_checked_too(tmp_path, suffix):
    """Near dedup's signatures and band records, line dedup's sentence tables: a changed byte was read back as
    another signature or table (other decisions, silently)."""
    writer = spill.SpillWriter(str(tmp_path), suffix)
    refs = [writer.write(bytes([i]) * 40) for i in range(3)] + [writer.write(b"packed band records" * 3)]
    writer.close()
    assert [spill.read_bytes(ref) for ref in refs] == [bytes([i]) * 40 for i in range(3)] + [b"packed band records" * 3]
    spill.close_readers()
    path = refs[0][0]
    original = pathlib.Path(path).read_bytes()
    for ref in refs:
        data = bytearray(original)
        data[ref[1] + 5] ^= 0x10
        pathlib.Path(path).write_bytes(bytes(data))
        with pytest.raises(UserError, match=rf"^spill file .*{suffix} is damaged at offset {ref[1]:,} "):
            spill.read_bytes(ref)
        spill.close_readers()


def test_one_write_of_several_records_checks_each(tmp_path):
    """Near dedup writes a batch's signatures (line dedup an element's sentence tables) in one write, a record for
    each document: a changed byte in one is refused when that one is read, and the others read back as written."""
    writer = spill.SpillWriter(str(tmp_path), ".near")
    payloads = [bytes([i]) * 32 for i in range(4)]
    refs = writer.write_many(payloads)
    writer.close()
    assert len({ref[0] for ref in refs}) == 1 and [spill.read_bytes(ref) for ref in refs] == payloads
    spill.close_readers()
    data = bytearray(pathlib.Path(refs[2][0]).read_bytes())
    data[refs[2][1]] ^= 0x01
    pathlib.Path(refs[2][0]).write_bytes(bytes(data))
    assert [spill.read_bytes(ref) for ref in refs[:2] + refs[3:]] == payloads[:2] + payloads[3:]
    with pytest.raises(UserError, match=rf"^spill file .* is damaged at offset {refs[2][1]:,} "):
        spill.read_bytes(refs[2])
    spill.close_readers()


def test_a_spilled_documents_length_is_known_without_reading_its_text(tmp_path, monkeypatch):
    """The build's facts count each text's characters and UTF-8 bytes: a spilled document carries them (its
    characters, and its reference's length in bytes), through pickling and the build's coder, so the facts read no
    spilled text; an edited text's are its own."""
    from corpusforge.pipeline.document_coder import DocumentCoder
    from corpusforge.pipeline.stats import document_facts, length_facts, removed_facts

    text = "Grüße aus Köln, 東京 and \U0001f642 " * 7  # characters, not bytes: 1-, 2-, 3- and 4-byte UTF-8
    inline = Document(id="a", text=text, source="s", annotations={"lang": "de"})
    coder = DocumentCoder()
    for compress in (False, True):  # stored, and a zstd frame (shuffles on disk)
        spilled = _spilled(tmp_path, inline, compress)
        copies = [pickle.loads(pickle.dumps(spilled)), coder.decode(coder.encode(spilled))]
        assert all("text" not in doc.__dict__ for doc in copies)
        monkeypatch.setattr(spill, "read_text", lambda ref: pytest.fail("a fact read a spilled text"))
        for doc in copies:
            for facts in (document_facts("dedup"), length_facts("length_out")):
                assert dict(facts(doc)) == dict(facts(inline))
            removed = Removed(doc=doc, stage="dedup", reason="near_duplicate")
            assert list(removed_facts(removed)) == list(removed_facts(Removed(inline, "dedup", "near_duplicate")))
            assert doc.text_sizes() == (len(text), len(text.encode())) and doc.text_length() == len(text)
        monkeypatch.undo()
        edited = copies[1].with_text("plain")
        assert edited.text_sizes() == (5, 5) and edited.text_chars is None
        back = coder.decode(coder.encode(_spilled(tmp_path, edited, compress)))
        assert back.text_sizes() == (5, 5) and back.text == "plain"


def test_a_builds_facts_read_no_spilled_text(corpus, monkeypatch):
    """Neither the facts of kept or removed documents nor the step after the last stage (whose documents go to the
    shard writer's shuffle) reads a spilled text back; the stats are those of a build that spills nothing."""
    import sys

    from corpusforge.pipeline import stats

    facts_code = {fn.__code__ for fn in (stats.DocumentFacts.add_to, stats._DocumentCounts.add,
                                         stats.LengthFacts.add_to, stats.LengthFacts.__call__, stats.removed_facts)}
    reads = collections.Counter()
    read_text = spill.read_text

    def counted(ref):
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code in facts_code:
                reads["facts"] += 1
            elif frame.f_code is spill.TextSpiller.__call__.__code__:
                reads["after a stage"] += 1
            frame = frame.f_back
        reads["all"] += 1
        return read_text(ref)

    monkeypatch.setattr(spill, "read_text", counted)
    only = ("--set", "quality.enabled=false", "--set", "pii.enabled=false")
    _, spilled_stats, _ = _build_outputs(corpus, "facts-reads", "--set", "output.disk_shuffle_mb=0", *only)
    assert reads["all"] > 0 and reads["facts"] == reads["after a stage"] == 0
    assert spilled_stats["removed"]["by_stage"]["dedup"] and spilled_stats["edits"]["dedup"]
    monkeypatch.undo()
    _, inline_stats, _ = _build_outputs(corpus, "facts-inline", "--set", "output.spill_text=false", *only)
    assert spilled_stats == inline_stats


def test_a_read_keeps_its_file_open_while_other_reads_evict_it(tmp_path, monkeypatch):
    """The descriptor cache holds 64 spill files: a read whose file another thread evicts mid-read (by opening
    files of its own) went on with a closed descriptor, whose number the next file opened takes: EBADF, or the
    other file's bytes (a damaged-file error that stops the build). Here the other thread's reads run inside the
    first read, deterministically."""
    from corpusforge.core import scratch_frames

    spill.close_readers()
    refs = []
    for i in range(spill._OPEN_READERS + 2):
        writer = spill.SpillWriter(str(tmp_path / f"w{i}"), ".txt")
        refs.append(writer.write(f"text number {i} ".encode() * 8))
        writer.close()
    real_read_record = scratch_frames.read_record
    nested = []

    def read_record_while_others_read(fd, ref, what):
        if not nested:  # the first read: before it reads, other reads open every other file
            nested.append(True)
            assert [spill.read_bytes(other) for other in refs[1:]] == [f"text number {i} ".encode() * 8
                                                                      for i in range(1, len(refs))]
        return real_read_record(fd, ref, what)

    monkeypatch.setattr(scratch_frames, "read_record", read_record_while_others_read)
    assert spill.read_bytes(refs[0]) == b"text number 0 " * 8
    monkeypatch.setattr(scratch_frames, "read_record", real_read_record)
    assert spill.read_bytes(refs[0]) == b"text number 0 " * 8  # opened again: it was evicted, then closed
    spill.close_readers()
    assert not spill._readers


def test_reads_from_many_threads_over_more_files_than_the_cache_holds(tmp_path):
    import threading

    spill.close_readers()
    refs = []
    for i in range(spill._OPEN_READERS * 2):
        writer = spill.SpillWriter(str(tmp_path / f"w{i}"), ".txt")
        refs.append((writer.write(f"text {i} ".encode() * 50), f"text {i} ".encode() * 50))
        writer.close()
    failures = []

    def reader(seed):
        import random
        rng = random.Random(seed)
        for _ in range(3000):
            ref, expected = refs[rng.randrange(len(refs))]
            try:
                if spill.read_bytes(ref) != expected:
                    failures.append("other bytes")
            except Exception as e:  # noqa: BLE001 - what the race raised
                failures.append(repr(e))

    threads = [threading.Thread(target=reader, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spill.close_readers()
    assert failures == []
