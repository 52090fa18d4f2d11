"""Find and replace PII in text with Presidio: one ``Scrubber`` per worker, built once, used on batches.

    scrubber = Scrubber(PIIConfig())
    result = scrubber.scrub("Mail jane@example.org or call +1-202-555-0173 ext. 12")
    result.text    # 'Mail <EMAIL> or call <PHONE>'
    result.counts  # {'EMAIL_ADDRESS': 1, 'PHONE_NUMBER': 1}

Works offline with no spaCy model: Presidio's ``no_op`` NLP engine plus the pattern recognizers of
``corpusforge.pipeline.pii.recognizers``. With ``ner_model`` set, a spaCy NLP engine and Presidio's ``SpacyRecognizer``
add PERSON/LOCATION. Speed comes from the pre-screens of ``corpusforge.pipeline.pii.screen``: a document reaches a
recognizer only when that recognizer has candidates in it, then only through windows around them, and
reaches the analyzer not at all when nothing has candidates (and no NER model is configured).
"""
from __future__ import annotations

import bisect
import functools
import hashlib
import importlib.util
import itertools
import pathlib
import secrets
import threading
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

from corpusforge.core.errors import UserError, WorkerError, missing_dependency
from corpusforge.pipeline.pii.canonical import AMBIGUOUS, ESCAPE_INTRODUCERS, OLDER, TOP_TIER, canonical
from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.entities import LANGUAGE
from corpusforge.pipeline.pii.screen import ENTITY_SCREENS, SEPARATOR, ScanCache, word_without_pii

if TYPE_CHECKING:
    from presidio_analyzer import RecognizerResult
    from presidio_analyzer.nlp_engine import NlpArtifacts
    from presidio_anonymizer.entities import OperatorConfig

    from corpusforge.pipeline.pii.engine import Engine


class Span(NamedTuple):
    """One entity found in the original text; ``replacement`` is what the output text holds instead."""

    entity: str
    start: int
    end: int
    replacement: str


class Scrubbed(NamedTuple):
    text: str
    counts: dict[str, int]
    spans: tuple[Span, ...]
    removal: tuple[str, dict[str, Any]] | None  # (reason, details) when the document should be removed

    @property
    def pii_count(self) -> int:
        return len(self.spans)


def check_ner_model(name: str) -> None:
    """Raise a UserError naming the install command unless spaCy can load ``name`` without a download."""
    try:
        import spacy
    except ImportError:  # pragma: no cover - spaCy comes with presidio-analyzer
        raise UserError("pii.ner_model needs spaCy: pip install spacy") from None
    if spacy.util.is_package(name) or pathlib.Path(name).exists():
        return
    raise UserError(
        f"pii.ner_model={name!r} is not installed (this stage never downloads models): run "
        f"`python -m spacy download {name}` (or pip install the model's wheel), give a path to a saved "
        f"spaCy pipeline, or set pii.ner_model='' to skip PERSON/LOCATION detection"
    )


def _digest(salt: str, chars: int, text: str) -> str:
    """Presidio's ``Hash`` operator (sha256 of the text's then the salt's UTF-8 bytes), cut to ``chars`` hex
    digits, without importing Presidio; ``tests/pipeline/pii/test_lazy_engine.py`` holds it equal to
    ``_digest_reference``."""
    salt_bytes = salt.encode()
    if len(salt_bytes) < 16:  # Presidio's own rule (its InvalidParamError), kept for a salt passed in directly
        raise ValueError(f"the hash salt must be at least 16 bytes, got {len(salt_bytes)}")
    return hashlib.sha256(text.encode() + salt_bytes).hexdigest()[:chars]


def _digest_reference(salt: str, chars: int, text: str) -> str:
    from corpusforge.pipeline.pii import presidio  # noqa: F401
    from presidio_anonymizer.operators import Hash

    return Hash().operate(text, {"salt": salt, "hash_type": "sha256"})[:chars]


def _hash_placeholder(tag: str, salt: str, chars: int, text: str) -> str:
    return f"<{tag}:{_digest(salt, chars, text)}>"


def value_of(result: RecognizerResult, text: str) -> str:
    """What a result of ``Scrubber.find`` holds, as the canonical view reads it (``text``'s slice otherwise)."""
    return getattr(result, "canonical", None) or text[result.start:result.end]


