"""Each heuristic rule on hand-made documents, asserting the exact reason string."""
from __future__ import annotations

import dataclasses

import pytest

from corpusforge.pipeline.quality.config import (
    BlocklistConfig, C4Config, FineWebConfig, GopherConfig, JunkConfig, LengthConfig, QualityConfig, RepetitionConfig,
    paper_config,
)
from corpusforge.pipeline.quality.rules import KEEP, Blocklist, HeuristicRules, c4_edit, compile_bad_words
from tests.pipeline.quality.reference import (
    c4_quality, fineweb_quality, gopher_quality, gopher_repetition, junk_rule, length_rule,
)
from corpusforge.pipeline.quality.text import count_sentences, words

PROSE = (
    "The river runs through the old town and past the mill. Children play on its banks in the summer, "
    "and the fishermen wait there with their rods from early morning until the light fades. In winter the "
    "water is high and fast, and the bridge is the only way to reach the market on the other side. "
    "People have lived with the river for centuries, and they tell stories about the floods that came "
    "and went."
)
GERMAN = (
    "Der Fluss fließt durch die alte Stadt und an der Mühle vorbei. Im Sommer spielen die Kinder am Ufer, "
    "und die Fischer warten dort mit ihren Ruten vom frühen Morgen bis zum Abend."
)
PAPER = paper_config()


def gopher(**kw):
    return dataclasses.replace(PAPER.gopher, **kw)


# ------------------------------------------------------------------------------------------ tokenizer
def test_words_split_punctuation_and_contractions_like_spacy():
    assert words("Don't stop, it's 3.5 e.g. here.") == ["Do", "n't", "stop", ",", "it", "'s", "3.5", "e.g.", "here", "."]
    assert words("see os.path.join() and __init__") == ["see", "os.path.join", "(", ")", "and", "_", "_", "init", "_", "_"]


def test_count_sentences_splits_after_end_marks_only_before_words():
    assert count_sentences(words("One. Two! Three? Mr. Smith came...")) == 4
    assert count_sentences([]) == 0


# --------------------------------------------------------------------------------------------- length
@pytest.mark.parametrize(
    "cfg,text,reason",
    [
        (LengthConfig(min_chars=10), "too short", "length_too_short"),
        (LengthConfig(max_chars=5), "too long", "length_too_long"),
        (LengthConfig(min_words=3), "two words.", "length_too_few_words"),
        (LengthConfig(max_words=1), "two words", "length_too_many_words"),
        (LengthConfig(min_chars=1, max_chars=100, min_words=1, max_words=10), "fine words here", KEEP),
        (LengthConfig(), "", KEEP),
    ],
)
def test_length_rule(cfg, text, reason):
    assert length_rule(text, cfg) == reason


# ------------------------------------------------------------------------------------------ blocklist
def test_blocklist_patterns_and_domains(tmp_path):
    f = tmp_path / "domains.txt"
    f.write_text("# spam\nspam.example\n", encoding="utf-8")
    bl = Blocklist(BlocklistConfig(patterns=[r"buy\s+now"], domains_file=str(f)))
    assert bl.check("Please BUY  now!") == "blocklist_pattern"
    assert bl.check("fine", url="https://www.spam.example/page") == "blocklist_domain"
    assert bl.check("fine", url="https://notspam.example/page") is KEEP
    assert bl.check("fine", url="spam.example/x") == "blocklist_domain"


@pytest.mark.parametrize("url,blocked", [
    ("https://example.com./page", True),  # a fully qualified name, trailing dot
    ("https://WWW.EXAMPLE.COM/page", True),
    ("https://Shop.Example.Com.:8080/x", True),
    ("https://example\u3002com/page", True),  # an ideographic full stop separates labels in IDNA
    ("https://xn--bcher-kva.de/buch", True),  # punycode of a domain listed in Unicode
    ("https://www.BÜCHER.de/", True),
    ("https://xn--80akhbyknj4f.xn--p1ai/", True),  # Unicode of a domain listed in punycode
    ("https://испытание.рф/", True),
    ("https://notexample.com/", False),
    ("https://example.com.evil.org/", False),
    ("https://bucher.de/", False),
    ("http://[::1/broken", False),  # not a URL (urlsplit raises): no host, and no crash
])
def test_blocklist_domains_match_trailing_dot_case_and_idn_forms(url, blocked):
    bl = Blocklist(BlocklistConfig(domains=["Example.COM.", "bücher.de", "XN--80AKHBYKNJ4F.XN--P1AI"]))
    assert bl.check("fine", url=url) == ("blocklist_domain" if blocked else KEEP)


