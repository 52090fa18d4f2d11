"""Which lines ftfy's encoding repair could change, decided at a fraction of ftfy's own cost.

``ftfy.fix_encoding`` returns a line unchanged unless ``ftfy.badness.is_bad(line)``: a search of one large
alternation (``BADNESS_RE``) that costs ~0.3 us per character of non-ASCII text, ~150 us per 2 KB web
document, most of normalize's time. ``may_be_bad`` gives the same answer as ``is_bad`` for every string, from a
cheap search plus that regex on a few small windows:

- every alternative of ``BADNESS_RE`` consumes one character from each of its mandatory sets of non-ASCII
  characters; ``ANCHORS`` holds, per alternative, the set with the fewest letters (read off the installed ftfy's
  pattern), so a line with none of them cannot match;
- a match is at most ``WIDTH`` characters long, so a match, if there is one, lies within ``WIDTH`` characters of
  an anchor: ``BADNESS_RE`` is searched only in those windows (one character wider on each side, so an
  assertion at a match's edge sees the same neighbours as in the whole line).

The pattern is checked when this module is imported: an ftfy whose pattern does not have that shape (an
alternative without such a character, unbounded repeats, look-arounds) makes ``may_be_bad`` plain ``is_bad``.
``tests/pipeline/normalize/test_mojibake_screen.py`` holds the two equal on real and garbled text.
"""
from __future__ import annotations

import re
from re import _constants as sre
from re import _parser as sre_parse

from ftfy.badness import BADNESS_RE, is_bad

_SAFE_OPS = {sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY, sre.MAX_REPEAT, sre.MIN_REPEAT, sre.SUBPATTERN}


def _explicit_chars(op, av) -> set[str] | None:
    """The characters a one-character item matches, when it lists them (a literal, a class of literals and ranges);
    None for anything else (a negated class, a category such as ``\\s``)."""
    if op is sre.LITERAL:
        return {chr(av)}
    if op is not sre.IN:
        return None
    chars: set[str] = set()
    for item, value in av:
        if item is sre.LITERAL:
            chars.add(chr(value))
        elif item is sre.RANGE:
            chars.update(map(chr, range(value[0], value[1] + 1)))
        else:
            return None
    return chars


def _only_safe(items) -> bool:
    """No look-around, back-reference or anchor but ``^`` (which ``search(pos=...)`` honours as the real start)."""
    for op, av in items:
        if op is sre.AT:
            if av is not sre.AT_BEGINNING:
                return False
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            if not _only_safe(av[2]):
                return False
        elif op is sre.SUBPATTERN:
            if av[1] or not _only_safe(av[3]):  # a group that turns flags on, e.g. (?i:...)
                return False
        elif op not in _SAFE_OPS:
            return False
    return True


def anchors_and_width(pattern: re.Pattern) -> tuple[frozenset[str], int] | None:
    """``(ANCHORS, WIDTH)`` for ``pattern``, or None when it does not have the shape ``may_be_bad`` relies on."""
    if pattern.flags & re.IGNORECASE:  # the anchors would have other cases too: not worked out here
        return None
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    low, high = parsed.getwidth()
    if low < 1 or high >= sre.MAXREPEAT or len(parsed.data) != 1 or parsed.data[0][0] is not sre.BRANCH:
        return None
    anchors: set[str] = set()
    for alternative in parsed.data[0][1][1]:
        if not _only_safe(alternative.data):
            return None
        mandatory = [_explicit_chars(op, av) for op, av in alternative.data]  # top-level items occur exactly once
        non_ascii = [chars for chars in mandatory if chars and all(ord(c) > 127 for c in chars)]
        if not non_ascii:
            return None
        # A match of this alternative holds a character of each of its mandatory sets: one set is enough to find it.
        # The one least likely in real text: fewest lower-case letters, then upper-case ones, then characters. Anchoring
        # on every set windowed nearly every character of a Greek, Cyrillic or accented text (é, в: each some
        # alternative's, beside a rarer É, Ђ or symbol).
        anchors.update(min(non_ascii, key=lambda chars: (sum(map(str.islower, chars)), sum(map(str.isupper, chars)),
                                                         len(chars))))
    return frozenset(anchors), high


_SHAPE = anchors_and_width(BADNESS_RE)
ANCHORS, WIDTH = _SHAPE if _SHAPE else (frozenset(), 0)
_ANCHOR = re.compile("[" + "".join(map(re.escape, sorted(ANCHORS))) + "]") if _SHAPE else None


def may_be_bad(line: str) -> bool:
    """``ftfy.badness.is_bad(line)``, for less: only the windows around ``ANCHORS`` characters are searched."""
    if _ANCHOR is None:
        return is_bad(line)
    reach, n = WIDTH + 1, len(line)
    start = end = -1
    for found in _ANCHOR.finditer(line):
        at = found.start()
        if at - reach > end:  # a new window: search the one before it
            if end >= 0 and BADNESS_RE.search(line, start, end):
                return True
            start = max(0, at - reach)
        end = min(n, at + reach + 1)
    return end >= 0 and BADNESS_RE.search(line, start, end) is not None
