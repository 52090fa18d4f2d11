"""Live progress: per-process counter files, the driver's poller, and what a build shows and saves."""
import gzip
import io
import json
import multiprocessing
import threading
import time

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.config import InputConfig
from corpusforge.core.progress import Progress, Reporter, format_bytes, read_counts
from corpusforge.pipeline.readers import ReadDocuments, input_bytes
from corpusforge.pipeline.shards import WriteShards


def _count_in_process(directory, n):
    reporter = Reporter(directory)
    for _ in range(n):
        reporter.add(records_read=1, bytes_read=10)
    reporter.flush()


def test_counts_from_two_processes_add_up(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_count_in_process, args=(str(tmp_path), n)) for n in (300, 45)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    assert len(list(tmp_path.glob("*.json"))) == 2
    assert read_counts(str(tmp_path)) == {"records_read": 345, "bytes_read": 3450}


def test_reporter_writes_at_most_once_a_second_and_on_flush(tmp_path):
    reporter = Reporter(str(tmp_path))
    for _ in range(1000):
        reporter.add(rows_written=1)
    assert read_counts(str(tmp_path)) == {}  # nothing due yet: no file written per record
    reporter.flush()
    assert read_counts(str(tmp_path)) == {"rows_written": 1000}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # written by rename, no leftovers


def test_reporter_without_directory_does_nothing(tmp_path):
    reporter = Reporter(None)
    reporter.add(records_read=5)
    reporter.flush()
    assert reporter.counts == {}


def _threads():
    return [t for t in threading.enumerate() if t.name == "corpusforge-progress"]


