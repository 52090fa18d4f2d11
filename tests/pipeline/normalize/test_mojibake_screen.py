"""``may_be_bad`` answers exactly as ftfy's ``is_bad``, so the screened repair equals ftfy's on every line."""
import re

from ftfy.badness import BADNESS_RE, is_bad
from hypothesis import given, settings
from hypothesis import strategies as st

from corpusforge.pipeline.normalize import mojibake_screen
from corpusforge.pipeline.normalize.mojibake_screen import ANCHORS, WIDTH, anchors_and_width, may_be_bad
from corpusforge.pipeline.normalize.stage import repair_mojibake, repair_mojibake_reference

CLEAN = [
    "Grüße aus Köln — “bis bald”, sagte sie.",
    "Le café est prêt, dit-il à l’hôte. « Très bien ! »",
    "Ελληνικά κείμενα και русский текст рядом, 10 € или 9 £.",
    "日本語のテキストと中文文本。",
    "SÃO PAULO and IRMÃ DULCE, ½ price, 25°C, naïve coöperation.",
]
# Clean text garbled the ways mojibake arises: UTF-8 bytes read in a single-byte code page, once or twice.
GARBLED = [text.encode("utf-8").decode(codec, errors="replace")
           for text in CLEAN for codec in ("cp1252", "latin-1", "cp1251", "mac_roman", "cp437")]
GARBLED += [g.encode("utf-8").decode("cp1252", errors="replace") for g in GARBLED[:10]]


def test_the_installed_ftfy_pattern_has_the_shape_the_screen_relies_on():
    # If ftfy changes its pattern the screen falls back to is_bad (still exact), but then it saves nothing:
    # this test says so instead of letting the speed go silently.
    assert mojibake_screen._ANCHOR is not None
    assert all(ord(c) > 127 for c in ANCHORS) and 1 < WIDTH < 20


def test_screen_equals_is_bad_on_clean_and_garbled_lines():
    lines = CLEAN + GARBLED + ["", "plain ascii", "Ã", "Ã ", "x Ã ", "Ã©", "\x9d", "a" * 50 + "Ã©" + "b" * 50]
    assert any(is_bad(line) for line in lines) and not all(is_bad(line) for line in lines)
    for line in lines:
        assert may_be_bad(line) == is_bad(line), line


def test_a_match_at_a_window_edge_is_found():
    # Matches that straddle the anchor by the full width, at the line's start and end, and two anchors whose
    # windows merge: each must be found as the whole-line search finds it.
    for text in GARBLED:
        for pad in range(0, 2 * WIDTH + 3):
            for line in ("x" * pad + text, text + "y" * pad, text[:pad] + " " * pad + text[pad:]):
                assert may_be_bad(line) == is_bad(line), line


def test_a_pattern_of_another_shape_is_refused():
    assert anchors_and_width(re.compile("ab|Ã©")) is None  # an alternative with no non-ASCII character
    assert anchors_and_width(re.compile("Ã(?=©)")) is None  # a look-ahead
    assert anchors_and_width(re.compile("Ã+©")) is None  # unbounded
    # per alternative one mandatory set, the one with the fewest letters: © for "Ã©", Â for "^Â "
    assert anchors_and_width(re.compile("Ã©|^Â ")) == (frozenset("©Â"), 2)
    assert anchors_and_width(BADNESS_RE) == (ANCHORS, WIDTH)



def _pattern_characters() -> list[str]:
    """Every non-ASCII character BADNESS_RE's alternatives name, not only the anchors: the letters an alternative
    needs beside its anchor (Greek, Cyrillic, accented Latin) are drawn too."""
    from re import _parser as sre_parse

    chars: set[str] = set()
    for alternative in sre_parse.parse(BADNESS_RE.pattern, BADNESS_RE.flags).data[0][1][1]:
        for op, av in alternative.data:
            chars |= {c for c in mojibake_screen._explicit_chars(op, av) or () if ord(c) > 127}
    return sorted(chars)


def test_greek_and_cyrillic_letters_are_not_anchors():
    # they were (449 anchors): a Greek or Russian line was searched whole, ~0.3 us a character
    text = "Η Ελλάδα είναι χώρα της Ευρώπης. Россия — государство в Восточной Европе."
    assert sum(c in ANCHORS for c in text) <= 2 and len(ANCHORS) < len(_pattern_characters())


# Text drawn near the anchors: the characters mojibake is made of, ASCII around them, and whole garbled words.
_MOJIBAKE_ALPHABET = st.sampled_from(_pattern_characters() + list("aeioux .,'\"-\t\u00a0\u00ad0123") + ["\x80", "\x9d"])
_LINES = st.one_of(
    st.lists(_MOJIBAKE_ALPHABET, max_size=40).map("".join),
    st.text(max_size=60),
    st.builds(lambda a, b, c: a + b + c, st.text(max_size=20), st.sampled_from(GARBLED), st.text(max_size=20)),
)


@settings(max_examples=600, deadline=None)
@given(_LINES)
def test_screen_equals_is_bad_on_drawn_text(line):
    assert may_be_bad(line) == is_bad(line)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES, max_size=4).map("\n".join))
def test_screened_repair_equals_ftfy_alone(text):
    assert repair_mojibake(text) == repair_mojibake_reference(text)


def test_screened_repair_equals_ftfy_alone_on_garbled_documents():
    document = "\n".join(CLEAN + GARBLED)
    assert repair_mojibake(document) == repair_mojibake_reference(document) != document


def test_screen_is_linear_on_a_line_of_anchors():
    # Every character an anchor: the windows merge into one search of the line, as is_bad would do.
    line = "Ã" * 200_000
    assert may_be_bad(line) == is_bad(line)
