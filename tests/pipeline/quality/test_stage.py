"""The quality stage's Beam transforms with TestPipeline, on hand-made documents; and language ID offline."""
from __future__ import annotations

import dataclasses

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from corpusforge.pipeline.document import Document
from corpusforge.core.errors import UserError
from corpusforge.pipeline.quality import HeuristicFilter, LanguageFilter, Quality, QualityConfig
from corpusforge.pipeline.quality.config import LangIdConfig
from corpusforge.pipeline.quality.langid import LanguageIdentifier, bundled_lid_path

EN = ("The library opens at nine in the morning and closes at six in the evening. Visitors can borrow up to "
      "ten books at a time, and the reading room on the first floor is quiet and bright.")
DE = ("Die Bibliothek öffnet um neun Uhr morgens und schließt um sechs Uhr abends. Besucher können bis zu "
      "zehn Bücher auf einmal ausleihen, und der Lesesaal im ersten Stock ist ruhig und hell.")
FR = ("La bibliothèque ouvre à neuf heures du matin et ferme à six heures du soir. Les visiteurs peuvent "
      "emprunter jusqu'à dix livres à la fois, et la salle de lecture est calme et lumineuse.")
ES = ("La biblioteca abre a las nueve de la mañana y cierra a las seis de la tarde. Los visitantes pueden "
      "llevarse hasta diez libros a la vez, y la sala de lectura del primer piso es tranquila.")
SHORT = "Water boils at one hundred degrees Celsius at sea level."
NAV = "Home | About | Products | Contact\nLogin | Register\nHome | About | Products | Contact"
MOJIBAKE = "The cafÃ© on the corner serves the best crÃªpes in town, and the owner says â€œwelcomeâ€\x9d to all."
SYMBOLS = "=*=*=*=*=*=*=*=*=*=*=*=*=*=*=*=*=\n||||||||||||||||||||||||||||||||\n=*=*=*=*=*=*=*=*=*=*=*="


def doc(id_: str, text: str, **metadata) -> Document:
    return Document(id=id_, text=text, source="test", metadata=metadata)


def test_bundled_language_id_is_offline_and_batched():
    assert bundled_lid_path().endswith("lid.176.ftz")
    preds = LanguageIdentifier().predict([EN, DE, FR, ES, "line one\nline two of English text here"])
    assert [p[0] for p in preds] == ["en", "de", "fr", "es", "en"]
    assert all(0.65 < p[1] <= 1.0 for p in preds[:4])


def test_user_model_path_that_does_not_exist_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        LanguageIdentifier(str(tmp_path / "lid.176.bin"))


def test_quality_defaults_keep_good_text_in_every_language_and_drop_junk():
    docs = [doc("en", EN), doc("de", DE), doc("fr", FR), doc("es", ES), doc("short", SHORT),
            doc("nav", NAV), doc("moji", MOJIBAKE), doc("sym", SYMBOLS),
            doc("cookie", EN + "\nThis site uses cookies to give you a better experience.")]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | Quality(QualityConfig())
        assert_that(out.kept | "KeptIds" >> beam.Map(lambda d: (d.id, d.annotations["lang"], d.text == EN if d.id in ("en", "cookie") else True)),
                    equal_to([("en", "en", True), ("de", "de", True), ("fr", "fr", True), ("es", "es", True),
                              ("short", "en", True), ("cookie", "en", True)]), label="kept")
        assert_that(out.removed | "RemovedIds" >> beam.Map(lambda r: (r.doc.id, r.stage, r.reason)),
                    equal_to([("nav", "quality", "junk_boilerplate"), ("moji", "quality", "junk_mojibake"),
                              ("sym", "quality", "junk_non_letter")]), label="removed")
        assert_that(out.edits, equal_to([("quality", "c4_lines_policy", 1), ("quality", "c4_lines_removed", 1)]),
                    label="edits")


def test_paper_settings_drop_other_languages_and_short_text():
    from corpusforge.pipeline.quality import paper_config

    docs = [doc("de", DE), doc("short", SHORT)]
    with TestPipeline() as p:
        out = p | beam.Create(docs) | Quality(paper_config())
        assert_that(out.kept, equal_to([]), label="kept")
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.reason)),
                    equal_to([("de", "langid_language"), ("short", "gopher_short_doc")]), label="removed")


