"""The quality rules written plainly, one function per family (and the chain of them), pinning the behaviour of
the production path (pipeline/quality: measure.py -> decide.py, HeuristicRules): the tests hold every document
to the same reason under both. Production never calls these; the production code is the definition."""
from __future__ import annotations

import math
import re
from collections import Counter

from corpusforge.pipeline.quality.config import (
    C4Config, FineWebConfig, GopherConfig, JunkConfig, LengthConfig, RepetitionConfig,
)
from corpusforge.pipeline.quality.rules import CITATION_CANDIDATE, KEEP, POLICY_SUBSTRINGS, HeuristicRules, c4_edit
from corpusforge.pipeline.quality.text import (
    CLOSERS, FINEWEB_STOP, ALL_STOP_WORDS, BOILERPLATE_RE, GOPHER_STOP_WORDS, LETTER_RE, LINES_RE, LOREM_WORDS,
    MOJIBAKE_RE, PARAGRAPH_RE, SENTENCE_START_RE, SPACE_RE, STOP_WORDS, URL_TOKEN_RE, TextView, as_view,
    base_language, count_sentences, duplicated_ngram_chars, find_duplicates, stop_words_for, words,
)


def length_rule(text: str | TextView, cfg: LengthConfig) -> str | None:
    view = as_view(text)
    n_chars = len(view.text)
    if cfg.min_chars is not None and n_chars < cfg.min_chars:
        return "length_too_short"
    if cfg.max_chars is not None and n_chars > cfg.max_chars:
        return "length_too_long"
    if cfg.min_words is not None or cfg.max_words is not None:
        n_words = len(view.content_words)
        if cfg.min_words is not None and n_words < cfg.min_words:
            return "length_too_few_words"
        if cfg.max_words is not None and n_words > cfg.max_words:
            return "length_too_many_words"
    return KEEP


def junk_rule(text: str | TextView, cfg: JunkConfig, lang: str | None = None) -> str | None:
    """corpusforge's junk detectors: mojibake, symbol/number runs, lorem ipsum, boilerplate, stuffing, links."""
    view = as_view(text)
    t = view.text
    if not t.strip():
        return "junk_empty"
    if cfg.max_mojibake_fraction is not None:
        bad = sum(len(m) for m in MOJIBAKE_RE.findall(t))
        if bad and bad / len(t) > cfg.max_mojibake_fraction:
            return "junk_mojibake"
    if cfg.max_non_letter_fraction is not None:
        non_space = len(t) - SPACE_RE.subn("", t)[1]
        letters = LETTER_RE.subn("", t)[1]
        if non_space and 1.0 - letters / non_space > cfg.max_non_letter_fraction:
            return "junk_non_letter"
    lower_words = view.lower_words
    if cfg.drop_lorem_ipsum:
        if "lorem ipsum" in t.lower() or (
            lower_words and sum(w in LOREM_WORDS for w in lower_words) / len(lower_words) >= 0.15
        ):
            return "junk_lorem_ipsum"
    if cfg.max_boilerplate_fraction is not None:
        boiler = 0
        for line in view.splitlines:
            if BOILERPLATE_RE.search(line):
                boiler += len(line) + 1
        if boiler and boiler / (len(t) + 1) > cfg.max_boilerplate_fraction:
            return "junk_boilerplate"
    if cfg.max_url_fraction is not None and lower_words:
        urls = sum(1 for w in view.words if URL_TOKEN_RE.match(w) or ("@" in w and "." in w))
        if urls / len(lower_words) > cfg.max_url_fraction:
            return "junk_links"
    if cfg.max_lowercase_sentence_starts is not None:
        starts = SENTENCE_START_RE.findall(t)
        if len(starts) >= 3 and sum(1 for c in starts if c.islower()) / len(starts) > cfg.max_lowercase_sentence_starts:
            return "junk_word_salad"
    if cfg.max_top_word_fraction is not None and len(lower_words) >= cfg.top_word_min_words:
        stop = STOP_WORDS.get(base_language(lang) or "", ALL_STOP_WORDS)
        counts = Counter(w for w in lower_words if len(w) > 2 and w not in stop and not w.isdigit())
        if counts:
            top = counts.most_common(1)[0][1]
            if top >= 4 and top / len(lower_words) > cfg.max_top_word_fraction:
                return "junk_keyword_stuffing"
    return KEEP


