"""The heuristic quality rules as the quality stage runs them: ``HeuristicRules`` (measure.py -> decide.py, in
``decide.decision_steps``' order), the one rule that edits text (``c4_edit``: C4's line removal, which returns the
new text and counts of what it removed) and the blocklist (``Blocklist.check``). Edits come first, then the drop
rules on the edited text. This is the definition of every rule; ``tests/pipeline/quality/reference.py`` writes
each family out plainly, and the tests hold both to the same reason on every document.

Every threshold comes from the config dataclasses in ``corpusforge.pipeline.quality.config``; ``None`` turns a check off.
Reason strings are stable: tests assert them and ``stats.json`` counts them.
"""
from __future__ import annotations

import pathlib
import re
from itertools import chain
from typing import NamedTuple
from urllib.parse import urlsplit

from corpusforge.core.errors import UserError
from corpusforge.pipeline.quality.config import (
    BlocklistConfig, C4Config, QualityConfig,
)
from corpusforge.pipeline.quality.decide import FAMILIES, decide_length, decision_steps
from corpusforge.pipeline.quality.measure import (
    measure_c4, measure_fineweb, measure_gopher, measure_junk, measure_length, measure_repetition,
)
from corpusforge.pipeline.quality.batch_counts import count_batch, number_batch
from corpusforge.pipeline.words import split_tokens, word_count
from corpusforge.pipeline.quality.text import (  # noqa: F401 - the shared patterns, also importable from here
    CLOSERS, FINEWEB_STOP, ALL_STOP_WORDS, BOILERPLATE_RE, GOPHER_STOP_WORDS, LETTER_RE, LINES_RE, LOREM_WORDS,
    MOJIBAKE_RE, PARAGRAPH_RE, SENTENCE_START_RE, SPACE_RE, STOP_WORDS, URL_TOKEN_RE, TextView, duplicated_ngram_chars,
    stop_words_for, as_view, base_language, count_sentences, find_duplicates, words,
)

KEEP = None


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
# -------------------------------------------------------------------------------------------------- C4
# Candidate markers, with the spaces before them: [12], [edit], [citation needed] (never the empty [])
CITATION_CANDIDATE = re.compile(r"([ \t]*)\[(?:(\d{1,4})|(edit)|citation needed)]")
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
    for m in CITATION_CANDIDATE.finditer(line):
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
    """Whether ``c4_edit``'s line loop would return ``view.text`` unchanged with no counts, checked on the whole text
    at once (most pages), cheaply, reading the view's lines and lower case (which the
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


# CITATION_CANDIDATE without the spaces before: it finds a marker where the whole pattern does.
_CITATION_MARKER = re.compile(r"\[(?:\d{1,4}|edit|citation needed)]")


def compile_bad_words(path: str) -> re.Pattern | None:
    words_ = _read_list(path, "quality.c4.bad_words_file")
    if not words_:
        return None
    return re.compile(r"(?:\W|^)(?:{})(?:\W|$)".format("|".join(re.escape(w.lower()) for w in words_)))


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
    failing family. The tests hold it to plain reference rules (``tests/pipeline/quality/reference.py``)."""

    def __init__(self, cfg: QualityConfig):
        self.cfg = cfg
        self.blocklist = Blocklist(cfg.blocklist)
        self.bad_words = compile_bad_words(cfg.c4.bad_words_file) if cfg.c4.enabled else None
        self._has_blocklist = self.blocklist.active
        self._steps = list(decision_steps(cfg))  # the same for every document: made once

    def apply(self, text: str, lang: str | None = None, url: str | None = None) -> Verdict:
        return self.apply_batch([text], [lang], [url])[0]

    def apply_batch(self, texts: list[str], langs: list[str | None], urls: list[str | None]) -> list[Verdict]:
        """``apply`` of each document, with work done for the whole batch at once in numpy
        (``batch_counts.count_batch``): the token and word counts the rules read, the top n-grams of the repetition
        rules, the boilerplate phrases' hints; a batch of fewer than ``_BATCH_COUNTING_MIN`` does that per document.
        The same verdicts whatever the batch (``tests/pipeline/quality/test_fast_measures.py``)."""
        started = [self._start(text, lang, url) for text, lang, url in zip(texts, langs, urls)]
        views = [None if isinstance(s, Verdict) else s[1] for s in started]
        numbered = number_batch(views) if len(texts) >= _BATCH_COUNTING_MIN else None  # split for the whole batch
        verdicts: list[Verdict] = []
        for i in range(0, len(texts), _GROUP):  # counted in groups, whose arrays stay in the CPU's caches
            grams = [None] * len(views[i:i + _GROUP])
            if numbered is not None:
                grams = count_batch(views[i:i + _GROUP], langs[i:i + _GROUP], self.cfg, numbered.part(i, i + _GROUP))
            verdicts += [s if isinstance(s, Verdict) else self._finish(*s, top_grams)
                         for s, top_grams in zip(started[i:i + _GROUP], grams)]
        return verdicts

    def _start(self, text: str, lang: str | None, url: str | None):
        """Length, the blocklist and C4's edits: the Verdict of a document they end (measuring stops), or what
        ``_finish`` needs."""
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
        view, edits = c4_edit_view(text, cfg.c4) if cfg.c4.enabled else (TextView(text), {})
        return text, view, edits, lang, reason, values

    def _finish(self, text: str, view: TextView, edits: dict[str, int], lang: str | None, reason: str | None,
                values: dict[str, dict | None], top_grams: dict[int, tuple[int, int]] | None) -> Verdict:
        cfg, store = self.cfg, self.cfg.store_values
        early = reason  # length or blocklist: the document goes as it came, its edits uncounted
        edited = view.text
        measures = {"c4": lambda: measure_c4(view, self.bad_words), "junk": lambda: measure_junk(view, lang),
                    "gopher": lambda: measure_gopher(view, cfg.gopher, lang),
                    "repetition": lambda: measure_repetition(view, cfg.repetition, top_grams),
                    "fineweb": lambda: measure_fineweb(view, cfg.fineweb)}
        for family, decide in self._steps:
            if family not in measures:
                continue  # length and the blocklist: decided above, on the text before the edits
            if values[family] is None:
                values[family] = measures[family]()
            if not reason:
                reason = decide(values[family])
            if reason and not store:
                break
        if early:
            return Verdict(text, early, {}, values)
        return Verdict(edited, reason, edits, values)


# Batches smaller than this count their top n-grams per document: numpy's calls cost more than they save there.
_BATCH_COUNTING_MIN = 8
# Documents whose batch work is done together: top_ngrams took 59 us a document in groups of 32, 64 in groups of 64,
# 83 in one group of 256 (the Counter per document 88; bench/quality_cost.py's documents, shared machine, load ~10):
# 256 documents' arrays and views no longer fit in the CPU's caches.
_GROUP = 32
