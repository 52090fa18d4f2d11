"""Sentence-level against line-level dedup on articles whose boilerplate sits inside their lines.

    .venv/bin/python bench/sentence_dedup.py                 # 2000 articles
    .venv/bin/python bench/sentence_dedup.py --docs 2000 --inline 0.8

Articles are three consecutive paragraphs of a page of Python's documentation (``bench/dedup_data``:
real prose, one paragraph a line). Into each, a
fixed recipe plants boilerplate sentences (a reprint notice, a newsletter plug, a copyright line...): with
probability ``--inline`` at the end of one of the article's lines, otherwise on a line of its own; and
with probability ``--echo`` one of the article's own sentences is repeated in a later line. Each method runs
the plain functions its Beam step calls (``lines.py``, ``sentences.py``: keys, the cross-document count of
``boilerplate_drops``, removal), in memory, so the figures are about the method rather than the runner.

Printed per method: planted boilerplate left (what an ideal method leaves: one copy, in the best-ranked
document) and the share of it gone, how many of the survivors follow a colon (a list introduction such as
"For example::" at the end of the line the notice was appended to), echoed sentences left, the articles' own
sentences kept (each line of an article cut after ``. ! ?`` and a space, a fixed rule independent of the
splitter under test; kept when found verbatim in the output) and their words removed (the cost), documents
removed as too short, and throughput.
"""
from __future__ import annotations

import argparse
import collections
import pathlib
import random
import re
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpusforge.pipeline.dedup.config import LineDedupConfig, SentenceDedupConfig  # noqa: E402
from corpusforge.pipeline.dedup.lines import boilerplate_drops, line_keys, remove_lines  # noqa: E402
from corpusforge.pipeline.dedup.sentence_split import split_sentences  # noqa: E402
from corpusforge.pipeline.dedup.sentences import remove_sentences, sentence_keys  # noqa: E402
from corpusforge.pipeline.dedup.text import normalized_bytes  # noqa: E402

BOILERPLATE = [
    "This article first appeared in The Daily Example and is reprinted with permission.",
    "Sign up for our weekly newsletter to get the best stories delivered to your inbox.",
    "Copyright 2024 Example Media Group, all rights reserved.",
    "The views expressed here are the author's own and do not reflect those of the publisher.",
    "If you enjoyed this piece, please consider supporting independent journalism today.",
    "Follow us on social media for the latest updates from our newsroom.",
]


def article_texts(n_docs: int) -> list[list[str]]:
    """Up to ``n_docs`` articles: three consecutive paragraphs of one documentation page each."""
    from dedup_data.corpus import pages

    out = []
    for page in pages():
        for k in range(0, len(page) - 2, 3):
            out.append(page[k:k + 3])
            if len(out) == n_docs:
                return out
    return out


def corpus(n_docs: int, inline: float, echo: float, seed: int = 0):
    """``(articles, texts)``: each article's own text and the text with boilerplate and echoes planted."""
    rng = random.Random(seed)
    articles, texts, echoes = [], [], 0
    for lines in article_texts(n_docs):
        articles.append("\n".join(lines))
        planted = list(lines)
        for notice in rng.sample(BOILERPLATE, 2):
            if rng.random() < inline:
                j = rng.randrange(len(planted))
                planted[j] = planted[j] + " " + notice
            else:
                planted.append(notice)
        if rng.random() < echo:
            first = [s for s in split_sentences(lines[0])[0] if len(s) > 40]
            if first:
                planted.append(first[0].strip())
                echoes += 1
        texts.append("\n".join(planted))
    return articles, texts, echoes


def drops_for(keyed: list[set[int]], max_occurrences: int, counter: str) -> list[set[int]]:
    groups = collections.defaultdict(list)
    for i, keys in enumerate(keyed):
        for key in keys:
            groups[key].append((1, 0.0, f"{i:08d}"))
    drop = [set() for _ in keyed]
    fn = boilerplate_drops(max_occurrences, counter)
    for group in groups.items():
        for doc_id, key in fn(group):
            drop[int(doc_id)].add(key)
    return drop


def by_lines(texts: list[str], config: LineDedupConfig) -> list[str | None]:
    drop = drops_for([line_keys(t, config.min_line_chars) for t in texts], config.max_occurrences, "lines")
    out = []
    for text, d in zip(texts, drop):
        new, removed = remove_lines(text, d, config.min_line_chars) if d else (text, 0)
        short = removed and len(normalized_bytes(new).split()) < config.min_words
        out.append(None if short else new)
    return out


