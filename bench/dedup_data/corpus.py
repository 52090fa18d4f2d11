"""A labelled near-duplicate corpus made from real text, for bench/dedup.py.

Text: Python's reStructuredText documentation (Debian package python3.11-doc, if installed), else
``pydoc_data.topics`` and standard-library docstrings; boilerplate: the licences in
/usr/share/common-licenses and made-up site templates.

- *Bases*: runs of consecutive paragraphs of one page (~0.5-3 KB), filtered so no two bases are near
  each other (5-shingle Jaccard > 0.3 among LSH candidates).
- *Clusters*: a base plus 1-5 variants made with realistic edits (typos, word substitutions, a dropped
  sentence or paragraph, paragraph swaps, whitespace and case changes, boilerplate added or removed,
  truncation); each variant keeps 5-shingle Jaccard >= 0.5 with its base.
- *Hard negatives*: groups of 2-6 different bases wrapped in the same boilerplate (a licence excerpt and a
  site template) sized so that pairs sit at Jaccard 0.15-0.4.
- *Synthetic bases* where the real pages run out (``synthetic_bases``): sentences of all pages mixed at
  random.
"""
from __future__ import annotations

import dataclasses
import glob
import inspect
import os
import random
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from corpusforge.pipeline.dedup.text import jaccard, word_shingles, words  # noqa: E402

RST_SOURCES = os.environ.get("CORPUSFORGE_RST_SOURCES", "/usr/share/doc/python3.11/html/_sources")  # another copy of the same files
LICENSES = "/usr/share/common-licenses"
NGRAM = 5

_ROLE = re.compile(r":[\w:+-]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")
_LINK = re.compile(r"`([^`<]+?)\s*<[^>]+>`_+")
_MARKUP = re.compile(r"``|\*\*|(?<!\w)\*|\*(?!\w)|`_*|\|")


def _clean_rst(block: str) -> str:
    block = _ROLE.sub(r"\1", block)
    block = _LINK.sub(r"\1", block)
    return _MARKUP.sub("", block)


def _prose(block: str) -> bool:
    lines = block.split("\n")
    if any(l.startswith((" ", "\t", "..", ">>>", "+-", "==", "--", "**", "* ", "- ", "#")) for l in lines):
        return False
    letters = sum(c.isalpha() for c in block)
    return len(block) >= 120 and letters / len(block) > 0.7


def pages() -> list[list[str]]:
    """Pages of real prose, each a list of paragraphs."""
    out = []
    files = sorted(glob.glob(os.path.join(RST_SOURCES, "**", "*.rst.txt"), recursive=True))
    for path in files:
        with open(path, encoding="utf-8") as f:
            blocks = re.split(r"\n\s*\n", f.read())
        paras = [" ".join(_clean_rst(b.strip()).split()) for b in blocks if _prose(b.strip())]
        if len(paras) >= 2:
            out.append(paras)
    from pydoc_data.topics import topics

    for key in sorted(topics):
        paras = [" ".join(p.split()) for p in topics[key].split("\n\n") if _prose(p.strip())]
        if len(paras) >= 2:
            out.append(paras)
    if not files:  # no python3.11-doc: add docstrings
        import importlib

        for name in sorted(sys.stdlib_module_names):
            try:
                module = importlib.import_module(name)
            except Exception:
                continue
            paras = [" ".join(p.split()) for _, obj in inspect.getmembers(module)
                     for p in (inspect.getdoc(obj) or "").split("\n\n") if _prose(p.strip())]
            if len(paras) >= 2:
                out.append(paras)
    return out


def licence_sentences() -> list[str]:
    """The sentences of the licences in /usr/share/common-licenses (boilerplate)."""
    out = set()
    for path in sorted(glob.glob(os.path.join(LICENSES, "*"))):
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                text = " ".join(f.read().split())
            out.update(s.strip() for s in re.split(r"(?<=[.;:])\s+", text) if len(s.split()) >= 4)
    return sorted(out)


def shingle_set(text: str) -> set[str]:
    return set(word_shingles(words(text), NGRAM))


def true_jaccard(a: str, b: str) -> float:
    return jaccard(shingle_set(a), shingle_set(b))


# ----------------------------------------------------------------------------------------------- edits

NAV = ["Home", "About", "Blog", "Docs", "Pricing", "Contact", "Login", "Sign up", "Careers", "Press", "Help"]


