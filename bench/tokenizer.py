"""Benchmark: tokenizer training and token-shard encoding on >= 100 MB of real text, against bare `tokenizers`.

Setup, once (Debian packages with prose; nothing is downloaded at run time):

    apt-get install -y python3.11-doc dict-gcide dict-wn debian-handbook perl-doc
    .venv/bin/pip install tiktoken

Run:

    .venv/bin/python bench/tokenizer.py                    # full corpus (~124 MB): 20-60 min on 2 shared cores
    .venv/bin/python bench/tokenizer.py --limit-mb 20      # a quick look

What it measures, each pair in the same run on the same text:
1. Training (BPE for decoders, WordPiece for encoders; vocabulary 32,000, min frequency 2): corpusforge's
   ``train_from_shards`` (streams the clean Arrow shards, samples, holds out 1 MB for the report, saves) against
   the same ``tokenizers`` model, normalizer, pre-tokenizer and trainer settings fed directly from the same
   shards with pyarrow (``train_from_iterator``), and against ``Tokenizer.train(files)`` on the same text as
   plain files (Rust reads them). Goal: corpusforge <= 1.1x the direct iterator time.
2. Encoding (the BPE tokenizer): the ``TokenizeShards`` Beam stage (DirectRunner; read, encode, split, sort,
   write Arrow shards and the manifest) against bare ``encode_batch`` / ``encode_batch_fast`` on the same
   texts already in memory, in MB of UTF-8 text per second. Goal: >= 0.8x bare ``encode_batch``.
3. An outside reference: tiktoken. Its ``gpt2`` encoding needs files from openaipublic.blob.core.windows.net;
   when they are not cached (offline), the benchmark says so and times tiktoken with *our* trained byte-level
   BPE converted to tiktoken's format (same vocabulary, GPT-2's split regex), and reports how often its ids
   equal ours.
"""
from __future__ import annotations

import argparse
import gzip
import html.parser
import json
import os
import pathlib
import re
import shutil
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402

from corpusforge.pipeline.document import DOCUMENT_SCHEMA  # noqa: E402

SOURCES = {
    "gcide": "/usr/share/dictd/gcide.dict.dz",
    "wordnet": "/usr/share/dictd/wn.dict.dz",
    "handbook": "/usr/share/doc/debian-handbook/html",
    "pydoc": "/usr/share/doc/python3.11/html/_sources",
    "perlpod": "/usr/share/perl/5.36.0/pod",
}
SETUP = "apt-get install -y python3.11-doc dict-gcide dict-wn debian-handbook perl-doc"
VOCAB = 32000
NUM_SHARDS = 4


# --- corpus ------------------------------------------------------------------------------------------------


class _HTMLText(html.parser.HTMLParser):
    BLOCKS = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "pre", "tr", "dt", "dd", "table"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.skip = max(0, self.skip - 1)

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _chunks(text: str, target: int = 4000):
    """Split a long text at line ends into pieces of about ``target`` characters (a blank line ends a piece early
    once it is half full)."""
    piece: list[str] = []
    size = 0
    for line in text.split("\n"):
        if size >= target or (not line and size >= target // 2):
            yield "\n".join(piece).strip()
            piece, size = [], 0
        piece.append(line)
        size += len(line) + 1
    if piece and "".join(piece).strip():
        yield "\n".join(piece).strip()


def documents():
    """``(id, text, source)`` from the installed Debian packages."""
    for name in ("gcide", "wordnet"):
        text = gzip.open(SOURCES[name]).read().decode("utf-8", "replace")
        for i, chunk in enumerate(_chunks(_tidy(text))):
            yield f"{name}-{i:07d}", chunk, name
    for i, path in enumerate(sorted(pathlib.Path(SOURCES["handbook"]).rglob("*.html"))):
        parser = _HTMLText()
        parser.feed(path.read_text(encoding="utf-8", errors="replace"))
        text = _tidy("".join(parser.parts))
        if text:
            yield f"handbook-{i:05d}", text, "handbook"
    for name, pattern in (("pydoc", "*.txt"), ("perlpod", "*.pod")):
        for i, path in enumerate(sorted(pathlib.Path(SOURCES[name]).rglob(pattern))):
            text = _tidy(path.read_text(encoding="utf-8", errors="replace"))
            if text:
                yield f"{name}-{i:05d}", text, name


def build_corpus(work: pathlib.Path, limit_mb: float) -> tuple[pathlib.Path, pathlib.Path, dict]:
    """Clean Arrow shards (as a build writes them) and the same texts as plain files; cached in ``work``."""
    clean, plain, info_path = work / "clean", work / "plain", work / "corpus.json"
    if info_path.exists():
        info = json.loads(info_path.read_text())
        if info["limit_mb"] == limit_mb:
            return clean, plain, info
    missing = [p for p in SOURCES.values() if not os.path.exists(p)]
    if missing:
        sys.exit(f"missing {missing[0]}; install the corpus first: {SETUP}")
    shutil.rmtree(work, ignore_errors=True)
    clean.mkdir(parents=True)
    plain.mkdir(parents=True)
    started = time.perf_counter()
    rows, size = [], 0
    for doc_id, text, source in documents():
        rows.append({"id": doc_id, "text": text, "source": source, "metadata": "{}", "annotations": "{}"})
        size += len(text.encode("utf-8"))
    rows.sort(key=lambda r: r["id"])
    if limit_mb:  # every n-th document: a mix of all sources
        step = max(1, round(size / (limit_mb * 1e6)))
        rows = rows[::step]
    for shard in range(NUM_SHARDS):
        part = rows[shard::NUM_SHARDS]
        path = clean / f"part-{shard:05d}-of-{NUM_SHARDS:05d}.arrow"
        with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, DOCUMENT_SCHEMA) as writer:
            for start in range(0, len(part), 2000):
                writer.write_batch(pa.RecordBatch.from_pylist(part[start:start + 2000], schema=DOCUMENT_SCHEMA))
        with open(plain / f"part-{shard:05d}.txt", "w", encoding="utf-8") as f:
            for row in part:
                f.write(row["text"])
                f.write("\n")
    by_source: dict[str, int] = {}
    for row in rows:
        by_source[row["source"]] = by_source.get(row["source"], 0) + len(row["text"].encode("utf-8"))
    info = {"limit_mb": limit_mb, "documents": len(rows), "bytes": sum(by_source.values()),
            "bytes_by_source": by_source, "build_seconds": round(time.perf_counter() - started, 1)}
    info_path.write_text(json.dumps(info, indent=2))
    return clean, plain, info


