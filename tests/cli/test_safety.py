"""Never destroy what the user owns: refused run directories, scoped and transactional --overwrite (builds
SIGKILLed mid-run), one writer per run directory, stale derived outputs, full and read-only disks, no network."""
import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from corpusforge.core.shard_files import open_shard
from corpusforge.cli.main import main
from corpusforge.core import rundir

from tests.cli.test_errors import OFF, _one_line_error as _any_one_line_error


def _one_line_error(capsys, argv) -> str:
    """One line on stderr, exit status 2, no traceback (test_errors' check), and an error, not a config error."""
    line = _any_one_line_error(capsys, argv)
    assert line.startswith("corpusforge: error: "), line
    return line


def _corpus(path, documents: int, seed: str = "a", words: int = 60):
    path.write_text("".join(json.dumps({"id": f"{seed}{i}", "text": " ".join(f"{seed}word{(i * 7 + j) % 997}"
                                                                           for j in range(words))}) + "\n"
                            for i in range(documents)))
    return path


def _build(data, run, *extra):
    return main(["build", "--input", str(data), "--run-dir", str(run), "--no-progress", *OFF, *extra])


def _snapshot(run):
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def _clean_rows(run):
    return sum(open_shard(str(p)).read_all().num_rows for p in (run / "clean").glob("part-*"))


# ------------------------------------------------------------------------------- refused directories

def test_demo_and_build_refuse_the_current_directory_root_and_home(tmp_path, monkeypatch, capsys):
    work = tmp_path / "home" / "me"
    work.mkdir(parents=True)
    (work / "thesis.tex").write_text("years of work")
    monkeypatch.setenv("HOME", str(work))
    monkeypatch.chdir(work)
    data = _corpus(tmp_path / "docs.jsonl", 5)
    for argv in (["demo", "--run-dir", ".", "--set", "output.overwrite=true"],
                 ["demo", "--run-dir", "~", "--set", "output.overwrite=true"],
                 ["demo", "--run-dir", "/", "--set", "output.overwrite=true"],
                 ["build", "--input", str(data), "-o", "/", "--overwrite", *OFF],
                 ["build", "--input", str(data), "-o", ".", *OFF],
                 ["build", "--input", str(data), "-o", str(tmp_path), *OFF]):
        assert "refusing" in _one_line_error(capsys, argv), argv
    assert sorted(p.name for p in work.iterdir()) == ["thesis.tex"]
    assert (work / "thesis.tex").read_text() == "years of work"


def test_overwrite_refused_where_corpusforge_wrote_nothing(tmp_path, capsys):
    data = _corpus(tmp_path / "docs.jsonl", 5)
    mine = tmp_path / "mine"
    (mine / "clean").mkdir(parents=True)
    (mine / "clean" / "notes.txt").write_text("mine")
    (mine / "stats.json").write_text("{}")
    line = _one_line_error(capsys, ["build", "--input", str(data), "-o", str(mine), "--overwrite", *OFF])
    assert "no .corpusforge-run.json" in line
    line = _one_line_error(capsys, ["demo", "--run-dir", str(mine), "--set", "output.overwrite=true"])
    assert "no .corpusforge-run.json" in line
    assert _snapshot(mine) == {"clean/notes.txt": b"mine", "stats.json": b"{}"}


def test_a_file_the_user_put_in_clean_stops_the_overwrite(tmp_path, capsys):
    data = _corpus(tmp_path / "docs.jsonl", 20)
    run = tmp_path / "run"
    assert _build(data, run) == 0
    (run / "clean" / "notes.txt").write_text("mine")
    before = _snapshot(run)
    line = _one_line_error(capsys, ["build", "--input", str(data), "-o", str(run), "--overwrite", *OFF])
    assert "notes.txt was not written by corpusforge" in line
    assert _snapshot(run) == before


# ------------------------------------------------------------------------ transactional overwrite

