"""A build that spills never leaves records waiting in the runner's memory: every shuffle and every Flatten of
records in its pipeline waits on local disk (corpusforge.core.disk_grouping), so peak memory does not grow with
the corpus. The class: any Beam GroupByKey, CoGroupByKey, Reshuffle or Flatten fed by records rather than by
run references. A new stage or step that adds one fails here, naming it."""
from __future__ import annotations

import pathlib
import re

import pytest
from apache_beam.portability import common_urns

from corpusforge.cli.main import main
from corpusforge.pipeline import build
from tests.pipeline.sample_corpus import sample_corpus

GBK = common_urns.primitives.GROUP_BY_KEY.urn
FLATTEN = common_urns.primitives.FLATTEN.urn

# Beam shuffles that carry one small value per key and bundle, not records: combiners (Beam lifts the partial
# combine before the shuffle) and the one-element gathers of a build's bookkeeping.
SMALL = ("SumFacts", "CountFacts", "TotalSize", "GatherLists", "SumInBundle",
         "FlattenFacts", "FlattenLists", "ListInput",
         "DoOnce")


class _Captured(Exception):
    pass


def _graphs(tmp_path, *settings, threshold: str = "output.disk_shuffle_mb=0") -> list:
    root, config = sample_corpus(tmp_path, documents=20)
    graphs = []

    def capture(pipeline):
        graphs.append(pipeline.to_runner_api())
        raise _Captured

    original = build.run_pipeline
    build.run_pipeline = capture
    try:
        with pytest.raises(_Captured):
            main(["build", "-c", str(config), "--run-dir", str(root / "run"), "--set", threshold, *settings])
    finally:
        build.run_pipeline = original
    return graphs


def _record_shuffles(graph) -> list[str]:
    transforms = graph.components.transforms
    producer = {pcoll: t.unique_name for t in transforms.values() for pcoll in t.outputs.values()}
    waiting = []
    for t in transforms.values():
        if t.spec.urn not in (GBK, FLATTEN) or t.subtransforms:
            continue
        if t.spec.urn == FLATTEN and len(t.inputs) < 2:
            continue  # fused with its one producer: nothing waits
        for pcoll in t.inputs.values():
            made_by = producer.get(pcoll, "")
            if made_by.rsplit("/", 1)[-1].startswith(("WriteRuns", "FlattenRuns")):
                continue  # run references
            if any(small in t.unique_name for small in SMALL):
                continue
            waiting.append(f"{t.unique_name} <- {made_by}")
    return sorted(set(waiting))


@pytest.mark.parametrize("settings", [(), ("--set", "output.stage_checkpoints=true")])
def test_no_records_wait_in_the_runners_memory(tmp_path, settings):
    graphs = _graphs(tmp_path, *settings)
    assert graphs
    for graph in graphs:
        assert _record_shuffles(graph) == []


def test_without_spilling_the_build_uses_beams_own_shuffles(tmp_path):
    """The check above can fail: with output.spill_text=false, records cross Beam's shuffles (as on Dataflow)."""
    (graph,) = _graphs(tmp_path, "--set", "output.spill_text=false")
    waiting = _record_shuffles(graph)
    assert any("ExactDedup" in w for w in waiting) and any("WriteShards/GroupByShard" in w for w in waiting)


def test_a_small_corpus_keeps_beams_faster_starting_shuffles(tmp_path):
    """Below output.disk_shuffle_mb (a 20-document corpus is ~30 kB) the build sets up Beam's in-memory shuffles;
    with the threshold under the corpus's size it waits on disk."""
    (graph,) = _graphs(tmp_path / "default", threshold="output.disk_shuffle_mb=64")
    assert _record_shuffles(graph)
    (graph,) = _graphs(tmp_path / "tiny", threshold="output.disk_shuffle_mb=0.001")
    assert _record_shuffles(graph) == []


BEAMS_OWN = re.compile(r"\bbeam\.(GroupByKey|CoGroupByKey|Reshuffle|Flatten|Distinct)\(")


def test_pipeline_code_shuffles_only_through_disk_grouping():
    """Every configuration, not only the one built above: pipeline code groups, reshuffles and flattens through
    corpusforge.core.disk_grouping; Beam's own transform only on a line under a comment starting "# in memory:"
    that says why what it holds is small (or held by design)."""
    root = pathlib.Path(__file__).resolve().parents[2] / "pipeline"
    offenders = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if BEAMS_OWN.search(line) and not (number and lines[number - 1].strip().startswith("# in memory:")):
                offenders.append(f"{path.relative_to(root.parent)}:{number + 1}: {line.strip()}")
    assert offenders == []


def test_a_compressed_input_counts_as_the_text_it_holds(tmp_path):
    """output.disk_shuffle_mb is compared with the input as text: a compressed file counts 5x its size (61 MB of
    .jsonl.zst, 270 MB of text, held 2.7 GB on 2 workers with in-memory shuffles when it counted as stored). The
    same threshold keeps the uncompressed file's shuffles in memory and sends the compressed one's to disk."""
    import gzip
    import json

    import random

    rng = random.Random(0)  # words that compress about 2-3x, as web text does with gzip
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    rows = "".join(json.dumps({"id": f"d{i}", "text": " ".join(rng.choice(words) for _ in range(150)) + "."}) + "\n"
                   for i in range(40))
    plain, packed = tmp_path / "plain" / "in.jsonl", tmp_path / "packed" / "in.jsonl.gz"
    for path in (plain, packed):
        path.parent.mkdir()
    plain.write_text(rows)
    packed.write_bytes(gzip.compress(rows.encode()))
    threshold = f"output.disk_shuffle_mb={plain.stat().st_size / 1e6}"  # the text's size: in memory, just
    assert 5 * packed.stat().st_size > plain.stat().st_size  # and below 5x the .gz (counted as stored, above it)

    def graph(path):
        graphs = []

        def capture(pipeline):
            graphs.append(pipeline.to_runner_api())
            raise _Captured

        original, build.run_pipeline = build.run_pipeline, capture
        try:
            with pytest.raises(_Captured):
                main(["build", "--input", str(path), "--run-dir", str(path.parent / "run"), "--set", threshold])
        finally:
            build.run_pipeline = original
        return graphs[0]

    assert _record_shuffles(graph(packed)) == []
    assert _record_shuffles(graph(plain))
