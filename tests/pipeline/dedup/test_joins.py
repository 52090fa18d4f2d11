"""``dedup.joins``: the verdicts joined to the documents by a shuffle (``CoGroupByKey``) or as side inputs decide
the same, on a corpus with every kind of decision, documents sharing an id, and documents that raise."""
from __future__ import annotations

import collections
import os

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.dedup import Dedup, DedupConfig, ExactDedup, NearDedup, NearDedupConfig
from corpusforge.pipeline.dedup.boilerplate import LineAndSentenceDedup
from corpusforge.pipeline.dedup.common import BATCHES, SHUFFLE, SIDE_INPUT, join_mode
from corpusforge.pipeline.document import Document
from corpusforge.pipeline.stage import StageContext
from tests.pipeline.dedup.corpus import edit_words, paragraphs
from tests.pipeline.dedup.test_boilerplate import corpus as boilerplate_corpus

MODES = [SHUFFLE, SIDE_INPUT]
BASES = paragraphs(8)


def mixed_corpus() -> list[Document]:
    """Boilerplate lines and sentences (test_boilerplate's corpus, which holds one id twice), exact copies,
    near copies, and more ids that two documents share: exact copies of each other, one copy of a third
    document's text, near copies, and a survivor."""
    docs = boilerplate_corpus(120, 3)
    for c in range(4):
        base = BASES[c]
        docs += [Document(f"e{c}", base, "web"), Document(f"e{c}-copy", base.upper(), "web"),
                 Document(f"n{c}", edit_words(base, 0.03, c) + " Extra words at the end.", "web")]
    docs += [Document("shared-a", BASES[5], "web"), Document("shared-a", BASES[5], "web"),  # same text, same id
             Document("shared-b", BASES[6], "web", annotations={"quality_score": 0.9}),
             Document("shared-b", BASES[0] + " ", "web"),  # one of them an exact copy of e0 (ranked after it)
             Document("shared-c", edit_words(BASES[7], 0.02, 9), "web"),
             Document("shared-c", edit_words(BASES[7], 0.02, 10), "web"), Document("c7", BASES[7], "web")]
    return docs


def _rows(outputs, label: str):
    kept = outputs.kept | f"{label}Kept" >> beam.Map(lambda d: (label, "kept", d.id, d.text, ()))
    removed = outputs.removed | f"{label}Removed" >> beam.Map(
        lambda r: (label, r.reason, r.doc.id, r.doc.text, tuple(sorted(r.details.items()))))
    parts = [kept, removed]
    if outputs.edits is not None:  # summed per counter, as the build's stats do (a join may sum them per batch)
        parts.append(outputs.edits | f"{label}Edits" >> beam.Map(lambda e: (e[1], e[2]))
                     | f"{label}SumEdits" >> beam.CombinePerKey(sum)
                     | f"{label}EditRows" >> beam.Map(lambda kv: (label, "edit", kv[0], str(kv[1]), ())))
    if outputs.errors is not None:
        parts.append(outputs.errors | f"{label}Errors" >> beam.Map(lambda r: (label, "error", r.path, r.detail, ())))
    return parts | f"{label}All" >> beam.Flatten()


def _same_in_both_modes(expect_kinds):
    def check(actual):
        by_mode = collections.defaultdict(list)
        for mode, *row in actual:
            by_mode[mode].append(tuple(row))
        shuffle = sorted(by_mode[SHUFFLE])
        for mode in set(by_mode) - {SHUFFLE}:
            assert sorted(by_mode[mode]) == shuffle, mode
        kinds = collections.Counter(row[0] for row in shuffle)
        assert all(kinds[kind] for kind in expect_kinds), kinds  # not a vacuous comparison
    return check


def _counters(result, mode: str) -> dict:
    counters = result.metrics().query(MetricsFilter().with_step(mode))["counters"]
    totals: dict = collections.Counter()
    for counter in counters:
        totals[(counter.key.metric.namespace, counter.key.metric.name)] += counter.committed
    return dict(totals)


