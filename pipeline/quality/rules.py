"""Heuristic quality rules as plain functions: each returns ``KEEP`` (None) or the reason string for dropping.

Rules that drop documents (``gopher_quality``, ``gopher_repetition``, ``c4_quality``, ``fineweb_quality``,
``length_rule``, ``junk_rule``, ``Blocklist.check``) are apart from the one rule that edits text
(``c4_edit``: C4's line removal), which returns the new text and counts of what it removed.
``HeuristicRules`` runs them as the quality stage does, as measure (``measure.py``) -> decide (``decide.py``):
edits first, then the drop rules on the edited text. The rule functions here are the reference that the
measure/decide path must agree with (``tests/pipeline/quality/test_decide.py``); the regexes and word lists
they define are shared with ``measure.py``.

Every threshold comes from the config dataclasses in ``corpusforge.pipeline.quality.config``; ``None`` turns a check off.
Reason strings are stable: tests assert them and ``stats.json`` counts them.
"""
from __future__ import annotations

import math
import pathlib
import re
from collections import Counter
from itertools import chain
from typing import NamedTuple
from urllib.parse import urlsplit

from corpusforge.core.errors import UserError
from corpusforge.pipeline.quality.config import (
    BlocklistConfig, C4Config, FineWebConfig, GopherConfig, JunkConfig, LengthConfig, QualityConfig, RepetitionConfig,
)
from corpusforge.pipeline.quality.decide import (
    FAMILIES, decide_c4, decide_c4_empty, decide_fineweb, decide_gopher, decide_junk, decide_length, decide_repetition,
)
from corpusforge.pipeline.quality.measure import (
    measure_c4, measure_fineweb, measure_gopher, measure_junk, measure_length, measure_repetition,
)
from corpusforge.pipeline.words import has_no_space_script, ngram_length, split_tokens, text_width, word_count
from corpusforge.pipeline.quality.text import (  # noqa: F401 - the shared patterns, also importable from here
    CLOSERS, FINEWEB_STOP, ALL_STOP_WORDS, BOILERPLATE_RE, GOPHER_STOP_WORDS, LETTER_RE, LINES_RE, LOREM_WORDS,
    MOJIBAKE_RE, PARAGRAPH_RE, SENTENCE_START_RE, SPACE_RE, STOP_WORDS, URL_TOKEN_RE, TextView, duplicated_ngram_chars,
    stop_words_for, as_view, base_language, count_sentences, find_duplicates, mean_word_length, ngram_chars,
    unpunctuated_ends, words,
)

KEEP = None


# ----------------------------------------------------------------------------------------------- length
def length_rule(text: str | TextView, cfg: LengthConfig) -> str | None:
    view = as_view(text)
    n_chars = len(view.text)
    if cfg.min_chars is not None and n_chars < cfg.min_chars:
        return "length_too_short"
    if cfg.max_chars is not None and n_chars > cfg.max_chars:
        return "length_too_long"
    if cfg.min_words is not None or cfg.max_words is not None:
        n_words = word_count(view.content_words)
        if cfg.min_words is not None and n_words < cfg.min_words:
            return "length_too_few_words"
        if cfg.max_words is not None and n_words > cfg.max_words:
            return "length_too_many_words"
    return KEEP


# -------------------------------------------------------------------------------------------- blocklist
def _read_list(path: str, what: str) -> list[str]:
    if not path:
        return []
    if "://" in path and not path.startswith("file://"):  # any Beam filesystem (gs://...): read on the worker
        text = _read_remote(path, what)
    else:
        p = pathlib.Path(path[len("file://"):] if path.startswith("file://") else path)
        if not p.is_file():
            raise UserError(f"{what} {path} does not exist; fix the path or remove the setting")
        text = p.read_text(encoding="utf-8")
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _read_remote(path: str, what: str) -> str:
    from apache_beam.io.filesystems import CompressionTypes, FileSystems

    try:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            return f.read().decode("utf-8")
    except Exception as exc:
        raise UserError(f"{what} {path} cannot be read ({type(exc).__name__}: {exc}); fix the path or remove "
                        "the setting") from None


_IDNA_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})  # label separators in IDNA


