"""The *decide* half of the heuristic rules: pure functions of (measured values, config) -> reason or None.

Each ``decide_<family>`` checks its thresholds in the order of the reference rule in ``rules.py`` and returns the
same reason string; ``decide_heuristics`` chains the families in the stage's order (length, blocklist, C4's
empty-after-edit, junk, Gopher quality, repetition, C4's page rules, FineWeb). Nothing here reads text, so
``corpusforge rethreshold`` re-decides a built run from its stored values alone.
"""
from __future__ import annotations

import functools
from typing import Any

from corpusforge.pipeline.quality.config import (
    C4Config, FineWebConfig, GopherConfig, JunkConfig, LengthConfig, QualityConfig, RepetitionConfig, ngram_table,
)

Values = dict[str, Any]
# The families of stored values, in the order the stage decides them (C4's empty check comes before junk).
FAMILIES = ("length", "blocklist", "junk", "gopher", "repetition", "c4", "fineweb")


class NotMeasured(ValueError):
    """A decision needs a value that was not measured for this document."""


def decide_length(v: Values, cfg: LengthConfig) -> str | None:
    if cfg.min_chars is not None and v["n_chars"] < cfg.min_chars:
        return "length_too_short"
    if cfg.max_chars is not None and v["n_chars"] > cfg.max_chars:
        return "length_too_long"
    if cfg.min_words is not None or cfg.max_words is not None:
        n_words = v["n_words"]
        if n_words is None:
            raise NotMeasured("length.n_words")
        if cfg.min_words is not None and n_words < cfg.min_words:
            return "length_too_few_words"
        if cfg.max_words is not None and n_words > cfg.max_words:
            return "length_too_many_words"
    return None


def decide_junk(v: Values, cfg: JunkConfig) -> str | None:
    if v["empty"]:
        return "junk_empty"
    if cfg.max_mojibake_fraction is not None and v["mojibake_fraction"] > cfg.max_mojibake_fraction:
        return "junk_mojibake"
    if cfg.max_non_letter_fraction is not None and v["non_letter_fraction"] > cfg.max_non_letter_fraction:
        return "junk_non_letter"
    if cfg.drop_lorem_ipsum and v["lorem_ipsum"]:
        return "junk_lorem_ipsum"
    if cfg.max_boilerplate_fraction is not None and v["boilerplate_fraction"] > cfg.max_boilerplate_fraction:
        return "junk_boilerplate"
    if cfg.max_url_fraction is not None and v["url_fraction"] > cfg.max_url_fraction:
        return "junk_links"
    if (cfg.max_lowercase_sentence_starts is not None and v["sentence_starts"] >= 3
            and v["lowercase_start_fraction"] > cfg.max_lowercase_sentence_starts):
        return "junk_word_salad"
    if (cfg.max_top_word_fraction is not None and v["n_words"] >= cfg.top_word_min_words and v["top_word_count"] >= 4
            and v["top_word_count"] / v["n_words"] > cfg.max_top_word_fraction):
        return "junk_keyword_stuffing"
    return None


def decide_gopher(v: Values, cfg: GopherConfig) -> str | None:
    no_space = v["no_space"]
    if not no_space:
        if cfg.min_words is not None and v["n_words"] < cfg.min_words:
            return "gopher_short_doc"
        if cfg.max_words is not None and v["n_words"] > cfg.max_words:
            return "gopher_long_doc"
        mean = v["mean_word_length"]
        if mean is not None:
            if cfg.min_mean_word_length is not None and mean < cfg.min_mean_word_length:
                return "gopher_short_mean_word"
            if cfg.max_mean_word_length is not None and mean > cfg.max_mean_word_length:
                return "gopher_long_mean_word"
    if v["n_tokens"] == 0:
        return "gopher_no_words"
    if cfg.max_symbol_word_ratio is not None:
        if v["hash_ratio"] > cfg.max_symbol_word_ratio:
            return "gopher_too_many_hashes"
        if v["ellipsis_ratio"] > cfg.max_symbol_word_ratio:
            return "gopher_too_many_ellipsis"
    if (cfg.max_bullet_lines_ratio is not None or cfg.max_ellipsis_lines_ratio is not None) and (
        cfg.line_rules_min_lines is None or v["n_lines"] >= cfg.line_rules_min_lines
    ):
        if cfg.max_bullet_lines_ratio is not None and v["bullet_lines_fraction"] > cfg.max_bullet_lines_ratio:
            return "gopher_too_many_bullets"
        if cfg.max_ellipsis_lines_ratio is not None and v["ellipsis_lines_fraction"] > cfg.max_ellipsis_lines_ratio:
            return "gopher_too_many_end_ellipsis"
    alpha = v["alpha_words_fraction"]
    if cfg.min_alpha_words_ratio is not None and alpha is not None and alpha < cfg.min_alpha_words_ratio:
        return "gopher_below_alpha_threshold"
    if no_space:
        return None
    if cfg.stop_words_per_language:
        if not v["stop_words_known"]:
            return None
        if cfg.min_stop_words is not None:
            needed = cfg.min_stop_words
            if cfg.short_doc_words is not None and v["n_words"] < cfg.short_doc_words:
                needed = min(needed, 1)
            if v["n_stop_words"] < needed:
                return "gopher_few_stop_words"
        fraction = v["stop_word_fraction"]
        if (cfg.min_stop_word_fraction is not None and v["n_words"] >= cfg.stop_word_fraction_min_words
                and fraction is not None and fraction < cfg.min_stop_word_fraction):
            return "gopher_low_stop_word_fraction"
    elif cfg.min_stop_words is not None and v["n_stop_words"] < cfg.min_stop_words:
        return "gopher_few_stop_words"
    return None


