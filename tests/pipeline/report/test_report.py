"""`corpusforge report` on a hand-written run directory with known numbers, and on partial runs."""
import base64
import json
import pathlib
import re

import pytest

from corpusforge.cli import main as cli
from corpusforge.core.errors import UserError
from corpusforge.pipeline.report import page as report_page
from corpusforge.pipeline.report import write_report
from corpusforge.pipeline.report.collect import _Picker, _strided, collect, read_metrics
from tests.pipeline.report.rundir import NASTY, STATS, write_run

FILTER_JS = (pathlib.Path(report_page.__file__).parent / "templates" / "filter.js").read_text().strip()


def _text(page: str) -> str:
    """The visible text, roughly: tags dropped, entities kept."""
    return re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]+"', "", page))


def test_page_has_every_section_and_the_numbers(full_run):
    _, page, _ = full_run
    text = _text(page)
    for section in ("funnel", "sources", "reasons", "length", "languages", "mixture", "values", "dedup",
                    "near-duplicates", "pii", "compare", "samples", "rejected", "tokenizer", "training", "details"):
        assert f'<section id="{section}">' in page
    # header cards and funnel
    assert "124" in text and "80" in text and "64.5% of input" in text
    for row in STATS["funnel"]:
        assert f"{row['documents']:,}" in text and f"{row['chars']:,}" in text
    assert "124 input records = 80 kept + 40 removed + 4 rejected (balanced)" in text
    # reasons and edits
    for reason in ("gopher_short_doc", "langid_low_score", "minhash_near_duplicate", "exact_duplicate", "pii_dense",
                   "c4_lines_removed"):
        assert reason in text
    # languages (exact kept counts, sampled removed) and scores of kept and removed documents
    assert re.search(r"en\s+77\s+96.2%", text)
    # every removed record was read, so the column is "removed", not "removed (sample)"; the card counts the
    # kept documents' languages and says how many more only removed ones have
    assert "removed (sample)" not in text and "removed counts come from all " in text
    assert re.search(r"languages kept\s+2\s+en 96% of kept", text)
    assert "rejected as bad input" in text and "unreadable" not in text.split("Funnel")[0]
    assert "lang_score" in text and "quality_score" in text
    # duplicates: clusters {5: 1, 3: 4, 2: 3}
    assert re.search(r"clusters\s+8\b", text) and re.search(r"largest cluster\s+5\b", text)
    # PII entity types and per-document counts
    for entity in ("EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD"):
        assert entity in page
    assert re.search(r"entities masked\s+12\b", text)
    # rejected
    assert "malformed_json" in text and "web.jsonl:3" in text and "Expecting value" in text
    # the token shards' mixture before and after weighting
    assert re.search(r"books\s+1\s+1,500\s+16.7%\s+3\s+30\s+4,500\s+50.0%", text)
    assert re.search(r"web\s+1\s+7,500\s+83.3%\s+0.6\s+46\s+4,500\s+50.0%", text) and "Token budget 9,000" in text
    assert re.search(r"en\s+8,000\s+88.9%\s+7,000\s+77.8%", text) and re.search(r"de\s+1,000\s+11.1%\s+2,000\s+22.2%", text)
    # tokenizer
    assert "4,096" in text and "4.012" in text and "3.988" in text and "␣internationalization" in text
    assert "&lt;tag&gt;" in page
    # training: final validation perplexity, tokens/s, model
    assert re.search(r"final validation perplexity\s+664\.\d\d", text)
    assert re.search(r"median tokens/s\s+1,055", text) and "d_model 64" in text