def canonical_host(host: str) -> str:
    """One spelling per host name, so a blocked domain matches however a URL writes it: lower case, no
    trailing dot (``example.com.`` is the fully qualified ``example.com``), the ideographic full stops that
    IDNA reads as dots turned into dots, and internationalised labels in their ASCII (punycode) form, so
    ``bücher.de``, ``BÜCHER.de`` and ``xn--bcher-kva.de`` are one host. A label that IDNA cannot encode
    (too long, forbidden characters) is kept in lower case."""
    host = host.translate(_IDNA_DOTS).rstrip(".")
    if host.isascii():
        return host.lower()
    labels = []
    for label in host.split("."):
        if label.isascii():
            labels.append(label.lower())
            continue
        try:
            labels.append(label.encode("idna").decode("ascii"))  # nameprep (case fold, NFKC) + punycode
        except UnicodeError:
            labels.append(label.lower())
    return ".".join(labels)


def _compile_any(patterns: list[str], key: str) -> re.Pattern | None:
    """One case-insensitive regex matching any of ``patterns``; a bad one is a UserError naming ``key``."""
    for p in patterns:
        try:
            re.compile(p)
        except re.error as exc:
            raise UserError(f"{key}: {p!r} is not a valid regular expression: {exc}") from None
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE) if patterns else None


class Blocklist:
    """Regex patterns on the text; on the document's URL: its length, regex patterns and blocked domains
    (matched as ``canonical_host``)."""

    def __init__(self, cfg: BlocklistConfig):
        patterns = list(cfg.patterns) + _read_list(cfg.patterns_file, "quality.blocklist.patterns_file")
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise UserError(f"quality.blocklist pattern {p!r} is not a valid regular expression: {exc}") from None
        self.regex = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE) if patterns else None
        domains = list(cfg.domains) + _read_list(cfg.domains_file, "quality.blocklist.domains_file")
        self.domains = frozenset(canonical_host(d.strip().lstrip(".")) for d in domains)
        self.url_field = cfg.url_field
        self.url_regex = _compile_any(cfg.url_patterns, "quality.blocklist.url_patterns")
        self.max_url_length = cfg.max_url_length

    @property
    def active(self) -> bool:
        return bool(self.regex is not None or self.domains or self.url_regex is not None
                    or self.max_url_length is not None)

    def check(self, text: str, url: str | None = None) -> str | None:
        if self.regex is not None and self.regex.search(text):
            return "blocklist_pattern"
        if url and self.max_url_length is not None and len(url) > self.max_url_length:
            return "url_too_long"
        if url and self.url_regex is not None and self.url_regex.search(url):
            return "blocklist_url_pattern"
        if self.domains and url:
            try:
                host = canonical_host(urlsplit(url if "//" in url else "//" + url).hostname or "")
            except ValueError:  # not a URL (e.g. an unbalanced "[" of an IPv6 literal): no host to block
                return KEEP
            parts = host.split(".")
            if any(".".join(parts[i:]) in self.domains for i in range(len(parts))):
                return "blocklist_domain"
        return KEEP


# ------------------------------------------------------------------------------------------------- junk
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
        if urls / word_count(lower_words) > cfg.max_url_fraction:
            return "junk_links"
    if cfg.max_lowercase_sentence_starts is not None:
        starts = SENTENCE_START_RE.findall(t)
        if len(starts) >= 3 and sum(1 for c in starts if c.islower()) / len(starts) > cfg.max_lowercase_sentence_starts:
            return "junk_word_salad"
    if cfg.max_top_word_fraction is not None and word_count(lower_words) >= cfg.top_word_min_words:
        stop = STOP_WORDS.get(base_language(lang) or "", ALL_STOP_WORDS)
        counts = Counter(w for w in lower_words if len(w) > 2 and w not in stop and not w.isdigit())
        if counts:
            top = counts.most_common(1)[0][1]
            if top >= 4 and top / word_count(lower_words) > cfg.max_top_word_fraction:
                return "junk_keyword_stuffing"
    return KEEP