def decide_repetition(v: Values, cfg: RepetitionConfig) -> str | None:
    if v["empty"]:
        return "rep_empty"
    for key, limit in (("dup_para_frac", cfg.max_dup_para_frac), ("dup_para_char_frac", cfg.max_dup_para_char_frac),
                       ("dup_line_frac", cfg.max_dup_line_frac), ("dup_line_char_frac", cfg.max_dup_line_char_frac)):
        if limit is not None and v[key] > limit:
            return f"rep_{key}"
    if cfg.ngram_min_words is not None and v["n_content_words"] < cfg.ngram_min_words:
        return None
    tops, dups = _ngram_rules(ngram_table(tuple(cfg.top_ngram_char_frac.items())),
                              ngram_table(tuple(cfg.dup_ngram_char_frac.items())))
    for count_key, frac_key, frac, reason in tops:
        count = _measured(v, count_key)
        if count is None:  # fewer words than n
            continue
        if count < 2 and cfg.top_ngram_needs_repeat:
            continue
        if v[frac_key] > frac:
            return reason
    for key, frac, reason in dups:
        if _measured(v, key, required=True) > frac:
            return reason
    return None


@functools.lru_cache(maxsize=64)
def _ngram_rules(top: tuple[tuple[int, float], ...], dup: tuple[tuple[int, float], ...]):
    """The n-gram rules' value keys, limits and reasons per table (``cfg.top_ngrams()``, ``cfg.dup_ngrams()``), spelt
    once per config instead of per document."""
    return (tuple((f"top_{n}gram_count", f"top_{n}gram_char_frac", frac, f"rep_top_{n}gram") for n, frac in top),
            tuple((f"dup_{n}gram_char_frac", frac, f"rep_dup_{n}gram") for n, frac in dup))


def _measured(v: Values, key: str, required: bool = False) -> Any:
    if key not in v:
        raise NotMeasured(f"repetition.{key}")
    if required and v[key] is None:
        raise NotMeasured(f"repetition.{key}")
    return v[key]


def decide_c4_empty(v: Values, cfg: C4Config) -> str | None:
    """C4's check right after its line edits, before every other family."""
    return "c4_empty_after_edit" if cfg.drop_empty_after_edit and v["empty"] else None


def decide_c4(v: Values, cfg: C4Config) -> str | None:
    if cfg.drop_empty_after_edit and v["empty"]:
        return "c4_empty_after_edit"
    if cfg.drop_lorem_ipsum and v["lorem_ipsum"]:
        return "c4_lorem_ipsum"
    if cfg.drop_curly_bracket and v["curly_bracket"]:
        return "c4_curly_bracket"
    if v["bad_words"]:
        return "c4_bad_words"
    if cfg.min_sentences is not None and v["n_sentences"] < cfg.min_sentences:
        return "c4_too_few_sentences"
    return None