def gopher_quality(text: str | TextView, cfg: GopherConfig, lang: str | None = None) -> str | None:
    """Gopher's quality rules (Rae et al. 2021, appendix A.1.1), with the adapted options of ``GopherConfig``."""
    view = as_view(text)
    t = view.text
    all_words = view.words
    n_tokens = len(all_words)
    content = view.content_words
    n_words = len(content)
    base = base_language(lang)
    no_space = base in cfg.no_space_languages if base else False

    if not no_space:
        if cfg.min_words is not None and n_words < cfg.min_words:
            return "gopher_short_doc"
        if cfg.max_words is not None and n_words > cfg.max_words:
            return "gopher_long_doc"
        if content:
            mean_len = sum(map(len, content)) / n_words
            if cfg.min_mean_word_length is not None and mean_len < cfg.min_mean_word_length:
                return "gopher_short_mean_word"
            if cfg.max_mean_word_length is not None and mean_len > cfg.max_mean_word_length:
                return "gopher_long_mean_word"
    if n_tokens == 0:
        return "gopher_no_words"
    if cfg.max_symbol_word_ratio is not None:
        if t.count("#") / n_tokens > cfg.max_symbol_word_ratio:
            return "gopher_too_many_hashes"
        if (t.count("...") + t.count("…")) / n_tokens > cfg.max_symbol_word_ratio:
            return "gopher_too_many_ellipsis"
    lines = view.splitlines or [""]
    if (cfg.max_bullet_lines_ratio is not None or cfg.max_ellipsis_lines_ratio is not None) and (
        cfg.line_rules_min_lines is None or len(lines) >= cfg.line_rules_min_lines
    ):
        if cfg.max_bullet_lines_ratio is not None:
            bullets = sum(1 for s in lines if s.lstrip().startswith(("•", "-")))
            if bullets / len(lines) > cfg.max_bullet_lines_ratio:
                return "gopher_too_many_bullets"
        if cfg.max_ellipsis_lines_ratio is not None:
            ends = sum(1 for s in lines if s.rstrip().endswith(("...", "…")))
            if ends / len(lines) > cfg.max_ellipsis_lines_ratio:
                return "gopher_too_many_end_ellipsis"
    if cfg.min_alpha_words_ratio is not None:
        pool = all_words if cfg.alpha_ratio_counts_punctuation else content
        if pool:
            alpha = sum(1 for w in pool if any(c.isalpha() for c in w))
            if alpha / len(pool) < cfg.min_alpha_words_ratio:
                return "gopher_below_alpha_threshold"
    if no_space:
        return KEEP
    if cfg.stop_words_per_language:
        stop = stop_words_for(base, cfg)
        if stop is None:
            return KEEP
        lower = view.lower_words
        if cfg.min_stop_words is not None:
            needed = cfg.min_stop_words
            if cfg.short_doc_words is not None and len(lower) < cfg.short_doc_words:
                needed = min(needed, 1)
            if len(stop.intersection(lower)) < needed:
                return "gopher_few_stop_words"
        if (cfg.min_stop_word_fraction is not None and len(lower) >= cfg.stop_word_fraction_min_words
                and sum(1 for w in lower if w in stop) / len(lower) < cfg.min_stop_word_fraction):
            return "gopher_low_stop_word_fraction"
    elif cfg.min_stop_words is not None:
        stop = GOPHER_STOP_WORDS | frozenset(cfg.stop_words.get("en", ()))
        if len(stop.intersection(all_words)) < cfg.min_stop_words:
            return "gopher_few_stop_words"
    return KEEP


def gopher_repetition(text: str | TextView, cfg: RepetitionConfig) -> str | None:
    """Gopher's repetition rules (Rae et al. 2021, table A1)."""
    view = as_view(text)
    t = view.text
    if not t:
        return "rep_empty"
    n_chars = len(t)
    paragraphs = PARAGRAPH_RE.split(t.strip())
    dup, dup_chars = find_duplicates(paragraphs)
    if cfg.max_dup_para_frac is not None and dup / len(paragraphs) > cfg.max_dup_para_frac:
        return "rep_dup_para_frac"
    if cfg.max_dup_para_char_frac is not None and dup_chars / n_chars > cfg.max_dup_para_char_frac:
        return "rep_dup_para_char_frac"
    lines = LINES_RE.split(t)
    dup, dup_chars = find_duplicates(lines)
    if cfg.max_dup_line_frac is not None and dup / len(lines) > cfg.max_dup_line_frac:
        return "rep_dup_line_frac"
    if cfg.max_dup_line_char_frac is not None and dup_chars / n_chars > cfg.max_dup_line_char_frac:
        return "rep_dup_line_char_frac"

    ws = view.content_words if cfg.ngram_words_only else view.words
    if cfg.ngram_min_words is not None and len(view.content_words) < cfg.ngram_min_words:
        return KEEP
    for n, frac in cfg.top_ngrams():
        if len(ws) < n:
            continue
        gram, count = Counter(zip(*(ws[i:] for i in range(n)))).most_common(1)[0]
        if count < 2 and cfg.top_ngram_needs_repeat:
            continue
        if (sum(map(len, gram)) + n - 1) * count / n_chars > frac:
            return f"rep_top_{n}gram"
    dup_checks = cfg.dup_ngrams()
    if dup_checks:
        first = dup_checks[0][0]
        grams = list(zip(*(ws[i:] for i in range(first))))
        if len(set(grams)) == len(grams):
            return KEEP  # no repeated n-gram of the smallest n, so none of any larger n either
        for n, frac in dup_checks:
            if duplicated_ngram_chars(ws, n) / n_chars > frac:
                return f"rep_dup_{n}gram"
    return KEEP