def _start_build(data, run):
    return subprocess.Popen([sys.executable, "-m", "corpusforge", "build", "--input", str(data), "-o", str(run),
                             "--overwrite", "--no-progress", *OFF],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("delay", [0.0, 0.7, 1.5])
def test_a_rebuild_killed_mid_run_leaves_the_previous_build_intact(tmp_path, capsys, delay):
    old_data = _corpus(tmp_path / "old.jsonl", 50, seed="o")
    # large enough that an idle 2-core machine is still building 1.5 s in (20,000 finished in time once)
    new_data = _corpus(tmp_path / "new.jsonl", 80_000, seed="n")
    run = tmp_path / "run"
    assert _build(old_data, run) == 0
    before = _snapshot(run)
    build = _start_build(new_data, run)
    try:
        assert _wait_for(lambda: any(p.name.startswith(".tmp-build-") for p in run.iterdir())), build.stderr.read()
        time.sleep(delay)
        build.send_signal(signal.SIGKILL)
    finally:
        build.wait()
    assert build.returncode == -signal.SIGKILL, "the build ended before it could be killed: make the corpus larger"
    capsys.readouterr()
    after = {k: v for k, v in _snapshot(run).items() if not k.startswith((".tmp-", rundir.LOCK))}
    # the marker differs only in the working directory it recorded before making it (so only it is cleared)
    marker_after, marker_before = json.loads(after.pop(rundir.MARKER)), json.loads(before.pop(rundir.MARKER))
    assert all(n.startswith(".tmp-build-") for n in marker_after.pop("scratch"))
    assert marker_before.pop("scratch") == [] and marker_after == marker_before
    assert after == before
    assert _clean_rows(run) == 50  # readable: every shard opens
    assert "stale temporary directories" in _inspect(run, capsys)
    # The next build is not locked out, removes what the killed one left and finishes.
    assert _build(old_data, run, "--overwrite") == 0
    assert "left behind by a killed run" in capsys.readouterr().out
    assert not [p for p in run.iterdir() if p.name.startswith(".tmp-")]
    assert "stale temporary directories" not in _inspect(run, capsys)


def _temp_tree(temp):
    return {str(p.relative_to(temp)): p.read_bytes() if p.is_file() else None for p in sorted(temp.rglob("*"))}


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="process start times from /proc")
def test_a_command_killed_mid_run_leaves_the_temporary_folder_to_the_next_one(tmp_path):
    """A SIGKILLed build's temporary folders (its command's and its pipeline's, multiprocessing's pymp-* with
    them) are gone once the next command has run; a look-alike without our marker, or with one naming a live
    owner (this test's process), survives byte for byte. Before, each killed build left a corpusforge-* folder
    and a pymp-* folder in the temporary folder for good."""
    temp = tmp_path / "temp"
    temp.mkdir()
    (temp / "corpusforge-mine").mkdir()
    (temp / "corpusforge-mine" / "notes.txt").write_text("the user's")
    (temp / "corpusforge-live").mkdir()
    stat_line = open(f"/proc/{os.getpid()}/stat").read()
    (temp / "corpusforge-live" / rundir.SCOPE_MARKER).write_text(json.dumps(
        {"made_by": "corpusforge", "folder": "corpusforge-live",
         "owner": {"pid": os.getpid(), "start": int(stat_line[stat_line.rfind(")") + 2:].split()[19]), "boot": None}}))
    look_alikes = _temp_tree(temp)
    env = {**os.environ, "TMPDIR": str(temp)}
    data = _corpus(tmp_path / "docs.jsonl", 80_000)
    build = subprocess.Popen([sys.executable, "-m", "corpusforge", "build", "--input", str(data), "-o",
                              str(tmp_path / "run"), "--no-progress", *OFF], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:  # killed while its pipeline runs: a folder of the pipeline's inside the command's
        assert _wait_for(lambda: list(temp.glob("corpusforge-*/corpusforge-beam-*"))), build.stderr.read()
        build.send_signal(signal.SIGKILL)
    finally:
        build.wait()
    assert build.returncode == -signal.SIGKILL, "the build ended before it could be killed: make the corpus larger"
    assert set(_temp_tree(temp)) > set(look_alikes)
    done = subprocess.run([sys.executable, "-m", "corpusforge", "inspect", str(tmp_path / "missing")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert _temp_tree(temp) == look_alikes


def _inspect(run, capsys):
    capsys.readouterr()
    assert main(["inspect", str(run)]) == 0
    return capsys.readouterr().out


def test_second_build_on_the_same_run_directory_fails_at_once(tmp_path, capsys):
    data = _corpus(tmp_path / "docs.jsonl", 20_000)
    run = tmp_path / "run"
    first = subprocess.Popen([sys.executable, "-m", "corpusforge", "build", "--input", str(data), "-o", str(run),
                              "--no-progress", *OFF], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _wait_for(lambda: (run / rundir.LOCK).exists() and (run / rundir.LOCK).read_text().strip())
        started = time.monotonic()
        line = _one_line_error(capsys, ["build", "--input", str(data), "-o", str(run), "--overwrite", *OFF])
        assert f"in use by `corpusforge build` (pid {first.pid} on " in line
        assert time.monotonic() - started < 5
        line = _one_line_error(capsys, ["tokenize", "--set", f"output.run_dir={run}"])
        assert "in use by `corpusforge build`" in line
    finally:
        first.kill()
        first.wait()


# ------------------------------------------------------------------------------ stale derived outputs

def test_a_rebuild_marks_tokenizer_tokens_and_model_stale(tmp_path, capsys):
    run = tmp_path / "run"
    settings = ["--set", f"output.run_dir={run}", "--set", "tokenizer.vocab_size=300",
                "--set", "tokenizer.family=decoder"]
    assert _build(_corpus(tmp_path / "a.jsonl", 200, seed="a"), run) == 0
    assert main(["tokenizer", "train", "--no-progress", *settings]) == 0
    assert main(["tokenize", "--no-progress", *settings]) == 0
    assert main(["report", str(run)]) == 0
    assert (run / "report.html").exists()
    # Rebuilt from other input: the page of the old corpus goes, the rest is refused until rebuilt.
    assert _build(_corpus(tmp_path / "b.jsonl", 120, seed="b"), run, "--overwrite") == 0
    assert not (run / "report.html").exists()
    capsys.readouterr()
    line = _one_line_error(capsys, ["tokenize", "--set", "output.overwrite=true", *settings])
    assert "tokenizer was made from an earlier build" in line and "corpusforge tokenizer train" in line
    line = _one_line_error(capsys, ["report", str(run)])
    assert "earlier build" in line
    line = _one_line_error(capsys, ["train", "--max-steps", "1", *settings])
    assert "tokens was made from an earlier build" in line and "corpusforge tokenize" in line
    assert main(["tokenizer", "train", "--no-progress", "--overwrite", *settings]) == 0
    assert main(["tokenize", "--no-progress", "--overwrite", *settings]) == 0
    assert main(["report", str(run)]) == 0
    manifest = json.loads((run / "tokens" / "manifest.json").read_text())
    assert sum(s["documents"] for s in manifest["splits"].values()) == 120


# ------------------------------------------------------------------------------- resources

@contextlib.contextmanager
def _tmpfs(path, options):
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    if done.returncode:
        pytest.skip("needs a tmpfs mount (root in a container that allows it)")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def test_a_full_disk_is_one_line_naming_the_path(tmp_path, capsys):
    data = _corpus(tmp_path / "docs.jsonl", 4000)
    with _tmpfs(tmp_path / "small", "size=256k") as disk:
        line = _one_line_error(capsys, ["build", "--input", str(data), "-o", str(disk / "run"), "--no-progress", *OFF])
        assert "no space left on the device: free some space" in line and str(disk / "run") in line
        assert not (disk / "run").exists()  # no temporary directory, no spilled text, not even the empty run dir
        run = tmp_path / "run"
        assert _build(_corpus(tmp_path / "few.jsonl", 30), run) == 0
        _fill(disk / "ballast")
        line = _one_line_error(capsys, ["report", str(run), "-o", str(disk / "report.html")])
        assert f"{disk / 'report.html'} writing the report: no space left on the device" in line
        assert sorted(p.name for p in disk.iterdir()) == ["ballast"]  # no temporary file left


def _fill(path):
    with contextlib.suppress(OSError), open(path, "wb") as f:
        while True:
            f.write(b"\0" * 4096)
            f.flush()


def test_a_read_only_filesystem_is_one_line(tmp_path, capsys):
    data = _corpus(tmp_path / "docs.jsonl", 10)
    with _tmpfs(tmp_path / "ro", "ro,size=64k") as disk:
        line = _one_line_error(capsys, ["build", "--input", str(data), "-o", str(disk / "run"), *OFF])
        assert "read-only filesystem: choose a directory on a writable filesystem" in line


def test_report_never_replaces_a_device(tmp_path, capsys):
    run = tmp_path / "run"
    assert _build(_corpus(tmp_path / "docs.jsonl", 30), run) == 0
    line = _one_line_error(capsys, ["report", str(run), "-o", "/dev/null"])
    assert "is a device or special file, not a regular file" in line
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


# ------------------------------------------------------------------------------- no network

def test_build_and_tokenize_open_no_network_connection(tmp_path, monkeypatch, capsys):
    """Beam's stock DirectRunner downloads (and runs) its Prism binary first; ours must not connect anywhere."""
    import socket

    from apache_beam.runners.portability import prism_runner

    attempts = []
    real_connect = socket.socket.connect

    def connect(self, address):
        if self.family != socket.AF_UNIX and not str(address[0]).startswith(("127.", "::1", "localhost")):
            attempts.append(address)
            raise OSError("network disabled in this test")
        return real_connect(self, address)

    def prism(*args, **kwargs):
        attempts.append("PrismRunner")
        raise RuntimeError("Prism disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "create_connection", lambda address, *a, **k: connect(socket.socket(), address))
    monkeypatch.setattr(prism_runner.PrismRunner, "run_pipeline", prism)
    run = tmp_path / "run"
    settings = ["--set", f"output.run_dir={run}", "--set", "tokenizer.vocab_size=300"]
    assert _build(_corpus(tmp_path / "docs.jsonl", 100), run) == 0
    assert main(["tokenizer", "train", "--no-progress", *settings]) == 0
    assert main(["tokenize", "--no-progress", *settings]) == 0
    assert attempts == []


@pytest.mark.parametrize("how", [["--set", "output.overwrite=yes"], ["--set", "output.overwrite = True"], ["-c", "c.yaml"],
                                 ["--overwrite"]])  # as build, tokenize and train take it (demo gave it to Beam)
def test_demo_takes_output_overwrite_however_it_is_spelt(tmp_path, monkeypatch, capsys, how):
    # demo matched the text "output.overwrite=true" in --set: `=yes`, `= True` or a config file's
    # `overwrite: true` read as not given ("runs/demo is not empty; ... pass --set output.overwrite=true").
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.yaml").write_text("output:\n  overwrite: true\n")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    line = _one_line_error(capsys, ["demo", "--run-dir", "mine", *how])
    assert "holds no .corpusforge-run.json" in line, line
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("command", [["demo"], ["tokenize"]])
def test_a_mistyped_beam_flag_comes_before_any_other_check(tmp_path, capsys, command):
    # demo and tokenize passed it on and looked at the run directory first: `demo --overwrit` said "runs/demo is not
    # empty", `tokenize --direct_num_worker=2` that tokens/ "already holds token shards"; build named the flag first
    run = tmp_path / "run"
    (run / "tokens").mkdir(parents=True)
    (run / "tokens" / "manifest.json").write_text("{}")
    line = _one_line_error(capsys, [*command, "--run-dir", str(run), "--direct_num_worker=2"])
    assert line == ("corpusforge: error: unknown Beam pipeline option --direct_num_worker (did you mean "
                    "--direct_num_workers?), from beam.options or the command line"), line
    assert sorted(p.name for p in run.rglob("*")) == ["manifest.json", "tokens"]


def test_ablate_names_a_mistyped_beam_flag_before_it_builds(tmp_path, capsys):
    data = tmp_path / "raw.jsonl"
    data.write_text('{"text": "A warm cat slept on the mat."}\n')
    line = _one_line_error(capsys, ["ablate", "--input", str(data), "--eval", str(data), "--out",
                                    str(tmp_path / "abl"), "--variant", "full", "--tokens", "2048", "--direct_num_worker=2"])
    assert line.startswith("corpusforge: error: unknown Beam pipeline option --direct_num_worker (did you mean "
                           "--direct_num_workers?)"), line
    assert not (tmp_path / "abl").exists()