def test_language_filter_alone_with_a_language_list_and_per_language_scores():
    cfg = LangIdConfig(languages=["en", "de"], min_scores={"de": 0.9999999}, min_chars=None)
    with TestPipeline() as p:
        out = p | beam.Create([doc("en", EN), doc("de", DE), doc("fr", FR)]) | LanguageFilter(cfg)
        assert_that(out.kept | beam.Map(lambda d: (d.id, d.annotations["lang"], 0 < d.annotations["lang_score"] <= 1)),
                    equal_to([("en", "en", True)]), label="kept")
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.reason, r.details["lang"])),
                    equal_to([("de", "langid_low_score", "de"), ("fr", "langid_language", "fr")]), label="removed")


def test_language_decision_on_short_documents_drops_only_confident_other_languages():
    from corpusforge.pipeline.quality.langid import language_decision

    cfg = LangIdConfig(languages=["en"], min_score=0.65, min_chars=200)
    assert language_decision("de", 0.99, 50, cfg) == "langid_language"
    assert language_decision("de", 0.40, 50, cfg) is None  # short and unsure: kept
    assert language_decision("de", 0.40, 500, cfg) == "langid_language"
    assert language_decision("en", 0.40, 50, cfg) is None
    assert language_decision("en", 0.40, 500, cfg) == "langid_low_score"
    assert language_decision("en", 0.40, 500, LangIdConfig(filter=False)) is None


# Python's documentation that lid.176 labels English with confidence under 0.65 (0.56 and 0.61): technical prose.
TECHNICAL = [
    "Returns a decorator that invokes update_wrapper() with the decorated function as the wrapper argument and "
    "the arguments to wraps() as the remaining arguments. Default arguments are as for update_wrapper(). This is a "
    "convenience function to simplify applying partial() to update_wrapper().",
    "The user never instantiates a transport directly; they call a utility function, passing it a protocol factory "
    "and other information necessary to create the transport and protocol. (E.g. EventLoop.create_connection() or "
    "EventLoop.create_server().)",
]


def test_no_confidence_floor_by_default_when_every_language_is_kept():
    # docs/ablation.md: with every language kept, the 0.65 floor removed only technical and mixed-language prose
    from corpusforge.pipeline.quality.langid import language_decision

    preds = LanguageIdentifier().predict(TECHNICAL)
    assert [lang for lang, _ in preds] == ["en", "en"] and all(score < 0.65 for _, score in preds)
    default, english = LangIdConfig(), LangIdConfig(languages=["en"])
    assert default.threshold("en") == 0.0 and english.threshold("en") == 0.65
    assert LangIdConfig(min_score=0.5).threshold("en") == 0.5 and LangIdConfig(min_scores={"en": 0.3}).threshold("en") == 0.3
    for text, (lang, score) in zip(TECHNICAL, preds):
        assert language_decision(lang, score, len(text), default) is None
        assert language_decision(lang, score, len(text), english) == "langid_low_score"
        assert language_decision(lang, score, len(text), LangIdConfig(min_score=0.65)) == "langid_low_score"


def test_heuristic_filter_alone_with_a_blocklist_on_urls():
    cfg = QualityConfig()
    cfg = dataclasses.replace(cfg, blocklist=dataclasses.replace(cfg.blocklist, domains=["spam.example"]))
    with TestPipeline() as p:
        out = p | beam.Create([doc("a", EN, url="https://spam.example/x"), doc("b", EN, url="https://ok.example/")]) \
            | HeuristicFilter(cfg)
        assert_that(out.kept | beam.Map(lambda d: d.id), equal_to(["b"]), label="kept")
        assert_that(out.removed | beam.Map(lambda r: (r.doc.id, r.reason)), equal_to([("a", "blocklist_domain")]),
                    label="removed")
        assert_that(out.edits, equal_to([]), label="edits")


def test_missing_model_files_fail_at_construction(tmp_path):
    from corpusforge.pipeline.quality import ClassifierConfig, ClassifierFilter

    with pytest.raises(UserError, match="quality.langid.model"):
        LanguageFilter(LangIdConfig(model=str(tmp_path / "nope.bin")))
    with pytest.raises(UserError, match=r"quality.classifiers\[q\].model"):
        ClassifierFilter(ClassifierConfig(name="q", model=str(tmp_path / "nope.bin")))


def test_disabled_stage_passes_everything():
    with TestPipeline() as p:
        out = p | beam.Create([doc("nav", NAV)]) | Quality(QualityConfig(enabled=False))
        assert_that(out.kept | beam.Map(lambda d: d.id), equal_to(["nav"]), label="kept")
        assert_that(out.removed, equal_to([]), label="removed")


