"""Configuration of the deduplication stage: one section per sub-transform, all under ``dedup``.

    dedup:
      near: {candidate_threshold: 0.3, verify_threshold: 0.5}
      lines: {max_occurrences: 3}
      sentences: {max_occurrences: 3, min_sentence_chars: 20}
      decontaminate: {eval_sets: ["evals/*.jsonl"], action: flag}

The two near-duplicate thresholds were chosen on ``bench/dedup.py``; docs/dedup.md says why.
"""
from __future__ import annotations

import dataclasses
from typing import Literal

from corpusforge.core.config_loader import check, setting


def _f(default, help_text: str, same_output: bool = False):
    """``same_output``: the setting chooses only how the output is computed (left out of checkpoint fingerprints)."""
    return setting(default, help_text, same_output=same_output)


@dataclasses.dataclass
class ExactDedupConfig:
    enabled: bool = setting(True, "Remove documents whose normalised text (lower case, no punctuation, digits as 0, "
                             "single spaces) hashes the same as a better-ranked document's.")
    key_fold: Literal["lower", "nfkc_casefold"] = setting("lower", "How the exact-dedup key folds text before that: lower (lower case only, as before) or "
                 "nfkc_casefold (NFKC and Unicode case folding, so full-width letters, ligatures and case "
                 "variants such as Straße/STRASSE count as the same text).")


@dataclasses.dataclass
class NearDedupConfig:
    enabled: bool = setting(True, "Remove near-duplicates found with MinHash LSH and verified by signature similarity.")
    unit: Literal["word", "char"] = setting("word", "Shingle unit: word n-grams of the normalised words (a character of "
                                                    "a script without spaces, Han, kana, Thai..., is a word: "
                                                    "docs/dedup.md), or character n-grams of the normalised text.")
    ngram: int = setting(5, "Shingle length in units (5 words is the usual choice; use ~9-13 for characters).")
    num_perm: int = setting(256, "MinHash permutations (signature length); 256 keeps the estimate's standard error "
                            "at Jaccard 0.45 near 0.03, so verification separates 0.4 from 0.5.")
    seed: int = setting(1, "Seed of datasketch's permutations (datasketch's default is 1).")
    hash: Literal["fast", "sha1"] = setting("fast", "Shingle hash. fast: word hashes and n-gram hashes computed for a whole batch in numpy "
                "(signatures equal datasketch's MinHash with hashfunc=Shingler(...).hashfunc); sha1: datasketch's "
                "default hash of the shingle bytes (bit-identical with MinHash(num_perm, seed); ~4x slower).")
    candidate_threshold: float = setting(0.3, "Jaccard similarity that banding is tuned to find (recall): bands x rows "
                                         "come from datasketch's optimiser for this threshold unless set below.")
    verify_threshold: float = setting(0.5, "Estimated Jaccard (from the signatures) a candidate pair needs before it is "
                                      "linked (precision); stops chains of weak matches merging unrelated documents.")
    bands: int = setting(0, "LSH bands; 0 = chosen from candidate_threshold (set bands and rows together).")
    rows: int = setting(0, "Signature rows per band; 0 = chosen from candidate_threshold.")
    false_positive_weight: float = setting(0.5, "Weight of false positives in datasketch's band/row optimiser "
                                           "(false negatives get 1 minus this).")
    max_bucket_pairs: int = setting(50, "Buckets with up to this many documents yield all pairs as candidates; larger "
                                   "buckets link each member to the best-ranked member and to its predecessor.")
    components: Literal["auto", "distributed", "single"] = setting("auto", "How connected components of the verified pairs are found. distributed: max_rounds rounds of "
                "large-star/small-star, two shuffles each, a worker holding one node's edges at a time (for "
                "Dataflow, Spark, Flink, Dask). single: every verified pair (one per near-duplicate pair) gathered "
                "on one worker, which holds them all, and joined by union-find in one step (20 fewer fused stages "
                "than 10 rounds, no round limit). auto: single on Beam's DirectRunner (in-process or "
                "multi-process: its driver holds every shuffle in memory anyway), distributed on any other runner "
                "and for a NearDedup used without a build. Either way the same output.", same_output=True)
    max_rounds: int = setting(10, "Rounds of distributed connected components (large-star/small-star; components: "
                            "distributed, or auto off the DirectRunner); the build fails, saying so, if the graph "
                            "has not converged after them.")
    batch_size: int = setting(512, "Documents per vectorised signature batch (a document of n x 4 KB counts n times).", same_output=True)

    def __post_init__(self) -> None:
        check(self.ngram >= 1, f"dedup.near.ngram must be >= 1, got {self.ngram}")
        check(1 <= self.num_perm <= 1024, f"dedup.near.num_perm must be in 1..1024, got {self.num_perm}")
        check(0 < self.candidate_threshold < 1, f"dedup.near.candidate_threshold must be in (0, 1), got {self.candidate_threshold}")
        check(0 < self.verify_threshold <= 1, f"dedup.near.verify_threshold must be in (0, 1], got {self.verify_threshold}")
        check((self.bands == 0) == (self.rows == 0), "dedup.near.bands and dedup.near.rows must be set together (or both 0)")
        check(self.bands >= 0 and self.rows >= 0, "dedup.near.bands and dedup.near.rows must be >= 0")
        check(self.bands * self.rows <= self.num_perm,
              f"dedup.near.bands x rows ({self.bands} x {self.rows}) must not exceed num_perm ({self.num_perm})")
        check(0 < self.false_positive_weight < 1, "dedup.near.false_positive_weight must be in (0, 1)")
        check(self.max_bucket_pairs >= 2, f"dedup.near.max_bucket_pairs must be >= 2, got {self.max_bucket_pairs}")
        check(1 <= self.max_rounds <= 64, f"dedup.near.max_rounds must be in 1..64, got {self.max_rounds}")
        check(self.batch_size >= 1, f"dedup.near.batch_size must be >= 1, got {self.batch_size}")


