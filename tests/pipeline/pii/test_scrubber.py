"""Per-entity true positives and near misses through the offline Presidio scrubber, and its actions."""
from __future__ import annotations

import re

import pytest

from corpusforge.pipeline.pii.config import PIIConfig
from corpusforge.pipeline.pii.entities import PATTERN_ENTITIES
from tests.pipeline.pii.cases import NEAR_MISSES, TRUE_POSITIVES, best_seconds

pytest.importorskip("presidio_analyzer")

from corpusforge.pipeline.pii.scrubber import Scrubber, resolve_overlaps  # noqa: E402


@pytest.fixture(scope="module")
def scrubber() -> Scrubber:
    return Scrubber(PIIConfig(entities=list(PATTERN_ENTITIES), max_density=1.0))


TP_CASES = [(entity, text, span) for entity, cases in TRUE_POSITIVES.items() for text, span in cases]
NM_CASES = [(kind, text) for kind, texts in NEAR_MISSES.items() for text in texts]


@pytest.mark.parametrize("entity,text,span", TP_CASES, ids=[f"{e}:{s}" for e, _, s in TP_CASES])
def test_true_positive_found_exactly(scrubber, entity, text, span):
    results = scrubber.find(text)
    found = [(r.entity_type, text[r.start:r.end]) for r in results]
    assert found == [(entity, span)]
    out = scrubber.scrub(text).text
    assert out == text.replace(span, scrubber.config.placeholder_for(entity))


@pytest.mark.parametrize("entity,text,span", TP_CASES, ids=[f"{e}:{s}" for e, _, s in TP_CASES])
def test_screen_finds_a_candidate_in_the_span_alone(scrubber, entity, text, span):
    from corpusforge.pipeline.pii.canonical import canonical
    from corpusforge.pipeline.pii.screen import ScanCache

    # the screens read the canonical view, as the Scrubber hands it to them (``jane%40example.org`` has an "@")
    screens = {r.supported_entities[0]: r.spec for r in scrubber.screened}
    assert screens[entity].windows(ScanCache(canonical(span).text)), \
        f"the {entity} screen would hide {span!r} from its recognizer"


@pytest.mark.parametrize("kind,text", NM_CASES, ids=[f"{k}:{t[:30]}" for k, t in NM_CASES])
def test_near_miss_untouched(scrubber, kind, text):
    result = scrubber.scrub(text)
    assert result.text == text, [(s.entity, text[s.start:s.end]) for s in result.spans]


def test_no_url_hit_on_the_domain_of_an_email(scrubber):
    text = "Mail jane@www.example.com or jane@example.com, see https://example.com/users/jane."
    result = scrubber.scrub(text)
    assert result.text == "Mail <EMAIL> or <EMAIL>, see <URL>."
    assert result.counts == {"EMAIL_ADDRESS": 2, "URL": 1}


def test_url_without_personal_path_kept(scrubber):
    text = "Docs at https://docs.python.org/3/library/re.html and www.example.com/about."
    assert scrubber.scrub(text).text == text


def test_ip_not_also_a_phone(scrubber):
    result = scrubber.scrub("host 81.2.69.160 up")
    assert result.counts == {"IP_ADDRESS": 1}


def test_mixed_document_counts_and_spans(scrubber):
    text = ("Contact Jane at jane.doe@example.org or +1 (202) 555-0173. Python 3.11.7 was released on "
            "2023-10-02; card 4111 1111 1111 1111; IBAN GB82WEST12345698765432; node 81.2.69.160.")
    result = scrubber.scrub(text)
    assert result.text == ("Contact Jane at <EMAIL> or <PHONE>. Python 3.11.7 was released on 2023-10-02; card "
                           "<CREDIT_CARD>; IBAN <IBAN>; node <IP_ADDRESS>.")
    assert result.counts == {"EMAIL_ADDRESS": 1, "PHONE_NUMBER": 1, "CREDIT_CARD": 1, "IBAN_CODE": 1, "IP_ADDRESS": 1}
    assert [text[s.start:s.end] for s in result.spans] == [
        "jane.doe@example.org", "+1 (202) 555-0173", "4111 1111 1111 1111", "GB82WEST12345698765432", "81.2.69.160"]
    assert result.removal is None


