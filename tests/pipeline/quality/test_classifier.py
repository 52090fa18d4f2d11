"""Train a tiny fastText classifier on generated data (through the CLI), then filter with it in Beam."""
from __future__ import annotations

import argparse
import json
import random

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.document import Document
from corpusforge.core.errors import UserError
from corpusforge.core.shard_files import ShardFormat, write_shard
from corpusforge.pipeline.quality import ClassifierConfig, ClassifierFilter, Quality, QualityConfig
from corpusforge.pipeline.quality.classifier import QualityClassifier, pareto_keep, read_texts, train_classifier
from corpusforge.cli.quality import register

NOUNS = "river town mill bridge market garden school library harbour station forest valley".split()
VERBS = "crosses follows joins reaches borders faces circles passes".split()
SPAM = "cheap buy now best price free click deal discount offer win casino bonus viagra".split()


def good(rng: random.Random) -> str:
    return (f"The {rng.choice(NOUNS)} {rng.choice(VERBS)} the old {rng.choice(NOUNS)}, and the "
            f"{rng.choice(NOUNS)} is close to the {rng.choice(NOUNS)} of the town.")


def bad(rng: random.Random) -> str:
    return " ".join(rng.choice(SPAM) for _ in range(rng.randint(8, 16))) + " !!!"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("clf")
    rng = random.Random(0)
    (d / "pos.txt").write_text("\n".join(good(rng) for _ in range(300)) + "\n", encoding="utf-8")
    # negatives as an Arrow shard, like a run's clean/ output
    table = pa.table({"id": [str(i) for i in range(300)], "text": [bad(rng) for _ in range(300)]})
    with pa.OSFile(str(d / "neg.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["quality", "train", "-p", str(d / "pos.txt"), "-n", str(d / "neg.arrow"),
                              "-o", str(d / "model.bin"), "--epoch", "10", "--bucket", "10000", "--json"])
    assert args.func(args) == 0
    return str(d / "model.bin")


def test_training_reports_held_out_metrics(model, capsys, tmp_path):
    rng = random.Random(1)
    result = train_classifier([good(rng) for _ in range(100)], [bad(rng) for _ in range(100)], tmp_path / "m.bin",
                              valid_fraction=0.2, epoch=10, bucket=10_000)
    assert result.n_valid == 40 and result.n_train == 160
    assert result.precision >= 0.9 and result.recall >= 0.9
    assert result.f1 == pytest.approx(2 * result.precision * result.recall / (result.precision + result.recall))
    clf = QualityClassifier(model, "hq")
    hi, lo = clf.score([good(rng), bad(rng)])
    assert hi > 0.9 and lo < 0.1


def test_cli_prints_metrics_as_json(model, tmp_path, capsys):
    rng = random.Random(2)
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps({"text": good(rng)}) for _ in range(40)), encoding="utf-8")
    (tmp_path / "n.txt").write_text("\n".join(bad(rng) for _ in range(40)), encoding="utf-8")
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["quality", "train", "-p", str(tmp_path / "p.jsonl"), "-n", str(tmp_path / "n.txt"),
                              "-o", str(tmp_path / "m.bin"), "--json", "--valid-fraction", "0.25", "--bucket", "10000"])
    assert args.func(args) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["n_valid"] == 20 and set(metrics) >= {"precision", "recall", "f1"}


def test_bad_inputs_are_user_errors(tmp_path, model):
    with pytest.raises(UserError, match="does not exist"):
        list(read_texts(tmp_path / "missing.txt"))
    with pytest.raises(UserError, match="at least 2 positive"):
        train_classifier(["only one"], ["a", "b"], tmp_path / "m.bin", bucket=1000)
    with pytest.raises(UserError, match="no label 'toxic'"):
        QualityClassifier(model, "toxic")


def test_pareto_rule_is_deterministic_per_document():
    decisions = [pareto_keep(0.3, 9.0, f"doc-{i}") for i in range(2000)]
    assert decisions == [pareto_keep(0.3, 9.0, f"doc-{i}") for i in range(2000)]
    assert all(pareto_keep(1.0, 9.0, f"doc-{i}") for i in range(100))
    # P(Lomax(9) > 0.7) = 1.7 ** -9 ~ 0.0085
    assert 0.002 < sum(decisions) / len(decisions) < 0.02
    assert decisions != [pareto_keep(0.3, 9.0, f"doc-{i}", seed=1) for i in range(2000)]
    # an id with a lone surrogate (a transform used outside a build, whose reader repairs them) is drawn too
    assert pareto_keep(0.3, 9.0, "doc-\ud800") == pareto_keep(0.3, 9.0, "doc-\ud800")


def test_classifiers_in_sequence_each_named(model):
    rng = random.Random(3)
    docs = [Document(id=f"g{i}", text=good(rng), source="t") for i in range(3)] + \
           [Document(id=f"b{i}", text=bad(rng), source="t") for i in range(2)]
    cfg = QualityConfig(
        classifiers=[
            ClassifierConfig(name="quality", model=model, label="hq", threshold=0.5),
            # the same model used as a "spam" detector: drop documents scoring above 0.5 on lq
            ClassifierConfig(name="spam", model=model, label="lq", threshold=0.5, keep_above=False),
        ],
    )
    cfg.langid.enabled = False
    cfg.junk.enabled = cfg.gopher.enabled = cfg.repetition.enabled = cfg.c4.enabled = cfg.fineweb.enabled = False
    with TestPipeline() as p:
        out = p | beam.Create(docs) | Quality(cfg)
        assert_that(out.kept | beam.Map(lambda d: (d.id, d.annotations["quality_score"] > 0.9, d.annotations["spam_score"] < 0.1)),
                    equal_to([("g0", True, True), ("g1", True, True), ("g2", True, True)]), label="kept")
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.reason)),
                    equal_to([("b0", "classifier_quality_low_score"), ("b1", "classifier_quality_low_score")]),
                    label="removed")