def test_model_files_name_size_and_hash_of_every_model_used(tmp_path):
    import hashlib
    import os

    from corpusforge.pipeline.quality.config import ClassifierConfig, QualityConfig
    from corpusforge.pipeline.quality.langid import bundled_lid_path
    from corpusforge.pipeline.quality.stage import model_files

    fake = tmp_path / "quality.bin"
    fake.write_bytes(b"not really a model, but it has bytes")
    cfg = QualityConfig(classifiers=[ClassifierConfig(name="quality", model=str(fake))])
    files = model_files(cfg)
    lid = bundled_lid_path()
    assert files == [
        {"role": "quality.langid.model", "name": "lid.176.ftz", "path": lid, "size": os.path.getsize(lid),
         "sha256": hashlib.sha256(open(lid, "rb").read()).hexdigest()},
        {"role": "quality.classifiers[quality].model", "name": "quality.bin", "path": str(fake),
         "size": fake.stat().st_size, "sha256": hashlib.sha256(fake.read_bytes()).hexdigest()},
    ]
    off = QualityConfig(classifiers=cfg.classifiers)
    off.langid.enabled = False
    assert [f["role"] for f in model_files(off)] == ["quality.classifiers[quality].model"]
    off.enabled = False
    assert model_files(off) == []


_COLLECTED: dict[str, list] = {}  # what _run's pipeline saw (the in-process runner: one Python process)


def _collect(rows, name):
    _COLLECTED[name] = sorted(rows, key=repr)


def _run(transform, docs):
    """Kept (id, text, annotations), removed (id, reason, details), edits summed, and the stage's counters."""
    from apache_beam.metrics.metric import MetricsFilter

    _COLLECTED.clear()
    p = TestPipeline()
    out = p | beam.Create(docs) | transform
    (out.kept | "Kept" >> beam.Map(lambda d: (d.id, d.text, d.annotations)) | "KeptAll" >> beam.combiners.ToList()
     | "KeptSave" >> beam.Map(_collect, "kept"))
    (out.removed | "Removed" >> beam.Map(lambda r: (r.doc.id, r.reason, r.details))
     | "RemovedAll" >> beam.combiners.ToList() | "RemovedSave" >> beam.Map(_collect, "removed"))
    (out.edits | "EditsSum" >> beam.CombinePerKey(sum) | "EditsAll" >> beam.combiners.ToList()
     | "EditsSave" >> beam.Map(_collect, "edits"))
    result = p.run()
    result.wait_until_finish()
    counters = {c.key.metric.name: c.committed
                for c in result.metrics().query(MetricsFilter().with_namespace("quality"))["counters"]}
    return dict(_COLLECTED), counters


class _TwoSteps(beam.PTransform):
    """Language ID, then the heuristic rules, as two steps (the stage's wiring before they shared one)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg

    def expand(self, pcoll):
        first = pcoll | LanguageFilter(self.cfg.langid)
        second = first.kept | HeuristicFilter(self.cfg)
        from corpusforge.pipeline.stage import StageOutputs

        return StageOutputs(kept=second.kept, removed=(first.removed, second.removed) | beam.Flatten(),
                            edits=second.edits | beam.Map(lambda e: ((e[0], e[1]), e[2])), errors=None)


@pytest.mark.parametrize("store_values", [True, False])
def test_one_step_of_language_id_and_rules_decides_counts_and_edits_as_two_steps(store_values):
    cfg = dataclasses.replace(QualityConfig(), store_values=store_values)
    docs = [doc("en", EN), doc("de", DE), doc("short", SHORT), doc("nav", NAV), doc("moji", MOJIBAKE),
            doc("sym", SYMBOLS), doc("xx", "asdf qwer zxcv " * 3),
            doc("cookie", EN + "\nThis site uses cookies to give you a better experience."),
            doc("cookie2", DE + "\nWe use cookies. Read our privacy policy.\nAnd javascript, too.")]

    class _OneStep(beam.PTransform):
        def expand(self, pcoll):
            out = pcoll | Quality(cfg)
            return out._replace(edits=out.edits | beam.Map(lambda e: ((e[0], e[1]), e[2])))

    one, one_counts = _run(_OneStep(), docs)
    two, two_counts = _run(_TwoSteps(cfg), docs)
    assert one == two and one_counts == two_counts
    assert one["removed"] and one["edits"] and one_counts["langid_kept"] >= 6
