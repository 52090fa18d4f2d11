"""The screens are sound: a screened recognizer finds exactly what its recognizer finds on the full text."""
from __future__ import annotations

import random

import pytest

from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.entities import PATTERN_ENTITIES
from tests.pipeline.pii.cases import NEAR_MISSES, TRUE_POSITIVES

pytest.importorskip("presidio_analyzer")

from corpusforge.pipeline.pii.recognizers import build_recognizers  # noqa: E402
from corpusforge.pipeline.pii.screen import ScanCache  # noqa: E402
from corpusforge.pipeline.pii.screened import ScreenedRecognizer  # noqa: E402

FILLER = ["The quick brown fox.", "Call it version 3.11 on 2024-01-02.", "Totals: 12 34 56 78 90 12 34.",
          "See §4.2 and (12) - (34).", "Phone", "ISBN", "x" * 50, "a@b", "::", "1.2.3.4.5", "+", "\n", "  "]


def _texts():
    cases = [t for cs in TRUE_POSITIVES.values() for t, _ in cs] + [t for ts in NEAR_MISSES.values() for t in ts]
    rng = random.Random(0)
    mixed = []
    for _ in range(60):
        parts = rng.sample(cases, 6) + rng.sample(FILLER, 4)
        rng.shuffle(parts)
        mixed.append(rng.choice([" ", "", "\n", ", "]).join(parts))
    return cases + mixed


@pytest.fixture(scope="module")
def recognizers():
    return build_recognizers(PIIConfig(entities=list(PATTERN_ENTITIES)))


def _spans(results):
    return sorted((r.entity_type, r.start, r.end, r.score) for r in results)


def test_screened_equals_full_text(recognizers):
    for recognizer in recognizers:
        screened = ScreenedRecognizer(recognizer, recognizer.SCREEN)
        entity = recognizer.supported_entities
        for text in _texts():
            assert _spans(screened.analyze(text, entity)) == _spans(recognizer.analyze(text, entity)), (
                recognizer.name, text)


def test_windows_cover_candidates_and_merge():
    from corpusforge.pipeline.pii.screen import SCREENS

    text = "Call +1 202 555 0173 or 202-555-0174 now. " + "Filler text. " * 20 + "Fax 030 901820."
    windows = SCREENS["phone"].windows(ScanCache(text))
    assert len(windows) == 2
    assert windows[0][0] == 0 and text.index("now") < windows[0][1] < text.index("Filler") + 40
    assert windows[1][1] == len(text)
    assert SCREENS["phone"].windows(ScanCache("no digits here, only 12 and 345")) == []


def test_numeric_runs():
    runs = ScanCache("a 12 b 1234 c 81.2.69.160 d +1 (202) 555-0173").numeric_runs
    assert [(r.digits, r.has_dot) for r in runs] == [(4, False), (8, True), (11, False)]


_WINDOW_PIECES = ["a", "@", "1", "12", "1234567", " ", "  ", ".", "-", ":", ":ab:", "x", "\n", "DE44", "0x", "://",
                  "+1 202 555 0123", "user@mail.example.com", "10.0.0.7", "()", "é"]


def test_windows_equal_the_reference_that_grows_every_candidate():
    # Skipping a candidate inside the previous one's grown span must not change a single window, for every screen.
    from corpusforge.pipeline.pii.screen import SCREENS

    rng = random.Random(7)
    texts = ["".join(rng.choice(_WINDOW_PIECES) for _ in range(rng.randrange(1, 80))) for _ in range(3000)]
    texts += [t for cs in TRUE_POSITIVES.values() for t, _ in cs] + [t for ts in NEAR_MISSES.values() for t in ts]
    for text in texts:
        cache = ScanCache(text)
        for name, spec in SCREENS.items():
            assert spec.windows(cache) == spec.windows_reference(cache), (name, text)


@pytest.mark.timeout(60)
def test_a_long_run_of_candidates_is_grown_once():
    # 'a@' 100k times is one email token run holding 100k candidates: growing each one rescanned the run
    # (2e10 steps, minutes); numbers joined by spaces are one numeric token run in the same way.
    from corpusforge.pipeline.pii.screen import SCREENS

    for name, text in (("email", "x" + "a@" * 100_000), ("phone", " ".join(["+1 202 555 0123"] * 20_000)),
                       ("ip", " ".join(["10.0.0.7"] * 30_000))):
        assert SCREENS[name].windows(ScanCache(text)) == [(0, len(text))]


