"""A small hand-written run directory with every part the report reads, and known numbers."""
from __future__ import annotations

import json
import pathlib

from corpusforge.pipeline.document import DOCUMENT_SCHEMA, REJECTED_SCHEMA, REMOVED_SCHEMA
from corpusforge.pipeline.shards import write_arrow_file

NEAR_DUPLICATE_TAIL = "Copied from a mirror."
NASTY = 'Click <script>alert("x")</script> <img src="http://evil.example/pixel.png"> & more'


def _doc(i: int, lang: str = "en", score: float = 0.9, pii: int = 0) -> dict:
    text = f"Kept document {i} with enough words to look like prose. " * 3
    return {"id": f"web/doc-{i:04d}", "text": text, "source": "web", "metadata": "{}",
            "annotations": json.dumps({"lang": lang, "lang_score": score, "quality_score": 0.5 + i / 200,
                                       "pii_count": pii})}


def _removed(i: int, stage: str, reason: str, details: dict, text: str | None = None, lang: str = "en",
             score: float = 0.3) -> dict:
    return {"id": f"web/rem-{stage}-{i:04d}", "source": "web", "stage": stage, "reason": reason,
            "details": json.dumps(details), "text": text or f"Removed by {reason}, number {i}. " * 40,
            "annotations": json.dumps({"lang": lang, "lang_score": score})}


STATS = {
    "accounting": {"input": 124, "kept": 80, "removed": 40, "rejected": 4, "balanced": True},
    "funnel": [
        {"stage": "read", "documents": 120, "chars": 48000},
        {"stage": "normalize", "documents": 120, "chars": 47900},
        {"stage": "quality", "documents": 97, "chars": 40100},
        {"stage": "dedup", "documents": 82, "chars": 33300},
        {"stage": "pii", "documents": 80, "chars": 32900},
    ],
    "removed": {"total": 40, "by_stage": {
        "quality": {"total": 23, "chars": 7800, "reasons": {"gopher_short_doc": 15, "langid_low_score": 8}},
        "dedup": {"total": 15, "chars": 6800, "reasons": {"minhash_near_duplicate": 12, "exact_duplicate": 3}},
        "pii": {"total": 2, "chars": 400, "reasons": {"pii_dense": 2}},
    }},
    "rejected": {"total": 4, "reasons": {"malformed_json": 3, "invalid_utf8": 1}},
    "edits": {"pii": {"docs_changed": 9, "entity_EMAIL_ADDRESS": 7, "entity_PHONE_NUMBER": 4, "entity_CREDIT_CARD": 1},
              "quality": {"c4_lines_removed": 5}},
    "histograms": {"length_in": {"64": 4, "256": 30, "512": 60, "1024": 26},
                   "length_out": {"256": 20, "512": 40, "1024": 20}},
    "languages": {"en": 77, "de": 3},
    "timing": {"wall_seconds": 12.5, "records_per_second": 9.9, "chars_in": 48000},
}