def run_both(docs, transform, expect_kinds, runner: str = "DirectRunner", modes=MODES) -> tuple:
    """``transform(mode)`` on ``docs`` in each of ``modes`` (both, by default) in one pipeline: same rows
    (asserted), and each mode's counters."""
    p = beam.Pipeline(runner=runner)
    created = p | beam.Create(docs)
    rows = [_rows(created | mode >> transform(mode), mode) for mode in modes]
    assert_that(rows | "Both" >> beam.Flatten(), _same_in_both_modes(expect_kinds))
    result = p.run()
    result.wait_until_finish()
    return tuple(_counters(result, mode) for mode in modes)


def dedup_stage(mode: str) -> Dedup:
    config = DedupConfig(joins=mode)
    config.near.max_rounds = 4
    config.lines.max_occurrences = config.sentences.max_occurrences = 3
    return Dedup(config, StageContext(direct_runner=True))


@pytest.mark.parametrize("runner", ["DirectRunner", "BundleBasedDirectRunner"])
def test_the_dedup_stage_decides_the_same_in_both_modes(runner):
    """Every decision, detail, edit and counter, including ``documents_sharing_an_id``: the documents that
    share an id take the shuffle join in both modes."""
    shuffle, side = run_both(mixed_corpus(), dedup_stage, [
        "kept", "exact_duplicate", "near_duplicate", "line_dedup_too_short", "sentence_dedup_too_short", "edit"],
        runner)
    if runner == "BundleBasedDirectRunner":
        return  # it drops the counters of a ParDo whose elements waited for their side inputs (not a build's runner)
    assert side == shuffle
    # shared-a (2, exact) + shared-b (2, exact) + d000 (2, exact) and shared-c in near dedup (both still there)
    assert shuffle[("dedup", "documents_sharing_an_id")] >= 8
    assert shuffle[("dedup", "exact_duplicate")] >= 6 and shuffle[("dedup", "near_duplicate")] >= 4


# each step transform alone, and the kinds of row it must give
STEPS = {
    "exact": (lambda mode: ExactDedup(joins=mode), ["kept", "exact_duplicate"]),
    "near": (lambda mode: NearDedup(NearDedupConfig(max_rounds=4), joins=mode), ["kept", "near_duplicate"]),
    "boilerplate": (lambda mode: LineAndSentenceDedup(joins=mode),
                    ["kept", "line_dedup_too_short", "sentence_dedup_too_short", "edit"]),
}


def _unique_ids_stage(mode):
    config = DedupConfig(joins=mode)
    config.near.max_rounds = 4
    config.lines.max_occurrences = config.sentences.max_occurrences = 3
    return Dedup(config, StageContext(direct_runner=True, unique_ids=True))


def _unique_ids_corpus() -> list[Document]:
    counts = collections.Counter(doc.id for doc in mixed_corpus())
    return [doc for doc in mixed_corpus() if counts[doc.id] == 1]


def test_a_builds_unique_ids_join_alone_and_decide_the_same():
    """``StageContext.unique_ids`` (a build's documents): no ``SharedIds`` step and no Flatten of a gathered
    branch, each join's kept documents go straight on; the same rows and counters as the shuffle join, and as
    the batch join."""
    docs, stage = _unique_ids_corpus(), _unique_ids_stage
    shuffle, side, batches = run_both(docs, stage, [
        "kept", "exact_duplicate", "near_duplicate", "line_dedup_too_short", "sentence_dedup_too_short", "edit"],
        modes=[SHUFFLE, SIDE_INPUT, BATCHES])
    assert side == shuffle == batches
    graph = beam.Pipeline()
    _ = graph | beam.Create(docs) | stage(SIDE_INPUT)
    names = [t.unique_name for t in graph.to_runner_api().components.transforms.values()]
    assert not [n for n in names if "SharedIds" in n or "Flatten" in n and "Kept" in n], names


def test_batch_joins_on_disk_decide_as_the_shuffle_join(tmp_path):
    """Shuffles on local disk (a build over output.disk_shuffle_mb, where ``auto`` is ``batches``): the batch
    joins' keyed batches, nodes that name their batch and listed records give every row and counter the shuffle
    join gives."""
    from corpusforge.core.disk_grouping import spilling_to

    with spilling_to(str(tmp_path / "runs")):
        assert _unique_ids_stage("auto").joins == BATCHES
        shuffle, batches = run_both(_unique_ids_corpus(), _unique_ids_stage, [
            "kept", "exact_duplicate", "near_duplicate", "line_dedup_too_short", "sentence_dedup_too_short", "edit"],
            modes=[SHUFFLE, BATCHES])
    assert batches == shuffle
    assert os.listdir(tmp_path / "runs")  # the records went to disk