def _shard_paths(clean: pathlib.Path) -> list[str]:
    return sorted(str(p) for p in clean.glob("*.arrow"))


def _texts_batches(paths: list[str], batch: int = 1000):
    for path in paths:
        reader = ipc.open_file(pa.memory_map(path))
        for b in range(reader.num_record_batches):
            column = reader.get_batch(b).column("text")
            for start in range(0, len(column), batch):
                yield column.slice(start, batch).to_pylist()


# --- training ----------------------------------------------------------------------------------------------


def direct_tokenizer(kind: str):
    """The same tokenizer and trainer as corpusforge's, written out with bare ``tokenizers`` calls."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    if kind == "bpe":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=VOCAB, min_frequency=2, special_tokens=["<|endoftext|>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), max_token_length=16,
                                      show_progress=False)
    else:
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##", max_input_chars_per_word=100))
        tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##")
        trainer = trainers.WordPieceTrainer(vocab_size=VOCAB, min_frequency=2, show_progress=False, limit_alphabet=1000,
                                            special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
                                            continuing_subword_prefix="##")
    return tok, trainer


TIMES: dict[str, list[float]] = {}  # every timed run, for the JSON output


def _rotate(jobs: dict, repeat: int, label: str) -> dict[str, float]:
    """Best time of each job, all run ``repeat`` times in turns, forward then backward (ABC CBA ...), so a
    drift in the load of the shared machine hits every job alike."""
    names = list(jobs)
    for i in range(repeat):
        for name in names if i % 2 == 0 else names[::-1]:
            started = time.perf_counter()
            jobs[name]()
            TIMES.setdefault(f"{label}/{name}", []).append(round(time.perf_counter() - started, 2))
    return {name: min(TIMES[f"{label}/{name}"]) for name in names}


def bench_training(kind: str, family: str, clean: pathlib.Path, plain: pathlib.Path, work: pathlib.Path,
                   repeat: int) -> dict:
    from corpusforge.tokenizer.config import TokenizerConfig
    from corpusforge.tokenizer.train import train_from_shards

    paths = _shard_paths(clean)
    cfg = TokenizerConfig(family=family, kind=kind, vocab_size=VOCAB, min_frequency=2)
    reports = []

    def direct():
        tok, trainer = direct_tokenizer(kind)
        tok.train_from_iterator(_texts_batches(paths), trainer=trainer)
        tok.save(str(work / f"direct-{kind}.json"))

    def ours():
        reports.append(train_from_shards(cfg, str(clean), str(work / f"tokenizer-{kind}")))

    def from_files():
        tok, trainer = direct_tokenizer(kind)
        tok.train(sorted(str(p) for p in plain.glob("*.txt")), trainer=trainer)
        tok.save(str(work / f"files-{kind}.json"))

    best = _rotate({"corpusforge": ours, "direct_iterator": direct, "direct_files": from_files}, repeat, f"train-{kind}")
    ours_s, direct_s, from_files = best["corpusforge"], best["direct_iterator"], best["direct_files"]
    report = reports[-1]
    return {
        "kind": kind, "family": family, "vocab_size": report["vocab_size"],
        "corpusforge_s": round(ours_s, 2), "direct_iterator_s": round(direct_s, 2), "direct_files_s": round(from_files, 2),
        "ratio_vs_direct_iterator": round(ours_s / direct_s, 3), "ratio_vs_direct_files": round(ours_s / from_files, 3),
        "heldout": report["heldout"],
    }


# --- encoding ----------------------------------------------------------------------------------------------


def bench_encoding(clean: pathlib.Path, work: pathlib.Path, tokenizer_json: pathlib.Path, repeat: int,
                   batch: int = 256) -> dict:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from tokenizers import Tokenizer

    from corpusforge.tokenizer.tokenize import TokenizeShards

    texts = [t for b in _texts_batches(_shard_paths(clean)) for t in b]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    tok = Tokenizer.from_file(str(tokenizer_json))
    tok.encode_special_tokens = True

    def bare(method: str) -> int:
        encode = getattr(tok, method)
        tokens = 0
        for start in range(0, len(texts), batch):
            tokens += sum(len(e.ids) for e in encode(texts[start:start + batch], add_special_tokens=False))
        return tokens

    out = work / "tokens"
    logging_quiet()

    def stage():
        shutil.rmtree(out, ignore_errors=True)
        with beam.Pipeline(options=PipelineOptions(["--runner=DirectRunner"])) as p:
            _ = p | TokenizeShards(str(clean), str(out), str(tokenizer_json), val_fraction=0.01, batch_size=batch)

    counts: dict[str, int] = {}
    best = _rotate({"token_shards": stage,
                    "encode_batch": lambda: counts.__setitem__("encode_batch", bare("encode_batch")),
                    "encode_batch_fast": lambda: counts.__setitem__("encode_batch_fast", bare("encode_batch_fast"))},
                   repeat, "encode")
    stage_s, bare_s, fast_s = best["token_shards"], best["encode_batch"], best["encode_batch_fast"]
    bare_tokens = counts["encode_batch"]
    assert counts["encode_batch_fast"] == bare_tokens
    manifest = json.loads((out / "manifest.json").read_text())
    stage_tokens = manifest["splits"]["train"]["tokens"] + manifest["splits"]["val"]["tokens"]
    if stage_tokens != bare_tokens:
        raise SystemExit(f"token shards hold {stage_tokens} tokens, bare encoding gave {bare_tokens}")
    return {
        "text_mb": round(mb, 1), "documents": len(texts), "tokens": bare_tokens,
        "bare_encode_batch_mb_s": round(mb / bare_s, 2), "bare_encode_batch_fast_mb_s": round(mb / fast_s, 2),
        "token_shards_mb_s": round(mb / stage_s, 2), "token_shards_s": round(stage_s, 1),
        "ratio_vs_encode_batch": round(bare_s / stage_s, 3), "ratio_vs_encode_batch_fast": round(fast_s / stage_s, 3),
        "tiktoken": bench_tiktoken(texts, mb, tokenizer_json, tok),
    }


def bench_tiktoken(texts: list[str], mb: float, tokenizer_json: pathlib.Path, tok) -> dict:
    try:
        import tiktoken
    except ImportError:
        return {"skipped": "tiktoken is not installed (pip install tiktoken)"}
    result: dict = {}
    try:
        enc = tiktoken.get_encoding("gpt2")
        started = time.perf_counter()
        enc.encode_ordinary_batch(texts, num_threads=os.cpu_count() or 1)
        result["gpt2_mb_s"] = round(mb / (time.perf_counter() - started), 2)
    except Exception as exc:  # offline: the gpt2 files cannot be fetched
        result["gpt2"] = f"unavailable offline ({type(exc).__name__}); timed tiktoken with our BPE vocabulary instead"
    from corpusforge.tokenizer.train import token_surface

    data = json.loads(tokenizer_json.read_text())
    special = {t["content"]: t["id"] for t in data["added_tokens"]}
    ranks = {token_surface(token, "bpe"): idx for token, idx in data["model"]["vocab"].items() if token not in special}
    pattern = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    enc = tiktoken.Encoding("corpusforge-bpe", pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)
    started = time.perf_counter()
    encoded = enc.encode_ordinary_batch(texts, num_threads=os.cpu_count() or 1)
    seconds = time.perf_counter() - started
    sample = texts[:: max(1, len(texts) // 2000)]
    ours = [e.ids for e in tok.encode_batch(sample, add_special_tokens=False)]
    same = sum(a == b for a, b in zip(ours, enc.encode_ordinary_batch(sample)))
    result.update({"our_vocab_mb_s": round(mb / seconds, 2), "tokens": sum(map(len, encoded)),
                   "same_ids_share": round(same / len(sample), 4)})
    return result


def logging_quiet() -> None:
    import logging

    logging.getLogger("apache_beam").setLevel(logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default="/tmp/corpusforge-bench-tokenizer", help="Working directory (corpus cache).")
    parser.add_argument("--limit-mb", type=float, default=0.0, help="Use about this many MB of the corpus; 0: all.")
    parser.add_argument("--repeat", type=int, default=2,
                        help="Runs of each compared pair (alternating order; the best time of each side counts).")
    parser.add_argument("--train", nargs="*", default=["bpe", "wordpiece"], choices=["bpe", "wordpiece"],
                        help="Which training comparisons to run.")
    parser.add_argument("--no-encode", action="store_true", help="Skip the encoding comparison.")
    parser.add_argument("--json", default=None, help="Also write the results to this file.")
    args = parser.parse_args()
    work = pathlib.Path(args.work)
    logging_quiet()
    clean, plain, info = build_corpus(work, args.limit_mb)
    print(f"corpus: {info['documents']:,} documents, {info['bytes'] / 1e6:.1f} MB "
          f"({', '.join(f'{k} {v / 1e6:.1f} MB' for k, v in info['bytes_by_source'].items())}); "
          f"{os.cpu_count()} CPUs", flush=True)
    results = {"corpus": info, "cpus": os.cpu_count(), "repeat": args.repeat, "load_average_start": os.getloadavg(),
               "training": [], "encoding": None}
    kinds = [k for k in ("bpe", "wordpiece") if k in args.train]
    for kind, family in (("bpe", "decoder"), ("wordpiece", "encoder")):
        if kind not in kinds:
            continue
        row = bench_training(kind, family, clean, plain, work, args.repeat)
        results["training"].append(row)
        print(f"train {kind:9s}: corpusforge {row['corpusforge_s']:.1f} s, direct tokenizers (same shards) "
              f"{row['direct_iterator_s']:.1f} s -> {row['ratio_vs_direct_iterator']:.2f}x; "
              f"Tokenizer.train(files) {row['direct_files_s']:.1f} s -> {row['ratio_vs_direct_files']:.2f}x; "
              f"held-out {row['heldout']['chars_per_token']} chars/token", flush=True)
    if args.no_encode:
        _finish(results, args)
        return
    tokenizer_json = work / "tokenizer-bpe" / "tokenizer.json"
    if not tokenizer_json.exists():  # the BPE training comparison was skipped: train the tokenizer untimed
        from corpusforge.tokenizer.config import TokenizerConfig
        from corpusforge.tokenizer.train import train_from_shards

        train_from_shards(TokenizerConfig(family="decoder", vocab_size=VOCAB), str(clean), str(tokenizer_json.parent))
    enc = bench_encoding(clean, work, tokenizer_json, args.repeat)
    results["encoding"] = enc
    print(f"encode bpe: token shards (Beam DirectRunner) {enc['token_shards_mb_s']:.2f} MB/s; bare encode_batch "
          f"{enc['bare_encode_batch_mb_s']:.2f} MB/s -> {enc['ratio_vs_encode_batch']:.2f}x; encode_batch_fast "
          f"{enc['bare_encode_batch_fast_mb_s']:.2f} MB/s -> {enc['ratio_vs_encode_batch_fast']:.2f}x", flush=True)
    tk = enc["tiktoken"]
    if "gpt2_mb_s" in tk:
        print(f"tiktoken gpt2: {tk['gpt2_mb_s']:.2f} MB/s", flush=True)
    if "our_vocab_mb_s" in tk:
        print(f"tiktoken with our BPE vocabulary: {tk['our_vocab_mb_s']:.2f} MB/s, same ids as tokenizers on "
              f"{100 * tk['same_ids_share']:.1f}% of sampled documents" + (f" ({tk['gpt2']})" if "gpt2" in tk else ""))
    elif "skipped" in tk:
        print(f"tiktoken: skipped: {tk['skipped']}")
    _finish(results, args)


def _finish(results: dict, args) -> None:
    results["load_average_end"] = os.getloadavg()
    results["all_times_s"] = TIMES
    print(f"every timed run (s): {json.dumps(TIMES)}")
    print(f"load average (1, 5, 15 min) at start {results['load_average_start']}, at end {results['load_average_end']}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