def test_blocklist_bad_pattern_is_a_user_error():
    from corpusforge.core.errors import UserError

    with pytest.raises(UserError, match="not a valid regular expression"):
        Blocklist(BlocklistConfig(patterns=["(unclosed"]))


def test_url_patterns_and_url_length():
    bl = Blocklist(BlocklistConfig(url_patterns=[r"/(tag|login)/", r"[?&]replytocom="], max_url_length=60))
    assert bl.check("fine", url="https://blog.example/TAG/python") == "blocklist_url_pattern"
    assert bl.check("fine", url="https://blog.example/post?id=3&replytocom=77") == "blocklist_url_pattern"
    assert bl.check("fine", url="https://blog.example/post/" + "a" * 40) == "url_too_long"
    assert bl.check("fine", url="https://blog.example/post/tagging-guide") == KEEP
    assert bl.check("/login/ in the text is no URL") == KEEP  # URL rules look at the URL only
    assert not Blocklist(BlocklistConfig()).active and Blocklist(BlocklistConfig(max_url_length=10)).active


def test_bad_url_pattern_fails_at_configuration():
    from corpusforge.core.config_loader import ConfigError

    with pytest.raises(ConfigError, match="url_patterns.*not a valid regular expression"):
        BlocklistConfig(url_patterns=["(unclosed"])


# ------------------------------------------------------------------------------------- gopher quality
@pytest.mark.parametrize(
    "text,cfg,reason",
    [
        ("the cat and the dog", gopher(), "gopher_short_doc"),
        (PROSE, gopher(max_words=20), "gopher_long_doc"),
        ("a b c d e f of to the and be " * 10, gopher(min_words=5), "gopher_short_mean_word"),
        (" ".join(["incomprehensibilities"] * 10) + " the and", gopher(min_words=5), "gopher_long_mean_word"),
        (PROSE + " #tag" * 20, gopher(), "gopher_too_many_hashes"),
        (PROSE + " wait..." * 20, gopher(), "gopher_too_many_ellipsis"),
        ("\n".join("- the item and the thing number %d" % i for i in range(20)), gopher(), "gopher_too_many_bullets"),
        ("\n".join("the story of the thing and more and more and then it went on and on and on..." for _ in range(20)), gopher(), "gopher_too_many_end_ellipsis"),
        (PROSE + " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", gopher(), "gopher_below_alpha_threshold"),
        (GERMAN * 3, gopher(), "gopher_few_stop_words"),
        (PROSE, gopher(), KEEP),
    ],
)
def test_gopher_paper_rules(text, cfg, reason):
    assert gopher_quality(text, cfg, lang="en") == reason


def test_gopher_adapted_uses_the_documents_language_and_keeps_short_paragraphs():
    adapted = GopherConfig()
    assert gopher_quality(GERMAN, adapted, lang="de") is KEEP
    assert gopher_quality(GERMAN, gopher(), lang="de") == "gopher_short_doc"  # the paper's 50-word minimum
    assert gopher_quality("Ein kurzer Satz über den Fluss.", adapted, lang="de") is KEEP
    # A language without a stop-word list skips the stop-word rules instead of dropping everything.
    assert gopher_quality("Jõgi voolab läbi vana linna ja veski kõrval.", adapted, lang="et") is KEEP
    # Word salad: words of the language, almost no function words.
    salad = "river mill banks summer fishermen rods morning light winter water bridge market stories floods the"
    assert gopher_quality(salad, adapted, lang="en") == "gopher_few_stop_words"
    salad2 = (salad.replace(" the", "") + " ") * 3 + "the of"
    assert gopher_quality(salad2, adapted, lang="en") == "gopher_low_stop_word_fraction"


def test_gopher_alpha_ratio_ignores_punctuation_tokens_unless_configured():
    technical = "Use the (key, value) pairs of a dict: d[k] = v; see d.items() and d.keys() for the view objects."
    assert gopher_quality(technical, GopherConfig(), lang="en") is KEEP
    assert gopher_quality(technical, GopherConfig(alpha_ratio_counts_punctuation=True), lang="en") == \
        "gopher_below_alpha_threshold"