def written_additions(written: Sequence[RecognizerResult], viewed: Sequence[RecognizerResult],
                       text: str) -> list[RecognizerResult]:
    """Of the results found in ``text`` as written, those the view's results (``viewed``, spans of ``text``) miss:
    one overlapping none of them, or one with a digit outside them. The view's results that overlap one are found
    by a binary search on their starts and a walk back while the greatest end so far reaches it: a document of
    20,000 addresses is 20,000 short walks, not 20,000 x 20,000 checks."""
    viewed = sorted(viewed, key=lambda v: v.start)
    starts = [v.start for v in viewed]
    reach = list(itertools.accumulate((v.end for v in viewed), max))  # the greatest end among the first i + 1
    added = []
    for r in written:
        overlapping = []
        j = bisect.bisect_left(starts, r.end) - 1
        while j >= 0 and reach[j] > r.start:
            if viewed[j].end > r.start:
                overlapping.append(viewed[j])
            j -= 1
        if overlapping:
            covered = set()
            for v in overlapping:
                covered.update(range(max(v.start, r.start), min(v.end, r.end)))
            if not any(text[i].isdigit() for i in range(r.start, r.end) if i not in covered):
                continue
        r.canonical = text[r.start:r.end].replace("\u00a0", " ")
        added.append(r)
    return added


def resolve_overlaps(results: Sequence[RecognizerResult]) -> list[RecognizerResult]:
    """Non-overlapping results, preferring higher scores then longer spans; sorted by start.

    The same choice as checking each result, in preference order, against every result kept so far, in
    O(n log n) (that pairwise check was quadratic in the matches of one document: 20,000 e-mail addresses
    took ~25x the time per byte of prose). Results that overlap nothing are kept at once; the others are
    split into groups that overlap transitively (no result of one group can touch another's), and within a
    group each check is one binary search: kept results never overlap, so sorted by start their ends do
    not decrease either, and a result overlaps a kept one iff the last kept one starting before its end
    ends after its start."""
    by_start = sorted(range(len(results)), key=lambda i: (results[i].start, results[i].end))
    chosen: list[int] = []
    group: list[int] = []
    group_end = None
    for i in by_start + [None]:
        r = results[i] if i is not None else None
        if r is not None and group and r.start < group_end:
            group.append(i)
            group_end = max(group_end, r.end)
            continue
        if len(group) == 1:
            chosen.append(group[0])
        elif group:
            chosen.extend(_resolve_group(results, group))
        if r is not None:
            group, group_end = [i], r.end
    return [results[i] for i in sorted(chosen, key=lambda i: (results[i].start, -results[i].score,
                                                               -(results[i].end - results[i].start), i))]


def _resolve_group(results: Sequence[RecognizerResult], group: list[int]) -> list[int]:
    """The greedy choice within one group of transitively overlapping results (indices)."""
    kept: list[tuple[int, int]] = []  # (start, end), sorted
    chosen = []
    for i in sorted(group, key=lambda i: (-results[i].score, -(results[i].end - results[i].start),
                                          results[i].start, i)):
        r = results[i]
        before = bisect.bisect_left(kept, (r.end,)) - 1  # the last kept result starting before r.end
        if before >= 0 and kept[before][1] > r.start:
            continue
        bisect.insort(kept, (r.start, r.end))
        chosen.append(i)
    return chosen


