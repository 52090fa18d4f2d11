"""Real text available offline, as lists of paragraphs per (kind, language).

- Python's own documentation (``pydoc_data.topics``) and standard-library docstrings: English technical prose.
- Debian Reference in German, French, Spanish and Italian (apt-get install debian-reference-{de,fr,es,it}).
- WordNet definitions (apt-get install dict-wn): dictionary entries.
- fortune files in German, Spanish and Italian (apt-get install fortunes-{de,es,it}): quotes, anecdotes.

Missing Debian packages are skipped with a note; ``APT_PACKAGES`` lists them for a benchmark's setup. Without
root, ``apt-get download`` them, ``dpkg-deb -x`` each into one directory and set ``CORPUSFORGE_DEB_ROOT`` to it.
"""
from __future__ import annotations

import glob
import gzip
import html
import importlib
import inspect
import os
import pkgutil
import re
import sys
from html.parser import HTMLParser

APT_PACKAGES = ["debian-reference-de", "debian-reference-fr", "debian-reference-es", "debian-reference-it",
                "dict-wn", "fortunes-de", "fortunes-es", "fortunes-it"]
_WS = re.compile(r"\s+")
_ROOT = os.environ.get("CORPUSFORGE_DEB_ROOT", "")  # where the packages are unpacked; "" = installed


def _prose(par: str) -> bool:
    """A paragraph of running text (not code, not a table, not a heading)."""
    return len(par) >= 40 and par.rstrip()[-1:] in ".!?:;)\"'»" and not par.startswith((" ", "\t", ">>>", "+", "|"))


def python_doc_paragraphs() -> list[str]:
    from pydoc_data.topics import topics

    out = []
    for name in sorted(topics):
        for par in topics[name].split("\n\n"):
            if any(line.startswith((" ", "\t")) for line in par.splitlines()):
                continue  # code and indented blocks
            par = _WS.sub(" ", par).strip()
            if _prose(par) and "*" not in par[:2]:
                out.append(par)
    return out


def docstring_paragraphs(limit_modules: int = 400) -> list[str]:
    """First paragraphs of standard-library docstrings (short, good sentences)."""
    out, seen = [], set()
    names = sorted(m.name for m in pkgutil.iter_modules() if not m.name.startswith("_"))
    skip = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "test", "lib2to3", "ensurepip", "pydoc"}
    for name in names[:limit_modules]:
        if name in skip or name not in sys.stdlib_module_names:
            continue
        try:
            mod = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - some stdlib modules need optional system libraries
            continue
        for obj in [mod] + [v for _, v in inspect.getmembers(mod) if inspect.isfunction(v) or inspect.isclass(v)]:
            doc = inspect.getdoc(obj) or ""
            par = _WS.sub(" ", doc.split("\n\n")[0]).strip()
            if _prose(par) and par not in seen:
                seen.add(par)
                out.append(par)
    return out


class _Paragraphs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.pars, self._buf, self._depth = [], [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "p":
            self._depth += 1
            self._buf = []

    def handle_endtag(self, tag):
        if tag == "p" and self._depth:
            self._depth -= 1
            self.pars.append(_WS.sub(" ", "".join(self._buf)).strip())

    def handle_data(self, data):
        if self._depth:
            self._buf.append(data)


def debian_reference_paragraphs(lang: str) -> list[str]:
    out = []
    for path in sorted(glob.glob(f"{_ROOT}/usr/share/debian-reference/*.{lang}.html")):
        parser = _Paragraphs()
        with open(path, encoding="utf-8", errors="replace") as f:
            parser.feed(f.read())
        out.extend(html.unescape(p) for p in parser.pars if _prose(p) and "$" not in p[:3])
    return out


def wordnet_entries(limit: int = 20000) -> list[str]:
    """``word (noun): definition; "example"`` from WordNet's dictd file."""
    path = f"{_ROOT}/usr/share/dictd/wn.dict.dz"
    if not os.path.exists(path):
        return []
    text = gzip.open(path).read().decode("utf-8", errors="replace")
    out = []
    pos_names = {"n": "noun", "v": "verb", "adj": "adjective", "adv": "adverb"}
    entry_re = re.compile(r"^(\S[^\n]*)\n((?:[ \t]+[^\n]*\n)+)", re.MULTILINE)
    for m in entry_re.finditer(text):
        word, body = m.group(1).strip(), _WS.sub(" ", m.group(2)).strip()
        sense = re.match(r"(n|v|adj|adv) (?:1: )?(.*?)(?= 2: | (?:n|v|adj|adv) 1: |$)", body)
        if not sense or not word.isalpha():
            continue
        definition = re.sub(r"\s*\[(?:syn|ant|also): [^\]]*\]?", "", sense.group(2)).strip(" ;")
        if len(definition.split()) >= 4:
            out.append(f"{word} ({pos_names[sense.group(1)]}): {definition}.")
        if len(out) >= limit:
            break
    return out


def fortunes(lang: str, exclude: tuple[str, ...] = ("asciiart",)) -> list[str]:
    root = f"{_ROOT}/usr/share/games/fortunes/{lang}"
    out = []
    for path in sorted(glob.glob(f"{root}/*")):
        base = os.path.basename(path)
        if not os.path.isfile(path) or ("." in base and not base.endswith(".u8")):
            continue
        if any(base.startswith(x) for x in exclude):
            continue
        if os.path.exists(path + ".u8") and not base.endswith(".u8"):
            continue  # prefer the UTF-8 version
        with open(path, encoding="utf-8", errors="replace") as f:
            for item in f.read().split("\n%\n"):
                item = item.strip("\n%")
                if 60 <= len(item) <= 1200 and "\ufffd" not in item:
                    out.append(item)
    return out


def ascii_art() -> list[str]:
    path = f"{_ROOT}/usr/share/games/fortunes/de/asciiart.u8"
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        return [item.strip("\n") for item in f.read().split("\n%\n") if len(item.strip()) > 40]