@pytest.mark.parametrize("doc_batch,colliding", [(1, False), (3, False), (5, True)])
def test_batch_joins_decide_alike_however_the_documents_fall_into_batches(tmp_path, monkeypatch, doc_batch,
                                                                          colliding):
    """What a batch join decides does not depend on the batches: batches of one document, of three, and batch
    keys that all collide (every batch of a step under one key: one group, verdicts still looked up by id) give
    the shuffle join's rows and counters, on disk."""
    from corpusforge.core.disk_grouping import spilling_to
    from corpusforge.pipeline.dedup import common, near

    monkeypatch.setattr(common, "DOC_BATCH", doc_batch)  # exact's and line + sentence dedup's batches
    if colliding:
        for module in (common, near):
            monkeypatch.setattr(module, "batch_key", lambda first_id: 7)

    def stage(mode):
        built = _unique_ids_stage(mode)
        for _, step in built.steps:
            if isinstance(step, NearDedup):
                step.config.batch_size = doc_batch  # near dedup's signature batches
        return built

    with spilling_to(str(tmp_path / "runs")):
        shuffle, batches = run_both(_unique_ids_corpus(), stage, [
            "kept", "exact_duplicate", "near_duplicate", "line_dedup_too_short", "sentence_dedup_too_short", "edit"],
            modes=[SHUFFLE, BATCHES])
    assert batches == shuffle


@pytest.mark.parametrize("step", ["exact", "near", "boilerplate"])
def test_each_step_given_batches_alone_decides_as_the_other_joins(step):
    """A step transform given ``batches`` alone (it takes its caller's word that ids are unique) decides as the
    other two joins: the same rows and counters."""
    transform, kinds = STEPS[step]
    shuffle, side, batches = run_both(_unique_ids_corpus(), transform, kinds, modes=[SHUFFLE, SIDE_INPUT, BATCHES])
    assert side == shuffle == batches


def test_documents_without_shingles_are_counted_once_when_their_batch_is_signed_again(monkeypatch):
    """A signature batch that raises is signed again one document at a time; the documents without shingles are
    counted once, not once for the batch and again alone (the counter then depended on the batching)."""
    from corpusforge.pipeline.dedup import near

    node_of = near.node_of

    def planted(doc, score_key):
        if doc.id == "bad":
            raise ValueError("planted node bug")
        return node_of(doc, score_key)

    monkeypatch.setattr(near, "node_of", planted)
    docs = [Document(f"d{i}", text, "web") for i, text in enumerate(BASES[:4])]
    docs += [Document("empty-1", "...", "web"), Document("empty-2", "!!", "web"), Document("bad", BASES[5], "web")]
    p = beam.Pipeline()
    outputs = p | beam.Create(docs) | "near" >> NearDedup(NearDedupConfig(max_rounds=4), joins=SHUFFLE)
    _ = outputs.errors | beam.Map(lambda r: r)
    result = p.run()
    result.wait_until_finish()
    counters = _counters(result, "near")
    assert counters[("dedup", "near_documents_without_shingles")] == 2, counters
    assert counters[("dedup", "stage_error")] == 1


def test_held_batches_end_at_their_bytes_too(monkeypatch):
    """A batch of waiting documents ends at ``DOC_BATCH`` documents or ``DOC_BATCH_BYTES`` of text and metadata,
    whichever comes first: a batch join's group stays bounded however long the documents."""
    from corpusforge.pipeline.dedup import common

    monkeypatch.setattr(common, "DOC_BATCH_BYTES", 10_000)
    held, batches = common.HeldDocs(keyed=True), []
    for i in range(40):
        batches += held.hold((Document(f"d{i:02d}", "x" * 3_000, "web"), None))
    batches += [item.value for item in held.rest()]
    assert [len(batch) for _, batch in batches] == [4] * 10  # 12,000 bytes once the fourth is held
    assert [key for key, _ in batches] == [common.batch_key(f"d{i:02d}") for i in range(0, 40, 4)]
    short = common.HeldDocs()
    assert [len(b) for i in range(300) for b in short.hold(Document(f"s{i}", "y", "web"))] == [common.DOC_BATCH]