def test_digit_runs_and_url_candidates_equal_their_regexes():
    # The byte-mask digit scan and the URL pre-test give exactly the regexes' spans, on ASCII and on other text
    # (other scripts' digits, no-break spaces, a lone surrogate, characters whose lower case is longer).
    from corpusforge.pipeline.pii.screen import _URL

    pieces = ["1", "22", "0x", "a", " ", ".", "www.", "WwW.", "ww", "://", ":/", "\u00a0", "\u0661\u0662", "\uff11",
              "\u0130", "\ud800", "\u00b2", "\u00e9", "\u4e2d", "\n", "9"]
    rng = random.Random(3)
    texts = ["", "no digits", "2024", "x" * 300 + "7"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 40))) for _ in range(3000)]
    for text in texts:
        cache = ScanCache(text)
        assert cache.digit_runs == cache.digit_runs_reference(), text
        assert cache.url_candidates() == cache.find_all(_URL), text


# Words built to come close to an entity: a valid one glued to a letter or "_", or at the start of a word.
NEAR_WORDS = ["d00000123", "d02079460958", "tel_02079460958", "x4111111111111111", "_4111111111111111",
              "a1BoatSLRHtKNngkdXEeobR76b53LETtpyT", "_1BoatSLRHtKNngkdXEeobR76b53LETtpyT", "xDE89370400440532013000",
              "id_123456789", "ssn078051121", "x0x52908400098527886E0F7030069857D2E4169EE7", "Bc", "bc", "b1"]
# Words a recognizer finds something in: the refusals of ``word_without_pii`` are needed.
WORDS_WITH_PII = ["_DE89370400440532013000", "DE89370400440532013000", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"]


def _words(n: int = 3000):
    rng = random.Random(5)
    alphabet = ["abcdefxyz", "ABCDEQXZ", "0123456789", "13", "_", "bc1", "DE89", "0x"]
    words = list(NEAR_WORDS)
    for _ in range(n):
        word = "".join(rng.choice(rng.choice(alphabet)) if rng.random() < 0.8 else rng.choice(alphabet)
                       for _ in range(rng.randint(1, 45)))
        words.append(word)
        words.append(rng.choice(["d", "x_", "ID", "_", "Q"]) + word)
    return words


def test_a_word_without_pii_is_one_no_recognizer_finds_anything_in(recognizers):
    from corpusforge.pipeline.pii.canonical import canonical
    from corpusforge.pipeline.pii.screen import word_without_pii

    accepted = 0
    for word in _words():
        if not word_without_pii(word):
            continue
        accepted += 1
        assert canonical(word).text == word, word
        for recognizer in recognizers:  # the recognizers themselves, on the whole word: no screen involved
            assert recognizer.analyze(word, recognizer.supported_entities) == [], (word, recognizer.name)
    assert accepted > 1500
    for word in WORDS_WITH_PII:
        assert not word_without_pii(word)
        assert any(r.analyze(word, r.supported_entities) for r in recognizers), word


def test_the_scrubber_skips_the_screens_for_a_word_without_pii_unless_a_ner_model_reads_it(monkeypatch):
    # An id such as d00000123 has a digit run, a phone candidate: the screens and the phone check cost ~20 us.
    from corpusforge.pipeline.pii.scrubber import Scrubber

    scrubber = Scrubber(PIIConfig(), salt="a-salt-of-sixteen-chars")
    asked = []
    real = scrubber.entities_to_check
    monkeypatch.setattr(scrubber, "entities_to_check", lambda text: asked.append(text) or real(text))
    assert scrubber.find("d00000123") == [] and scrubber.find("doc_17") == [] and asked == []
    assert [r.entity_type for r in scrubber.find("_DE89370400440532013000")] == ["IBAN_CODE"]
    assert "_DE89370400440532013000" in asked
    scrubber.ner_entities = ["PERSON"]  # what a pii.ner_model gives: the model reads every text
    monkeypatch.setattr(scrubber, "_find", lambda text, artifacts: asked.append(("model", text)) or [])
    scrubber.find("d00000123")
    assert asked[-1] == ("model", "d00000123")