def by_sentences(texts: list[str], config: SentenceDedupConfig) -> list[str | None]:
    keyed = [sentence_keys(t, "en", config.min_sentence_chars) for t in texts]
    drop = drops_for([k for k, _ in keyed], config.max_occurrences, "sentences")
    out = []
    for text, d, (_, repeats) in zip(texts, drop, keyed):
        if not d and not repeats:
            out.append(text)
            continue
        new, removed, collapsed = remove_sentences(text, "en", d, config.min_sentence_chars)
        short = (removed or collapsed) and len(normalized_bytes(new).split()) < config.min_words
        out.append(None if short else new)
    return out


_OWN_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def own_sentences(article: str) -> list[str]:
    """The article's sentences by a fixed rule (not the splitter under test)."""
    return [s for line in article.split("\n") for s in _OWN_SENTENCE_END.split(line) if s.strip()]


def after_colon(text: str, notice: str) -> int:
    """How many copies of ``notice`` in ``text`` follow a colon (and spaces)."""
    count, i = 0, text.find(notice)
    while i >= 0:
        count += text[:i].rstrip().endswith(":")
        i = text.find(notice, i + 1)
    return count


def measure(name: str, outputs: list[str | None], articles: list[str], planted: int, echoes: int,
            seconds: float, total_bytes: int) -> dict:
    kept = [(o, a) for o, a in zip(outputs, articles) if o is not None]
    left = sum(o.count(b) for o, _ in kept for b in BOILERPLATE)
    colon_left = sum(after_colon(o, b) for o, _ in kept for b in BOILERPLATE)
    sentences = sum(len(own_sentences(a)) for a in articles)
    sentences_kept = sum(o.count(s) > 0 for o, a in kept for s in own_sentences(a))
    ideal = len(BOILERPLATE)  # one survivor each
    echo_left = 0
    lost_words = 0
    for out, article in kept:
        own = collections.Counter(article.split())
        now = collections.Counter(out.split())
        lost_words += sum((own - now).values())
        first = [s.strip() for s in split_sentences(article)[0] if len(s) > 40]
        if first and out.count(first[0]) > 1:
            echo_left += 1
    article_words = sum(len(a.split()) for a in articles)
    return {"method": name, "boilerplate_left": left, "ideal": ideal, "planted": planted, "colon_left": colon_left,
            "own_sentences": sentences, "own_sentences_kept": sentences_kept,
            "echoes_left": echo_left, "echoes": echoes, "own_words_lost": lost_words,
            "own_words": article_words, "docs_removed": sum(o is None for o in outputs),
            "mb_per_s": total_bytes / seconds / 1e6}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--inline", type=float, default=0.7, help="share of notices placed inside a line")
    parser.add_argument("--echo", type=float, default=0.2, help="share of articles repeating one of their sentences")
    args = parser.parse_args(argv)
    articles, texts, echoes = corpus(args.docs, args.inline, args.echo)
    planted = sum(t.count(b) for t in texts for b in BOILERPLATE)
    total = sum(len(t.encode()) for t in texts)
    lines_cfg, sentences_cfg = LineDedupConfig(), SentenceDedupConfig()
    runs = {
        "lines (dedup.lines)": lambda ts: by_lines(ts, lines_cfg),
        "sentences (dedup.sentences)": lambda ts: by_sentences(ts, sentences_cfg),
        "lines then sentences (the stage)": lambda ts: by_sentences(
            [t if t is not None else "" for t in by_lines(ts, lines_cfg)], sentences_cfg),
    }
    print(f"{args.docs} articles, {total / 1e6:.2f} MB, {planted} boilerplate sentences planted "
          f"({args.inline:.0%} inside a line), {echoes} articles echo a sentence; ideal leaves {len(BOILERPLATE)}")
    for name, fn in runs.items():
        start = time.perf_counter()
        outputs = fn(texts)
        seconds = time.perf_counter() - start
        if name.startswith("lines then"):
            outputs = [None if o == "" else o for o in outputs]
        r = measure(name, outputs, articles, planted, echoes, seconds, total)
        print(f"{name:34s} boilerplate left {r['boilerplate_left']:5d} (ideal {r['ideal']}; "
              f"{1 - r['boilerplate_left'] / planted:.1%} gone; {r['colon_left']} after a colon)  "
              f"echoes left {r['echoes_left']:4d}/{echoes}  own sentences kept {r['own_sentences_kept']}/"
              f"{r['own_sentences']} ({r['own_sentences_kept'] / r['own_sentences']:.2%})  "
              f"own words lost {r['own_words_lost']:6d} "
              f"of {r['own_words']} ({r['own_words_lost'] / r['own_words']:.2%})  docs removed "
              f"{r['docs_removed']}  {r['mb_per_s']:.1f} MB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