def test_gopher_skips_word_rules_for_languages_without_spaces():
    chinese = "河流穿过古老的城镇，经过磨坊。夏天孩子们在河岸上玩耍。"
    assert gopher_quality(chinese, GopherConfig(), lang="zh") is KEEP


def test_gopher_none_turns_checks_off():
    off = GopherConfig(min_words=None, min_stop_words=None, min_stop_word_fraction=None)
    assert gopher_quality("the cat", off, lang="en") is KEEP


# ---------------------------------------------------------------------------------- gopher repetition
REP = RepetitionConfig()


@pytest.mark.parametrize(
    "text,reason",
    [
        ("Same paragraph here.\n\nSame paragraph here.\n\nOther one.", "rep_dup_para_frac"),
        ("A long paragraph that repeats itself a lot.\n\nshort\n\nx\n\ny\n\nA long paragraph that repeats itself a lot.",
         "rep_dup_para_char_frac"),
        ("line one\nline two\nline one\nline one\nline three", "rep_dup_line_frac"),
        ("a much longer line that is repeated\nb\nc\nd\ne\nf\na much longer line that is repeated", "rep_dup_line_char_frac"),
        ("buy cheap shoes " * 20 + PROSE, "rep_top_2gram"),
        (PROSE, KEEP),
    ],
)
def test_gopher_repetition(text, reason):
    assert gopher_repetition(text, REP) == reason


# A paragraph of Python's documentation (argparse's nargs) that repeats its own phrases, as reference prose does.
NARGS = ("- nargs -- The number of command-line arguments that should be consumed. By default, one argument will "
         "be consumed and a single value will be produced. Other values include: - N (an integer) consumes N "
         "arguments (and produces a list) - '?' consumes zero or one arguments - '*' consumes zero or more arguments "
         "(and produces a list) - '+' consumes one or more arguments (and produces a list) Note that the difference "
         "between the default and nargs=1 is that with the default, a single value will be produced, while with "
         "nargs=1, a list containing a single value will be produced.")


def test_duplicated_ngram_rules_are_off_by_default_and_on_in_the_paper_table():
    # docs/ablation.md: on documentation they removed good paragraphs and no junk that another rule kept
    assert all(frac is None for frac in REP.dup_ngram_char_frac.values()) and REP.dup_ngrams() == []
    paper = RepetitionConfig(dup_ngram_char_frac={"5": 0.15, "6": 0.14, "7": 0.13, "8": 0.12, "9": 0.11, "10": 0.10})
    assert gopher_repetition(PROSE + " " + PROSE[:150], paper) == "rep_dup_5gram"
    assert gopher_repetition(NARGS, paper) == "rep_dup_5gram"
    assert gopher_repetition(NARGS, REP) is KEEP
    assert gopher_repetition(NARGS, PAPER.repetition).startswith("rep_dup_")  # paper_config keeps the table
    # one key turns one rule back on; the others stay off
    assert RepetitionConfig(dup_ngram_char_frac={"5": 0.15}).dup_ngrams() == [(5, 0.15)]


def test_top_ngram_counts_a_unique_ngram_only_in_the_paper_setting():
    text = "hello world"
    assert gopher_repetition(text, REP) is KEEP
    assert gopher_repetition(text, PAPER.repetition) == "rep_top_2gram"
    assert gopher_repetition("", REP) == "rep_empty"


# ------------------------------------------------------------------------------------------------- C4
def test_c4_edit_removes_lines_and_counts_each_reason():
    text = "\n".join([
        "A heading without punctuation",
        "Too short.",
        "Please enable JavaScript in your browser settings.",
        "This site uses cookies to improve your experience.",
        "The first real sentence is here.[1]",
        "x" * 1001 + " long word line.",
        "The second real sentence is here too!",
    ])
    new, counts = c4_edit(text, PAPER.c4)
    assert new == "The first real sentence is here.\nThe second real sentence is here too!"
    assert counts == {
        "c4_lines_no_terminal_punct": 1, "c4_lines_too_few_words": 1, "c4_lines_javascript": 1,
        "c4_lines_policy": 1, "c4_lines_long_word": 1, "c4_citations": 1, "c4_lines_removed": 5,
    }