class Scrubber:
    """Presidio analyzer + anonymizer configured by a ``PIIConfig``. Build once per worker (``DoFn.setup``).

    Building one is cheap: it imports no Presidio. The analyzer (``corpusforge.pipeline.pii.engine``) is
    taken on the first text with a candidate for some recognizer, once, and kept; with ``ner_model`` set
    (every text goes to the model) it is taken here. It is the process's (``engine.shared_engine``): every
    ``Scrubber`` of a worker with the same recognizer settings shares one. A failure to build it raises
    ``WorkerError``.

    ``salt`` is the per-run salt of the ``hash`` action; default: ``config.hash_salt`` or a random one.
    """

    def __init__(self, config: PIIConfig, salt: str | None = None):
        self.config = config
        self.salt = salt or config.hash_salt or secrets.token_hex(16)
        # The screens of config.entities, in the order of the analyzer's recognizers; Presidio itself is
        # loaded on the first text that has a candidate (``_load``).
        self.screens = [(entity, ENTITY_SCREENS[entity]) for entity in config.entities]
        entities = [entity for entity, _ in self.screens]
        self._phone_at = entities.index("PHONE_NUMBER") if "PHONE_NUMBER" in entities else None
        self._phone_regions = tuple(config.phone_regions)
        self._ask_first = True  # ask each screened recognizer before the analyzer (entities_to_check)
        self.ner_entities = list(config.ner_entities) if config.ner_model else []
        self.drop_entities = {e for e in config.active_entities if config.action_for(e) == "drop"}
        self._engine: Engine | None = None
        self._operators: dict[str, OperatorConfig] | None = None
        self._lock = threading.Lock()
        for module, package in (("presidio_analyzer", "presidio-analyzer"), ("presidio_anonymizer", "presidio-anonymizer")):
            if importlib.util.find_spec(module) is None:  # fail here, as importing it here used to
                raise missing_dependency(module, package, "PII scrubbing")
        if config.ner_model:  # every text goes to the NER model: load it now, and fail here if it cannot load
            check_ner_model(config.ner_model)
            self._load()

    # ---------------------------------------------------------------------------------------- engine
    def _load(self) -> Engine:
        """Presidio's analyzer for this configuration, built once, also when threads ask at once. A failure is
        the worker's, not the text's: it is raised as ``WorkerError``, which fails the run (never a
        stage_error)."""
        engine = self._engine
        if engine is not None:
            return engine
        with self._lock:
            if self._engine is None:
                engine = None
                try:
                    from corpusforge.pipeline.pii.engine import forget_engine, shared_engine

                    engine = shared_engine(self.config)  # the process's: built by its first Scrubber
                    self._operators = {entity: self._operator(entity) for entity in self.config.active_entities}
                    self._engine = engine
                    # Load lazily loaded data now (per-region phone metadata, the bundled public suffix list),
                    # so the first texts with candidates do not pay for it one by one (once the engine is warm:
                    # ~0.5 ms). A failure here is the worker's as well: the engine is withdrawn (from this
                    # Scrubber and from the process) and the run fails, as if it had not loaded.
                    self.scrub("Warm-up: write to a.b@example.org or call +1 202 555 0173, 020 7946 0958, "
                               "0711 123456.")
                except Exception as exc:
                    self._engine = None
                    if engine is not None:
                        forget_engine(self.config, engine)
                    if isinstance(exc, UserError):
                        raise
                    raise WorkerError(f"the PII stage could not load Presidio's analyzer: {type(exc).__name__}: "
                                      f"{exc}") from exc
            return self._engine

    @property
    def analyzer(self):
        return self._load().analyzer

    @property
    def nlp_engine(self):
        return self._load().nlp_engine

    @property
    def anonymizer(self):
        return self._load().anonymizer

    @property
    def screened(self) -> list:
        """The screened Presidio recognizers, in the order of ``config.entities``."""
        return self._load().screened

    @property
    def operators(self) -> dict[str, OperatorConfig]:
        self._load()
        return self._operators

    # ------------------------------------------------------------------------------------------ find
    def entities_to_check(self, text: str) -> list[str]:
        """The entity types whose recognizer finds something in the windows of their candidates in ``text``
        (plus NER types, which have no screen). When there are candidates, loads the analyzer and hands each
        screened recognizer its windows for the ``analyze`` call that follows."""
        cache = ScanCache(text)
        if not (cache.digit_runs or "@" in text or ":" in text or cache.url_candidates()):
            # Every screen's candidates need one of these (digit runs: the numeric, IBAN and crypto screens; "@":
            # e-mail; ":": IPv6; "://" or "www.": URL), so none has any: ~8 screens not asked, one by one.
            return list(self.ner_entities)
        windows = [spec.windows(cache) for _, spec in self.screens]
        phones = None
        if self._phone_at is not None and windows[self._phone_at]:
            phones = self._phones(text, windows[self._phone_at])
            if not phones[1]:
                windows[self._phone_at] = []
        if not any(windows) and not self.ner_entities:
            return []
        screened = self._load().screened
        found = []
        for at, (recognizer, spans) in enumerate(zip(screened, windows)):
            recognizer.prepared(text, spans)
            if not spans:
                continue
            # A candidate is not a match: most texts with candidates (a "::", a dotted version number) have
            # none. Each screened recognizer is asked first, on its windows: one whose answer is empty adds
            # nothing to the analyzer's results, so it is left out of the call, and a text no recognizer finds
            # anything in skips the analyzer (its per-call work is most of a text's cost). The phone
            # recognizer was asked without Presidio above.
            if self._ask_first and at != self._phone_at and not recognizer.analyze(text, recognizer.supported_entities):
                recognizer.prepared(text, [])
                continue
            found.append(self.screens[at][0])
        if phones is not None and phones[1]:
            screened[self._phone_at].inner.remember(*phones)
        if not found and not self.ner_entities:
            return []
        return found + self.ner_entities

    def _phones(self, text: str, windows: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
        """``(what the phone recognizer will be given, the numbers it finds there)``: its very call
        (``phone_spans`` on the windows as ``ScreenedRecognizer.analyze`` joins them), made without Presidio.
        Every numeric id (``d00000000``) is a phone candidate; this keeps such ids from loading Presidio."""
        from corpusforge.pipeline.pii.phones import phone_spans

        joined = text if windows == [(0, len(text))] else SEPARATOR.join(text[s:e] for s, e in windows)
        return joined, phone_spans(joined, self._phone_regions)

    def find(self, text: str, nlp_artifacts: NlpArtifacts | None = None, *,
             ambiguous: bool = True, tier: int | None = None) -> list[RecognizerResult]:
        """Non-overlapping entities in ``text``, sorted by start. Detection runs on the canonical view of
        ``text`` (``corpusforge.pipeline.pii.canonical``: format characters removed, compatibility forms
        folded, digits of every script read as ASCII, numbers joined across line breaks); each result's span
        is the original text's, disguise included, and its ``canonical`` attribute the value as the view
        reads it (what the hash action hashes, so a disguised value hashes as its plain form).

        ``ambiguous=False``: the scrubber as it was before the view's ambiguous readings, by this very code: the view
        without them (``canonical(text, ambiguous=False)``) and the pass over the text as written, nothing else. What
        it masks, the default masks too (``tests/fuzz/pii.py``'s ``lower_tiers_kept`` holds every draw to that).
        ``tier``: the scrubber with the view's readings up to that tier's (``canonical``'s ``TOP_TIER``, ``OLDER`` is
        ``ambiguous=False``); what a lower tier's scrubber masks, a higher one's masks too (``lower_tiers_kept``)."""
        if tier is None:
            tier = TOP_TIER if ambiguous else OLDER
        if not self.ner_entities and word_without_pii(text):
            return []
        view = canonical(text, tier=tier)
        written_artifacts = nlp_artifacts
        if not view.identity:
            nlp_artifacts = None  # the NER model's tokens were the original text's
        results = self._find(view.text, nlp_artifacts)
        for r in results:
            value = view.text[r.start:r.end]
            r.start, r.end = view.span(r.start, r.end)
            # a no-break space and U+2007 (URL_SPACE) as a space: "202%20555%200173" (read with URL_SPACE) hashes as "202 555 0173" does
            r.canonical = value.replace("\u00a0", " ").replace("\u2007", " ")
        # What every lower tier's view shows (``canonical``'s tiers) is masked too, where it differs: a newer reading
        # can glue a value a lower tier found to its neighbour (``Call me\\⏎212\\-555\\-0173``: the continuation
        # read as nothing, "me212-555-0173" is no number). Gated on what could make the views differ, not on a tier's
        # reading in the text as written: the readings apply to decoded text too (``me%5C%0A212\-555\-0173``, the
        # continuation URL-escaped, or as ``&#92;&#10;``, ``\u005c\u000a``, ``=5C=0A``), and every escape, as a
        # literal continuation, starts with an introducer. Where the text holds one, the lower view is computed, and
        # the recognizers run on it only where it differs; plain text pays nothing. The view folds characters (NFKC)
        # before it reads escapes, so a text whose view is not the text as written is asked too: ``＼`` (U+FF3C),
        # ``﹪``, ``＆``, ``⁼`` fold to introducers (``Call me＼⏎212＼-555＼-0173``). The tiers up to ``AMBIGUOUS``.
        if tier > AMBIGUOUS and (not view.identity or any(introducer in text for introducer in ESCAPE_INTRODUCERS)):
            for lower in range(tier - 1, AMBIGUOUS - 1, -1):
                lower_view = canonical(text, tier=lower)
                if lower_view.text != view.text:
                    results += self._older_results(lower_view)
        # ... and to what the view without its ambiguous readings shows (``canonical(text, ambiguous=False)``: the
        # readings added since the view was first held to this rule, and every one added later): a newer reading can
        # glue a value to a neighbour (``a%a0+1-212-555-0183``), eat its first digit (``\\f1.202...``) or read its
        # digits as a character (``C:\\Users\\398-55-5589`` as ``Θ-55-5589``), where the older view left them as
        # written; and it can leave as written what an older reading read (CSS's ``\\BA `` is not read where ``\\b``
        # might be JSON's backspace). Where that view differs from the full one, what the recognizers find in it is
        # masked too, whole, mapped back through its own spans: the union, so no reading unmasks what the older ones
        # masked. It is asked whenever either view reads anything: the older view differs from the text as written
        # only by reading escapes, so a text with no escape's introducer ("=", "%", "&", a backslash) whose full view
        # is the text as written is the text of both.
        older = view  # (without the ambiguous readings, the view is the older one)
        if tier > OLDER and (not view.identity or any(introducer in text for introducer in ESCAPE_INTRODUCERS)):
            older = canonical(text, ambiguous=False)
        if view.identity and not older.identity:  # the full view is the text as written: its results are the written ones
            results += self._older_results(older)
        elif not view.identity:
            written = self._find(text, written_artifacts)
            against = results  # what the written results add to: the older view's (as before the ambiguous readings)
            if older.identity:  # the older readings read nothing here: their results are the written ones, below
                for r in written:
                    r.canonical = text[r.start:r.end].replace("\u00a0", " ")
                results += written
                written = []
            elif older.text != view.text:
                against = self._older_results(older)
                results += against
            # The view only adds to what the text as written shows: every reading it makes of an escape can also
            # glue a value to a neighbour or read a value's digits as a character (adjacent encoded-words joined,
            # "\\151.155.246.51" as "\\i.155...", "Jos=C3=A9,phone=2125550173" as quoted-printable throughout),
            # so what the recognizers find in the text as written is masked too: a value where the view found
            # none, and where they overlap, the written one's digits that the view's left out (a value's digits
            # read as a character); not its other characters, which the view read better ("jdoe&nbsp;and" is
            # no URL's end)
            # Checked against the older view's results alone: against the full view's too, a shorter value that one
            # found (split at a character a newer reading made: ``jane%BBdoe@fab.io\\BA `` found ``doe@fab.io``) took
            # the place of the written one, and the older view, which had masked it whole, found nothing (its ``\\BA ``
            # glued an "o" to the host)
            results += written_additions(written, against, text)
        # every tier's and view's results in one order (a lower tier's are added above in any branch)
        results.sort(key=lambda r: (r.start, -r.end))
        out: list[RecognizerResult] = []
        for r in results:
            # overlapping spans are one: two view characters from one original one (a ligature), or a value the
            # view and the text as written both hold
            if out and r.start < out[-1].end:
                out[-1].end = max(out[-1].end, r.end)
                continue
            out.append(r)
        return out

    def _older_results(self, older) -> list[RecognizerResult]:
        """What the recognizers find in the view without its ambiguous readings, mapped back through its spans."""
        found = self._find(older.text, None)
        for r in found:
            value = older.text[r.start:r.end]
            r.start, r.end = older.span(r.start, r.end)
            r.canonical = value.replace("\u00a0", " ").replace("\u2007", " ")
        return found

    def _find(self, text: str, nlp_artifacts: NlpArtifacts | None) -> list[RecognizerResult]:
        entities = self.entities_to_check(text)
        if not entities:
            return []
        engine = self._load()
        if nlp_artifacts is None:
            nlp_artifacts = engine.empty_artifacts
        if nlp_artifacts is None:
            with engine.nlp_lock:
                nlp_artifacts = engine.nlp_engine.process_text(text, LANGUAGE)
        results = engine.analyzer.analyze(
            text=text, language=LANGUAGE, entities=entities, nlp_artifacts=nlp_artifacts,
            score_threshold=self.config.score_threshold, allow_list=self.config.allow_list or None,
        )
        return resolve_overlaps(results)

    # --------------------------------------------------------------------------------------- replace
    def _operator(self, entity: str) -> OperatorConfig:
        from corpusforge.pipeline.pii import presidio  # noqa: F401  (first: Presidio without transformers and torch)
        from presidio_anonymizer.entities import OperatorConfig

        action = self.config.action_for(entity)
        placeholder = self.config.placeholder_for(entity)
        if action == "mask":
            return OperatorConfig("mask", {"masking_char": self.config.mask_char, "chars_to_mask": 1 << 30,
                                           "from_end": False})
        if action == "hash":
            tag = placeholder.strip("<>[]") or entity
            return OperatorConfig("custom", {"lambda": functools.partial(_hash_placeholder, tag, self.salt,
                                                                         self.config.hash_chars)})
        return OperatorConfig("replace", {"new_value": placeholder})  # replace, and drop's leftovers

    def scrub(self, text: str, nlp_artifacts: NlpArtifacts | None = None, *, ambiguous: bool = True,
              tier: int | None = None) -> Scrubbed:
        results = self.find(text, nlp_artifacts, ambiguous=ambiguous, tier=tier)
        if not results:
            return Scrubbed(text, {}, (), None)
        new_text, spans = self.replace(text, results)
        counts: dict[str, int] = {}
        for span in spans:
            counts[span.entity] = counts.get(span.entity, 0) + 1
        return Scrubbed(new_text, counts, spans, self._removal(text, spans, counts))

    def replace(self, text: str, results: Sequence[RecognizerResult]) -> tuple[str, tuple[Span, ...]]:
        """The text with every result (non-overlapping, sorted by start) replaced as its entity's operator
        says, and the spans. Presidio's anonymizer gives the same text, but rebuilds the whole text once per
        entity (quadratic in the matches of one document); this joins the pieces once."""
        pieces: list[str] = []
        spans: list[Span] = []
        at = 0
        for r in results:
            replacement = self._replacement(r.entity_type, text[r.start:r.end], value_of(r, text))
            pieces.append(text[at:r.start])
            pieces.append(replacement)
            spans.append(Span(r.entity_type, r.start, r.end, replacement))
            at = r.end
        pieces.append(text[at:])
        return "".join(pieces), tuple(spans)

    def _replacement(self, entity: str, original: str, value: str | None = None) -> str:
        """What the operator of ``entity`` (``_operator``) puts in place of ``original``; the hash action hashes
        ``value`` (the canonical form, ``find``), so a disguised value hashes as its plain form."""
        operator = self.operators.get(entity) or self._operator(entity)  # loads the engine: it found the entity
        params = operator.params
        if operator.operator_name == "mask":  # every character masked (chars_to_mask covers any length)
            return params["masking_char"] * min(len(original), params["chars_to_mask"])
        if operator.operator_name == "custom":
            return params["lambda"](original if value is None else value)
        return params["new_value"]

    def digest(self, text: str, chars: int) -> str:
        """The first ``chars`` hex digits of the salted SHA-256 of ``text`` (what the hash action uses)."""
        return _digest(self.salt, chars, text)

    def hashed(self, entity: str, original: str, chars: int) -> str:
        """The hash action's placeholder for ``original`` (``<EMAIL:3fa2...>``), with ``chars`` hex digits."""
        tag = self.config.placeholder_for(entity).strip("<>[]") or entity
        return _hash_placeholder(tag, self.salt, chars, original)

    def scrub_batch(self, texts: Sequence[str]) -> list[Scrubbed]:
        """``scrub`` over a batch; with an NER model the spaCy pipeline runs once over the batch (nlp.pipe)."""
        if not self.ner_entities:
            return [self.scrub(text) for text in texts]
        engine = self._load()
        with engine.nlp_lock:  # one spaCy pipeline per process: one batch through it at a time
            artifacts = list(engine.nlp_engine.process_batch(list(texts), LANGUAGE, batch_size=max(1, len(texts))))
        return [self.scrub(text, nlp_artifacts) for text, nlp_artifacts in artifacts]

    def _removal(self, text: str, spans: Sequence[Span], counts: dict[str, int]) -> tuple[str, dict] | None:
        dropped = sorted(e for e in counts if e in self.drop_entities)
        if dropped:
            return "pii_drop_entity", {"entities": dropped}
        pii_chars = sum(s.end - s.start for s in spans)
        density = pii_chars / max(1, len(text))
        if len(spans) >= self.config.density_min_entities and density > self.config.max_density:
            return "pii_density", {"density": round(density, 4), "entities": len(spans)}
        return None
