"""What moving documents between fused steps costs per document, by how a batch of them is coded.

    python bench/coder.py                 # 6,000 web-like documents (~2.4 KB), batches of 256
    python bench/coder.py --docs 20000 --batch 1024

Each document carries a few annotations, as after the quality stage. Compared, per document, encode and decode
in CPU microseconds (best of ``--repeat``):

- ``one by one``: each document its own element (DocumentCoder's fields tuple per document);
- ``list``: a plain list of documents, as lists crossed steps before (one fields tuple per document inside it);
- ``Documents columns``: ``document_coder.Documents``, the batch written as a tuple of columns in one call;
- ``Arrow IPC``: one Arrow record batch per batch (metadata and annotations as JSON strings, as they must be
  to sit in one column whatever their shape), written and read as an IPC stream, documents rebuilt.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.build import distinct_texts  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=6000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import pyarrow as pa
    from apache_beam.coders import coder_impl

    from corpusforge.pipeline.document import Document
    from corpusforge.pipeline.document_coder import DocumentCoder, Documents

    texts = distinct_texts(random.Random(0), 1)
    docs = [Document(f"web/d{i:08d}", next(texts), "web", {"url": f"https://example.org/{i}"},
                     {"lang": "en", "lang_score": 0.93, "quality": {"words": 400, "stop_words": 120}})
            for i in range(args.docs)]
    batches = [docs[i:i + args.batch] for i in range(0, len(docs), args.batch)]
    impl = DocumentCoder().get_impl()

    def one_by_one():
        encoded = []
        for doc in docs:
            out = coder_impl.create_OutputStream()
            impl.encode_to_stream(doc, out, True)
            encoded.append(out.get())
        return encoded, lambda: [impl.decode_from_stream(coder_impl.create_InputStream(b), True) for b in encoded]

    def coded(make):
        def run():
            encoded = [impl.encode(make(batch)) for batch in batches]
            return encoded, lambda: [impl.decode(b) for b in encoded]
        return run

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

    print(f"{args.docs:,} documents, {sum(len(d.text) for d in docs) / len(docs):,.0f} characters each on average, "
          f"batches of {args.batch}; CPU microseconds per document, best of {args.repeat}")
    print(f"{'coding':<20} {'encode':>8} {'decode':>8} {'total':>8}")
    for name, run in (("one by one", one_by_one), ("list", coded(list)), ("Documents columns", coded(Documents)),
                      ("Arrow IPC", arrow)):
        best_encode = best_decode = float("inf")
        for _ in range(args.repeat):
            started = time.process_time()
            _, decode = run()
            encoded_at = time.process_time()
            decode()
            best_encode = min(best_encode, encoded_at - started)
            best_decode = min(best_decode, time.process_time() - encoded_at)
        per = 1e6 / len(docs)
        print(f"{name:<20} {best_encode * per:>8.2f} {best_decode * per:>8.2f} {(best_encode + best_decode) * per:>8.2f}")


if __name__ == "__main__":
    main()