def test_page_is_self_contained_and_escapes_all_text(full_run):
    _, page, _ = full_run
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    # One script, the page's own reasons filter, inline; a policy that lets the browser load nothing else.
    scripts = re.findall(r"<script[^>]*>", page, re.I)
    assert scripts == ["<script>"] and FILTER_JS in page
    assert ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">") in page
    assert "<link" not in page.lower() and "@import" not in page
    assert "url(" not in page  # no external CSS resources either
    images = re.findall(r'<img src="([^"]+)"', page)
    assert len(images) >= 7
    for uri in images:
        assert uri.startswith("data:image/png;base64,")
        assert base64.b64decode(uri.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    # the removed document with markup in it is shown as text
    assert NASTY not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page  # markupsafe writes " as &#34;
    assert "&lt;b&gt;bold&lt;/b&gt;" in page


def test_samples_spread_over_each_top_reason_and_note_what_they_are(full_run):
    run, html, _ = full_run
    data = collect(str(run), per_reason=3, text_chars=100)
    groups = {(g.stage, g.reason): g for g in data.removed_samples}
    assert list(groups) == [("quality", "gopher_short_doc"), ("dedup", "minhash_near_duplicate"),
                            ("quality", "langid_low_score"), ("dedup", "exact_duplicate"), ("pii", "pii_dense")]
    short = groups[("quality", "gopher_short_doc")]
    assert [s.id for s in short.samples] == ["web/rem-quality-0000", "web/rem-quality-0007", "web/rem-quality-0014"]
    assert short.samples[0].chars > 100 and len(short.samples[0].text) == 100
    assert len(groups[("pii", "pii_dense")].samples) == 2
    assert "more characters" in html and "personal data replaced by placeholders" in html
    assert groups[("dedup", "minhash_near_duplicate")].samples[0].details == {"survivor_id": "web/doc-0001",
                                                                              "cluster_size": 5}


def test_cluster_sizes_from_survivors_and_reported_sizes(full_run):
    run, _, _ = full_run
    assert dict(collect(str(run)).cluster_sizes) == {5: 1, 3: 4, 2: 3}


def test_distributions_are_sampled_when_the_run_is_large(full_run):
    run, _, _ = full_run
    data = collect(str(run), sample_rows=10)
    assert data.clean_coverage.rows_total == 80 and data.clean_coverage.rows_read == 10
    assert data.removed_coverage.rows_total == 40 and data.removed_coverage.rows_read == 10
    assert len(data.values["lang_score"]["kept"]) == 10
    assert "a sample of 10 of 80" in report_page.values_section(data).html()


def test_cli_prints_summary(full_run):
    run, _, printed = full_run
    assert "records in: 124" in printed and "kept: 80" in printed
    assert "duplicates: 8 clusters, largest 5 documents" in printed
    assert "vocabulary 4,096" in printed and "val loss 6.5000 (ppl 664.69) at step 100" in printed
    assert f"wrote {run / 'report.html'}" in printed


def test_output_option_and_run_dir_from_config(tmp_path, capsys):
    run = write_run(tmp_path / "run", build=False, training=False)
    out = tmp_path / "elsewhere" / "r.html"
    assert cli.main(["report", str(run), "--output", str(out)]) == 0
    assert out.exists() and not (run / "report.html").exists()
    assert cli.main(["report", "--set", f"output.run_dir={run}"]) == 0
    assert (run / "report.html").exists()


def test_a_run_given_as_o_is_one_line_saying_to_give_it_first(tmp_path, capsys):
    # -o is the run directory for every other command; for report it names the page
    run = write_run(tmp_path / "run", build=False, training=False)
    assert cli.main(["report", "-o", str(run), "--set", f"output.run_dir={tmp_path / 'latest'}"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"corpusforge: error: report's -o names the page it writes, and {run} is a directory; give the run first: "
        f"corpusforge report {run} (or --run-dir {run})"]
    assert not (run / "report.html").exists()


@pytest.mark.parametrize("parts, present, absent", [
    ({"build": False, "training": False}, ["vocabulary 4,096"], ["No build in this run", "No training in this run"]),
    ({"build": False, "tokenizer": False}, ["final validation perplexity"], ["No tokenizer in this run"]),
])
def test_partial_runs_show_what_exists(tmp_path, parts, present, absent):
    run = write_run(tmp_path / "run", **parts)
    write_report(str(run))
    text = _text((run / "report.html").read_text())
    for needle in present + absent:
        assert needle in text


def test_build_without_tokenizer_training_or_audit_records(tmp_path):
    run = write_run(tmp_path / "run", tokenizer=False, training=False)
    for sub in ("removed", "rejected"):
        for f in (run / sub).iterdir():
            f.unlink()
        (run / sub).rmdir()
    data = collect(str(run))
    assert data.tokenizer is None and data.training is None and not data.removed_samples
    text = _text(report_page.samples_section(data, 3).html() + report_page.rejected_section(data).html()
                 + report_page.tokenizer_section(data).html() + report_page.training_section(data).html())
    assert "output.write_removed is off" in text and "output.write_rejected is off" in text
    assert "No tokenizer in this run" in text and "No training in this run" in text
    assert "malformed_json" in text  # counts still come from stats.json


def test_errors_a_user_can_act_on(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["report", str(tmp_path / "empty")]) == 2
    assert "run `corpusforge build` first" in capsys.readouterr().err
    run = write_run(tmp_path / "run", tokenizer=False, training=False)
    (run / "stats.json").write_text("{not json")
    assert cli.main(["report", str(run)]) == 2
    assert "stats.json is not valid JSON" in capsys.readouterr().err
    assert cli.main(["report", str(run), "--samples", "0"]) == 2
    assert "--samples must be at least 1" in capsys.readouterr().err


def test_metrics_log_tolerates_only_a_cut_last_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "lo')
    assert read_metrics(str(path)) == [{"step": 1, "loss": 2.0}]
    path.write_text('{"step": 1, "lo\n{"step": 2, "loss": 2.0}\n')
    with pytest.raises(UserError, match="line 1 is not valid JSON"):
        read_metrics(str(path))


def test_strided_positions_continue_across_batches():
    got = [offset + i for offset, rows in ((0, 5), (5, 7), (12, 3)) for i in _strided(offset, rows, 4).tolist()]
    assert got == [0, 4, 8, 12]


def test_picker_spreads_over_occurrences_and_never_exceeds_k():
    import pyarrow as pa

    picker = _Picker({("a",): 10, ("b",): 2}, k=3)
    picked = {("a",): [], ("b",): []}
    column = ["a", "b", "a", "a", "a", "b", "a", "a", "a", "a", "a", "a"]  # ten a's, two b's
    for start in range(0, len(column), 4):
        for key, rows in picker.positions([pa.array(column[start:start + 4])]).items():
            picked[key].extend(start + int(r) for r in rows)
    assert picked == {("a",): [0, 6, 11], ("b",): [1, 5]}  # the 1st, 5th and 10th a; both b
    assert picker.done()




def test_details_fold_the_beam_metrics_of_stats_json():
    metrics = {"counters": {"dedup": {"exact_duplicate": 1234}},
               "distributions": {"BatchElements": {"batch_size": {"count": 4, "sum": 297, "min": 41, "max": 128,
                                                                  "mean": 74.25}}}}
    text = _text(str(report_page._metrics_block(metrics)))
    assert "Beam metrics" in text and re.search(r"dedup\s+exact_duplicate\s+1,234", text)
    assert "n=4, mean 74.25, min 41, max 128" in text
    unavailable = str(report_page._metrics_block({"unavailable": "NotImplementedError: no metrics <here>"}))
    assert "reported no Beam metrics (NotImplementedError: no metrics &lt;here&gt;)" in unavailable
    assert str(report_page._metrics_block({"counters": {}, "distributions": {}})) == ""


def test_the_page_scrubs_what_it_shows_even_from_raw_removed_records(tmp_path):
    """A run with pii.scrub_removed false keeps raw text in removed/ and rejected/; the page still shows
    none of it in clear, says so in a banner, and shows an old manifest's salt only as set."""
    import json

    from corpusforge.pipeline.document import REJECTED_SCHEMA, REMOVED_SCHEMA
    from corpusforge.pipeline.shards import write_arrow_file

    run = write_run(tmp_path / "run", tokenizer=False, training=False)
    manifest = json.loads((run / "manifest.json").read_text())
    salt = "an-old-manifest-salt-in-clear"
    manifest["config"]["pii"] = {"enabled": True, "scrub_removed": False, "hash_salt": salt,
                                 "actions": {"PHONE_NUMBER": "hash"}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    stats = json.loads((run / "stats.json").read_text())
    stats["rejected"]["reasons"]["stage_error"] = 1
    (run / "stats.json").write_text(json.dumps(stats))
    raw = ("Write to jane.doe@example.org or call +1-202-555-0173. " * 30)  # longer than --text-chars
    removed = [{"id": f"web/jane.doe@example.org#{i}", "source": "web", "stage": "quality", "reason": "gopher_short_doc",
                "details": json.dumps({"survivor_id": "web/bob@example.org"}), "text": raw, "annotations": "{}"}
               for i in range(15)]
    write_arrow_file(str(run / "removed" / "part-00000-of-00001.arrow"), REMOVED_SCHEMA, removed)
    rejected = [{"source": "web", "path": "web.jsonl", "position": p, "reason": "malformed_json",
                 "detail": "Expecting value", "raw": '{"text": "call +1-202-555-0173'} for p in (3, 9, 12)]
    # a stage_error's path is the id of the document the stage raised on
    rejected.append({"source": "web", "path": "web/mary.major@example.org", "position": -1, "reason": "stage_error",
                     "detail": "quality: ValueError: boom", "raw": "Hi"})
    write_arrow_file(str(run / "rejected" / "part-00000-of-00001.arrow"), REJECTED_SCHEMA, rejected)
    write_report(str(run), text_chars=40)
    page = (run / "report.html").read_text()
    for value in ("jane.doe@example.org", "bob@example.org", "mary.major@example.org", "202-555-0173", salt):
        assert value not in page
    assert "Write to &lt;EMAIL&gt; or call &lt;PHONE&gt;" in page and "&lt;PHONE&gt;" in page.split('id="rejected"')[1]
    assert "pii.scrub_removed is false" in page and '<div class="banner"' in page
    assert "&lt;secret set, fingerprint hmac-sha256:" in page


def test_no_banner_when_the_run_wrote_scrubbed_files(full_run):
    _, page, _ = full_run
    assert '<div class="banner"' not in page


def _section(page: str, id: str) -> str:
    return page.split(f'<section id="{id}">')[1].split("</section>")[0]


def test_sources_section_gives_each_source_its_funnel(full_run):
    import pyarrow as pa

    from corpusforge.core.shard_files import open_shard

    run, page, _ = full_run
    clean = pa.concat_tables(open_shard(str(f)).read_all() for f in sorted((run / "clean").glob("part-*")))
    chars = sum(len(t) for t in clean.column("text").to_pylist())
    # web: 124 input = 4 rejected + 0 (normalize) + 23 (quality) + 15 (dedup) + 2 (pii) removed + 80 kept
    assert re.search(rf"web\s+124\s+4\s+0\s+23\s+15\s+2\s+80\s+64.5%\s+{chars:,}\s", _text(_section(page, "sources")))
    assert "input = kept + removed + rejected" in _section(page, "sources")


def test_tokens_per_source_from_the_token_shards(tmp_path):
    import pyarrow as pa

    from corpusforge.pipeline.report.collect import tokens_by_source

    schema = pa.schema([("id", pa.string()), ("tokens", pa.large_list(pa.uint16())), ("source", pa.string())])
    (tmp_path / "train").mkdir()
    table = pa.table({"id": ["a", "b", "c"], "tokens": [[1, 2, 3], [4], [5, 6]], "source": ["web", "books", "web"]},
                     schema=schema)
    with pa.ipc.new_file(str(tmp_path / "train" / "part-0.arrow"), schema) as writer:
        writer.write_table(table)
    manifest = {"splits": {"train": {"shards": ["train/part-0.arrow"]}, "val": {"shards": []}}}
    assert tokens_by_source(str(tmp_path), manifest) == {("web", "train"): 5, ("books", "train"): 1}


def test_near_duplicates_beside_their_survivors_with_the_shared_text_marked(full_run):
    from tests.pipeline.report.rundir import NEAR_DUPLICATE_TAIL

    run, page, _ = full_run
    section = _section(page, "near-duplicates")
    assert section.count('<div class="pair">') == 3
    assert '<span class="badge kept">survivor</span> web/doc-0001' in section
    marked = re.findall(r"<mark>(.*?)</mark>", section, re.S)
    assert marked and all("Kept document 1 with enough words" in m for m in marked[:2])
    assert all(NEAR_DUPLICATE_TAIL not in m for m in marked) and NEAR_DUPLICATE_TAIL in section


def test_typed_annotations_thresholds_and_a_scrubbed_near_duplicate(tmp_path):
    """Annotations and details as Arrow structs (typed annotations): the values get histograms with the run's
    threshold, and a near-duplicate pair holding an email shows it only as a placeholder."""
    import json

    import pyarrow as pa

    from corpusforge.pipeline.document import REMOVED_SCHEMA
    from corpusforge.pipeline.shards import write_arrow_file

    run = write_run(tmp_path / "run", tokenizer=False, training=False)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"]["quality"] = {"gopher": {"enabled": True, "min_words": 50, "max_words": 100000}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    measured = pa.struct([("gopher", pa.struct([("n_words", pa.int64())]))])
    annotations = pa.struct([("lang", pa.string()), ("lang_score", pa.float64()), ("quality", measured)])
    details = pa.struct([("survivor_id", pa.string()), ("similarity", pa.float64()), ("quality", measured)])
    text = "Write to jane.doe@example.org about the meeting on the river bank tomorrow morning. " * 3
    clean_schema = pa.schema([("id", pa.string()), ("text", pa.large_string()), ("source", pa.string()),
                              ("metadata", pa.string()), ("annotations", annotations)])
    kept = [{"id": f"web/k{i}", "text": text if i == 0 else f"Kept {i}. " * 60, "source": "web", "metadata": "{}",
             "annotations": {"lang": "en", "lang_score": 0.9, "quality": {"gopher": {"n_words": 60 + i}}}}
            for i in range(6)]
    for f in (run / "clean").iterdir():
        f.unlink()
    write_arrow_file(str(run / "clean" / "part-00000-of-00001.arrow"), clean_schema, kept)
    removed_schema = pa.schema([field if field.name not in ("details", "annotations") else
                                pa.field(field.name, details if field.name == "details" else annotations)
                                for field in REMOVED_SCHEMA])
    removed = [{"id": f"web/r{i}", "source": "web", "stage": "quality", "reason": "gopher_short_doc",
                "details": {"quality": {"gopher": {"n_words": 10 + i}}}, "text": "Too short.",
                "annotations": {"lang": "en", "lang_score": 0.8, "quality": {"gopher": {"n_words": 10 + i}}}}
               for i in range(3)]
    removed.append({"id": "web/dup", "source": "web", "stage": "dedup", "reason": "minhash_near_duplicate",
                    "details": {"survivor_id": "web/k0", "similarity": 0.91}, "text": text + "Sent from my phone.",
                    "annotations": {"lang": "en", "lang_score": 0.9, "quality": {"gopher": {"n_words": 45}}}})
    write_arrow_file(str(run / "removed" / "part-00000-of-00001.arrow"), removed_schema, removed)
    data = collect(str(run))
    values = data.values["quality.gopher.n_words"]
    assert sorted(values["kept"]) == [60, 61, 62, 63, 64, 65] and values["removed"] == [10, 11, 12]
    assert values["other"] == [45]  # passed the rule, removed later by dedup
    page = report_page.render(data)
    assert "quality.gopher.min_words = 50" in _text(_section(page, "values"))
    pair = _section(page, "near-duplicates")
    assert "jane.doe@example.org" not in page and "&lt;EMAIL" in pair and "estimated similarity 0.91" in pair
    assert re.search(r"<mark>[^<]*about the meeting", pair)


def test_electra_runs_show_each_half_not_a_perplexity(tmp_path, capsys):
    run = write_run(tmp_path / "run", build=False, training=True)
    val = {"step": 100, "split": "val", "loss": 3.2, "generator_loss": 2.9, "discriminator_loss": 0.31,
           "discriminator_accuracy": 0.874, "replaced_share": 0.13, "tokens": 1024}
    (run / "model" / "metrics.jsonl").write_text(json.dumps(val) + "\n")
    assert cli.main(["report", str(run)]) == 0
    printed = capsys.readouterr().out
    assert "val loss 3.2000 (generator 2.9000, discriminator accuracy 0.874) at step 100" in printed
    page = (run / "report.html").read_text()
    training = page.split('<section id="training">')[1].split("</section>")[0]
    assert "discriminator accuracy" in training and "87.4" in training and "13.0" in training
    assert "perplexity" not in training


def test_a_report_into_a_run_another_command_holds_never_changes_its_marker(tmp_path, capsys):
    """RUN/report.html is recorded in RUN's marker: done without RUN's lock, it wrote the marker read before over
    what another command recorded meanwhile (its outputs then unrecorded, never replaced again). Now the report takes
    the lock as a claim. While a command holds RUN for its whole run (a training of hours), a page the marker records
    already is replaced without touching the marker; a first page is refused in one line naming that command."""
    from corpusforge.core import rundir
    from tests.lock_holder import held_by_another_process

    run = write_run(tmp_path / "run")
    rundir.write_marker(str(run), {"outputs": {"clean": None}, "derived": {}, "corpus_fingerprint": "f"})
    with held_by_another_process(run, "train") as pid:
        code = cli.main(["report", str(run)])
        err = capsys.readouterr().err
        assert code != 0 and f"in use by `corpusforge train` (pid {pid} on " in err and "--output FILE" in err, err
        assert err.count("\n") == 1 and not (run / "report.html").exists()
    assert cli.main(["report", str(run)]) == 0 and (run / "report.html").is_file()  # once it is free: recorded
    marker = (run / rundir.MARKER).read_bytes()
    (run / "report.html").write_text("stale")
    with held_by_another_process(run, "train"):
        assert cli.main(["report", str(run)]) == 0  # recorded already: replaced, the marker untouched
    assert (run / "report.html").read_text(encoding="utf-8") != "stale" and (run / rundir.MARKER).read_bytes() == marker