def c4_quality(text: str | TextView, cfg: C4Config, bad_words: re.Pattern | None = None) -> str | None:
    """C4's page rules, on the text after ``c4_edit`` (so they see the kept lines, as in TFDS)."""
    view = as_view(text)
    t = view.text
    if cfg.drop_empty_after_edit and not t.strip():
        return "c4_empty_after_edit"
    lower = t.lower() if (cfg.drop_lorem_ipsum or bad_words is not None) else ""
    if cfg.drop_lorem_ipsum and "lorem ipsum" in lower:
        return "c4_lorem_ipsum"
    if cfg.drop_curly_bracket and "{" in t:
        return "c4_curly_bracket"
    if bad_words is not None and bad_words.search(lower):
        return "c4_bad_words"
    if cfg.min_sentences is not None:
        n = 0
        for line in t.splitlines():
            n += count_sentences(words(line))
            if n >= cfg.min_sentences:
                break
        if n < cfg.min_sentences:
            return "c4_too_few_sentences"
    return KEEP


def fineweb_quality(text: str | TextView, cfg: FineWebConfig) -> str | None:
    """FineWeb's own rules (Penedo et al. 2024)."""
    view = as_view(text)
    t = view.text
    lines = [line for line in t.split("\n") if line.strip()]
    if not lines:
        return "fineweb_empty"
    if cfg.min_line_punct_ratio is not None:
        stops = FINEWEB_STOP + tuple(cfg.extra_line_end_chars)
        if cfg.ignore_trailing_closers:
            ended = sum(1 for line in lines if line.rstrip().rstrip(CLOSERS).endswith(stops))
        else:
            ended = sum(1 for line in lines if line.endswith(stops))
        if ended / len(lines) < cfg.min_line_punct_ratio:
            return "fineweb_line_punct_ratio"
    if cfg.max_short_line_ratio is not None:
        if sum(1 for line in lines if len(line) <= cfg.short_line_length) / len(lines) > cfg.max_short_line_ratio:
            return "fineweb_short_line_ratio"
    if cfg.max_char_dup_ratio is not None:
        chars = len(t) - t.count("\n")
        if chars and find_duplicates(lines)[1] / chars > cfg.max_char_dup_ratio:
            return "fineweb_char_dup_ratio"
    if cfg.max_newline_word_ratio is not None:
        n_words = len(view.words)
        newlines = t.count("\n")
        ratio = newlines / n_words if n_words else (math.inf if newlines else 0.0)
        if ratio > cfg.max_newline_word_ratio:
            return "fineweb_list_ratio"
    return KEEP


def edits_nothing(text: str, cfg: C4Config) -> bool:
    """True where ``c4_edit``'s line loop would return ``text`` unchanged with no counts, checked on the whole text
    at once (most pages): the settings that judge every line are off, and no line can hold a citation, a long
    word, "javascript" or a policy phrase, as the whole text holds none (a line's lower case is a piece of the
    text's: lower-casing maps characters one by one, but for the Greek final sigma, which is not ASCII)."""
    if cfg.remove_lines_without_terminal_punct or cfg.min_words_per_line is not None:
        return False
    if cfg.remove_citations and "[" in text and CITATION_CANDIDATE.search(text):
        return False
    limit = cfg.max_word_length
    if limit is not None and len(text) > limit and max(map(len, text.split()), default=0) > limit:
        return False
    if cfg.remove_javascript_lines or cfg.remove_policy_lines:
        lower = text.lower()
        if cfg.remove_javascript_lines and "javascript" in lower:
            return False
        if cfg.remove_policy_lines and any(p in lower for p in POLICY_SUBSTRINGS):
            return False
    return True


def url_token_count(view: TextView) -> int:
    """Tokens that are URLs or e-mail addresses (the junk rules' links)."""
    return sum(1 for w in view.words if ("@" in w and "." in w) or (w[:1] in "hw" and URL_TOKEN_RE.match(w)))


def reference_chain(rules: HeuristicRules, text: str, lang: str | None = None, url: str | None = None
                    ) -> tuple[str, str | None, dict[str, int]]:
    """The rules of ``rules.cfg`` one after the other: (text after edits, reason or None, edit counts), the first
    failing rule wins."""
    cfg = rules.cfg
    reason = length_rule(text, cfg.length)
    if reason:
        return text, reason, {}
    if rules.blocklist.active:
        reason = rules.blocklist.check(text, url)
        if reason:
            return text, reason, {}
    edits: dict[str, int] = {}
    if cfg.c4.enabled:
        text, edits = c4_edit(text, cfg.c4)
    view = TextView(text)
    if cfg.c4.enabled and cfg.c4.drop_empty_after_edit and not text.strip():
        return text, "c4_empty_after_edit", edits
    if cfg.junk.enabled:
        reason = junk_rule(view, cfg.junk, lang)
    if not reason and cfg.gopher.enabled:
        reason = gopher_quality(view, cfg.gopher, lang)
    if not reason and cfg.repetition.enabled:
        reason = gopher_repetition(view, cfg.repetition)
    if not reason and cfg.c4.enabled:
        reason = c4_quality(view, cfg.c4, rules.bad_words)
    if not reason and cfg.fineweb.enabled:
        reason = fineweb_quality(view, cfg.fineweb)
    return text, reason, edits