# ---------------------------------------------------------------------------------------- gopher quality
def gopher_quality(text: str | TextView, cfg: GopherConfig, lang: str | None = None) -> str | None:
    """Gopher's quality rules (Rae et al. 2021, appendix A.1.1), with the adapted options of ``GopherConfig``."""
    view = as_view(text)
    t = view.text
    all_words = view.words
    n_tokens = word_count(all_words)  # words, as pipeline/words.py counts them
    content = view.content_words
    n_words = word_count(content)
    base = base_language(lang)
    no_space = base in cfg.no_space_languages if base else False

    if not no_space:
        if cfg.min_words is not None and n_words < cfg.min_words:
            return "gopher_short_doc"
        if cfg.max_words is not None and n_words > cfg.max_words:
            return "gopher_long_doc"
        if content:
            mean_len = mean_word_length(view)  # in English characters (pipeline/words.py)
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
            if cfg.short_doc_words is not None and word_count(lower) < cfg.short_doc_words:
                needed = min(needed, 1)
            if len(stop.intersection(lower)) < needed:
                return "gopher_few_stop_words"
        if (cfg.min_stop_word_fraction is not None and word_count(lower) >= cfg.stop_word_fraction_min_words
                and sum(1 for w in lower if w in stop) / len(lower) < cfg.min_stop_word_fraction):
            return "gopher_low_stop_word_fraction"
    elif cfg.min_stop_words is not None:
        stop = GOPHER_STOP_WORDS | frozenset(cfg.stop_words.get("en", ()))
        if len(stop.intersection(all_words)) < cfg.min_stop_words:
            return "gopher_few_stop_words"
    return KEEP


# ------------------------------------------------------------------------------------- gopher repetition
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
    if cfg.ngram_min_words is not None and word_count(view.content_words) < cfg.ngram_min_words:
        return KEEP
    # An n-gram of n words is n tokens, more where a character of a script without spaces is a token.
    length = (lambda n: ngram_length(n, ws, word_count(ws))) if has_no_space_script(t) else (lambda n: n)
    for n, frac in cfg.top_ngrams():
        k = length(n)
        if len(ws) < k:
            continue
        gram, count = Counter(zip(*(ws[i:] for i in range(k)))).most_common(1)[0]
        if count < 2 and cfg.top_ngram_needs_repeat:
            continue
        if (ngram_chars(gram) if k != n else sum(map(len, gram)) + n - 1) * count / n_chars > frac:
            return f"rep_top_{n}gram"
    dup_checks = cfg.dup_ngrams()
    if dup_checks:
        first = length(dup_checks[0][0])
        grams = list(zip(*(ws[i:] for i in range(first))))
        if len(set(grams)) == len(grams):
            return KEEP  # no repeated n-gram of the smallest n, so none of any larger n either
        for n, frac in dup_checks:
            if duplicated_ngram_chars(ws, length(n)) / n_chars > frac:
                return f"rep_dup_{n}gram"
    return KEEP


# -------------------------------------------------------------------------------------------------- C4
# Candidate markers, with the spaces before them: [12], [edit], [citation needed] (never the empty [])
_CITATION_CANDIDATE = re.compile(r"([ \t]*)\[(?:(\d{1,4})|(edit)|citation needed)]")
# What may stand right before a citation in prose: sentence punctuation and closing quotes/brackets of prose
_CITATION_AFTER = frozenset(".,;:!?\"'’”»")


