"""`corpusforge build` of a local build imports Beam without its GCP and MongoDB clients, with the same outputs."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from corpusforge.config import InputConfig, load_config
from corpusforge.core import lean_beam
from corpusforge.core.config_loader import to_dict
from corpusforge.core.lean_beam import hidden_while_importing, local_build
from tests.pipeline.sample_corpus import sample_corpus
from tests.core.build_outputs import build_outputs


def _config(*overrides: str):
    return load_config(None, list(overrides))


def local(config, flags: list[str]) -> bool:
    return local_build(config.beam, to_dict(config), flags)


def test_a_local_build_needs_no_optional_library():
    config = _config()
    config.inputs.append(InputConfig(path="/data/*.jsonl"))
    assert local(config, [])
    assert local(config, ["--direct_num_workers=2", "--runner=DirectRunner"])


@pytest.mark.parametrize("overrides, flags", [
    (["output.run_dir=gs://bucket/run"], []),
    (["beam.runner=DataflowRunner"], []),
    (["beam.runner=DaskRunner"], []),
    (["beam.runner=PrismRunner"], []),
    ([], ["--runner=DataflowRunner"]),
    ([], ["--runner", "FlinkRunner"]),
    ([], ["--temp_location=gs://bucket/tmp"]),
    (["quality.langid.model=gs://bucket/lid.176.bin"], []),
])
def test_a_url_or_another_runner_imports_beam_whole(overrides, flags):
    assert not local(_config(*overrides), flags)


def test_an_input_url_imports_beam_whole():
    config = _config()
    config.inputs.append(InputConfig(path="s3://bucket/*.jsonl"))
    assert not local(config, [])


def test_hidden_only_inside_the_block(tmp_path, monkeypatch):
    (tmp_path / "cf_optional_lib").mkdir()
    (tmp_path / "cf_optional_lib" / "__init__.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with hidden_while_importing(("cf_optional_lib",)):
        with pytest.raises(ImportError):
            import cf_optional_lib  # noqa: F401
        with pytest.raises(ImportError):
            import cf_optional_lib.sub  # noqa: F401
    assert "cf_optional_lib" not in sys.modules
    import cf_optional_lib

    assert cf_optional_lib.VALUE == 1
    with hidden_while_importing(("cf_optional_lib",)):  # imported already: left alone
        import cf_optional_lib as again
    assert again is cf_optional_lib
    monkeypatch.delitem(sys.modules, "cf_optional_lib")


def test_import_for_local_build_leaves_an_imported_beam_alone():
    import apache_beam  # noqa: F401

    assert not lean_beam.import_for_local_build()


def test_only_the_command_imports_lean():
    # main() called in a process that goes on (tests, notebooks) imports Beam whole: run() enables the lean import.
    probe = "import sys; from corpusforge.core import lean_beam as l; print(l.import_for_local_build(), 'apache_beam' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


# Run in a fresh process: the `corpusforge build` command (run(), as `python -m corpusforge` does), then what of
# the optional libraries got imported, and the filesystems Beam knows. With "full", Beam is imported first,
# whole, as before.
_BUILD = textwrap.dedent("""
    import json, sys
    if sys.argv[1] == "full":
        import apache_beam
    from corpusforge.cli.main import run
    clients = json.loads(sys.argv[-1])
    sys.argv = ["corpusforge", *sys.argv[2:-1]]
    try:
        run()
    except SystemExit as exit:
        code = exit.code
    from apache_beam.io.filesystem import FileSystem
    loaded = [name for name in clients if sys.modules.get(name) is not None]
    import gc
    print(json.dumps({"code": code, "loaded": loaded, "collecting": gc.isenabled(),
                      "gcs": any(c.scheme() == "gs" for c in FileSystem.__subclasses__() if c.scheme)}))
""")


# The clients themselves (the google.cloud namespace package may be set up by a .pth file at start-up).
CLIENTS = ("google.cloud.storage", "google.cloud.pubsub", "google.cloud.bigquery", "google.auth", "google.api_core",
           "apitools", "oauth2client", "pymongo", "bson")


def _build(mode: str, config, run_dir, cwd) -> dict:
    args = ["build", "-c", str(config), "--run-dir", str(run_dir), "--no-progress", "--set", "pii.hash_salt=a-fixed-test-salt-0123"]
    done = subprocess.run([sys.executable, "-c", _BUILD, mode, *args, json.dumps(CLIENTS)],
                          capture_output=True, text=True, check=True, cwd=cwd)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_local_build_is_the_same_without_the_optional_libraries(tmp_path):
    root, config = sample_corpus(tmp_path, documents=40)
    lean = _build("lean", config, tmp_path / "lean", tmp_path)
    full = _build("full", config, tmp_path / "full", tmp_path)
    assert lean["code"] == full["code"] == 0
    assert lean["loaded"] == [] and not lean["gcs"]  # Beam was set up as without its gcp extra
    assert lean["collecting"]  # the garbage collector paused for the imports only
    assert full["gcs"]  # (installed here: the full import registers GCS)
    assert build_outputs(tmp_path / "lean") == build_outputs(tmp_path / "full")
