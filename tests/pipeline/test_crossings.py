"""How many times a build encodes each document between fused stages (bench/crossings.py prints where): every
crossing of a fused-stage boundary writes a document's fields and reads them back (~20 us with its annotations,
bench/coder.py). An every-stage build on the DirectRunner crosses: the reader's Flatten and its spreading
shuffle (the documents and the new ids flattened straight into one grouping: ``corpusforge.core.flattens.
into_groupings``, where reading the Flatten's buffer to write the grouping's was one more crossing), each dedup
step's wait for its verdicts (exact, near, line + sentence), and the shard writer's list and shuffle (in lists;
the sets' lists flattened into one grouping the same way). A dedup step's kept documents go straight on to the next step: no Flatten with the branch of
documents sharing an id (a build's ids are unique), which made each step's documents cross twice."""
from __future__ import annotations

import collections

from apache_beam.coders.coder_impl import ByteCountingOutputStream

from corpusforge.cli.main import main
from corpusforge.pipeline import document_coder
from corpusforge.pipeline.document import Document, Removed
from tests.pipeline.sample_corpus import sample_corpus


def _encodings_by_id(tmp_path, monkeypatch, *settings: str) -> collections.Counter:
    """How many times the build encoded each document (by id; a removal counts for its document)."""
    counts: collections.Counter = collections.Counter()
    impl = document_coder._DocumentOrPickleImpl
    encode = impl.encode_to_stream

    def counting(self, value, stream, nested):
        if type(stream) is not ByteCountingOutputStream:  # a sampled size is estimated, not encoded
            for doc in value if type(value) is document_coder.Documents else [value]:
                if type(doc) is Removed:
                    doc = doc.doc
                if type(doc) is Document:
                    counts[doc.id] += 1
        return encode(self, value, stream, nested)

    monkeypatch.setattr(impl, "encode_to_stream", counting)
    root, config = sample_corpus(tmp_path, documents=40)
    assert main(["build", "-c", str(config), "--run-dir", str(root / "run"), "--no-progress", *settings]) == 0
    return counts


def test_an_every_stage_build_encodes_a_kept_document_once_per_crossing(tmp_path, monkeypatch):
    """The sample corpus has several inputs (one more Flatten in the reader): 7 crossings for a kept document
    (8 while the Flatten before the reader's spreading shuffle had a stage of its own; 11 when each dedup step's
    kept documents were flattened with the gathered branch's)."""
    counts = _encodings_by_id(tmp_path, monkeypatch)
    assert len(counts) >= 40
    assert max(counts.values()) == 7, counts.most_common(3)
