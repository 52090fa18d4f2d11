"""Source mixtures in tokenize: how close the written token shares come to the weights, and what weighting costs.

    .venv/bin/python bench/mixture.py                      # 3 sources, 2,767 documents, 1.2 MB
    .venv/bin/python bench/mixture.py --copies 4
    .venv/bin/python bench/mixture.py --two-sources --seeds 5   # 590 + 60 generated documents, weights 0.5 / 0.5

Clean shards of three sources of very different sizes are made from Python's documentation (``web``: every
paragraph of ``pydoc_data.topics`` x ``--copies`` under new ids; ``books``: eight "books" of ten paragraphs, one
starting every hundredth paragraph; ``code``: docstrings of ten standard-library modules). A small BPE tokenizer is trained on them, then
``TokenizeShards`` runs on the in-process DirectRunner three times: natural mixture, equal weights with a
budget equal to the natural train tokens, and weights 1:2:1 with twice that budget. Printed: per source, the
target share, the written share, epochs planned and written, and wall time of each run.

``--two-sources``: the case of issue 37 instead, two sources of 590 and 60 generated documents
(``tests/tokenizer/data.py``, 10-300 tokens each), weights 0.5 / 0.5, a budget of 0.57 x the natural train
tokens (web ~0.31 epochs, books ~3.1), validation 10 %, for ``--seeds`` mixture seeds: each seed's written
shares and total against the budget, and the worst of them.
"""
from __future__ import annotations

import argparse
import inspect
import json
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402


