"""The report of a real build: `corpusforge build` on a tiny corpus, then `corpusforge report`."""
import json
import re

import pyarrow as pa
import pytest

from corpusforge.core.shard_files import open_shard
from corpusforge.cli import main as cli


def _paragraphs(n):
    """Real English prose: paragraphs of Python's own reference documentation."""
    import pydoc_data.topics as topics

    out = []
    for name in sorted(topics.topics):
        for block in re.split(r"\n\s*\n", topics.topics[name]):
            text = " ".join(line.strip() for line in block.splitlines() if line.strip())
            if len(text) >= 300 and not block.startswith((" ", "\t")) and ">>>" not in text:
                out.append(text)
    return out[:n]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("build")
    records = [{"id": f"doc-{i:03d}", "text": p} for i, p in enumerate(_paragraphs(24))]
    records += [{"id": f"junk-{i}", "text": "buy cheap buy cheap buy cheap " * 30} for i in range(3)]
    records += [{"id": "short", "text": "Too short."}]
    lines = [json.dumps(r) for r in records] + ["{not json"]
    (tmp / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    (tmp / "corpus.yaml").write_text(
        f"inputs:\n  - path: {tmp}/corpus.jsonl\ndedup: {{enabled: false}}\npii: {{enabled: false}}\n")
    run = tmp / "run"
    assert cli.main(["build", "--config", str(tmp / "corpus.yaml"), "--run-dir", str(run)]) == 0
    assert cli.main(["report", str(run), "--samples", "2"]) == 0
    return run


def test_report_of_a_real_build_shows_its_stats(built):
    stats = json.loads((built / "stats.json").read_text())
    page = (built / "report.html").read_text()
    text = re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]+"', "", page))
    acc = stats["accounting"]
    assert acc["rejected"] == 1 and acc["removed"] >= 4  # the junk, the short document and the bad line at least
    assert (f"{acc['input']:,} input records = {acc['kept']:,} kept + {acc['removed']:,} removed + "
            f"{acc['rejected']:,} rejected (balanced)") in text
    for row in stats["funnel"]:
        assert re.search(rf"\b{row['stage']}\s+{row['documents']:,}\s", text)
    for stage, entry in stats["removed"]["by_stage"].items():
        for reason in entry["reasons"]:
            assert reason in text
    assert "malformed_json" in text
    if stats["languages"]:
        assert re.search(rf"en\s+{stats['languages']['en']:,}\s", text)


def test_samples_are_real_removed_records(built):
    removed = pa.concat_tables(open_shard(str(f)).read_all() for f in sorted((built / "removed").glob("part-*")))
    ids = set(removed.column("id").to_pylist())
    page = (built / "report.html").read_text()
    samples = page.split('<section id="samples">')[1].split("</section>")[0]
    shown = set(re.findall(r'<span class="id">([^<]+)</span>', samples))
    assert shown and shown <= ids
    assert {"corpus/junk-0", "corpus/junk-1", "corpus/junk-2"} & shown  # ids are prefixed by the source
    # kept documents beside removed ones: the kept cards are clean documents
    clean = pa.concat_tables(open_shard(str(f)).read_all() for f in sorted((built / "clean").glob("part-*")))
    kept_column = page.split('<section id="compare">')[1].split('<span class="badge removed">')[0]
    kept = set(re.findall(r'<span class="id">([^<]+)</span>', kept_column))
    assert len(kept) == 4 and kept <= set(clean.column("id").to_pylist())  # 2 x --samples, spread over clean/


def test_stats_and_report_show_the_mixture_after_every_stage(built):
    stats = json.loads((built / "stats.json").read_text())
    funnel = {row["stage"]: row["documents"] for row in stats["funnel"]}
    assert [row["stage"] for row in stats["sources"]] == list(funnel)
    for row in stats["sources"]:  # one source, "corpus" (the file stem), holds every document of every stage
        assert set(row["by"]) == ({"corpus"} if funnel[row["stage"]] else set())
        assert sum(s["documents"] for s in row["by"].values()) == funnel[row["stage"]]
    read = stats["sources"][0]["by"]["corpus"]
    assert read["bytes"] >= stats["funnel"][0]["chars"]  # UTF-8 bytes, at least one per character
    by_lang = {row["stage"]: row["by"] for row in stats["languages_by_stage"]}
    assert by_lang["read"] == {}  # no language before the quality stage annotates it
    assert by_lang["quality"]["en"]["documents"] == stats["languages"]["en"]
    page = (built / "report.html").read_text()
    text = re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]+"', "", page))
    assert "Sources and mixture" in text and re.search(rf"corpus\s+{read['documents']:,} /", text)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_the_report_reads_every_output_format(built, fmt):
    """The same build written as Parquet or JSON Lines gives the same samples and figures."""
    run = built.parent / f"run-{fmt}"
    config = built.parent / "corpus.yaml"
    assert cli.main(["build", "--config", str(config), "--run-dir", str(run), "--set", f"output.format={fmt}"]) == 0
    assert cli.main(["report", str(run), "--samples", "2"]) == 0

    def shown(page):
        return re.findall(r'<span class="id">([^<]+)</span>', page)

    arrow, other = ((r / "report.html").read_text() for r in (built, run))
    assert shown(other) == shown(arrow) and shown(arrow)
    assert re.search(r"\d+ input records = .+? rejected \(balanced\)", arrow).group(0) in other