@dataclasses.dataclass
class LineDedupConfig:
    enabled: bool = setting(True, "Remove lines (boilerplate: navigation, footers) repeated across many documents.")
    max_occurrences: int = setting(3, "A line found in more than this many documents is removed from all of them "
                                 "but the best-ranked one.")
    min_line_chars: int = setting(10, "Lines shorter than this (after normalisation) are never removed.")
    min_words: int = setting(20, "A document that lost lines and has fewer words left is removed "
                                 "(reason line_dedup_too_short); Han, kana and Thai characters count the English "
                                 "words they stand for (docs/dedup.md).")

    def __post_init__(self) -> None:
        check(self.max_occurrences >= 1, f"dedup.lines.max_occurrences must be >= 1, got {self.max_occurrences}")
        check(self.min_line_chars >= 1, f"dedup.lines.min_line_chars must be >= 1, got {self.min_line_chars}")
        check(self.min_words >= 0, f"dedup.lines.min_words must be >= 0, got {self.min_words}")


@dataclasses.dataclass
class SentenceDedupConfig:
    enabled: bool = setting(True, "Remove sentences repeated across many documents (boilerplate such as 'This article "
                             "first appeared in ...', even inside a line) and collapse a document's repeated sentences.")
    max_occurrences: int = setting(3, "A sentence found in more than this many documents is removed from all of them "
                                 "but the best-ranked one.")
    min_sentence_chars: int = setting(20, "Sentences shorter than this (after normalisation) are never removed or "
                                     "collapsed ('Yes.', 'Thank you.').")
    collapse_repeats: bool = setting(True, "Keep only the first of a sentence's repeats inside one document.")
    min_words: int = setting(20, "A document that lost sentences and has fewer words left is removed "
                                 "(reason sentence_dedup_too_short); Han, kana and Thai characters count the English "
                                 "words they stand for (docs/dedup.md).")

    def __post_init__(self) -> None:
        check(self.max_occurrences >= 1, f"dedup.sentences.max_occurrences must be >= 1, got {self.max_occurrences}")
        check(self.min_sentence_chars >= 1,
              f"dedup.sentences.min_sentence_chars must be >= 1, got {self.min_sentence_chars}")
        check(self.min_words >= 0, f"dedup.sentences.min_words must be >= 0, got {self.min_words}")


@dataclasses.dataclass
class DecontaminateConfig:
    eval_sets: list[str] = setting(help="Evaluation-set files or globs (any Beam filesystem): .jsonl/.json (one record a line, "
                          "text in text_field) or plain text (one example a line). Empty: no decontamination.", factory=list)
    ngram: int = setting(13, "Words per n-gram; a document sharing any with an eval set is contaminated (GPT-3 used 13).")
    action: Literal["remove", "flag"] = setting("remove", "remove: drop contaminated documents (reason "
                                                     "eval_contamination); flag: keep them, annotated.")
    text_field: str = setting("text", "Field holding the text in .jsonl eval sets.")

    def __post_init__(self) -> None:
        check(self.ngram >= 1, f"dedup.decontaminate.ngram must be >= 1, got {self.ngram}")


@dataclasses.dataclass
class DedupConfig:
    enabled: bool = setting(True, "Run the dedup stage.")
    survivor_score: str = setting("quality_score", "Annotation that ranks duplicates: the highest value survives, then "
                                              "the smallest id (documents without it rank after those with it).")
    joins: Literal["auto", "shuffle", "side_input", "batches"] = setting("auto", "How exact dedup, near dedup and line + sentence dedup join their verdicts (removals, dropped "
                "lines and sentences) back to the documents. shuffle: a CoGroupByKey by id, every document "
                "shuffled alone, a worker holding one id's documents and verdicts at a time. batches: the documents "
                "wait in batches of 256 under a batch key, every verdict goes to its document's batch, and one "
                "CoGroupByKey by batch key applies a step's verdicts to a whole batch (one shuffled record per "
                "256 documents; ids must be unique, as a build's are: elsewhere it is shuffle). side_input: the "
                "verdicts, far smaller than the documents, read by every worker as a side "
                "input and looked up per document: no document grouped (less CPU on the DirectRunner: "
                "docs/dedup.md), but each worker holds all of a step's verdicts, and runners other than the "
                "DirectRunner read them again for every bundle (Beam 2.77 keeps no side input across bundles): "
                "meant for the DirectRunner. auto: side_input on Beam's "
                "DirectRunner while its shuffles are in memory (a small corpus: output.disk_shuffle_mb), batches "
                "when they wait on disk (a side input would hold every document in memory until its verdicts are "
                "ready) and on any other runner, shuffle for a dedup transform used without a build. Every mode "
                "gives the same output.", same_output=True)
    decontaminate: DecontaminateConfig = setting(factory=DecontaminateConfig)
    exact: ExactDedupConfig = setting(factory=ExactDedupConfig)
    near: NearDedupConfig = setting(factory=NearDedupConfig)
    lines: LineDedupConfig = setting(factory=LineDedupConfig)
    sentences: SentenceDedupConfig = setting(factory=SentenceDedupConfig)
