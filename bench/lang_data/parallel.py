"""Parallel text in every language of the language-ID set, from the gettext catalogs installed on the machine.

Every ``/usr/share/locale/<locale>/LC_MESSAGES/*.mo`` pairs an English message (msgid) with its translation
(msgstr): the same content in English and in the other language, written by people, on disk without a network.
A document is a run of consecutive longer messages (help texts, error explanations: at least 40 characters with a
space in the English) of one catalog, one message a paragraph; its English twin is the same messages' msgids. The
ISO code-list catalogs (language and country names) are left out, and so is a message an earlier catalog already
had. Each catalog's messages are read in the order the .mo file stores them (sorted by msgid), so neighbouring
messages are often about one thing. The set follows the packages installed: figures from two machines differ.

Which languages: ``LANGUAGES`` (the set docs/dedup.md and docs/quality.md report). A language whose catalogs are
missing gives no documents (a note on stderr).
"""
from __future__ import annotations

import dataclasses
import gettext
import glob
import os
import re
import sys

# The language-ID set the benchmarks report: lid.176 code -> the locale directory its catalogs are in.
LANGUAGES = {"en": None, "de": "de", "fr": "fr", "es": "es", "it": "it", "ru": "ru", "ar": "ar",
             "zh": "zh_CN", "ja": "ja", "ko": "ko", "th": "th"}
_PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[lhqjzt]*[sdifuxXcpeg%]|\{[^}]*\}|[_&](?=\w)")


@dataclasses.dataclass
class Document:
    id: str
    lang: str
    text: str
    english: str  # the same messages in English (the msgids)
    catalog: str


def _clean(message: str) -> str:
    """A message without printf/format placeholders and menu accelerators, its whitespace collapsed per line."""
    message = _PLACEHOLDER.sub("", message)
    return "\n".join(" ".join(line.split()) for line in message.splitlines()).strip()


def catalog_messages(locale: str, min_chars: int = 40) -> dict[str, list[tuple[str, str]]]:
    """Per catalog of ``locale``: its (English, translation) pairs of longer messages, in the file's order; a message
    whose English an earlier catalog (by file name) already had is left out, so that no two documents share a
    message (gtk20-properties and gtk30-properties, for one, are mostly the same messages)."""
    out: dict[str, list[tuple[str, str]]] = {}
    seen: set[str] = set()
    for path in sorted(glob.glob(f"/usr/share/locale/{locale}/LC_MESSAGES/*.mo")):
        name = os.path.basename(path)[:-3]
        if name.startswith("iso_"):
            continue
        try:
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
        except Exception:  # noqa: BLE001 - a damaged or unusual catalog: skipped
            continue
        pairs = []
        for key, value in catalog.items():
            if not isinstance(key, str) or not isinstance(value, str) or value == key:
                continue
            english, translated = _clean(key), _clean(value)
            if len(english) >= min_chars and " " in english and translated and english not in seen:
                seen.add(english)
                pairs.append((english, translated))
        if pairs:
            out[name] = pairs
    return out


def messages(locale: str) -> list[str]:
    """Every longer message of ``locale``'s catalogs (``catalog_messages``), translated, as one line (whitespace
    collapsed), each once, in the catalogs' order: sentences for bench/build.py's ``multilingual`` corpus."""
    out = dict.fromkeys(" ".join(translated.split()) for pairs in catalog_messages(locale).values()
                        for _, translated in pairs)
    return [message for message in out if message]


def documents(lang: str, per_doc: int = 8, limit: int = 200) -> list[Document]:
    """Up to ``limit`` documents of ``per_doc`` consecutive messages of one catalog, in ``lang`` with their English
    twins (for ``en`` itself: German catalogs' msgids, the English written for translation)."""
    locale = LANGUAGES[lang] or "de"
    catalogs = catalog_messages(locale)
    if not catalogs:
        print(f"note: no gettext catalogs for {lang} under /usr/share/locale/{locale}", file=sys.stderr)
        return []
    docs: list[Document] = []
    # Round robin over catalogs, so that no one program's messages make the whole set.
    cursors = {name: 0 for name in catalogs}
    while len(docs) < limit and cursors:
        for name in list(cursors):
            start = cursors[name]
            pairs = catalogs[name][start:start + per_doc]
            if len(pairs) < per_doc:
                del cursors[name]
                continue
            cursors[name] = start + per_doc
            english = "\n\n".join(e for e, _ in pairs)
            text = english if lang == "en" else "\n\n".join(t for _, t in pairs)
            docs.append(Document(f"{lang}-{name}-{start}", lang, text, english, name))
            if len(docs) >= limit:
                break
    return docs