def test_batch_joins_move_batches_not_documents(tmp_path, monkeypatch):
    """With batch joins each step after the first takes its documents as lists, and each join applies its
    verdicts to whole batches: one join group a batch (under ``DOC_BATCH`` documents here: one a step's bundle),
    not one a document."""
    from corpusforge.core.disk_grouping import spilling_to
    from corpusforge.pipeline.dedup import boilerplate, common

    keys_elements, join_groups, tables = [], [], []
    keys_process, join_process = boilerplate._KeysFn.process, common._JoinByBatch.process

    def counted_keys(self, element):
        if self.by_batch:
            keys_elements.append(len(element) if isinstance(element, list) else 1)
        return keys_process(self, element)

    def counted_join(self, item):
        join_groups.append(sum(len(batch) for batch in item[1]["doc"]))
        if self.carried:  # without a spill_dir no sentence table crosses the shuffle inline (the removal splits again)
            tables.extend(value for batch in item[1]["doc"] for _, value in batch)
        return join_process(self, item)

    monkeypatch.setattr(boilerplate._KeysFn, "process", counted_keys)
    monkeypatch.setattr(common._JoinByBatch, "process", counted_join)
    docs = _unique_ids_corpus()
    with spilling_to(str(tmp_path / "runs")):
        run_both(docs, _unique_ids_stage, ["kept", "exact_duplicate"], modes=[SHUFFLE, BATCHES])
    assert sum(keys_elements) > 80 and len(keys_elements) <= 3, keys_elements  # lists, not documents
    assert len(join_groups) <= 9 and sum(join_groups) > 300, join_groups  # three joins, a few batches each
    assert len(tables) > 80 and set(tables) == {None}


@pytest.mark.parametrize("step", ["exact", "near", "boilerplate"])
def test_each_join_decides_the_same_in_both_modes_on_its_own(step):
    """Each transform used alone (its own ``SharedIds``), not only inside the stage."""
    transform, kinds = STEPS[step]
    shuffle, side = run_both(mixed_corpus(), transform, kinds)
    assert side == shuffle


def test_documents_that_raise_are_rejected_alike_in_both_modes(monkeypatch, tmp_path):
    """A document whose exact-dedup key raises is rejected, not kept; one whose sentence removal raises is
    rejected with its line edits dropped; when it shares its id, the other document of the id is rejected
    with it (the group is the unit of the join), in both modes."""
    from corpusforge.pipeline.dedup import exact, sentences

    digest, remove = exact.text_digest, sentences.without_sentences  # what drop_sentences calls

    def digest_planted(text, *args):
        if "quagga" in text:
            raise ValueError("planted key bug")
        return digest(text, *args)

    def remove_planted(text, *args):
        if "zebracorn" in text:
            raise ValueError("planted removal bug")
        return remove(text, *args)

    monkeypatch.setattr(exact, "text_digest", digest_planted)
    monkeypatch.setattr(sentences, "without_sentences", remove_planted)
    nav, notice = "Home | News | Sport | Weather | Contact us", "This notice is long enough to count as a sentence. "
    texts = paragraphs(16)[8:]
    docs = [Document(f"d{i}", f"{nav}\n{texts[i]} {notice}", "web", annotations={"quality_score": 0.9})
            for i in range(4)]
    docs += [Document("bad", f"{nav}\n{texts[4]} The zebracorn sentence is long enough to count here. {notice}", "web"),
             Document("bad", f"{nav}\n{texts[5]} {notice}", "web"),  # raises nothing, shares the id
             Document("key", f"The quagga makes the key raise. {texts[6]}", "web"), Document("key", texts[7], "web")]
    shuffle, side = run_both(docs, dedup_stage, ["kept", "error", "edit"])
    assert side == shuffle
    assert shuffle[("dedup", "stage_error")] == 3  # quagga, zebracorn and its sibling
    # ids unique (a build's), every mode, the batch joins on disk too: only the documents that raise are rejected
    unique = [doc for doc in docs if doc.text != texts[7] and not doc.text.startswith(f"{nav}\n{texts[5]}")]
    from corpusforge.core.disk_grouping import spilling_to

    with spilling_to(str(tmp_path / "runs")):
        counters = run_both(unique, _unique_ids_stage, ["kept", "error", "edit"], modes=[SHUFFLE, SIDE_INPUT, BATCHES])
    assert counters[0] == counters[1] == counters[2] and counters[2][("dedup", "stage_error")] == 2


