"""Live progress of long steps on the terminal, on every runner whose workers share this machine's disk.

Why files: the in-process DirectRunner runs a whole pipeline inside ``pipeline.run()`` and the multi-process
one runs it in worker processes, so neither Beam metrics (queried once the run is over) nor this process's
memory can say how far a running pipeline has got. Instead:

* A DoFn that has something to count takes a progress directory as a constructor argument (``None``: no
  progress) and opens a ``Reporter`` in ``setup()``. The reporter keeps cumulative counters and writes them
  to its own file ``<dir>/<host>-<pid>-<random>.json`` (a dot-file, then ``os.replace``, so a reader never
  sees half a file), at most once a second and at the end of each bundle (bundles are coarse where it is
  used: one input file, one shard), so the last counts are exact. Files are never shared, so the counts of
  any number of processes and DoFn instances add up by summing the files.
* The driver runs ``Progress`` (a context manager) around ``pipeline.run()``: a thread sums the files twice
  a second and draws a tqdm bar on stderr, for the build: input bytes read out of the total known from
  matching the input files (compressed bytes for compressed files, which is what the reader consumes),
  with rate and ETA, records read and documents written. When stderr is not a terminal it prints a plain
  line every 10 s and one at the end instead, so CI logs show life. Leaving the block stops the thread and
  removes the directory, whether the run finished or failed.
* Remote runners (Dataflow, Spark, Flink) run their workers on other machines: the build passes no
  directory there (``beam_options.runs_locally``) and their own UIs show progress.

Progress is advisory: a reporter that cannot write (a full disk, a directory another machine cannot see)
stops reporting instead of failing the bundle, and the poller skips files it cannot read.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sys
import threading
import time
import uuid
from typing import IO, Any

from corpusforge.core import rundir
from corpusforge.core.errors import UserError

FLUSH_SECONDS = 1.0


class Reporter:
    """Per-DoFn-instance counters, written to a file of their own in ``directory`` (``None``: a no-op)."""

    def __init__(self, directory: str | None):
        self.counts: dict[str, int] = {}
        self._path = None
        if directory is not None:
            name = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
            self._path = os.path.join(directory, name)
        self._last = time.monotonic()
        self._dirty = False

    def add(self, **amounts: int) -> None:
        if self._path is None:
            return
        for counter, amount in amounts.items():
            self.counts[counter] = self.counts.get(counter, 0) + amount
        self._dirty = True
        if time.monotonic() - self._last >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Write the counters now (call at the end of a bundle so the last counts are exact)."""
        if not self._dirty or self._path is None:
            return
        directory, name = os.path.split(self._path)
        tmp = os.path.join(directory, f".{name}.tmp")
        try:
            os.makedirs(directory, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(self.counts, f)
            os.replace(tmp, self._path)  # raw-rename-ok: this process's own counts file, in its progress directory
        except OSError:
            self._path = None  # advisory: stop reporting rather than fail a bundle over a progress bar
        self._dirty = False
        self._last = time.monotonic()


def read_counts(directory: str) -> dict[str, int]:
    """The counters of every reporter in ``directory``, summed."""
    totals: dict[str, int] = {}
    try:
        names = os.listdir(directory)
    except OSError:
        return totals
    for name in names:
        if name.startswith(".") or not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                counts = json.load(f)
        except (OSError, ValueError):
            continue
        for counter, amount in counts.items():
            totals[counter] = totals.get(counter, 0) + int(amount)
    return totals


def local_directory(parent: str, name: str) -> str:
    """A fresh local directory for progress files: under ``parent`` when that is local, else in /tmp."""
    if "://" in parent:
        return rundir.temporary_dir(f"corpusforge-{name}-")
    path = os.path.join(parent, name)
    os.makedirs(path, exist_ok=True)
    return path


def format_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover


def format_seconds(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """Show the counters under ``directory`` (and any added with ``add``) while a block runs.

    ``measure`` is the counter the bar advances by (with ``total`` when known, for the percentage and ETA);
    ``unit`` "B" shows it as bytes. ``extras`` are ``(counter, label)`` pairs shown beside it.
    ``enabled=False`` shows nothing; ``tty`` (default: whether ``stream`` is a terminal) picks a live bar or
    plain lines every ``line_every`` seconds plus one at the end. ``estimated``: ``total`` is a forecast (the
    tokenizer's sample, drawn by a hash per document), shown as "of about" while the block runs and replaced by
    the count when it ends well: a finished step read what it read ("202.7 kB of 199.1 kB (100%)" said the total
    was exact and the count past it).
    """

    def __init__(self, directory: str | None, measure: str, total: int | None = None, *, unit: str = "",
                 extras: tuple[tuple[str, str], ...] = (), label: str = "progress", enabled: bool = True,
                 tty: bool | None = None, stream: IO[str] | None = None, poll_every: float = 0.5,
                 line_every: float = 10.0, remove: bool = True, estimated: bool = False):
        self.directory, self.measure, self.total, self.unit = directory, measure, total or None, unit
        self.estimated = estimated
        if directory is not None and remove and "://" not in directory and not os.path.lexists(directory):
            rundir.claim_new_dir(directory)  # made here: this display may delete it when it ends
        self.extras, self.label, self.enabled = extras, label, enabled
        self.stream = stream or sys.stderr
        self.tty = tty if tty is not None else _isatty(self.stream)
        self.poll_every, self.line_every, self.remove = poll_every, line_every, remove
        self._local: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar = None
        self._started = self._last_line = 0.0
        self.counts: dict[str, int] = {}

    def add(self, **amounts: int) -> None:
        """Count in this process (for work done by the driver itself, e.g. tokenizer training)."""
        with self._lock:
            for counter, amount in amounts.items():
                self._local[counter] = self._local.get(counter, 0) + amount

    def __enter__(self) -> "Progress":
        self._started = self._last_line = time.monotonic()
        if not self.enabled:
            return self
        if self.tty:
            from tqdm.auto import tqdm

            # A terminal that reports no size (some containers' pseudo-terminals) would hide tqdm's bar.
            sized = shutil.get_terminal_size((0, 0)).lines > 0
            self._bar = tqdm(total=self.total, desc=self.label, file=self.stream, dynamic_ncols=sized,
                             ncols=None if sized else 100, nrows=None if sized else 20, leave=True,
                             unit={"": "it", "B": "B"}.get(self.unit, f" {self.unit}"),
                             unit_scale=self.unit == "B", unit_divisor=1000)
        self._thread = threading.Thread(target=self._run, name="corpusforge-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.enabled:
            self._poll()
            if self.estimated and exc_type is None:
                self.total = self.counts.get(self.measure, 0) or None
                if self._bar is not None:
                    self._bar.total = self.total
            if self._bar is not None:
                self._render_bar()
                self._bar.close()
            else:
                outcome = "failed after" if exc_type is not None else "done in"
                print(f"{self.label}: {outcome} {format_seconds(time.monotonic() - self._started)}: "
                      f"{self.describe(final=True)}", file=self.stream, flush=True)
        if self.remove and self.directory is not None:
            with contextlib.suppress(OSError, UserError):
                if rundir.is_temporary(self.directory):
                    rundir.remove_temporary(self.directory)
                else:  # under a working directory of the run (recorded in its marker)
                    rundir.delete(self.directory)

    def _run(self) -> None:
        while not self._stop.wait(self.poll_every):
            self._poll()
            if self._bar is not None:
                self._render_bar()
            elif time.monotonic() - self._last_line >= self.line_every:
                self._last_line = time.monotonic()
                print(f"{self.label}: {self.describe()}", file=self.stream, flush=True)

    def _poll(self) -> None:
        counts = read_counts(self.directory) if self.directory is not None else {}
        with self._lock:
            for counter, amount in self._local.items():
                counts[counter] = counts.get(counter, 0) + amount
        self.counts = counts

    def _render_bar(self) -> None:
        position = self.counts.get(self.measure, 0)
        if self.total:
            position = min(position, self.total)
        if position > self._bar.n:
            self._bar.update(position - self._bar.n)
        self._bar.set_postfix_str(", ".join(f"{label} {self.counts.get(c, 0):,}" for c, label in self.extras),
                                  refresh=False)
        self._bar.refresh()

    def describe(self, final: bool = False) -> str:
        """One line: the measure (of the total, with ETA while running) and the extras."""
        done = self.counts.get(self.measure, 0)
        show = format_bytes if self.unit == "B" else (lambda n: f"{n:,}")
        text = show(done)
        if self.total:
            text += f" of {'about ' if self.estimated and done != self.total else ''}{show(self.total)}"
        if self.unit != "B":
            text = f"{text} {self.unit}".rstrip()
        if self.total:
            text += f" ({100 * min(done, self.total) / self.total:.0f}%)"
            elapsed = time.monotonic() - self._started
            if not final and 0 < done < self.total:
                text += f", ETA {format_seconds(elapsed * (self.total - done) / done)}"
        return ", ".join([text, *(f"{label} {self.counts.get(c, 0):,}" for c, label in self.extras)])


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class PlainSteps:
    """What a tqdm step bar offers the trainer (``update``, ``set_postfix``, ``write``, ``close``) as plain lines,
    for a stream that is not a terminal: tqdm there writes frames joined by carriage returns, one log line
    that grows for the whole run, with any ``write`` pasted into it. This prints ``label: step N of TOTAL,
    key value, ...`` when a new tenth of the run is done and ``line_every`` seconds have passed since the last
    line, or after ``quiet_for`` seconds without one (a long run still shows life in a CI log); each ``write`` on
    its own line, and a last line. A short run prints about ten lines, however slow the machine."""

    def __init__(self, total: int, initial: int = 0, *, label: str = "train", stream: IO[str] | None = None,
                 line_every: float = 10.0, quiet_for: float = 60.0):
        self.total, self.n, self.label, self.line_every, self.quiet_for = total, initial, label, line_every, quiet_for
        self._initial = initial  # a resumed run's rate counts the steps of this process only
        self.stream = stream or sys.stderr
        self.postfix: dict[str, str] = {}
        self._postfix_step = initial
        self._started = self._last = time.monotonic()
        self._tenth = self._tenth_of(initial)

    def _tenth_of(self, n: int) -> int:
        return 10 * n // self.total if self.total else 0

    def update(self, n: int = 1) -> None:
        self.n += n
        since = time.monotonic() - self._last
        tenth = self._tenth_of(self.n)
        if (tenth > self._tenth and since >= self.line_every) or since >= self.quiet_for:
            self._tenth = tenth
            self._line()

    def set_postfix(self, postfix: dict[str, Any], refresh: bool = False) -> None:
        self.postfix = {key: str(value) for key, value in postfix.items()}
        self._postfix_step = self.n + 1  # the step under way, which the next update counts (the trainer's order)

    def write(self, message: str) -> None:
        print(message, file=self.stream, flush=True)

    def close(self) -> None:
        self._line(final=True)

    def _line(self, final: bool = False) -> None:
        self._last = time.monotonic()
        head = f"done in {format_seconds(self._last - self._started)}: " if final else ""
        step = f"step {self.n} of {self.total}"
        if not final and self._initial < self.n < self.total:  # as the build's lines and tqdm's bar show it
            elapsed = self._last - self._started
            step += f", ETA {format_seconds(elapsed * (self.total - self.n) / (self.n - self._initial))}"
        parts = [step, *(f"{key} {value}" for key, value in self.postfix.items())]
        # the trainer measures its loss every train.log_every steps: a line between says which step it is from,
        # not "step 19 of 30, loss 7.6254" for the loss of step 10
        stale = f" (at step {self._postfix_step})" if self.postfix and self._postfix_step != self.n else ""
        print(f"{self.label}: {head}{', '.join(parts)}{stale}", file=self.stream, flush=True)


def step_bar(total: int, initial: int = 0, *, label: str = "train", stream: IO[str] | None = None):
    """A tqdm bar of steps on a terminal, ``PlainSteps`` lines elsewhere (CI logs, a pipe, a file)."""
    stream = stream or sys.stderr
    if not _isatty(stream):
        return PlainSteps(total, initial, label=label, stream=stream)
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=label, unit="step", dynamic_ncols=True, file=stream, mininterval=0.1)
