"""Which runners count as Beam's DirectRunner (near-dedup's ``components: auto`` gathers only there)."""
from __future__ import annotations

import pytest

from corpusforge.core.beam_options import BeamConfig, pipeline_options, runs_on_direct_runner
from corpusforge.core.errors import UserError


@pytest.mark.parametrize("runner,direct", [
    ("DirectRunner", True), ("SwitchingDirectRunner", True), ("BundleBasedDirectRunner", True),
    ("apache_beam.runners.portability.fn_api_runner.FnApiRunner", True),
    ("DaskRunner", False), ("PrismRunner", False), ("PortableRunner", False),
    ("DataflowRunner", False), ("SparkRunner", False), ("FlinkRunner", False),
])
def test_direct_runners_by_name_through_the_build_options(runner, direct):
    """By the runner the options hold after corpusforge's substitutions (``DirectRunner`` and ``DaskRunner``
    become dotted paths of our own classes), from the config or from a ``--runner`` flag."""
    from_config = pipeline_options(BeamConfig(runner=runner)).get_all_options()
    from_flag = pipeline_options(BeamConfig(), [f"--runner={runner}"]).get_all_options()
    assert runs_on_direct_runner(from_config, "DirectRunner") is direct
    assert runs_on_direct_runner(from_flag, "DirectRunner") is direct


def test_no_runner_option_falls_back_to_the_default():
    assert runs_on_direct_runner({}, "DirectRunner")
    assert not runs_on_direct_runner({"runner": None}, "DataflowRunner")


@pytest.mark.parametrize("workers", [100000, -1])
def test_a_worker_count_that_would_hang_the_machine_is_refused(workers):
    from corpusforge.core.beam_options import BeamConfig, max_local_workers, pipeline_options

    with pytest.raises(UserError, match=f"direct_num_workers={workers} .* use 1 to {max_local_workers()}"):
        pipeline_options(BeamConfig(options={"direct_num_workers": workers}))
    with pytest.raises(UserError, match="direct_num_workers"):
        pipeline_options(BeamConfig(), [f"--direct_num_workers={workers}"])
    assert pipeline_options(BeamConfig(options={"direct_num_workers": 2})).get_all_options()["direct_num_workers"] == 2


@pytest.mark.parametrize("options", [{"direct_running_mode": 64}, {"direct_num_workers": "two"},
                                     {"direct_running_mode": "multi_processes"}])
def test_an_option_value_beam_refuses_is_one_line_not_its_usage(options, capsys):
    """Beam's argument parser prints the usage of every option (~300 lines) and exits with 2 on a value it
    refuses (the configs fuzz family's long run, seed 2026 case 143): now one UserError naming the value."""
    from corpusforge.core.beam_options import check_known_flags, option_flags

    with pytest.raises(UserError, match="Beam pipeline options .*: argument --direct_"):
        check_known_flags(option_flags(options))
    assert "usage" not in capsys.readouterr().err