def test_text_without_any_prescreen_hit_skips_the_analyzer(scrubber, monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("analyzer called")

    monkeypatch.setattr(scrubber.analyzer, "analyze", fail)
    assert scrubber.entities_to_check("Plain prose, nothing to see: version 3.11.") == []
    assert scrubber.scrub("Plain prose, nothing to see: version 3.11.").spans == ()


def test_candidates_without_a_match_skip_the_analyzer(scrubber, monkeypatch):
    # "::" is an IPv6 candidate, 3.11.2.1 an IPv4 one, "www." a URL one: none is an address; the screened
    # recognizers say so on their windows, and the analyzer (most of a text's cost) is not called.
    text = "Example:: see version 3.11.2.1 of www.python.org/doc and a:b: too."
    assert scrubber.entities_to_check(text) == []

    def fail(*args, **kwargs):
        raise AssertionError("analyzer called")

    monkeypatch.setattr(scrubber.analyzer, "analyze", fail)
    assert scrubber.scrub(text).spans == ()


def test_prescreen_selects_only_plausible_entities(scrubber):
    assert scrubber.entities_to_check("write to a@b.org") == ["EMAIL_ADDRESS"]
    assert "PHONE_NUMBER" in scrubber.entities_to_check("call 202 555 0173")
    assert "EMAIL_ADDRESS" not in scrubber.entities_to_check("call 202 555 0173")


def test_allow_list():
    scrubber = Scrubber(PIIConfig(allow_list=["security@python.org"]))
    text = "Report to security@python.org, not jane@example.org."
    assert scrubber.scrub(text).text == "Report to security@python.org, not <EMAIL>."


def test_keep_private_ips_off_removes_them():
    scrubber = Scrubber(PIIConfig(entities=["IP_ADDRESS"], keep_private_ips=False))
    assert scrubber.scrub("gateway 192.168.1.1").text == "gateway <IP_ADDRESS>"


def test_mask_action():
    scrubber = Scrubber(PIIConfig(default_action="mask", mask_char="#"))
    assert scrubber.scrub("mail a.b@example.org now").text == "mail " + "#" * len("a.b@example.org") + " now"


def test_hash_action_is_salted_and_consistent():
    config = PIIConfig(actions={"EMAIL_ADDRESS": "hash"}, hash_chars=10)
    one = Scrubber(config, salt="0123456789abcdef-run-1")
    text = "a.b@example.org wrote to c.d@example.org and a.b@example.org again, call 202-555-0173"
    out = one.scrub(text).text
    tokens = re.findall(r"<EMAIL:([0-9a-f]{10})>", out)
    assert len(tokens) == 3 and tokens[0] == tokens[2] != tokens[1]
    assert "example.org" not in out and out.endswith("call <PHONE>")
    other = Scrubber(config, salt="0123456789abcdef-run-2").scrub(text).text
    assert re.findall(r"<EMAIL:([0-9a-f]{10})>", other)[0] != tokens[0]


def test_drop_action_removes_document_with_reason():
    scrubber = Scrubber(PIIConfig(actions={"CREDIT_CARD": "drop"}))
    result = scrubber.scrub("pay with 4111 1111 1111 1111 or mail a@example.org")
    assert result.removal == ("pii_drop_entity", {"entities": ["CREDIT_CARD"]})
    assert result.text == "pay with <CREDIT_CARD> or mail <EMAIL>"  # removed records never hold PII either
    assert scrubber.scrub("mail a@example.org").removal is None


def test_density_rule():
    scrubber = Scrubber(PIIConfig(max_density=0.3, density_min_entities=3))
    directory = "a@example.org, b@example.org, c@example.org; call 202-555-0173"
    result = scrubber.scrub(directory)
    assert result.removal[0] == "pii_density"
    assert result.removal[1]["entities"] == 4 and result.removal[1]["density"] > 0.3
    assert scrubber.scrub("Write to a@example.org.").removal is None  # one entity: below density_min_entities
    prose = "Write to a@example.org, b@example.org or c@example.org. " + "Long prose follows. " * 20
    assert scrubber.scrub(prose).removal is None


def test_custom_placeholder():
    scrubber = Scrubber(PIIConfig(placeholders={"EMAIL_ADDRESS": "[email]"}))
    assert scrubber.scrub("to a@example.org").text == "to [email]"


def test_resolve_overlaps_prefers_score_then_length():
    from presidio_analyzer import RecognizerResult

    results = [RecognizerResult("PHONE_NUMBER", 0, 11, 0.7), RecognizerResult("US_SSN", 0, 11, 0.85),
               RecognizerResult("URL", 20, 30, 0.5), RecognizerResult("EMAIL_ADDRESS", 15, 35, 0.5)]
    kept = resolve_overlaps(results)
    assert [(r.entity_type, r.start) for r in kept] == [("US_SSN", 0), ("EMAIL_ADDRESS", 15)]


def test_scrub_batch_equals_scrub(scrubber):
    texts = [text for _, text, _ in TP_CASES[:10]] + ["nothing here"]
    assert scrubber.scrub_batch(texts) == [scrubber.scrub(t) for t in texts]


def test_our_recognizer_classes_do_not_shadow_presidio_ones():
    """Presidio's registry loader finds recognizer classes by ``__name__`` among all subclasses: a clash
    would break a plain ``AnalyzerEngine()`` in the same process."""
    import presidio_analyzer.predefined_recognizers as predefined

    from corpusforge.pipeline.pii import recognizers

    ours = {c.__name__ for c in vars(recognizers).values()
            if isinstance(c, type) and c.__module__ == recognizers.__name__}
    assert ours and not ours & set(dir(predefined))


def test_a_text_without_digits_at_signs_colons_or_urls_asks_no_screen(scrubber, monkeypatch):
    from corpusforge.pipeline.pii.screen import ScreenSpec

    def fail(*args, **kwargs):
        raise AssertionError("a screen was asked")

    monkeypatch.setattr(ScreenSpec, "windows", fail)
    assert scrubber.entities_to_check("Plain prose, nothing in it that any screen looks for.") == []


@pytest.mark.parametrize("unit", ["a-1.2.3.4.", "x-81.2.69.160.a"])
def test_dotted_quads_after_dashes_cost_linear_time(scrubber, unit):
    # The class: a dotted quad after a dash followed by a chain of dot-labels. The host-name lookahead read every
    # following label to the end of the text once per quad (20 KB 1 s, 50 KB 10 s): a ratio of 16 for 4x the text
    # (linear: about 5x here, 0.12 s and 0.6 s; the floor keeps a loaded machine's noise from failing it).
    def sized(n: int) -> str:
        return (unit * (n // len(unit) + 1))[:n]

    small, large = best_seconds(scrubber.scrub, sized(40_000)), best_seconds(scrubber.scrub, sized(160_000))
    assert large < max(10 * small, 1.5), (small, large)
    assert best_seconds(scrubber.scrub, sized(200_000)) < 10.0