def remove_citations(line: str) -> tuple[str, int]:
    """``line`` without its citation markers in prose, and how many went.

    C4 deletes every ``[digits]``, which damages code quoted in prose (``values[1]``, ``items = []``,
    ``m[3][4]``). Here a marker is a citation only where code cannot have it:
    - ``[citation needed]`` always (code has no space inside a subscript);
    - ``[12]`` (1-4 digits; never ``[]``) right after sentence punctuation or a closing quote
      (``France.[1]``, ``1990,[2]``), at the start of the line, or after another removed marker
      (``[3][4]``); after spaces only when those follow sentence punctuation (``France. [1]``); right after a
      letter, digit, ``_``, ``)`` or ``]`` it is a subscript (``values[1]``, ``f(a)[2]``, ``m[3][4]``) and
      stays, as does anything after an operator (``x = [1]``, ``print([1])``), so a mid-sentence citation
      glued to a word (``city[2]``) also stays: damaging code is worse than leaving a marker;
    - ``[edit]`` (Wikipedia's section links, glued to the heading: ``History[edit]``) in those places and
      also right after a word of letters only, but not after a dotted or underscored name (``self.buf[edit]``).
    Spaces before a removed marker go with it, and a marker that starts the line takes the spaces after it.
    Linear in the line's length.
    """
    if "[" not in line:
        return line, 0
    parts: list[str] = []
    kept_to, last_end, n = 0, -1, 0
    for m in _CITATION_CANDIDATE.finditer(line):
        spaces, digits, edit = m.group(1), m.group(2), m.group(3)
        bracket = m.start() + len(spaces)
        before = line[bracket - 1] if bracket > 0 else ""
        if m.start() == last_end and not spaces:
            remove = True  # a chain of citations: [3][4]
        elif digits is None and edit is None:
            remove = True  # [citation needed]
        elif spaces:
            prev = line[m.start() - 1] if m.start() > 0 else ""
            remove = prev == "" or prev in _CITATION_AFTER
        elif before == "" or before in _CITATION_AFTER:
            remove = True
        elif edit is not None and before.isalpha():
            start = bracket - 1
            while start > kept_to and (line[start - 1].isalnum() or line[start - 1] in "._"):
                start -= 1
            remove = line[start:bracket].isalpha()
        else:
            remove = False
        if not remove:
            continue
        parts.append(line[kept_to:m.start()])
        kept_to = last_end = m.end()
        n += 1
        if m.start() == 0:  # a marker opening the line takes the spaces after it
            while kept_to < len(line) and line[kept_to] in " \t":
                kept_to += 1
            last_end = kept_to if kept_to == m.end() else -1
    if not n:
        return line, 0
    parts.append(line[kept_to:])
    return "".join(parts), n
C4_END_PUNCTUATION = (".", "?", "!", '"', "'")
POLICY_SUBSTRINGS = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")


def c4_edit(text: str, cfg: C4Config) -> tuple[str, dict[str, int]]:
    """C4's line removal (an edit, not a drop). Returns the new text and a count per removal reason."""
    if _edits_nothing(TextView(text), cfg):
        return text, {}
    return _c4_edit_lines(text, cfg)


def c4_edit_view(text: str, cfg: C4Config) -> tuple[TextView, dict[str, int]]:
    """``c4_edit`` with the edited text's ``TextView``: where nothing is edited (most pages) it is the view the check
    read, so the measures reuse its lines and lower case instead of computing them again."""
    view = TextView(text)
    if _edits_nothing(view, cfg):
        return view, {}
    edited, counts = _c4_edit_lines(text, cfg)
    return (view if edited is text else TextView(edited)), counts


def _c4_edit_lines(text: str, cfg: C4Config) -> tuple[str, dict[str, int]]:
    """``c4_edit``'s line loop."""
    counts: dict[str, int] = {}
    kept: list[str] = []
    terminal = cfg.remove_lines_without_terminal_punct
    for raw in text.splitlines():
        line = raw.strip()
        line_words = line.split()
        if (cfg.max_word_length is not None and line_words and max(map(len, line_words)) > cfg.max_word_length
                and max(map(len, split_tokens(line_words))) > cfg.max_word_length):  # a Chinese line: many words
            counts["c4_lines_long_word"] = counts.get("c4_lines_long_word", 0) + 1
            continue
        if cfg.remove_citations and "[" in line:
            line, n = remove_citations(line)
            if n:
                counts["c4_citations"] = counts.get("c4_citations", 0) + n
                raw = remove_citations(raw)[0]
        if terminal and (not line.endswith(C4_END_PUNCTUATION) or line.endswith("...")):
            counts["c4_lines_no_terminal_punct"] = counts.get("c4_lines_no_terminal_punct", 0) + 1
            continue
        if (cfg.min_words_per_line is not None and line
                and word_count(line_words if line.isascii() else split_tokens(line_words), line) < cfg.min_words_per_line):
            counts["c4_lines_too_few_words"] = counts.get("c4_lines_too_few_words", 0) + 1
            continue
        lower = line.lower()
        if cfg.remove_javascript_lines and "javascript" in lower:
            counts["c4_lines_javascript"] = counts.get("c4_lines_javascript", 0) + 1
            continue
        if cfg.remove_policy_lines and any(p in lower for p in POLICY_SUBSTRINGS):
            counts["c4_lines_policy"] = counts.get("c4_lines_policy", 0) + 1
            continue
        # The published setting (terminal punctuation) keeps stripped, non-empty lines, as TFDS does;
        # otherwise a kept line is left as it was.
        kept.append(line if terminal else raw)
    removed = sum(counts.values()) - counts.get("c4_citations", 0)
    if not terminal and not counts:
        return text, counts  # nothing removed: the text is left exactly as it was
    if removed:
        counts["c4_lines_removed"] = removed
    new_text = "\n".join(kept)
    return (new_text.strip() if terminal else new_text.strip("\n")), counts


