"""A backslash line continuation inside a value (a shell's, C's, Python's, a CSS string's, a Makefile's: ``\\`` then a
line break, read as nothing by all of them) splits what the recognizers read: ``EMAIL="jane\\⏎doe@example.com"`` left
``jane`` (the start of the address: ``doe@example.com`` masked alone), ``PHONE=212-555-\\⏎0173`` and a card, an IBAN,
an IP so cut were left whole. The view reads such a continuation between two characters of a token as nothing (an
ambiguous reading: Markdown's hard line break is the same two characters, and read as nothing it can glue a value to
the next line's word; the view without it still finds the value there, docs/pii.md "the view only adds")."""
from __future__ import annotations

import itertools

import pytest

from corpusforge.pipeline.pii.canonical import canonical
from corpusforge.pipeline.pii.config import PIIConfig

pytest.importorskip("presidio_analyzer")

from corpusforge.pipeline.pii.scrubber import Scrubber  # noqa: E402

SCRUBBER = Scrubber(PIIConfig(), salt="s" * 16)
VALUES = {"email": "jane.doe@example.org", "phone": "212-555-0173", "intl": "+44 20 7946 0958",
          "card": "4111-1111-1111-1111", "iban": "DE89370400440532013000", "ssn": "398-55-5589", "ip": "81.2.69.160",
          "crypto": "0x52908400098527886E0F7030069857D2E4169EE7"}
BREAKS = ["\\\n", "\\\r\n", "\\\r"]
CONTEXTS = [("EMAIL=\"", "\"\nexport EMAIL"), ("echo ", " >> out.txt"), ("#define CONTACT \"", "\"")]


def _leaked(kind: str, value: str, out: str) -> str | None:
    """What of ``value`` the scrub ``out`` still shows, the continuations read as a shell reads them."""
    joined = out.replace("\\\r\n", "").replace("\\\n", "").replace("\\\r", "")
    needles = [value, value.partition("@")[0][:6]] if kind == "email" else [value, value[:-3]]
    return next((n for n in needles if n in joined), None)


@pytest.mark.parametrize("kind", VALUES)
def test_a_continuation_anywhere_inside_a_value_leaves_none_of_it(kind):
    value = VALUES[kind]
    for cut, brk, (before, after) in itertools.product(range(1, len(value)), BREAKS, CONTEXTS):
        if value[cut - 1] == " " or value[cut] == " ":
            continue  # between two of a token's characters only (a continuation after a space is no value's)
        text = before + value[:cut] + brk + value[cut:] + after
        out = SCRUBBER.scrub(text).text
        assert _leaked(kind, value, out) is None, (text, out)


def test_the_view_reads_a_continuation_inside_a_token_as_nothing():
    assert canonical("EMAIL=\"jane\\\ndoe@example.com\"").text == "EMAIL=\"janedoe@example.com\""
    assert canonical("PHONE=212-555-\\\r\n0173").text == "PHONE=212-555-0173"
    # not an escaped backslash's line break, nor a continuation after or before a space (a command's next line)
    for text in ("a\\\\\nb", "ls -l \\\n  --color", "x\\\n y"):
        assert canonical(text).text == text
    # the view without the ambiguous readings leaves it as written
    assert canonical("jane\\\ndoe@example.com", ambiguous=False).text == "jane\\\ndoe@example.com"


def test_a_markdown_hard_break_after_a_value_leaves_it_masked():
    # read as nothing, "\\⏎" glues the value to the next line's word; the older view finds it as written
    for value in VALUES.values():
        text = f"Contact: {value}\\\nThanks"
        out = SCRUBBER.scrub(text).text
        assert value not in out and out.endswith("\\\nThanks"), (text, out)


