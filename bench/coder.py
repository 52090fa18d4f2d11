"""What moving documents between fused steps costs per document, by how a batch of them is coded.

    python bench/coder.py                 # 6,000 web-like documents (~2.4 KB), batches of 256
    python bench/coder.py --docs 20000 --batch 1024

Each document carries the annotations of an every-stage build after its quality and PII stages (``lang``,
``lang_score``, the quality stage's measured values of its own text, ``pii_count``, ``pii_entities``: ~60
keys). Compared, per document, encode and decode in CPU microseconds (best of ``--repeat``) and bytes written:

- ``one by one``: each document its own element (DocumentCoder's fields tuple per document);
- ``list``: a plain list of documents, as lists crossed steps before (one fields tuple per document inside it);
- ``Documents columns``: ``document_coder.Documents``, the batch written as a tuple of columns in one call;
- ``Arrow IPC``: one Arrow record batch per batch (metadata and annotations as JSON strings, as they must be
  to sit in one column whatever their shape), written and read as an IPC stream, documents rebuilt;
- ``Removed``: a removal one by one, as near dedup writes them (the annotated document, its reason, its details:
  survivor, cluster size, similarity; most of an every-stage build's removals); ``pickled`` is how every
  ``Removed`` was coded before it was written as fields.

Each ``DocumentCoder`` row twice: annotations as dicts (a coder without ``Rows``, as before) and as typed rows
of the build's declared fields (``annotation_rows.Rows`` of ``build.shard_schemas``, what a build's coder holds).
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.build import distinct_texts  # noqa: E402


def _annotations(texts: list[str]) -> list[dict]:
    """Every-stage annotations of ``texts`` as the build writes them: quality's measured values of each text."""
    from corpusforge.pipeline.config import BuildConfig
    from corpusforge.pipeline.quality.rules import HeuristicRules

    config = BuildConfig()
    rules = HeuristicRules(config.quality)
    entities = list(dict.fromkeys(config.pii.active_entities))
    return [{"lang": "en", "lang_score": 0.93, "quality": rules.apply(text, "en").values,
             "pii_count": 0, "pii_entities": dict.fromkeys(entities, 0)} for text in texts]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=6000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import pyarrow as pa
    from apache_beam.coders import coder_impl

    from corpusforge.pipeline.annotation_rows import Rows
    from corpusforge.pipeline.build import shard_schemas
    from corpusforge.pipeline.config import BuildConfig
    from corpusforge.pipeline.document import Document, Removed
    from corpusforge.pipeline.document_coder import DocumentCoder, Documents

    texts = distinct_texts(random.Random(0), 1)
    texts = [next(texts) for _ in range(args.docs)]
    distinct = _annotations(texts[:256])  # measured once per 256 documents: the values, not their cost, matter
    docs = [Document(f"web/d{i:08d}", text, "web", {"url": f"https://example.org/{i}"}, distinct[i % len(distinct)])
            for i, text in enumerate(texts)]
    removals = [Removed(doc, "dedup", "near_duplicate", {"survivor_id": f"web/d{i // 2:08d}", "cluster_size": 2,
                                                          "similarity": 0.91}) for i, doc in enumerate(docs)]
    batches = [docs[i:i + args.batch] for i in range(0, len(docs), args.batch)]
    coders = {"dicts": DocumentCoder().get_impl(),
              "rows": DocumentCoder(rows=Rows.of_schemas(shard_schemas(BuildConfig()))).get_impl()}

    def one_by_one(impl, values=docs):
        def run():
            encoded = []
            for value in values:
                out = coder_impl.create_OutputStream()
                impl.encode_to_stream(value, out, True)
                encoded.append(out.get())
            return encoded, lambda: [impl.decode_from_stream(coder_impl.create_InputStream(b), True) for b in encoded]
        return run

    def coded(impl, make):
        def run():
            encoded = [impl.encode(make(batch)) for batch in batches]
            return encoded, lambda: [impl.decode(b) for b in encoded]
        return run

    def pickled():
        encoded = [pickle.dumps(r, pickle.HIGHEST_PROTOCOL) for r in removals]
        return encoded, lambda: [pickle.loads(b) for b in encoded]

    schema = pa.schema([("id", pa.string()), ("text", pa.large_string()), ("source", pa.string()),
                        ("metadata", pa.string()), ("annotations", pa.string())])

    def arrow():
        encoded = []
        for batch in batches:
            record = pa.RecordBatch.from_pydict({
                "id": [d.id for d in batch], "text": [d.text for d in batch], "source": [d.source for d in batch],
                "metadata": [json.dumps(d.metadata) for d in batch],
                "annotations": [json.dumps(d.annotations) for d in batch]}, schema=schema)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, schema) as writer:
                writer.write_batch(record)
            encoded.append(sink.getvalue())

        def decode():
            out = []
            for buffer in encoded:
                columns = pa.ipc.open_stream(buffer).read_next_batch().to_pydict()
                out += [Document(i, t, s, json.loads(m), json.loads(a)) for i, t, s, m, a in
                        zip(columns["id"], columns["text"], columns["source"], columns["metadata"],
                            columns["annotations"])]
            return out
        return encoded, decode

    text_bytes = sum(len(d.text.encode()) for d in docs) / len(docs)
    print(f"{args.docs:,} documents, {sum(len(d.text) for d in docs) / len(docs):,.0f} characters each on average, "
          f"~{len(json.dumps(docs[0].annotations)):,} bytes of annotations as JSON, batches of {args.batch}; "
          f"CPU microseconds per document, best of {args.repeat}; bytes per document beyond its text's")
    print(f"{'coding':<34} {'encode':>8} {'decode':>8} {'total':>8} {'bytes':>8}")
    cases = []
    for kind, impl in coders.items():
        cases += [(f"one by one, {kind}", one_by_one(impl)), (f"list, {kind}", coded(impl, list)),
                  (f"Documents columns, {kind}", coded(impl, Documents))]
    cases += [("Arrow IPC", arrow), ("Removed, pickled", pickled)]
    cases += [(f"Removed, fields, {kind}", one_by_one(impl, removals)) for kind, impl in coders.items()]
    for name, run in cases:
        best_encode = best_decode = float("inf")
        for _ in range(args.repeat):
            started = time.process_time()
            encoded, decode = run()
            encoded_at = time.process_time()
            decode()
            best_encode = min(best_encode, encoded_at - started)
            best_decode = min(best_decode, time.process_time() - encoded_at)
        per = 1e6 / len(docs)
        size = sum(len(b) for b in encoded) / len(docs) - text_bytes
        print(f"{name:<34} {best_encode * per:>8.2f} {best_decode * per:>8.2f} "
              f"{(best_encode + best_decode) * per:>8.2f} {size:>8,.0f}")


if __name__ == "__main__":
    main()
