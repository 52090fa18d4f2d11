"""The same build on every Beam runner that works offline gives the same bytes.

In-process DirectRunner is the reference; the multi-process DirectRunner, the PortableRunner (the path
Spark and Flink take, here with an embedded job server and LOOPBACK workers) and the Dask runner on a
real two-process LocalCluster must write identical shards. The Dataflow job graph is built with --dry_run.
"""
import json
import pathlib
import tempfile

import pytest

from corpusforge.cli.main import main
from tests.pipeline.sample_corpus import sample_corpus

STAGES_OFF = ["--set", "pii.enabled=false"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return sample_corpus(tmp_path_factory.mktemp("runners"), documents=120)


def _build(corpus, name, *flags):
    root, config = corpus
    run = root / name
    assert main(["build", "-c", str(config), "--run-dir", str(run), *STAGES_OFF, *flags]) == 0
    return run


def _outputs(run: pathlib.Path):
    files = {p.relative_to(run).as_posix(): p.read_bytes()
             for sub in ("clean", "removed", "rejected") for p in sorted((run / sub).glob("part-*"))}
    files["README.md"] = (run / "README.md").read_bytes()  # the dataset card: counts and fingerprints
    stats = json.loads((run / "stats.json").read_text())
    del stats["timing"]
    del stats["metrics"]  # the runner's own observations (BatchElements times its batches), not the data's counts
    return files, stats


@pytest.fixture(scope="module")
def reference(corpus):
    return _outputs(_build(corpus, "direct"))


def test_reference_build_is_balanced(reference):
    files, stats = reference
    assert stats["accounting"]["balanced"] and stats["accounting"]["kept"] > 50
    assert len([f for f in files if f.startswith("clean/")]) > 1


@pytest.mark.parametrize("name,flags", [
    ("multiprocess", ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]),
    ("portable", ["--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=LOOPBACK"]),
])
def test_runner_output_is_byte_identical(corpus, reference, name, flags, tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    assert _outputs(_build(corpus, name, *flags)) == reference
    # the PortableRunner's staging left three folders in the temporary folder per build, Beam one per Pipeline
    assert sorted(p.name for p in scratch.iterdir()) == []


@pytest.mark.parametrize("fmt,suffix", [("parquet", ".parquet"), ("jsonl", ".jsonl.zst")])
def test_every_output_format_is_byte_identical_across_runners(corpus, fmt, suffix):
    direct = _outputs(_build(corpus, f"{fmt}-direct", "--set", f"output.format={fmt}"))
    multiprocess = _outputs(_build(corpus, f"{fmt}-multiprocess", "--set", f"output.format={fmt}",
                                   "--direct_running_mode=multi_processing", "--direct_num_workers=2"))
    assert multiprocess == direct
    assert all(name.endswith(suffix) for name in direct[0] if name != "README.md")


def test_dask_cluster_output_is_byte_identical(corpus, reference):
    distributed = pytest.importorskip("distributed")
    dask = pytest.importorskip("dask")
    pytest.importorskip("apache_beam.runners.dask.dask_runner")
    # Generous timeouts: on a loaded 2-core CI machine the default 30 s reconnect window is too short.
    with dask.config.set({"distributed.comm.timeouts.connect": "120s", "distributed.comm.timeouts.tcp": "300s"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert len(cluster.scheduler_info["workers"]) == 2
        run = _build(corpus, "dask", "--runner=DaskRunner", f"--dask_client_address={cluster.scheduler_address}")
    files, stats = _outputs(run)
    ref_files, ref_stats = reference
    # Beam's Dask runner reports no Beam metrics (diagnostics; the counts in stats come from the data).
    stats.pop("metrics", None)
    assert files == ref_files and stats == {k: v for k, v in ref_stats.items() if k != "metrics"}


def test_dataflow_job_graph_builds_with_dry_run(corpus, capsys):
    pytest.importorskip("apache_beam.runners.dataflow.internal.apiclient")
    pytest.importorskip("google.cloud.storage")
    run = corpus[0] / "dataflow"
    assert main(["build", "-c", str(corpus[1]), "--run-dir", str(run), *STAGES_OFF, "--runner=DataflowRunner",
                 "--dry_run=True", "--project=demo", "--region=us-central1", "--temp_location=gs://demo/tmp"]) == 0
    assert "job graph of" in capsys.readouterr().out and not (run / "clean").exists()


def test_remote_runner_refuses_local_paths(corpus, capsys):
    assert main(["build", "-c", str(corpus[1]), "--run-dir", str(corpus[0] / "x"), "--runner=DataflowRunner",
                 "--project=demo", "--region=us-central1", "--temp_location=gs://demo/tmp"]) == 2
    assert "cannot read or write local paths" in capsys.readouterr().err



def test_shuffles_on_disk_give_the_same_bytes_in_two_worker_processes(corpus, reference):
    """Shuffles on local disk (corpusforge.core.disk_grouping): run files written by two worker processes and
    read back by either give what the in-process runner's in-memory shuffles give, card included (where
    shuffles wait is not in its configuration fingerprint)."""
    two_workers = _outputs(_build(corpus, "disk-multiprocess", "--set", "output.disk_shuffle_mb=0",
                                  "--direct_running_mode=multi_processing", "--direct_num_workers=2"))
    assert two_workers == reference