# Values written with an ambiguous reading (``\-``, ``\_``, ``\.``: CSS's and code's escaped punctuation) beside a
# continuation: the view without the continuation reading (``canonical``'s tier ``AMBIGUOUS``, main's full view) reads
# the escape and finds the value; read as nothing, the continuation glues it to the next or last word and the full view
# finds none, and the older view reads neither. Each tier's view is asked (``Scrubber.find``): its masks are kept.
ESCAPED = {"phone": ("212\\-555\\-0173", "0173"), "card": ("4111\\-1111\\-1111\\-1111", "1111\\-1111"),
           "email": ("jane\\_doe@example.org", "jane"), "dotted": ("jane\\.doe@example.org", "jane"),
           "ssn": ("398\\-55\\-5589", "5589")}


@pytest.mark.parametrize("kind", ESCAPED)
def test_an_escaped_value_beside_a_continuation_stays_masked(kind):
    from corpusforge.pipeline.pii.canonical import TOP_TIER

    value, needle = ESCAPED[kind]
    for brk, (before, after) in itertools.product(BREAKS, [("Call me", ""), ("Contact: ", "Thanks"),
                                                           ("Call me", "Thanks"), ("x", "0 more")]):
        text = f"{before}{brk if before.endswith('me') or before == 'x' else ''}{value}{brk}{after} today"
        results = SCRUBBER.find(text)
        out = SCRUBBER.replace(text, results)[0]
        assert needle not in out, (text, out)
        masked = {i for r in results for i in range(r.start, r.end)}
        for tier in range(TOP_TIER):
            lower = {i for r in SCRUBBER.find(text, tier=tier) for i in range(r.start, r.end)}
            assert lower <= masked, (tier, text, out)


# The same, the continuation written with escapes (URL, HTML references, code's, a Q encoded-word's, doubly escaped,
# half escaped): the full view decodes them and reads a continuation, gluing the value to its neighbour, so each lower
# tier's view is asked wherever an escape's introducer occurs, not only where a continuation is written as such (asked
# only there, ``Call me%5C%0A212\-555\-0173`` showed the number main masked).
ESCAPED_BREAKS = {
    "LF": ["%5C%0A", "%5c%0a", "&#92;&#10;", "&#x5c;&#xa;", "\\u005c\\u000a", "\\x5c\\x0a", "%255C%250A",
           "&amp;#92;&amp;#10;", "&#92;\n", "%5C\n"],
    "CRLF": ["%5C%0D%0A", "%5c%0d%0a", "&#92;&#13;&#10;", "\\u005c\\u000d\\u000a", "&#92;\r\n", "%5C\r\n"],
    "CR": ["%5C%0D", "&#x5c;&#xd;", "\\x5c\\x0d", "&#92;\r", "%5C\r"],
}


@pytest.mark.parametrize("kind", ESCAPED)
@pytest.mark.parametrize("end", ESCAPED_BREAKS)
def test_an_escaped_value_beside_an_escaped_continuation_stays_masked(kind, end):
    from corpusforge.pipeline.pii.canonical import AMBIGUOUS

    value, needle = ESCAPED[kind]
    qp = value.replace("\\", "=5C")  # (in a Q encoded-word, the escapes too: ``=5C-``)
    texts = [f"Call me{brk}{value} thanks" for brk in ESCAPED_BREAKS[end]]
    texts += [f"Contact: {value}{brk}Thanks today" for brk in ESCAPED_BREAKS[end]]
    if end == "LF":
        texts += [f"Subject: =?utf-8?q?Call_me=5C=0A{qp}_thanks?=", f"Subject: =?utf-8?q?{qp}=5C=0AThanks?="]
    for text in texts:
        results = SCRUBBER.find(text)
        masked = {i for r in results for i in range(r.start, r.end)}
        main = {i for r in SCRUBBER.find(text, tier=AMBIGUOUS) for i in range(r.start, r.end)}
        assert main and main <= masked, (text, SCRUBBER.replace(text, results)[0])