@pytest.mark.parametrize("line,expected", [
    ("Paris is the capital of France.[1] It is large.", "Paris is the capital of France. It is large."),
    ("It was founded in 1990,[12] and grew.[3][4]", "It was founded in 1990, and grew."),
    ("The claim is disputed.[citation needed] Others agree.", "The claim is disputed. Others agree."),
    ("The claim is disputed[citation needed].", "The claim is disputed."),
    ("History[edit]", "History"),
    ("[1] Smith, J. A history of rivers.", "Smith, J. A history of rivers."),
    ("It grew quickly. [7] Then it shrank.", "It grew quickly. Then it shrank."),
])
def test_c4_citations_are_removed_from_prose(line, expected):
    assert c4_edit(line, C4Config())[0] == expected


@pytest.mark.parametrize("line", [
    "In Python, values[1] is the second element of the list.",
    "Write items = [] to start with an empty list, then items.append(x).",
    "A matrix entry is m[3][4], the fifth entry of the fourth row.",
    "for x in data[0]: total += x[1]",
    "Call f(a)[2] or obj.rows[10] to get one; print([1]) prints a list.",
    "x = [1]",
    "self.buf[edit] holds the pending change.",
])
def test_c4_citations_never_touch_brackets_in_code(line):
    assert c4_edit(line, C4Config()) == (line, {})


def test_c4_citations_in_prose_and_code_on_one_line():
    line = "The list values[1] holds the second value.[2] Use items = [] to reset it.[citation needed]"
    new, counts = c4_edit(line, C4Config())
    assert new == "The list values[1] holds the second value. Use items = [] to reset it."
    assert counts == {"c4_citations": 2}


def test_c4_edit_at_defaults_leaves_clean_text_untouched():
    text = "  A heading\n\nA paragraph of prose.\n"
    assert c4_edit(text, C4Config()) == (text, {})


@pytest.mark.parametrize(
    "text,reason",
    [
        ("Lorem ipsum dolor sit amet, consectetur. " * 6, "c4_lorem_ipsum"),
        ("One sentence with a {brace}. " + "Another sentence here. " * 5, "c4_curly_bracket"),
        ("One sentence only here. Two sentences.", "c4_too_few_sentences"),
        ("", "c4_too_few_sentences"),
        ("One. Two. Three. Four. Five.", KEEP),
    ],
)
def test_c4_page_rules_paper(text, reason):
    cfg = dataclasses.replace(PAPER.c4, drop_empty_after_edit=False)
    assert c4_quality(text, cfg) == reason