@pytest.mark.parametrize("setting,direct_runner,chosen", [
    ("auto", True, SIDE_INPUT), ("auto", False, SHUFFLE), ("shuffle", True, SHUFFLE), ("side_input", False, SIDE_INPUT),
])
def test_joins_auto_uses_side_inputs_only_on_the_direct_runner(setting, direct_runner, chosen):
    """``auto`` follows the build's runner (``StageContext.direct_runner``), as ``components: auto`` does; an
    explicit choice wins; every join of the stage gets it; a transform used without a build shuffles."""
    assert join_mode(setting, direct_runner) == chosen
    stage = Dedup(DedupConfig(joins=setting), StageContext(direct_runner=direct_runner))
    steps = dict(stage.steps)
    assert {steps[name].joins for name in ("ExactDedup", "NearDedup", "LineAndSentenceDedup")} == {chosen}
    assert ExactDedup().joins == NearDedup().joins == LineAndSentenceDedup().joins == SHUFFLE


def test_an_unknown_join_mode_fails_at_construction_of_the_graph():
    with pytest.raises(ValueError, match="unknown join mode"):
        with beam.Pipeline() as p:
            _ = p | beam.Create([Document("a", "x", "web")]) | ExactDedup(joins="broadcast")


def test_auto_joins_on_a_transform_used_without_a_build_is_the_shuffle():
    # no build tells the transform its runner, so auto means the join that works on every runner
    from corpusforge.pipeline.dedup.boilerplate import LineAndSentenceDedup
    from corpusforge.pipeline.dedup.config import LineDedupConfig, NearDedupConfig, SentenceDedupConfig
    from corpusforge.pipeline.dedup.exact import ExactDedup
    from corpusforge.pipeline.dedup.near import NearDedup

    transforms = [ExactDedup(joins="auto"), NearDedup(NearDedupConfig(), joins="auto"),
                  LineAndSentenceDedup(LineDedupConfig(), SentenceDedupConfig(), joins="auto")]
    assert [t.joins for t in transforms] == ["shuffle"] * 3


@pytest.mark.parametrize("joins", MODES)
def test_exact_keys_gathered_on_one_worker_decide_as_grouped_by_digest(joins):
    """``ExactDedup(direct_runner=True)`` gathers the ``(digest, node)`` keys one element per bundle
    (``exact.gathered_verdicts``): the same rows and counters as the ``GroupByKey`` by digest (labelled
    ``shuffle`` here), documents sharing an id included."""
    grouped, gathered = run_both(mixed_corpus(), lambda label: ExactDedup(joins=joins, direct_runner=label == SIDE_INPUT),
                                 ["kept", "exact_duplicate"])
    assert gathered == grouped


def test_gathered_verdicts_are_the_verdicts_of_each_digest_group():
    from hypothesis import given, settings, strategies as st

    from corpusforge.pipeline.dedup.exact import exact_verdicts, gathered_verdicts

    nodes = st.tuples(st.floats(-1, 1), st.integers(0, 3), st.text(max_size=3))

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c"]), nodes), max_size=6), max_size=4))
    def check(packs):
        by_digest: dict = {}
        for pack in packs:
            for digest, node in pack:
                by_digest.setdefault(digest, []).append(node)
        expected = sorted((v for item in by_digest.items() for v in exact_verdicts(item)), key=repr)
        assert sorted(gathered_verdicts((None, packs)), key=repr) == expected

    check()