def documents(copies: int) -> list[dict]:
    import importlib
    from pydoc_data.topics import topics

    paras = [" ".join(p.split()) for key in sorted(topics) for p in topics[key].split("\n\n") if len(p) > 200]
    docs = [{"id": f"web/{c}-{i:06d}", "text": p, "source": "web"} for c in range(copies) for i, p in enumerate(paras)]
    docs += [{"id": f"books/{i:05d}", "text": "\n".join(paras[i:i + 10]), "source": "books"}
             for i in range(0, len(paras) // 10 * 10, 100)]
    for name in ("collections", "json", "os", "pathlib", "re", "string", "textwrap", "typing", "argparse", "logging"):
        module = importlib.import_module(name)
        for attr, obj in sorted(vars(module).items()):
            doc = inspect.getdoc(obj) if not attr.startswith("_") else None
            if doc and len(doc) > 200:
                docs.append({"id": f"code/{name}.{attr}", "text": doc, "source": "code"})
    for d in docs:
        d["metadata"], d["annotations"] = "{}", "{}"
    return docs


def write_clean(directory: pathlib.Path, docs: list[dict]) -> None:
    from corpusforge.pipeline.document import DOCUMENT_SCHEMA

    directory.mkdir(parents=True)
    docs = sorted(docs, key=lambda d: d["id"])
    with pa.OSFile(str(directory / "part-00000-of-00001.arrow"), "wb") as sink, ipc.new_file(sink, DOCUMENT_SCHEMA) as w:
        for start in range(0, len(docs), 1000):
            w.write_batch(pa.RecordBatch.from_pylist(docs[start:start + 1000], schema=DOCUMENT_SCHEMA))


def tokenize(clean, out, tokenizer, val_fraction=0.0, **kwargs) -> tuple[dict, float]:
    import apache_beam as beam

    from corpusforge.tokenizer.tokenize import TokenizeShards

    start = time.perf_counter()
    with beam.Pipeline(runner="DirectRunner") as p:
        _ = p | TokenizeShards(str(clean), str(out), str(tokenizer), val_fraction=val_fraction, num_shards=2, **kwargs)
    return json.loads((out / "manifest.json").read_text()), time.perf_counter() - start


def two_sources(seeds: int) -> None:
    from corpusforge.tokenizer.config import TokenizerConfig
    from corpusforge.tokenizer.train import train_from_shards
    from tests.tokenizer.data import make_documents, write_clean_shards

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        web, books = make_documents(590, seed=5), make_documents(60, seed=6)
        for prefix, docs in (("web", web), ("books", books)):
            for d in docs:
                d["id"], d["source"] = f"{prefix}-{d['id']}", prefix
        write_clean_shards(tmp / "clean", web + books, num_shards=2)
        train_from_shards(TokenizerConfig(family="decoder", vocab_size=500, heldout_mb=0.01), str(tmp / "clean"),
                          str(tmp / "tok"))
        tok = tmp / "tok" / "tokenizer.json"
        natural, _ = tokenize(tmp / "clean", tmp / "natural", tok, val_fraction=0.1)
        budget = int(0.57 * natural["splits"]["train"]["tokens"])
        worst_share = worst_total = 0.0
        for seed in range(seeds):
            manifest, seconds = tokenize(tmp / "clean", tmp / f"s{seed}", tok, val_fraction=0.1, weights={"web": 0.5, "books": 0.5},
                                         target_tokens=budget, mixture_seed=seed)
            written = manifest["splits"]["train"]["tokens"]
            shares = {k: v["share"] for k, v in sorted(manifest["sources"].items())}
            worst_share = max(worst_share, *(abs(v - 0.5) for v in shares.values()))
            worst_total = max(worst_total, abs(written / budget - 1))
            assert manifest["splits"]["val"] == natural["splits"]["val"]
            print(f"seed {seed}: shares " + ", ".join(f"{k} {v:.2%}" for k, v in shares.items())
                  + f"; written {written:,} of {budget:,} ({written / budget - 1:+.2%}); validation unchanged; {seconds:.1f} s")
        print(f"worst over {seeds} seeds: share {100 * worst_share:.2f} points off its weight, total {worst_total:.2%} off the budget")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=3, help="copies of the web paragraphs (under new ids)")
    parser.add_argument("--two-sources", action="store_true", help="issue 37's case: 590 + 60 documents, 0.5 / 0.5")
    parser.add_argument("--seeds", type=int, default=5, help="--two-sources: mixture seeds to run")
    args = parser.parse_args(argv)
    if args.two_sources:
        two_sources(args.seeds)
        return 0
    from corpusforge.tokenizer.config import TokenizerConfig
    from corpusforge.tokenizer.train import train_from_shards

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        docs = documents(args.copies)
        write_clean(tmp / "clean", docs)
        size = sum(len(d["text"].encode()) for d in docs)
        train_from_shards(TokenizerConfig(family="decoder", vocab_size=2000, heldout_mb=0.01), str(tmp / "clean"),
                          str(tmp / "tok"))
        tok = tmp / "tok" / "tokenizer.json"
        natural, t0 = tokenize(tmp / "clean", tmp / "natural", tok)
        total = sum(s["tokens"] for s in natural["sources"].values())
        shares = ", ".join(f"{k} {v['share']:.1%}" for k, v in sorted(natural["sources"].items()))
        print(f"{len(docs):,} documents, {size / 1e6:.1f} MB; natural train tokens {total:,} "
              f"({shares}); "
              f"tokenize {t0:.1f} s")
        for weights, budget in (({"web": 1, "books": 1, "code": 1}, total), ({"web": 1, "books": 2, "code": 1}, 2 * total)):
            manifest, seconds = tokenize(tmp / "clean", tmp / f"w{budget}", tok, weights=weights, target_tokens=budget)
            written = sum(s["tokens"] for s in manifest["sources"].values())
            rows = []
            for name, s in sorted(manifest["sources"].items()):
                target = weights[name] / sum(weights.values())
                rows.append(f"{name}: target {target:.1%} written {s['share']:.1%} (epochs {s['epochs']:.3f} "
                            f"planned, {s['epochs_written']:.3f} written, {s['documents']:,} docs)")
            print(f"weights {weights}, budget {budget:,}: written {written:,} tokens ({written / budget - 1:+.2%}), "
                  f"tokenize {seconds:.1f} s\n    " + "\n    ".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