def template(rng: random.Random, site: str, sentences: list[str], words_count: int) -> tuple[str, str]:
    """A site's header and footer: navigation, legal text (licence sentences chosen for this site, so
    that two sites share little of it), a copyright line."""
    nav = " | ".join(rng.sample(NAV, 6))
    chosen, size = [], 0
    while size < words_count:
        chosen.append(rng.choice(sentences))
        size += len(chosen[-1].split())
    excerpt = " ".join(" ".join(chosen).split()[:words_count])
    header = f"{site}\n{nav}"
    footer = f"{excerpt}\nCopyright {rng.randrange(1998, 2025)} {site}. All rights reserved."
    return header, footer


def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 3:
        return word + rng.choice("aeiou")
    i = rng.randrange(len(word) - 1)
    kind = rng.randrange(3)
    if kind == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == 1:
        return word[:i] + word[i + 1:]
    return word[:i] + rng.choice("abcdefghijklmnopqrstuvwxyz") + word[i:]


def edit(paras: list[str], rng: random.Random, vocab: list[str], licences: list[list[str]]) -> tuple[str, list[str]]:
    """A variant of a document (its paragraphs) with 1-4 realistic edits; returns (text, edit names)."""
    paras = list(paras)
    applied = []
    for kind in rng.sample(["typos", "substitute", "drop", "swap", "case", "boilerplate", "truncate"],
                           rng.randint(1, 4)):
        if kind == "typos":
            p = rng.randrange(len(paras))
            tokens = paras[p].split()
            for i in rng.sample(range(len(tokens)), max(1, len(tokens) // rng.randint(15, 40))):
                tokens[i] = _typo(tokens[i], rng)
            paras[p] = " ".join(tokens)
        elif kind == "substitute":
            tokens = " ".join(paras).split()
            for i in rng.sample(range(len(tokens)), max(1, int(len(tokens) * rng.uniform(0.01, 0.06)))):
                tokens[i] = rng.choice(vocab)
            paras = [" ".join(tokens)]
        elif kind == "drop" and len(paras) > 1:
            if rng.random() < 0.5:
                paras.pop(rng.randrange(len(paras)))
            else:
                p = rng.randrange(len(paras))
                sentences = paras[p].split(". ")
                if len(sentences) > 1:
                    sentences.pop(rng.randrange(len(sentences)))
                paras[p] = ". ".join(sentences)
        elif kind == "swap" and len(paras) > 1:
            i, j = rng.sample(range(len(paras)), 2)
            paras[i], paras[j] = paras[j], paras[i]
        elif kind == "case":
            paras = [p.upper() if rng.random() < 0.3 else p.replace(" ", rng.choice(["  ", " ", "\n"]), 3)
                     for p in paras]
        elif kind == "boilerplate":
            header, footer = template(rng, f"site{rng.randrange(10**4)}.example", licences, rng.randint(5, 30))
            paras = [header] + paras + [footer]
        elif kind == "truncate":
            text = "\n\n".join(paras)
            paras = [text[: int(len(text) * rng.uniform(0.6, 0.9))]]
        else:
            continue
        applied.append(kind)
    return "\n\n".join(paras), applied


# ---------------------------------------------------------------------------------------------- corpus


@dataclasses.dataclass
class Doc:
    id: str
    text: str
    cluster: int  # documents of one cluster are duplicates; -1: a singleton
    role: str  # base | variant | negative | filler
    jaccard_to_base: float = 1.0
    group: int = -1  # hard-negative group


def bases_from_pages(page_list: list[list[str]], rng: random.Random) -> list[list[str]]:
    """Runs of consecutive paragraphs, 500-3000 characters each."""
    out = []
    for paras in page_list:
        i = 0
        while i < len(paras):
            run, size = [], 0
            while i < len(paras) and size < rng.randint(500, 3000):
                run.append(paras[i])
                size += len(paras[i])
                i += 1
            if size >= 400:
                out.append(run)
    return out


def distinct(bases: list[list[str]], max_jaccard: float = 0.2) -> list[list[str]]:
    """Drop bases that are near another base: true Jaccard above ``max_jaccard`` among LSH candidates
    (64 bands of 2 rows: a pair at Jaccard 0.3 is a candidate with probability 0.998)."""
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(num_perm=128, params=(64, 2))
    kept, sets = [], []
    for paras in bases:
        s = shingle_set("\n\n".join(paras))
        if len(s) < 20:
            continue
        m = MinHash(num_perm=128)
        m.update_batch([x.encode() for x in s])
        if any(jaccard(s, sets[j]) > max_jaccard for j in lsh.query(m)):
            continue
        lsh.insert(len(kept), m)
        kept.append(paras)
        sets.append(s)
    return kept


def synthetic_bases(page_list: list[list[str]], count: int, rng: random.Random) -> list[list[str]]:
    """``count`` documents of 2-5 paragraphs of 3-8 sentences drawn at random from all pages (the real
    pages give a few thousand bases; these make up the rest, and two of them rarely share a sentence)."""
    global _SENTENCES
    if _SENTENCES is None:
        _SENTENCES = sorted({s for paras in page_list for p in paras for s in re.split(r"(?<=\.)\s+", p)
                             if len(s.split()) >= 5})
    return [[" ".join(rng.sample(_SENTENCES, rng.randint(3, 8))) for _ in range(rng.randint(2, 5))]
            for _ in range(count)]


_SENTENCES: list[str] | None = None


def build(n_docs: int, seed: int = 0, cluster_fraction: float = 0.3, negative_fraction: float = 0.15) -> list[Doc]:
    """About ``n_docs`` labelled documents (see the module docstring)."""
    rng = random.Random(seed)
    page_list = pages()
    real = bases_from_pages(page_list, rng)
    # about 0.65 bases per document; mixed-paragraph bases make up what the real pages lack
    candidates = real + synthetic_bases(page_list, max(0, int(0.8 * n_docs) - len(real)), rng)
    pool = distinct(candidates)
    rng.shuffle(pool)
    vocab = sorted({w for paras in pool[:500] for p in paras for w in p.split() if w.isalpha()})
    licences = licence_sentences()
    docs: list[Doc] = []
    cluster = 0
    pool_iter = iter(pool)

    def next_base():
        return next(pool_iter)  # StopIteration: ask for fewer documents

    while len(docs) < n_docs:
        r = rng.random()
        if r < cluster_fraction:
            paras = next_base()
            base = "\n\n".join(paras)
            docs.append(Doc(f"d{len(docs):07d}", base, cluster, "base"))
            for _ in range(rng.randint(1, 5)):
                for _attempt in range(10):
                    text, _ = edit(paras, rng, vocab, licences)
                    j = true_jaccard(base, text)
                    if j >= 0.5:
                        docs.append(Doc(f"d{len(docs):07d}", text, cluster, "variant", round(j, 4)))
                        break
            cluster += 1
        elif r < cluster_fraction + negative_fraction:
            group = negative_group(rng, [next_base() for _ in range(rng.randint(2, 6))], licences, len(docs))
            for doc in group:
                doc.group = cluster
            cluster += 1
            docs.extend(group)
        else:
            docs.append(Doc(f"d{len(docs):07d}", "\n\n".join(next_base()), -1, "filler"))
    # ids in a random order, so that ranks do not follow generation order
    order = list(range(len(docs)))
    rng.shuffle(order)
    for doc, k in zip(docs, order):
        doc.id = f"doc{k:07d}"
    return docs


def negative_group(rng: random.Random, group: list[list[str]], licences, start: int) -> list[Doc]:
    """Different documents wrapped in one shared boilerplate sized for pairwise Jaccard 0.15-0.4."""
    texts = ["\n\n".join(p) for p in group]
    sizes = [len(shingle_set(t)) for t in texts]
    target = rng.uniform(0.15, 0.4)
    # |S| / (|A| + |B| + |S|) = J  ->  |S| = J (|A| + |B|) / (1 - J), for the two largest members
    a, b = sorted(sizes)[-2:]
    shared = int(target * (a + b) / (1 - target))
    site = f"site{rng.randrange(10**6)}.example"
    header, footer = template(rng, site, licences, max(5, shared - 10))
    out = []
    for t in texts:
        out.append(Doc("", f"{header}\n\n{t}\n\n{footer}", -1, "negative"))
    # shrink the boilerplate until every pair is <= 0.4 (smaller members share a larger fraction)
    while max(true_jaccard(x.text, y.text) for i, x in enumerate(out) for y in out[i + 1:]) > 0.4:
        footer = " ".join(footer.split()[: int(len(footer.split()) * 0.8)])
        out = [Doc("", f"{header}\n\n{t}\n\n{footer}", -1, "negative") for t in texts]
    for k, doc in enumerate(out):
        doc.id = f"d{start + k:07d}"
    return out