def test_classifier_filter_pareto_mode_alone(model):
    rng = random.Random(4)
    docs = [Document(id=f"b{i}", text=bad(rng), source="t") for i in range(40)]
    cfg = ClassifierConfig(name="quality", model=model, mode="pareto", pareto_alpha=9.0)
    expected = []
    clf = QualityClassifier(model, "hq")
    for d, s in zip(docs, clf.score([d.text for d in docs])):
        if pareto_keep(s, 9.0, d.id, 0):
            expected.append(d.id)
    with TestPipeline() as p:
        out = p | beam.Create(docs) | ClassifierFilter(cfg)
        assert_that(out.kept | beam.Map(lambda d: d.id), equal_to(expected), label="kept")
        assert_that(out.removed | beam.Map(lambda r: r.reason),
                    equal_to(["classifier_quality_pareto"] * (40 - len(expected))), label="removed")


@pytest.mark.parametrize("fmt", [ShardFormat("arrow"), ShardFormat("parquet"), ShardFormat("jsonl", "zstd")],
                         ids=lambda f: f.suffix)
def test_training_texts_come_from_a_runs_shards_in_every_format(tmp_path, fmt):
    rows = [{"id": str(i), "text": f"text number {i}"} for i in range(5)] + [{"id": "blank", "text": "  "}]
    schema = pa.schema([("id", pa.string()), ("text", pa.large_string())])
    write_shard(str(tmp_path / f"part-00000-of-00001{fmt.suffix}"), schema, rows, fmt)
    assert list(read_texts(tmp_path)) == [f"text number {i}" for i in range(5)]


@pytest.mark.parametrize("content,reason", [
    (b'{"text": "a", "m": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "too_deep"),
    (b'{"text": "a", "n": ' + b"9" * 5000 + b"}\n", "number_too_large"),
])
def test_training_texts_that_no_parser_reads_are_one_line_errors(tmp_path, content, reason):
    # issue #35/#36: quality train reads data with the readers' error handling (these were tracebacks)
    from corpusforge.core.errors import UserError
    from corpusforge.pipeline.quality.classifier import read_texts

    (tmp_path / "hq.jsonl").write_bytes(b'{"text": "fine"}\n' + content)
    with pytest.raises(UserError, match=rf"hq.jsonl:2: not a JSON object \({reason}\)"):
        list(read_texts(tmp_path / "hq.jsonl"))
    (tmp_path / "hq.txt").write_bytes(b"fine\ncaf\xe9\n")
    with pytest.raises(UserError, match="hq.txt cannot be read: invalid_utf8"):
        list(read_texts(tmp_path / "hq.txt"))


def test_a_training_line_past_the_limit_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    from corpusforge.core.errors import UserError
    from corpusforge.pipeline.quality import classifier

    monkeypatch.setattr(classifier, "MAX_LINE_BYTES", 1 << 20)
    (tmp_path / "hq.txt").write_bytes(b"fine\n" + b"x" * (3 << 20) + b"\nafter\n")
    with pytest.raises(UserError, match=r"hq.txt:2: a line of 3,145,7\d\d bytes or more \(at most 1 MiB"):
        list(classifier.read_texts(tmp_path / "hq.txt"))


@pytest.mark.parametrize("ext", [".gz", ".zst", ".bz2", ".xz"])
def test_training_texts_in_every_compression_the_build_reads(tmp_path, ext):
    """quality train reads what the build reads: x.parquet.zst was handed to pyarrow raw, x.txt.gz read as text
    lines of compressed bytes (invalid_utf8), x.jsonl.bz2 and x.arrow.xz left out of a folder."""
    import bz2
    import gzip
    import lzma

    import pyarrow.parquet as pq
    import zstandard

    codec = {".gz": lambda d: gzip.compress(d, mtime=0), ".zst": zstandard.ZstdCompressor().compress,
             ".bz2": bz2.compress, ".xz": lzma.compress}[ext]
    texts = [f"text number {i}" for i in range(5)]
    table = pa.table({"id": [str(i) for i in range(5)], "text": texts})
    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(table, plain / "a.parquet")
    with pa.ipc.new_file(plain / "b.arrow", table.schema) as writer:
        writer.write_table(table)
    (plain / "c.jsonl").write_text("".join(f'{{"text": "{t}"}}\n' for t in texts))
    (plain / "d.txt").write_text("".join(f"{t}\n" for t in texts))
    packed = tmp_path / "packed"
    packed.mkdir()
    for f in sorted(plain.iterdir()):
        (packed / (f.name + ext)).write_bytes(codec(f.read_bytes()))
        assert list(read_texts(packed / (f.name + ext))) == texts, f.name + ext
    assert list(read_texts(packed)) == texts * 4