def decide_fineweb(v: Values, cfg: FineWebConfig) -> str | None:
    if not v["n_lines"]:
        return "fineweb_empty"
    if cfg.min_line_punct_ratio is not None and v["line_punct_ratio"] < cfg.min_line_punct_ratio:
        return "fineweb_line_punct_ratio"
    if cfg.max_short_line_ratio is not None and v["short_line_ratio"] > cfg.max_short_line_ratio:
        return "fineweb_short_line_ratio"
    if cfg.max_char_dup_ratio is not None and v["char_dup_ratio"] > cfg.max_char_dup_ratio:
        return "fineweb_char_dup_ratio"
    if cfg.max_newline_word_ratio is not None and v["newline_word_ratio"] > cfg.max_newline_word_ratio:
        return "fineweb_list_ratio"
    return None


def decide_heuristics(values: dict[str, Values | None], cfg: QualityConfig) -> str | None:
    """The reason the heuristic step gives a document whose measured values are ``values``, or None (kept).

    Raises ``NotMeasured`` when a decision needs a family (or a value) that was not measured. The blocklist's
    value is its reason (None: no list configured, or no match)."""
    for family, decide in decision_steps(cfg):
        v = values.get(family)
        if v is None and family != "blocklist":
            raise NotMeasured(family)
        reason = decide(v)
        if reason:
            return reason
    return None


def decision_steps(cfg: QualityConfig):
    """``(family, decide)`` of every enabled family in the order its rules apply: the one step list of the
    heuristic rules (``HeuristicRules.apply`` measures on the way; C4 twice: empty after its edits, then its
    page rules)."""
    yield "length", lambda v: decide_length(v, cfg.length)
    yield "blocklist", lambda v: v["reason"] if v else None
    if cfg.c4.enabled:
        yield "c4", lambda v: decide_c4_empty(v, cfg.c4)
    if cfg.junk.enabled:
        yield "junk", lambda v: decide_junk(v, cfg.junk)
    if cfg.gopher.enabled:
        yield "gopher", lambda v: decide_gopher(v, cfg.gopher)
    if cfg.repetition.enabled:
        yield "repetition", lambda v: decide_repetition(v, cfg.repetition)
    if cfg.c4.enabled:
        yield "c4", lambda v: decide_c4(v, cfg.c4)
    if cfg.fineweb.enabled:
        yield "fineweb", lambda v: decide_fineweb(v, cfg.fineweb)


# The config keys ``decide_heuristics`` reads, per family: what ``corpusforge rethreshold`` may change. Not here:
# C4's line edits (they change the text), the blocklist (its lists are not values), language ID, toxicity and
# classifiers (their removals were never measured by the rules), and settings the measures depend on.
_THRESHOLDS = {
    "length": ("min_chars", "max_chars", "min_words", "max_words"),
    "junk": ("enabled", "max_mojibake_fraction", "max_non_letter_fraction", "drop_lorem_ipsum", "max_boilerplate_fraction",
             "max_top_word_fraction", "top_word_min_words", "max_url_fraction", "max_lowercase_sentence_starts"),
    "gopher": ("enabled", "min_words", "max_words", "min_mean_word_length", "max_mean_word_length",
               "max_symbol_word_ratio", "max_bullet_lines_ratio", "max_ellipsis_lines_ratio", "min_alpha_words_ratio",
               "min_stop_words", "short_doc_words", "line_rules_min_lines", "min_stop_word_fraction",
               "stop_word_fraction_min_words"),
    "repetition": ("enabled", "max_dup_line_frac", "max_dup_para_frac", "max_dup_line_char_frac",
                   "max_dup_para_char_frac", "ngram_min_words", "top_ngram_needs_repeat"),
    "c4": ("drop_lorem_ipsum", "drop_curly_bracket", "min_sentences", "drop_empty_after_edit"),
    "fineweb": ("enabled", "min_line_punct_ratio", "max_short_line_ratio", "max_char_dup_ratio",
                "max_newline_word_ratio"),
}


def threshold_keys(cfg: QualityConfig) -> set[str]:
    """``quality.<family>.<key>`` of every threshold a run built with ``cfg`` can be re-decided on; the n-gram
    tables by the n its build measured (``quality.repetition.top_ngram_char_frac.3``)."""
    keys = {f"quality.{family}.{key}" for family, names in _THRESHOLDS.items() for key in names}
    keys |= {f"quality.repetition.top_ngram_char_frac.{n}" for n, _ in cfg.repetition.top_ngrams()}
    keys |= {f"quality.repetition.dup_ngram_char_frac.{n}" for n, _ in cfg.repetition.dup_ngrams()}
    return keys
