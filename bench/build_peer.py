"""Per stage, corpusforge and datatrove on the same documents in the same process, one worker each.

    python bench/build.py --corpus distinct --sizes 5000 --peer          # the table, after the builds
    python bench/build_peer.py --docs 5000                               # the table alone

Each stage runs alone on the same in-memory documents (bench/build.py's corpus, read once):

- corpusforge: the stage's composite transform (``Normalize``, ``ExactDedup``, ``NearDedup``, ``SentenceDedup``,
  ``PII``, each at its defaults) in a Beam pipeline on the in-process DirectRunner (files -> documents ->
  stage -> count), minus the same pipeline with an identity step: what is left is the stage, its shuffles
  and running its part of the graph;
- datatrove: the matching steps (``FTFYFormatter``; ``ExactDedupSignature`` / ``ExactFindDedups`` /
  ``ExactDedupFilter``; the four MinHash steps; the three sentence-dedup steps; ``PIIFormatter``) through
  ``LocalPipelineExecutor`` with one task where it allows, the documents handed over as a list.

The rules are not the same, so read the ratio with the row's note: datatrove's FTFY formatter does more
than corpusforge's encoding-only repair plus whitespace; its PII formatter finds e-mail and IP addresses
only, corpusforge's Presidio stage ten entity types. Language ID and the quality rules are compared by
bench/quality.py. Figures are documents per CPU-second of this process (one worker each: docs/s per core),
which other jobs on a shared machine move far less than wall time.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time

import zstandard

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def read_corpus(directory: str) -> list[tuple[str, str]]:
    """``(id, text)`` of every record of a bench/build.py corpus, in file order."""
    docs = []
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            for line in zstandard.ZstdDecompressor().stream_reader(f).read().splitlines():
                record = json.loads(line)
                docs.append((record["id"], record["text"]))
    return docs


# ----------------------------------------------------------------------------------------- corpusforge
def _documents_of(path: str):
    from corpusforge.pipeline.document import Document

    with open(path, "rb") as f:
        for line in zstandard.ZstdDecompressor().stream_reader(f).read().splitlines():
            record = json.loads(line)
            yield Document(id=f"bench/{record['id']}", text=record["text"], source="bench")


def _beam_cpu_seconds(corpus: str, make_stage) -> float:
    """CPU seconds of ``files -> documents -> stage (or an identity step) -> count`` on the in-process
    DirectRunner (one process: its CPU time is the pipeline's), graph construction excluded."""
    import apache_beam as beam

    from corpusforge.core.direct_runner import DirectRunner, run_pipeline

    files = [os.path.join(corpus, name) for name in sorted(os.listdir(corpus))]
    pipeline = beam.Pipeline(runner=DirectRunner())
    docs = pipeline | beam.Create(files) | beam.FlatMap(_documents_of)
    out = (docs | make_stage()).kept if make_stage else docs | beam.Map(lambda d: d)
    _ = out | beam.combiners.Count.Globally()
    started = time.process_time()
    run_pipeline(pipeline).wait_until_finish()
    return time.process_time() - started


def corpusforge_stages() -> dict:
    from corpusforge.pipeline.dedup.config import DedupConfig
    from corpusforge.pipeline.dedup.exact import ExactDedup
    from corpusforge.pipeline.dedup.near import NearDedup
    from corpusforge.pipeline.dedup.sentences import SentenceDedup
    from corpusforge.pipeline.normalize.stage import Normalize
    from corpusforge.pipeline.pii.stage import PII

    dedup = DedupConfig()
    return {
        "normalize": lambda: Normalize(),
        "dedup: exact": lambda: ExactDedup(),
        "dedup: near (MinHash)": lambda: NearDedup(dedup.near),
        "dedup: sentences": lambda: SentenceDedup(dedup.sentences),
        "pii": lambda: PII(),
    }


# ------------------------------------------------------------------------------------------- datatrove
def _trove_docs(docs):
    from datatrove.data import Document

    return [Document(text=t, id=i) for i, t in docs]


def _run(steps, workdir: str, name: str, tasks: int = 1) -> None:
    from datatrove.executor import LocalPipelineExecutor

    LocalPipelineExecutor(steps, tasks=tasks, workers=1, logging_dir=os.path.join(workdir, "logs", name)).run()


def _patch_xxhash() -> None:
    import xxhash
    from datatrove.utils.hashes import xxhash as trove_xxhash

    if int(xxhash.VERSION.split(".")[0]) >= 4:  # xxhash 4 refuses str; 3.x hashed its UTF-8 bytes (bench/dedup.py)
        trove_xxhash.xxhash32 = lambda data: xxhash.xxh32_intdigest(data.encode() if isinstance(data, str) else data)
        trove_xxhash.xxhash64 = lambda data: xxhash.xxh64_intdigest(data.encode() if isinstance(data, str) else data)


def datatrove_stages(workdir: str) -> dict:
    from datatrove.pipeline.formatters import FTFYFormatter, PIIFormatter

    def drain(docs):  # a last step that consumes what the one before yields
        def step(data, rank=0, world_size=1):
            for _ in data:
                pass
            return iter(())
        return step

    def normalize(docs):
        _run([_trove_docs(docs), FTFYFormatter(), drain(docs)], workdir, "ftfy")

    def pii(docs):
        _run([_trove_docs(docs), PIIFormatter(), drain(docs)], workdir, "pii")

    def exact(docs):
        from datatrove.pipeline.dedup.exact_dedup import (ExactDedupConfig, ExactDedupFilter, ExactDedupSignature,
                                                          ExactFindDedups)

        def content(doc) -> str:
            return doc.text

        config = ExactDedupConfig(content_getter=content)
        base = os.path.join(workdir, "exact")
        _run([_trove_docs(docs), ExactDedupSignature(os.path.join(base, "sigs"), config=config)], workdir, "e1")
        _run([ExactFindDedups(os.path.join(base, "sigs"), os.path.join(base, "dups"), config=config)], workdir, "e2")
        _run([_trove_docs(docs), ExactDedupFilter(os.path.join(base, "dups"), config=config), drain(docs)],
             workdir, "e3")

    def near(docs):
        from datatrove.pipeline.dedup import MinhashDedupSignature
        from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster,
                                                      MinhashDedupFilter)

        config, base = MinhashConfig(), os.path.join(workdir, "minhash")
        _run([_trove_docs(docs), MinhashDedupSignature(os.path.join(base, "sigs"), config=config)], workdir, "m1")
        _run([MinhashDedupBuckets(os.path.join(base, "sigs"), os.path.join(base, "buckets"), config=config)],
             workdir, "m2", tasks=config.num_buckets)
        _run([MinhashDedupCluster(os.path.join(base, "buckets"), os.path.join(base, "remove"), config=config)],
             workdir, "m3")
        _run([_trove_docs(docs), MinhashDedupFilter(os.path.join(base, "remove")), drain(docs)], workdir, "m4")

    def sentences(docs):
        from datatrove.pipeline.dedup.sentence_dedup import (SentDedupConfig, SentenceDedupFilter,
                                                             SentenceDedupSignature, SentenceFindDedups)

        base, config = os.path.join(workdir, "sentences"), SentDedupConfig()  # its default None breaks its __init__
        _run([_trove_docs(docs), SentenceDedupSignature(os.path.join(base, "sigs"), config=config)], workdir, "s1")
        _run([SentenceFindDedups(os.path.join(base, "sigs"), os.path.join(base, "dups"), config=config)],
             workdir, "s2")
        _run([_trove_docs(docs), SentenceDedupFilter(os.path.join(base, "dups"), config=config), drain(docs)],
             workdir, "s3")

    _patch_xxhash()
    return {"normalize": normalize, "dedup: exact": exact, "dedup: near (MinHash)": near,
            "dedup: sentences": sentences, "pii": pii}


