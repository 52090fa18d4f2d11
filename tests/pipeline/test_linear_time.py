"""Hostile inputs at sizes where quadratic (or exponential) work would take minutes: each test only has to
finish (pytest-timeout) and agree with the straightforward reference; no timing assertions."""
from __future__ import annotations

import random

import pytest
from presidio_analyzer import RecognizerResult

from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.scrubber import Scrubber, resolve_overlaps
from corpusforge.pipeline.quality.text import _EMOTICONS, _merge_emoticons, words


@pytest.mark.timeout(30)
def test_word_glued_to_a_long_ellipsis_tokenizes():
    """The fast path's regex backtracked through 2^n splits of n dots: 60 dots never finished."""
    assert words("and" + "." * 60 + "then") == ["and", "." * 60, "then"]
    assert len(words(("wait" + "." * 200 + "now ") * 500)) == 1500


def _merge_reference(tokens):
    out, i = list(tokens), 0
    while i < len(out) - 1:
        if out[i] + out[i + 1] in _EMOTICONS and not out[i][0].isalnum():
            out[i:i + 2] = [out[i] + out[i + 1]]
        i += 1
    return out


def test_emoticon_merge_matches_the_in_place_reference():
    rng = random.Random(1)
    pieces = [":", ")", "(", ";", "-", "D", "x", "<", "3", "'", "o"]
    for _ in range(2000):
        tokens = [rng.choice(pieces) for _ in range(rng.randrange(0, 12))]
        out = ["head"] + tokens
        _merge_emoticons(out, 1)
        assert out == ["head"] + _merge_reference(tokens)


@pytest.mark.timeout(60)
def test_many_emoticon_pairs_in_one_chunk():
    assert words("x" + "):" * 50_000)[0] == "x"


def _overlaps_reference(results):
    kept = []
    for r in sorted(results, key=lambda r: (-r.score, -(r.end - r.start), r.start)):
        if all(r.end <= k.start or r.start >= k.end for k in kept):
            kept.append(r)
    return sorted(kept, key=lambda r: r.start)


def test_resolve_overlaps_matches_the_pairwise_reference():
    rng = random.Random(0)
    for _ in range(2000):
        results = []
        for _ in range(rng.randrange(0, 30)):
            start = rng.randrange(0, 60)
            results.append(RecognizerResult("E", start, start + rng.randrange(0, 12),
                                            rng.choice([0.5, 0.6, 0.85, 1.0])))
        def key(rs):
            return [(r.start, r.end, r.score) for r in rs]
        assert key(resolve_overlaps(results)) == key(_overlaps_reference(results))


@pytest.mark.timeout(60)
def test_resolve_overlaps_on_100k_results():
    """100,000 results, half of them overlapping a neighbour: the pairwise check made 10^10 comparisons."""
    results = [RecognizerResult("E", 3 * i, 3 * i + (4 if i % 2 else 2), 0.5 + (i % 3) / 10) for i in range(100_000)]
    kept = resolve_overlaps(results)
    assert all(a.end <= b.start for a, b in zip(kept, kept[1:]))


@pytest.fixture(scope="module")
def scrubber():
    return Scrubber(PIIConfig(), salt="test")


@pytest.mark.timeout(120)
def test_scrub_a_document_of_20k_emails(scrubber):
    text = " ".join(f"user{i}@mail{i % 97}.example.com" for i in range(20_000))
    result = scrubber.scrub(text)
    assert result.counts.get("EMAIL_ADDRESS") == 20_000


@pytest.mark.parametrize("action", ["replace", "mask", "hash"])
def test_replacement_equals_presidios_anonymizer(action):
    """The one-pass replacement gives Presidio's anonymizer's text and items, for every action."""
    from presidio_anonymizer import AnonymizerEngine

    s = Scrubber(PIIConfig(default_action=action), salt="x" * 16)
    text = "Mail jane@example.org or bob.smith@example.com, call +1-202-555-0173 ext. 12, ip 10.1.2.3 ok."
    results = s.find(text)
    assert results
    engine = AnonymizerEngine().anonymize(text=text, analyzer_results=results, operators=s.operators,
                                          merge_entities_with_spaces=False)
    new_text, spans = s.replace(text, results)
    assert new_text == engine.text
    assert [sp.replacement for sp in spans] == [i.text for i in sorted(engine.items, key=lambda i: i.start)]