def test_plain_lines_show_counts_eta_and_stop_when_the_run_fails(tmp_path):
    stream = io.StringIO()
    progress = Progress(str(tmp_path / "p"), "bytes_read", 1000, unit="B", tty=False, stream=stream,
                        poll_every=0.02, line_every=0.05, extras=(("records_read", "records read"),),
                        label="build")
    with pytest.raises(RuntimeError, match="boom"):
        with progress:
            reporter = Reporter(progress.directory)
            reporter.add(bytes_read=250, records_read=7)
            reporter.flush()
            time.sleep(0.3)
            raise RuntimeError("boom")
    assert not _threads()
    lines = stream.getvalue().splitlines()
    assert any("250 B of 1.0 kB (25%), ETA" in line and "records read 7" in line for line in lines[:-1])
    assert lines[-1].startswith("build: failed after 0:00: 250 B of 1.0 kB (25%), records read 7")
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("read", [1500, 800])
def test_an_estimated_total_is_the_count_once_the_step_is_done(read):
    # the tokenizer's sample is forecast from the held-out share; its documents are drawn by a hash, so it reads
    # more or less than that: "202.7 kB of 199.1 kB (100%)" at the end of the demo's tokenizer training
    stream = io.StringIO()
    progress = Progress(None, "bytes", 1000, unit="B", tty=False, stream=stream, poll_every=0.02, line_every=0.05,
                        label="tokenizer sample", estimated=True)
    with progress:
        progress.add(bytes=read // 2)
        time.sleep(0.3)
        progress.add(bytes=read - read // 2)
    lines = stream.getvalue().splitlines()
    assert any(f"{read // 2} B of about 1.0 kB" in line for line in lines[:-1]), lines
    shown = format_bytes(read)
    assert lines[-1] == f"tokenizer sample: done in 0:00: {shown} of {shown} (100%)"


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_terminal_bar_shows_rate_and_counts_and_closes():
    stream = _Terminal()
    with Progress(None, "documents", 40, unit="doc", tty=None, stream=stream, poll_every=0.02,
                  extras=(("tokens", "tokens"),), label="tokenize") as progress:
        progress.add(documents=40, tokens=1234)
        time.sleep(0.2)
    assert not _threads()
    final = stream.getvalue().replace("\r", "\n").splitlines()[-1]
    assert final.startswith("tokenize: 100%") and "40/40" in final and "tokens 1,234" in final


def test_disabled_progress_shows_nothing():
    stream = io.StringIO()
    with Progress(None, "x", 10, enabled=False, stream=stream) as progress:
        progress.add(x=3)
    assert stream.getvalue() == "" and not _threads()


def test_reader_and_shard_writer_report_from_beam(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    rows = [json.dumps({"id": i, "text": f"document {i} " * 50}).encode() + b"\n" for i in range(200)]
    (data / "a.jsonl.gz").write_bytes(gzip.compress(b"".join(rows[:150]), mtime=0))
    (data / "b.jsonl").write_bytes(b"".join(rows[150:]) + b"{broken\n")
    inputs = [InputConfig(path=str(data / "*"))]
    progress = tmp_path / "progress"
    with TestPipeline() as p:
        docs, rejected = p | ReadDocuments(inputs, 10_000, progress=str(progress))
        written = docs | WriteShards(str(tmp_path / "out"), pa_schema(), lambda d: {"id": d.id}, lambda d: d.id,
                                     lambda d: d.id, lambda d: 100, 5_000, progress=str(progress))
        assert_that(written | beam.Map(lambda s: s["rows"]) | beam.CombineGlobally(sum), equal_to([200]))
    counts = read_counts(str(progress))
    # Compressed inputs count the bytes consumed as stored, so the total is known up front by matching.
    assert counts == {"records_read": 201, "bytes_read": input_bytes(inputs), "rows_written": 200}


def pa_schema():
    import pyarrow as pa

    return pa.schema([("id", pa.string())])


def test_build_shows_progress_on_stderr_and_metrics_on_stdout(tmp_path, capsys):
    from corpusforge.cli.main import main

    data = tmp_path / "data"
    data.mkdir()
    # Exact dedup reads digits as 0: name the topics with letters.
    topics = ["".join(chr(97 + (i // 26 ** k) % 26) for k in range(3)) for i in range(20)]
    texts = [f"Paragraph {t} is about the history of topic {t} and what became of it." for t in topics]
    rows = [{"id": str(i), "text": texts[i % 20]} for i in range(30)]  # ten exact duplicates
    (data / "web.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    assert main(["build", "--input", str(data / "web.jsonl"), "--run-dir", str(run), "--set", "quality.enabled=false",
                 "--set", "pii.enabled=false", "--set", "dedup.near.enabled=false"]) == 0
    out, err = capsys.readouterr()
    size = (data / "web.jsonl").stat().st_size
    assert "build: done in" in err and "(100%), records read 30, documents written 20" in err
    assert f"{size / 1000:.1f} kB of {size / 1000:.1f} kB" in err
    assert "beam metrics:\n  dedup\n" in out and "exact_duplicate" in out
    stats = json.loads((run / "stats.json").read_text())
    assert stats["metrics"]["counters"]["dedup"]["exact_duplicate"] == 10
    assert stats["removed"]["by_stage"]["dedup"]["reasons"]["exact_duplicate"] == 10
    assert not list(run.glob(".tmp-*"))

    assert main(["build", "--input", str(data / "web.jsonl"), "--run-dir", str(run), "--overwrite", "--no-progress",
                 "--set", "quality.enabled=false", "--set", "pii.enabled=false"]) == 0
    assert "build:" not in capsys.readouterr().err


def test_steps_off_a_terminal_are_plain_lines_with_messages_on_their_own():
    import io

    from corpusforge.core.progress import PlainSteps, step_bar

    stream = io.StringIO()
    bar = step_bar(6, label="train", stream=stream)
    assert isinstance(bar, PlainSteps)
    bar.line_every = 0.0  # a line at every new tenth (each of the 6 steps here)
    for step in range(1, 7):
        bar.update(1)
        bar.set_postfix({"loss": f"{7 - step:.1f}"})
        if step == 3:
            bar.write("step 3: val loss 4.2")
    bar.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert lines[:4] == ["train: step 1 of 6, ETA 0:00", "train: step 2 of 6, ETA 0:00, loss 6.0",
                         "train: step 3 of 6, ETA 0:00, loss 5.0", "step 3: val loss 4.2"]
    assert lines[-1].startswith("train: done in 0:00: step 6 of 6, loss 1.0")


def test_a_line_between_the_trainers_measurements_says_which_step_the_loss_is_from():
    import io

    from corpusforge.core.progress import PlainSteps

    stream = io.StringIO()
    bar = PlainSteps(30, stream=stream, line_every=0.0)
    for step in range(1, 31):  # as trainers/train.py: the loss measured every 10 steps, before the step is counted
        if step % 10 == 0:
            bar.set_postfix({"loss": f"{8 - step / 10:.1f}"})
        bar.update(1)
    bar.close()
    lines = stream.getvalue().splitlines()
    # a line at each tenth (3 steps); before, "step 12 of 30, loss 7.0" as if the loss were step 12's
    assert [line.replace(", ETA 0:00", "") for line in lines[3:7]] == [
        "train: step 12 of 30, loss 7.0 (at step 10)", "train: step 15 of 30, loss 7.0 (at step 10)",
        "train: step 18 of 30, loss 7.0 (at step 10)", "train: step 21 of 30, loss 6.0 (at step 20)"]
    assert lines[-1] == "train: done in 0:00: step 30 of 30, loss 5.0"


def test_plain_step_lines_show_the_time_left(monkeypatch):
    # a newcomer's `corpusforge train` on CPU (size small, 1000 steps) printed "train: step 100 of 1000" for hours,
    # with no word of how long the rest would take; the build's lines and tqdm's bar show an ETA
    import io

    from corpusforge.core import progress as progress_module

    clock = [1000.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    stream = io.StringIO()
    bar = progress_module.PlainSteps(1000, initial=200, stream=stream, line_every=0.0)  # resumed at step 200
    for _ in range(100):
        clock[0] += 6.0  # 6 s a step in this process
        bar.update(1)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "train: step 210 of 1000, ETA 1:19:00"  # a minute without a line; 790 steps left at 6 s
    assert lines[-1] == "train: done in 10:00: step 300 of 1000"


def test_a_slow_short_run_prints_about_ten_lines():
    import io

    from corpusforge.core.progress import PlainSteps

    stream = io.StringIO()
    bar = PlainSteps(60, stream=stream, line_every=0.0)  # as if every step took longer than line_every
    for _ in range(60):
        bar.update(1)
    bar.close()
    assert len(stream.getvalue().splitlines()) == 11  # a line per tenth, and the last one