NOTES = {
    "normalize": "datatrove: FTFYFormatter (full ftfy); corpusforge: encoding-only ftfy, NFC, controls, whitespace",
    "dedup: exact": "datatrove: 3 steps (signature, find, filter)",
    "dedup: near (MinHash)": "datatrove: 4 steps, 14x8 bands; corpusforge: 256 perms, verified pairs, components",
    "dedup: sentences": "datatrove: 3 steps, 3-sentence spans; corpusforge: single sentences, language-aware",
    "pii": "datatrove: e-mail + IP regexes; corpusforge: Presidio, 10 entity types, pre-screened",
}


def side_by_side(corpus: str, workdir: str | None = None, out=sys.stdout) -> list[dict]:
    """Print and return, per stage, documents per CPU-second (= docs/s per core) of corpusforge and datatrove on
    the corpus's documents. CPU time of this one process, which runs both one worker each: on a machine
    shared with other jobs it moves far less than wall time."""
    from loguru import logger  # datatrove's logger: its progress lines would bury the table

    logger.remove()
    docs = read_corpus(corpus)
    workdir = workdir or tempfile.mkdtemp(prefix="cf-bench-peer-")
    baseline = min(_beam_cpu_seconds(corpus, None) for _ in range(2))
    ours, theirs = corpusforge_stages(), datatrove_stages(workdir)
    print(f"\nper stage, {len(docs):,} documents, one worker each, documents per CPU-second (load average "
          f"{os.getloadavg()[0]:.1f}); corpusforge = the stage's Beam pipeline minus the same pipeline with an "
          f"identity step ({baseline:.1f} CPU s: reading, Beam)", file=out)
    print(f"{'stage':<24} {'corpusforge':>12} {'datatrove':>12} {'ratio':>6}  note", file=out)
    rows = []
    for stage, make in ours.items():
        seconds = max(_beam_cpu_seconds(corpus, make) - baseline, 1e-3)
        try:
            started = time.process_time()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                theirs[stage](docs)  # its executor adds log sinks of its own on each run
            peer = time.process_time() - started
            peer_rate, ratio = f"{len(docs) / peer:,.0f}", f"{peer / seconds:.2f}x"
        except Exception as exc:  # noqa: BLE001 - a peer step that cannot run offline is reported, not fatal
            peer, peer_rate, ratio = None, f"failed ({type(exc).__name__})", "-"
        rows.append({"stage": stage, "corpusforge_cpu_seconds": seconds, "datatrove_cpu_seconds": peer})
        print(f"{stage:<24} {len(docs) / seconds:>12,.0f} {peer_rate:>12} {ratio:>6}  {NOTES[stage]}", file=out,
              flush=True)
    return rows


def main() -> None:
    from bench.build import write_corpus

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="cf-bench-peer-")
    corpus = os.path.join(workdir, f"corpus-distinct-{args.docs}")
    write_corpus(corpus, args.docs, kind="distinct")
    side_by_side(corpus, workdir)


if __name__ == "__main__":
    main()