def _edits_nothing(view: TextView, cfg: C4Config) -> bool:
    """``_edits_nothing_reference(view.text, cfg)``, cheaper, reading the view's lines and lower case (which the
    measures read next): a citation marker is searched from its "[" (the reference's pattern starts with optional
    spaces, so it was tried at every position), and only lines longer than the limit are split (a word never spans
    a line break: they are all whitespace to ``str.split``)."""
    if cfg.remove_lines_without_terminal_punct or cfg.min_words_per_line is not None:
        return False
    text = view.text
    if cfg.remove_citations and "[" in text and _CITATION_MARKER.search(text):
        return False
    limit = cfg.max_word_length
    if limit is not None and len(text) > limit and max(map(len, view.splitlines), default=0) > limit:
        long_lines = [line for line in view.splitlines if len(line) > limit]
        if max(map(len, chain.from_iterable(map(str.split, long_lines))), default=0) > limit:
            return False
    if cfg.remove_javascript_lines or cfg.remove_policy_lines:
        lower = view.lower_text
        if cfg.remove_javascript_lines and "javascript" in lower:
            return False
        if cfg.remove_policy_lines and any(p in lower for p in POLICY_SUBSTRINGS):
            return False
    return True


# _CITATION_CANDIDATE without the spaces before: it finds a marker where the whole pattern does.
_CITATION_MARKER = re.compile(r"\[(?:\d{1,4}|edit|citation needed)]")


def _edits_nothing_reference(text: str, cfg: C4Config) -> bool:
    """True where ``c4_edit``'s line loop would return ``text`` unchanged with no counts, checked on the whole text
    at once (most pages): the settings that judge every line are off, and no line can hold a citation, a long
    word, "javascript" or a policy phrase, as the whole text holds none (a line's lower case is a piece of the
    text's: lower-casing maps characters one by one, but for the Greek final sigma, which is not ASCII)."""
    if cfg.remove_lines_without_terminal_punct or cfg.min_words_per_line is not None:
        return False
    if cfg.remove_citations and "[" in text and _CITATION_CANDIDATE.search(text):
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


def compile_bad_words(path: str) -> re.Pattern | None:
    words_ = _read_list(path, "quality.c4.bad_words_file")
    if not words_:
        return None
    return re.compile(r"(?:\W|^)(?:{})(?:\W|$)".format("|".join(re.escape(w.lower()) for w in words_)))


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


# --------------------------------------------------------------------------------------------- FineWeb
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
        ended += unpunctuated_ends(t, lines, stops, cfg.ignore_trailing_closers)  # Thai, Lao: a letter ends a sentence
        if ended / len(lines) < cfg.min_line_punct_ratio:
            return "fineweb_line_punct_ratio"
    if cfg.max_short_line_ratio is not None:
        if sum(1 for line in lines if text_width(line) <= cfg.short_line_length) / len(lines) > cfg.max_short_line_ratio:
            return "fineweb_short_line_ratio"
    if cfg.max_char_dup_ratio is not None:
        chars = len(t) - t.count("\n")
        if chars and find_duplicates(lines)[1] / chars > cfg.max_char_dup_ratio:
            return "fineweb_char_dup_ratio"
    if cfg.max_newline_word_ratio is not None:
        n_words = word_count(view.words)
        newlines = t.count("\n")
        ratio = newlines / n_words if n_words else (math.inf if newlines else 0.0)
        if ratio > cfg.max_newline_word_ratio:
            return "fineweb_list_ratio"
    return KEEP