def test_exact_keys_are_not_gathered_when_shuffles_wait_on_disk(tmp_path, monkeypatch):
    """Gathering every ``(digest, node)`` key under one key is for a runner whose driver holds every shuffle
    anyway. Inside ``spilling_to`` the shuffles are on disk and one partition is read back into one worker's
    memory: a gathered key would be the whole corpus's keys there. So with distinct documents, no group that
    comes back from disk names more than one document."""
    import pickle
    import re

    from corpusforge.core import disk_grouping
    from corpusforge.core.disk_grouping import spilling_to

    widest = []
    process = disk_grouping._GroupRuns.process

    def recording(self, element):
        for key, values in process(self, element):
            widest.append(len(set(re.findall(rb"doc-\d{4}", pickle.dumps((key, values))))))
            yield key, values

    monkeypatch.setattr(disk_grouping._GroupRuns, "process", recording)
    docs = [Document(f"doc-{i:04d}", f"{BASES[i % 8]} tail {''.join(chr(97 + int(c)) for c in f'{i:04d}')}", "web") for i in range(60)]
    with spilling_to(str(tmp_path / "shuffle")):
        p = beam.Pipeline(runner="DirectRunner")
        outputs = p | beam.Create(docs) | ExactDedup(direct_runner=True)
        assert_that(outputs.kept | beam.Map(lambda d: d.id), equal_to([d.id for d in docs]))
        p.run().wait_until_finish()
    assert widest and max(widest) == 1, max(widest)


def test_a_shards_drops_as_one_list_are_its_drops_one_by_one():
    # side-input joins take each key shard's drops as one Beam element (AsGrouped.of(..., lists=True))
    import random

    from corpusforge.pipeline.dedup.lines import KEY_SHARDS, KeysByShard, shard_drops

    rng = random.Random(3)
    fn, packs = KeysByShard(), []
    for _ in range(3):
        fn.start_bundle()
        for _ in range(30):
            fn.add([rng.randrange(6) * KEY_SHARDS], (rng.randrange(2), 0.0, f"d{rng.randrange(9)}"))
        packs += [pack for _, pack in fn.packs()]
    one_by_one = list(shard_drops(2)((0, packs)))
    assert one_by_one and list(shard_drops(2, listed=True)((0, packs))) == [one_by_one]
    assert list(shard_drops(100, listed=True)((0, packs))) == []  # no list for a shard without drops


def test_a_lists_edits_are_summed_per_counter_and_nothing_else_changes():
    from corpusforge.pipeline.dedup.common import _summed_edits
    from corpusforge.pipeline.stage import EDITS, edit

    kept, removed = object(), beam.pvalue.TaggedOutput("removed", "r")
    out = [edit("dedup", "a", 2), kept, edit("dedup", "b"), edit("dedup", "a", 3), removed]
    summed = _summed_edits(out)
    assert summed[:2] == [kept, removed]
    assert [(o.tag, o.value) for o in summed[2:]] == [(EDITS, ("dedup", "a", 5)), (EDITS, ("dedup", "b", 1))]
    assert _summed_edits([kept]) == [kept]