def write_run(root: pathlib.Path, *, build=True, tokenizer=True, training=True) -> pathlib.Path:
    root.mkdir(parents=True, exist_ok=True)
    if build:
        (root / "stats.json").write_text(json.dumps(STATS))
        (root / "manifest.json").write_text(json.dumps({
            "corpusforge_version": "0.1.0", "created_unix": 1_790_000_000, "rows": 80, "bytes": 123_456,
            "shards": [{"file": "part-00000-of-00002.arrow"}, {"file": "part-00001-of-00002.arrow"}],
            "stages": ["normalize", "quality", "dedup", "pii"], "config": {"beam": {"runner": "DirectRunner"},
                                                         "quality": {"langid": {"min_score": 0.65}}},
            "versions": {"python": "3.11.7"}}))
        (root / "clean").mkdir()
        docs = [_doc(i, lang="de" if i % 27 == 0 else "en", pii=i % 3) for i in range(80)]
        write_arrow_file(str(root / "clean" / "part-00000-of-00002.arrow"), DOCUMENT_SCHEMA, docs[:40])
        write_arrow_file(str(root / "clean" / "part-00001-of-00002.arrow"), DOCUMENT_SCHEMA, docs[40:])
        removed = [_removed(i, "quality", "gopher_short_doc", {}) for i in range(15)]
        removed[7]["text"] = NASTY
        removed += [_removed(i, "quality", "langid_low_score", {"lang": "xx"}, lang="xx", score=0.2) for i in range(8)]
        # Near duplicates: one cluster of 5 (survivor doc-0001, four removed) and four clusters of 3 (survivors
        # doc-0010 to doc-0013, two removed each), each a kept document's text with a line added.
        removed += [_removed(i, "dedup", "minhash_near_duplicate", {"survivor_id": "web/doc-0001", "cluster_size": 5},
                             text=docs[1]["text"] + NEAR_DUPLICATE_TAIL) for i in range(4)]
        removed += [_removed(4 + i, "dedup", "minhash_near_duplicate", {"survivor_id": f"web/doc-{10 + i // 2:04d}"},
                             text=docs[10 + i // 2]["text"] + NEAR_DUPLICATE_TAIL) for i in range(8)]
        # Exact duplicates that report only a cluster size: three removed pairs.
        removed += [_removed(20 + i, "dedup", "exact_duplicate", {"cluster_size": 2}) for i in range(3)]
        removed += [_removed(i, "pii", "pii_dense", {"entities": 12}, text="Mail [EMAIL_ADDRESS] or call [PHONE_NUMBER].")
                    for i in range(2)]
        (root / "removed").mkdir()
        write_arrow_file(str(root / "removed" / "part-00000-of-00001.arrow"), REMOVED_SCHEMA, removed)
        (root / "rejected").mkdir()
        rejected = [{"source": "web", "path": "web.jsonl", "position": p, "reason": "malformed_json",
                     "detail": "Expecting value", "raw": "{broken <b>bold</b>"} for p in (3, 9, 12)]
        rejected.append({"source": "web", "path": "web.jsonl", "position": 20, "reason": "invalid_utf8",
                         "detail": "bad byte", "raw": "caf\\xe9"})
        write_arrow_file(str(root / "rejected" / "part-00000-of-00001.arrow"), REJECTED_SCHEMA, rejected)
    if tokenizer:
        (root / "tokenizer").mkdir()
        (root / "tokenizer" / "report.json").write_text(json.dumps({
            "kind": "bpe", "family": "decoder", "vocab_size": 4096, "requested_vocab_size": 4096,
            "special_tokens": {"bos": 0, "eos": 0},
            "training": {"documents": 80, "chars": 32900, "bytes": 33000, "seconds": 0.4},
            "heldout": {"documents": 8, "chars_per_token": 3.9876, "bytes_per_token": 4.0123, "unk_share": 0.0,
                        "round_trip_share": 1.0},
            "longest_tokens": [{"id": 4001, "token": "Ġinternationalization", "text": " internationalization", "bytes": 21},
                               {"id": 17, "token": "<tag>", "text": "<tag>", "bytes": 5}]}))
        (root / "tokens").mkdir()
        (root / "tokens" / "manifest.json").write_text(json.dumps({
            "vocab_size": 4096, "dtype": "uint16",
            "splits": {"train": {"shards": ["a"], "documents": 76, "tokens": 9000},
                       "val": {"shards": ["b"], "documents": 4, "tokens": 500}},
            "mixture": {"target_tokens": 9000, "seed": 0, "weights": {"books": 1.0, "web": 1.0}},
            "sources": {
                "books": {"weight": 1.0, "epochs": 3.0, "documents_before": 10, "tokens_before": 1500,
                          "share_before": 0.166667, "documents": 30, "tokens": 4500, "share": 0.5,
                          "epochs_written": 3.0},
                "web": {"weight": 1.0, "epochs": 0.6, "documents_before": 66, "tokens_before": 7500,
                        "share_before": 0.833333, "documents": 46, "tokens": 4500, "share": 0.5,
                        "epochs_written": 0.6}},
            "languages": {
                "en": {"documents_before": 70, "tokens_before": 8000, "share_before": 0.888889, "documents": 70,
                       "tokens": 7000, "share": 0.777778},
                "de": {"documents_before": 6, "tokens_before": 1000, "share_before": 0.111111, "documents": 6,
                       "tokens": 2000, "share": 0.222222}}}))
    if training:
        (root / "model").mkdir()
        lines = []
        for step in range(10, 110, 10):
            lines.append(json.dumps({"step": step, "split": "train", "loss": 8 - step / 50, "lr": 3e-4 * min(1, step / 30),
                                     "grad_norm": 1.0, "tokens_per_s": 1000 + step}))
            if step % 50 == 0:
                lines.append(json.dumps({"step": step, "split": "val", "loss": 7.5 - step / 100, "ppl": 2.718 ** (7.5 - step / 100),
                                         "accuracy": 0.1, "tokens": 1024}))
        (root / "model" / "metrics.jsonl").write_text("\n".join(lines) + "\n" + '{"step": 110, "spl')  # still writing
        (root / "model" / "config.json").write_text(json.dumps({
            "objective": "clm", "model": {"arch": "decoder", "d_model": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 4096}}))
    return root