# ------------------------------------------------------------------------------------------------ chain
class Verdict(NamedTuple):
    """What the heuristic step gives a document: its text after the C4 edits (the original text when length or
    the blocklist removes it), the reason or None, the edit counts, and the measured values per family
    (``decide.FAMILIES``; None: the family is off, or was not measured because ``store_values`` is off)."""

    text: str
    reason: str | None
    edits: dict[str, int]
    values: dict[str, dict | None]


class HeuristicRules:
    """All heuristic rules of a ``QualityConfig``, compiled once (patterns, files), as measure -> decide.

    ``apply`` measures each family's values once from one shared ``TextView`` and decides with
    ``decide.py``. With ``store_values`` every enabled family is measured on every document, so the values
    can be stored and re-decided (``corpusforge rethreshold``); without it measuring stops at the first
    failing family. ``apply_reference`` is the chain of the reference rule functions above, kept for the
    test that both give every document the same reason."""

    def __init__(self, cfg: QualityConfig):
        self.cfg = cfg
        self.blocklist = Blocklist(cfg.blocklist)
        self.bad_words = compile_bad_words(cfg.c4.bad_words_file) if cfg.c4.enabled else None
        self._has_blocklist = self.blocklist.active

    def apply(self, text: str, lang: str | None = None, url: str | None = None) -> Verdict:
        cfg, store = self.cfg, self.cfg.store_values
        values: dict[str, dict | None] = dict.fromkeys(FAMILIES)
        values["length"] = measure_length(text, cfg.length)
        reason = decide_length(values["length"], cfg.length)
        if self._has_blocklist and (store or not reason):
            hit = self.blocklist.check(text, url)
            values["blocklist"] = {"reason": hit}
            reason = reason or hit
        if reason and not store:
            return Verdict(text, reason, {}, values)
        early = reason  # length or blocklist: the document goes as it came, its edits uncounted
        view, edits = c4_edit_view(text, cfg.c4) if cfg.c4.enabled else (TextView(text), {})
        edited = view.text
        steps = self._steps(view, lang, values)
        for family, measure, decide in steps:
            if values[family] is None:
                values[family] = measure()
            if not reason:
                reason = decide(values[family])
            if reason and not store:
                break
        if early:
            return Verdict(text, early, {}, values)
        return Verdict(edited, reason, edits, values)

    def _steps(self, view: TextView, lang: str | None, values: dict):
        cfg = self.cfg
        steps = []
        if cfg.c4.enabled:
            steps.append(("c4", lambda: measure_c4(view, self.bad_words), lambda v: decide_c4_empty(v, cfg.c4)))
        if cfg.junk.enabled:
            steps.append(("junk", lambda: measure_junk(view, lang), lambda v: decide_junk(v, cfg.junk)))
        if cfg.gopher.enabled:
            steps.append(("gopher", lambda: measure_gopher(view, cfg.gopher, lang), lambda v: decide_gopher(v, cfg.gopher)))
        if cfg.repetition.enabled:
            steps.append(("repetition", lambda: measure_repetition(view, cfg.repetition),
                          lambda v: decide_repetition(v, cfg.repetition)))
        if cfg.c4.enabled:
            steps.append(("c4", lambda: measure_c4(view, self.bad_words), lambda v: decide_c4(v, cfg.c4)))
        if cfg.fineweb.enabled:
            steps.append(("fineweb", lambda: measure_fineweb(view, cfg.fineweb), lambda v: decide_fineweb(v, cfg.fineweb)))
        return steps

    def apply_reference(self, text: str, lang: str | None = None, url: str | None = None) -> tuple[str, str | None, dict[str, int]]:
        """The reference chain: (text after edits, reason or None, edit counts), first failing rule wins."""
        cfg = self.cfg
        reason = length_rule(text, cfg.length)
        if reason:
            return text, reason, {}
        if self._has_blocklist:
            reason = self.blocklist.check(text, url)
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
            reason = c4_quality(view, cfg.c4, self.bad_words)
        if not reason and cfg.fineweb.enabled:
            reason = fineweb_quality(view, cfg.fineweb)
        return text, reason, edits