# The same, the introducers written as characters that NFKC folds to them (``＼`` U+FF3C, ``﹪`` U+FE6A, ``＆``, ``⁼``,
# ...: every such character, from the Unicode database): the view folds before it reads escapes and continuations,
# so the text as written need not hold an introducer for the views to differ (``Call me＼⏎212＼-555＼-0173`` showed the
# number main masked while the lower tier was asked only where an ASCII introducer was written).
@pytest.mark.parametrize("kind", ESCAPED)
@pytest.mark.parametrize("introducer", "\\%&=")
def test_an_escaped_value_beside_a_continuation_with_look_alike_introducers_stays_masked(kind, introducer):
    from corpusforge.pipeline.pii.canonical import AMBIGUOUS
    from tests.fuzz.pii import look_alike_introducers  # every character the Unicode database folds to one

    look_alikes = look_alike_introducers()[introducer]
    assert look_alikes, introducer  # (U+FF3C, U+FF05, U+FF06, U+FF1D and their small forms at least)
    value = ESCAPED[kind][0]
    forms = [brk for brks in ESCAPED_BREAKS.values() for brk in brks if introducer in brk] + BREAKS * (introducer == "\\")
    qp = value.replace("\\", "=5C")  # (in a Q encoded-word, the escapes too: ``=5C-``)
    checked = 0
    for look_alike in look_alikes:
        shown = value.replace("\\", look_alike) if introducer == "\\" else value
        texts = [text for brk in forms for text in (f"Call me{brk.replace(introducer, look_alike)}{shown} thanks",
                                                    f"Contact: {shown}{brk.replace(introducer, look_alike)}Thanks today")]
        if introducer == "=":  # an encoded-word's every "=" so written
            texts += [text.replace("=", look_alike) for text in (f"Subject: =?utf-8?q?Call_me=5C=0A{qp}_thanks?=",
                                                                 f"Subject: =?utf-8?q?{qp}=5C=0AThanks?=")]
        for text in texts:
            results = SCRUBBER.find(text)
            masked = {i for r in results for i in range(r.start, r.end)}
            main = {i for r in SCRUBBER.find(text, tier=AMBIGUOUS) for i in range(r.start, r.end)}
            assert main <= masked, (text, SCRUBBER.replace(text, results)[0])
            checked += bool(main)
    assert checked, "no text of the set has a value the lower tier finds: the test would check nothing"


# A mask does not grow over a continuation beside the value (the view reads it as nothing, as it does a format
# character, which goes with the value): it is the line's end, and taken, the scrub joined two lines.
@pytest.mark.parametrize("brk", BREAKS)
def test_a_mask_stops_at_a_continuation_beside_the_value(brk):
    assert SCRUBBER.scrub(f"See 212-555-0173{brk}.").text == f"See <PHONE>{brk}."
    assert SCRUBBER.scrub(f"Regards,{brk}jane@example.org").text == f"Regards,{brk}<EMAIL>"
    assert SCRUBBER.scrub(f"Card: 4111\\-1111\\-1111\\-1111{brk}Thanks").text == f"Card: <CREDIT_CARD>{brk}Thanks"


# A continuation that glues a value to a neighbouring word: the mask takes the word (docs/pii.md). A value cut by a
# continuation is written with the same characters as a value before or after a Markdown hard break, and reading only
# the second would show a cut value's other part (``jane`` of ``jane\⏎doe@example.com``); a word masked too many
# leaks nothing. The lower tier's value is inside the mask either way.
@pytest.mark.parametrize("text, scrubbed", [
    ("Hello\\\njane@example.org", "<EMAIL>"),
    ("jane\\\ndoe@example.org", "<EMAIL>"),
    ("IP 81.2.69.16\\\n0 seen", "IP <IP_ADDRESS> seen"),
])
def test_a_word_a_continuation_glues_to_a_value_is_masked_with_it(text, scrubbed):
    assert SCRUBBER.scrub(text).text == scrubbed
