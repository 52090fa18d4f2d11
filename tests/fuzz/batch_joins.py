"""Fuzz family ``batch_joins``: what the dedup stage decides does not depend on how its documents fall into batches.

With ``dedup.joins: batches`` (a build's default once its shuffles wait on disk) documents wait in batches under a
batch key, each document's rank names its batch, and every verdict goes to that key (``pipeline/dedup/common.py``).
The class of inputs that could break it is every way documents fall into batches: batch sizes, bundle splits,
batch keys that collide, batches whose documents are all removed or all kept. One case draws a corpus (the
boilerplate corpus of tests/pipeline/dedup/test_boilerplate.py with exact copies, case and spacing variants and
near copies of its documents mixed in, each document scored or not), the batches' sizes (exact and line + sentence
dedup's ``DOC_BATCH``, near dedup's ``batch_size``), whether every batch key collides, collides in a few values or
not at all, and whether the shuffles wait on disk, and checks that the batch joins give every row (kept, removed with
reason and details, edits) and counter the shuffle join gives on the same documents.
"""
from __future__ import annotations

import collections
import pathlib
import random

FAMILY = "batch_joins"
TRIED: collections.Counter = collections.Counter()


def corpus(rng: random.Random) -> list:
    """Unique-id documents: boilerplate lines and sentences, and copies of them exact, folded and edited."""
    from corpusforge.pipeline.document import Document
    from tests.pipeline.dedup.corpus import edit_words
    from tests.pipeline.dedup.test_boilerplate import corpus as boilerplate_corpus

    base = boilerplate_corpus(rng.randint(20, 90), rng.randrange(1 << 16))
    seen, docs = collections.Counter(doc.id for doc in base), []
    for doc in base:
        if seen[doc.id] == 1 and doc.text.strip():
            docs.append(doc)
    for i in range(rng.randint(0, 30)):
        original = rng.choice(docs)
        kind = rng.choice(["exact", "folded", "edited"])
        text = {"exact": original.text, "folded": original.text.upper() + "  ",
                "edited": edit_words(original.text, 0.03, i) if original.text.split() else original.text}[kind]
        annotations = {"quality_score": rng.choice([0.1, 0.5, 0.9])} if rng.random() < 0.5 else {}
        docs.append(Document(f"copy{i}-{kind}", text, "web", annotations=annotations))
        TRIED[kind] += 1
    rng.shuffle(docs)
    return docs


def fuzz_one(rng: random.Random, workdir: pathlib.Path) -> None:
    import pytest

    from corpusforge.core import rundir
    from corpusforge.core.disk_grouping import spilling_to
    from corpusforge.pipeline.dedup import DedupConfig, common, near
    from corpusforge.pipeline.dedup.common import BATCHES, SHUFFLE
    from corpusforge.pipeline.dedup.stage import Dedup
    from corpusforge.pipeline.stage import StageContext
    from tests.pipeline.dedup.test_joins import run_both

    docs = corpus(rng)
    doc_batch, near_batch = rng.choice([1, 2, 3, 7, 256]), rng.choice([1, 2, 5, 512])
    collide = rng.choice(["none", "all", "few"])
    on_disk = rng.random() < 0.7
    max_occurrences = rng.choice([1, 2, 3])
    TRIED.update([f"collide {collide}", "on disk" if on_disk else "in memory"])
    keys = {"none": common.batch_key, "all": lambda first_id: 7,
            "few": lambda first_id: common._id_hash(first_id) % 3}[collide]

    def stage(mode):
        config = DedupConfig(joins=mode)
        config.near.max_rounds = 4
        config.near.batch_size = near_batch
        config.lines.max_occurrences = config.sentences.max_occurrences = max_occurrences
        return Dedup(config, StageContext(direct_runner=True, unique_ids=True))

    what = (f"{len(docs)} documents, batches of {doc_batch} (near {near_batch}), keys colliding: {collide}, "
            f"shuffles {'on disk' if on_disk else 'in memory'}")
    workdir = pathlib.Path(workdir)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(common, "DOC_BATCH", doc_batch)
        patch.setattr(common, "batch_key", keys)
        patch.setattr(near, "batch_key", keys)
        # rundir.scoped_tempfiles: what Beam leaves in the temporary folder (its temp and requirements cache
        # directories) goes with the block, as a build's does
        with rundir.scoped_tempfiles(), spilling_to(str(workdir / "runs") if on_disk else None):
            try:
                shuffle, batches = run_both(docs, stage, ["kept"], modes=[SHUFFLE, BATCHES])
            except Exception as error:  # noqa: BLE001 - the rows differ (assert_that), said with the case
                raise AssertionError(f"{what}: the batch joins' rows differ from the shuffle join's: {error}") from error
    assert batches == shuffle, f"{what}: the batch joins' counters differ from the shuffle join's"