def test_c4_bad_words_and_empty_after_edit(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("darn\n", encoding="utf-8")
    bad = compile_bad_words(str(f))
    assert c4_quality("Well, darn it all.", C4Config(), bad) == "c4_bad_words"
    assert c4_quality("Well, darned it all.", C4Config(), bad) is KEEP
    assert c4_quality("  \n", C4Config()) == "c4_empty_after_edit"


# -------------------------------------------------------------------------------------------- FineWeb
FW = FineWebConfig()


@pytest.mark.parametrize(
    "text,reason",
    [
        ("\n\n  \n", "fineweb_empty"),
        ("no punctuation here\nnor here at all\nor here either\nor here", "fineweb_line_punct_ratio"),
        ("Short.\nAlso short.\nTiny.\nA much longer line that goes past thirty characters.", "fineweb_short_line_ratio"),
        ("A line that is repeated in the document.\nA line that is repeated in the document.\n" + PROSE,
         "fineweb_char_dup_ratio"),
        ("One.\nTwo.\nThree.\nFour.", "fineweb_list_ratio"),
        (PROSE, KEEP),
    ],
)
def test_fineweb(text, reason):
    cfg = FW if reason != "fineweb_list_ratio" else dataclasses.replace(FW, max_short_line_ratio=None)
    assert fineweb_quality(text, cfg) == reason


# ----------------------------------------------------------------------------------------------- junk
J = JunkConfig()


@pytest.mark.parametrize(
    "text,reason",
    [
        ("   ", "junk_empty"),
        ("The cafÃ© served crÃªpes and the menu said â€œbonjourâ€\x9d to everyone who came in the morning.", "junk_mojibake"),
        ("Price 12.50 | 13.75 | 99.10 | 45.00 | 12.00 | 77.30 total", "junk_non_letter"),
        ("/\\_/\\  ( o.o )  > ^ <  ~~~===###===~~~ |||| //// \\\\\\\\", "junk_non_letter"),
        ("Dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore.", "junk_lorem_ipsum"),
        ("We use cookies to improve your experience.\nAccept all cookies\nPrivacy policy", "junk_boilerplate"),
        ("Visit https://a.example and https://b.example or www.c.example now", "junk_links"),
        (("Cheap shoes for sale. Buy shoes online, best shoes, shoes discount, shoes shop. " * 3), "junk_keyword_stuffing"),
        (PROSE, KEEP),
        ("Der Fluss fließt ruhig durch die Stadt, über die Brücke gehen viele Menschen.", KEEP),
    ],
)
def test_junk(text, reason):
    assert junk_rule(text, J, lang="en") == reason


def test_junk_thresholds_off():
    off = JunkConfig(max_mojibake_fraction=None, max_non_letter_fraction=None, drop_lorem_ipsum=False,
                     max_boilerplate_fraction=None, max_top_word_fraction=None, max_url_fraction=None)
    assert junk_rule("12 34 56 Ã© lorem ipsum", off) is KEEP


# ---------------------------------------------------------------------------------------------- chain
def test_heuristic_rules_apply_edits_then_drop_rules():
    rules = HeuristicRules(QualityConfig())
    text, reason, edits, _ = rules.apply(PROSE + "\nThis site uses cookies.", lang="en")
    assert reason is None and text == PROSE and edits == {"c4_lines_policy": 1, "c4_lines_removed": 1}
    assert rules.apply("This site uses cookies.", lang="en")[1] == "c4_empty_after_edit"
    assert rules.apply(GERMAN, lang="de")[1] is None
    assert HeuristicRules(PAPER).apply(GERMAN, lang="de")[1] == "gopher_short_doc"


# ------------------------------------------------------------------------------------ adapted options
def test_shuffled_word_salad_is_junk():
    salad = ("river . the , mill banks and of summer . fishermen the rods , morning . light winter the water . "
             "bridge , market the stories . floods of the came")
    assert junk_rule(salad, J, lang="en") == "junk_word_salad"
    assert junk_rule(PROSE, J, lang="en") is KEEP


def test_short_documents_need_one_stop_word_and_few_lines_skip_line_ratios():
    cfg = GopherConfig()
    assert gopher_quality("Shallow copy operation on arbitrary Python objects.", cfg, lang="en") is KEEP
    assert gopher_quality("Shallow copy operation arbitrary Python objects.", cfg, lang="en") == "gopher_few_stop_words"
    dialogue = "- What did the river say to the bridge?\n- Nothing, it just waved."
    assert gopher_quality(dialogue, cfg, lang="en") is KEEP
    assert gopher_quality(dialogue, dataclasses.replace(cfg, line_rules_min_lines=None), lang="en") == "gopher_too_many_bullets"


def test_repetition_ngram_rules_wait_for_fifty_words():
    short = 'When "break" leaves a "try" with a "finally" clause, that "finally" clause runs first.'
    assert gopher_repetition(short, RepetitionConfig()) is KEEP
    assert gopher_repetition(short, PAPER.repetition) is not KEEP


def test_fineweb_lines_ending_in_a_colon_or_a_closing_quote_count_as_prose():
    text = ("The available presentation types are the following:\nThe guard at the gate said \"stop right there.\"\n"
            "A list of the remaining options follows:")
    assert fineweb_quality(text, FW) is KEEP
    assert fineweb_quality(text, PAPER.fineweb) == "fineweb_line_punct_ratio"


def test_each_rule_is_defined_once_in_production():
    """The stage's measure -> decide path is the definition: pipeline/quality defines no reference twin of a
    rule (those pin it from tests/pipeline/quality/reference.py) and keeps one step list (decide.decision_steps)."""
    import ast
    import pathlib

    from corpusforge.pipeline.quality import rules as rules_module
    from tests.pipeline.quality import reference

    folder = pathlib.Path(rules_module.__file__).parent
    twins = {name for name in vars(reference) if callable(getattr(reference, name))
             and getattr(getattr(reference, name), "__module__", "") == reference.__name__}
    defined = {}
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defined.setdefault(node.name, []).append(path.name)
    assert not {name for name in defined if "reference" in name}
    assert not twins & defined.keys(), twins & defined.keys()
    assert "_steps" not in defined and defined["decision_steps"] == ["decide.py"]