@pytest.mark.parametrize("kept_lists", [False, True])
@pytest.mark.parametrize("carried", [False, True])
def test_a_list_joined_at_once_gives_what_its_documents_give_one_by_one(kept_lists, carried):
    # _JoinBySideInput._batch (one pass per list) against _one per document then _summed_edits, the per-document
    # path: a shared id (set apart), documents with and without verdicts, edits, removals, in one list
    from corpusforge.pipeline.dedup.common import SHARED, _id_hash, _JoinBySideInput, _summed_edits
    from corpusforge.pipeline.stage import EDITS, edit, removal

    class Fn(beam.DoFn):
        keeps_unjudged = True

        def process(self, item):
            doc_id, grouped = item
            assert grouped.get("carried", [None])[0] == (f"value of {doc_id}" if carried else None)
            for doc in grouped["doc"]:
                yield edit("dedup", "judged", len(grouped["removed"]) + len(grouped["edits"]))
                if grouped["removed"]:
                    yield removal(doc, "dedup", "test")
                else:
                    yield doc.with_text(doc.text + "!")

    docs = [Document(f"d{i}", f"text {i}", "web") for i in range(12)]
    verdicts = ({"d1": ["x"], "d4": ["y"], "elsewhere": ["z"]}, {"d4": [1], "d7": [2], "d9": [3]})
    shared = frozenset({_id_hash("d2"), _id_hash("d9")})
    element = [(doc, f"value of {doc.id}") for doc in docs] if carried else docs
    join = _JoinBySideInput(Fn(), ["removed", "edits"], batched=True, kept_lists=kept_lists, carried=carried)
    one_by_one = []
    for doc in docs:
        value = f"value of {doc.id}" if carried else None
        one_by_one += join._one(doc, shared, verdicts, value) if carried else join._one(doc, shared, verdicts)
    one_by_one = _summed_edits(one_by_one)
    if kept_lists:
        kept = [o for o in one_by_one if not isinstance(o, beam.pvalue.TaggedOutput)]
        one_by_one = [o for o in one_by_one if isinstance(o, beam.pvalue.TaggedOutput)] + [kept]

    def plain(out):
        return [(o.tag, o.value) if isinstance(o, beam.pvalue.TaggedOutput) else plain(o) if isinstance(o, list)
                else o for o in out]

    batched = plain(join.process(element, shared, *verdicts))
    assert batched == plain(one_by_one)
    tagged = [o for o in batched if isinstance(o, tuple)]
    assert [value[0] for tag, value in tagged if tag == SHARED] == ["d2", "d9"]
    assert [value for tag, value in tagged if tag == EDITS] == [("dedup", "judged", 4)]  # d1, d4 (2), d7
    assert join.process([], frozenset(), *verdicts) == []


def test_documents_cross_between_side_input_dedup_steps_in_batches_coded_as_columns(monkeypatch):
    """A build's dedup stage (unique ids, side-input joins) on the DirectRunner with the build's coder: the
    documents that wait for a step's verdicts cross the fused-stage boundary as ``Documents`` (exact and near
    dedup) and ``DocumentPairs`` (line + sentence dedup, each document with its sentence table), each one
    coder call whose documents are written as columns; not one document alone, nor a plain list, whose every
    document was a call of the coder's fallback of its own (~1.5x the time a document)."""
    from corpusforge.pipeline import document_coder
    from corpusforge.pipeline.document_coder import DocumentPairs, Documents, document_coders
    from apache_beam.coders.coder_impl import ByteCountingOutputStream

    encoded: collections.Counter = collections.Counter()
    impl = document_coder._DocumentOrPickleImpl
    encode = impl.encode_to_stream

    def counting(self, value, stream, nested):
        if type(stream) is not ByteCountingOutputStream:
            first = value[0] if type(value) in (list, Documents, DocumentPairs) and value else None
            encoded[(type(value).__name__, type(first).__name__)] += 1
        return encode(self, value, stream, nested)

    counts = collections.Counter(doc.id for doc in mixed_corpus())
    docs = [doc for doc in mixed_corpus() if counts[doc.id] == 1]
    config = DedupConfig(joins=SIDE_INPUT)
    config.lines.max_occurrences = config.sentences.max_occurrences = 3
    monkeypatch.setattr(impl, "encode_to_stream", counting)
    with document_coders():
        with beam.Pipeline(runner="DirectRunner") as p:  # Create alone: it encodes its elements one by one
            _ = p | beam.Create(docs, reshuffle=False) | "Ids" >> beam.Map(lambda d: d.id)
        created, _ = dict(encoded), encoded.clear()
        with beam.Pipeline(runner="DirectRunner") as p:
            outputs = (p | beam.Create(docs, reshuffle=False)
                       | Dedup(config, StageContext(direct_runner=True, unique_ids=True)))
            assert_that(outputs.kept | "Ids" >> beam.Map(lambda d: d.id), lambda ids: len(ids) > 10 or ids)
    assert created[("Document", "NoneType")] >= len(docs)
    assert encoded[("Document", "NoneType")] == created[("Document", "NoneType")], encoded  # nothing more alone
    assert encoded[("Documents", "Document")] >= 2 and encoded[("DocumentPairs", "tuple")] >= 1, encoded
    assert not encoded[("list", "Document")] and not encoded[("list", "tuple")], encoded
